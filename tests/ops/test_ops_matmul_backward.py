"""ops.matmul_backward against torch autograd in float64 (matmul_backward_ref.py: the
bounds derived from the kernels' arithmetic), at shapes that are no tile multiples
(37 x 53 x 29: edges in M, N and K; N = 3: rows narrower than a 2D block, padded), every
activation, with and without bias, every transpose combination.  The interpreter covers the
matrix; the CPU device (cpu-pvc) runs one case with numpy and the same with dpnp arrays
(one set of kernel compiles)."""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from conftest_tools import require_dpnp, require_torch
from matmul_backward_ref import matmul_backward_ref
from ops_ref import BF16, assert_within
from xetile_dsl import ops
from xetile_dsl.errors import UsageError

ACTIVATIONS = (None, "relu", "gelu", "gelu_tanh", "silu")
TRANSPOSES = list(itertools.product((False, True), repeat=2))


@pytest.fixture(scope="module")
def torch():
    return require_torch()


def _operands(rng, M, K, N, dtype, trans_a, trans_b, bias: bool, dc_dtype=np.float32):
    a = rng.standard_normal((K, M) if trans_a else (M, K)).astype(dtype)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(dtype)
    dc = rng.standard_normal((M, N)).astype(dc_dtype)
    return a, b, dc, rng.standard_normal(N).astype(np.float32) if bias else None


def _check(torch, a, b, dc, bias, trans_a, trans_b, activation, target, what):
    got = ops.matmul_backward(a, b, dc, trans_a=trans_a, trans_b=trans_b, bias=bias, activation=activation,
                              target=target)
    refs = matmul_backward_ref(torch, a, b, dc, trans_a, trans_b, bias, activation)
    for name, g, like, ref in zip(("da", "db", "dbias"), got, (a, b, bias), refs):
        if like is None:
            assert g is None and ref is None
            continue
        g = np.asarray(g)
        assert g.shape == like.shape and g.dtype == like.dtype, (name, g.shape, g.dtype)
        assert_within(g, *ref, f"{what} {name}")


#: every activation under two transpose pairs that differ in both flags, rotating, so each
#: pair meets several activations; a bias where the flags agree (each activation: with and without)
F16_CASES = [(act, *pair) for i, act in enumerate(ACTIVATIONS) for pair in (TRANSPOSES[i % 4], TRANSPOSES[(i + 2) % 4])]


@pytest.mark.parametrize("activation, trans_a, trans_b", F16_CASES)
def test_matmul_backward_in_the_interpreter_f16(torch, activation, trans_a, trans_b):
    rng = np.random.default_rng(ACTIVATIONS.index(activation) * 4 + 2 * trans_a + trans_b)
    bias = trans_a == trans_b
    a, b, dc, bias_v = _operands(rng, 37, 53, 29, np.float16, trans_a, trans_b, bias)
    _check(torch, a, b, dc, bias_v, trans_a, trans_b, activation, "interpret",
           f"f16 37x53x29 act={activation} ta={trans_a} tb={trans_b} bias={bias}")


@pytest.mark.parametrize("shape, trans_a, trans_b, activation, dc_dtype", [
    ((5, 70, 3), False, True, "silu", BF16),       # N = 3: narrow rows, padded; dc already bf16
    ((1, 40, 33), True, False, "gelu", np.float32),  # M = 1: a GEMV forward
    ((64, 32, 16), False, False, None, np.float32),  # whole tiles; dc cast to bf16
    ((20, 17, 48), True, True, "relu", np.float16),
])
def test_matmul_backward_in_the_interpreter_bf16(torch, shape, trans_a, trans_b, activation, dc_dtype):
    rng = np.random.default_rng(sum(shape))
    a, b, dc, bias = _operands(rng, *shape, BF16, trans_a, trans_b, True, dc_dtype)
    _check(torch, a, b, dc, bias, trans_a, trans_b, activation, "interpret",
           f"bf16 {shape} act={activation} ta={trans_a} tb={trans_b}")


def test_matmul_backward_on_the_cpu_device(torch):
    """One compile set on cpu-pvc: the recompute kernel, the dA and dB products (B read
    as stored [N, K], dZ^T through a transposed tile) and the bias GEMV; relu with an f16
    dc is what test_torch_autograd runs there too (the derivatives' arithmetic is the
    interpreter's, tested above for every activation)."""
    rng = np.random.default_rng(28)
    a, b, dc, bias = _operands(rng, 37, 53, 29, np.float16, False, True, True, np.float16)
    _check(torch, a, b, dc, bias, False, True, "relu", "cpu-pvc", "cpu-pvc f16 relu tb")


def test_matmul_backward_dpnp_arrays(torch):
    """The case above with a, b, dc and bias as dpnp arrays on the CPU device (the same
    kernels: no new compile): da, db, dbias come back as dpnp arrays of the inputs'
    shapes and dtypes, within the same bounds."""
    dpnp = require_dpnp()
    rng = np.random.default_rng(28)
    host = _operands(rng, 37, 53, 29, np.float16, False, True, True, np.float16)
    got = ops.matmul_backward(*(dpnp.asarray(x) for x in host[:3]), trans_b=True, bias=dpnp.asarray(host[3]),
                              activation="relu", target="cpu-pvc")
    refs = matmul_backward_ref(torch, *host[:3], False, True, host[3], "relu")
    for name, g, like, ref in zip(("da", "db", "dbias"), got, (host[0], host[1], host[3]), refs):
        assert isinstance(g, dpnp.ndarray), (name, type(g))
        g = dpnp.asnumpy(g)
        assert g.shape == like.shape and g.dtype == like.dtype, (name, g.shape, g.dtype)
        assert_within(g, *ref, f"cpu-pvc dpnp {name}")


@pytest.mark.parametrize("args, kwargs, message", [
    ((np.ones((4, 64), np.int8), np.ones((64, 8), np.int8), np.ones((4, 8), np.float32)), {},
     r"int8 inputs have no gradients here; use float16, bfloat16 or float32"),
    ((np.ones((4, 64), ml_dtypes.float8_e4m3fn), np.ones((64, 8), ml_dtypes.float8_e4m3fn),
      np.ones((4, 8), np.float32)), {}, r"float8_e4m3fn inputs have no gradients here"),
    ((np.ones((4, 64), np.float16), np.ones((64, 8), np.float16), np.ones((8, 4), np.float32)), {},
     r"dc must be a float array of the result's shape \(4, 8\), got shape \(8, 4\)"),
    ((np.ones((4, 64), np.float16), np.ones((64, 8), np.float16), np.ones((4, 8), np.int32)), {},
     r"dc must be a float array .* dtype int32"),
    ((np.ones((4, 64), np.float16), np.ones((64, 8), np.float16), np.ones((4, 8), np.float32)),
     {"activation": "tanh"}, r"activation 'tanh'; expected one of None, 'relu', 'gelu', 'gelu_tanh', 'silu'"),
])
def test_matmul_backward_refusals(args, kwargs, message):
    """Checked before anything runs, so the same in every flavour."""
    with pytest.raises(UsageError, match=message):
        ops.matmul_backward(*args, target="interpret", **kwargs)


@pytest.mark.parametrize("needs_da, needs_db", [(False, True), (True, False)])
def test_a_gradient_not_needed_is_not_computed(needs_da, needs_db):
    """None in its place; the other gradients are the full call's, bit for bit."""
    rng = np.random.default_rng(11)
    a, b, dc, bias = _operands(rng, 9, 33, 20, np.float16, True, False, True)
    full = ops.matmul_backward(a, b, dc, trans_a=True, bias=bias, activation="silu", target="interpret")
    part = ops.matmul_backward(a, b, dc, trans_a=True, bias=bias, activation="silu", needs_da=needs_da,
                               needs_db=needs_db, target="interpret")
    for wanted, p, f in zip((needs_da, needs_db, True), part, full):
        assert (p is None) if not wanted else np.array_equal(p, f)
