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

import numpy as np
import pytest

from ops_ref import BF16, assert_within, matmul_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError
from xetile_dsl.ops.matmul_wq import BLOCK_K, FIELD_ROWS

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
