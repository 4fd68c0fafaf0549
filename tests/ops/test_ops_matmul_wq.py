"""ops.quantize_weights / ops.matmul_wq (int4 / int8 weights dequantised in registers).

The quantisation is checked on its own (codes within half a scale step of w, the packed
layout bit by bit from its definition).  The GEMM is checked against x @ W in float64,
W the weights the kernel multiplies by, built here from the codes, scales and zeros by
the definition (f16: q*s - f16(z*s) rounded once to f16 -- exact before that rounding,
the codes and zero points being integers below 256 and s an f16, so q*s and the
difference fit f32; bf16: (q - z)*s, exact in f32, rounded once).  So the only error is
the GEMM's: the products of f16/bf16 values are exact in f32, the f32 accumulation adds
at most (K + 1) u (|x| @ |W|) and the result rounds once to x's dtype (2^-11 for f16,
2^-8 for bf16): ops_ref.matmul_ref's bound.  The interpreter takes the shape breadth
(M 1, 3, 16, 64 and K, N no tile multiples); the CPU device runs two kernels (an OpenCL
build of one takes 6-15 s)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ops_ref import BF16, assert_within, matmul_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError
from xetile_dsl.ops.matmul_wq import BLOCK_K, FIELD_ROWS, pack_codes

RNG = np.random.default_rng(33)


def _weights_from_definition(codes, scales, zeros, bits, group, dtype):
    """W [K, N] in ``dtype`` from the codes (module docstring), written independently."""
    K = codes.shape[0]
    g = np.arange(K) // (K if bits == 8 else group)
    s = scales.astype(np.float64)[g]
    z = (np.full(scales.shape, 8 if bits == 4 else 128) if zeros is None else zeros.astype(np.float64))[g]
    if dtype == np.float16:
        zs = (z * s).astype(np.float16).astype(np.float64)    # z*s is exact in f64, then f16
        return (codes * s - zs).astype(np.float16)
    return ((codes - z) * s).astype(BF16)


def _codes(w_packed, bits, K):
    """The codes [K, N] read back from the layout's definition: K row b*BLOCK + t*32 + p is
    field t (bits t*bits ..) of packed row b*32 + p."""
    words = w_packed.view(np.uint32).astype(np.int64)
    k = np.arange(K)
    b, t, p = k // BLOCK_K[bits], (k % BLOCK_K[bits]) // FIELD_ROWS, k % FIELD_ROWS
    return (words[b * FIELD_ROWS + p] >> (bits * t)[:, None]) & ((1 << bits) - 1)


@pytest.mark.parametrize("bits,symmetric", [(4, False), (4, True), (8, False), (8, True)])
def test_quantize_weights_codes_and_layout(bits, symmetric):
    K, N, group = 384, 40, 128
    w = RNG.standard_normal((K, N)).astype(np.float32)
    w_packed, scales, zeros = ops.quantize_weights(w, bits=bits, group_size=group, symmetric=symmetric)
    blocks = -(-K // BLOCK_K[bits])
    assert w_packed.dtype == np.int32 and w_packed.shape == (blocks * FIELD_ROWS, N)
    groups = 1 if bits == 8 else K // group
    assert scales.dtype == np.float16 and scales.shape == (groups, N)
    assert (zeros is None) == symmetric
    codes = _codes(w_packed, bits, K)
    assert codes.max() < 2 ** bits
    z = (8 if bits == 4 else 128) if symmetric else zeros.astype(np.float64)[np.arange(K) // (K if bits == 8 else group)]
    s = scales.astype(np.float64)[np.arange(K) // (K if bits == 8 else group)]
    # round-to-nearest codes: within half a step of w, plus the f16 rounding of the scale
    # times the largest code distance (2^bits), plus the clip at the range ends
    err = np.abs((codes - z) * s - w)
    assert np.all(err <= s * (0.5 + 2.0 ** (bits - 11)) + 1e-6)


@pytest.mark.parametrize("bits,symmetric,m,k,n,dtype", [
    (4, False, 1, 256, 45, np.float16),
    (4, True, 3, 384, 70, np.float16),
    (4, False, 16, 128, 33, BF16),
    (4, False, 64, 512, 40, np.float16),
    (8, False, 3, 200, 33, np.float16),
    (8, True, 16, 130, 64, BF16),
    (8, True, 64, 96, 17, np.float16),
])
def test_matmul_wq_interpreter(bits, symmetric, m, k, n, dtype):
    _check(bits, symmetric, m, k, n, dtype, "interpret", group=64 if (bits, m) == (4, 16) else 128)


@pytest.mark.parametrize("bits,symmetric,m,k,n", [(4, False, 3, 384, 45)])
def test_matmul_wq_cpu_pvc(bits, symmetric, m, k, n):
    _check(bits, symmetric, m, k, n, np.float16, "cpu-pvc")


def _check(bits, symmetric, m, k, n, dtype, target, group=128):
    w = RNG.standard_normal((k, n)).astype(np.float16)
    x = RNG.standard_normal((m, k)).astype(dtype)
    w_packed, scales, zeros = ops.quantize_weights(w, bits=bits, group_size=group, symmetric=symmetric)
    y = ops.matmul_wq(x, w_packed, scales, zeros, bits=bits, group_size=group, target=target)
    assert y.shape == (m, n) and y.dtype == np.dtype(dtype)
    weights = _weights_from_definition(_codes(w_packed, bits, k), scales, zeros, bits, group, np.dtype(dtype))
    ref, bound = matmul_ref(x.astype(np.float32), weights.astype(np.float32), out_dtype=np.dtype(dtype))
    assert_within(y, ref, bound, f"{target} int{bits} sym={symmetric} M={m} K={k} N={n} {np.dtype(dtype)}")


def test_refusals():
    x = np.zeros((2, 200), np.float16)
    w_packed, scales, zeros = ops.quantize_weights(np.ones((256, 32), np.float16))
    with pytest.raises(UsageError, match="not a multiple of group_size"):
        ops.matmul_wq(x, w_packed, scales, zeros, target="interpret")
    with pytest.raises(UsageError, match="power of two"):
        ops.quantize_weights(np.ones((96, 32), np.float16), group_size=48)
    with pytest.raises(UsageError, match="w_packed must be int32"):
        ops.matmul_wq(np.zeros((2, 512), np.float16), w_packed, scales, zeros, target="interpret")
    with pytest.raises(UsageError, match="float16 or bfloat16"):
        ops.matmul_wq(np.zeros((2, 256), np.float32), w_packed, scales, zeros, target="interpret")
    with pytest.raises(UsageError, match="bits=3"):
        ops.quantize_weights(np.ones((256, 32), np.float16), bits=3)


# ---------------------------------------------------------------- fp8 weights (e4m3fn, e5m2)
# The fp8 model: W = x-dtype(f32(fp8(code) * s)), the fp8 value taken from ml_dtypes'
# view of the byte (not from the library's decoding); f16 scales make the f32 product
# exact (4 + 11 significand bits), f32 scales round it once to f32.  The GEMM error is
# then matmul_ref's bound, as above.
FP8 = {"e4m3": ml_dtypes.float8_e4m3fn, "e5m2": ml_dtypes.float8_e5m2}


def _fp8_weights(w_packed, scales, fmt, K, dtype):
    codes = _codes(w_packed, 8, K).astype(np.uint8).view(FP8[fmt]).astype(np.float64)
    rows = np.arange(K) // (K // scales.shape[0])
    return (codes * scales.astype(np.float64)[rows]).astype(np.float32).astype(dtype)


@pytest.mark.parametrize("fmt", sorted(FP8))
def test_fp8_every_code_decodes_exactly(fmt):
    """All finite codes of the format (signs, subnormals, the largest) through the kernel
    with x = I: each output is one exact product, so y equals W bit for bit."""
    K, N = 32, 256
    codes = (np.arange(N)[None, :] + 7 * np.arange(K)[:, None]) % 256
    finite = np.isfinite(np.arange(256, dtype=np.uint16).astype(np.uint8).view(FP8[fmt]).astype(np.float32))
    codes = np.where(finite[codes], codes, 0).astype(np.uint32)
    w_packed = pack_codes(codes, 8)
    # scales below 1: e5m2's largest value 57344 times s stays finite in f16
    scales = (2.0 ** RNG.integers(-6, 0, (1, N)) * RNG.uniform(1, 2, (1, N))).astype(np.float16)
    for dtype in (np.float16, BF16):      # format= as the string, then as the ml_dtypes type
        y = ops.matmul_wq(np.eye(K, dtype=dtype), w_packed, scales, bits=8,
                          format=fmt if dtype == np.float16 else FP8[fmt], target="interpret")
        np.testing.assert_array_equal(y.astype(np.float32),
                                      _fp8_weights(w_packed, scales, fmt, K, dtype).astype(np.float32))


@pytest.mark.parametrize("fmt,group,scale_dtype", [("e4m3", None, np.float16), ("e5m2", 64, np.float32)])
def test_fp8_quantize_weights(fmt, group, scale_dtype):
    K, N = 256, 24
    w = (RNG.standard_normal((K, N)) * np.exp(RNG.uniform(-6, 2, (K, N)))).astype(np.float32)
    w_packed, scales, zeros = ops.quantize_weights(w, bits=8, group_size=group, format=fmt, scale_dtype=scale_dtype)
    assert zeros is None and w_packed.shape == (K // 128 * 32, N) and scales.dtype == np.dtype(scale_dtype)
    assert scales.shape == (1 if group is None else K // group, N)
    rows = np.arange(K) // (K // scales.shape[0])
    s = scales.astype(np.float64)[rows]
    v = _codes(w_packed, 8, K).astype(np.uint8).view(FP8[fmt]).astype(np.float64)
    assert np.all(np.isfinite(v))
    # the code is w / s rounded to the format (half an ulp: 2^-(M+1) relative, the
    # subnormal unit's half absolute), s rounded to scale_dtype (its half ulp, times the
    # largest |v|, the format's maximum, which the scale's rounding may push w past: clipped)
    mant, unit = (3, 2.0 ** -9) if fmt == "e4m3" else (2, 2.0 ** -16)
    top = 448.0 if fmt == "e4m3" else 57344.0
    s_ulp = 2.0 ** -11 if scale_dtype == np.float16 else 2.0 ** -24
    err = np.abs(v - w / s)
    assert np.all(err <= np.abs(w / s) * 2.0 ** -(mant + 1) + unit / 2 + top * 2 * s_ulp)


@pytest.mark.parametrize("fmt,m,k,n,group,scale_dtype,dtype", [
    ("e4m3", 1, 200, 45, None, np.float16, np.float16),
    ("e5m2", 5, 130, 33, None, np.float32, BF16),
    ("e4m3", 16, 256, 17, 32, np.float32, np.float16),
    ("e5m2", 64, 384, 40, 128, np.float16, np.float16),
    ("e4m3", 33, 128, 64, 64, np.float16, BF16),
])
def test_matmul_wq_fp8_interpreter(fmt, m, k, n, group, scale_dtype, dtype):
    _check_fp8(fmt, m, k, n, group, scale_dtype, dtype, "interpret")


def test_matmul_wq_fp8_cpu_pvc():
    _check_fp8("e4m3", 3, 128, 32, 64, np.float16, np.float16, "cpu-pvc")


def _check_fp8(fmt, m, k, n, group, scale_dtype, dtype, target):
    w = (RNG.standard_normal((k, n)) * np.exp(RNG.uniform(-4, 1, (k, n)))).astype(np.float16)
    x = RNG.standard_normal((m, k)).astype(dtype)
    w_packed, scales, zeros = ops.quantize_weights(w, bits=8, group_size=group, format=fmt, scale_dtype=scale_dtype)
    y = ops.matmul_wq(x, w_packed, scales, zeros, bits=8, group_size=group or 128, format=fmt, target=target)
    assert y.shape == (m, n) and y.dtype == np.dtype(dtype)
    weights = _fp8_weights(w_packed, scales, fmt, k, np.dtype(dtype))
    ref, bound = matmul_ref(x.astype(np.float32), weights.astype(np.float32), out_dtype=np.dtype(dtype))
    assert_within(y, ref, bound, f"{target} {fmt} M={m} K={k} N={n} group={group} {np.dtype(dtype)}")


def test_fp8_refusals():
    x = np.zeros((2, 128), np.float16)
    w_packed, scales, _ = ops.quantize_weights(np.ones((128, 32), np.float16), bits=8, format="e4m3")
    with pytest.raises(UsageError, match="no zeros: fp8 weights are symmetric"):
        ops.matmul_wq(x, w_packed, scales, scales, bits=8, format="e4m3", target="interpret")
    with pytest.raises(UsageError, match="bits must be 8"):
        ops.quantize_weights(np.ones((128, 32), np.float16), bits=4, format="e5m2")
    with pytest.raises(UsageError, match="weight format 'e3m4'"):
        ops.matmul_wq(x, w_packed, scales, bits=8, format="e3m4", target="interpret")
    with pytest.raises(UsageError, match=r"fp8 scales must be float16 or float32 \[1, 32\]"):
        ops.matmul_wq(x, w_packed, scales.astype(np.float64), bits=8, format="e4m3", target="interpret")
