"""One element of an array parameter: ``x[i, j]`` reads a scalar, ``x[i, j] = s`` writes one.

Subscripting an array dispatches on the number of indices (:func:`subscript`): as many
indices as the array has dimensions name one element; any other count is refused here
with what is legal (a module that gives fewer indices a meaning, e.g. a slice to tile,
plugs into :data:`PARTIAL_INDEXING`).

Out-of-bounds semantics (the same in every flavour, the interpreter included, because
the guard is in the IR built here): an element read outside the array gives 0 of the
array's dtype (as a tile load's padding does) and an element write outside it is
dropped (as a tile store's clipped part is).  Indices are not wrapped: ``x[-1, 0]`` is
outside the array (a constant negative index is refused at compile time).

The IR: ``arith.cmpi ult`` per index against the array's extent (a negative index is a
huge unsigned value, so one compare covers both ends), then ``scf.if`` around one
``memref.load`` (yielding 0 on the other side) or one ``memref.store``.  Every lane of a
subgroup computes the same address, so the read is uniform (codegen emits one scalar
load, which the GPU compiler broadcasts)."""
from __future__ import annotations

import ast
from contextlib import contextmanager

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerType, MemRefType
from xdsl.ir import Block, Region, SSAValue

from . import semantic as sem
from .ir_values import INDEX, describe
from ..dialects.types import is_float, type_name

#: rank-independent hook: (builder, array, index nodes, node) -> value, for subscripts
#: with fewer indices than the array's rank; None when no such meaning is defined
PARTIAL_INDEXING = None


def is_array(value) -> bool:
    return isinstance(value, SSAValue) and isinstance(value.type, MemRefType)


def rank(array: SSAValue) -> int:
    return len(array.type.get_shape())


def index_nodes(node: ast.Subscript) -> list[ast.AST]:
    """The subscript's index expressions (``x[i, j]`` -> [i, j], ``x[i]`` -> [i])."""
    s = node.slice
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]


def subscript(builder, array: SSAValue, node: ast.Subscript):
    """``array[...]`` as an expression: one element when every dimension is indexed."""
    nodes = _checked_nodes(builder, array, node)
    if len(nodes) == rank(array):
        return load_element(builder, array, nodes, node)
    if PARTIAL_INDEXING is not None and len(nodes) < rank(array):
        return PARTIAL_INDEXING(builder, array, nodes, node)
    raise _count_error(builder, array, nodes, node)


def store_subscript(builder, target: ast.Subscript, value) -> None:
    """``array[i, j] = value``: ``value`` (a number or scalar) converted to the array's dtype."""
    array = builder.visit(target.value)
    if not is_array(array):
        raise builder.error(target, f"only arrays (kernel parameters) and names can be assigned to; "
                            f"{describe(array)} cannot be indexed for writing")
    nodes = _checked_nodes(builder, array, target)
    if len(nodes) != rank(array):
        raise _count_error(builder, array, nodes, target)
    if sem.is_tile(value) or not (sem.is_const(value) or sem.is_scalar(value)):
        raise builder.error(target, f"an element write stores one scalar, got {describe(value)}; store a tile "
                            f"value with xt.store_tile(value, xt.init_tile(array, offsets, shape))")
    elem = array.type.element_type
    if sem.is_const(value):
        sem.check_fits(builder, value, elem, target, "the stored value")
    stored = sem.coerce(builder, value, elem, None, target)
    indices, inside = _indices_and_guard(builder, array, nodes)
    then, other = Block(), Block()
    with _inside(builder, then):
        builder.emit(memref.StoreOp.get(stored, array, indices))
        builder.emit(scf.YieldOp())
    with _inside(builder, other):
        builder.emit(scf.YieldOp())
    builder.emit(scf.IfOp(inside, [], Region(then), Region(other)))
    builder.written_arrays.add(array.name_hint or "*")


def load_element(builder, array: SSAValue, nodes: list[ast.AST], node: ast.AST) -> SSAValue:
    """One element of ``array`` as a scalar of its dtype (0 outside the array)."""
    elem = array.type.element_type
    indices, inside = _indices_and_guard(builder, array, nodes)
    then, other = Block(), Block()
    with _inside(builder, then):
        builder.emit(scf.YieldOp(builder.emit(memref.LoadOp.get(array, indices)).res))
    with _inside(builder, other):
        builder.emit(scf.YieldOp(sem.constant(builder, 0, elem)))
    result = builder.emit(scf.IfOp(inside, [elem], Region(then), Region(other))).results[0]
    result.name_hint = (array.name_hint or "x") + "_elem"
    return result


@contextmanager
def _inside(builder, block: Block):
    """Emit into ``block`` (a branch of the guard) for the duration of the ``with``."""
    outer, builder.block = builder.block, block
    try:
        yield
    finally:
        builder.block = outer


def _checked_nodes(builder, array, node: ast.Subscript) -> list[ast.AST]:
    nodes = index_nodes(node)
    for n in nodes:
        if isinstance(n, ast.Slice):
            raise builder.error(n, f"slices of arrays are not supported: write one index per dimension "
                                f"({_legal(array)}) for an element, or xt.init_tile(array, offsets, shape) "
                                f"for a block")
    return nodes


def _legal(array) -> str:
    names = ", ".join("ijklmn"[d] for d in range(rank(array)))
    return f"x[{names}] on this {rank(array)}-D array"


def _count_error(builder, array, nodes, node):
    got = len(nodes)
    return builder.error(node, f"wrong number of indices: {got} {'index' if got == 1 else 'indices'} on a "
                         f"{rank(array)}-D array of {type_name(array.type.element_type)}; an element is read "
                         f"with one integer index per dimension, {_legal(array)}")


def _indices_and_guard(builder, array, nodes):
    """The indices as index values and the i1 'inside the array' condition."""
    sizes, _ = builder.array_meta[array]
    extents = array.type.get_shape()
    indices, inside = [], None
    for d, n in enumerate(nodes):
        value = builder.visit(n)
        index = _index(builder, value, n, d)
        extent = sizes[d] if extents[d] < 0 else sem.constant(builder, extents[d], INDEX)
        ok = builder.emit(arith.CmpiOp(index, extent, "ult")).result
        inside = ok if inside is None else builder.emit(arith.AndIOp(inside, ok)).result
        indices.append(index)
    return indices, inside


def _index(builder, value, node: ast.AST, dim: int) -> SSAValue:
    what = f"array index {dim}"
    if isinstance(value, bool) or (sem.is_scalar(value) and value.type == sem.i1):
        raise builder.error(node, f"{what} is a boolean; an index must be an integer (a Python int, or an int "
                            f"scalar such as xt.program_id(0) or an element of an int array)")
    if isinstance(value, int):
        if value < 0:
            raise builder.error(node, f"{what} is {value}: negative indices are not wrapped in kernels (an "
                                f"element outside the array reads 0); write the position from the start")
        return sem.constant(builder, value, INDEX)
    if isinstance(value, float) or (sem.is_scalar(value) and is_float(value.type)):
        got = repr(value) if isinstance(value, float) else describe(value)
        raise builder.error(node, f"{what} must be an integer, got {got}; convert a float with "
                            f"xt.astype(v, xt.int32)")
    if sem.is_scalar(value) and isinstance(value.type, (IndexType, IntegerType)):
        return sem.convert(builder, value, INDEX, node)
    raise builder.error(node, f"{what} must be an integer (a Python int or an int scalar), got {describe(value)}"
                        f"{'; reduce a tile value to one element with xt.item(v)' if sem.is_tile(value) else ''}")


__all__ = ["PARTIAL_INDEXING", "index_nodes", "is_array", "load_element", "store_subscript", "subscript"]
