"""Tiles whose width is no multiple of the lanes' block: a 16x2 tile (a
column pair), a 16x8 tile on 16 lanes and a 16x24 one are cut into [8, 1] columns that
every lane holds, instead of being refused; loads, element-wise math, row and column
reductions, broadcasts back and stores all work, on both CPU lane layouts and the
interpreter.

Reference: numpy in f64 on the same f32 inputs.  The row softmax has at most 24 terms:
exp and the division are correctly rounded within a few ulp in f32 and the sum of n
terms in [0, 1] adds at most n ulp, so rtol = 64 * eps(f32) bounds it with margin; the
other outputs are sums of small integers or max, exact in f32."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def narrow_tile(x, y, rowmax, colsum, p, R: xt.constexpr, C: xt.constexpr):
    """y = 2x + 1, rowmax = max over each row, colsum = sum over each column (per program),
    p = row softmax of x -- all on one R x C tile."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * R, 0], [R, C]))
    xt.store_tile(v * 2.0 + 1.0, xt.init_tile(y, [pid * R, 0], [R, C]))
    m = xt.tile_reduce("maxnumf", v, 1)
    xt.store_tile(m, xt.init_tile(rowmax, [pid * R, 0], [R, 1]))
    xt.store_tile(xt.tile_reduce("add", v, 0), xt.init_tile(colsum, [pid, 0], [1, C]))
    e = xt.exp(v - xt.tile_broadcast(m, [R, C]))
    s = xt.tile_reduce("add", e, 1)
    xt.store_tile(e / xt.tile_broadcast(s, [R, C]), xt.init_tile(p, [pid * R, 0], [R, C]))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("shape", [(16, 2), (16, 8), (8, 24)], ids=lambda s: "x".join(map(str, s)))
def test_narrow_tile_is_lowered(shape, target):
    R, C = shape
    programs = 2
    rng = np.random.default_rng(R * C)
    x = rng.integers(-8, 9, (programs * R, C)).astype(np.float32)
    y, p = np.full_like(x, np.nan), np.full_like(x, np.nan)
    rowmax = np.full((programs * R, 1), np.nan, np.float32)
    colsum = np.full((programs, C), np.nan, np.float32)
    narrow_tile.on(target)[(programs,)](x, y, rowmax, colsum, p, R=R, C=C)
    np.testing.assert_array_equal(y, 2 * x + 1)
    np.testing.assert_array_equal(rowmax, x.max(1, keepdims=True))
    np.testing.assert_array_equal(colsum, x.reshape(programs, R, C).sum(1))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(1, keepdims=True), rtol=64 * np.finfo(np.float32).eps, atol=0)


#: a 16x16 tile in two 8x16 row bands, converted to two 16x8 column bands
ROW_BANDS = xt.wg_map(sg_layout=[2, 1], sg_data=[8, 16])
COL_BANDS = xt.wg_map(sg_layout=[1, 2], sg_data=[16, 8])


@xd.jit
def conv_to_narrow_pieces(a, c):
    """c = 2a + 1: a workgroup layout conversion whose pieces are 16x8 f32 (narrower than
    PVC's 16 lanes), refused before."""
    v = xt.load_tile(xt.init_tile(a, [0, 0], [16, 16], wg_map=ROW_BANDS))
    w = xt.tile_conv_layout(v * 2.0, COL_BANDS)
    xt.store_tile(w + 1.0, xt.init_tile(c, [0, 0], [16, 16], wg_map=COL_BANDS))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret", "interpret-subgroups"])
def test_layout_conversion_to_16x8_pieces(target):
    a = np.random.default_rng(3).integers(-50, 50, (16, 16)).astype(np.float32)
    c = np.full_like(a, np.nan)
    conv_to_narrow_pieces.on(target)[(1,)](a, c)
    np.testing.assert_array_equal(c, 2 * a + 1)   # small integers: exact in f32
