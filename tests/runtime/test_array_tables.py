"""xd.array_table: its host-side checks (mixed dtypes, ranks, empty tables, non-arrays
refused before any device is touched); device entries (dpnp arrays on the OpenCL CPU
device, torch XPU tensors faked: no XPU here) listed in place, and the layouts, queues and
torch builds refused; launches are in tests/e2e/test_array_tables.py."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl import dtypes
from xetile_dsl.errors import UsageError
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


# --- device entries: dpnp arrays on the OpenCL CPU device, torch XPU tensors ----------------

@pytest.fixture(scope="module")
def dpnp_queues():
    """dpnp and two queues of the OpenCL CPU device (one context, two queues)."""
    from conftest_tools import require_dpnp, require_module
    from xetile_dsl.runtime.opencl_icd import setup_intel_cpu_icd

    setup_intel_cpu_icd()
    dpctl = require_module("dpctl")
    return require_dpnp(), dpctl.SyclQueue("opencl:cpu"), dpctl.SyclQueue("opencl:cpu")


def test_dpnp_entries_are_listed_in_place(no_device, dpnp_queues):
    """Each row of the device table is the entry's own USM pointer, extents and row stride
    (a padded view's pitch; a one-row entry lists its row rounded up to the pitch rule)."""
    from xetile_dsl.runtime.array_tables import device_table_meta
    from xetile_dsl.runtime.arrays import describe

    dpnp, q, _ = dpnp_queues
    wide = dpnp.zeros((24, 64), dtype=np.float16, sycl_queue=q)
    entries = [dpnp.zeros((40, 32), dtype=np.float16, sycl_queue=q), wide[4:20, :40],
               dpnp.zeros((1, 36), dtype=np.float16, sycl_queue=q)]
    tab = xd.array_table(entries)
    assert tab.queue is q and tab.shapes == ((40, 32), (16, 40), (1, 36))
    meta = device_table_meta(tab)
    pointers = [describe(e, "e").pointer for e in entries]
    assert meta.tolist() == [[pointers[0], 40, 32, 32], [pointers[1], 16, 40, 64], [pointers[2], 1, 36, 40]]
    assert pointers[1] == describe(wide, "w").pointer + 4 * 64 * 2 and meta.queue is q


@pytest.mark.parametrize("make, words", [
    (lambda dpnp, q, q2: [dpnp.zeros((8, 32), dtype=np.float16, sycl_queue=q),
                          dpnp.zeros((8, 32), dtype=np.float16, sycl_queue=q2)],
     ["entry 1", "but entry 0 is on", "one SYCL queue", "sycl_queue="]),
    (lambda dpnp, q, q2: [dpnp.zeros((8, 32), dtype=np.float16, sycl_queue=q),
                          dpnp.zeros((8, 32), dtype=np.float32, sycl_queue=q)],
     ["entry 1", "float32", "one dtype"]),
    (lambda dpnp, q, q2: [np.zeros((8, 32), np.float16), dpnp.zeros((8, 32), dtype=np.float16, sycl_queue=q)],
     ["entry 1", "a device array, but entry 0 is a numpy array", "two tables"]),
    (lambda dpnp, q, q2: [dpnp.zeros((64, 40), dtype=np.float16, sycl_queue=q).T],
     ["entry 0", "strides (1, 40)", "unit stride along a row", "ascontiguousarray"]),
    (lambda dpnp, q, q2: [dpnp.zeros((8, 36), dtype=np.float16, sycl_queue=q)],
     ["entry 0", "row pitch of 72 bytes", "multiple of 16", "padded to 40 elements", "x[:, :36]"]),
    (lambda dpnp, q, q2: [dpnp.zeros((8, 40), dtype=np.float16, sycl_queue=q)[1:]],
     ["entry 0", "not 64-byte aligned", "own array"]),
    (lambda dpnp, q, q2: [dpnp.zeros((8, 64), dtype=np.float16, sycl_queue=q)[::-1]],
     ["entry 0", "row stride -64", "must not overlap or run backwards"]),
])
def test_device_entries_refused_with_what_is_legal(no_device, dpnp_queues, make, words):
    with pytest.raises(xd.LaunchError) as err:     # an ArrayTableError: a UsageError and a LaunchError
        xd.array_table(make(*dpnp_queues))
    assert isinstance(err.value, UsageError)
    for word in words:
        assert word in str(err.value)


def test_a_launch_runs_on_the_tables_queue(dpnp_queues):
    """A device array argument on another queue than a table's entries, or two tables on
    two queues, are refused before anything is compiled or launched."""
    import xetile_dsl.language as xt

    @xd.jit
    def copy_rows(tab, out, BM: xt.constexpr):
        xt.store_tile(xt.load_tile(xt.init_tile(tab[0], [0, 0], [BM, BM])), xt.init_tile(out, [0, 0], [BM, BM]))

    dpnp, q, q2 = dpnp_queues
    tab = xd.array_table([dpnp.zeros((16, 32), dtype=np.float32, sycl_queue=q)])
    with pytest.raises(UsageError, match=r"argument 1 is on .* but the table of argument 0 is on .*one queue"):
        copy_rows.on("cpu")[(1,)](tab, dpnp.zeros((16, 32), dtype=np.float32, sycl_queue=q2), BM=16)
    other = xd.array_table([dpnp.zeros((16, 32), dtype=np.float32, sycl_queue=q2)])
    with pytest.raises(UsageError, match=r"table of argument 'out' is on .* but the table of argument 0"):
        copy_rows.on("cpu")[(1,)](tab, out=other, BM=16)


def test_a_queue_from_its_sycl_pointer(dpnp_queues):
    """The path torch XPU entries take to their stream's queue (torch gives a ``sycl::queue *``):
    here from a dpctl queue's own pointer, which must name the same queue."""
    from xetile_dsl.runtime.array_tables import queue_at

    _, q, q2 = dpnp_queues
    assert queue_at(q.addressof_ref()) == q and queue_at(q.addressof_ref()) != q2


class _FakeXpuTensor:
    """What a table reads of a torch XPU tensor (no XPU exists here): device, dtype, shape,
    ``stride()`` and ``data_ptr()``; a module name that marks it as torch's."""

    __module__ = "torch.fake_xpu"

    def __init__(self, shape, stride, data_ptr, dtype="torch.float16"):
        self.device = type("device", (), {"type": "xpu", "__str__": lambda s: "xpu:0"})()
        self.shape, self._stride, self._ptr, self.dtype = shape, stride, data_ptr, dtype

    def stride(self):
        return self._stride

    def data_ptr(self):
        return self._ptr


def test_torch_xpu_entries_read_their_pointer_and_strides(no_device, monkeypatch):
    """A fake XPU tensor stands in for torch's (none here): its data_ptr() and stride()
    become the table's rows, on the queue torch_queue names (faked too); a misaligned one,
    or a CPU tensor, is refused."""
    from xetile_dsl.runtime import array_tables

    queue = object()
    monkeypatch.setattr(array_tables, "torch_queue", lambda device, where: queue)
    tab = xd.array_table([_FakeXpuTensor((40, 32), (32, 1), 0x10000), _FakeXpuTensor((16, 40), (64, 1), 0x20080)])
    assert tab.queue is queue and tab.dtype == np.float16
    assert array_tables.device_table_meta(tab).tolist() == [[0x10000, 40, 32, 32], [0x20080, 16, 40, 64]]
    bf16 = xd.array_table([_FakeXpuTensor((8, 32), (32, 1), 0x10000, "torch.bfloat16")])
    assert bf16.dtype == dtypes.numpy_dtype("bf16")
    with pytest.raises(UsageError, match="entry 0: the first element is at 0x10010, not 64-byte aligned"):
        xd.array_table([_FakeXpuTensor((40, 32), (32, 1), 0x10010)])
    with pytest.raises(UsageError, match="torch dtype torch.complex64 is not supported"):
        xd.array_table([_FakeXpuTensor((40, 32), (32, 1), 0x10000, "torch.complex64")])


def test_torch_without_xpu_is_refused(no_device, monkeypatch):
    """A torch that sees no XPU (this one; forced, for a machine with one): a (fake) XPU
    tensor's queue cannot be had, and a CPU tensor is pointed at .to('xpu') or numpy."""
    from conftest_tools import require_torch

    torch = require_torch()
    monkeypatch.setattr(torch.xpu, "is_available", lambda: False)
    with pytest.raises(UsageError, match=r"entry 0: a torch XPU tensor, but this torch .* sees no XPU device"):
        xd.array_table([_FakeXpuTensor((40, 32), (32, 1), 0x10000)])
    with pytest.raises(UsageError, match=r"entry 0: a torch tensor on device 'cpu'.*\.to\('xpu'\).*numpy\(\)"):
        xd.array_table([torch.zeros((8, 32), dtype=torch.float16)])
