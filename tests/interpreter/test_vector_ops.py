"""tile_reduce / tile_broadcast / tile_transpose / tile_pack / tile_unpack / tile_conv_layout
from hand-written MLIR, interpreted, against numpy."""
from __future__ import annotations

import numpy as np
import pytest

from .mlir import kernel, run, tile

FLOAT_KINDS = {"add": np.sum, "mul": np.prod, "minnumf": np.nanmin, "maxnumf": np.nanmax,
               "minimumf": np.min, "maximumf": np.max}
INT_KINDS = {"add": np.sum, "mul": np.prod, "minsi": np.min, "maxsi": np.max,
             "and": np.bitwise_and.reduce, "or": np.bitwise_or.reduce, "xor": np.bitwise_xor.reduce}


def reduce_kernel(kind: str, elem: str, dim: int) -> str:
    """Load 16x32, reduce along ``dim``, broadcast back, store 16x32."""
    red = "1x32" if dim == 0 else "16x1"
    body = f"""
  %t = {tile("x", elem, "16x32")}
  %v = xetile.load_tile %t : !xetile.tile<16x32x{elem}> -> vector<16x32x{elem}>
  %r = xetile.tile_reduce <{kind}> %v [{dim}] : vector<16x32x{elem}> -> vector<{red}x{elem}>
  %b = xetile.tile_broadcast %r [{dim}] : vector<{red}x{elem}> -> vector<16x32x{elem}>
  %o = {tile("y", elem, "16x32")}
  xetile.store_tile %b, %o : vector<16x32x{elem}>, !xetile.tile<16x32x{elem}>"""
    return kernel({"x": elem, "y": elem}, body)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("kind", sorted(FLOAT_KINDS))
def test_float_reduce_and_broadcast(kind, dim):
    rng = np.random.default_rng(3)
    x = rng.uniform(0.5, 1.5, (16, 32)).astype(np.float32)
    y = np.zeros_like(x)
    run(reduce_kernel(kind, "f32", dim), (1,), x, y)
    ref = FLOAT_KINDS[kind](x.astype(np.float64), axis=dim, keepdims=True)
    np.testing.assert_allclose(y, np.broadcast_to(ref, x.shape).astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("kind", sorted(INT_KINDS))
def test_int_reduce_and_broadcast(kind, dim):
    rng = np.random.default_rng(4)
    x = rng.integers(-50, 50, (16, 32)).astype(np.int32)
    if kind == "mul":
        x = rng.choice(np.array([-1, 1, 2], np.int32), (16, 32))
    y = np.zeros_like(x)
    run(reduce_kernel(kind, "i32", dim), (1,), x, y)
    ref = INT_KINDS[kind](x.astype(np.int64), axis=dim, keepdims=True).astype(np.int32)  # wraps like i32
    np.testing.assert_array_equal(y, np.broadcast_to(ref, x.shape))


def test_unsigned_min_max_compare_as_unsigned():
    x = np.array([[-1] + [5] * 31] * 16, np.int32)  # -1 is the largest u32
    body_max, body_min = (reduce_kernel(k, "i32", 1) for k in ("maxui", "minui"))
    y = np.zeros_like(x)
    run(body_max, (1,), x, y)
    assert (y == -1).all()
    run(body_min, (1,), x, y)
    assert (y == 5).all()


def test_maxnumf_ignores_nan_and_maximumf_propagates_it():
    x = np.ones((16, 32), np.float32)
    x[:, 3] = np.nan
    y = np.zeros_like(x)
    run(reduce_kernel("maxnumf", "f32", 1), (1,), x, y)
    assert (y == 1).all()
    run(reduce_kernel("maximumf", "f32", 1), (1,), x, y)
    assert np.isnan(y).all()


def test_transpose_pack_unpack_conv_layout():
    body = f"""
  %t = {tile("x", "f32", "16x32")}
  %v = xetile.load_tile %t : !xetile.tile<16x32xf32> -> vector<16x32xf32>
  %p = xetile.tile_pack %v {{inner_blocks = array<i64: 8, 16>}} : vector<16x32xf32> -> vector<2x2x8x16xf32>
  %u = xetile.tile_unpack %p {{inner_blocks = array<i64: 8, 16>}} : vector<2x2x8x16xf32> -> vector<16x32xf32>
  %l = xetile.tile_conv_layout %u {{wg_map = #xetile.wg_map<sg_layout = [2, 2], sg_data = [8, 16]>}} : vector<16x32xf32> -> vector<16x32xf32>
  %r = xetile.tile_transpose %l [1, 0] : vector<16x32xf32> -> vector<32x16xf32>
  %o = {tile("y", "f32", "32x16")}
  xetile.store_tile %r, %o : vector<32x16xf32>, !xetile.tile<32x16xf32>
  %bo = {tile("z", "f32", "8x16")}
  %blk = vector.extract %p[1, 0] : vector<8x16xf32> from vector<2x2x8x16xf32>
  xetile.store_tile %blk, %bo : vector<8x16xf32>, !xetile.tile<8x16xf32>"""
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    y, z = np.zeros((32, 16), np.float32), np.zeros((8, 16), np.float32)
    run(kernel({"x": "f32", "y": "f32", "z": "f32"}, body), (1,), x, y, z)
    np.testing.assert_array_equal(y, x.T)
    np.testing.assert_array_equal(z, x[8:16, 0:16])  # block (1, 0) of the 8x16 blocking


def test_blocked_tiles_load_and_mma_in_4d():
    """Tiles with inner_blocks load 4-D vectors; tile_mma on 4-D blocks equals the 2-D product."""
    blk = "#xetile.tile_attr<inner_blocks = [8, 16]>"
    bblk = "#xetile.tile_attr<inner_blocks = [16, 16]>"
    body = f"""
  %ta = {tile("a", "f16", "16x32", attr=blk)}
  %tb = {tile("b", "f16", "32x16", attr=bblk)}
  %va = xetile.load_tile %ta : !xetile.tile<16x32xf16, {blk}> -> vector<2x2x8x16xf16>
  %vb = xetile.load_tile %tb : !xetile.tile<32x16xf16, {bblk}> -> vector<2x1x16x16xf16>
  %acc = arith.constant dense<1.0> : vector<2x1x8x16xf32>
  %d = xetile.tile_mma %va, %vb, %acc : vector<2x2x8x16xf16>, vector<2x1x16x16xf16>, vector<2x1x8x16xf32> -> vector<2x1x8x16xf32>
  %tc = {tile("c", "f32", "16x16", attr=blk)}
  xetile.store_tile %d, %tc : vector<2x1x8x16xf32>, !xetile.tile<16x16xf32, {blk}>"""
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (16, 32)).astype(np.float16)
    b = rng.integers(-3, 4, (32, 16)).astype(np.float16)
    c = np.zeros((16, 16), np.float32)
    run(kernel({"a": "f16", "b": "f16", "c": "f32"}, body), (1,), a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32) + 1)
