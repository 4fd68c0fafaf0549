"""ops.rope, ops.silu_mul and ops.add_rms_norm (ops/llm.py) against f64 numpy with the
bounds derived in llm_ref.py: random shapes in the interpreter (odd token counts, 1 to 9
heads, D 32 to 256, partial rotary dims, widths no multiple of the tiles, positions up to
100000 where the f32 angle's rounding dominates), one shape per kernel on the CPU device
(cpu-pvc; cpu-arc for rope's block-tile kernel), one ISA test (pvc), the UsageErrors; the
torch custom ops' fakes, mutation declarations and opcheck on the CPU build of torch."""
from __future__ import annotations

import numpy as np
import pytest

from conftest_tools import require_dpnp, require_torch
from llm_ref import add_ref, add_rms_norm_ref, rope_ref, silu_mul_ref
from ops_ref import BF16, assert_within
from xetile_dsl import ops
from xetile_dsl.errors import UsageError
from xetile_dsl.ops import configs, torch_ops

RNG = np.random.default_rng(32)
DTYPES = [np.float16, BF16, np.float32]


def _positions(tokens: int) -> np.ndarray:
    """0, 1, 100000 and random ones up to 2^17 (all exact in f32)."""
    fixed = np.array([0, 1, 100000], np.int64)
    return np.concatenate([fixed, RNG.integers(0, 1 << 17, tokens)])[:tokens].astype(np.int32)


def _check_rope(target, tokens, hq, hk, D, style, dtype, theta=10000.0, lead=None, rotary_dim=None):
    shape = (tokens,) if lead is None else lead
    q = (RNG.standard_normal(shape + (hq, D)) * 2).astype(dtype)
    k = (RNG.standard_normal(shape + (hk, D)) * 2).astype(dtype)
    pos = _positions(int(np.prod(shape))).reshape(shape)
    q_ref, k_ref = rope_ref(q, pos, theta, style, rotary_dim), rope_ref(k, pos, theta, style, rotary_dim)
    q2, k2 = ops.rope(q, k, pos, theta, style, rotary_dim, target=target)
    assert q2 is q and k2 is k
    what = f"{target} {style} {np.dtype(dtype)} {q.shape} {k.shape} rotary_dim={rotary_dim}"
    assert_within(q, *q_ref, f"q {what}")
    assert_within(k, *k_ref, f"k {what}")


@pytest.mark.parametrize("style", ["neox", "gptj"])
def test_rope_interpreter_random_shapes(style):
    """Heads 1, 4, 8 and 9 (one block and one past it), D 64 and 128, odd token counts,
    each dtype, 3-D and [batch, seq, heads, D] inputs, another theta."""
    _check_rope("interpret", 5, 9, 1, 64, style, np.float16)
    _check_rope("interpret", 3, 4, 4, 128, style, BF16, theta=500000.0)
    _check_rope("interpret", 7, 8, 1, 128, style, np.float32)
    _check_rope("interpret", 1, 1, 1, 64, style, BF16)
    _check_rope("interpret", None, 4, 1, 64, style, np.float16, lead=(2, 3))


@pytest.mark.parametrize("style", ["neox", "gptj"])
def test_rope_interpreter_partial_rotary_and_other_head_dims(style):
    """A partial rotary dim leaves each head's elements past it as they were: D 80 with
    32 rotated (Phi-2's), D 256 with 64 (GPT-J's); a whole head of 32 and of 256."""
    _check_rope("interpret", 3, 4, 2, 80, style, np.float16, rotary_dim=32)
    _check_rope("interpret", 3, 2, 1, 256, style, BF16, rotary_dim=64)
    _check_rope("interpret", 5, 3, 3, 32, style, np.float32)
    _check_rope("interpret", 2, 2, 1, 256, style, np.float16)


@pytest.mark.parametrize("target,style,D", [("cpu-pvc", "neox", 64), ("cpu-pvc", "gptj", 32), ("cpu-arc", "neox", 64)])
def test_rope_cpu_device(target, style, D):
    """9 query heads (a block of 8 and one more), 3 key heads, 5 tokens, f16; gptj with D 32
    (its OpenCL build grows with the gathers, BH x D/2 lanes each; D 64: the interpreter)."""
    _check_rope(target, 5, 9, 3, D, style, np.float16)


def test_rope_writes_back_non_contiguous_numpy():
    """A strided numpy q (a slice of a fused qkv buffer) is rotated in place too."""
    qkv = RNG.standard_normal((3, 6, 64)).astype(np.float16)
    q, k = qkv[:, :4], qkv[:, 4:]
    pos = np.array([5, 100000, 3], np.int32)
    q_ref, k_ref = rope_ref(q, pos, 10000.0, "neox"), rope_ref(k, pos, 10000.0, "neox")
    ops.rope(q, k, pos, target="interpret")
    assert_within(qkv[:, :4], *q_ref, "strided q")
    assert_within(qkv[:, 4:], *k_ref, "strided k")


def test_rope_dpnp_in_place():
    """Device arrays are rotated on their queue, in place (the kernel test_rope_cpu_device built)."""
    dpnp = require_dpnp()
    q = (RNG.standard_normal((5, 9, 64)) * 2).astype(np.float16)
    k = (RNG.standard_normal((5, 3, 64)) * 2).astype(np.float16)
    pos = _positions(5)
    dq, dk = dpnp.asarray(q), dpnp.asarray(k)
    result = ops.rope(dq, dk, dpnp.asarray(pos), target="cpu-pvc")
    assert result[0] is dq and result[1] is dk
    assert_within(dpnp.asnumpy(dq), *rope_ref(q, pos, 10000.0, "neox"), "dpnp q")
    assert_within(dpnp.asnumpy(dk), *rope_ref(k, pos, 10000.0, "neox"), "dpnp k")


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_silu_mul(target):
    """n = 300 (two chunks, the second partial) over 5 rows, and n = 5 (a padded row)."""
    for n in (300, 5):
        x = (RNG.standard_normal((5, 2 * n)) * 4).astype(np.float16)
        y = ops.silu_mul(x, target=target)
        assert y.shape == (5, n) and y.dtype == np.float16
        assert_within(y, *silu_mul_ref(x, np.float16), f"{target} n={n}")


def test_strided_numpy_out_and_residual_are_written():
    """out= a strided numpy view (silu_mul, add_rms_norm) and a strided residual."""
    x = (RNG.standard_normal((4, 2 * 64)) * 2).astype(np.float16)
    wide = np.zeros((4, 128), np.float16)
    view = wide[:, ::2]
    assert ops.silu_mul(x, out=view, target="interpret") is view
    assert_within(wide[:, ::2], *silu_mul_ref(x, np.float16), "strided out")
    assert not wide[:, 1::2].any()
    r_wide = (RNG.standard_normal((4, 128)) * 2).astype(np.float16)
    r, r0, w = r_wide[:, 1::2], r_wide[:, 1::2].copy(), np.ones(64, np.float32)
    y_wide = np.zeros((4, 128), np.float16)
    y_view = y_wide[:, ::2]
    y, r_new = ops.add_rms_norm(x[:, :64], r, w, out=y_view, target="interpret")
    assert y is y_view and r_new is r
    assert_within(r, *add_ref(x[:, :64], r0), "strided residual")
    assert_within(y_wide[:, ::2], *add_rms_norm_ref(r, w, 1e-6, np.float16, configs.row_tiles("interpret")[1]),
                  "strided y")


@pytest.mark.parametrize("dtype", [BF16, np.float32])
def test_silu_mul_interpreter_dtypes_leading_dims_out(dtype):
    x = (RNG.standard_normal((2, 3, 2 * 77)) * 4).astype(dtype)
    x[0, 0, 0], x[0, 0, 1] = -100.0, 100.0   # exp(-a) overflows; exp(-a) underflows
    out = np.full((2, 3, 77), np.nan, dtype)
    assert ops.silu_mul(x, out=out, target="interpret") is out
    assert_within(out, *silu_mul_ref(x, dtype), f"{np.dtype(dtype)}")


def _check_add_rms_norm(target, shape, dtype, out_is_x=False):
    x = (RNG.standard_normal(shape) * 2).astype(dtype)
    r = (RNG.standard_normal(shape) * 3 + 1).astype(dtype)
    w = RNG.standard_normal(shape[-1]).astype(np.float32)
    x0, r0 = x.copy(), r.copy()
    y, r2 = ops.add_rms_norm(x, r, w, 1e-6, out=x if out_is_x else None, target=target)
    assert r2 is r and (y is x) == out_is_x and y.shape == shape and y.dtype == np.dtype(dtype)
    assert_within(r, *add_ref(x0, r0), f"{target} residual {shape}")
    assert_within(y, *add_rms_norm_ref(r, w, 1e-6, dtype, configs.row_tiles(target)[1]), f"{target} y {shape}")


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_add_rms_norm(target):
    """300 columns over 5 rows (a partial chunk, rows no multiple of the program's), 7
    columns (padded rows: the residual is written back from its padded copy)."""
    _check_add_rms_norm(target, (5, 300), np.float16)
    _check_add_rms_norm(target, (3, 7), np.float16)
    _check_add_rms_norm(target, (5, 300), np.float16, out_is_x=True)   # x read and overwritten by one launch


@pytest.mark.parametrize("dtype", [BF16, np.float32])
def test_add_rms_norm_interpreter_dtypes_out_is_x(dtype):
    """[2, 3, N] inputs; out=x overwrites x with y (vLLM's fully in-place form)."""
    _check_add_rms_norm("interpret", (2, 3, 130), dtype, out_is_x=True)


Q = np.zeros((3, 4, 64), np.float16)
K = np.zeros((3, 2, 64), np.float16)
P = np.arange(3, dtype=np.int32)
X = np.zeros((3, 64), np.float16)
W = np.ones(64, np.float32)
REFUSALS = {
    "rope style": (lambda: ops.rope(Q, K, P, style="llama"), "'neox' .* or 'gptj'"),
    "rope head dim": (lambda: ops.rope(Q[..., :40], K[..., :40], P), "a multiple of 16 up to 512"),
    "rope rotary dim": (lambda: ops.rope(Q, K, P, rotary_dim=48), r"rotary_dim 48 .* one of \(16, 32"),
    "rope rotary dim past the head": (lambda: ops.rope(Q[..., :32], K[..., :32], P, rotary_dim=64),
                                      "at most the head dim"),
    "rope k tokens": (lambda: ops.rope(Q, K[:2], P), "same leading dims"),
    "rope rank": (lambda: ops.rope(Q[0], K[0], P), r"\[tokens, heads, D\]"),
    "rope dtypes": (lambda: ops.rope(Q, K.astype(np.float32), P), "one dtype"),
    "rope positions shape": (lambda: ops.rope(Q, K, P[:2]), r"shape \(3,\)"),
    "rope float positions": (lambda: ops.rope(Q, K, P.astype(np.float32)), "integers"),
    "rope positions past int32": (lambda: ops.rope(Q, K, P.astype(np.int64) << 40), "fit int32"),
    "rope theta": (lambda: ops.rope(Q, K, P, theta=-1.0), "positive finite"),
    "rope not an array": (lambda: ops.rope(Q.tolist(), K, P), "in place"),
    "rope gptj 32-bit offsets": (lambda: ops.rope(np.broadcast_to(Q[:1], (1 << 23, 4, 64)),   # views: no copy
                                                  np.broadcast_to(K[:1], (1 << 23, 2, 64)),
                                                  np.zeros(1 << 23, np.int32), style="gptj"), "2\\^31"),
    "silu_mul odd": (lambda: ops.silu_mul(X[:, :63]), "must be even"),
    "silu_mul int": (lambda: ops.silu_mul(X.astype(np.int32)), "float16, bfloat16, float32"),
    "silu_mul out": (lambda: ops.silu_mul(X, out=np.zeros((3, 64), np.float16)), r"shape \(3, 32\)"),
    "add_rms_norm out": (lambda: ops.add_rms_norm(X, X.copy(), W, out=X[:1]), r"shape \(3, 64\)"),
    "add_rms_norm residual shape": (lambda: ops.add_rms_norm(X, X[:2].copy(), W), "residual must be an array like x"),
    "add_rms_norm residual dtype": (lambda: ops.add_rms_norm(X, X.astype(np.float32), W), "float16 \\(3, 64\\)"),
    "add_rms_norm weight": (lambda: ops.add_rms_norm(X, X.copy(), W[:8]), r"shape \(64,\)"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_llm_rows_refuse_clearly(case):
    call, message = REFUSALS[case]
    with pytest.raises(UsageError, match=message):
        call()


# --- torch.ops.xetile (CPU build of torch: fakes, mutation declarations, graph nodes) -------

def test_torch_ops_fake_and_mutation():
    """The schemas declare rope's q, k and add_rms_norm's residual mutated; the fakes give
    the numpy entry point's shape and dtype (rope: nothing), and a refusal at trace time
    is the op's message (torch.compile keeping custom ops as nodes: test_torch_ops.py)."""
    torch = require_torch()
    xetile = torch_ops.register()
    assert [a.name for a in xetile["rope"]._opoverload._schema.arguments if a.is_write] == ["q", "k"]
    assert [a.name for a in xetile["add_rms_norm"]._opoverload._schema.arguments if a.is_write] == ["residual"]
    from torch._subclasses.fake_tensor import FakeTensorMode  # torch is optional

    with FakeTensorMode():
        q, k = torch.empty(3, 4, 64, dtype=torch.float16, device="xpu"), torch.empty(3, 2, 64, dtype=torch.float16,
                                                                                      device="xpu")
        pos = torch.empty(3, dtype=torch.int64, device="xpu")   # int64, as vLLM's positions
        x = torch.empty(3, 2, 128, dtype=torch.bfloat16, device="xpu")
        w = torch.empty(128, dtype=torch.float32, device="xpu")
        assert torch.ops.xetile.rope(q, k, pos, 10000.0, "gptj") is None
        h = torch.ops.xetile.silu_mul(x)
        y = torch.ops.xetile.add_rms_norm(x, x.clone(), w, 1e-6)
        with pytest.raises(UsageError, match="'neox' .* or 'gptj'"):
            torch.ops.xetile.rope(q, k, pos, 10000.0, "llama")
    assert (tuple(h.shape), h.dtype) == ((3, 2, 64), torch.bfloat16)
    assert (tuple(y.shape), y.dtype, y.device.type) == ((3, 2, 128), torch.bfloat16, "xpu")


@pytest.mark.parametrize("name", ["rope", "silu_mul", "add_rms_norm"])
def test_torch_opcheck_on_meta_tensors(name):
    """torch.library.opcheck (schema incl. the declared mutations, fake, AOT dispatch)."""
    torch = require_torch()
    xetile = torch_ops.register()

    def meta(*shape, dtype=torch.float16):
        return torch.empty(shape, dtype=dtype, device="meta")

    args = {"rope": (meta(3, 4, 64), meta(3, 2, 64), meta(3, dtype=torch.int32)),
            "silu_mul": (meta(3, 128),),
            "add_rms_norm": (meta(3, 64), meta(3, 64), meta(64, dtype=torch.float32))}[name]
    result = torch.library.opcheck(xetile[name]._opoverload, args)
    assert set(result.values()) == {"SUCCESS"}, result


# --- machine code (pvc, Intel's offline compiler) ------------------------------------------

def test_llm_rows_isa_block_messages_no_spill(ocloc_path):
    """On pvc every loop of rope (neox: the head halves of a 3-D slice) and add_rms_norm
    (the weight as a 1-D tile) reads with 2D block messages, with no gather and no spill
    (gptj's gathers are its design; silu_mul's loop is softmax's, test_ops_isa.py)."""
    from xetile_dsl.ops import llm
    from xetile_dsl.ops.matmul import XT_DTYPES
    import xetile_dsl as xd

    f16 = XT_DTYPES["float16"]
    BM, BC = configs.row_tiles("pvc")
    compiled = {
        "rope": (llm.rope_neox_kernel, {"q": "f16[:,:,:]", "k": "f16[:,:,:]", "pos": "i32[:]", "inv_freq": "f32[:]",
                                        "HQ": "i32", "HK": "i32"}, {"OUT": f16, "BH": llm.ROPE_HEADS, "HALF": 64}),
        "add_rms_norm": (llm.add_rms_norm_kernel, {"x": "f16[:,:]", "r": "f16[:,:]", "w": "f32[:]", "y": "f16[:,:]",
                                                    "N": "i32", "eps": "f32"},
                         {"RES": f16, "OUT": f16, "BM": BM, "BC": BC}),
    }
    for name, (kernel, sig, consts) in compiled.items():
        report = xd.compile(kernel, sig, consts, target="pvc").report()
        assert report.spill_bytes == 0, name
        assert report.loops and all(loop.counts.get("load2d", 0) > 0 and loop.counts.get("gather", 0) == 0
                                    for loop in report.loops), (name, [loop.counts for loop in report.loops])
