"""xd.array_table: its host-side checks (mixed dtypes, ranks, empty tables, non-arrays
refused before any device is touched); launches are in tests/e2e/test_array_tables.py."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.runtime import devices


@pytest.fixture
def no_device(monkeypatch):
    """Fails the test if anything asks for a device."""
    def touched(*args, **kwargs):
        raise AssertionError("the device was touched")
    monkeypatch.setattr(devices, "get_device", touched)


def test_table_of_one_dtype_and_rank(no_device):
    arrays = [np.zeros((m, k), np.float16) for m, k in ((40, 32), (17, 64), (33, 48))]
    tab = xd.array_table(arrays)
    assert len(tab) == 3 and tab.dtype == np.float16 and tab.ndim == 2
    assert tab.shapes == ((40, 32), (17, 64), (33, 48))
    assert all(entry is array for entry, array in zip(tab.arrays, arrays))


@pytest.mark.parametrize("arrays, words", [
    ([np.zeros((4, 32), np.float16), np.zeros((4, 32), np.float32)], ["entry 1", "float32", "one dtype"]),
    ([np.zeros((4, 32), np.float16), np.zeros((2, 4, 32), np.float16)], ["entry 1", "rank 3", "2-D"]),
    ([np.zeros(4, np.float16)], ["entry 0", "rank 1"]),
    ([], ["empty"]),
    ([np.zeros((4, 32), np.float16), 3], ["entry 1", "int"]),
    ([np.zeros((4, 16), np.float16)], ["entry 0", "32 bytes", "at least 64"]),
    ([np.zeros((0, 64), np.float16)], ["entry 0", "empty"]),
    ([np.zeros((4, 16), np.complex64)], ["complex64", "not supported"]),
])
def test_refused_on_the_host(no_device, arrays, words):
    with pytest.raises(xd.LaunchError) as err:
        xd.array_table(arrays)
    for word in words:
        assert word in str(err.value)


def test_one_array_is_not_a_table(no_device):
    with pytest.raises(xd.LaunchError, match=r"xd.array_table\(\[a\]\)"):
        xd.array_table(np.zeros((4, 4), np.float16))
