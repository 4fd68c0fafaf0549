"""ops.attention(..., return_lse=True) and ops.attention_backward against torch autograd in
float64 (scaled_dot_product_attention, grouped-query heads through enable_gqa), with
per-element bounds derived from the kernels' arithmetic (_backward_bounds).  Shapes with
N a multiple of no tile (keys and queries past N masked or zero), causal and full,
H / H_kv = 1, 2, 4, D = 32, 64 and 128, f16 and bf16 in the interpreter; the CPU device
builds two backwards (causal, D = 64, H / H_kv = 2; causal, D = 32, the kernels
examples/train_gpt.py builds) and reuses the forward kernels the forward tests and
train_gpt.py build (return_lse is a runtime flag of that kernel).  ARC's rows form runs
with arc's tiles in the interpreter (``_launch(..., like="arc")``) and once on cpu-arc."""
from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from ops_ref import BF16, OUT_ROUNDING, U, assert_within, attention_ref
from xetile_dsl import ops
from xetile_dsl.errors import UsageError

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(3030)
#: the module (ops.attention_backward is the function of the same name)
backward_module = importlib.import_module("xetile_dsl.ops.attention_backward")


def _inputs(z, h, hkv, n, d, dtype):
    q, do = (RNG.standard_normal((z, h, n, d)).astype(dtype) for _ in range(2))
    k, v = (RNG.standard_normal((z, hkv, n, d)).astype(dtype) for _ in range(2))
    return q, k, v, do


def _torch_reference(q, k, v, do, causal):
    """(lse, dq, dk, dv, and P, dP, delta of the f64 softmax) from torch autograd."""
    t = [torch.tensor(np.asarray(x, np.float64), requires_grad=True) for x in (q, k, v)]
    o = torch.nn.functional.scaled_dot_product_attention(*t, is_causal=causal, enable_gqa=True)
    o.backward(torch.tensor(np.asarray(do, np.float64)))
    g = q.shape[1] // k.shape[1]
    kk, vv = (x.detach().repeat_interleave(g, 1) for x in t[1:])
    s = t[0].detach() @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    p = torch.softmax(s, -1)
    dp = torch.tensor(np.asarray(do, np.float64)) @ vv.transpose(-1, -2)
    delta = (torch.tensor(np.asarray(do, np.float64)) * o.detach()).sum(-1, keepdim=True)
    return (torch.logsumexp(s, -1).numpy(), *(x.grad.numpy() for x in t),
            p.numpy(), dp.numpy(), delta.numpy(), s.numpy())


def _group_sum(x, g):
    """[Z, H, N, D] summed over each key/value head's G query heads: [Z, H / G, N, D]."""
    z, h, n, d = x.shape
    return x.reshape(z, h // g, g, n, d).sum(2)


def _backward_bounds(q, k, v, do, o_bound, lse_bound, ref):
    """Bounds on dq, dk, dv (f32 accumulation, P and dS rounded to the input dtype).

    u_in, f_in: the input dtype's relative half ulp and absolute floor (2^-11, 2^-25 for
    f16; 2^-8 for bf16); u = 2^-24.  P = exp2(s * qk - lse2) in f32 has a relative error
    eps_P: the scores' D-term f32 sums ((D + 1) u |q||k|^T times the scale), the error of
    the kernel's lse (lse_bound), the roundings of the fma, of lse2 = lse log2(e) and of
    the scale (4u (|s| + |lse|), natural-log units) and exp2's 3 ulp (6u).  dP = dO V^T: (D + 1) u |dO||V|^T.  delta = rowsum(dO * o) on the kernel's o
    (within the forward's bound o_bound) in f32: |dO| o_bound + (D + 1) u |dO||o|.
    dS = P (dP - delta): err_dS = P (err_dP + err_delta) + eps_P P |dP - delta|, then the
    rounding to the input dtype (u_in |dS| + f_in).  dV = P^T dO over G N terms in f32:
    ((eps_P + u_in) P + f_in)^T |dO| + (G N + 1) u P^T |dO|; dK = scale (err_dS^T |Q| +
    (G N + 1) u |dS|^T |Q|), dQ = scale (err_dS |K| + (N + 1) u |dS| |K|); each then
    rounded to the input dtype."""
    u_in, f_in = OUT_ROUNDING[np.dtype(q.dtype)]
    lse, _, _, _, p, dp, delta, s = ref
    q64, k64, v64, do64 = (np.asarray(x, np.float64) for x in (q, k, v, do))
    z, h, n, d = q64.shape
    g = h // k64.shape[1]
    scale = 1 / math.sqrt(d)
    kk, vv = (np.repeat(x, g, 1) for x in (k64, v64))
    o = p @ vv
    t = np.swapaxes
    finite = np.where(np.isfinite(s), np.abs(s), 0.0)
    eps_p = ((d + 1) * U * (np.abs(q64) @ t(np.abs(kk), -1, -2)) * scale + lse_bound[..., None]
             + 4 * U * (finite + np.abs(lse)[..., None]) + 6 * U)
    err_dp = (d + 1) * U * (np.abs(do64) @ t(np.abs(vv), -1, -2))
    err_delta = (np.abs(do64) * o_bound).sum(-1, keepdims=True) + (d + 1) * U * (np.abs(do64) * np.abs(o)).sum(
        -1, keepdims=True)
    ds = p * (dp - delta)
    err_ds = p * (err_dp + err_delta) + eps_p * p * np.abs(dp - delta)
    err_ds = err_ds + u_in * (np.abs(ds) + err_ds) + f_in * (p > 0)
    pt, ads, err_dst = t(p, -1, -2), np.abs(ds), t(err_ds, -1, -2)
    dv = _group_sum(t((eps_p + u_in) * p + f_in * (p > 0), -1, -2) @ np.abs(do64), g) + \
        (g * n + 1) * U * _group_sum(pt @ np.abs(do64), g)
    dk = scale * (_group_sum(err_dst @ np.abs(q64), g) + (g * n + 1) * U * _group_sum(t(ads, -1, -2) @ np.abs(q64), g))
    dq = scale * (err_ds @ np.abs(kk) + (n + 1) * U * (ads @ np.abs(kk)))
    return tuple(b * (1 + u_in) for b in (dq, dk, dv)), (u_in, f_in)


def _check_backward(z, h, hkv, n, d, causal, dtype, target, like=None):
    """``like``: run that target's kernel form and tiles on ``target`` (the forward as
    ops.attention runs it there)."""
    q, k, v, do = _inputs(z, h, hkv, n, d, dtype)
    o, lse = ops.attention(q, k, v, causal=causal, return_lse=True, target=target)
    assert lse.shape == (z, h, n) and lse.dtype == np.float32
    ref = _torch_reference(q, k, v, do, causal)
    g = h // hkv
    o_ref, o_bound = attention_ref(q, np.repeat(k, g, 1), np.repeat(v, g, 1), causal)
    assert_within(o, o_ref, o_bound, f"{target} o")
    lse_bound = _lse_bound(ref, q, np.repeat(k, g, 1))
    assert_within(lse, ref[0], lse_bound, f"{target} lse")
    if like is None:
        grads = ops.attention_backward(q, k, v, o, do, lse, causal=causal, target=target)
    else:
        grads = backward_module._launch(q, k, v, o, do, lse, causal, None, target, like)
    bounds, (u_in, f_in) = _backward_bounds(q, k, v, do, o_bound, lse_bound, ref)
    for name, got, want, bound in zip(("dq", "dk", "dv"), grads, ref[1:4], bounds):
        assert got.shape == want.shape and got.dtype == q.dtype
        assert_within(got, want, bound + u_in * np.abs(want) + f_in,
                      f"{target} {name} N={n} D={d} H={h}/{hkv} causal={causal} {np.dtype(dtype)}")


def _lse_bound(ref, q, kk):
    """lse = (m + log2(sum)) ln 2 in f32: the scores' error (attention_ref's, at most
    ((D + 1) u |q||k|^T + 2u |s|) / sqrt(D) per score, moving lse by at most its row
    maximum), the f32 sum of N terms over at most N blocks ((2N + 8) u) and the roundings
    of m, the log and the two scalings (4u (|lse| + max |s|))."""
    s = ref[-1]
    finite = np.where(np.isfinite(s), np.abs(s), 0.0)
    q64, k64 = (np.asarray(x, np.float64) for x in (q, kk))
    d = q64.shape[-1]
    scores = np.where(np.isfinite(s), np.abs(q64) @ np.swapaxes(np.abs(k64), -1, -2), 0.0)
    ds_max = ((d + 1) * U * scores.max(-1) + 2 * U * finite.max(-1)) / math.sqrt(d)
    return ds_max + (2 * s.shape[-1] + 8) * U + 4 * U * (np.abs(ref[0]) + finite.max(-1))


@pytest.mark.parametrize("z,h,hkv,n,d,causal,dtype", [
    (1, 2, 2, 37, 64, False, np.float16),
    (1, 4, 2, 53, 64, True, BF16),
    (1, 4, 1, 45, 128, False, np.float16),
    (2, 2, 1, 29, 128, True, BF16),
    (1, 4, 4, 70, 64, True, np.float16),
    (1, 4, 2, 53, 32, True, np.float16),     # D = 32: pvc's 32-query blocks, 16-key dk/dv programs
    (2, 2, 1, 29, 32, False, BF16),
])
def test_attention_backward_interpreter(z, h, hkv, n, d, causal, dtype):
    _check_backward(z, h, hkv, n, d, causal, dtype, "interpret")


@pytest.mark.parametrize("z,h,hkv,n,d,causal,dtype", [
    (1, 4, 2, 29, 64, True, BF16),
    (1, 2, 2, 37, 64, False, np.float16),
    (2, 2, 1, 29, 128, True, np.float16),
    (1, 4, 4, 45, 32, False, BF16),
])
def test_attention_backward_arc_rows_form_interpreter(z, h, hkv, n, d, causal, dtype):
    """ARC's rows form (attention_bwd_dq_rows_kernel: 8 queries x 16 keys; the dk/dv rows
    kernel twice, dV then dK, 8 keys x 16 queries) with arc's tiles in the interpreter."""
    _check_backward(z, h, hkv, n, d, causal, dtype, "interpret", like="arc")


def test_attention_backward_cpu_pvc_causal_gqa():
    """The CPU device: N = 40 (no multiple of the 16-query or 8-key blocks), two query
    heads per key/value head (dk, dv summed over them in one program)."""
    _check_backward(1, 2, 1, 40, 64, True, np.float16, "cpu-pvc")


def test_attention_backward_cpu_arc_causal():
    """ARC's rows form on the CPU device in arc's lane layout: N = 21 (no multiple of the
    8-query dq or 8-key dk/dv programs or the 16-query steps), causal, D = 64."""
    _check_backward(1, 1, 1, 21, 64, True, np.float16, "cpu-arc")


def test_attention_backward_cpu_pvc_d32():
    """D = 32 on the CPU device (configs.CPU_ATTENTION_BACKWARD_TILES' 16 x 8 x 16): the
    kernels examples/train_gpt.py's 4 heads of 32 build (causal f16, one query head per
    key/value head), N = 40."""
    _check_backward(1, 2, 2, 40, 32, True, np.float16, "cpu-pvc")


@pytest.mark.parametrize("call,message", [
    (lambda q, k, v, do, lse: ops.attention_backward(q, k, v, q, do, lse[:, :1]), "lse must be float32"),
    (lambda q, k, v, do, lse: ops.attention_backward(q, k, v, q[:, :, :5], do, lse), "o must have q's shape"),
    (lambda q, k, v, do, lse: ops.attention_backward(q, k[:, :1], v, q, do, lse), "H_kv dividing H"),
    (lambda q, k, v, do, lse: ops.attention(q, k[:, :, :3], v[:, :, :3]), "H_kv dividing H"),
])
def test_attention_backward_refuses_clearly(call, message):
    q, k, v, do = _inputs(1, 2, 2, 20, 64, np.float16)
    lse = np.zeros((1, 2, 20), np.float32)
    with pytest.raises(UsageError, match=message):
        call(q, k, v, do, lse)


def test_attention_backward_on_nvidia_takes_cuda_arrays():
    """sm90 has attention backward tiles; host arrays there are a launch error naming what
    it takes, raised before any device is touched (this machine has none)."""
    from xetile_dsl.errors import LaunchError
    q, k, v, do = _inputs(1, 2, 2, 20, 64, np.float16)
    lse = np.zeros((1, 2, 20), np.float32)
    with pytest.raises(LaunchError, match="NVIDIA targets take CUDA arrays"):
        ops.attention_backward(q, k, v, q, do, lse, target="sm90")
