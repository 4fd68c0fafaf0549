"""ops.attention with ``cu_seqlens`` (packed variable-length sequences, flash-attn's
[total, H, D] layout) against f64 numpy per sequence with ops_ref.attention_ref's bound
(each sequence is an independent attention of its own length), with odd lengths, a length
1, partial query blocks and GQA ratios 1, 4 and 8.  The varlen kernel runs the dense
kernel's arithmetic on each sequence's rows, so its o and lse also equal ops.attention on
that sequence alone, bit for bit (which checks that nothing crosses a sequence boundary:
no key of a neighbour is seen, no row of a neighbour is written)."""
from __future__ import annotations

import numpy as np
import pytest

from ops_ref import BF16, assert_within, attention_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError

RNG = np.random.default_rng(3636)


def _packed(lengths, h, h_kv, d, dtype=np.float16):
    total = int(sum(lengths))
    q = RNG.standard_normal((total, h, d)).astype(dtype)
    k, v = (RNG.standard_normal((total, h_kv, d)).astype(dtype) for _ in range(2))
    return q, k, v, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def _check(lengths, h, h_kv, d, causal, target, dtype=np.float16, dense=False):
    q, k, v, cu = _packed(lengths, h, h_kv, d, dtype)
    o, lse = ops.attention(q, k, v, causal=causal, cu_seqlens=cu, return_lse=True, target=target)
    assert o.shape == q.shape and o.dtype == q.dtype and lse.shape == (h, q.shape[0]) and lse.dtype == np.float32
    for b, (lo, hi) in enumerate(zip(cu[:-1], cu[1:])):
        qs, ks, vs = (x[lo:hi].transpose(1, 0, 2) for x in (q, k, v))     # [H, n, D]
        ks, vs = (np.repeat(x, h // h_kv, axis=0) for x in (ks, vs))      # query head j reads kv head j // G
        ref, bound = attention_ref(qs, ks, vs, causal)
        assert_within(o[lo:hi].transpose(1, 0, 2), ref, bound, f"{target} sequence {b} of {lengths}")
        if dense:
            do, dlse = ops.attention(qs, k[lo:hi].transpose(1, 0, 2), v[lo:hi].transpose(1, 0, 2), causal=causal,
                                     return_lse=True, target=target)
            np.testing.assert_array_equal(o[lo:hi].transpose(1, 0, 2), do)
            np.testing.assert_array_equal(lse[:, lo:hi], dlse)


@pytest.mark.parametrize("lengths,h,h_kv,causal", [
    ((1, 37, 70, 64, 129), 2, 2, True),      # GQA 1: length 1, partial blocks, exact and multi-block
    ((5, 1, 100), 8, 2, False),              # GQA 4
    ((66, 3, 17), 8, 1, True),               # GQA 8
])
def test_attention_varlen_interpret(lengths, h, h_kv, causal):
    _check(lengths, h, h_kv, 64, causal, "interpret", dense=True)


def test_attention_varlen_interpret_d128_bf16():
    _check((9, 80), 4, 1, 128, True, "interpret", dtype=BF16)


def test_attention_varlen_interpret_d32():
    """D = 32: pvc's 32 x 32 tiles, so 1, 37 and 70 end in partial query blocks."""
    _check((1, 37, 70), 4, 2, 32, True, "interpret", dense=True)


def test_attention_varlen_cpu_pvc():
    """One CPU-device compile: 16 x 16 tiles, so 19 and 33 end in partial query blocks."""
    _check((1, 19, 33), 4, 1, 64, True, "cpu-pvc", dense=False)


def test_attention_varlen_errors():
    q, k, v, cu = _packed((3, 4), 2, 2, 64)
    with pytest.raises(UsageError, match="running total"):
        ops.attention(q, k, v, cu_seqlens=np.array([0, 3, 6], np.int32), target="interpret")
    with pytest.raises(UsageError, match="less than the longest"):
        ops.attention(q, k, v, cu_seqlens=cu, max_seqlen=3, target="interpret")
    with pytest.raises(UsageError, match="total, H, D"):
        ops.attention(q[None], k[None], v[None], cu_seqlens=cu, target="interpret")
    with pytest.raises(UsageError, match="goes with cu_seqlens"):
        ops.attention(q[None], k[None], v[None], max_seqlen=4, target="interpret")


def test_attention_varlen_torch_op():
    """torch.ops.xetile.attention(_lse) with cu_seqlens: what ops.attention returns, and the
    fake implementation's shapes (torch.compile traces through it)."""
    torch = pytest.importorskip("torch")
    from xetile_dsl.ops import torch_ops
    xetile = torch_ops.register()
    q, k, v, cu = _packed((3, 20), 4, 2, 64)
    tq, tk, tv, tcu = (torch.from_numpy(x) for x in (q, k, v, cu))
    o = xetile["attention"](tq, tk, tv, True, None, tcu, 20, "interpret")
    np.testing.assert_array_equal(o.numpy(), ops.attention(q, k, v, causal=True, cu_seqlens=cu, target="interpret"))
    o, lse = xetile["attention_lse"](tq, tk, tv, True, None, tcu, None, "interpret")
    assert tuple(o.shape) == q.shape and tuple(lse.shape) == (4, 23)
    with torch._subclasses.fake_tensor.FakeTensorMode() as mode:
        fo, flse = torch_ops._attention_lse_fake(*(mode.from_tensor(x) for x in (tq, tk, tv)), True, None,
                                                 mode.from_tensor(tcu))
    assert tuple(fo.shape) == q.shape and tuple(flse.shape) == (4, 23)
