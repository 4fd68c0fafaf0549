"""Row edge masks of masked stores: ``store_tile(v, t, mask=rows + r0 < n)`` as a block store.

A store mask that keeps the tile's first rows only -- a comparison (``<``, ``<=``, or ``>``,
``>=`` the other way round, signed) of an arange-derived column (``xt.transpose(xt.arange(0,
BM))`` plus a scalar or a constant) with a scalar or a constant bound, possibly broadcast
along the columns, or several of those and'ed -- shrinks the tile's row extent to the
rows it keeps, the way rows past the array's end are already dropped: the store stays a
2D block message and no element outside the kept rows is written (nor read).  A tile
that keeps no row at all becomes a one-row extent with the tile below it, so it writes
nothing either.

Only rows shrink: a 2D block surface's width must stay at least 64 bytes (and, for 8- and
16-bit data, a multiple of 4 bytes), which a width clamped at run time cannot promise, so
column masks and all other masks are stored per lane (``masks.py``).  The bound is computed
in index arithmetic from the comparison's own scalars; it equals the kernel's comparison
as long as ``row + offset`` does not overflow the comparison's integer type.
"""
from __future__ import annotations

from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerType, VectorType
from xdsl.ir import SSAValue

from ..dialects import _arith_vector as av
from ..dialects import _asm, xetile
from ..dialects.types import is_unsigned
from . import semantic as sem
from .ir_values import INDEX

_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
#: a swapped comparison: ``b > a`` is ``a < b``
_SWAPPED = {"sgt": "slt", "sge": "sle"}


def row_limits(mask: SSAValue, along: int = 0):
    """For a row edge mask, its conjuncts as (bound, offsets, inclusive): a row ``i`` of the
    tile is kept where ``i + sum(offsets) < bound`` (``<=`` when inclusive) for each; the
    bound and offsets are ints or scalar SSA values.  None for any other mask.  ``along=1``:
    the same for a column edge mask (a ``[1, cols]`` comparison of an arange row), which
    the column-major (``order=(0, 1)``) tiles use: their view's columns are the memory's rows."""
    owner = mask.owner
    if isinstance(owner, xetile.TileBroadcastOp) and list(_asm.as_int_list(owner.broadcast_dims)) == [1 - along]:
        return row_limits(owner.source, along)
    if isinstance(owner, arith.AndIOp):
        left, right = row_limits(owner.lhs, along), row_limits(owner.rhs, along)
        return None if left is None or right is None else left + right
    if not isinstance(owner, av.CmpiOp) or not _signed(owner.lhs.type):
        return None
    pred = _PREDICATES[owner.predicate.value.data]
    lhs, rhs = owner.lhs, owner.rhs
    if pred in _SWAPPED:
        pred, lhs, rhs = _SWAPPED[pred], rhs, lhs
    if pred not in ("slt", "sle"):
        return None
    offsets, bound = _row_index(lhs, along), _uniform(rhs)
    if offsets is None or bound is None:
        return None
    return [(bound, offsets, pred == "sle")]


def clamp_rows(builder, init: xetile.InitTileOp, tile_type, offsets, limits, along: int = 0) -> SSAValue:
    """A tile like ``init``'s at ``offsets`` whose row extent (``along=1``: column extent)
    keeps only the rows (columns) ``limits`` (from :func:`row_limits`) keep."""
    rows = init.sizes[along]
    for bound, steps, inclusive in limits:
        limit = builder.emit(arith.AddiOp(offsets[along], _index(builder, bound))).result
        for step in steps:
            limit = builder.emit(arith.SubiOp(limit, _index(builder, step))).result
        if inclusive:
            limit = builder.emit(arith.AddiOp(limit, builder.index(1, None))).result
        rows = builder.emit(arith.MinSIOp(rows, limit)).result
    one = builder.index(1, None)
    empty = builder.emit(av.CmpiOp(rows, one, "slt")).result  # no row kept: one row, the tile below it
    rows = builder.emit(av.SelectOp(empty, one, rows)).result
    row = builder.emit(av.SelectOp(empty, one, offsets[along])).result
    if along:
        return builder.emit(xetile.InitTileOp(init.source, [offsets[0], row], tile_type,
                                              [init.sizes[0], rows], list(init.strides))).tile
    return builder.emit(xetile.InitTileOp(init.source, [row, offsets[1]], tile_type,
                                          [rows, init.sizes[1]], list(init.strides))).tile


def _signed(t) -> bool:
    elem = t.element_type if isinstance(t, VectorType) else t
    return isinstance(elem, IndexType) or (isinstance(elem, IntegerType) and elem.width.data > 1
                                            and not is_unsigned(elem))


def _row_index(value: SSAValue, along: int = 0):
    """The offsets ``s`` (ints, scalar values) with ``value[i, 0] == i + sum(s)`` for a
    ``[rows, 1]`` value (``along=0``; ``value[0, i]`` of a ``[1, cols]`` row for ``along=1``),
    or None.  A column may be a transposed row: ``rows[:, None]`` of a 1-D ``r0 + arange``."""
    shape = sem.shape_of(value)
    if shape is None or len(shape) != 2 or shape[1 - along] != 1:
        return None
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        values = [int(v) for v in owner.value.get_values()]
        if len(values) == shape[along] and values == list(range(values[0], values[0] + shape[along])):
            return [values[0]]
        return None
    if isinstance(owner, arith.AddiOp):
        for a, b in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            steps, step = _row_index(a, along), _uniform(b)
            if steps is not None and step is not None:
                return steps + [step]
    if along == 0 and isinstance(owner, xetile.TileTransposeOp):
        return _row_index(owner.operands[0], 1)
    return None


def _uniform(value: SSAValue):
    """The one value of a splat (an int, or the broadcast scalar), or None."""
    owner = value.owner
    if isinstance(owner, vector.BroadcastOp) and not sem.is_tile(owner.source):
        return owner.source
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, DenseIntOrFPElementsAttr):
        values = {int(v) for v in owner.value.get_values()}
        return values.pop() if len(values) == 1 else None
    return None


def _index(builder, value) -> SSAValue:
    return builder.index(value, None) if isinstance(value, int) else sem.convert(builder, value, INDEX, None)


__all__ = ["clamp_rows", "row_limits"]
