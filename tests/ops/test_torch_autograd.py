"""Autograd through ``torch.ops.xetile.matmul`` (ops/autograd.py) on CPU tensors:
``loss.backward()`` against torch autograd in float64 with the derived bounds of
matmul_backward_ref.py, in the interpreter (every activation, bias, transposes, an f32
output) and on the CPU device (default target: cpu-pvc); only the inputs that require a
gradient get one; ``torch.compile(fullgraph=True)`` keeps one node per op in the forward
graph and one ``matmul_backward`` node per op in the backward graph (AOT autograd), and
gives the eager gradients."""
from __future__ import annotations

import numpy as np
import pytest

from conftest_tools import require_torch
from matmul_backward_ref import matmul_backward_ref
from ops_ref import BF16, assert_within
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
