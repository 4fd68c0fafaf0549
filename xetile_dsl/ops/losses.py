"""Losses: cross entropy over the last dimension of logits, fused and chunked for large
vocabularies: ``cross_entropy``, ``cross_entropy_forward``, ``cross_entropy_backward``.

The forward kernel walks each row once in BC-column chunks with softmax's online maximum
and sum, and picks the target's logit out of the chunk that holds it with a compare of
the column index against the row's target (``cols == target``, summed over the chunk):
the row's ``lse = max + log(sum exp(x - max))`` and ``loss = lse - x[target]`` come out
of one pass, so a 50K-class row is read once and no probabilities are stored.  The
backward kernel reads the logits once more and writes
``dlogits = (exp(x - lse) - onehot(target)) * dloss`` per row.  Rows whose target is
``ignore_index`` have loss 0 and gradient 0 (torch's semantics)."""
from __future__ import annotations

import numpy as np

import xetile_dsl as xd
import xetile_dsl.language as xt

from ..errors import UsageError
from . import configs, operands
from .rows import NEG_BIG, _rows, _xt

F32 = np.dtype(np.float32)
REDUCTIONS = ("mean", "sum", "none")


@xd.jit
def cross_entropy_forward_kernel(x, t, loss, lse, N, ignore_index, BM: xt.constexpr, BC: xt.constexpr):
    """loss[r] = logsumexp(x[r, :N]) - x[r, t[r]] (0 where t[r] == ignore_index) and
    lse[r] = logsumexp(x[r, :N]), for BM rows per program, in one online pass."""
    row = xt.program_id(0) * BM
    target = xt.astype(xt.load_tile(xt.init_tile(t, [row], [BM])), xt.int32)[:, None]
    m = xt.full([BM, 1], NEG_BIG, xt.float32)
    s = xt.zeros([BM, 1], xt.float32)
    picked = xt.zeros([BM, 1], xt.float32)
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        cols = xt.arange(0, BC) + c
        v = xt.where(cols < N, xt.astype(xt.load_tile(tx), xt.float32), float("-inf"))
        picked = picked + xt.sum(xt.where(cols == target, v, 0.0), axis=1)
        m_new = xt.maximum(m, xt.max(v, axis=1))
        s = s * xt.exp(m - m_new) + xt.sum(xt.exp(v - m_new), axis=1)
        m = m_new
        tx = xt.update_tile_offset(tx, 0, BC)
    total = m + xt.log(s)
    row_loss = xt.where(target == ignore_index, 0.0, total - picked)
    xt.store_tile(xt.reshape(row_loss, [BM]), xt.init_tile(loss, [row], [BM]))
    xt.store_tile(xt.reshape(total, [BM]), xt.init_tile(lse, [row], [BM]))


@xd.jit
def cross_entropy_backward_kernel(x, t, lse, dloss, dx, N, ignore_index, OUT: xt.constexpr,
                                  BM: xt.constexpr, BC: xt.constexpr):
    """dx[r, :N] = (exp(x[r] - lse[r]) - onehot(t[r])) * dloss[r] (0 where t[r] == ignore_index)."""
    row = xt.program_id(0) * BM
    target = xt.astype(xt.load_tile(xt.init_tile(t, [row], [BM])), xt.int32)[:, None]
    total = xt.load_tile(xt.init_tile(lse, [row], [BM]))[:, None]
    scale = xt.where(target == ignore_index, 0.0, xt.load_tile(xt.init_tile(dloss, [row], [BM]))[:, None])
    tx = xt.init_tile(x, [row, 0], [BM, BC])
    tdx = xt.init_tile(dx, [row, 0], [BM, BC])
    for c in range(0, N, BC):
        cols = xt.arange(0, BC) + c
        p = xt.exp(xt.astype(xt.load_tile(tx), xt.float32) - total)
        d = (p - xt.where(cols == target, 1.0, 0.0)) * scale
        xt.store_tile(xt.astype(d, OUT), tdx)
        tx = xt.update_tile_offset(tx, 0, BC)
        tdx = xt.update_tile_offset(tdx, 0, BC)


def cross_entropy(logits, targets, reduction: str = "mean", ignore_index: int = -100, *,
                  target: str | None = None):
    """Cross entropy of ``logits`` [..., C] (f16, bf16, f32) against integer class
    ``targets`` [...] as torch's ``F.cross_entropy``: ``reduction="mean"`` averages over
    the rows whose target is not ``ignore_index``, ``"sum"`` sums, ``"none"`` gives the f32
    loss per row in ``targets``' shape.  Targets must be in ``[0, C)`` or ``ignore_index``.

    Example: ``loss = ops.cross_entropy(np.float32([[2, 1, 0]]), np.int64([0]))``"""
    check_reduction(reduction)
    loss, _ = _forward(logits, targets, ignore_index, target, "cross_entropy")
    shape = tuple(operands.as_array(targets, "targets").shape)
    if reduction == "none":
        return loss.reshape(shape)
    if reduction == "sum":
        return loss.sum()
    kept = (operands.as_array(targets, "targets") != ignore_index).sum()
    mean = loss.sum() / kept   # torch's: NaN when every target is ignored
    return np.float32(mean) if isinstance(loss, np.ndarray) else mean


def check_reduction(reduction: str) -> None:
    if reduction not in REDUCTIONS:
        raise UsageError(f"cross_entropy: reduction={reduction!r}; supported: {', '.join(map(repr, REDUCTIONS))}")


def cross_entropy_forward(logits, targets, ignore_index: int = -100, *, target: str | None = None):
    """``(loss_rows, lse)``: each row's f32 loss ``lse - logits[row, target]`` (0 for
    ``ignore_index``) and f32 ``lse = logsumexp(logits[row])``, as 1-D arrays over the rows
    (the leading dimensions flattened); ``lse`` is what :func:`cross_entropy_backward` takes.

    Example: ``loss_rows, lse = ops.cross_entropy_forward(logits, targets)``"""
    return _forward(logits, targets, ignore_index, target, "cross_entropy_forward")


def _forward(logits, targets, ignore_index, target, op: str):
    x2, t1 = _operands(logits, targets, op)
    rows, N = x2.shape
    target = configs.resolve_target(target, x2)
    BM, BC = configs.row_tiles(target)
    loss, loss_result = operands.output_buffer(None, x2, (rows,), F32)
    lse, lse_result = operands.output_buffer(None, x2, (rows,), F32)
    cross_entropy_forward_kernel.on(target)[(-(-rows // BM),)](
        operands.fit_rows(x2, "logits"), operands.fit_rows(t1, "targets"), loss, lse, N, int(ignore_index), BM=BM, BC=BC)
    return operands.copy_back(loss, loss_result), operands.copy_back(lse, lse_result)


def cross_entropy_backward(logits, targets, lse, dloss_rows, ignore_index: int = -100, *,
                           target: str | None = None):
    """``dlogits = (softmax(logits) - onehot(targets)) * dloss_rows[:, None]`` in ``logits``'
    dtype and shape, from ``lse`` of :func:`cross_entropy_forward` and the gradient of each
    row's loss (f32 [rows]; for ``reduction="mean"`` it is ``dloss / kept_rows``); rows with
    ``ignore_index`` get 0.

    Example: ``dx = ops.cross_entropy_backward(logits, targets, lse, np.full(rows, 1 / rows, np.float32))``"""
    op = "cross_entropy_backward"
    x2, t1 = _operands(logits, targets, op)
    rows, N = x2.shape
    lse1, dloss1 = (_row_f32(a, rows, what, op) for a, what in ((lse, "lse"), (dloss_rows, "dloss_rows")))
    dtype = operands.dtype_of(x2)
    target = configs.resolve_target(target, x2)
    BM, BC = configs.row_tiles(target)
    buffer, result = operands.output_buffer(None, x2, x2.shape, dtype)
    cross_entropy_backward_kernel.on(target)[(-(-rows // BM),)](
        operands.fit_rows(x2, "logits"), operands.fit_rows(t1, "targets"), lse1, dloss1, buffer, N, int(ignore_index),
        OUT=_xt(dtype), BM=BM, BC=BC)
    return operands.copy_back(buffer, result).reshape(tuple(operands.as_array(logits, "logits").shape))


def cross_entropy_result(logits, targets, op: str = "cross_entropy") -> tuple[int, np.dtype]:
    """(rows, logits dtype) of the cross entropy op ``op``, checked as it checks them,
    without running (for torch fake implementations)."""
    x2, _ = _operands(logits, targets, op)
    return x2.shape[0], operands.dtype_of(x2)


def _operands(logits, targets, op: str):
    """(logits as [rows, C], targets as a 1-D integer array of rows elements), checked."""
    x2, shape, _ = _rows(logits, -1, op)
    t = operands.as_array(targets, "targets")
    if tuple(t.shape) != shape[:-1]:
        raise UsageError(f"{op}: targets must have the shape {shape[:-1]} of logits without its class "
                         f"dimension, got {tuple(t.shape)}")
    d = operands.dtype_of(t)
    if d.kind not in "iu":
        raise UsageError(f"{op}: targets must be integer class indices (int32 or int64), got {d}")
    return x2, t.reshape(x2.shape[0])


def _row_f32(a, rows: int, what: str, op: str):
    a = operands.as_array(a, what)
    if int(np.prod(a.shape, dtype=np.int64)) != rows or operands.dtype_of(a) != F32:
        raise UsageError(f"{op}: {what} must be float32 with {rows} elements (one per row), got "
                         f"{operands.dtype_of(a)} {tuple(a.shape)}")
    return operands.fit_rows(a.reshape(rows), what)
