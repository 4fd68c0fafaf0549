"""Arrays whose rows are narrower than 2D block messages allow (64 bytes on PVC): a GEMM
with K = 20 (A rows of 40 bytes) or N = 12 (C rows of 48 bytes) runs, its narrow arrays
read and written per lane, on both CPU lane layouts and the interpreter.

Inputs are small integers, so every product and sum is exact in f32: results must equal
numpy's exactly."""
from __future__ import annotations

import numpy as np
import pytest

from conftest_tools import require_dpnp
from xetile_dsl.kernels.matmul import matmul_kernel

#: (M, N, K): K = 20 (narrow A), N = 12 (narrow B and C), both
SHAPES = [(40, 48, 20), (40, 12, 48), (24, 12, 20)]
TILE = {"BM": 16, "BN": 16, "BK": 16}


def _operands(M, N, K):
    rng = np.random.default_rng(M * 100 + N * 10 + K)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    return a, b


def _run(target, a, b):
    M, N = a.shape[0], b.shape[1]
    c = np.full((M, N), np.nan, np.float32)   # every element must be written
    grid = (-(-M // TILE["BM"]), -(-N // TILE["BN"]))
    matmul_kernel.on(target)[grid](a, b, c, a.shape[1], **TILE)
    return c


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gemm_with_narrow_rows_is_exact(shape, target):
    a, b = _operands(*shape)
    np.testing.assert_array_equal(_run(target, a, b), a.astype(np.float32) @ b.astype(np.float32))


def test_a_narrow_view_of_a_wide_array_is_exact():
    """A view whose rows are narrow inside wider rows (pitch 128 bytes, width 40): the
    per-lane accesses use the view's own pitch and stop at its width."""
    M, N, K = 32, 32, 20
    wide = np.random.default_rng(3).integers(-3, 4, (M, 64)).astype(np.float16)
    a = wide[:, 8:8 + K]
    b = np.random.default_rng(4).integers(-3, 4, (K, N)).astype(np.float16)
    np.testing.assert_array_equal(_run("cpu-pvc", a, b), a.astype(np.float32) @ b.astype(np.float32))


def test_dpnp_arrays_with_narrow_unaligned_rows_are_used_in_place():
    """Device arrays are not copied: A's rows of 40 bytes (pitch 40, no 16-byte multiple)
    were refused twice over (width and pitch); accessed per lane, neither rule applies."""
    dpnp = require_dpnp()
    M, N, K = 32, 32, 20
    a, b = _operands(M, N, K)
    c = dpnp.zeros((M, N), dtype=np.float32)
    grid = (M // TILE["BM"], N // TILE["BN"])
    matmul_kernel.on("cpu-pvc")[grid](dpnp.asarray(a), dpnp.asarray(b), c, K, **TILE)
    np.testing.assert_array_equal(dpnp.asnumpy(c), a.astype(np.float32) @ b.astype(np.float32))


# --- device arrays whose pitch or first element 2D block messages cannot address -------------

import warnings  # noqa: E402

import xetile_dsl as xd  # noqa: E402
import xetile_dsl.language as xt  # noqa: E402
from xetile_dsl.errors import PerLaneLayoutWarning  # noqa: E402


def _add_kernel_():
    """A fresh add kernel (a layout is warned about once per kernel)."""
    @xd.jit
    def add(x, y, o, BM: xt.constexpr, BN: xt.constexpr):
        pm, pn = xt.program_id(0), xt.program_id(1)
        a = xt.load_tile(xt.init_tile(x, [pm * BM, pn * BN], [BM, BN]))
        b = xt.load_tile(xt.init_tile(y, [pm * BM, pn * BN], [BM, BN]))
        xt.store_tile(a + b, xt.init_tile(o, [pm * BM, pn * BN], [BM, BN]))
    return add


def _layout_warnings(launch):
    """The PerLaneLayoutWarnings a launch gives (every one: no filter dedups them)."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        launch()
        xd.synchronize()
    return [w for w in seen if issubclass(w.category, PerLaneLayoutWarning)]


def _said_here(found, *phrases):
    """Exactly one warning, located at this file's launch and saying ``phrases``."""
    assert len(found) == 1, [str(w.message) for w in found]
    text = str(found[0].message)
    assert found[0].filename == __file__, found[0].filename
    for phrase in phrases:
        assert phrase in text, text


def test_dpnp_f16_rows_of_100_elements_take_the_per_lane_kernel_once_warned():
    """f16 rows of 100 elements: 200 bytes, a pitch that is no 16-byte multiple (the width
    rule holds): a device array used in place was refused ("allocate rows padded").  It now
    takes the per-lane specialisation, with one warning for the three arrays naming the cost
    and the padding that avoids it; the second launch says nothing."""
    dpnp = require_dpnp()
    a = (np.arange(37 * 100) % 13).reshape(37, 100).astype(np.float16)
    b = (np.arange(37 * 100) % 7).reshape(37, 100).astype(np.float16)
    x, y, o = dpnp.asarray(a), dpnp.asarray(b), dpnp.zeros((37, 100), dtype=np.float16)
    grid = (-(-37 // 16), -(-100 // 16))
    add = _add_kernel_()

    def launch():
        add.on("cpu-pvc")[grid](x, y, o, BM=16, BN=16)
    _said_here(_layout_warnings(launch), "'x', 'y', 'o': row pitch 200 bytes", "not a multiple of 16",
               "per-lane specialisation", "a compile of its own", "padded to 104 elements")
    np.testing.assert_array_equal(dpnp.asnumpy(o), a + b)   # small integers: exact in f16
    o.fill(0)
    assert _layout_warnings(launch) == []
    np.testing.assert_array_equal(dpnp.asnumpy(o), a + b)


def test_dpnp_gemm_with_k_100_runs_in_place():
    """The README's dpnp GEMM with K = 100 (A's rows 200 bytes): exact, one warning naming A."""
    dpnp = require_dpnp()
    M, N, K = 37, 48, 100
    a, b = _operands(M, N, K)
    c = dpnp.full((M, N), np.nan, dtype=np.float32)
    grid = (-(-M // TILE["BM"]), N // TILE["BN"])

    def launch():
        matmul_kernel.on("cpu-pvc")[grid](dpnp.asarray(a), dpnp.asarray(b), c, K, **TILE)
    _said_here(_layout_warnings(launch), "'a': row pitch 200 bytes")
    np.testing.assert_array_equal(dpnp.asnumpy(c), a.astype(np.float32) @ b.astype(np.float32))


def test_dpnp_view_starting_inside_a_row_runs_in_place():
    """A view whose first element is 8 bytes into a 64-byte aligned row (pitch 384 bytes,
    fine) was refused; it takes the per-lane kernel, warned, and is exact."""
    dpnp = require_dpnp()
    M, N, K = 32, 32, 64
    a, b = _operands(M, N, K)
    wide = dpnp.full((M, 96), np.nan, dtype=np.float32)
    c = wide[:, 2:2 + N]

    def launch():
        matmul_kernel.on("cpu-pvc")[(2, 2)](dpnp.asarray(a), dpnp.asarray(b), c, K, **TILE)
    _said_here(_layout_warnings(launch), "'c': first element at 0x", "not 64-byte aligned")
    host = dpnp.asnumpy(wide)
    np.testing.assert_array_equal(host[:, 2:2 + N], a.astype(np.float32) @ b.astype(np.float32))
    assert np.isnan(host[:, :2]).all() and np.isnan(host[:, 2 + N:]).all()


def test_pyopencl_f16_rows_of_100_elements_take_the_same_path():
    """pyopencl arrays (used in place on their queue) go the same way as dpnp's."""
    from conftest_tools import require_module
    cl = require_module("pyopencl")
    import pyopencl.array as cla

    from xetile_dsl.runtime.devices import get_device

    ctx = cl.Context(devices=[get_device("opencl:cpu", "pyopencl").native])   # kept alive with its queue
    q = cl.CommandQueue(ctx)
    a = (np.arange(37 * 100) % 11).reshape(37, 100).astype(np.float16)
    b = (np.arange(37 * 100) % 5).reshape(37, 100).astype(np.float16)
    x, y, o = cla.to_device(q, a), cla.to_device(q, b), cla.zeros(q, (37, 100), np.float16)

    add = _add_kernel_()

    def launch():
        add.on("cpu-pvc")[(3, 7)](x, y, o, BM=16, BN=16)
    _said_here(_layout_warnings(launch), "'x', 'y', 'o': row pitch 200 bytes")
    np.testing.assert_array_equal(o.get(), a + b)


def test_no_layout_warning_without_2d_block_io():
    """ARC (cpu-arc) has no 2D block messages: the same arrays run, exact, unwarned."""
    dpnp = require_dpnp()
    a = (np.arange(37 * 100) % 13).reshape(37, 100).astype(np.float16)
    x, o = dpnp.asarray(a), dpnp.zeros((37, 100), dtype=np.float16)
    assert _layout_warnings(lambda: _add_kernel_().on("cpu-arc")[(3, 7)](x, x, o, BM=16, BN=16)) == []
    np.testing.assert_array_equal(dpnp.asnumpy(o), a + a)
