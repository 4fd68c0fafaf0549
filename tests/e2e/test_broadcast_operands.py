"""Rows and columns broadcast into tiles on ARC's 8 lanes: a bias row
added to operand A, a scale column multiplied into operand A or B, and a masked row
softmax of a GEMM result, as a user writes them; before, ARC refused the first three
(``source block 1x8 cannot be stretched to 8x16``, ``8x1 -> 16x8``; PVC the column into B).
Both CPU lane layouts and the interpreter.

Inputs are small integers (products and sums exact in f32), so GEMM results equal numpy's
exactly.  The softmax has 16 terms per row: exp and the division are within a few ulp in
f32 and the sum adds at most 16 ulp, so rtol = 64 * eps(f32) bounds it."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt

TARGETS = ["cpu-pvc", "cpu-arc", "interpret"]
M, N, K = 32, 32, 32
T = {"BM": 16, "BN": 16, "BK": 16}


@xd.jit
def bias_a_gemm(a, bias, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = (A + bias_row) @ B."""
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tr = xt.init_tile(bias, [0, 0], [1, BK])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta) + xt.tile_broadcast(xt.load_tile(tr), [BM, BK])
        acc = xt.tile_mma(va, xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tr = xt.update_tile_offset(tr, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def scale_a_gemm(a, s, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = (A * s_col) @ B: each row of A scaled."""
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    vs = xt.load_tile(xt.init_tile(s, [pid_m * BM, 0], [BM, 1]))
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta) * xt.tile_broadcast(vs, [BM, BK]), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def scale_b_gemm(a, s, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = A @ (B * s_col): each row of B scaled."""
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    ts = xt.init_tile(s, [0, 0], [BK, 1])
    tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        vb = xt.load_tile(tb) * xt.tile_broadcast(xt.load_tile(ts), [BK, BN])
        acc = xt.tile_mma(xt.load_tile(ta), vb, acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        ts = xt.update_tile_offset(ts, BK, 0)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def masked_softmax(a, b, mask, p, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """P = row softmax(A @ B + mask_row) over one BN-wide block of columns (program 1 = 0)."""
    pid_m = xt.program_id(0)
    ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, 0], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    s = acc + xt.tile_broadcast(xt.load_tile(xt.init_tile(mask, [0, 0], [1, BN])), [BM, BN])
    e = xt.exp(s - xt.tile_broadcast(xt.tile_reduce("maxnumf", s, 1), [BM, BN]))
    xt.store_tile(e / xt.tile_broadcast(xt.tile_reduce("add", e, 1), [BM, BN]),
                  xt.init_tile(p, [pid_m * BM, 0], [BM, BN]))


def _ints(seed, shape, dtype=np.float16, lo=-3, hi=4):
    return np.random.default_rng(seed).integers(lo, hi, shape).astype(dtype)


def _gemm(kernel, target, *args):
    c = np.full((M, N), np.nan, np.float32)
    kernel.on(target)[(M // T["BM"], N // T["BN"])](*args, c, K, **T)
    return c


@pytest.mark.parametrize("target", TARGETS)
def test_bias_row_into_operand_a(target):
    a, bias, b = _ints(1, (M, K)), _ints(2, (1, K)), _ints(3, (K, N))
    want = (a.astype(np.float32) + bias.astype(np.float32)) @ b.astype(np.float32)
    np.testing.assert_array_equal(_gemm(bias_a_gemm, target, a, bias, b), want)


@pytest.mark.parametrize("target", TARGETS)
def test_scale_column_into_operand_a(target):
    a, s, b = _ints(4, (M, K)), _ints(5, (M, 1), lo=-2, hi=3), _ints(6, (K, N))
    want = (a.astype(np.float32) * s.astype(np.float32)) @ b.astype(np.float32)
    np.testing.assert_array_equal(_gemm(scale_a_gemm, target, a, s, b), want)


@pytest.mark.parametrize("target", TARGETS)
def test_scale_column_into_operand_b(target):
    a, s, b = _ints(7, (M, K)), _ints(8, (K, 1), lo=-2, hi=3), _ints(9, (K, N))
    want = a.astype(np.float32) @ (b.astype(np.float32) * s.astype(np.float32))
    np.testing.assert_array_equal(_gemm(scale_b_gemm, target, a, s, b), want)


@pytest.mark.parametrize("target", TARGETS)
def test_masked_row_softmax_of_a_gemm(target):
    BN = T["BN"]
    a, b = _ints(10, (M, K), lo=-1, hi=2), _ints(11, (K, BN), lo=-1, hi=2)  # |scores| <= 32: no subnormal p
    mask = np.where(np.arange(BN) % 3 == 0, -np.inf, 0).astype(np.float32)[None, :]
    p = np.full((M, BN), np.nan, np.float32)
    masked_softmax.on(target)[(M // T["BM"],)](a, b, mask, p, K, **T)
    s = a.astype(np.float64) @ b.astype(np.float64) + mask
    e = np.exp(s - s.max(1, keepdims=True))
    np.testing.assert_allclose(p, e / e.sum(1, keepdims=True), rtol=64 * np.finfo(np.float32).eps, atol=0)
