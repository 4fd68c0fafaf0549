"""f64 references for ops.matmul_backward: the gradients from torch autograd in float64
(an independent implementation of the chain rule and of each activation's derivative),
with per-element bounds derived from the arithmetic the kernels do.

Notation: u = 2^-24 (f32), u_in the input dtype's half ulp (2^-11 f16, 2^-8 bf16), all
bounds element-wise on absolute values (|x| @ |y| for a product).
* Z = op(A) op(B) + bias: exact products summed in f32, one bias add:
  dZ_pre <= (K + 2) u (|op A| @ |op B| + |bias|).
* act'(Z) in f32: moves by at most sup|act''| dZ_pre (<= 1 for gelu, its tanh form and
  silu: gelu'' = phi(z) (2 - z^2) peaks at 0.8) plus its evaluation: erf 16 ulp, exp,
  tanh and the sigmoid a few ulp each, <= 8 roundings of terms <= 1.2 (1 + |z|): within
  64 u (1 + |z|).  relu' is exact but steps at 0: where |Z| <= dZ_pre the mask may flip,
  which the bound allows as the whole |dC| there.
* dZ = dC act' in f32 (one rounding, u), rounded to the input dtype (u_in):
  e_dZ = |dC| e_act' + (u_in + u) |dZ| (no activation: dC rounded to the input dtype, u_in
  |dC|, or exact when dC already has it).
* dA = dZ~ op(B)^T: exact products summed in f32 over N, one rounding to the input dtype:
  e_dA = e_dZ @ |op B|^T + (N + 1) u (|dZ~| @ |op B|^T) + u_in |dA| + floor, with |dZ~| <=
  |dZ| + e_dZ; dB likewise over M; dbias = ones @ dZ~ the same with |ones| = 1."""
from __future__ import annotations

import numpy as np

from ops_ref import OUT_ROUNDING, U

#: activation name -> torch function of a float64 tensor
def _activation(torch, name):
    F = torch.nn.functional
    return {None: lambda z: z, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
            "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}[name]


def matmul_grads_f64(torch, a, b, dc, trans_a=False, trans_b=False, bias=None, activation=None):
    """(da, db, dbias or None, z) of ``act(op(a) @ op(b) + bias)`` by torch autograd in f64
    (z: the pre-activation, for the bounds)."""
    leaves = [torch.tensor(np.asarray(x, np.float64), requires_grad=True) if x is not None else None
              for x in (a, b, bias)]
    ta, tb, tbias = leaves
    z = (ta.T if trans_a else ta) @ (tb.T if trans_b else tb)
    if tbias is not None:
        z = z + tbias
    _activation(torch, activation)(z).backward(torch.tensor(np.asarray(dc, np.float64)))
    return ta.grad.numpy(), tb.grad.numpy(), None if tbias is None else tbias.grad.numpy(), z.detach().numpy()


def matmul_backward_ref(torch, a, b, dc, trans_a=False, trans_b=False, bias=None, activation=None):
    """((da, bound), (db, bound), (dbias, bound) or None) for the kernels' arithmetic (see
    the module docstring); the gradients are shaped as ``a``, ``b``, ``bias`` are stored."""
    da, db, dbias, z = matmul_grads_f64(torch, a, b, dc, trans_a, trans_b, bias, activation)
    in_dtype = np.asarray(a).dtype
    u_in, floor = OUT_ROUNDING[in_dtype]
    A, B = (np.abs(np.asarray(x, np.float64)) for x in (a, b))
    opA, opB = (A.T if trans_a else A), (B.T if trans_b else B)
    M, K = opA.shape
    N = opB.shape[1]
    dc64 = np.abs(np.asarray(dc, np.float64))
    dz = _dz_f64(torch, z, np.asarray(dc, np.float64), activation)
    if activation is None:
        e_dz = 0.0 * dc64 if np.asarray(dc).dtype == in_dtype else u_in * dc64
    else:
        e_pre = (K + 2) * U * (opA @ opB + (0.0 if bias is None else np.abs(np.asarray(bias, np.float64))))
        if activation == "relu":
            e_act = np.where(np.abs(z) <= e_pre, 1.0, 0.0)
        else:
            e_act = e_pre + 64 * U * (1.0 + np.abs(z))
        e_dz = dc64 * e_act + (u_in + U) * np.abs(dz)
    dz_abs = np.abs(dz) + e_dz
    e_dopa = e_dz @ opB.T + (N + 1) * U * (dz_abs @ opB.T)
    e_dopb = opA.T @ e_dz + (M + 1) * U * (opA.T @ dz_abs)
    e_da = e_dopa.T if trans_a else e_dopa
    e_db = e_dopb.T if trans_b else e_dopb
    result = [(da, e_da * (1 + u_in) + u_in * np.abs(da) + floor), (db, e_db * (1 + u_in) + u_in * np.abs(db) + floor)]
    if bias is None:
        return (*result, None)
    b_rel, b_floor = OUT_ROUNDING.get(np.asarray(bias).dtype, (U, 2.0 ** -150))
    e_bias = e_dz.sum(axis=0) + (M + 1) * U * dz_abs.sum(axis=0)
    return (*result, (dbias, e_bias * (1 + b_rel) + b_rel * np.abs(dbias) + b_floor))


def _dz_f64(torch, z, dc, activation):
    """dC act'(Z) in f64 through torch autograd of the activation alone."""
    tz = torch.tensor(z, requires_grad=True)
    _activation(torch, activation)(tz).backward(torch.tensor(dc))
    return tz.grad.numpy()
