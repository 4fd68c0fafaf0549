"""IR builders of the shape ops between 1-D and 2-D values: ``xt.expand_dims``,
``xt.reshape`` and the subscripts ``v[:, None]`` (column), ``v[None, :]`` (row).

Values are at most 2-D and a 1-D value is a ``[1, N]`` row in the IR (:mod:`.ranks`), so
a row of a 1-D value is a rank cast, a column a ``tile_transpose`` (a transposed
constant for constants), and only reshapes that add or drop size-1 dimensions exist.
"""
from __future__ import annotations

import ast

from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from ..dialects import xetile
from . import ranks
from . import semantic as sem
from .ir_values import describe
from .language_registry import LANGUAGE
from .tile_ops import _bind
from .value_ops import _transposed_constant


def transposed_row(builder, value: SSAValue) -> SSAValue:
    """``value`` ([1, N] or [N, 1]) with its two dimensions swapped, as a 2-D value."""
    m, n = value.type.get_shape()
    folded = _transposed_constant(builder, value, m, n)
    if folded is not None:
        return folded
    return builder.emit(xetile.TileTransposeOp(value, [1, 0], VectorType(sem.elem_of(value), [n, m]))).result

def column(builder, value: SSAValue) -> SSAValue:
    """The ``[N, 1]`` column of a 1-D value (a transposed constant for constants)."""
    return transposed_row(builder, value)


def _tile_value(builder, arg: ast.AST, op: str) -> SSAValue:
    value = builder.visit(arg)
    if not sem.is_tile(value):
        raise builder.error(arg, f"type mismatch: {op} expects a tile value, got {describe(value)}")
    return value


def expand(builder, value: SSAValue, axis: int, node: ast.AST) -> SSAValue:
    """``value`` with a size-1 dimension inserted at ``axis`` (numpy's expand_dims)."""
    rank = ranks.rank_of(builder, value)
    if rank == 2:
        raise builder.error(node, f"expand_dims needs a 1-D or 0-D value, but this is a 2-D tile value "
                            f"{list(value.type.get_shape())}: values have at most 2 dimensions")
    if axis < 0:
        axis += rank + 1
    if not 0 <= axis <= rank:
        raise builder.error(node, f"axis {axis} is out of range for a {rank}-D value (legal: 0..{rank} or "
                            f"-{rank + 1}..-1)")
    if rank == 0:
        return ranks.with_rank(builder, value, 1)
    return ranks.with_rank(builder, value, 2) if axis == 0 else column(builder, value)


def reshape(builder, value: SSAValue, shape: tuple, node: ast.AST) -> SSAValue:
    """``value`` with the logical ``shape`` (the same elements in row-major order); only
    reshapes that add or drop size-1 dimensions (1-D <-> row or column, 0-D <-> one
    element) are supported, as values are at most 2-D."""
    src = ranks.logical_shape(builder, value)
    count = 1
    for d in src:
        count *= d
    want = 1
    for d in shape:
        want *= d
    if want != count:
        raise builder.error(node, f"reshape: cannot reshape a value of shape {ranks.fmt_shape(src)} ({count} "
                            f"elements) into {ranks.fmt_shape(shape)} ({want} elements): the element count "
                            f"must stay the same")
    if len(shape) > 2:
        raise builder.error(node, f"reshape: values have at most 2 dimensions, got {ranks.fmt_shape(shape)}")
    ir_shape = tuple(value.type.get_shape())
    target = (1,) * (2 - len(shape)) + tuple(shape)
    if target == ir_shape:
        return ranks.with_rank(builder, value, len(shape))
    if target == ir_shape[::-1] and 1 in ir_shape:
        flipped = column(builder, value) if ir_shape[0] == 1 else _row(builder, value)
        return ranks.with_rank(builder, flipped, len(shape))
    raise builder.error(node, f"reshape: {ranks.fmt_shape(src)} -> {ranks.fmt_shape(shape)} moves elements "
                        f"between rows; only reshapes that add or drop size-1 dimensions are supported "
                        f"(1-D <-> [1, N] row or [N, 1] column)")


def _row(builder, value: SSAValue) -> SSAValue:
    """The ``[1, N]`` row of an ``[N, 1]`` column."""
    return transposed_row(builder, value)


def subscript(builder, value: SSAValue, node: ast.Subscript) -> SSAValue:
    """``v[:, None]`` (column), ``v[None, :]`` (row), ``v[:]`` of a 1-D value."""
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    kinds = ["new" if isinstance(i, ast.Constant) and i.value is None else
             "all" if isinstance(i, ast.Slice) and i.lower is i.upper is i.step is None else "other" for i in items]
    rank = ranks.rank_of(builder, value)
    if "other" in kinds:
        raise builder.error(node, "a tile value can be indexed only with ':' and None (v[:, None] makes a column "
                            "of a 1-D value, v[None, :] a row); elements are selected with xt.where(cond, x, y)")
    if kinds.count("all") != rank:
        raise builder.error(node, f"{'v[' + ', '.join(':' if k == 'all' else 'None' for k in kinds) + ']'} "
                            f"indexes {kinds.count('all')} dimension(s), but this is a {rank}-D tile value "
                            f"{ranks.fmt_shape(ranks.logical_shape(builder, value))}; v[:, None] and v[None, :] "
                            f"take a 1-D value")
    if rank + kinds.count("new") > 2:
        raise builder.error(node, "values have at most 2 dimensions")
    if kinds == ["all"] or kinds == ["all", "all"]:
        return value
    if rank == 0:
        return ranks.with_rank(builder, value, len(kinds))
    return expand(builder, value, kinds.index("new"), node)


@LANGUAGE.register("expand_dims")
def build_expand_dims(builder, node: ast.Call):
    args = _bind(builder, node)
    value = _tile_value(builder, args["x"], "expand_dims")
    axis = builder.constexpr(args["axis"], "the axis")
    if not isinstance(axis, int):
        raise builder.error(args["axis"], f"expand_dims: axis must be an integer, got {axis!r}")
    return expand(builder, value, axis, node)


@LANGUAGE.register("reshape")
def build_reshape(builder, node: ast.Call):
    args = _bind(builder, node)
    value = _tile_value(builder, args["x"], "reshape")
    shape = builder.constexpr(args["shape"], "the shape")
    shape = (shape,) if isinstance(shape, int) else shape
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d > 0 for d in shape):
        raise builder.error(args["shape"], f"reshape: the shape must be a list of positive constexpr ints, "
                            f"got {shape!r}")
    return reshape(builder, value, tuple(shape), node)


__all__ = ["build_expand_dims", "build_reshape", "expand", "reshape", "subscript", "transposed_row"]
