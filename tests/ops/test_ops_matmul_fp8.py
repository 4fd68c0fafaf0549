"""ops.matmul on fp8 inputs (ml_dtypes' float8_e4m3fn / float8_e5m2, mixed too): converted to
f16 in registers (exact), f32 accumulation, against f64 numpy with ops_ref's bound (every
product of two fp8 values is exact in f32), at a shape that is no tile multiple, on the
CPU device in both flavours and in the interpreter; a transposed fp8 A is refused alike."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from ops_ref import BF16, assert_within, matmul_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError

M, N, K = 37, 45, 50
RNG = np.random.default_rng(21)
A = (RNG.standard_normal((M, K)) * 3).astype(ml_dtypes.float8_e4m3fn)
B = (RNG.standard_normal((K, N)) * 3).astype(ml_dtypes.float8_e5m2)
BIAS = RNG.standard_normal(N).astype(np.float32)


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("tb,bias,act,out", [(False, None, None, None), (True, BIAS, "relu", BF16)])
def test_fp8_matmul(target, tb, bias, act, out):
    b = B.astype(ml_dtypes.float8_e4m3fn) if tb else B       # e4m3 x e4m3 and e4m3 x e5m2
    stored = np.ascontiguousarray(b.T) if tb else b
    c = ops.matmul(A, stored, trans_b=tb, bias=bias, activation=act, out_dtype=out, target=target)
    want = np.dtype(out) if out is not None else np.dtype(np.float32)   # fp8 inputs default to f32 out
    assert c.shape == (M, N) and c.dtype == want
    ref, bound = matmul_ref(A.astype(np.float32), b.astype(np.float32), bias, act, want)
    assert_within(c, ref, bound, f"{target} fp8 tb={tb}")


@pytest.mark.parametrize("target", ["cpu-pvc", "interpret"])
def test_transposed_fp8_a_is_refused(target):
    with pytest.raises(UsageError, match="transposed fp8 a"):
        ops.matmul(np.ascontiguousarray(A.T), B, trans_a=True, target=target)


def test_fp8_with_f16_is_refused():
    with pytest.raises(UsageError, match="both must have one dtype"):
        ops.matmul(A, B.astype(np.float16), target="interpret")
