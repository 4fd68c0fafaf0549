"""The row ops' backward passes (ops/rows_backward.py), log_softmax and the norms'
``return_stats`` against torch autograd in float64, with per-element bounds derived from
the kernels' f32 arithmetic (below).  Breadth (shapes that are no multiple of the tiles:
odd rows, N = 1, 37, 1000; f16, bf16, f32) runs in the interpreter; the CPU device runs
one shape per kernel in the pvc flavour and the norm backward in the arc flavour (its
OpenCL compile is most of the cost, and N and the rows are runtime values, so one
compiled kernel serves every width).

Notation as ops_ref.py: u = 2^-24; OpenCL's exp and log are <= 3 ulp (6u relative),
rsqrt 2 ulp; a sum of n terms in f32 in C chunks is within (n + C + 1) u sum|terms|; each
result rounds once to its dtype (OUT_ROUNDING: 2^-11 relative for f16, 2^-8 bf16, u f32)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ops_ref import BF16, OUT_ROUNDING, U, assert_within
from xetile_dsl import ops
from xetile_dsl.errors import UsageError
from xetile_dsl.ops import configs
from xetile_dsl.ops import rows_backward

RNG = np.random.default_rng(29)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
#: (rows, N, dtype) for the interpreter: odd rows, one column, 37 and 1000 columns (four
#: chunks of 256, the last partial), each dtype
SHAPES = [(5, 37, F16), (3, 1, F32), (13, 1000, BF16), (6, 37, F32)]


def _f64(a):
    return torch.from_numpy(np.asarray(a, np.float64))


def _data(rows, n, dtype, scale=3.0):
    x = (RNG.standard_normal((rows, n)) * scale + 0.5).astype(dtype)
    dy = RNG.standard_normal((rows, n)).astype(dtype)
    return x, dy


def _chunks(n, target):
    return -(-n // configs.row_tiles(target)[1])


def _round(value, bound, dtype):
    rel, floor = OUT_ROUNDING[np.dtype(dtype)]
    return bound * (1 + rel) + rel * np.abs(value) + floor


# --- softmax and log_softmax -----------------------------------------------------------------

def _softmax_backward_ref(y, dy, target, log):
    """(dx from torch's backward formula applied to the saved y, in f64; bound).
    softmax: s = sum(dy y) within (N + C + 1) u sum|dy y|; d = y (dy - s) adds two
    roundings (u |dy - s| |y| and u |d|).  log_softmax: s = sum(dy) within (N + C + 1) u
    sum|dy|; e = exp(y) 6u; d = dy - e s: |dd| <= e |ds| + 7u e |s| + u |d|."""
    y64, dy64 = np.asarray(y, np.float64), np.asarray(dy, np.float64)
    n = y64.shape[-1]
    k = (n + _chunks(n, target) + 1) * U
    if log:
        dx = torch.ops.aten._log_softmax_backward_data(_f64(dy), _f64(y), -1, torch.float64).numpy()
        e, s = np.exp(y64), dy64.sum(-1, keepdims=True)
        bound = e * k * np.abs(dy64).sum(-1, keepdims=True) + 7 * U * e * np.abs(s) + U * np.abs(dx)
    else:
        dx = torch.ops.aten._softmax_backward_data(_f64(dy), _f64(y), -1, torch.float64).numpy()
        s = (dy64 * y64).sum(-1, keepdims=True)
        bound = np.abs(y64) * (k * np.abs(dy64 * y64).sum(-1, keepdims=True) + U * np.abs(dy64 - s)) + U * np.abs(dx)
    return dx, _round(dx, bound, y.dtype)


def _log_softmax_ref(x, target):
    """log_softmax = x - (m + log s): s within delta_s relative (softmax_ref's sum: each exp
    6u + u R, R the row's range, N + C additions, C rescales of 8u + u R), so log s within
    delta_s + 6u |log s| absolutely; the two subtractions round (u |m + log s|, u |y|)."""
    x64 = np.asarray(x, np.float64)
    y = torch.log_softmax(_f64(x), -1).numpy()
    n, c = x64.shape[-1], _chunks(x64.shape[-1], target)
    m = x64.max(-1, keepdims=True)
    r = m - x64.min(-1, keepdims=True)
    log_s = np.log(np.exp(x64 - m).sum(-1, keepdims=True))
    delta_s = U * r + 6 * U + (n + c) * U + c * (8 * U + U * r)
    bound = delta_s + 6 * U * log_s + U * np.abs(m + log_s) + U * np.abs(y)
    return y, _round(y, bound, x.dtype)


def _check_softmaxes(rows, n, dtype, target, log=True):
    x, dy = _data(rows, n, dtype)
    y = ops.softmax(x, target="interpret")
    dx = ops.softmax_backward(y, dy, target=target)
    assert dx.dtype == dtype and dx.shape == x.shape
    assert_within(dx, *_softmax_backward_ref(y, dy, target, log=False), f"softmax_backward {target} {x.shape}")
    if not log:
        return
    ly = ops.log_softmax(x, target=target)
    assert ly.dtype == dtype
    assert_within(ly, *_log_softmax_ref(x, target), f"log_softmax {target} {x.shape}")
    ldx = ops.log_softmax_backward(ly, dy, target=target)
    assert_within(ldx, *_softmax_backward_ref(ly, dy, target, log=True), f"log_softmax_backward {target} {x.shape}")


@pytest.mark.parametrize("rows,n,dtype", SHAPES)
def test_softmax_backward_interpreter(rows, n, dtype):
    _check_softmaxes(rows, n, dtype, "interpret")


def test_softmax_backward_cpu_device():
    """softmax_backward alone (log_softmax's kernel and the backward's LOG branch run in the
    interpreter above; their compile would double this test's time)."""
    _check_softmaxes(5, 300, F16, "cpu-pvc", log=False)


def test_softmax_backward_matches_autograd_of_the_forward():
    """End to end: the op's forward and backward in f32 against torch autograd of softmax
    of the same x (the saved y's own error, 2^-22 relative here, enters the product
    y (dy - s) at most linearly: a 2^-18 relative slack on the magnitudes covers it)."""
    x, dy = _data(3, 1000, F32)
    xt_ = _f64(x).requires_grad_()
    torch.softmax(xt_, -1).backward(_f64(dy))
    dx = ops.softmax_backward(ops.softmax(x, target="interpret"), dy, target="interpret")
    y64 = torch.softmax(_f64(x), -1).numpy()
    scale = np.abs(y64) * (np.abs(dy) + np.abs(y64 * dy).sum(-1, keepdims=True))
    assert_within(dx, xt_.grad.numpy(), 2.0 ** -18 * scale + 2.0 ** -149, "softmax autograd")


# --- layer norm and RMS norm ---------------------------------------------------------------

def _stat_errors(x64, eps, chunk, rms):
    """(mean, |dmean|, rstd, relative rstd error) of the forward kernel's f32 statistics
    (ops_ref.norm_ref's derivation)."""
    n = x64.shape[-1]
    c = -(-n // chunk)
    mean = np.zeros((x64.shape[0], 1)) if rms else x64.mean(-1, keepdims=True)
    dmean = 0.0 * mean if rms else (n + c + 1) * U * np.abs(x64).mean(-1, keepdims=True)
    d = x64 - mean
    dd = dmean + U * np.abs(d)
    var = (d * d).mean(-1, keepdims=True)
    dvar = (n + c + 3) * U * var + 2 * (np.abs(d) * dd).mean(-1, keepdims=True) + (dd * dd).max(-1, keepdims=True)
    return mean, dmean, 1 / np.sqrt(var + eps), (dvar / (var + eps) + U) / 2 + 4 * U


def _norm_backward_ref(x, w, b, dy, eps, target, rms, grad_dtype):
    """((dx, dw[, db]) by torch autograd in f64, their bounds).

    With the statistics' errors (|dmean|, relative r of rstd): xhat = (x - mean) rstd is
    within e_x = (|dmean| + u|d|) rstd + |xhat| (r + 2u); g = dy w rounds (u|g|);
    c1 = mean(g) within e1 = (N + C + 2) u mean|g|, c2 = mean(g xhat) within
    e2 = mean(|g| e_x) + (N + C + 3) u mean|g xhat|; t = g - c1 - xhat c2 within
    e_t = u|g| + e1 + e_x |c2| + |xhat| e2 + 3u (|g| + |c1| + |xhat c2|), and
    dx = t rstd within e_t rstd + |t| rstd (r + u).  dw = sum_rows dy xhat: the rows' e_x
    times |dy| plus R + P BM + 2 additions in f32 (R rows added into the programs' BM
    partial rows each, then the P BM partial rows summed); db = sum dy likewise.  Each rounds to its dtype."""
    x64, w64, dy64 = (np.asarray(a, np.float64) for a in (x, w, dy))
    rows, n = x64.shape
    mean, dmean, rstd, r = _stat_errors(x64, eps, configs.row_tiles(target)[1], rms)
    bm, chunk = configs.norm_backward_tiles(target)
    c = -(-n // chunk)
    d = x64 - mean
    xhat = d * rstd
    e_x = (dmean + U * np.abs(d)) * rstd + np.abs(xhat) * (r + 2 * U)
    g = dy64 * w64
    c1 = 0.0 if rms else g.mean(-1, keepdims=True)
    e1 = 0.0 if rms else (n + c + 2) * U * np.abs(g).mean(-1, keepdims=True)
    c2 = (g * xhat).mean(-1, keepdims=True)
    e2 = (np.abs(g) * e_x).mean(-1, keepdims=True) + (n + c + 3) * U * np.abs(g * xhat).mean(-1, keepdims=True)
    t = g - c1 - xhat * c2
    e_t = U * np.abs(g) + e1 + e_x * np.abs(c2) + np.abs(xhat) * e2 + 3 * U * (np.abs(g) + np.abs(c1) + np.abs(xhat * c2))
    partial_rows = bm * min(-(-rows // bm), max(1, rows_backward.MAX_PARTIAL_ROWS // bm))
    k = (rows + partial_rows + 2) * U
    e_dw = (np.abs(dy64) * e_x).sum(0) + k * np.abs(dy64 * xhat).sum(0)
    e_db = k * np.abs(dy64).sum(0)

    leaves = [_f64(a).requires_grad_() for a in ((x, w) if rms else (x, w, b))]
    if rms:
        out = torch.nn.functional.rms_norm(leaves[0], (n,), leaves[1], eps)
    else:
        out = torch.nn.functional.layer_norm(leaves[0], (n,), leaves[1], leaves[2], eps)
    out.backward(_f64(dy))
    grads = [leaf.grad.numpy() for leaf in leaves]
    bounds = [_round(grads[0], e_t * rstd + np.abs(t) * rstd * (r + U), x.dtype),
              _round(grads[1], e_dw, grad_dtype)]
    if not rms:
        bounds.append(_round(grads[2], e_db, grad_dtype))
    return grads, bounds, (mean[:, 0], dmean[:, 0], rstd[:, 0], r[:, 0])


def _check_norm(rows, n, dtype, target, rms, wdtype=F32, eps=1e-5):
    x, dy = _data(rows, n, dtype)
    w = (RNG.standard_normal(n) + 1).astype(wdtype)
    b = RNG.standard_normal(n).astype(wdtype)
    plain = target == "interpret"   # the flag changes nothing else (on the device: one more compile)
    if rms:
        y, rstd = ops.rms_norm(x, w, eps, return_stats=True, target=target)
        assert not plain or np.array_equal(y, ops.rms_norm(x, w, eps, target=target))
        got = ops.rms_norm_backward(dy, x, w, rstd, target=target)
        mean = None
    else:
        y, mean, rstd = ops.layer_norm(x, w, b, eps, return_stats=True, target=target)
        assert not plain or np.array_equal(y, ops.layer_norm(x, w, b, eps, target=target))
        got = ops.layer_norm_backward(dy, x, w, mean, rstd, target=target)
    grads, bounds, (m64, dmean, rstd64, r) = _norm_backward_ref(x, w, b, dy, eps, target, rms, wdtype)
    assert rstd.dtype == F32 and rstd.shape == (rows,)
    assert_within(rstd, rstd64, r * rstd64, f"rstd {target} {x.shape}")
    if mean is not None:
        assert mean.dtype == F32 and mean.shape == (rows,)
        assert_within(mean, m64, dmean, f"mean {target} {x.shape}")
    assert len(got) == len(grads)
    assert got[0].dtype == dtype and got[0].shape == x.shape
    assert all(g.dtype == wdtype and g.shape == (n,) for g in got[1:])
    for name, a, ref, bound in zip(("dx", "dweight", "dbias"), got, grads, bounds):
        assert_within(a, ref, bound, f"{'rms' if rms else 'layer'}_norm {name} {target} {x.shape} {dtype}")


@pytest.mark.parametrize("rms", [False, True], ids=["layer_norm", "rms_norm"])
@pytest.mark.parametrize("rows,n,dtype", SHAPES)
def test_norm_backward_interpreter(rows, n, dtype, rms):
    _check_norm(rows, n, dtype, "interpret", rms, wdtype=dtype if dtype != F32 else F32)


def test_norm_backward_cpu_device():
    """Layer norm, f16 x with f32 weights, 7 x 300 (rows no multiple of the programs' BM,
    two chunks); RMS norm is one constexpr branch of the same kernels (interpreter above)."""
    _check_norm(7, 300, F16, "cpu-pvc", rms=False)


@pytest.mark.parametrize("target", ["interpret", "cpu-pvc"])
def test_norm_backward_partials_over_several_row_blocks(target, monkeypatch):
    """More row blocks than first-stage programs (the cap lowered to 3), so each program
    walks several blocks and adds into its partial row: within the bound, and the same
    bits on a second run (no atomics: the reduction order is fixed)."""
    monkeypatch.setattr(rows_backward, "MAX_PARTIAL_ROWS", 3 * configs.row_tiles(target)[0])
    rows = 7 * configs.row_tiles(target)[0] + 1
    _check_norm(rows, 300, F16, target, rms=False)
    x, dy = _data(rows, 300, F16)
    w = np.ones(300, np.float32)
    _, mean, rstd = ops.layer_norm(x, w, w, return_stats=True, target=target)
    first = ops.layer_norm_backward(dy, x, w, mean, rstd, target=target)
    second = ops.layer_norm_backward(dy, x, w, mean, rstd, target=target)
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


def test_norm_stats_leading_dims():
    """A [2, 3, N] input: the statistics are over its 6 rows, and dx has x's shape."""
    x = RNG.standard_normal((2, 3, 40)).astype(np.float32)
    w = np.ones(40, np.float32)
    y, rstd = ops.rms_norm(x, w, return_stats=True, target="interpret")
    assert y.shape == x.shape and rstd.shape == (6,)
    dx, dw = ops.rms_norm_backward(np.ones_like(x), x, w, rstd, target="interpret")
    assert dx.shape == x.shape and dw.shape == (40,)


# --- cross entropy ---------------------------------------------------------------------------

def _cross_entropy_ref(x, t, dloss, target):
    """((loss, lse, dlogits) by torch in f64, their bounds).  lse = m + log s with s within
    delta_s (as _log_softmax_ref), so lse within delta_s + 6u|log s| + u|lse|, and
    loss = lse - x[t] one more rounding (the target's logit is picked exactly: one term
    summed with zeros).  dlogits = (exp(x - lse) - onehot) dloss: p within
    p (e_lse + u|x - lse| + 6u), the subtraction and the product round (u each)."""
    x64 = np.asarray(x, np.float64)
    rows, n = x64.shape
    c = _chunks(n, target)
    m = x64.max(-1, keepdims=True)
    r = m - x64.min(-1, keepdims=True)
    lse = torch.logsumexp(_f64(x), -1, keepdim=True).numpy()
    log_s = lse - m
    e_lse = U * r + 6 * U + (n + c) * U + c * (8 * U + U * r) + 6 * U * log_s + U * np.abs(lse)
    xt_ = _f64(x).requires_grad_()
    loss = torch.nn.functional.cross_entropy(xt_, torch.from_numpy(t.astype(np.int64)), reduction="none")
    loss.backward(_f64(dloss))
    keep = (t != -100)[:, None]
    loss64 = loss.detach().numpy()
    e_loss = np.where(keep, e_lse + U * np.abs(loss64[:, None]), 0.0)[:, 0]
    p = np.exp(x64 - lse)
    d = xt_.grad.numpy()
    g = np.abs(np.asarray(dloss, np.float64))[:, None]
    onehot = np.arange(n)[None, :] == t[:, None]
    e_d = np.where(keep, g * (p * (e_lse + U * np.abs(x64 - lse) + 6 * U) + U * np.abs(p - onehot)) + U * np.abs(d), 0.0)
    return (loss64, e_loss), (lse[:, 0], e_lse[:, 0]), (d, _round(d, e_d, x.dtype))


def _check_cross_entropy(rows, n, dtype, target):
    x = (RNG.standard_normal((rows, n)) * 3).astype(dtype)
    t = RNG.integers(0, n, rows).astype(np.int64)
    t[rows // 2] = -100                                       # ignore_index: loss 0, gradient 0
    dloss = RNG.standard_normal(rows).astype(np.float32)
    loss, lse = ops.cross_entropy_forward(x, t, target=target)
    dx = ops.cross_entropy_backward(x, t, lse, dloss, target=target)
    (l64, e_l), (lse64, e_lse), (d64, e_d) = _cross_entropy_ref(x, t, dloss, target)
    assert loss.dtype == lse.dtype == F32 and loss.shape == lse.shape == (rows,)
    assert_within(loss, l64, e_l, f"loss {target} {x.shape}")
    assert_within(lse, lse64, e_lse, f"lse {target} {x.shape}")
    assert dx.dtype == dtype and dx.shape == x.shape
    assert_within(dx, d64, e_d, f"dlogits {target} {x.shape} {dtype}")
    return x, t, l64


@pytest.mark.parametrize("rows,n,dtype", SHAPES)
def test_cross_entropy_interpreter(rows, n, dtype):
    _check_cross_entropy(rows, n, dtype, "interpret")


def test_cross_entropy_cpu_device_and_a_50257_class_vocabulary():
    """One kernel pair: 5 x 300, then 3 rows of GPT-2's 50257 classes (197 chunks, the
    last partial) through the same compiled kernels; the reductions against torch's."""
    _check_cross_entropy(5, 300, F16, "cpu-pvc")
    x, t, l64 = _check_cross_entropy(3, 50257, F32, "cpu-pvc")
    kept = t != -100
    for reduction, ref in (("mean", l64[kept].mean()), ("sum", l64.sum())):
        got = ops.cross_entropy(x, t, reduction, target="cpu-pvc")
        # the rows' bounds (about 2^-17 relative: 50257 + 197 additions) summed, then the mean's rounding
        assert abs(float(got) - ref) <= 2.0 ** -15 * np.abs(l64).sum(), reduction
    none = ops.cross_entropy(x, t, "none", target="cpu-pvc")
    assert none.shape == (3,) and none.dtype == F32


def test_cross_entropy_leading_dims_and_torch_mean():
    x = (RNG.standard_normal((2, 3, 37)) * 2).astype(np.float32)
    t = RNG.integers(0, 37, (2, 3)).astype(np.int32)
    t[0, 1] = -100
    ref = torch.nn.functional.cross_entropy(_f64(x).reshape(6, 37), torch.from_numpy(t.reshape(6)).long()).item()
    got = ops.cross_entropy(x, t, target="interpret")
    assert isinstance(got, np.float32) and abs(float(got) - ref) <= 2.0 ** -16 * abs(ref)
    assert ops.cross_entropy(x, t, "none", target="interpret").shape == (2, 3)


@pytest.mark.parametrize("call,message", [
    (lambda: ops.softmax_backward(np.ones((2, 8), np.float32), np.ones((2, 9), np.float32)), r"shape \(2, 8\)"),
    (lambda: ops.log_softmax_backward(np.ones((2, 8), np.float32), np.ones((2, 8), np.int32)), "float16, bfloat16"),
    (lambda: ops.layer_norm_backward(np.ones((2, 8), np.float32), np.ones((2, 8), np.float32), np.ones(8, np.float32),
                                     np.ones(3, np.float32), np.ones(2, np.float32)), "mean must be float32 with 2"),
    (lambda: ops.rms_norm_backward(np.ones((2, 8), np.float32), np.ones((2, 8), np.float32), np.ones(8, np.float32),
                                   np.ones(2, np.float64)), "rstd must be float32"),
    (lambda: ops.cross_entropy(np.ones((2, 8), np.float32), np.ones(2, np.float32)), "integer class indices"),
    (lambda: ops.cross_entropy(np.ones((2, 8), np.float32), np.ones(3, np.int64)), r"shape \(2,\)"),
    (lambda: ops.cross_entropy(np.ones((2, 8), np.float32), np.ones(2, np.int64), "max"), "'mean', 'sum', 'none'"),
])
def test_backward_ops_refuse_clearly(call, message):
    with pytest.raises(UsageError, match=message):
        call()
