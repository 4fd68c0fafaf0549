"""xd.array_table: its host-side checks (mixed dtypes, ranks, empty tables, non-arrays
refused before any device is touched) and the one error every flavour gives when a
table is passed to a kernel (launches with tables are not implemented yet)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.runtime import devices


@pytest.fixture
def no_device(monkeypatch):
    """Fails the test if anything asks for a device."""
    def touched(*args, **kwargs):
        raise AssertionError("the device was touched")
    monkeypatch.setattr(devices, "get_device", touched)


def test_table_of_one_dtype_and_rank(no_device):
    arrays = [np.zeros((m, k), np.float16) for m, k in ((40, 24), (17, 64), (33, 48))]
    tab = xd.array_table(arrays)
    assert len(tab) == 3 and tab.dtype == np.float16 and tab.ndim == 2
    assert tab.shapes == ((40, 24), (17, 64), (33, 48))
    assert all(entry is array for entry, array in zip(tab.arrays, arrays))


@pytest.mark.parametrize("arrays, words", [
    ([np.zeros((4, 4), np.float16), np.zeros((4, 4), np.float32)], ["entry 1", "float32", "one dtype"]),
    ([np.zeros((4, 4), np.float16), np.zeros((2, 4, 4), np.float16)], ["entry 1", "rank 3", "2-D"]),
    ([np.zeros(4, np.float16)], ["entry 0", "rank 1"]),
    ([], ["empty"]),
    ([np.zeros((4, 4), np.float16), 3], ["entry 1", "int"]),
])
def test_refused_on_the_host(no_device, arrays, words):
    with pytest.raises(xd.LaunchError) as err:
        xd.array_table(arrays)
    for word in words:
        assert word in str(err.value)


def test_one_array_is_not_a_table(no_device):
    with pytest.raises(xd.LaunchError, match=r"xd.array_table\(\[a\]\)"):
        xd.array_table(np.zeros((4, 4), np.float16))


@xd.jit
def copy_first(tab, c, BM: xt.constexpr, BN: xt.constexpr):
    xt.store_tile(xt.load_tile(xt.init_tile(c, [0, 0], [BM, BN])), xt.init_tile(c, [0, 0], [BM, BN]))


@pytest.mark.parametrize("target", ["cpu", "cpu-arc", "interpret"])
def test_launch_with_a_table_is_refused_alike(target):
    tab = xd.array_table([np.ones((16, 16), np.float32)])
    c = np.zeros((16, 16), np.float32)
    with pytest.raises(xd.LaunchError, match="argument 'tab'.*cannot take array tables yet"):
        copy_first.on(target)[(1,)](tab, c, BM=16, BN=16)
    np.testing.assert_array_equal(c, 0)
