"""Backward passes of the row-wise ops (``rows.py``): ``softmax_backward``,
``log_softmax_backward``, ``layer_norm_backward``, ``rms_norm_backward``.

Each program owns BM rows and walks them in BC-column chunks as the forward kernels do:
one pass takes the row's reductions (``sum(dy * y)``, ``sum(dy)``, or the norms'
``mean(g)`` and ``mean(g * xhat)`` with ``g = dy * weight``), a second writes ``dx``.
Statistics come from the forward pass (the softmax output, the norms' f32 ``mean`` and
``rstd`` from ``return_stats=True``), so nothing is recomputed over the row twice.

The norms' ``dweight`` / ``dbias`` are sums over all rows, reduced in two stages
(docs/decisions/029-two-stage-weight-gradients.md): the first kernel's programs each walk
every P-th block of BM rows and add their ``dy * xhat`` and ``dy`` into their own BM rows
of a zeroed ``[P * BM, N]`` f32 buffer (a plain read-modify-write of whole tiles, block
messages: no other program touches those rows); a second kernel sums the P * BM rows per
column.  No atomics, so the result is
deterministic: the same inputs give the same bits on every run.  Padding rows and columns
read as 0 (the tiles' padding, or ``operands.fit_rows``' zeros), so ``dy = 0`` there
contributes nothing and no mask is needed."""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from . import configs, operands
from .rows import FLOAT_INPUTS, _norm_operands, _rows, _unflat, _xt

#: at most this many rows in the f32 partial-sum buffer (first-stage programs times BM):
#: bounds the buffer (1024 x N x 4 bytes) and the second stage's reads, and leaves 256
#: programs (PVC's BM = 4) to keep every Xe core busy
MAX_PARTIAL_ROWS = 1024
F32 = np.dtype(np.float32)


@xd.jit
def softmax_backward_kernel(y, dy, dx, N, LOG: xt.constexpr, OUT: xt.constexpr,
                            BM: xt.constexpr, BC: xt.constexpr):
    """dx = y * (dy - sum(dy * y)) per row (y the softmax output); with LOG (y the
    log_softmax output), dx = dy - exp(y) * sum(dy)."""
    row = xt.program_id(0) * BM
    s = xt.zeros([BM, 1], xt.float32)
    ty = xt.init_tile(y, [row, 0], [BM, BC])
    tdy = xt.init_tile(dy, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        g = xt.astype(xt.load_tile(tdy), xt.float32)
        if LOG:
            s = s + xt.sum(g, axis=1)
        else:
            s = s + xt.sum(g * xt.astype(xt.load_tile(ty), xt.float32), axis=1)
        ty = xt.update_tile_offset(ty, 0, BC)
        tdy = xt.update_tile_offset(tdy, 0, BC)
    ty = xt.init_tile(y, [row, 0], [BM, BC])
    tdy = xt.init_tile(dy, [row, 0], [BM, BC])
    tdx = xt.init_tile(dx, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        g = xt.astype(xt.load_tile(tdy), xt.float32)
        v = xt.astype(xt.load_tile(ty), xt.float32)
        if LOG:
            d = g - xt.exp(v) * s
        else:
            d = v * (g - s)
        xt.store_tile(xt.astype(d, OUT), tdx)
        ty = xt.update_tile_offset(ty, 0, BC)
        tdy = xt.update_tile_offset(tdy, 0, BC)
        tdx = xt.update_tile_offset(tdx, 0, BC)


@xd.jit
def norm_backward_kernel(dy, x, w, mean, rstd, dx, pw, pb, rows, N, RMS: xt.constexpr,
                         OUT: xt.constexpr, BM: xt.constexpr, BC: xt.constexpr):
    """dx of layer norm (RMS norm with RMS) for the row blocks pid, pid + P, ... (P the
    programs), with xhat = (x - mean) * rstd and g = dy * w (w 1-D):
    dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) (RMS: no mean(g) term); adds the
    blocks' dy * xhat (and dy) into rows pid * BM .. pid * BM + BM - 1 of pw (and pb)."""
    pid = xt.program_id(0)
    for r0 in range(pid * BM, rows, xt.num_programs(0) * BM):
        rs = xt.load_tile(xt.init_tile(rstd, [r0], [BM]))[:, None]
        mu = xt.zeros([BM, 1], xt.float32)
        if not RMS:
            mu = xt.load_tile(xt.init_tile(mean, [r0], [BM]))[:, None]
        c1 = xt.zeros([BM, 1], xt.float32)
        c2 = xt.zeros([BM, 1], xt.float32)
        tx = xt.init_tile(x, [r0, 0], [BM, BC])
        tdy = xt.init_tile(dy, [r0, 0], [BM, BC])
        tw = xt.init_tile(w, [0], [BC])
        for c in range(0, N, BC):
            xhat = (xt.astype(xt.load_tile(tx), xt.float32) - mu) * rs
            g = xt.astype(xt.load_tile(tdy), xt.float32) * xt.astype(xt.load_tile(tw), xt.float32)
            c1 = c1 + xt.sum(g, axis=1)
            c2 = c2 + xt.sum(g * xhat, axis=1)
            tx = xt.update_tile_offset(tx, 0, BC)
            tdy = xt.update_tile_offset(tdy, 0, BC)
            tw = xt.update_tile_offset(tw, BC)
        c1 = c1 / N
        c2 = c2 / N
        tx = xt.init_tile(x, [r0, 0], [BM, BC])
        tdy = xt.init_tile(dy, [r0, 0], [BM, BC])
        tw = xt.init_tile(w, [0], [BC])
        tdx = xt.init_tile(dx, [r0, 0], [BM, BC])
        tpw = xt.init_tile(pw, [pid * BM, 0], [BM, BC])
        tpb = xt.init_tile(pb, [pid * BM, 0], [BM, BC])
        for c in range(0, N, BC):
            xhat = (xt.astype(xt.load_tile(tx), xt.float32) - mu) * rs
            g = xt.astype(xt.load_tile(tdy), xt.float32)
            gw = g * xt.astype(xt.load_tile(tw), xt.float32)
            if RMS:
                d = (gw - xhat * c2) * rs
            else:
                d = (gw - c1 - xhat * c2) * rs
            xt.store_tile(xt.astype(d, OUT), tdx)
            xt.store_tile(xt.load_tile(tpw) + g * xhat, tpw)
            if not RMS:
                xt.store_tile(xt.load_tile(tpb) + g, tpb)
            tx = xt.update_tile_offset(tx, 0, BC)
            tdy = xt.update_tile_offset(tdy, 0, BC)
            tw = xt.update_tile_offset(tw, BC)
            tdx = xt.update_tile_offset(tdx, 0, BC)
            tpw = xt.update_tile_offset(tpw, 0, BC)
            tpb = xt.update_tile_offset(tpb, 0, BC)


@xd.jit
def column_sum_kernel(partial, out, P, OUT: xt.constexpr, BM: xt.constexpr, BC: xt.constexpr):
    """out[j] = sum over the P rows of partial[:, j] (f32, rows in order), for BC columns per program."""
    col = xt.program_id(0) * BC
    acc = xt.zeros([BM, BC], xt.float32)
    t = xt.init_tile(partial, [0, col], [BM, BC])
    for r in range(0, P, BM):
        acc = acc + xt.load_tile(t)
        t = xt.update_tile_offset(t, BM, 0)
    xt.store_tile(xt.astype(xt.sum(acc, axis=0), OUT), xt.init_tile(out, [col], [BC]))


def softmax_backward(y, dy, dim: int = -1, *, out=None, target: str | None = None):
    """The gradient of :func:`~xetile_dsl.ops.softmax` from its saved output ``y``:
    ``dx = y * (dy - sum(dy * y))`` per row (f32 arithmetic, ``dx`` in ``y``'s dtype).

    Example: ``dx = ops.softmax_backward(ops.softmax(x), dy)``"""
    return _softmax_backward(y, dy, dim, out, target, log=False)


def log_softmax_backward(y, dy, dim: int = -1, *, out=None, target: str | None = None):
    """The gradient of :func:`~xetile_dsl.ops.log_softmax` from its saved output ``y``:
    ``dx = dy - exp(y) * sum(dy)`` per row.

    Example: ``dx = ops.log_softmax_backward(ops.log_softmax(x), dy)``"""
    return _softmax_backward(y, dy, dim, out, target, log=True)


def _softmax_backward(y, dy, dim, out, target, log: bool):
    op = "log_softmax_backward" if log else "softmax_backward"
    y2, shape, dtype = _rows(y, dim, op)
    dy2 = _like(dy, y2, shape, "dy", op)
    target = configs.resolve_target(target, y2)
    BM, BC = configs.row_tiles(target)
    buffer, result = operands.output_buffer(None if out is None else out.reshape(y2.shape), y2, y2.shape, dtype)
    softmax_backward_kernel.on(target)[(-(-y2.shape[0] // BM),)](
        operands.fit_rows(y2, "y"), operands.fit_rows(dy2, "dy"), buffer, y2.shape[1],
        LOG=log, OUT=_xt(dtype), BM=BM, BC=BC)
    return _unflat(operands.copy_back(buffer, result), shape, out)


def layer_norm_backward(dy, x, weight, mean, rstd, *, target: str | None = None):
    """``(dx, dweight, dbias)`` of :func:`~xetile_dsl.ops.layer_norm` from ``mean`` and
    ``rstd`` of ``layer_norm(..., return_stats=True)``.  ``dx`` has ``x``'s dtype and shape,
    ``dweight``/``dbias`` ``weight``'s dtype (f32 sums).  dweight and dbias are reduced over
    the rows in two stages (per-program f32 partial sums, then a column sum), without
    atomics: deterministic, the same bits on every run.

    Example: ``y, mean, rstd = ops.layer_norm(x, w, b, return_stats=True)`` then
    ``dx, dw, db = ops.layer_norm_backward(dy, x, w, mean, rstd)``"""
    return _norm_backward(dy, x, weight, mean, rstd, target, rms=False)


def rms_norm_backward(dy, x, weight, rstd, *, target: str | None = None):
    """``(dx, dweight)`` of :func:`~xetile_dsl.ops.rms_norm` from ``rstd`` of
    ``rms_norm(..., return_stats=True)``; deterministic two-stage dweight as
    :func:`layer_norm_backward`.

    Example: ``y, rstd = ops.rms_norm(x, w, return_stats=True)`` then
    ``dx, dw = ops.rms_norm_backward(dy, x, w, rstd)``"""
    return _norm_backward(dy, x, weight, None, rstd, target, rms=True)


def softmax_backward_result(y, dy, dim: int = -1) -> tuple[tuple, np.dtype]:
    """(shape, dtype) of what :func:`softmax_backward` / :func:`log_softmax_backward` return,
    checked as they check them, without running (for torch fake implementations)."""
    y2, shape, dtype = _rows(y, dim, "softmax_backward")
    _like(dy, y2, shape, "dy", "softmax_backward")
    return shape, dtype


def norm_backward_result(dy, x, weight, *, rms: bool) -> tuple[tuple, np.dtype, tuple, np.dtype]:
    """(dx shape, dx dtype, dweight shape, dweight dtype) of the norms' backward, checked as
    they check them, without running (for torch fake implementations)."""
    op = "rms_norm_backward" if rms else "layer_norm_backward"
    x2, shape, dtype, _, _ = _norm_operands(x, weight, None, rms)
    _like(dy, x2, shape, "dy", op)
    return shape, dtype, (x2.shape[1],), _grad_dtype(weight, dtype)


def _norm_backward(dy, x, weight, mean, rstd, target, rms: bool):
    op = "rms_norm_backward" if rms else "layer_norm_backward"
    x2, shape, dtype, _, _ = _norm_operands(x, weight, None, rms)
    rows, N = x2.shape
    w = operands.fit_rows(operands.as_array(weight, "weight").reshape(N), "weight")   # 1-D: one-row blocks
    dy2 = _like(dy, x2, shape, "dy", op)
    rstd1 = _stat(rstd, rows, "rstd", op)
    mean1 = rstd1 if rms else _stat(mean, rows, "mean", op)
    target = configs.resolve_target(target, x2)
    BM, BC = configs.norm_backward_tiles(target)
    P = min(-(-rows // BM), max(1, MAX_PARTIAL_ROWS // BM))
    width = max(N, operands.MIN_ROW_BYTES // F32.itemsize)
    pw = operands._zeros_like_input(x2, (P * BM, width), F32)
    # RMS norm writes no pb: a one-row stand-in (not pw: numpy arguments are copied in and
    # out one by one, so an array passed twice would come back as its last copy)
    pb = operands._zeros_like_input(x2, (BM if rms else P * BM, width), F32)
    buffer, result = operands.output_buffer(None, x2, x2.shape, dtype)
    norm_backward_kernel.on(target)[(P,)](
        operands.fit_rows(dy2, "dy"), operands.fit_rows(x2, "x"), w, mean1, rstd1, buffer, pw, pb,
        rows, N, RMS=rms, OUT=_xt(dtype), BM=BM, BC=BC)
    dx = _unflat(operands.copy_back(buffer, result), shape, None)
    grads = [_column_sum(p, x2, N, _grad_dtype(weight, dtype), target, BM, BC) for p in ((pw,) if rms else (pw, pb))]
    return (dx, *grads)


def _column_sum(partial, like, N: int, dtype: np.dtype, target: str, BM: int, BC: int):
    buffer, result = operands.output_buffer(None, like, (N,), dtype)
    column_sum_kernel.on(target)[(-(-N // BC),)](partial, buffer, partial.shape[0], OUT=_xt(dtype), BM=BM, BC=BC)
    return operands.copy_back(buffer, result)


def _grad_dtype(weight, x_dtype: np.dtype) -> np.dtype:
    """dweight's dtype: weight's (as torch's gradients), or x's for a weight dtype the
    kernels do not write (float64)."""
    d = operands.dtype_of(weight)
    return d if ("bfloat16" if d == operands.BF16 else d.name) in FLOAT_INPUTS else x_dtype


def _like(a, x2, shape: tuple, what: str, op: str):
    """``a`` (of ``x``'s shape and a float dtype) as ``x2``'s [rows, N]."""
    a = operands.as_array(a, what)
    if tuple(a.shape) != tuple(shape):
        raise UsageError(f"{op}: {what} must have the shape {tuple(shape)} of the forward input, got {tuple(a.shape)}")
    d = operands.dtype_of(a)
    if ("bfloat16" if d == operands.BF16 else d.name) not in FLOAT_INPUTS:
        raise UsageError(f"{op}: {what} is {d}; supported: float16, bfloat16, float32")
    return a.reshape(x2.shape)


def _stat(s, rows: int, what: str, op: str):
    """A row statistic (f32, ``rows`` elements: the forward pass's ``return_stats``) as a
    1-D array the kernel reads with block messages."""
    s = operands.as_array(s, what)
    if int(np.prod(s.shape, dtype=np.int64)) != rows or operands.dtype_of(s) != F32:
        raise UsageError(f"{op}: {what} must be float32 with {rows} elements (one per row, from "
                         f"return_stats=True), got {operands.dtype_of(s)} {tuple(s.shape)}")
    return operands.fit_rows(s.reshape(rows), what)
