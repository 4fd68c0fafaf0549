"""N-D arrays in a kernel: rank-3 and rank-4 array arguments and their 2-D slices.

A tile is always 2-D.  An array of rank R > 2 is tiled through the 2-D slice its leading
R-2 indices select, in either spelling:

* ``q[z, h]`` (fewer indices than the rank): the 2-D slice, a value usable as the base of
  ``xt.init_tile`` (and whose ``.shape`` is the slice's two extents);
* ``xt.init_tile(q, [z, h, row, col], [1, 1, BM, BN])``: as many offsets as the rank, the
  leading tile extents 1.

Both fold the leading indices into the base address, ``offset = z*stride0 + h*stride1``
elements, and view the trailing two dimensions with their own extents and row stride: a
``memref.reinterpret_cast`` of the argument to ``memref<?x?xT, strided<[?, 1], offset: ?>>``
(docs/decisions/026-nd-arrays.md).  The slice's tiles load, store and move
(``update_tile_offset``) over its last two dimensions; nothing bounds the leading indices
(like an offset of a tile, an index outside the array reads or writes outside it).
"""
from __future__ import annotations

import ast

from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, StridedLayoutAttr
from xdsl.ir import SSAValue

from .ir_values import describe

#: the ranks an array argument may have
ARRAY_RANKS = (2, 3, 4)


def array_param_type(element_type, ndim: int) -> MemRefType:
    """The IR type of an array argument of rank ``ndim``: dynamic extents, dynamic outer
    strides, unit inner stride (runtime/abi.py passes the same)."""
    return MemRefType(element_type, [DYNAMIC_INDEX] * ndim, StridedLayoutAttr([None] * (ndim - 1) + [1], 0))


def rank_of(value) -> int:
    """The rank of an array value (0 for anything else)."""
    return len(value.type.get_shape()) if isinstance(value, SSAValue) and isinstance(value.type, MemRefType) else 0


def slice_2d(builder, array: SSAValue, leading: list, node: ast.AST) -> SSAValue:
    """The 2-D slice ``array[leading...]`` of an N-D array (``len(leading) == rank - 2``)."""
    rank = rank_of(array)
    sizes, strides = builder.array_meta[array]
    if len(leading) != rank - 2:
        raise builder.error(node, f"a {rank}-D array takes {rank - 2} leading indices to select a 2-D slice "
                            f"(x[{', '.join('zhij'[:rank - 2])}], a base for xt.init_tile), got {len(leading)}")
    offset = None
    for index, stride in zip(leading, strides):
        term = builder.emit(arith.MuliOp(builder.index(index, node), stride)).result
        offset = term if offset is None else builder.emit(arith.AddiOp(offset, term)).result
    rows, cols, pitch = sizes[-2], sizes[-1], strides[-2]
    view_type = MemRefType(array.type.element_type, [DYNAMIC_INDEX, DYNAMIC_INDEX],
                           StridedLayoutAttr([None, 1], None))
    one = builder.index(1, node)
    view = builder.emit(memref.ReinterpretCastOp.from_dynamic(array, [offset], [rows, cols], [pitch, 1],
                                                              view_type)).result
    view.name_hint = array.name_hint
    builder.array_meta[view] = ([rows, cols], [pitch, one])
    builder.array_views[view] = array
    return view


def _indices(node: ast.Subscript) -> list:
    index = node.slice
    return index.elts if isinstance(index, ast.Tuple) else [index]


def is_slice_subscript(base, node: ast.Subscript) -> bool:
    """Whether ``base[...]`` selects a 2-D slice: ``base`` an N-D array (rank > 2) indexed
    with fewer indices than its rank (as many indices as the rank read one element,
    which is not this module's)."""
    rank = rank_of(base)
    return rank > 2 and len(_indices(node)) < rank


def subscript(builder, array: SSAValue, node: ast.Subscript) -> SSAValue:
    """``x[z, h]`` of an N-D array ``x``: its 2-D slice (:func:`slice_2d`)."""
    rank = rank_of(array)
    elts = _indices(node)
    leading = ", ".join("zhij"[:rank - 2])
    if any(isinstance(e, (ast.Slice, ast.Starred)) for e in elts):
        raise builder.error(node, f"a 2-D slice of a {rank}-D array is selected with {rank - 2} integer "
                            f"indices, x[{leading}]; ':' slices are not supported (tile the slice with "
                            "xt.init_tile instead)")
    values = [builder.visit(e) for e in elts]
    for value, elt in zip(values, elts):
        if isinstance(value, bool) or not isinstance(value, (int, SSAValue)) or \
                (isinstance(value, SSAValue) and not isinstance(value.type, IndexType)):
            raise builder.error(elt, f"an array index must be an integer, got {describe(value)}")
    return slice_2d(builder, array, values, node)


def tile_of_nd(builder, base: SSAValue, offsets, shape, args: dict):
    """(the 2-D slice, its 2 offsets, the 2-D tile shape) of ``init_tile(base, offsets,
    shape)`` on an N-D ``base``: as many offsets and extents as the rank, the leading
    extents 1 (compile-time)."""
    rank = rank_of(base)
    example = f"xt.init_tile(x, [{', '.join('zhij'[:rank - 2])}, row, col], [{', '.join(['1'] * (rank - 2))}, BM, BN])"
    if not isinstance(offsets, (list, tuple)) or len(offsets) != rank:
        got = len(offsets) if isinstance(offsets, (list, tuple)) else describe(offsets)
        raise builder.error(args["offsets"], f"init_tile on a {rank}-D array takes {rank} offsets, got {got}: "
                            f"{example}, or slice it first: xt.init_tile(x[{', '.join('zhij'[:rank - 2])}], "
                            "[row, col], [BM, BN])")
    if not isinstance(shape, (list, tuple)) or len(shape) != rank:
        got = len(shape) if isinstance(shape, (list, tuple)) else describe(shape)
        raise builder.error(args["shape"], f"init_tile on a {rank}-D array takes a shape of {rank} extents, "
                            f"got {got}: {example}")
    if any(isinstance(e, SSAValue) or e != 1 for e in shape[:-2]):
        raise builder.error(args["shape"], f"a tile is 2-D: its leading extents on a {rank}-D array must be 1, "
                            f"got {list(shape)}: {example}")
    view = slice_2d(builder, base, list(offsets[:-2]), args["offsets"])
    return view, list(offsets[-2:]), list(shape[-2:])
