"""``ops.matmul_backward``: the gradients of ``C = act(op(A) @ op(B) + bias)``.

With ``Z = op(A) @ op(B) + bias`` and ``dZ = dC * act'(Z)``:
``d op(A) = dZ @ op(B)^T``, ``d op(B) = op(A)^T @ dZ`` and ``dbias = sum over rows of dZ``.
Each product is one :func:`~xetile_dsl.ops.matmul` launch whose transposed-operand flags
read the arrays as stored (no transposed copy is made); a transposed ``a`` gets its
gradient stored as it is, through ``(dZ @ op(B)^T)^T = op(B) @ dZ^T``.  The bias gradient
is the GEMV ``ones[1, M] @ dZ`` (the matmul kernel's 1-row DPAS).

``dZ`` needs ``Z``: it is recomputed, by the kernel below, which is the forward's K loop
with the activation's derivative applied to the dC tile it reads after the loop (one GEMM
of the forward's size; the forward keeps returning only C, so inference allocates
nothing for training).  Without an activation ``dZ`` is ``dC`` itself, nothing is
recomputed.  ``dZ`` is rounded to the input dtype once, as the DPAS operand of the
two products."""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from ..kernels.gemm_loop import subgroup_gemm
from ..dtypes import numpy_is_float
from . import configs, operands
from .matmul import (ACTIVATIONS, XT_DTYPES, _bias_row, _input_dtype, _np_dtype, _row_major, _shapes, matmul,
                     matmul_result, row_major_operands)

#: input dtypes with gradients (fp8 and int8 are inference formats)
GRAD_INPUTS = ("float16", "bfloat16", "float32")


@xd.jit
def matmul_dz_kernel(a, b, bias, dc, dz, K, TA: xt.constexpr, TB: xt.constexpr, HAS_BIAS: xt.constexpr,
                     ACT: xt.constexpr, ACC: xt.constexpr, OUT: xt.constexpr,
                     BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
    """dz[M, N] = dc * act'(op(a) @ op(b) + bias): the forward kernel's pre-activation,
    then the derivative of activation ``ACT`` (as in ``matmul_kernel``: 1 relu, 2 gelu
    erf form, 3 silu, 4 gelu tanh form) times the dc tile, rounded once to ``OUT``."""
    pid_m = xt.program_id(0)
    pid_n = xt.program_id(1)
    z = subgroup_gemm(a, b, pid_m * BM, pid_n * BN, K, BM, BN, BK, ACC, (0, 1) if TA else (1, 0), (0, 1) if TB else (1, 0))
    if HAS_BIAS:
        z = z + xt.astype(xt.load_tile(xt.init_tile(bias, [0, pid_n * BN], [1, BN])), ACC)
    g = xt.astype(xt.load_tile(xt.init_tile(dc, [pid_m * BM, pid_n * BN], [BM, BN])), ACC)
    if ACT == 1:
        g = xt.where(z > 0.0, g, 0.0)
    if ACT == 2:   # d/dz 0.5 z (1 + erf(z / sqrt 2)) = Phi(z) + z phi(z)
        g = g * (0.5 * (1.0 + xt.erf(z * 0.7071067811865476)) + z * 0.3989422804014327 * xt.exp(-0.5 * z * z))
    if ACT == 3:   # d/dz z s(z) = s (1 + z (1 - s))
        s = xt.sigmoid(z)
        g = g * (s * (1.0 + z * (1.0 - s)))
    if ACT == 4:   # t = tanh(c (z + 0.044715 z^3)): 0.5 (1 + t) + 0.5 z (1 - t^2) c (1 + 3 * 0.044715 z^2)
        t = xt.tanh(0.7978845608028654 * (z + 0.044715 * z * z * z))
        g = g * (0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * 0.7978845608028654 * (1.0 + 0.134145 * z * z))
    xt.store_tile(xt.astype(g, OUT), xt.init_tile(dz, [pid_m * BM, pid_n * BN], [BM, BN]))


def matmul_backward(a, b, dc, *, trans_a: bool = False, trans_b: bool = False, bias=None,
                    activation: str | None = None, needs_da: bool = True, needs_db: bool = True,
                    target: str | None = None):
    """``(da, db, dbias)`` of ``c = ops.matmul(a, b, trans_a=, trans_b=, bias=, activation=)``
    given ``dc`` (the gradient of the loss by ``c``, [M, N], any float dtype, e.g. the
    forward's ``out_dtype``): ``da``/``db`` shaped and typed like ``a``/``b`` as stored,
    ``dbias`` like ``bias`` (None without one).  ``needs_da=False`` / ``needs_db=False``
    skip that product (its result is None: a frozen weight, an input batch).  Inputs f16,
    bf16 or f32 (fp8 and int8 have no gradients here); f32 accumulation.  Arrays as for
    :func:`matmul`.

    Example::

        a, b = np.ones((4, 32), np.float16), np.ones((32, 8), np.float16)
        da, db, dbias = ops.matmul_backward(a, b, np.ones((4, 8), np.float32), bias=np.zeros(8, np.float32))
    """
    a, b, dc = operands.as_array(a, "a"), operands.as_array(b, "b"), operands.as_array(dc, "dc")
    (M, N), in_dtype = matmul_backward_check(a, b, dc, trans_a, trans_b, bias, activation)
    dz = _dz(a, b, dc, trans_a, trans_b, bias, activation, in_dtype, target)
    # d op(A) = dZ op(B)^T; stored transposed: op(B) dZ^T
    da = None if not needs_da else matmul(b, dz, trans_a=trans_b, trans_b=True, target=target) if trans_a else \
        matmul(dz, b, trans_b=not trans_b, target=target)
    # d op(B) = op(A)^T dZ; stored transposed: dZ^T op(A)
    db = None if not needs_db else matmul(dz, a, trans_a=True, trans_b=trans_a, target=target) if trans_b else \
        matmul(a, dz, trans_a=not trans_a, target=target)
    dbias = None
    if bias is not None:
        ones = operands.host_like_input(np.ones((1, M), in_dtype), a)
        dbias = matmul(ones, dz, out_dtype=_bias_grad_dtype(bias), target=target).reshape(N)
    return da, db, dbias


def _bias_grad_dtype(bias) -> np.dtype:
    """The bias's dtype (f16, bf16, f32), f32 for a float64 bias (no f64 output)."""
    dtype = operands.dtype_of(bias)
    return dtype if dtype.itemsize <= 4 else np.dtype(np.float32)


def matmul_backward_check(a, b, dc, trans_a: bool, trans_b: bool, bias, activation):
    """((M, N), input dtype) after the checks of :func:`matmul_backward` (UsageErrors):
    the forward's own, a gradient-capable input dtype, ``dc`` a float [M, N]."""
    (M, N), _ = matmul_result(a, b, trans_a=trans_a, trans_b=trans_b, bias=bias, activation=activation)
    name = _input_dtype(a, b)
    if name not in GRAD_INPUTS:
        raise UsageError(f"matmul_backward: {name} inputs have no gradients here; use float16, bfloat16 or "
                         "float32 (fp8 and int8 are for inference)")
    if tuple(dc.shape) != (M, N) or not numpy_is_float(operands.dtype_of(dc)):
        raise UsageError(f"matmul_backward: dc must be a float array of the result's shape ({M}, {N}), got "
                         f"shape {tuple(dc.shape)} and dtype {operands.dtype_of(dc)}")
    return (M, N), _np_dtype(name)


def _dz(a, b, dc, trans_a, trans_b, bias, activation, in_dtype, target):
    """dC * act'(Z) in the input dtype: dc itself (or its cast) without an activation,
    else the recompute kernel's result."""
    if activation is None:
        return dc if operands.dtype_of(dc) == in_dtype else operands.cast(dc, in_dtype)
    a, ta = _row_major(a, trans_a)
    b, tb = _row_major(b, trans_b)
    M, K, N = _shapes(a, b, ta, tb)
    target = configs.resolve_target(target, a)
    a, b, ta, tb = row_major_operands(target, a, b, ta, tb)
    name = "bfloat16" if in_dtype == operands.BF16 else in_dtype.name
    BM, BN, BK = configs.gemm_tiles(target, name, M, ta)
    dz, result = operands.output_buffer(None, a, (M, N), in_dtype)
    matmul_dz_kernel.on(target)[(-(-M // BM), -(-N // BN))](
        operands.fit_rows(a, "a"), operands.fit_rows(b, "b"), _bias_row(bias, N, a), operands.fit_rows(dc, "dc"),
        dz, K, TA=ta, TB=tb, HAS_BIAS=bias is not None, ACT=ACTIVATIONS[activation],
        ACC=xt.float32, OUT=XT_DTYPES[name], BM=BM, BN=BN, BK=BK)
    return operands.copy_back(dz, result)
