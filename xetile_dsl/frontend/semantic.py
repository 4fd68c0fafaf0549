"""The one semantic layer of the language: element-type promotion, broadcasting by shape,
conversions and constants.  Every builder of an element-wise op, a reduction or an
operator goes through these functions, so the rules below hold everywhere:

* A value is a compile-time Python number, a runtime scalar (an ``index``, float or i1
  SSA value) or a tile value (a 2-D ``vector``).
* :func:`promote` -- equal types stay; float beats int; the wider float wins, and f16
  with bf16 gives f32; the wider int wins (i1 < i8/u8 < i32 < i64 < index); u8 with i8
  gives i32.
* :func:`operand_type` -- a scalar or Python number meeting a tile takes the tile's type
  ("weak" scalars), except a float meeting an int tile, which gives f32.
* :func:`broadcast_shapes` -- equal sizes stay, a size-1 dimension stretches.
"""
from __future__ import annotations

import ast

from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, SSAValue

from ..dialects import _arith_vector as av
from ..dialects import xetile
from .ir_values import describe
from ..dialects.types import is_float, is_fp8, is_unsigned, type_name

INDEX = IndexType()


# ----------------------------------------------------------------------------- classification
def is_tile(value) -> bool:
    """A 2-D tile value (an SSA vector)."""
    return isinstance(value, SSAValue) and isinstance(value.type, VectorType)


def is_scalar(value) -> bool:
    """A runtime scalar (an SSA value that is not a vector, tile or array)."""
    return isinstance(value, SSAValue) and isinstance(value.type, (IndexType, IntegerType)) or (
        isinstance(value, SSAValue) and (is_float(value.type) or is_fp8(value.type)))


def is_const(value) -> bool:
    """A compile-time number (bool, int or float)."""
    return isinstance(value, (bool, int, float))


def elem_of(value) -> Attribute | None:
    """Element type of a tile or type of a scalar (None for Python values)."""
    if not isinstance(value, SSAValue):
        return None
    t = value.type
    return t.element_type if isinstance(t, VectorType) else t


def shape_of(value) -> tuple[int, ...] | None:
    """Shape of a tile value, None for scalars and Python numbers."""
    return tuple(value.type.get_shape()) if is_tile(value) else None


def _rank(t: Attribute) -> int:
    if t == i1:
        return 1
    if isinstance(t, IndexType):
        return 128
    return t.width.data


# ----------------------------------------------------------------------------- rules
def promote(a: Attribute, b: Attribute) -> Attribute:
    """The common element type of two typed operands (see the module docstring)."""
    if a == b:
        return a
    fa, fb = is_float(a), is_float(b)
    if fa and fb:
        wa, wb = a.bitwidth, b.bitwidth
        return f32 if wa == wb else (a if wa > wb else b)
    if fa or fb:
        return a if fa else b
    if _rank(a) == _rank(b):  # i8 with u8
        return i32
    return a if _rank(a) > _rank(b) else b


def _weak_type(value) -> Attribute:
    """The type a scalar or Python number has on its own."""
    if isinstance(value, bool):
        return i1
    if isinstance(value, int):
        return INDEX
    if isinstance(value, float):
        return f32
    return elem_of(value)


def operand_type(values) -> Attribute:
    """Common element type of ``values`` (tiles are strong, scalars and numbers weak)."""
    tiles = [elem_of(v) for v in values if is_tile(v)]
    weak = [_weak_type(v) for v in values if not is_tile(v)]
    if not tiles:
        result = weak[0]
        for t in weak[1:]:
            result = promote(result, t)
        return result
    result = tiles[0]
    for t in tiles[1:]:
        result = promote(result, t)
    if not is_float(result) and any(is_float(t) for t in weak):
        return f32
    if result == i1 and any(t != i1 for t in weak):
        return i32
    return result


def broadcast_shapes(builder, shapes, node: ast.AST) -> tuple[int, ...] | None:
    """The common shape of tile operands (None when all are scalars)."""
    shapes = [s for s in shapes if s is not None]
    if not shapes:
        return None
    out = list(shapes[0])
    for s in shapes[1:]:
        if len(s) != len(out):
            raise builder.error(node, f"shape mismatch: {_fmt(shapes[0])} and {_fmt(s)} have different ranks")
        for i, (x, y) in enumerate(zip(out, s)):
            if x != y and 1 not in (x, y):
                raise builder.error(node, f"shape mismatch: {' and '.join(_fmt(t) for t in shapes)} cannot be "
                                    f"broadcast together (dimension {i}: {x} vs {y}; only size-1 dimensions "
                                    f"stretch)")
            out[i] = max(x, y)
    return tuple(out)


def _fmt(shape) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


# ----------------------------------------------------------------------------- constants
def int_range(elem: IntegerType) -> tuple[int, int]:
    """The values an integer element type holds: [-2^(w-1), 2^(w-1)-1], unsigned [0, 2^w-1],
    i1 [0, 1]."""
    width = elem.width.data
    if is_unsigned(elem) or width == 1:
        return 0, (1 << width) - 1
    return -(1 << (width - 1)), (1 << (width - 1)) - 1


def check_fits(builder, value, elem: Attribute, node: ast.AST, what: str) -> None:
    """A located error when the Python number ``value`` (``what``, e.g. "the fill value")
    does not fit the integer type ``elem``: no silent wrap-around."""
    if not isinstance(elem, IntegerType):
        return
    if not float(value).is_integer():
        raise builder.error(node, f"{what} {value!r} is not an integer, so it cannot be a {type_name(elem)} value")
    low, high = int_range(elem)
    if not low <= int(value) <= high:
        raise builder.error(node, f"{what} {value!r} does not fit {type_name(elem)}: the legal range is "
                                  f"{low}..{high}")


def constant(builder, value, elem: Attribute, shape=None) -> SSAValue:
    """``arith.constant`` of Python ``value`` as a scalar of ``elem`` or a splat vector."""
    if shape is not None:
        vtype = VectorType(elem, list(shape))
        py = float(value) if is_float(elem) else int(value)
        return builder.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vtype, [py]))).result
    if is_float(elem):
        return builder.emit(arith.ConstantOp(FloatAttr(float(value), elem))).result
    if is_unsigned(elem):  # a scalar arith.constant is signless: the value in twice the width, truncated
        wide = builder.emit(arith.ConstantOp(IntegerAttr(int(value), IntegerType(2 * elem.width.data)))).result
        return builder.emit(av.TruncIOp(wide, elem)).result
    return builder.emit(arith.ConstantOp(IntegerAttr(int(value), elem))).result


def dense(builder, values: list, elem: Attribute, shape) -> SSAValue:
    """A constant vector with the given element ``values`` (row-major)."""
    vtype = VectorType(elem, list(shape))
    return builder.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vtype, values))).result


# ----------------------------------------------------------------------------- conversions
def convert(builder, value: SSAValue, to: Attribute, node: ast.AST, saturate: bool = False) -> SSAValue:
    """``value`` (scalar or tile) converted element-wise to element type ``to``
    (``saturate``: an fp8 result clamps to its largest finite value, :func:`convert_fp8`)."""
    src = elem_of(value)
    if src == to:
        return value
    if is_fp8(src) or is_fp8(to):
        return convert_fp8(builder, value, to, node, saturate)
    shape = shape_of(value)

    def ty(e):
        return VectorType(e, list(shape)) if shape is not None else e

    def emit(cls, v, e):
        return builder.emit(cls(v, ty(e))).result

    if to == i1:
        zero = constant(builder, 0, src, shape)
        if is_float(src):
            return builder.emit(av.CmpfOp(value, zero, "une")).result
        return builder.emit(av.CmpiOp(value, zero, "ne")).result
    if isinstance(src, IndexType):
        value = emit(av.IndexCastOp, value, i64)
        return convert(builder, value, to, node)
    if isinstance(to, IndexType):
        if is_float(src):
            value = emit(av.FPToSIOp, value, i64)
        elif src.width.data < 64:
            value = emit(av.ExtUIOp if (is_unsigned(src) or src == i1) else av.ExtSIOp, value, i64)
        return emit(av.IndexCastOp, value, INDEX)
    unsigned = is_unsigned(src) or src == i1
    if is_float(src) and is_float(to):
        if src.bitwidth == to.bitwidth:  # f16 <-> bf16 through f32
            return emit(arith.TruncFOp, emit(arith.ExtFOp, value, f32), to)
        return emit(arith.ExtFOp if to.bitwidth > src.bitwidth else arith.TruncFOp, value, to)
    if is_float(to):
        return emit(av.UIToFPOp if unsigned else av.SIToFPOp, value, to)
    if is_float(src):
        return emit(av.FPToUIOp if is_unsigned(to) else av.FPToSIOp, value, to)
    ws, wt = src.width.data, to.width.data
    if ws == wt:  # i8 <-> u8, i32 <-> u32: the same bits (widened and cut back; LLVM folds the pair)
        return emit(av.TruncIOp, emit(av.ExtUIOp, value, i32 if ws < 32 else i64), to)
    if wt > ws:
        return emit(av.ExtUIOp if unsigned else av.ExtSIOp, value, to)
    return emit(av.TruncIOp, value, to)


# ----------------------------------------------------------------------------- fp8
# An fp8 tile (xt.float8_e4m3fn, xt.float8_e5m2) is loaded, stored, converted and fed to
# xt.tile_mma; it is never an arithmetic, comparison, reduction or atomic operand (no
# target computes in fp8); math functions take it as f32, as they take ints.  A
# conversion is one arith.extf (fp8 -> f16/bf16/f32, exact) or arith.truncf (f16/bf16/f32
# -> fp8, one rounding to nearest even); codegen expands both into integer code on the
# bits (codegen/fp8.py), the interpreter converts with ml_dtypes
# (docs/decisions/024-fp8-as-integer-code.md).

#: the largest finite magnitude of each fp8 type
FP8_MAX_FINITE = {"f8e4m3fn": 448.0, "f8e5m2": 57344.0}


def convert_fp8(builder, value: SSAValue, to: Attribute, node: ast.AST, saturate: bool = False) -> SSAValue:
    """``value`` converted to ``to`` where one side (or both) is fp8; other conversions go
    through f32.  ``saturate`` clamps to the largest finite value (infinities included;
    NaN stays NaN) before the rounding."""
    src, shape = elem_of(value), shape_of(value)

    def emit(cls, v, elem):
        return builder.emit(cls(v, VectorType(elem, list(shape)) if shape is not None else elem)).result

    if is_fp8(src):
        if is_float(to):
            return emit(arith.ExtFOp, value, to)
        return convert(builder, emit(arith.ExtFOp, value, f32), to, node)
    if not is_float(src) or src.bitwidth > 32:   # ints, i1, f64: through f32
        value, src = convert(builder, value, f32, node), f32
    if saturate:   # NaN-propagating clamp (arith.maximumf / minimumf)
        limit = FP8_MAX_FINITE[type_name(to)]
        value = builder.emit(arith.MaximumfOp(value, constant(builder, -limit, src, shape))).result
        value = builder.emit(arith.MinimumfOp(value, constant(builder, limit, src, shape))).result
    return emit(arith.TruncFOp, value, to)


def refuse_fp8(builder, values, node: ast.AST) -> None:
    """A located error when an fp8 value is an operand of arithmetic or a comparison."""
    for v in values:
        refuse_fp8_element(builder, elem_of(v) if isinstance(v, SSAValue) else None, node)


def refuse_fp8_element(builder, elem: Attribute | None, node: ast.AST) -> None:
    if elem is not None and is_fp8(elem):
        raise builder.error(node, f"type mismatch: {type_name(elem)} values cannot be computed with; they "
                            f"load, store, convert (xt.astype) and multiply (xt.tile_mma); convert first, "
                            f"e.g. xt.astype(v, xt.float16)")


def splat(builder, value: SSAValue, shape) -> SSAValue:
    """A runtime scalar repeated into a vector of ``shape`` (``vector.broadcast``)."""
    return builder.emit(vector.BroadcastOp(value, VectorType(value.type, list(shape)))).results[0]


def stretch(builder, value: SSAValue, shape, node: ast.AST) -> SSAValue:
    """A tile value broadcast along its size-1 dimensions to ``shape`` (``tile_broadcast``)."""
    src = shape_of(value)
    if src == tuple(shape):
        return value
    dims = [i for i, (s, t) in enumerate(zip(src, shape)) if s != t]
    if len(src) != len(shape) or any(src[i] != 1 for i in dims):
        raise builder.error(node, f"shape mismatch: cannot broadcast {_fmt(src)} to {_fmt(shape)}; only "
                            f"size-1 dimensions stretch")
    rtype = VectorType(elem_of(value), list(shape))
    return builder.emit(xetile.TileBroadcastOp(value, dims, rtype)).result


def coerce(builder, value, elem: Attribute, shape, node: ast.AST) -> SSAValue:
    """Any operand as an SSA value of element type ``elem`` and ``shape`` (None: scalar)."""
    if is_const(value):
        return constant(builder, value, elem, shape)
    if not isinstance(value, SSAValue) or not (is_tile(value) or is_scalar(value)):
        raise builder.error(node, f"type mismatch: expected a number, scalar or tile value, got {describe(value)}")
    value = convert(builder, value, elem, node)
    if shape is None:
        return value
    if is_tile(value):
        return stretch(builder, value, shape, node)
    return splat(builder, value, shape)


def unify(builder, values, node: ast.AST, elem: Attribute | None = None):
    """Operands converted to one element type and broadcast to one shape.

    Returns (SSA values, element type, shape or None)."""
    refuse_fp8(builder, values, node)
    elem = elem or operand_type(values)
    shape = broadcast_shapes(builder, [shape_of(v) for v in values], node)
    return [coerce(builder, v, elem, shape, node) for v in values], elem, shape


def describe_type(elem: Attribute) -> str:
    """User spelling of an element type ("int" for index)."""
    return "int" if isinstance(elem, IndexType) else type_name(elem)
