"""attention_vnni_kernel (O = P V, V a VNNI operand B: bmg's D = 128 form) against float64,
causal and not, N not a multiple of BN: in the interpreter, and once on the CPU device
(cpu-pvc runs the kernel body the compiler emits, P's transpose through SLM included)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from xetile_dsl.ops.attention import attention_vnni_kernel
from xetile_dsl.ops.matmul import XT_DTYPES


@pytest.mark.parametrize("target,n,causal,d,bm,bn", [("interpret", 40, False, 128, 16, 16),
                                                     ("interpret", 37, True, 64, 16, 32),
                                                     ("interpret", 70, True, 128, 16, 64),
                                                     ("cpu-pvc", 40, False, 128, 16, 16)])
def test_attention_vnni(target, n, causal, d, bm, bn):
    rng = np.random.default_rng(n)
    q, k, v = (rng.standard_normal((n, d)).astype(np.float16) for _ in range(3))
    o = np.zeros_like(q)
    lse = np.zeros((1, n), np.float32)
    scale = 1 / math.sqrt(d)
    attention_vnni_kernel.on(target)[(-(-n // bm), 1)](
        q, k, v, o, lse, n, n, scale * math.log2(math.e), 1, CAUSAL=causal, OUT=XT_DTYPES["float16"], D=d,
        BM=bm, BN=bn, SCALED=False)
    s = q.astype(np.float64) @ k.astype(np.float64).T * scale
    if causal:
        s = np.where(np.arange(n)[None] <= np.arange(n)[:, None], s, -np.inf)
    p = np.exp(s - s.max(1, keepdims=True))
    ref = p / p.sum(1, keepdims=True) @ v.astype(np.float64)
    # P rounds to f16 (2^-11 relative, up to 2^8 after the lazy rescale's slack, relative
    # to the sum too) and O to f16: |o| <= max |v| ~ 4.5, so 2^-11 * 2 * 4.5 + O's rounding
    assert np.abs(o - ref).max() <= 2 ** -11 * 2 * np.abs(v).max() + 2 ** -10 * np.abs(ref).max()
    ref_lse = np.log(np.exp(s - s.max(1, keepdims=True)).sum(1)) + s.max(1)
    assert np.abs(lse[0] - ref_lse).max() <= 1e-4 * (1 + np.abs(ref_lse).max())
