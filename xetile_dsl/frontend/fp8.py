"""fp8 values in the frontend: conversions (``xt.astype``) and the refusal of arithmetic.

An fp8 tile (``xt.float8_e4m3fn``, ``xt.float8_e5m2``) is loaded, stored, converted and
fed to ``xt.tile_mma``; it is never an arithmetic, comparison, reduction or atomic
operand (no target computes in fp8); math functions take it as f32, as they take ints.
A conversion is one ``arith.extf`` (fp8 -> f16/bf16/f32, exact) or ``arith.truncf``
(f16/bf16/f32 -> fp8, one rounding to nearest even); codegen expands both into integer
code on the bits (codegen/fp8.py), the interpreter converts with ml_dtypes.  Other
conversions go through f32.  ``saturate=True`` clamps to the largest finite value
(infinities included; NaN stays NaN) before the rounding.
"""
from __future__ import annotations

import ast

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType, f32
from xdsl.ir import Attribute, SSAValue

from ..dialects.types import is_float, is_fp8, type_name

#: the largest finite magnitude of each fp8 type
MAX_FINITE = {"f8e4m3fn": 448.0, "f8e5m2": 57344.0}


def involves_fp8(src: Attribute, to: Attribute) -> bool:
    return is_fp8(src) or is_fp8(to)


def convert(builder, value: SSAValue, to: Attribute, node: ast.AST, saturate: bool = False) -> SSAValue:
    """``value`` converted to ``to`` where one side (or both) is fp8."""
    from . import semantic as sem   # semantic calls this module for fp8 conversions

    src, shape = sem.elem_of(value), sem.shape_of(value)

    def emit(cls, v, elem):
        return builder.emit(cls(v, VectorType(elem, list(shape)) if shape is not None else elem)).result

    if is_fp8(src):
        if is_float(to):
            return emit(arith.ExtFOp, value, to)
        return sem.convert(builder, emit(arith.ExtFOp, value, f32), to, node)
    if not is_float(src) or src.bitwidth > 32:   # ints, i1, f64: through f32
        value, src = sem.convert(builder, value, f32, node), f32
    if saturate:
        value = _clamp(builder, value, MAX_FINITE[type_name(to)], node)
    return emit(arith.TruncFOp, value, to)


def _clamp(builder, value: SSAValue, limit: float, node: ast.AST) -> SSAValue:
    """``value`` clamped to ``[-limit, limit]``; NaN-propagating (arith.maximumf/minimumf)."""
    from . import semantic as sem

    elem, shape = sem.elem_of(value), sem.shape_of(value)
    lo, hi = sem.constant(builder, -limit, elem, shape), sem.constant(builder, limit, elem, shape)
    value = builder.emit(arith.MaximumfOp(value, lo)).result
    return builder.emit(arith.MinimumfOp(value, hi)).result


def refuse_arithmetic(builder, values, node: ast.AST) -> None:
    """A located error when an fp8 value is an operand of arithmetic or a comparison."""
    from . import semantic as sem

    for v in values:
        refuse_element(builder, sem.elem_of(v) if isinstance(v, SSAValue) else None, node)


def refuse_element(builder, elem: Attribute | None, node: ast.AST) -> None:
    if elem is not None and is_fp8(elem):
        raise builder.error(node, f"type mismatch: {type_name(elem)} values cannot be computed with; they "
                            f"load, store, convert (xt.astype) and multiply (xt.tile_mma); convert first, "
                            f"e.g. xt.astype(v, xt.float16)")
