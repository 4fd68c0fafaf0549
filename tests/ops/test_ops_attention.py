"""ops.attention (flash attention forward) against f64 numpy with a derived bound
(ops_ref.attention_ref), [Z, H, N, D] with N = 100 (no multiple of the 16-query block:
each head's [N, D] slice is tiled in place, keys past N read as zeros and masked,
queries past N not stored), contiguous and as transposed views.  The CPU device compiles one variant per flavour (D = 64, causal:
the masked path; and ARC's D = 32, whose tiles the interpreter does not run); the interpreter runs the others."""
from __future__ import annotations

import numpy as np
import pytest

from ops_ref import BF16, assert_within, attention_ref
from xetile_dsl import ops
from xetile_dsl.ops import configs
from xetile_dsl.errors import UsageError
from xetile_dsl.targets import TARGETS
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


def test_attention_cpu_pvc_causal_d64_several_key_steps():
    """N = 320: the last query block's key loop runs eighteen 16-key steps (the CPU device's
    16 x 16 tiles) after its first block and before its diagonal block, so the running
    maximum, sum and O^T carry across steps (the kernel above: N is a runtime argument)."""
    _check(*_qkv(64, n=320, h=1), True, "cpu-pvc")


def _growing_scores(d, n=320, h=1):
    """q, k, v whose scores grow by about 0.5 per key (natural log units): each key block
    (16 keys on the CPU device, 64 in the interpreter) passes the running maximum by about
    8 or 32 (11.5 or 46 in log2 units), over attention.RESCALE_SLACK (8), so every step
    takes the lazy rescale's branch."""
    u = RNG.standard_normal(d)
    q = u + 0.1 * RNG.standard_normal((1, h, n, d))
    keys = np.arange(n)[:, None] * 0.5 * np.sqrt(d) / (u @ u) * u
    k = keys + 0.1 * RNG.standard_normal((1, h, n, d))
    v = RNG.standard_normal((1, h, n, d))
    return tuple(x.astype(np.float16) for x in (q, k, v))


@pytest.mark.parametrize("target", ["cpu-pvc", "interpret"])
def test_attention_lazy_rescale_taken_every_step(target):
    """The rescale branch (O^T, the sum and the exponents shifted to the new maximum) runs
    in every key step of the later query blocks and stays within attention_ref's bound
    (causal: the CPU device's kernel is the one the tests above built)."""
    _check(*_growing_scores(64), True, target)


def test_attention_cpu_arc_causal_d64():
    """ARC: the P V product's operand A is re-laid out from the S blocks by lane shuffles
    (8-query, 16-key blocks: N = 100 pads to 104 queries).  Before: a UsageError."""
    _check(*_qkv(64), True, "cpu-arc")


def test_attention_cpu_arc_causal_d32():
    """ARC at D = 32: 8 queries x 32 keys (configs.attention_tiles), N = 100 (the last key
    step masked past N)."""
    _check(*_qkv(32), True, "cpu-arc")


@pytest.mark.parametrize("d,causal,dtype", [(64, False, np.float16), (128, True, np.float16),
                                            (128, False, np.float16), (64, True, BF16), (32, True, np.float16),
                                            (32, False, BF16)])
def test_attention_interpreter(d, causal, dtype):
    _check(*_qkv(d, dtype), causal, "interpret")


@pytest.mark.parametrize("call,message", [
    (lambda: ops.attention(*_qkv(48)), "head dim"),
    (lambda: ops.attention(*_qkv(64, np.float32)), "float16"),
    (lambda: ops.attention(*_qkv(64)[:2], _qkv(64, n=50)[0]), "one shape"),
])
def test_attention_refuses_clearly(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def _transposed_qkv(d, n=100, z=2, h=3):
    """q, k, v as [Z, H, N, D] views of [Z, N, H, D] arrays (torch's ``x.transpose(1, 2)``
    layout: strides (N*H*D, D, H*D, 1)), which ops.attention tiles in place."""
    return tuple(RNG.standard_normal((z, n, h, d)).astype(np.float16).transpose(0, 2, 1, 3) for _ in range(3))


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
def test_attention_on_transposed_views(target):
    """[Z, H, N, D] views with any strides (unit in D) run without host reshapes: each
    head's [N, D] slice q[z, h] is tiled in place (attention_nd_kernel); the reference's
    bound as for contiguous inputs (the arithmetic is the same)."""
    q, k, v = _transposed_qkv(64)
    assert not q.flags.c_contiguous
    _check(q, k, v, True, target)


def test_attention_three_dimensional_inputs():
    """[H, N, D] inputs: one batch (a leading 1 viewed on, no copy), an [H, N, D] result."""
    q, k, v = (x[0] for x in _qkv(64, n=40))
    o = ops.attention(q, k, v, target="interpret")
    ref, bound = attention_ref(q[None], k[None], v[None], False)
    assert o.shape == q.shape
    assert_within(o[None], ref, bound, "[H, N, D]")


def test_attention_device_arrays_any_n_and_strides():
    """Device arrays are used in place with any N (keys past N read as zeros and are
    masked, queries past N are not stored) and any strides with unit stride in D: a
    transposed dpnp view of a [Z, N, H, D] array, N = 100 (no multiple of the 16-query
    block; before N-D tiles a UsageError)."""
    dpnp = require_dpnp()
    host = _transposed_qkv(64, z=1, h=2)
    q, k, v = (dpnp.asarray(np.ascontiguousarray(x.transpose(0, 2, 1, 3))).transpose(0, 2, 1, 3) for x in host)
    o = dpnp.asnumpy(ops.attention(q, k, v, causal=True, target="cpu-pvc"))
    ref, bound = attention_ref(*host, True)
    assert_within(o, ref, bound, "dpnp transposed views")


@pytest.mark.parametrize("target", ["cpu-pvc", "interpret"])
def test_attention_nan_scores_give_nan_rows_like_numpy(target):
    """The key loop's row maximum ignores NaN (maxnumf: one sel per element on Xe), but a
    NaN score still makes its p, the running sum and so the whole output row NaN, as in
    numpy's softmax: a NaN key (key 7, causal) poisons exactly the queries that see it."""
    q, k, v = _qkv(64)
    k[0, 1, 7, 3] = np.nan
    o = ops.attention(q, k, v, causal=True, target=target).astype(np.float64)
    with np.errstate(invalid="ignore"):
        ref, bound = attention_ref(q, k, v, True)
    np.testing.assert_array_equal(np.isnan(o), np.isnan(ref))
    assert np.isnan(o[0, 1, 7:]).all() and not np.isnan(o[0, 1, :7]).any() and not np.isnan(o[0, 0]).any()
    fine = ~np.isnan(ref)
    assert (np.abs(o - ref)[fine] <= bound[fine]).all()


def test_transposed_tiles_leave_one_masked_block():
    """The transposed kernel masks only the block after its key loop: with BN a multiple
    of BM, the causal diagonal and the keys past N fall in that one block."""
    for target in TARGETS.values():
        if target.ops_tiles().attention_form == "transposed":
            assert all(bn % bm == 0 for _, (bm, bn) in target.ops_tiles().attention)
    assert all(bn % bm == 0 for bm, bn in configs.CPU_ATTENTION_TILES.values())


def test_attention_negative_and_zero_scales():
    """A positive scale multiplies in the exp2's fma (SCALED = False); zero and negative
    scales scale the scores first (the masks' -inf would become NaN / +inf in the fma).
    scale = -1/sqrt(D) on k is the default scale on -k (exact in f16): attention_ref's
    bound.  scale = 0: each query averages the values it sees (causal: the first i + 1);
    P = 1 exactly, so the error is the f32 sum ((n + 1) u sum |v|), the division and the
    f16 output rounding."""
    q, k, v = _qkv(64, n=40)
    d = q.shape[-1]
    o = ops.attention(q, k, v, causal=True, scale=-1 / np.sqrt(d), target="interpret")
    ref, bound = attention_ref(q, -k, v, True)
    assert_within(o, ref, bound, "scale = -1/sqrt(D)")
    o = ops.attention(q, k, v, causal=True, scale=0.0, target="interpret").astype(np.float64)
    v64, seen = v.astype(np.float64), np.arange(1, 41)[:, None]
    ref = np.cumsum(v64, axis=2) / seen
    u = 2.0 ** -24
    bound = (41 * u * np.cumsum(np.abs(v64), axis=2) / seen + 2 * u * np.abs(ref)) + 2.0 ** -11 * np.abs(ref)
    assert (np.abs(o - ref) <= bound).all()
