"""xt.dot_scaled beyond one scale block: K of 64..128 in one call (scales [M, K/32] and
[N, K/32], or b_scale as [K/32, N]), a_format/b_format per operand (bf16 and fp16
operands unscaled), one-sided scaling (a_scale or b_scale None), against float64
(ml_dtypes decodes fp8, bf16 and the e8m0 scales; e2m1 from its code table).

Tolerance: every operand value converts exactly to f16 (bf16 when the other side is
bf16), each product of two is exact in f32 and the power-of-two scales are applied
exactly (ldexp), so only the f32 sums round: K block sums and the adds of the blocks'
results, at most K + K/32 + 1 roundings of 2^-24 each on the sum of magnitudes:
|c - ref| <= (K + K/32 + 1) * 2^-24 * (|a_s| @ |b_s|) (a_s, b_s the scaled operands)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError

E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])
DTYPES = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2, "bf16": ml_dtypes.bfloat16,
          "fp16": np.float16}


@xd.jit
def scaled_call(a, sa, b, sb, c, M: xt.constexpr, N: xt.constexpr, KA: xt.constexpr, KB: xt.constexpr,
                FA: xt.constexpr, FB: xt.constexpr, SA: xt.constexpr, SB: xt.constexpr, ROW: xt.constexpr,
                NB: xt.constexpr):
    s1 = xt.load_tile(xt.init_tile(sa, [0, 0], [M, NB])) if SA else None
    if not SB:
        s2 = None
    elif ROW:
        s2 = xt.load_tile(xt.init_tile(sb, [0, 0], [NB, N]))
    else:
        s2 = xt.load_tile(xt.init_tile(sb, [0, 0], [N, NB]))
    acc = xt.load_tile(xt.init_tile(c, [0, 0], [M, N]))
    r = xt.dot_scaled(xt.load_tile(xt.init_tile(a, [0, 0], [M, KA])), s1, xt.load_tile(xt.init_tile(b, [0, 0], [KB, N])),
                      s2, acc, a_format=FA, b_format=FB)
    xt.store_tile(r, xt.init_tile(c, [0, 0], [M, N]))


def _codes(rng, fmt, shape):
    if fmt == "e2m1":
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.standard_normal(shape).astype(DTYPES[fmt])


def _values(x, fmt, axis):
    """float64 values; e2m1 unpacked along K (axis 1 of a, 0 of b), low nibble first."""
    if fmt != "e2m1":
        return x.astype(np.float64)
    return np.stack([E2M1[x & 15], E2M1[x >> 4]], axis=axis + 1).reshape(
        (x.shape[0], -1) if axis == 1 else (-1, x.shape[1]))


def _scale(s, K):
    return s.view(ml_dtypes.float8_e8m0fnu).astype(np.float64).repeat(32, axis=1) if s is not None else 1.0


CASES = [  # a_format, b_format, K, a scaled, b scaled, b_scale as [K/32, N]
    ("e4m3", "e4m3", 64, True, True, False), ("e5m2", "e4m3", 128, True, True, True),
    ("e2m1", "e2m1", 128, True, True, False), ("e2m1", "e2m1", 64, False, True, True),
    ("e4m3", "bf16", 64, True, False, False), ("fp16", "e5m2", 96, False, True, False),
    ("bf16", "bf16", 64, False, False, False), ("e4m3", "e5m2", 32, True, False, False),
]


@pytest.mark.parametrize("fa,fb,K,has_sa,has_sb,row", CASES)
def test_dot_scaled_formats_interpreter(fa, fb, K, has_sa, has_sb, row):
    rng = np.random.default_rng(K + len(fa + fb))
    M, N, nb = 16, 32, K // 32
    a = _codes(rng, fa, (M, K // 2 if fa == "e2m1" else K))
    b = _codes(rng, fb, (K // 2 if fb == "e2m1" else K, N))
    sa = rng.integers(100, 155, (M, nb)).astype(np.uint8) if has_sa else None
    sb = rng.integers(100, 155, (N, nb)).astype(np.uint8) if has_sb else None
    if has_sa:
        sa[3, nb - 1] = 255   # NaN: row 3
    acc = rng.standard_normal((M, N)).astype(np.float32)
    c = acc.copy()
    dummy = np.zeros((1, 1), np.uint8)
    scaled_call.on("interpret")[(1,)](a, sa if has_sa else dummy, b, (sb.T.copy() if row else sb) if has_sb else dummy,
                                      c, M=M, N=N, KA=a.shape[1], KB=b.shape[0], FA=fa, FB=fb, SA=has_sa, SB=has_sb,
                                      ROW=row, NB=nb)
    va, vb = _values(a, fa, 1) * _scale(sa, K), _values(b, fb, 0) * _scale(sb, K).T if has_sb else _values(b, fb, 0)
    with np.errstate(invalid="ignore"):
        ref = acc + va @ vb
        bound = (K + nb + 1) * 2.0 ** -24 * (np.abs(va) @ np.abs(vb) + np.abs(acc)) + 1e-30
    nan = np.isnan(ref)
    assert nan.any() == has_sa and (np.isnan(c) == nan).all()
    assert (np.abs(c - ref)[~nan] <= bound[~nan]).all()


def test_dot_scaled_format_refusals():
    a = np.zeros((16, 64), ml_dtypes.float8_e4m3fn)
    s = np.zeros((16, 2), np.uint8)
    c = np.zeros((16, 16), np.float32)
    kw = dict(M=16, N=16, KA=64, KB=64, SA=True, SB=True, ROW=False, NB=2)
    with pytest.raises(CompilationError, match=r"a bf16 operand is not scaled: b_scale must be None"):
        scaled_call.on("interpret")[(1,)](a, s, a.T.astype(ml_dtypes.bfloat16), s, c, FA="e4m3", FB="bf16", **kw)
    with pytest.raises(CompilationError, match=r"an e2m1 operand .* pairs only with another e2m1"):
        scaled_call.on("interpret")[(1,)](np.zeros((16, 32), np.uint8), s, a.T.copy(), s, c, FA="e2m1", FB="e4m3",
                                          **dict(kw, KA=32))
