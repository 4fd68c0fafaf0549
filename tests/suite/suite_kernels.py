"""The kernel suite: kernels people write around a GEMM, each with a numpy
reference.  test_suite.py runs every one in the interpreter and, where the lowering
supports it, compiled on the CPU device in the PVC and ARC flavours."""
from __future__ import annotations

from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt
from tf32_ref import tf32_matmul_ref
from kernels.fused import gemm_bias_relu, gemm_gelu, row_softmax
from xetile_dsl.kernels.matmul import matmul_kernel

F16, BF16, F32 = np.float16, ml_dtypes.bfloat16, np.float32


# ------------------------------------------------------------------ kernels
@xd.jit
def gemm(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, ACC: xt.constexpr):
    """Plain K loop, any input type; ACC is the accumulator dtype."""
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    acc = xt.zeros([BM, BN], ACC)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


@xd.jit
def gemm_at(at, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = A @ B with A stored transposed (at is K x M): an order=(0, 1) view."""
    ta = xt.init_tile(at, [xt.program_id(0) * BM, 0], [BM, BK], order=(0, 1))
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


@xd.jit
def gemm_bt(a, bt, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """C = A @ B with B stored transposed (bt is N x K)."""
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(bt, [0, xt.program_id(1) * BN], [BK, BN], order=(0, 1))
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


@xd.jit
def gemm_unrolled(a, b, c, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, KSTEPS: xt.constexpr):
    """The K loop unrolled at compile time with static_range."""
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in xt.static_range(KSTEPS):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


@xd.jit
def scale_shift(v, alpha: xt.constexpr, beta: xt.constexpr):
    """A helper @jit function, inlined into its callers."""
    return v * alpha + beta


@xd.jit
def gemm_helper_epilogue(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    ta = xt.init_tile(a, [xt.program_id(0) * BM, 0], [BM, BK])
    tb = xt.init_tile(b, [0, xt.program_id(1) * BN], [BK, BN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
    y = scale_shift(acc, 0.5, 2.0)
    xt.store_tile(y, xt.init_tile(c, [xt.program_id(0) * BM, xt.program_id(1) * BN], [BM, BN]))


@xd.jit
def layer_norm(x, gamma, beta, y, BM: xt.constexpr, BN: xt.constexpr):
    """Row-wise layer norm over a [M, BN] array with eps 1e-5."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    mean = xt.sum(v, axis=1) * (1.0 / BN)
    d = v - mean
    var = xt.sum(d * d, axis=1) * (1.0 / BN)
    g = xt.load_tile(xt.init_tile(gamma, [0, 0], [1, BN]))
    bb = xt.load_tile(xt.init_tile(beta, [0, 0], [1, BN]))
    xt.store_tile(d * xt.rsqrt(var + 1e-5) * g + bb, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


@xd.jit
def row_sum(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """y[:, 0] = sum of each row (y is [M, 16]: one column written)."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.sum(v, axis=1), xt.init_tile(y, [pid * BM, 0], [BM, 1]))


@xd.jit
def col_max(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """y[0, :] = max of each column of a [BM, N] array."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [0, pid * BN], [BM, BN]))
    xt.store_tile(xt.max(v, axis=0), xt.init_tile(y, [0, pid * BN], [1, BN]))


@xd.jit
def broadcast_add(x, row, y, BM: xt.constexpr, BN: xt.constexpr):
    pid_m, pid_n = xt.program_id(0), xt.program_id(1)
    v = xt.load_tile(xt.init_tile(x, [pid_m * BM, pid_n * BN], [BM, BN]))
    r = xt.load_tile(xt.init_tile(row, [0, pid_n * BN], [1, BN]))
    xt.store_tile(v + r, xt.init_tile(y, [pid_m * BM, pid_n * BN], [BM, BN]))


@xd.jit
def math_chain(x, y, BM: xt.constexpr, BN: xt.constexpr):
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    w = xt.sigmoid(v) + xt.sqrt(xt.abs(v)) * xt.exp(-v * v) - xt.log(1.0 + v * v) + xt.cos(v) * xt.tanh(v)
    xt.store_tile(w, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


@xd.jit
def cast_chain(x, y, BM: xt.constexpr, BN: xt.constexpr):
    """f32 -> bf16 -> f32 -> i32 -> f32 (round to nearest even, truncation toward zero)."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    w = xt.astype(xt.astype(xt.astype(xt.astype(v, xt.bfloat16), xt.float32), xt.int32), xt.float32)
    xt.store_tile(w, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


@xd.jit
def relu_if(x, y, FLAG, BM: xt.constexpr, BN: xt.constexpr):
    """``if`` on a runtime scalar: relu when FLAG != 0, else identity."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    if FLAG != 0:
        v = xt.maximum(v, 0.0)
    xt.store_tile(v, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


@xd.jit
def halve_while(x, y, STEPS, BM: xt.constexpr, BN: xt.constexpr):
    """``while`` with a loop-carried tile and counter."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    i = 0
    while i < STEPS:
        v = v * 0.5
        i = i + 1
    xt.store_tile(v, xt.init_tile(y, [pid * BM, 0], [BM, BN]))


@xd.jit
def atomic_accumulate(x, total, BM: xt.constexpr, BN: xt.constexpr):
    """Every workgroup adds its [BM, BN] slice of x into the same tile of total."""
    v = xt.load_tile(xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, BN]))
    xt.atomic_rmw("add", v, xt.init_tile(total, [0, 0], [BM, BN]))


@xd.jit
def gather_rows(x, idx, y, N: xt.constexpr, W: xt.constexpr):
    """y[i, :] = x[idx[i], :] with element offsets built from an index tile."""
    pid = xt.program_id(0)
    rows = xt.load_tile(xt.init_tile(idx, [pid, 0], [1, W]))
    offs = rows * N + xt.arange(0, W)
    v = xt.load_gather(xt.init_tile(x, offs))
    xt.store_tile(v, xt.init_tile(y, [pid, 0], [1, W]))


@xd.jit
def scatter_masked(x, y, n):
    """y[perm[i]] = x[i] for i < n (a reversal), masked beyond n."""
    i = xt.arange(0, 16)
    v = xt.load_tile(xt.init_tile(x, [0, 0], [1, 16]))
    xt.store_scatter(v, xt.init_tile(y, 15 - i), i < n)


@xd.jit
def arg_extremes(x, best, worst, BM: xt.constexpr, BN: xt.constexpr):
    """best[i, 0] = argmax of row i; worst[pid, :] = argmin of each column of the tile."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.argmax(v, axis=1), xt.init_tile(best, [pid * BM, 0], [BM, 1]))
    xt.store_tile(xt.argmin(v, axis=0), xt.init_tile(worst, [pid, 0], [1, BN]))


@xd.jit
def int8_sums(x, rs, cm, BM: xt.constexpr, BN: xt.constexpr):
    """Row sums (wrapping in int8) and column maxima of an int8 tile."""
    pid = xt.program_id(0)
    v = xt.load_tile(xt.init_tile(x, [pid * BM, 0], [BM, BN]))
    xt.store_tile(xt.sum(v, axis=1), xt.init_tile(rs, [pid * BM, 0], [BM, 1]))
    xt.store_tile(xt.max(v, axis=0), xt.init_tile(cm, [pid, 0], [1, BN]))


# ------------------------------------------------------------------ the table
@dataclass
class Case:
    name: str
    kernel: object
    grid: tuple
    args: list
    constexprs: dict
    outputs: dict            # argument index -> expected array
    compiled: tuple = ("pvc", "arc")   # CPU flavours the lowering supports today
    rtol: float = 1e-5
    atol: float = 1e-5
    extra: dict = field(default_factory=dict)


def _rng(seed):
    return np.random.default_rng(seed)


def _ints(rng, shape, dt, lo=-3, hi=4):
    return rng.integers(lo, hi, shape).astype(dt)


def cases() -> list[Case]:
    r = _rng(0)
    out = []
    a, b = _ints(r, (64, 64), F16), _ints(r, (64, 64), F16)
    ref = a.astype(F32) @ b.astype(F32)
    out.append(Case("gemm_f16", gemm, (2, 2), [a, b, np.zeros((64, 64), F32), 64],
                    dict(BM=32, BN=32, BK=16, ACC=xt.float32), {2: ref}))
    ab, bb = _ints(r, (64, 96), BF16), _ints(r, (96, 64), BF16)
    out.append(Case("gemm_bf16_unaligned_k", gemm, (2, 2), [ab, bb, np.zeros((64, 64), F32), 96],
                    dict(BM=32, BN=32, BK=32, ACC=xt.float32), {2: ab.astype(F32) @ bb.astype(F32)}))
    a8, b8 = _ints(r, (64, 64), np.int8, -100, 100), _ints(r, (64, 64), np.int8, -100, 100)
    out.append(Case("gemm_int8_to_int32", gemm, (2, 2), [a8, b8, np.zeros((64, 64), np.int32), 64],
                    dict(BM=32, BN=32, BK=32, ACC=xt.int32), {2: a8.astype(np.int32) @ b8.astype(np.int32)}))
    af, bf = r.standard_normal((64, 64)).astype(F32), r.standard_normal((64, 64)).astype(F32)
    tf32_ref, tf32_bound = tf32_matmul_ref(af, bf)   # tf32 inputs, f32 sums (tests/tf32_ref.py)
    out.append(Case("gemm_tf32", gemm, (2, 2), [af, bf, np.zeros((64, 64), F32), 64],
                    dict(BM=32, BN=32, BK=32, ACC=xt.float32), {2: tf32_ref}, compiled=("pvc",), rtol=0.0,
                    atol=tf32_bound))
    out.append(Case("gemm_prefetch_k_loop", matmul_kernel, (2, 2), [a, b, np.zeros((64, 64), F32), 64],
                    dict(BM=32, BN=32, BK=16), {2: ref}))
    at = np.ascontiguousarray(a.T)
    out.append(Case("gemm_a_transposed", gemm_at, (2, 2), [at, b, np.zeros((64, 64), F32), 64],
                    dict(BM=32, BN=32, BK=16), {2: ref}))
    bt = np.ascontiguousarray(b.T)
    out.append(Case("gemm_b_transposed", gemm_bt, (2, 2), [a, bt, np.zeros((64, 64), F32), 64],
                    dict(BM=32, BN=32, BK=16), {2: ref}))
    out.append(Case("gemm_static_range", gemm_unrolled, (2, 2), [a, b, np.zeros((64, 64), F32)],
                    dict(BM=32, BN=32, BK=16, KSTEPS=4), {2: ref}))
    out.append(Case("gemm_helper_jit", gemm_helper_epilogue, (2, 2), [a, b, np.zeros((64, 64), F32), 64],
                    dict(BM=32, BN=32, BK=16), {2: ref * 0.5 + 2.0}))
    bias = _ints(r, (1, 64), F32)
    relu = np.maximum(ref + bias, 0).astype(BF16)
    out.append(Case("gemm_bias_relu_bf16", gemm_bias_relu, (2, 2), [a, b, bias, np.zeros((64, 64), BF16), 64],
                    dict(BM=32, BN=32, BK=16), {3: relu}))
    ag, bg = (r.standard_normal((32, 32)) * 0.3).astype(F16), (r.standard_normal((32, 64)) * 0.3).astype(F16)
    z = ag.astype(np.float64) @ bg.astype(np.float64)
    from math import erf

    gelu = 0.5 * z * (1 + np.vectorize(erf)(z / np.sqrt(2)))
    out.append(Case("gemm_gelu", gemm_gelu, (2, 4), [ag, bg, np.zeros((32, 64), F32), 32],
                    dict(TANH=False, BM=16, BN=16, BK=32), {2: gelu}, rtol=1e-3, atol=1e-3))
    x = r.standard_normal((48, 32)).astype(F32)
    e = np.exp(x - x.max(1, keepdims=True))
    out.append(Case("row_softmax", row_softmax, (6,), [x, np.zeros_like(x)], dict(BM=8, BN=32),
                    {1: e / e.sum(1, keepdims=True)}, rtol=1e-5, atol=1e-6))
    gam, bet = r.standard_normal((1, 32)).astype(F32), r.standard_normal((1, 32)).astype(F32)
    mu, var = x.mean(1, keepdims=True), x.var(1, keepdims=True)
    out.append(Case("layer_norm", layer_norm, (6,), [x, gam, bet, np.zeros_like(x)], dict(BM=8, BN=32),
                    {3: (x - mu) / np.sqrt(var + 1e-5) * gam + bet}, rtol=1e-4, atol=1e-4))
    ys = np.zeros((48, 16), F32)
    exp_s = ys.copy()
    exp_s[:, 0] = x.sum(1)
    out.append(Case("row_sum", row_sum, (6,), [x, ys], dict(BM=8, BN=32), {1: exp_s}, rtol=1e-5, atol=1e-5))
    xc = r.standard_normal((16, 64)).astype(F32)
    out.append(Case("col_max", col_max, (4,), [xc, np.zeros((1, 64), F32)], dict(BM=16, BN=16),
                    {1: xc.max(0, keepdims=True)}))
    row = r.standard_normal((1, 64)).astype(F32)
    out.append(Case("broadcast_add", broadcast_add, (4, 4), [xc.repeat(4, 0), row, np.zeros((64, 64), F32)],
                    dict(BM=16, BN=16), {2: xc.repeat(4, 0) + row}))
    xm = r.standard_normal((16, 32)).astype(F32)
    w = (1 / (1 + np.exp(-xm)) + np.sqrt(np.abs(xm)) * np.exp(-xm * xm) - np.log(1 + xm * xm)
         + np.cos(xm) * np.tanh(xm))
    out.append(Case("math_chain", math_chain, (2,), [xm, np.zeros_like(xm)], dict(BM=8, BN=32), {1: w},
                    rtol=1e-5, atol=1e-5))
    xw = (r.standard_normal((16, 32)) * 100).astype(F32)
    cast_ref = np.trunc(xw.astype(BF16).astype(F32)).astype(np.int32).astype(F32)
    out.append(Case("cast_chain", cast_chain, (2,), [xw, np.zeros_like(xw)], dict(BM=8, BN=32), {1: cast_ref}))
    out.append(Case("relu_if", relu_if, (2,), [xm, np.zeros_like(xm), 1], dict(BM=8, BN=32),
                    {1: np.maximum(xm, 0)}))
    out.append(Case("halve_while", halve_while, (2,), [xm, np.zeros_like(xm), 3], dict(BM=8, BN=32),
                    {1: xm / 8}))
    xa = _ints(r, (64, 16), np.int32, -50, 50)
    out.append(Case("atomic_add_accumulate", atomic_accumulate, (8,), [xa, np.zeros((8, 16), np.int32)],
                    dict(BM=8, BN=16), {1: xa.reshape(8, 8, 16).sum(0)}))
    xg = r.standard_normal((32, 16)).astype(F32)
    idx = r.integers(0, 32, (8, 1)).astype(np.int32).repeat(16, 1)
    out.append(Case("gather_rows", gather_rows, (8,), [xg, idx, np.zeros((8, 16), F32)], dict(N=16, W=16),
                    {2: xg[idx[:, 0]]}))
    xs = r.standard_normal((1, 16)).astype(F32)
    ysc = np.zeros((1, 16), F32)
    exp_sc = ysc.copy()
    exp_sc[0, 15 - np.arange(10)] = xs[0, :10]
    out.append(Case("scatter_masked", scatter_masked, (1,), [xs, ysc, 10], {}, {1: exp_sc}))
    xt_ = r.integers(-3, 3, (16, 32)).astype(F32)  # ties: the first index wins
    best = np.zeros((16, 16), np.int32)
    exp_best = best.copy()
    exp_best[:, 0] = xt_.argmax(1)
    out.append(Case("argmax_argmin", arg_extremes, (2,), [xt_, best, np.zeros((2, 32), np.int32)],
                    dict(BM=8, BN=32), {1: exp_best, 2: np.stack([xt_[:8].argmin(0), xt_[8:].argmin(0)])}))
    xi = r.integers(-128, 128, (16, 64)).astype(np.int8)
    rs = np.zeros((16, 64), np.int8)
    exp_rs = rs.copy()
    exp_rs[:, 0] = xi.sum(1, dtype=np.int8)  # wraps around in int8
    out.append(Case("int8_row_sum_col_max", int8_sums, (2,), [xi, rs, np.zeros((2, 64), np.int8)],
                    dict(BM=8, BN=64), {1: exp_rs, 2: np.stack([xi[:8].max(0), xi[8:].max(0)])}))
    return out
