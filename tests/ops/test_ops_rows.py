"""ops.softmax, ops.layer_norm and ops.rms_norm against f64 numpy with derived bounds
(ops_ref.py) on the CPU device in both flavours and in the interpreter.  One launch per
op and target covers two widths through the same compiled kernel (N is a runtime
scalar): 300 columns (two chunks, the second partial) over 5 rows (no multiple of the
rows per program), and 7 columns (narrower than a 2D block: padded, masked)."""
from __future__ import annotations

import numpy as np
import pytest

from ops_ref import BF16, assert_within, norm_ref, softmax_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError
from xetile_dsl.ops import configs
from conftest_tools import require_dpnp

RNG = np.random.default_rng(141)
X = {n: (RNG.standard_normal((5, n)) * 3 + 1).astype(np.float32) for n in (7, 300)}
W = {n: RNG.standard_normal(n).astype(np.float32) for n in X}
B = {n: RNG.standard_normal(n).astype(np.float32) for n in X}
TARGETS = ["cpu-pvc", "cpu-arc", "interpret"]


def _chunk(target):
    return configs.row_tiles(target)[1]


@pytest.mark.parametrize("target", TARGETS)
def test_softmax(target):
    for n, x32 in X.items():
        x = x32.astype(np.float16)
        y = ops.softmax(x, target=target)
        assert y.dtype == np.float16 and y.shape == x.shape
        ref, bound = softmax_ref(x, np.float16, _chunk(target))
        assert_within(y, ref, bound, f"{target} N={n}")


@pytest.mark.parametrize("target", TARGETS)
def test_layer_norm(target):
    for n, x32 in X.items():
        x = x32.astype(np.float16)
        y = ops.layer_norm(x, W[n], B[n], 1e-5, target=target)
        ref, bound = norm_ref(x, W[n], B[n], 1e-5, np.float16, _chunk(target), rms=False)
        assert_within(y, ref, bound, f"{target} N={n}")


@pytest.mark.parametrize("target", TARGETS)
def test_rms_norm(target):
    for n, x32 in X.items():
        x = x32.astype(np.float16)
        y = ops.rms_norm(x, W[n], 1e-6, target=target)
        ref, bound = norm_ref(x, W[n], None, 1e-6, np.float16, _chunk(target), rms=True)
        assert_within(y, ref, bound, f"{target} N={n}")


@pytest.mark.parametrize("dtype", [np.float32, BF16])
def test_rows_interpreter_dtypes_and_leading_dims(dtype):
    """f32 and bf16 inputs, a [2, 3, N] input (rows = the leading dims flattened)."""
    x = (RNG.standard_normal((2, 3, 300)) * 4).astype(dtype)
    y = ops.softmax(x, target="interpret")
    assert y.shape == x.shape and y.dtype == np.dtype(dtype)
    assert_within(y, *softmax_ref(x, dtype, _chunk("interpret")), "softmax")
    y = ops.layer_norm(x, W[300], B[300], 1e-5, target="interpret")
    assert_within(y, *norm_ref(x, W[300], B[300], 1e-5, dtype, _chunk("interpret"), rms=False), "layer_norm")


def test_layer_norm_large_mean_two_pass():
    """Mean 1000, spread 1 (f32): a one-pass E[x^2] - E[x]^2 variance would lose about
    1e6 * 2^-24 * N of it; the two-pass kernel stays within the bound."""
    x = (1000 + RNG.standard_normal((3, 300))).astype(np.float32)
    y = ops.layer_norm(x, W[300], B[300], 1e-5, target="interpret")
    assert_within(y, *norm_ref(x, W[300], B[300], 1e-5, np.float32, _chunk("interpret"), rms=False), "mean 1000")


def test_softmax_out_is_written():
    x = X[300].astype(np.float16)
    out = np.full(x.shape, np.nan, np.float16)
    assert ops.softmax(x, out=out, target="interpret") is out
    assert_within(out, *softmax_ref(x, np.float16, _chunk("interpret")), "out=")


@pytest.mark.parametrize("call,message", [
    (lambda: ops.softmax(X[7], dim=0), "last dimension"),
    (lambda: ops.softmax(X[7].astype(np.int32)), "float16, bfloat16, float32"),
    (lambda: ops.layer_norm(X[7], W[300], B[7]), r"shape \(7,\)"),
    (lambda: ops.rms_norm(X[7], W[7].astype(np.int8)), "float array"),
    (lambda: ops.softmax(np.zeros((0, 8), np.float32)), "empty"),
    (lambda: ops.softmax(X[7], out=np.zeros((5, 7), np.float16)), "dtype float32"),
])
def test_rows_refuse_clearly(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def test_rows_device_narrow_padded_on_the_queue():
    """7 f32 columns (28-byte rows): x and the result are padded into zeroed dpnp arrays
    on x's queue; the padding is masked, so the softmax is over the 7 true columns."""
    dpnp = require_dpnp()
    y = ops.softmax(dpnp.asarray(X[7]), target="cpu-pvc")
    assert isinstance(y, dpnp.ndarray) and y.shape == X[7].shape
    assert_within(dpnp.asnumpy(y), *softmax_ref(X[7], np.float32, _chunk("cpu-pvc")), "dpnp narrow softmax")


@pytest.mark.parametrize("target", ["cpu-pvc", "interpret"])
def test_rows_16k_columns(target):
    """16K-column rows (64 chunks of the online softmax and of each norm pass; the
    kernels test_softmax and test_rms_norm compiled)."""
    x = (RNG.standard_normal((2, 16384)) * 3).astype(np.float16)
    w = RNG.standard_normal(16384).astype(np.float32)
    assert_within(ops.softmax(x, target=target), *softmax_ref(x, np.float16, _chunk(target)), "softmax 16K")
    assert_within(ops.rms_norm(x, w, 1e-6, target=target),
                  *norm_ref(x, w, None, 1e-6, np.float16, _chunk(target), rms=True), "rms_norm 16K")
