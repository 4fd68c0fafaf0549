"""Autograd through ``torch.ops.xetile.*`` (ops/autograd.py) on CPU tensors:
``loss.backward()`` against torch autograd in float64 with the derived bounds of the
backward ops' own tests (matmul_backward_ref.py, test_ops_rows_backward.py,
test_ops_attention_backward.py), in the interpreter (random shapes, no multiple of the
tiles) and on the CPU device for one case per op (the shapes and dtypes those tests
compile, so a full run builds each kernel once); only the inputs that require a gradient
get one; ``torch.compile(fullgraph=True)`` keeps one node per op in the forward graph and
one backward node per op in the backward graph (AOT autograd), and gives the eager
gradients."""
from __future__ import annotations

import numpy as np
import pytest

from conftest_tools import require_torch
from matmul_backward_ref import matmul_backward_ref
from ops_ref import BF16, U, assert_within, attention_ref
from test_ops_attention_backward import _backward_bounds, _lse_bound, _torch_reference
from test_ops_rows_backward import _cross_entropy_ref, _norm_backward_ref, _softmax_backward_ref
from xetile_dsl.ops import torch_ops


@pytest.fixture(scope="module")
def torch():
    torch = require_torch()
    torch_ops.register()
    return torch


def _tensor(torch, array):
    """A CPU tensor of the numpy array's values (bf16 through its bits), requiring grad."""
    t = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16) if array.dtype == BF16 else \
        torch.from_numpy(array)
    return t.clone().requires_grad_()


def _numpy(torch, t):
    t = t.detach()
    return t.view(torch.int16).numpy().view(BF16) if t.dtype == torch.bfloat16 else t.numpy()


def _backward_case(torch, rng, M, K, N, dtype, trans_a, trans_b, activation, out_dtype=None, target="interpret"):
    """loss = sum(c * w) for c = xetile.matmul(...), so that dc = w (a random, known
    upstream gradient in c's dtype); the gradients checked against the f64 reference."""
    a = rng.standard_normal((K, M) if trans_a else (M, K)).astype(dtype)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(dtype)
    bias = rng.standard_normal(N).astype(np.float32)
    ta, tb, tbias = (_tensor(torch, x) for x in (a, b, bias))
    c = torch.ops.xetile.matmul(ta, tb, trans_a=trans_a, trans_b=trans_b, bias=tbias, activation=activation,
                                out_dtype=out_dtype, target=target)
    w = torch.randn(c.shape, generator=torch.Generator().manual_seed(int(rng.integers(1 << 30)))).to(c.dtype)
    (c * w).sum().backward()
    refs = matmul_backward_ref(torch, a, b, _numpy(torch, w), trans_a, trans_b, bias, activation)
    for name, t, ref in zip(("a", "b", "bias"), (ta, tb, tbias), refs):
        assert t.grad is not None and t.grad.dtype == t.dtype and t.grad.shape == t.shape, name
        assert_within(_numpy(torch, t.grad), *ref, f"{target} {activation} ta={trans_a} tb={trans_b} d{name}")


@pytest.mark.parametrize("activation, trans_a, trans_b, dtype, out_dtype", [
    (None, False, False, np.float16, None),
    ("relu", True, False, np.float16, "float32"),     # f32 dc: cast into the f16 recompute's epilogue
    ("gelu", False, True, BF16, None),
    ("gelu_tanh", True, True, np.float16, None),
    ("silu", False, True, np.float16, "float32"),
])
def test_loss_backward_in_the_interpreter(torch, activation, trans_a, trans_b, dtype, out_dtype):
    rng = np.random.default_rng(hash((activation, trans_a, trans_b)) % 2**32)
    _backward_case(torch, rng, 37, 53, 29, dtype, trans_a, trans_b, activation,
                   None if out_dtype is None else getattr(torch, out_dtype))


def test_loss_backward_on_the_cpu_device(torch):
    """The default target (the CPU device here: cpu-pvc); the forward's kernel is
    test_ops_matmul's, the backward's test_ops_matmul_backward's (same dtypes and flags:
    compiled once)."""
    _backward_case(torch, np.random.default_rng(7), 37, 53, 29, np.float16, False, True, "relu", target=None)


def test_only_inputs_requiring_grad_get_one(torch):
    """A frozen weight: only x gets a gradient (the backward op is asked for dA alone), and
    it matches the full case's."""
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((9, 33)).astype(np.float16), rng.standard_normal((33, 12)).astype(np.float16)
    tx, tw = _tensor(torch, x), torch.from_numpy(w)
    torch.ops.xetile.matmul(tx, tw, activation="silu", target="interpret").float().sum().backward()
    full_x, full_w = _tensor(torch, x), _tensor(torch, w)
    torch.ops.xetile.matmul(full_x, full_w, activation="silu", target="interpret").float().sum().backward()
    assert tw.grad is None and torch.equal(tx.grad, full_x.grad)


def test_torch_compile_keeps_one_node_per_op_forward_and_backward(torch):
    """A two-layer MLP under torch.compile(fullgraph=True) with AOT autograd: the forward
    graph holds the two xetile.matmul nodes, the backward graph two matmul_backward nodes
    (never their insides), and the compiled gradients are the eager ones, bit for bit
    (the same kernels run)."""
    from functorch.compile import make_boxed_func  # torch is optional
    from torch._dynamo.backends.common import aot_autograd

    graphs = {}

    def keep(kind):
        def compiler(gm, example_inputs):
            graphs[kind] = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
            return make_boxed_func(gm.forward)
        return compiler

    def mlp(x, w1, b1, w2):
        h = torch.ops.xetile.matmul(x, w1, trans_b=True, bias=b1, activation="gelu", target="interpret")
        return torch.ops.xetile.matmul(h, w2, out_dtype=torch.float32, target="interpret").square().mean()

    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float16) for s in ((16, 32), (24, 32), (24,), (24, 8))]
    grads = []
    for backend in (None, aot_autograd(fw_compiler=keep("forward"), bw_compiler=keep("backward"))):
        leaves = [_tensor(torch, x) for x in arrays]
        fn = mlp if backend is None else torch.compile(mlp, fullgraph=True, backend=backend)
        fn(*leaves).backward()
        grads.append([t.grad for t in leaves])
    xetile = {kind: [t for t in targets if t.startswith("xetile.")] for kind, targets in graphs.items()}
    assert xetile == {"forward": ["xetile.matmul.default"] * 2, "backward": ["xetile.matmul_backward.default"] * 2}
    for compiled in grads[1:]:
        assert all(torch.equal(g, e) for g, e in zip(compiled, grads[0], strict=True))


# --- the row ops, attention and cross entropy ------------------------------------------------

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def _upstream(torch, rng, y):
    """A random upstream gradient w in y's dtype: (y * w).sum().backward() hands w to y's
    backward exactly (the sum's gradient is 1, times w)."""
    return torch.from_numpy(rng.standard_normal(tuple(y.shape)).astype(np.float32)).to(y.dtype)


@pytest.mark.parametrize("log, shape, dtype, target", [
    (log, shape, dtype, "interpret") for log in (False, True)
    for shape, dtype in (((5, 37), F16), ((2, 3, 29), F32), ((13, 300), BF16))
] + [(False, (5, 300), F16, None)])
def test_softmax_gradients(torch, log, shape, dtype, target):
    """The gradient of softmax / log_softmax from the saved output y, against torch's
    backward formula on that y in f64 (the bound of test_ops_rows_backward: the forward's
    own error is that op's test's).  The CPU device (default target): softmax only
    (log_softmax is one more kernel pair; the interpreter covers it)."""
    rng = np.random.default_rng(hash((log, shape)) % 2**32)
    x = (rng.standard_normal(shape) * 3 + 0.5).astype(dtype)
    tx = _tensor(torch, x)
    y = (torch.ops.xetile.log_softmax if log else torch.ops.xetile.softmax)(tx, target=target)
    w = _upstream(torch, rng, y)
    (y * w).sum().backward()
    n = shape[-1]
    ref, bound = _softmax_backward_ref(_numpy(torch, y).reshape(-1, n), _numpy(torch, w).reshape(-1, n),
                                       target or "cpu-pvc", log)
    assert tx.grad.dtype == tx.dtype and tx.grad.shape == tx.shape
    assert_within(_numpy(torch, tx.grad).reshape(-1, n), ref, bound, f"{'log_' if log else ''}softmax {target}")


@pytest.mark.parametrize("rms, shape, dtype, wdtype, target", [
    (rms, shape, dtype, wdtype, "interpret") for rms in (False, True)
    for shape, dtype, wdtype in (((5, 37), F16, F32), ((2, 3, 40), F32, F32), ((13, 300), BF16, BF16))
] + [(False, (7, 300), F16, F32, None)])
def test_norm_gradients(torch, rms, shape, dtype, wdtype, target):
    """dx, dweight (and dbias) through the op's saved mean and rstd against torch autograd
    of F.layer_norm / F.rms_norm in f64 (test_ops_rows_backward's bounds: they include the
    statistics' errors).  The CPU device: layer_norm (rms_norm is a constexpr branch of
    the same kernels; one compile less)."""
    rng = np.random.default_rng(hash((rms, shape)) % 2**32)
    n = shape[-1]
    x = (rng.standard_normal(shape) * 3 + 0.5).astype(dtype)
    w, b = (rng.standard_normal(n) + 1).astype(wdtype), rng.standard_normal(n).astype(wdtype)
    tx, tw, tb = _tensor(torch, x), _tensor(torch, w), _tensor(torch, b)
    eps = 1e-5
    y = (torch.ops.xetile.rms_norm(tx, tw, eps, target=target) if rms else
         torch.ops.xetile.layer_norm(tx, tw, tb, eps, target=target))
    dy = _upstream(torch, rng, y)
    (y * dy).sum().backward()
    grads, bounds, _ = _norm_backward_ref(x.reshape(-1, n), w, b, _numpy(torch, dy).reshape(-1, n), eps,
                                          target or "cpu-pvc", rms, wdtype)
    leaves = (tx, tw) if rms else (tx, tw, tb)
    assert tb.grad is None if rms else tb.grad is not None
    for name, t, ref, bound in zip(("dx", "dweight", "dbias")[:len(leaves)], leaves, grads, bounds, strict=True):
        assert t.grad.dtype == t.dtype and t.grad.shape == t.shape, name
        assert_within(_numpy(torch, t.grad).reshape(ref.shape), ref, bound, f"{'rms' if rms else 'layer'}_norm {name}")


@pytest.mark.parametrize("z, h, hkv, n, causal, dtype, target", [
    (1, 2, 2, 37, False, F16, "interpret"),
    (1, 4, 2, 29, True, BF16, "interpret"),
    (2, 2, 1, 21, False, F16, "interpret"),
    (1, 2, 1, 40, True, F16, None),     # test_ops_attention_backward's CPU-device case
    (1, 1, 1, 21, True, F16, "cpu-arc"),  # ARC's rows form: test_ops_attention_backward's cpu-arc kernels
])
def test_attention_gradients(torch, z, h, hkv, n, causal, dtype, target):
    """dq, dk, dv (grouped-query heads: dk, dv summed over each key/value head's query
    heads) through the forward's saved o and lse against torch autograd of
    scaled_dot_product_attention in f64, with test_ops_attention_backward's bounds (the
    forward's o within attention_ref's bound, lse within _lse_bound)."""
    rng = np.random.default_rng(hash((z, h, hkv, n, causal)) % 2**32)
    q = rng.standard_normal((z, h, n, 64)).astype(dtype)
    k, v = (rng.standard_normal((z, hkv, n, 64)).astype(dtype) for _ in range(2))
    tq, tk, tv = (_tensor(torch, a) for a in (q, k, v))
    o = torch.ops.xetile.attention(tq, tk, tv, causal=causal, target=target)
    do = _upstream(torch, rng, o)
    (o * do).sum().backward()
    ref = _torch_reference(q, k, v, _numpy(torch, do), causal)
    g = h // hkv
    _, o_bound = attention_ref(q, np.repeat(k, g, 1), np.repeat(v, g, 1), causal)
    bounds, (u_in, f_in) = _backward_bounds(q, k, v, _numpy(torch, do), o_bound,
                                            _lse_bound(ref, q, np.repeat(k, g, 1)), ref)
    for name, t, want, bound in zip(("dq", "dk", "dv"), (tq, tk, tv), ref[1:4], bounds):
        assert t.grad.dtype == t.dtype and t.grad.shape == t.shape, name
        assert_within(_numpy(torch, t.grad), want, bound + u_in * np.abs(want) + f_in,
                      f"attention {target} {name} H={h}/{hkv} causal={causal}")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape, dtype, target", [((2, 3, 37), F32, "interpret"), ((13, 300), BF16, "interpret"),
                                                   ((5, 300), F16, None)])
def test_cross_entropy_gradients(torch, reduction, shape, dtype, target):
    """dlogits of each reduction (ignore_index rows: 0) against torch autograd of
    F.cross_entropy in f64 with test_ops_rows_backward's bound for the per-row gradient
    the reduction hands down (mean: fl(1 / kept), one more relative rounding u |d|); the
    loss within the rows' bounds summed (and the f32 sum's rows u |loss|)."""
    rng = np.random.default_rng(hash((reduction, shape)) % 2**32)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    t = rng.integers(0, shape[-1], shape[:-1]).astype(np.int64)
    t.reshape(-1)[1] = -100
    tx = _tensor(torch, x)
    loss = torch.ops.xetile.cross_entropy(tx, torch.from_numpy(t), reduction, target=target)
    assert loss.dtype == torch.float32 and tuple(loss.shape) == (shape[:-1] if reduction == "none" else ())
    rows = t.size
    kept = int((t != -100).sum())
    if reduction == "none":
        w = _upstream(torch, rng, loss)
        (loss * w).sum().backward()
        dloss = _numpy(torch, w).reshape(rows)
    else:
        loss.backward()
        dloss = np.full(rows, np.float32(1) / np.float32(kept) if reduction == "mean" else 1, np.float32)
    (l64, e_l), _, (d64, e_d) = _cross_entropy_ref(x.reshape(rows, -1), t.reshape(rows), dloss, target or "cpu-pvc")
    got = loss.detach().numpy()
    if reduction == "none":
        assert_within(got.reshape(rows), l64, e_l, "loss rows")
    else:
        scale = 1 / kept if reduction == "mean" else 1
        want = l64.sum() * scale
        assert abs(float(got) - want) <= (e_l.sum() + (rows + 2) * U * np.abs(l64).sum()) * scale, reduction
    slack = U * np.abs(d64) if reduction == "mean" else 0.0
    assert tx.grad.dtype == tx.dtype and tx.grad.shape == tx.shape
    assert_within(_numpy(torch, tx.grad).reshape(rows, -1), d64, e_d + slack, f"cross_entropy {reduction} {target}")


def test_gradients_flow_only_where_asked_and_stats_have_none(torch):
    """layer_norm with a frozen weight and bias: x alone gets a gradient; the statistics of
    the with-stats op are marked non-differentiable (using them in a loss gives no
    gradient through them)."""
    x = np.random.default_rng(1).standard_normal((4, 33)).astype(np.float32)
    tx, w, b = _tensor(torch, x), torch.ones(33), torch.zeros(33)
    y, mean, rstd = torch.ops.xetile.layer_norm_with_stats(tx, w, b, 1e-5, target="interpret")
    assert not mean.requires_grad and not rstd.requires_grad
    y.sum().backward()
    assert w.grad is None and b.grad is None and tx.grad.shape == tx.shape


def test_torch_compile_keeps_one_node_per_op_for_every_rule(torch):
    """A chain through every op with a rule under torch.compile(fullgraph=True) and AOT
    autograd: the forward graph holds one node per op (the composites as the ops they
    call: layer_norm_with_stats, attention_lse, cross_entropy_forward), the backward graph
    one backward op per op, in reverse; the compiled gradients are the eager ones."""
    from functorch.compile import make_boxed_func  # torch is optional
    from torch._dynamo.backends.common import aot_autograd

    graphs = {}

    def keep(kind):
        def compiler(gm, example_inputs):
            graphs[kind] = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
            return make_boxed_func(gm.forward)
        return compiler

    def chain(x, w, b, w2, targets):
        t = "interpret"
        h = torch.ops.xetile.layer_norm(x, w, b, target=t)
        h = torch.ops.xetile.rms_norm(h, w2, target=t)
        h = torch.ops.xetile.log_softmax(torch.ops.xetile.softmax(h, target=t), target=t)
        q = h.reshape(1, 1, 16, 64)
        o = torch.ops.xetile.attention(q, q, q, causal=True, target=t)
        return torch.ops.xetile.cross_entropy(o.reshape(16, 64), targets, target=t)

    rng = np.random.default_rng(11)
    arrays = [rng.standard_normal((16, 64)).astype(np.float16), *(rng.standard_normal(64).astype(np.float32)
                                                                  for _ in range(3))]
    targets = torch.from_numpy(rng.integers(0, 64, 16))
    grads = []
    for backend in (None, aot_autograd(fw_compiler=keep("forward"), bw_compiler=keep("backward"))):
        leaves = [_tensor(torch, a) for a in arrays]
        fn = chain if backend is None else torch.compile(chain, fullgraph=True, backend=backend)
        fn(*leaves, targets).backward()
        grads.append([t.grad for t in leaves])
    xetile = {kind: [t.split(".")[1] for t in targets if t.startswith("xetile.")] for kind, targets in graphs.items()}
    forward = ["layer_norm_with_stats", "rms_norm_with_stats", "softmax", "log_softmax", "attention_lse",
               "cross_entropy_forward"]
    assert xetile == {"forward": forward, "backward": [
        "cross_entropy_backward", "attention_backward", "log_softmax_backward", "softmax_backward",
        "rms_norm_backward", "layer_norm_backward"]}
    assert all(torch.equal(g, e) for g, e in zip(grads[1], grads[0], strict=True))
