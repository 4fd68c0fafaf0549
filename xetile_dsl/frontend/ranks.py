"""Logical ranks of tile values: 1-D values and 0-D reduction results in a 2-D IR.

The IR keeps every tile value 2-D (docs/decisions/025-one-dimensional-values.md): a 1-D
value of N elements is a ``vector<1xN>`` row, a tile of a 1-D array a ``!xetile.tile<1xN>``
over the ``[1, n]`` view of the array, and a 0-D value (a 1-D value reduced along its
only axis) a ``vector<1x1>``.  Only the frontend knows the difference, which matters for
axes, indexing, reshapes and the rank of broadcast results (numpy rules: a 1-D value
broadcasts exactly as a ``[1, N]`` row does, so the IR shapes never change).

``builder.ranks`` maps the SSA values whose logical rank is not their IR rank to it (0 or
1).  :func:`propagate` runs on every op the builder emits once a kernel has such a value:
an op's vector and tile results get the highest logical rank among its operands, where a
splat of a scalar (or of a 0-D value) counts for nothing, as a scalar does in numpy.  Ops
that change shapes on purpose (reductions, transposes, the matrix product) set their
result's rank themselves.  A value whose rank changes without its IR type changing
(``v[None, :]``) is a fresh SSA value made by a rank cast, an identity
``builtin.unrealized_conversion_cast`` that :func:`drop_rank_casts` removes when the
kernel is built, so that no stage after the frontend sees one.
"""
from __future__ import annotations

from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, UnrealizedConversionCastOp, VectorType
from xdsl.ir import Operation, OpResult, SSAValue

from ..dialects import xetile

#: ops whose result rank is set by their builder, not by :func:`propagate`
_SETS_OWN_RANK = (xetile.TileReduceOp, xetile.TileTransposeOp, xetile.TileMMAOp, UnrealizedConversionCastOp)
_SHAPED = (VectorType, xetile.TileType)


def ir_rank(value) -> int:
    """The IR rank of a vector or tile value (2), 0 for anything else."""
    t = getattr(value, "type", None)
    return len(t.get_shape()) if isinstance(t, _SHAPED) else 0


def rank_of(builder, value) -> int:
    """The logical rank of ``value``: 1 for a 1-D value or tile, 0 for a 0-D value, else its
    IR rank (2 for tile values, 0 for scalars and numbers)."""
    if isinstance(value, SSAValue):
        hit = builder.ranks.get(value)
        if hit is not None:
            return hit
    return ir_rank(value)


def logical_shape(builder, value) -> tuple[int, ...]:
    """The shape the user sees: ``(N,)`` for a 1-D value, ``()`` for a 0-D one."""
    shape = tuple(value.type.get_shape())
    return shape[2 - rank_of(builder, value):]


def fmt_shape(shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def mark(builder, value: SSAValue, rank: int) -> SSAValue:
    """Record that ``value`` (a fresh SSA value) has logical rank ``rank``."""
    if rank == ir_rank(value):
        builder.ranks.pop(value, None)
    else:
        builder.ranks[value] = rank
    return value


def with_rank(builder, value: SSAValue, rank: int) -> SSAValue:
    """``value`` seen with logical rank ``rank`` (same IR type): ``value`` itself when it has
    that rank already, else a rank cast of it."""
    if rank_of(builder, value) == rank:
        return value
    cast = builder.emit(UnrealizedConversionCastOp.get([value], [value.type]))
    return mark(builder, cast.results[0], rank)


def drop_rank_casts(module: ModuleOp) -> None:
    """Remove the frontend's rank casts: each result is replaced by its operand."""
    for op in list(module.walk()):
        if isinstance(op, UnrealizedConversionCastOp) and len(op.operands) == 1 and \
                op.operands[0].type == op.results[0].type:
            op.results[0].replace_all_uses_with(op.operands[0])
            op.detach()
            op.erase()


def _neutral(builder, value: SSAValue) -> bool:
    """A splat of a scalar or of a 0-D value: rank-neutral, as a scalar in numpy."""
    owner = value.owner if isinstance(value, OpResult) else None
    if isinstance(owner, arith.ConstantOp):
        attr = owner.value
        return isinstance(attr, DenseIntOrFPElementsAttr) and len(attr.get_values()) == 1
    if isinstance(owner, vector.BroadcastOp):
        return not isinstance(owner.source.type, VectorType) or rank_of(builder, owner.source) == 0
    if isinstance(owner, xetile.TileBroadcastOp):
        return rank_of(builder, owner.operands[0]) == 0
    return False


def propagate(builder, op: Operation) -> None:
    """Give ``op``'s vector and tile results the logical rank its operands imply."""
    if isinstance(op, _SETS_OWN_RANK) or not any(v in builder.ranks for v in op.operands):
        return
    ranks = [rank_of(builder, v) for v in op.operands if isinstance(v.type, _SHAPED)
             and (v in builder.ranks or not _neutral(builder, v))]
    rank = max(ranks, default=2)
    if rank == 2:
        return
    for res in op.results:
        if isinstance(res.type, _SHAPED) and tuple(res.type.get_shape())[:2 - rank] == (1,) * (2 - rank):
            builder.ranks[res] = rank


def carry(builder, olds, news) -> None:
    """Values carried through a loop or out of a branch (``news``) keep the logical rank of
    the values they stand for (``olds``)."""
    for old, new in zip(olds, news):
        if isinstance(old, SSAValue) and old in builder.ranks and isinstance(new, SSAValue):
            builder.ranks[new] = builder.ranks[old]


def check_same(builder, node, name: str, a, b, where: str) -> None:
    """A located error when ``a`` and ``b`` (one name's two values) differ in logical rank."""
    if isinstance(a, SSAValue) and isinstance(b, SSAValue) and ir_rank(a) and ir_rank(b):
        if any(v not in builder.ranks and _neutral(builder, v) for v in (a, b)):
            return  # a number or scalar splat takes the other value's rank
        ra, rb = rank_of(builder, a), rank_of(builder, b)
        if ra != rb:
            raise builder.error(node, f"rank mismatch: {name!r} is {ra}-D {where[0]} but {rb}-D {where[1]}; "
                                f"make both the same, e.g. with v[None, :] (1-D -> row) or xt.reshape(v, [N])")


__all__ = ["carry", "check_same", "drop_rank_casts", "fmt_shape", "ir_rank", "logical_shape", "mark",
           "propagate", "rank_of", "with_rank"]
