"""Row-wise ops over the last dimension: ``softmax``, ``layer_norm``, ``rms_norm``.

Each program owns BM rows and walks them in chunks of BC columns, so one compiled kernel
serves every width (up to 16K columns and beyond) with a bounded register footprint:

* softmax keeps a running maximum ``m`` and a running sum ``s`` rescaled by
  ``exp(m_old - m_new)`` when the maximum grows (the online softmax), then writes
  ``exp(x - m) / s`` in a second pass;
* layer norm takes the mean in one pass and the variance as the mean of ``(x - mean)^2``
  in a second (the two-pass form: no cancellation when the mean is large), then
  normalises; RMS norm needs only the mean square.

Columns past the row's end are masked with a column index (``xt.arange``), so the
arrays may be padded on the right (narrow rows are: see ``operands.fit_rows``).
Statistics accumulate in f32 whatever the input dtype."""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from ..dtypes import numpy_is_float
from . import configs, operands
from .matmul import XT_DTYPES

FLOAT_INPUTS = ("float16", "bfloat16", "float32")
NEG_BIG = -3.0e38   # the running maximum's start: finite, so exp(start - max) is 0, never NaN


@xd.jit
def softmax_kernel(x, y, N, OUT: xt.constexpr, BM: xt.constexpr, BC: xt.constexpr):
    """y = softmax of each row of x[:, :N] (online max and sum, then one normalising pass)."""
    row = xt.program_id(0) * BM
    m = xt.full([BM, 1], NEG_BIG, xt.float32)
    s = xt.zeros([BM, 1], xt.float32)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        cols = xt.arange(0, BC) + c
        v = xt.where(cols < N, xt.astype(xt.load_tile(tx), xt.float32), float("-inf"))
        m_new = xt.maximum(m, xt.max(v, axis=1))
        s = s * xt.exp(m - m_new) + xt.sum(xt.exp(v - m_new), axis=1)
        m = m_new
        tx = xt.update_tile_offset(tx, 0, BC)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    ty = xt.init_tile(y, [row, 0], [BM, BC])
    inv = 1.0 / s
    for c in range(0, N, BC):
        e = xt.exp(xt.astype(xt.load_tile(tx), xt.float32) - m) * inv
        xt.store_tile(xt.astype(e, OUT), ty)
        tx = xt.update_tile_offset(tx, 0, BC)
        ty = xt.update_tile_offset(ty, 0, BC)


@xd.jit
def layer_norm_kernel(x, w, b, y, N, eps, RMS: xt.constexpr, OUT: xt.constexpr,
                      BM: xt.constexpr, BC: xt.constexpr):
    """y = (x - mean) / sqrt(var + eps) * w + b per row of x[:, :N]; with RMS,
    y = x / sqrt(mean(x^2) + eps) * w (b unused)."""
    row = xt.program_id(0) * BM
    mean = xt.zeros([BM, 1], xt.float32)
    if not RMS:
        total = xt.zeros([BM, 1], xt.float32)
        tx = xt.init_tile(x, [row, 0], [BM, BC])
        for c in range(0, N, BC):
            total = total + xt.sum(xt.astype(xt.load_tile(tx), xt.float32), axis=1)
            tx = xt.update_tile_offset(tx, 0, BC)
        mean = total / N
    squares = xt.zeros([BM, 1], xt.float32)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        cols = xt.arange(0, BC) + c
        d = xt.where(cols < N, xt.astype(xt.load_tile(tx), xt.float32) - mean, 0.0)
        squares = squares + xt.sum(d * d, axis=1)
        tx = xt.update_tile_offset(tx, 0, BC)
    rstd = xt.rsqrt(squares / N + eps)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    ty = xt.init_tile(y, [row, 0], [BM, BC])
    tw = xt.init_tile(w, [0, 0], [1, BC])
    tb = xt.init_tile(b, [0, 0], [1, BC])
    for c in range(0, N, BC):
        z = (xt.astype(xt.load_tile(tx), xt.float32) - mean) * rstd * xt.astype(xt.load_tile(tw), xt.float32)
        if not RMS:
            z = z + xt.astype(xt.load_tile(tb), xt.float32)
        xt.store_tile(xt.astype(z, OUT), ty)
        tx = xt.update_tile_offset(tx, 0, BC)
        ty = xt.update_tile_offset(ty, 0, BC)
        tw = xt.update_tile_offset(tw, 0, BC)
        tb = xt.update_tile_offset(tb, 0, BC)


def softmax(x, dim: int = -1, *, out=None, target: str | None = None):
    """Softmax along the last dimension of ``x`` (f16, bf16 or f32; any leading shape);
    the result has ``x``'s dtype and library (or is written to ``out``)."""
    x2, shape, dtype = _rows(x, dim, "softmax")
    target = configs.resolve_target(target, x2)
    BM, BC = configs.row_tiles(target)
    buffer, result = operands.output_buffer(_flat_out(out, x2.shape), x2, x2.shape, dtype)
    softmax_kernel.on(target)[(-(-x2.shape[0] // BM),)](
        operands.fit_rows(x2, "x"), buffer, x2.shape[1], OUT=_xt(dtype), BM=BM, BC=BC)
    return _unflat(operands.copy_back(buffer, result), shape, out)


def layer_norm(x, weight, bias, eps: float = 1e-5, *, out=None, target: str | None = None):
    """Layer norm over the last dimension: ``(x - mean) / sqrt(var + eps) * weight + bias``
    (biased variance, as torch); ``weight`` and ``bias`` are [N] float arrays."""
    return _norm(x, weight, bias, eps, out, target, rms=False)


def rms_norm(x, weight, eps: float = 1e-6, *, out=None, target: str | None = None):
    """RMS norm over the last dimension: ``x / sqrt(mean(x^2) + eps) * weight``."""
    return _norm(x, weight, None, eps, out, target, rms=True)


def softmax_result(x, dim: int = -1) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of what :func:`softmax` returns, checked as it checks them (same
    UsageErrors), without running: for the torch fake implementation (``ops/torch_ops.py``)."""
    _, shape, dtype = _rows(x, dim, "softmax")
    return shape, dtype


def norm_result(x, weight, bias=None, *, rms: bool) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of what :func:`layer_norm` (``rms`` False) or :func:`rms_norm` returns,
    checked as they check them, without running (see :func:`softmax_result`)."""
    _, shape, dtype, _, _ = _norm_operands(x, weight, bias, rms)
    return shape, dtype


def _norm_operands(x, weight, bias, rms: bool):
    """(``x`` as [rows, N], its shape, its dtype, weight row, bias row or the weight row)."""
    name = "rms_norm" if rms else "layer_norm"
    x2, shape, dtype = _rows(x, -1, name)
    N = x2.shape[1]
    w = _param(weight, N, "weight", name)
    b = _param(bias, N, "bias", name) if bias is not None else w
    return x2, shape, dtype, w, b


def _norm(x, weight, bias, eps, out, target, rms: bool):
    x2, shape, dtype, w, b = _norm_operands(x, weight, bias, rms)
    N = x2.shape[1]
    target = configs.resolve_target(target, x2)
    BM, BC = configs.row_tiles(target)
    buffer, result = operands.output_buffer(_flat_out(out, x2.shape), x2, x2.shape, dtype)
    layer_norm_kernel.on(target)[(-(-x2.shape[0] // BM),)](
        operands.fit_rows(x2, "x"), w, b, buffer, N, float(eps), RMS=rms, OUT=_xt(dtype), BM=BM, BC=BC)
    return _unflat(operands.copy_back(buffer, result), shape, out)


def _rows(x, dim: int, op: str):
    """(``x`` as a 2-D [rows, N] array, its original shape, its dtype)."""
    x = operands.as_array(x, "x")
    shape = tuple(x.shape)
    if not shape or dim not in (-1, len(shape) - 1):
        raise UsageError(f"{op}: only the last dimension is supported (dim=-1), got dim={dim} for shape {shape}; "
                         "move the dimension last first")
    dtype = operands.dtype_of(x)
    name = "bfloat16" if dtype == operands.BF16 else dtype.name
    if name not in FLOAT_INPUTS:
        raise UsageError(f"{op}: {dtype} input; supported: float16, bfloat16, float32")
    if 0 in shape:
        raise UsageError(f"{op}: empty input (shape {shape})")
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    return x.reshape(rows, shape[-1]), shape, dtype


def _param(p, N: int, what: str, op: str):
    """A [N] float parameter as a [1, N] row the kernel reads with 2D blocks."""
    p = operands.as_array(p, what)
    if tuple(p.shape) != (N,) or not numpy_is_float(operands.dtype_of(p)):
        raise UsageError(f"{op}: {what} must be a float array of shape ({N},), got {operands.dtype_of(p)} "
                         f"{tuple(p.shape)}")
    return operands.fit_rows(p.reshape(1, N), what)


def _flat_out(out, shape2):
    return None if out is None else out.reshape(shape2)


def _unflat(result2, shape, out):
    return out if out is not None else result2.reshape(shape)


def _xt(dtype):
    return XT_DTYPES["bfloat16" if dtype == operands.BF16 else dtype.name]
