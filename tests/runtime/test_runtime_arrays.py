"""Device arrays through @jit kernels: dpnp/USM zero copy on the array's own queue, strided
views, pyopencl arrays, torch tensors, and every bad-argument message (before any launch)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from conftest_tools import require_dpnp, require_module, require_torch
from xetile_dsl.errors import LaunchError
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.runtime.opencl_icd import setup_intel_cpu_icd

setup_intel_cpu_icd()
dpctl = require_module("dpctl")      # skipped without them; failures under XETILE_REQUIRE_RUNTIMES=1
dpnp = require_dpnp()

CONST = {"BM": 32, "BN": 32, "BK": 32}


@pytest.fixture(scope="module")
def queue():
    return dpctl.SyclQueue("opencl:cpu")


def _ab(m=64, k=64, n=64, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(-2, 3, (m, k)).astype(np.float16), rng.integers(-2, 3, (k, n)).astype(np.float16)


def _ref(a, b):
    return a.astype(np.float32) @ b.astype(np.float32)


def test_dpnp_zero_copy_async_on_the_arrays_queue(queue):
    a, b = _ab()
    da, db = dpnp.asarray(a, sycl_queue=queue), dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    before = dc.get_array()._pointer
    event = matmul_kernel[(2, 2)](da, db, dc, 64, **CONST)
    assert isinstance(event, dpctl.SyclEvent)          # returned without waiting
    xd.synchronize()
    assert dc.get_array()._pointer == before          # the caller's buffer, written in place
    np.testing.assert_array_equal(dpnp.asnumpy(dc), _ref(a, b))


def test_repeated_launch_reuses_arguments_and_sees_new_ones(queue):
    a, b = _ab(seed=1)
    da, db = dpnp.asarray(a, sycl_queue=queue), dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    for _ in range(3):
        matmul_kernel[(2, 2)](da, db, dc, 64, **CONST)
    dc2 = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    matmul_kernel[(2, 2)](da, db, dc2, 32, **CONST)   # new output array, new scalar
    queue.wait()
    np.testing.assert_array_equal(dpnp.asnumpy(dc), _ref(a, b))
    np.testing.assert_array_equal(dpnp.asnumpy(dc2), _ref(a[:, :32], b[:32]))


def test_launches_and_dpnp_work_keep_program_order(queue):
    """No waits between dpnp writes, launches (repeated: the cached path) and dpnp reads:
    each kernel sees the dpnp write before it and the dpnp read after it sees the kernel."""
    _, b = _ab(seed=7)
    db = dpnp.asarray(b, sycl_queue=queue)
    da = dpnp.zeros((64, 64), dtype=np.float16, sycl_queue=queue)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    total = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    expected = np.zeros((64, 64), np.float32)
    for i in range(40):
        value = float(i % 5 - 2)
        da.fill(value)                                   # dpnp write the kernel must see
        for _ in range(1 + i % 3):                       # a backlog of identical launches
            matmul_kernel[(2, 2)](da, db, dc, 64, **CONST)
        total += dc                                      # dpnp read of the kernel's output
        expected += _ref(np.full((64, 64), value, np.float16), b)
    np.testing.assert_array_equal(dpnp.asnumpy(total), expected)


def test_repeated_launches_leave_one_event_in_dpnps_order_manager(queue):
    """Each launch depends on everything dpnp's order manager holds, so it replaces those
    events: a backlog of launches does not make the next one depend on all of them."""
    from dpctl.utils import SequentialOrderManager

    a, b = _ab(seed=8)
    da, db = dpnp.asarray(a, sycl_queue=queue), dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    for _ in range(50):
        matmul_kernel[(2, 2)](da, db, dc, 64, **CONST)
    assert SequentialOrderManager[queue].num_submitted_events <= 1
    xd.synchronize()
    np.testing.assert_array_equal(dpnp.asnumpy(dc), _ref(a, b))


def test_cached_launch_sees_changed_scalars_and_constexprs(queue):
    a, b = _ab(seed=9)
    da, db = dpnp.asarray(a, sycl_queue=queue), dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    for k in (64, 64, 32, 32, 64):                       # K changes between repeated calls
        matmul_kernel[(2, 2)](da, db, dc, k, **CONST)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy(dc), _ref(a[:, :k], b[:k]))
    for bm in (32, 16, 32):                              # so does a constexpr (and the grid)
        grid = (64 // bm, 2)
        dc.fill(0)
        matmul_kernel[grid](da, db, dc, 64, BM=bm, BN=32, BK=32)
        xd.synchronize()
        np.testing.assert_array_equal(dpnp.asnumpy(dc), _ref(a, b))


def test_usm_ndarray_and_strided_views_with_padded_rows(queue):
    a, b = _ab(seed=2)
    big_a = dpnp.zeros((64, 96), dtype=np.float16, sycl_queue=queue)   # 192-byte rows
    big_a[:, :64] = dpnp.asarray(a, sycl_queue=queue)
    db = dpnp.asarray(b, sycl_queue=queue).get_array()                 # a bare usm_ndarray
    out = dpnp.full((64, 80), -1.0, dtype=np.float32, sycl_queue=queue)
    view = out[:, :64]
    matmul_kernel[(2, 2)](big_a[:, :64], db, view, 64, **CONST)
    xd.synchronize()
    host = dpnp.asnumpy(out)
    np.testing.assert_array_equal(host[:, :64], _ref(a, b))
    assert (host[:, 64:] == -1).all()                                   # padding untouched


def test_numpy_views_with_unit_inner_stride_are_copied_in_and_out():
    a, b = _ab(seed=3)
    wide = np.zeros((64, 100), np.float32)
    matmul_kernel[(2, 2)](a, b, wide[:, 10:74], 64, **CONST)
    np.testing.assert_array_equal(wide[:, 10:74], _ref(a, b))
    assert (wide[:, :10] == 0).all() and (wide[:, 74:] == 0).all()


def test_mixed_numpy_and_dpnp_copy_numpy_and_wait(queue):
    a, b = _ab(seed=4)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    assert matmul_kernel[(2, 2)](a, dpnp.asarray(b, sycl_queue=queue), dc, 64, **CONST) is None
    np.testing.assert_array_equal(dpnp.asnumpy(dc), _ref(a, b))


def test_grid_function_of_meta_parameters(queue):
    a, b = _ab(96, 64, 64, seed=5)
    c = np.zeros((96, 64), np.float32)
    seen = []

    def grid(meta):
        seen.append(dict(meta))
        return (-(-96 // meta["BM"]), -(-64 // meta["BN"]))

    matmul_kernel[grid](a, b, c, 64, BM=16, BN=32, BK=32)
    np.testing.assert_array_equal(c, _ref(a, b))
    assert seen[0]["BM"] == 16 and seen[0]["BN"] == 32 and seen[0]["K"] == 64


def test_pyopencl_arrays_on_their_queue():
    cl = require_module("pyopencl")
    import pyopencl.array as cla

    from xetile_dsl.runtime.devices import get_device

    ctx = cl.Context(devices=[get_device("opencl:cpu", "pyopencl").native])
    q = cl.CommandQueue(ctx)
    a, b = _ab(seed=6)
    ca, cb = cla.to_device(q, a), cla.to_device(q, b)
    cc = cla.zeros(q, (64, 64), np.float32)
    matmul_kernel.on("cpu-arc")[(2, 2)](ca, cb, cc, 64, **CONST)
    xd.synchronize()
    np.testing.assert_array_equal(cc.get(), _ref(a, b))


def test_torch_cpu_tensor_gets_a_clear_message():
    torch = require_torch()   # skipped without torch; a failure under XETILE_REQUIRE_TORCH=1 (CI)
    a, b = _ab()
    with pytest.raises(LaunchError, match=r"argument 'a': torch tensor on device 'cpu'; .*'xpu'.*\.numpy\(\)"):
        matmul_kernel[(2, 2)](torch.from_numpy(a), b, np.zeros((64, 64), np.float32), 64, **CONST)


# --- bad device arrays: every message, nothing launched ------------------------------------

def _bad_cases(queue):
    a, b = _ab()
    other = dpctl.SyclQueue("opencl:cpu")
    da, db = dpnp.asarray(a, sycl_queue=queue), dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    ro = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    ro.flags.writable = False
    return [
        ("dtype", (da, db, dpnp.zeros((64, 64), dtype=np.complex64, sycl_queue=queue)),
         r"argument 'c': arrays of dtype complex64 are not supported"),
        ("inner stride", (da, db, dpnp.zeros((64, 128), dtype=np.float32, sycl_queue=queue)[:, ::2]),
         r"argument 2 \('c'\): device arrays need unit stride in the last dimension, got strides \(128, 2\)"),
        ("negative stride", (da, db, dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)[::-1]),
         r"argument 2 \('c'\): strides \(-64, 1\) \(elements\) must be non-negative"),
        ("read-only", (da, db, ro), r"argument 2 \('c'\): the kernel writes this array but it is read-only"),
        ("two queues", (da, dpnp.asarray(b, sycl_queue=other), dc),
         r"argument 1 \('b'\): is on dpctl queue .* but argument 0 \('a'\) is on dpctl queue .*share one queue"),
    ]


def test_bad_device_arguments_fail_before_launch(queue, monkeypatch):
    from xetile_dsl.runtime.launchers import BACKENDS

    def no_launch(*args, **kwargs):
        raise AssertionError("kernel launched")
    for backend in BACKENDS.values():
        monkeypatch.setattr(backend, "submit_async", no_launch)
        monkeypatch.setattr(backend, "submit", no_launch)
    for case, arrays, message in _bad_cases(queue):
        with pytest.raises(LaunchError, match=message):
            matmul_kernel.on("cpu-pvc")[(2, 2)](*arrays, 64, **CONST)


def test_loaded_kernel_checks_device_array_dtype_and_rank(queue):
    a, b = _ab()
    da, db = dpnp.asarray(a, sycl_queue=queue), dpnp.asarray(b, sycl_queue=queue)
    dc = dpnp.zeros((64, 64), dtype=np.float32, sycl_queue=queue)
    loaded, grid, runtime = matmul_kernel.resolve((2, 2), None, (da, db, dc, 64), CONST)
    with pytest.raises(LaunchError, match=r"argument 2 \('c'\): expected dtype f32 \(numpy.float32\), got float64"):
        loaded.check(grid, [da, db, dpnp.zeros((64, 64), dtype=np.float64, sycl_queue=queue), 64])
    with pytest.raises(LaunchError, match=r"argument 2 \('c'\): expected 2 dimension\(s\), got 1 \(shape \(64,\)\)"):
        loaded.check(grid, [da, db, dpnp.zeros((64,), dtype=np.float32, sycl_queue=queue), 64])
    # a @jit launch gives such arrays the per-lane specialisation (tests/e2e/test_narrow_rows.py);
    # the kernel built for 2D blocks, launched directly, refuses them
    odd = dpnp.zeros((64, 70), dtype=np.float32, sycl_queue=queue)      # 280-byte pitch
    with pytest.raises(LaunchError, match=r"argument 2 \('c'\): row pitch is 280 bytes \(stride 70 elements\); "
                                          r".* multiple of 16 bytes"):
        loaded.check(grid, [da, db, odd[:, :64], 64])
    shifted = dpnp.zeros((64, 96), dtype=np.float32, sycl_queue=queue)
    with pytest.raises(LaunchError, match=r"argument 2 \('c'\): the first element is at address 0x[0-9a-f]+, "
                                          r"not 64-byte aligned"):
        loaded.check(grid, [da, db, shifted[:, 4:68], 64])


def test_device_and_runtime_agreement_messages(queue):
    cl = require_module("pyopencl")
    import pyopencl.array as cla

    from xetile_dsl.runtime.devices import get_device

    ctx = cl.Context(devices=[get_device("opencl:cpu", "pyopencl").native])
    q = cl.CommandQueue(ctx)
    a, b = _ab()
    da = dpnp.asarray(a, sycl_queue=queue)
    with pytest.raises(LaunchError, match=r"argument 1 \('b'\): is on pyopencl queue .* but argument 0 \('a'\) "
                                          r"is on dpctl queue .*share one queue"):
        matmul_kernel[(2, 2)](da, cla.to_device(q, b), dpnp.zeros((64, 64), dtype=np.float32), 64, **CONST)
    with pytest.raises(LaunchError, match=r"argument 'a': expected a numpy array, a dpnp/USM array, a pyopencl "
                                          r"array or a Python scalar, got list"):
        matmul_kernel[(2, 2)](a.tolist(), b, np.zeros((64, 64), np.float32), 64, **CONST)
    with pytest.raises(LaunchError, match=r"num_subgroups=3 is not a power of two"):
        matmul_kernel[(2, 2)](a, b, np.zeros((64, 64), np.float32), 64, num_subgroups=3, **CONST)
    with pytest.raises(LaunchError, match=r"matmul_kernel: missing a required argument: 'K'"):
        matmul_kernel[(2, 2)](a, b, np.zeros((64, 64), np.float32), **CONST)
