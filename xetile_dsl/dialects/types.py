"""Element-type names (xetile_dsl/dtypes.py) <-> xDSL types: below the frontend, the passes,
codegen and the interpreter, which all ask them."""
from __future__ import annotations

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    Float8E4M3FNType,
    Float8E5M2Type,
    IndexType,
    IntegerType,
    Signedness,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute

from ..dtypes import element

_U8 = IntegerType(8, Signedness.UNSIGNED)
_U32 = IntegerType(32, Signedness.UNSIGNED)
_TO_IR = {
    "f16": Float16Type(), "bf16": BFloat16Type(), "f32": Float32Type(), "tf32": Float32Type(),
    "f64": Float64Type(), "i1": i1, "i8": i8, "u8": _U8, "i16": i16, "i32": i32,
    "u32": _U32, "i64": i64, "index": IndexType(),
    "f8e4m3fn": Float8E4M3FNType(), "f8e5m2": Float8E5M2Type(),
}


def ir_type(name: str) -> Attribute:
    """The xDSL type of element-type ``name`` ("f16", "bf16", "f32", "i8", ...)."""
    return _TO_IR[name]


#: xDSL type -> its element-type name (the first name of each type; tf32 is f32's)
_FROM_IR: dict[Attribute, str] = {ty: name for name, ty in reversed(_TO_IR.items()) if name != "tf32"}


def type_name(t: Attribute) -> str:
    """The element-type name of xDSL type ``t`` (inverse of :func:`ir_type`; a dict
    lookup: passes and codegen ask it of ~500 values per GEMM compile)."""
    name = _FROM_IR.get(t)
    if name is None:
        raise ValueError(f"unsupported element type {t}")
    return name


def bit_width(t: Attribute) -> int:
    return element(type_name(t)).bits


def is_float(t: Attribute) -> bool:
    return isinstance(t, (Float16Type, BFloat16Type, Float32Type, Float64Type))


def is_fp8(t: Attribute) -> bool:
    """An 8-bit float (e4m3fn, e5m2): stored and moved as bytes, converted by integer code,
    never an arithmetic operand (``is_float`` is False for it)."""
    return isinstance(t, (Float8E4M3FNType, Float8E5M2Type))


def is_unsigned(t: Attribute) -> bool:
    """True for unsigned integer element types (u8, u32): they use the unsigned arith ops."""
    return isinstance(t, IntegerType) and t.signedness.data == Signedness.UNSIGNED
