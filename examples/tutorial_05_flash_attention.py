"""Tutorial 5 — flash attention: **two tile_mma chained through an online softmax**.

``softmax(q k^T * scale) v`` without ever holding the [N, N] score matrix: each program
owns BM queries and walks the keys in blocks of BN.  Per block, S = Q K^T is one
``tile_mma`` whose operand K^T is read straight from the row-major K through an
``order=(0, 1)`` tile (a transposed view: on PVC a transposed 2D block load, no copy).
The softmax is *online*: the [BM, 1] running maximum ``m`` and sum ``l`` are carried
from block to block, and when the maximum grows, what was already summed is rescaled by
``exp2(m_old - m_new)``.  Scores are pre-multiplied by ``scale * log2(e)`` so every
exponential is one ``exp2``.  P, converted to f16, is the operand A of the second
``tile_mma`` (P V) into an f32 accumulator that never leaves registers.  Keys past N are
masked to -inf.  ``ops.attention`` is this algorithm, computed transposed (keys x
queries) on GPUs with 2D block loads, with lazy rescaling and causal masking.

    python examples/tutorial_05_flash_attention.py [--interpret]
"""
import math
import sys

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def flash_attention(q, k, v, o, N, qk_scale, D: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr):
    """o = softmax(q k^T * qk_scale / log2(e)) v: q, k, v, o [N, D] f16; qk_scale includes log2(e)."""
    row = xt.program_id(0) * BM
    qv = xt.load_tile(xt.init_tile(q, [row, 0], [BM, D]))
    tk = xt.init_tile(k, [0, 0], [D, BN], order=(0, 1))       # K^T [D, keys], read transposed
    tv = xt.init_tile(v, [0, 0], [BN, D])
    m = xt.full([BM, 1], -1e30, xt.float32)                   # running maximum (log2 units)
    l = xt.zeros([BM, 1], xt.float32)                         # running sum of exp2(s - m)
    acc = xt.zeros([BM, D], xt.float32)                       # running sum of exp2(s - m) v
    for start in range(0, N, BN):
        s = xt.tile_mma(qv, xt.load_tile(tk), xt.zeros([BM, BN], xt.float32)) * qk_scale
        s = xt.where(xt.arange(0, BN) + start < N, s, float("-inf"))   # keys past N
        m_new = xt.maximum(m, xt.max(s, axis=1))
        p = xt.exp2(s - m_new)
        alpha = xt.exp2(m - m_new)                            # rescales what was summed so far
        l = l * alpha + xt.sum(p, axis=1)
        acc = xt.tile_mma(xt.astype(p, xt.float16), xt.load_tile(tv), acc * alpha)
        m = m_new
        tk = xt.update_tile_offset(tk, 0, BN)
        tv = xt.update_tile_offset(tv, BN, 0)
    xt.store_tile(xt.astype(acc / l, xt.float16), xt.init_tile(o, [row, 0], [BM, D]))


def main() -> None:
    launch = flash_attention.on("interpret") if "--interpret" in sys.argv else flash_attention
    N, D, BM, BN = 100, 64, 16, 32
    scale = 1 / math.sqrt(D)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((N, D)).astype(np.float16) for _ in range(3))
    o = np.zeros((N, D), np.float16)
    launch[(-(-N // BM),)](q, k, v, o, N, scale * math.log2(math.e), D=D, BM=BM, BN=BN)
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ k64.T * scale
    p = np.exp(s - s.max(1, keepdims=True))
    ref = p @ v64 / p.sum(1, keepdims=True)
    # Error bound per query, in units of W = sum p |v| / sum p (the softmax-weighted |v|):
    # * P rounded to f16 for the second product: 2^-11 relative per term;
    # * each score's f32 error (exact products, D + 2 roundings incl. the scaling) shifts
    #   p_j and the sum l by a factor within exp(+-delta), delta = (D + 2) 2^-24 max_j sum|q k| scale:
    #   2 delta relative (+ its square);
    # * f32 sums over N keys, exp2 and the N / BN rescales: (N + 8 N / BN + 16) 2^-24;
    # * absolute, per key: exp2 of an exponent x rounded in f32 (2^-24 |x| in log2 units) and
    #   f16 subnormal p (below 2^-14) each err by <= 2^-25 p_max = 2^-25, times |v_j| / l;
    # then the final f16 rounding: 2^-11 |o|.
    delta = (D + 2) * 2.0 ** -24 * (np.abs(q64) @ np.abs(k64).T).max(1, keepdims=True) * scale
    weighted_abs_v = p @ np.abs(v64) / p.sum(1, keepdims=True)
    eps32 = (N + 8 * N / BN + 16) * 2.0 ** -24
    absolute = N * 2.0 ** -24 * np.abs(v64).max() / p.sum(1, keepdims=True)
    bound = (2.0 ** -11 + 2 * delta + 4 * delta ** 2 + eps32) * weighted_abs_v + absolute \
        + 2.0 ** -11 * np.abs(ref) + 2.0 ** -25
    assert np.all(np.abs(o - ref) <= bound)
    print(f"flash attention N={N} D={D}: max error {np.abs(o - ref).max():.1e} "
          f"(bound {bound.min():.1e}..{bound.max():.1e})")


if __name__ == "__main__":
    main()
