"""Rank-3 and rank-4 arrays: tiles of their 2-D slices, made with ``x[z, h]`` or with
``init_tile(x, [z, h, row, col], [1, 1, BM, BN])``, loaded, stored and moved over the last
two dimensions; arrays of any strides (transposed views, slices).  Compiled (the PVC and
ARC flavours on the CPU device) and interpreted, against numpy: copies and small-integer
products are exact, so the comparisons are exact."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from conftest_tools import require_dpnp
from xetile_dsl.errors import PerLaneLayoutWarning

TARGETS = ["cpu-pvc", "cpu-arc", "interpret"]
RNG = np.random.default_rng(23)


@xd.jit
def add_one_4d(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """y[z, h] = x[z, h] + 1 over row blocks: x through init_tile with four offsets, y
    through its slice y[z, h]."""
    z = xt.program_id(1)
    h = xt.program_id(2)
    r = xt.program_id(0) * BM
    v = xt.load_tile(xt.init_tile(x, [z, h, r, 0], [1, 1, BM, BN]))
    xt.store_tile(v + 1.0, xt.init_tile(y[z, h], [r, 0], [BM, BN]))


@pytest.mark.parametrize("target", TARGETS)
def test_4d_transposed_view(target):
    """x is the [Z, H, N, D] view of a [Z, N, H, D] array (strides N*H*D, D, H*D, 1):
    copied in with those strides; N = 40 is no multiple of the 16-row block (the last
    block's rows past N read as zeros and are not stored)."""
    Z, H, N, D = 2, 3, 40, 32
    x = RNG.standard_normal((Z, N, H, D)).astype(np.float32).transpose(0, 2, 1, 3)
    y = np.full((Z, H, N, D), np.nan, np.float32)
    add_one_4d.on(target)[(-(-N // 16), Z, H)](x, y, BM=16, BN=D)
    np.testing.assert_array_equal(y, x + 1.0)


@pytest.mark.parametrize("target", TARGETS)
def test_4d_output_view_is_written_back(target):
    """The written array is itself a strided view (of a [Z, N, H, D] array): the launch
    writes through it, leaving the array's other elements alone."""
    Z, H, N, D = 1, 2, 16, 32
    x = RNG.standard_normal((Z, H, N, D)).astype(np.float32)
    whole = np.zeros((Z, N, H + 1, D), np.float32)
    y = whole[:, :, 1:].transpose(0, 2, 1, 3)
    add_one_4d.on(target)[(1, Z, H)](x, y, BM=16, BN=D)
    np.testing.assert_array_equal(whole[:, :, 1:].transpose(0, 2, 1, 3), x + 1.0)
    assert not whole[:, :, 0].any()


@xd.jit
def batched_gemm(a, b, c, K: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """c[g] = a[g] @ b[g] for rank-3 a, b, c: the K loop moves the slices' tiles with
    update_tile_offset (the last two dimensions)."""
    g = xt.program_id(2)
    row = xt.program_id(0) * BM
    col = xt.program_id(1) * BN
    ta = xt.init_tile(a[g], [row, 0], [BM, BK])
    tb = xt.init_tile(b, [g, 0, col], [1, BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [g, row, col], [1, BM, BN]))


@pytest.mark.parametrize("target", TARGETS)
def test_3d_batched_gemm(target):
    """Small integers in f16: every product and sum is exact in f32."""
    G, M, N, K = 3, 32, 32, 64
    a = RNG.integers(-3, 4, (G, M, K)).astype(np.float16)
    b = RNG.integers(-3, 4, (G, K, N)).astype(np.float16)
    c = np.full((G, M, N), np.nan, np.float32)
    batched_gemm.on(target)[(M // 16, N // 16, G)](a, b, c, K=K, BM=16, BN=16, BK=16)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_3d_odd_rows_slices_stay_aligned(target):
    """7-row slices of f16 rows of 40 elements (80 bytes) and f32 rows of 40 (160 bytes):
    the launcher pads numpy N-D arrays' rows until a slice is a multiple of 64 bytes (c's
    rows to 192 bytes), so every slice x[g] starts aligned for the 2D block messages
    (runtime/arguments.py, ArrayHandler.layout)."""
    G, M, N, K = 2, 7, 40, 32
    a = RNG.integers(-3, 4, (G, M, K)).astype(np.float16)
    b = RNG.integers(-3, 4, (G, K, N)).astype(np.float16)
    c = np.full((G, M, N), np.nan, np.float32)
    batched_gemm.on(target)[(1, 3, G)](a, b, c, K=K, BM=16, BN=16, BK=16)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_4d_dpnp_transposed_view_in_place():
    """A dpnp array's transposed view is used in place (no copy) with its own strides."""
    dpnp = require_dpnp()
    Z, H, N, D = 2, 2, 32, 32
    host = RNG.standard_normal((Z, N, H, D)).astype(np.float32)
    x = dpnp.asarray(host).transpose(0, 2, 1, 3)
    y = dpnp.zeros((Z, H, N, D), dtype=np.float32)
    add_one_4d.on("cpu-pvc")[(N // 16, Z, H)](x, y, BM=16, BN=D)
    np.testing.assert_array_equal(dpnp.asnumpy(y), host.transpose(0, 2, 1, 3) + 1.0)


def test_4d_dpnp_misaligned_slices_take_the_per_lane_form():
    """A device array whose slices would not start 64-byte aligned (the [Z, H, N, 16]
    view of a [Z, N, H, 24] f32 array: head stride 24 elements, 96 bytes) is accessed
    per lane: the same answer."""
    dpnp = require_dpnp()
    Z, H, N, D = 1, 3, 16, 16
    host = RNG.standard_normal((Z, N, H, 24)).astype(np.float32)
    x = dpnp.asarray(host).transpose(0, 2, 1, 3)[..., :D]
    y = dpnp.zeros((Z, H, N, D), dtype=np.float32)
    with pytest.warns(PerLaneLayoutWarning, match="leading strides are multiples of 64 bytes"):
        add_one_4d.on("cpu-pvc")[(1, Z, H)](x, y, BM=16, BN=D)
    np.testing.assert_array_equal(dpnp.asnumpy(y), host.transpose(0, 2, 1, 3)[..., :D] + 1.0)


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_nd_kernels_compile_for_the_gpus(target, ocloc_path):
    """The GPU flavours build through ocloc (machine code for the slices' tiles)."""
    sig = {"x": "f32[:,:,:,:]", "y": "f32[:,:,:,:]"}
    assert xd.compile(add_one_4d, sig, {"BM": 16, "BN": 32}, target=target).report().spill_bytes == 0
    sig = {"a": "f16[:,:,:]", "b": "f16[:,:,:]", "c": "f32[:,:,:]"}
    compiled = xd.compile(batched_gemm, sig, {"K": 256, "BM": 16, "BN": 16, "BK": 16}, target=target)
    assert compiled.report().spill_bytes == 0
    isa = compiled.asm["isa"]
    assert "dpas" in isa
    if target == "pvc":                      # the slices' tiles are 2D block messages, not gathers
        assert "load_block2d" in isa and "store_block2d" in isa


@xd.jit
def rows_loop(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """A loop bounded by the 3-D array's x.shape[1] over workgroup tiles (a wg_map over
    two subgroups) of its slice x[g] and of y's."""
    g = xt.program_id(0)
    xs = x[g]
    for r in range(0, x.shape[1], BM):
        t = xt.init_tile(xs, [r, 0], [BM, BN], wg_map=xt.wg_map(sg_layout=[2, 1], sg_data=[BM // 2, BN]))
        v = xt.load_tile(t)
        xt.store_tile(v * 2.0, xt.init_tile(y[g], [r, 0], [BM, BN],
                                            wg_map=xt.wg_map(sg_layout=[2, 1], sg_data=[BM // 2, BN])))


@xd.jit
def first_column(x, out):
    """A scattered gather from the slice x[g] (element offsets count from the slice's
    first element, rows xs.shape[1] apart)."""
    g = xt.program_id(0)
    xs = x[g]
    column = xt.load_gather(xt.init_tile(xs, xt.arange(0, 16) * xs.shape[1]))
    xt.store_tile(column, xt.init_tile(out, [g, 0, 0], [1, 1, 16]))


@pytest.mark.parametrize("target", TARGETS)
def test_slice_shapes_loops_gathers_and_workgroup_tiles(target):
    G, M, N = 2, 48, 32
    x = RNG.standard_normal((G, M, N)).astype(np.float32)
    y = np.full((G, M, N), np.nan, np.float32)
    out = np.full((G, 1, 16), np.nan, np.float32)
    rows_loop.on(target)[(G,)](x, y, BM=16, BN=N)
    np.testing.assert_array_equal(y, 2 * x)
    first_column.on(target)[(G,)](x, out)
    np.testing.assert_array_equal(out[:, 0], x[:, :16, 0])


@pytest.mark.parametrize("target", ["cpu-pvc", "interpret"])
def test_3d_narrow_rows_take_the_per_lane_form(target):
    """f16 rows of 20 elements (40 bytes, under the 64 of a 2D block message): the N-D
    array gets the per-lane specialisation as a 2-D one does."""
    G, M, N = 2, 16, 20
    x = RNG.integers(-3, 4, (G, M, N)).astype(np.float16)
    y = np.zeros((G, M, N), np.float16)

    @xd.jit
    def add_one_3d(x, y):
        g = xt.program_id(0)
        v = xt.load_tile(xt.init_tile(x, [g, 0, 0], [1, 16, 32]))
        xt.store_tile(v + xt.full([16, 32], 1.0, xt.float16), xt.init_tile(y[g], [0, 0], [16, 32]))

    add_one_3d.on(target)[(G,)](x, y)
    np.testing.assert_array_equal(y, x + np.float16(1))
