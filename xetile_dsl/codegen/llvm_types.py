"""LLVM types of the IR's xDSL types, shared by the codegen driver and its emitters."""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, IndexType, IntegerType, VectorType

from ..errors import LoweringError
from ..dialects.types import bit_width, is_fp8

I32, I64 = ir.IntType(32), ir.IntType(64)


def llvm_scalar(t) -> ir.Type:
    """LLVM type of an xDSL scalar type (bf16 travels as its i16 bits, fp8 as its i8 bits)."""
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, IntegerType):
        return ir.IntType(t.width.data)
    if isinstance(t, Float16Type):
        return ir.HalfType()
    if isinstance(t, BFloat16Type):
        return ir.IntType(16)
    if isinstance(t, Float32Type):
        return ir.FloatType()
    if is_fp8(t):
        return ir.IntType(8)
    raise LoweringError(f"codegen: unsupported type {t}")


#: vector sizes SPIR-V allows without VectorAnyINTEL (LLVM's backend aborts on others)
SPIRV_VECTOR_SIZES = (2, 3, 4, 8, 16)


def llvm_type(t) -> ir.Type:
    """LLVM type of an xDSL type. A vector is flattened; a one-element vector is a scalar
    (SPIR-V has no 1-vectors); a per-lane vector with more elements than SPIR-V allows
    (32 bytes of 8-bit VNNI data) travels as the same bits in 32-bit components."""
    if isinstance(t, VectorType):
        n = 1
        for d in t.get_shape():
            n *= d
        elem = llvm_scalar(t.element_type)
        if n == 1:
            return elem
        bits = bit_width(t.element_type)
        if n not in SPIRV_VECTOR_SIZES and bits < 32 and (n * bits) % 32 == 0 \
                and n * bits // 32 in SPIRV_VECTOR_SIZES:
            return ir.VectorType(I32, n * bits // 32)
        return ir.VectorType(elem, n)
    return llvm_scalar(t)
