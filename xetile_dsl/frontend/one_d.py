"""1-D arrays and tiles, and the shape ops between 1-D and 2-D values (Triton style).

A rank-1 kernel argument is a ``memref<?xT>``; :func:`init_tile_1d` views it as the
``[1, n]`` array (sizes ``[1, n]``, row stride ``n`` rounded up to the target's pitch
alignment: one row, so the stride addresses nothing, but a 2D block message still checks
it) and makes a ``[1, BLOCK]`` tile of it that the frontend knows as 1-D
(:mod:`.ranks`).  ``v[:, None]``, ``v[None, :]``, ``xt.expand_dims`` and ``xt.reshape``
turn 1-D values into columns and rows and back (:mod:`.shape_ops`).
"""
from __future__ import annotations

import ast

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue

from ..dialects import xetile
from ..dialects.types import bit_width
from . import ranks
from .ir_values import describe


def is_1d_array(base) -> bool:
    return isinstance(base, SSAValue) and isinstance(base.type, MemRefType) and len(base.type.get_shape()) == 1


def view_of(builder, base: SSAValue):
    """(sizes, strides) of the ``[1, n]`` view of a 1-D array (index values), built once at
    the kernel's entry (``builder.row_views``), where the array is bound."""
    (n,), _ = builder.array_meta[base]
    align = builder.target.row_view_align(bit_width(base.type.element_type))
    pitch = n
    if align > 1:  # n rounded up to a multiple of align: (n + align - 1) // align * align
        bump = builder.emit(arith.AddiOp(n, builder.index(align - 1, None))).result
        if align & (align - 1) == 0:
            pitch = builder.emit(arith.AndIOp(bump, builder.index(-align, None))).result
        else:
            blocks = builder.emit(arith.DivUIOp(bump, builder.index(align, None))).result
            pitch = builder.emit(arith.MuliOp(blocks, builder.index(align, None))).result
    return [builder.index(1, None), n], [pitch, builder.index(1, None)]


def init_tile_1d(builder, node: ast.Call, args: dict, base: SSAValue, offsets):
    """``xt.init_tile(x, [off], [BLOCK])`` on a 1-D array: a 1-D tile."""
    if "shape" not in args:
        raise builder.error(node, "init_tile needs a shape, e.g. init_tile(x, [off], [BLOCK]) for a 1-D array")
    for key in ("order", "wg_map"):
        if key in args and not _is_none(args[key]):
            raise builder.error(args[key], f"init_tile: {key}= is for tiles of 2-D arrays; a 1-D array has one "
                                f"dimension (view it as a 2-D array to use {key}=)")
    offsets = _one(builder, args["offsets"], offsets, "a 1-D array takes one offset, e.g. [pid * BLOCK]", False)
    shape = builder.visit(args["shape"])
    (block,) = _one(builder, args["shape"], shape, "a 1-D array's tile takes one size, e.g. [BLOCK]", True)
    sizes, strides = builder.row_views[base]
    tile_type = xetile.TileType([1, block], base.type.element_type, xetile.TileAttr(order=(1, 0)))
    zero = builder.index(0, None)
    tile = builder.emit(xetile.InitTileOp(base, [zero, builder.index(offsets[0], args["offsets"])], tile_type,
                                          sizes, strides)).tile
    return ranks.mark(builder, tile, 1)


def _one(builder, arg, values, legal: str, constexpr: bool) -> list:
    if not isinstance(values, (list, tuple)) or len(values) != 1:
        got = f"{len(values)} values" if isinstance(values, (list, tuple)) else describe(values)
        raise builder.error(arg, f"init_tile: {legal}; got {got}")
    if constexpr and (isinstance(values[0], SSAValue) or not isinstance(values[0], int) or values[0] <= 0):
        raise builder.error(arg, f"the tile size must be a positive compile-time integer (a constexpr), got "
                            f"{values[0]!r}")
    return list(values)


def scatter_span(builder, base: SSAValue):
    """Elements of a 1-D array (a scattered lane is inside when ``0 <= offset < n``)."""
    (n,), _ = builder.array_meta[base]
    return n


def update_deltas(builder, node: ast.Call, args: dict, tile: SSAValue):
    """The (row, col) deltas of ``update_tile_offset``: one delta moves a 1-D tile."""
    one_d = ranks.rank_of(builder, tile) == 1
    given = "col_delta" in args and not _is_none(args["col_delta"])
    if one_d and given:
        raise builder.error(node, "update_tile_offset: a 1-D tile moves by one delta, e.g. "
                            "xt.update_tile_offset(t, BLOCK)")
    if not one_d and not given:
        raise builder.error(node, "update_tile_offset: a 2-D tile moves by two deltas (row_delta, col_delta); "
                            "one delta is for tiles of 1-D arrays")
    if one_d:
        return builder.index(0, None), builder.index(builder.visit(args["row_delta"]), args["row_delta"])
    return (builder.index(builder.visit(args["row_delta"]), args["row_delta"]),
            builder.index(builder.visit(args["col_delta"]), args["col_delta"]))


def shape_arg(builder, arg: ast.AST, what: str):
    """(IR shape, logical rank) of a constexpr shape of one or two positive ints."""
    shape = builder.constexpr(arg, what)
    if not isinstance(shape, (list, tuple)) or len(shape) not in (1, 2) or \
            not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
        raise builder.error(arg, f"{what} must be a list of one or two positive compile-time integers "
                            f"(constexprs), got {shape!r}")
    return [1] * (2 - len(shape)) + list(shape), len(shape)



__all__ = ["init_tile_1d", "is_1d_array", "scatter_span", "shape_arg", "update_deltas", "view_of"]


def _is_none(arg: ast.AST) -> bool:
    return isinstance(arg, ast.Constant) and arg.value is None
