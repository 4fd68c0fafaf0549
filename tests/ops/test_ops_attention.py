"""ops.attention (flash attention forward) against f64 numpy with a derived bound
(ops_ref.attention_ref), [Z, H, N, D] with N = 100 (no multiple of the 16-query block:
numpy inputs are padded per head to whole query blocks (16 for D = 64, 8 for D = 128; 8 on ARC)
and the padded keys masked).  The CPU device compiles one variant per flavour (D = 64, causal:
the masked path); the interpreter runs the others."""
from __future__ import annotations

import numpy as np
import pytest

from ops_ref import BF16, assert_within, attention_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError, XeTileError
from conftest_tools import require_dpnp

RNG = np.random.default_rng(1414)


def _qkv(d, dtype=np.float16, n=100, z=1, h=2):
    return tuple(RNG.standard_normal((z, h, n, d)).astype(dtype) for _ in range(3))


def _check(q, k, v, causal, target):
    o = ops.attention(q, k, v, causal=causal, target=target)
    assert o.shape == q.shape and o.dtype == q.dtype
    ref, bound = attention_ref(q, k, v, causal)
    assert_within(o, ref, bound, f"{target} D={q.shape[-1]} causal={causal}")
    assert np.abs(o.astype(np.float64) - ref).max() <= 2e-2      # the goal


def test_attention_cpu_pvc_causal_d64():
    _check(*_qkv(64), True, "cpu-pvc")


def test_attention_cpu_arc_causal_d64():
    """ARC: the P V product's operand A is re-laid out from the S blocks by lane shuffles
    (8-query, 16-key blocks: N = 100 pads to 104 queries).  Before: a UsageError."""
    _check(*_qkv(64), True, "cpu-arc")


@pytest.mark.parametrize("d,causal,dtype", [(64, False, np.float16), (128, True, np.float16),
                                            (128, False, np.float16), (64, True, BF16)])
def test_attention_interpreter(d, causal, dtype):
    _check(*_qkv(d, dtype), causal, "interpret")


@pytest.mark.parametrize("call,message", [
    (lambda: ops.attention(*_qkv(32)), "head dim"),
    (lambda: ops.attention(*_qkv(64, np.float32)), "float16"),
    (lambda: ops.attention(*_qkv(64)[:2], _qkv(64, n=50)[0]), "one shape"),
])
def test_attention_refuses_clearly(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def test_attention_device_arrays_need_whole_blocks():
    dpnp = require_dpnp()
    q, k, v = (dpnp.asarray(x) for x in _qkv(64))
    with pytest.raises(XeTileError, match="multiple of the query block"):
        ops.attention(q, k, v, target="cpu-pvc")
