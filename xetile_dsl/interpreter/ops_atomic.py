"""Interpreter semantics of the atomics on one element (``xetile.atomic_rmw_scalar``,
``xetile.atomic_cas_scalar``) and of ``xetile.fence``.

Memory order needs no modelling here: one program runs at a time and every write is
visible at once, which is a legal execution of every order.  What the interpreter does
model is the interleaving of programs at atomics (:mod:`.programs`): each atomic and
fence passes the turn to the next live program.  An element index outside the array
touches nothing and returns 0, as on the compiled flavours.
"""
from __future__ import annotations

import numpy as np

from ..dialects import xetile
from ..dialects.xetile import scalar_atomic_subgroups_error
from .engine import Run, impl
from .memory import ArrayRef
from .ops_xetile import _ATOMIC
from .programs import pass_turn
from .values import InterpreterError, cast


def _combine(kind: str, old, value):
    with np.errstate(all="ignore"):
        return _ATOMIC[kind](old, value)


def _slot(run: Run, op, ref: ArrayRef, indices) -> int | None:
    subgroups = run.launch.num_subgroups if run.workgroup is None else run.workgroup.num_subgroups
    if subgroups > 1:
        raise InterpreterError(scalar_atomic_subgroups_error(op.name, subgroups))
    if any(not 0 <= int(i) < n for i, n in zip(indices, ref.sizes)):
        return None
    return ref.offset + sum(int(i) * s for i, s in zip(indices, ref.strides))


def _turn(run: Run, op, changed: bool) -> None:
    pass_turn(run, op, changed)


@impl(xetile.AtomicRMWScalarOp)
def _atomic_rmw_scalar(run: Run, op, value, ref: ArrayRef, *indices):
    at = _slot(run, op, ref, indices)
    if at is None:
        _turn(run, op, False)
        return ref.dtype.type(0)
    data = ref.alloc.data
    old = data[at]
    new = cast(_combine(op.kind.data, old, value), data.dtype)
    data[at] = new
    _turn(run, op, np.asarray(old).tobytes() != np.asarray(new, data.dtype).tobytes())
    return old


@impl(xetile.AtomicCASScalarOp)
def _atomic_cas_scalar(run: Run, op, ref: ArrayRef, *rest):
    *indices, cmp, value = rest
    at = _slot(run, op, ref, indices)
    old = ref.dtype.type(0) if at is None else ref.alloc.data[at]
    swapped = at is not None and old == cmp
    if swapped:
        ref.alloc.data[at] = value
    _turn(run, op, bool(swapped) and old != value)
    return old


@impl(xetile.FenceOp)
def _fence(run: Run, op):
    _turn(run, op, False)
