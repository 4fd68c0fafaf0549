"""Row-wise ops over the last dimension: ``softmax``, ``log_softmax``, ``layer_norm``,
``rms_norm`` (their backward passes: ``rows_backward.py``).

Each program owns BM rows and walks them in chunks of BC columns, so one compiled kernel
serves every width (up to 16K columns and beyond) with a bounded register footprint:

* softmax keeps a running maximum ``m`` and a running sum ``s`` rescaled by
  ``exp(m_old - m_new)`` when the maximum grows (the online softmax), then writes
  ``exp(x - m) / s`` in a second pass;
* layer norm takes the mean in one pass and the variance as the mean of ``(x - mean)^2``
  in a second (the two-pass form: no cancellation when the mean is large), then
  normalises; RMS norm needs only the mean square.

Where the target's tiles name a whole-row form (``configs.whole_row_tiles``: sm90, sm80 up
to 16384 columns) softmax and the norms run ``softmax_row_kernel`` and
``layer_norm_row_kernel`` instead: a program holds BM whole rows of BN columns (the power
of two >= N) in registers over several warps, so x is read once and y written once.

Columns past the row's end are masked with a column index (``xt.arange``), so the
arrays may be padded on the right (narrow rows are: see ``operands.fit_rows``).
Statistics accumulate in f32 whatever the input dtype."""
from __future__ import annotations

import math

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from ..dtypes import numpy_is_float
from ..targets.nvidia import NV_TARGETS
from .._lazy import LazyModule
from . import configs, operands

nv_launch = LazyModule("xetile_dsl.nv_launch", globals())  # the NVIDIA compiler (llvmlite, xDSL): only for CUDA arrays
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
def log_softmax_kernel(x, y, N, OUT: xt.constexpr, BM: xt.constexpr, BC: xt.constexpr):
    """y = log_softmax of each row of x[:, :N] = x - (max + log(sum exp(x - max))): the
    online pass of softmax_kernel, then one subtracting pass."""
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
    shift = m + xt.log(s)
    for c in range(0, N, BC):
        xt.store_tile(xt.astype(xt.astype(xt.load_tile(tx), xt.float32) - shift, OUT), ty)
        tx = xt.update_tile_offset(tx, 0, BC)
        ty = xt.update_tile_offset(ty, 0, BC)


@xd.jit
def layer_norm_kernel(x, w, b, y, N, eps, RMS: xt.constexpr, OUT: xt.constexpr,
                      BM: xt.constexpr, BC: xt.constexpr, mean_out=0, rstd_out=0,
                      STATS: xt.constexpr = False):
    """y = (x - mean) / sqrt(var + eps) * w + b per row of x[:, :N]; with RMS,
    y = x / sqrt(mean(x^2) + eps) * w (b unused).  With STATS, each row's f32 mean (not
    for RMS) and rstd are also written to the 1-D arrays mean_out and rstd_out."""
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
    if STATS:
        if not RMS:
            xt.store_tile(xt.reshape(mean, [BM]), xt.init_tile(mean_out, [row], [BM]))
        xt.store_tile(xt.reshape(rstd, [BM]), xt.init_tile(rstd_out, [row], [BM]))
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


@xd.jit
def softmax_row_kernel(x, y, N, OUT: xt.constexpr, BM: xt.constexpr, BN: xt.constexpr, LOG: xt.constexpr = False):
    """y = softmax (with LOG, log_softmax) of each row of x[:, :N], N <= BN: the program's
    BM x BN tile read once and held while its maximum and sum are taken, then written.

    Example: ``softmax_row_kernel[(rows,)](x, y, 1000, OUT=xt.float32, BM=1, BN=1024)``"""
    row = xt.program_id(0) * BM
    cols = xt.arange(0, BN)
    v = xt.where(cols < N, xt.astype(xt.load_tile(xt.init_tile(x, [row, 0], [BM, BN])), xt.float32), float("-inf"))
    m = xt.max(v, axis=1)
    e = xt.exp(v - m)
    s = xt.sum(e, axis=1)
    if LOG:
        out = v - (m + xt.log(s))
    else:
        out = e * (1.0 / s)
    xt.store_tile(xt.astype(out, OUT), xt.init_tile(y, [row, 0], [BM, BN]))


@xd.jit
def layer_norm_row_kernel(x, w, b, y, N, eps, RMS: xt.constexpr, OUT: xt.constexpr, BM: xt.constexpr,
                          BN: xt.constexpr, mean_out=0, rstd_out=0, STATS: xt.constexpr = False):
    """layer_norm_kernel's y (RMS: its RMS norm) from each row of x[:, :N], N <= BN, read
    once: the mean, then the mean of (x - mean)^2 (two passes over the registers), then y.
    With STATS, each row's f32 mean (not for RMS) and rstd to the 1-D arrays mean_out and
    rstd_out, as layer_norm_kernel writes them.

    Example: ``layer_norm_row_kernel[(rows,)](x, w, b, y, N, 1e-5, RMS=False, OUT=xt.float16, BM=1, BN=8192)``"""
    row = xt.program_id(0) * BM
    cols = xt.arange(0, BN)
    xh = xt.load_tile(xt.init_tile(x, [row, 0], [BM, BN]))
    tw = xt.init_tile(w, [0, 0], [1, BN])
    if RMS:
        # one weight row, read with x (before the reduction's barrier): its registers are
        # free at 8192 f16 columns over 8 warps (64 either way); layer_norm's w and b read
        # so would hold 30 more across both reductions, so it reads them after
        wh = xt.load_tile(tw)
    v = xt.where(cols < N, xt.astype(xh, xt.float32), 0.0)
    d = v
    mean = xt.zeros([BM, 1], xt.float32)
    if not RMS:
        mean = xt.sum(v, axis=1) / N
        d = xt.where(cols < N, v - mean, 0.0)
    rstd = xt.rsqrt(xt.sum(d * d, axis=1) / N + eps)
    if STATS:
        if not RMS:
            xt.store_tile(xt.reshape(mean, [BM]), xt.init_tile(mean_out, [row], [BM]))
        xt.store_tile(xt.reshape(rstd, [BM]), xt.init_tile(rstd_out, [row], [BM]))
    if not RMS:
        wh = xt.load_tile(tw)
    z = d * rstd * xt.astype(wh, xt.float32)
    if not RMS:
        z = z + xt.astype(xt.load_tile(xt.init_tile(b, [0, 0], [1, BN])), xt.float32)
    xt.store_tile(xt.astype(z, OUT), xt.init_tile(y, [row, 0], [BM, BN]))


def softmax(x, dim: int = -1, *, out=None, target: str | None = None):
    """Softmax along the last dimension of ``x`` (f16, bf16 or f32; any leading shape);
    the result has ``x``'s dtype and library (or is written to ``out``)."""
    return _softmax(x, dim, out, target, log=False)


def log_softmax(x, dim: int = -1, *, out=None, target: str | None = None):
    """``log(softmax(x))`` along the last dimension, computed as ``x - max - log(sum exp(x - max))``
    (no log of a rounded-to-zero probability); dtypes and libraries as :func:`softmax`.

    Example: ``y = ops.log_softmax(np.float32([[1, 2, 3]]))`` (``np.exp(y).sum() == 1``)."""
    return _softmax(x, dim, out, target, log=True)


#: the whole-row launches of ops calls on torch CUDA tensors, by what the call's checks,
#: target, tiles and parameters depend on (:func:`_host_key`): a call whose arguments are
#: laid out as an earlier one's re-sends that launch with its arrays' addresses
#: (``nv_launch.Relaunch``): no checks, reshapes, tile choice or binding again
_HOST: dict = {}
#: the most layouts :data:`_HOST` keeps
HOST_LAYOUTS = 512


def _layout(a) -> tuple | None:
    """What an op's path reads of a torch CUDA tensor besides its address (None: another
    kind of array, or none)."""
    if a is None or getattr(a, "is_cuda", False) is not True:
        return None
    return a.__class__, a.shape, a.dtype, a.stride(), a.device


def _host_key(op, arrays: tuple, *rest) -> tuple | None:
    """The :data:`_HOST` key of a call: the op, each array's :func:`_layout` (``out``
    may be None), the other arguments; None where an array is not a torch CUDA tensor."""
    layouts = tuple(_layout(a) for a in arrays)
    if layouts[0] is None or any(l is None and a is not None for l, a in zip(layouts, arrays)):
        return None
    return (op, layouts, *rest)


def _replay(key, x, out, *params):
    """The result of a call whose launch :data:`_HOST` holds under ``key``, launched again
    on these arrays; None where it holds none (or the kernel's sources changed)."""
    relaunch = _HOST.get(key) if key is not None else None
    if relaunch is None or not relaunch.valid():
        return None
    y = x.new_empty(x.shape) if out is None else out
    relaunch(x.data_ptr(), *(p.data_ptr() for p in params), y.data_ptr())
    return y


def _remember(key, jit, target, grid, args: tuple, kwargs: dict, views: tuple) -> None:
    """Keep the launch just made under ``key`` where each array it took is a view of the
    caller's own (``views``: (given, passed) pairs sharing their first element; not a
    padded or reshaped copy), so that a later call's addresses are those to send."""
    if key is None or not all(a.data_ptr() == b.data_ptr() for a, b in views):
        return
    relaunch = nv_launch.relaunch_of(jit, grid, target, args, kwargs)
    if relaunch is not None:
        if len(_HOST) >= HOST_LAYOUTS:      # a program of ever new shapes: start again
            _HOST.clear()
        _HOST[key] = relaunch


def _softmax(x, dim, out, target, log: bool):
    key = _host_key("log_softmax" if log else "softmax", (x, out), dim, target)
    y = _replay(key, x, out)
    if y is not None:
        return y
    x2, shape, dtype = _rows(x, dim, "log_softmax" if log else "softmax")
    target = configs.resolve_target(target, x2)
    buffer, result = operands.output_buffer(_flat_out(out, x2.shape), x2, x2.shape, dtype)
    whole = configs.whole_row_tiles(target, x2.shape[1])
    if whole is not None:
        grid = (-(-x2.shape[0] // whole.bm),)
        args = (operands.fit_rows(x2, "x"), buffer, x2.shape[1])
        kwargs = dict(OUT=_xt(dtype), BM=whole.bm, BN=whole.bn, LOG=log, **_warps(whole))
        softmax_row_kernel.on(target)[grid](*args, **kwargs)
        y = _unflat(operands.copy_back(buffer, result), shape, out)
        if buffer is result:
            _remember(key, softmax_row_kernel, target, grid, args, kwargs, ((x, args[0]), (y, buffer)))
        return y
    BM, BC = configs.row_tiles(target)
    kernel = log_softmax_kernel if log else softmax_kernel
    kernel.on(target)[(-(-x2.shape[0] // BM),)](
        operands.fit_rows(x2, "x"), buffer, x2.shape[1], OUT=_xt(dtype), BM=BM, BC=BC)
    return _unflat(operands.copy_back(buffer, result), shape, out)


def _warps(whole) -> dict:
    """The launch's num_warps where the whole-row form takes several."""
    return {"num_warps": whole.num_warps} if whole.num_warps > 1 else {}


def layer_norm(x, weight, bias, eps: float = 1e-5, *, return_stats: bool = False, out=None,
               target: str | None = None):
    """Layer norm over the last dimension: ``(x - mean) / sqrt(var + eps) * weight + bias``
    (biased variance, as torch); ``weight`` and ``bias`` are [N] float arrays.  With
    ``return_stats``, ``(y, mean, rstd)``: each row's f32 mean and ``1 / sqrt(var + eps)``
    as 1-D arrays over the rows (x's leading dimensions flattened), what
    :func:`~xetile_dsl.ops.layer_norm_backward` takes.

    Example: ``y, mean, rstd = ops.layer_norm(x, w, b, return_stats=True)``"""
    return _norm(x, weight, bias, eps, out, target, rms=False, stats=return_stats)


def rms_norm(x, weight, eps: float = 1e-6, *, return_stats: bool = False, out=None,
             target: str | None = None):
    """RMS norm over the last dimension: ``x / sqrt(mean(x^2) + eps) * weight``; with
    ``return_stats``, ``(y, rstd)`` (f32 ``1 / sqrt(mean(x^2) + eps)`` per row, for
    :func:`~xetile_dsl.ops.rms_norm_backward`)."""
    return _norm(x, weight, None, eps, out, target, rms=True, stats=return_stats)


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


def _norm(x, weight, bias, eps, out, target, rms: bool, stats: bool = False):
    plain_eps = isinstance(eps, (int, float)) and not isinstance(eps, bool)
    key = None if stats or not plain_eps else _host_key("rms_norm" if rms else "layer_norm", (x, out, weight, bias),
                                                        float(eps), target)
    params = (weight, weight if rms or bias is None else bias)     # the kernel's w and b (_norm_operands)
    y = _replay(key, x, out, *params)
    if y is not None:
        return y
    x2, shape, dtype, w, b = _norm_operands(x, weight, bias, rms)
    rows, N = x2.shape
    target = configs.resolve_target(target, x2)
    BM, BC = configs.row_tiles(target)
    buffer, result = operands.output_buffer(_flat_out(out, x2.shape), x2, x2.shape, dtype)
    extra = {}
    if stats:
        rstd = operands.output_buffer(None, x2, (rows,), np.dtype(np.float32))
        mean = rstd if rms else operands.output_buffer(None, x2, (rows,), np.dtype(np.float32))
        extra = dict(mean_out=mean[0], rstd_out=rstd[0], STATS=True)
    whole = configs.whole_row_tiles(target, N)
    if whole is not None:
        grid = (-(-rows // whole.bm),)
        args = (operands.fit_rows(x2, "x"), w, b, buffer, N, float(eps))
        kwargs = dict(RMS=rms, OUT=_xt(dtype), BM=whole.bm, BN=whole.bn, **extra, **_warps(whole))
        layer_norm_row_kernel.on(target)[grid](*args, **kwargs)
        if buffer is result and not stats:
            y = _unflat(result, shape, out)
            _remember(key, layer_norm_row_kernel, target, grid, args, kwargs,
                      ((x, args[0]), (params[0], w), (params[1], b), (y, buffer)))
    else:
        layer_norm_kernel.on(target)[(-(-rows // BM),)](
            operands.fit_rows(x2, "x"), w, b, buffer, N, float(eps), RMS=rms, OUT=_xt(dtype), BM=BM, BC=BC,
            **extra)
    y = _unflat(operands.copy_back(buffer, result), shape, out)
    if not stats:
        return y
    rstd = operands.copy_back(*rstd)
    return (y, rstd) if rms else (y, operands.copy_back(*mean), rstd)


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
    rows = math.prod(shape[:-1])
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
