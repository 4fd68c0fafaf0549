"""arith casts and ``arith.select`` on vectors, as MLIR defines them.

xDSL 0.74's arith restricts the integer casts (extsi, extui, trunci, index_cast), the
int<->float conversions and ``select``'s condition to scalars; MLIR's arith accepts
vectors for all of them ("element-wise on vectors").  Tile code needs them on vectors, so
this module defines the same ops (same names, same textual form) accepting a scalar or a
vector of the right element kind, and :data:`ARITH` is xDSL's arith dialect with these
definitions in place of its scalar-only ones, plus ``arith.remf`` (:class:`RemFOp`),
which xDSL lacks.  Everything else of arith is xDSL's.
"""
from __future__ import annotations

from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    BFloat16Type, Float16Type, Float32Type, Float64Type, IndexType, IntegerAttr, IntegerType, VectorType,
)
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (AnyAttr, IRDLOperation, VarConstraint, irdl_op_definition, operand_def, prop_def, result_def,
                       traits_def)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from ._fields import like_fields


def _elem(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t


def _shape(t: Attribute) -> tuple[int, ...] | None:
    return tuple(t.get_shape()) if isinstance(t, VectorType) else None


def _is_int(t: Attribute) -> bool:
    return isinstance(t, IntegerType)


def _is_float(t: Attribute) -> bool:
    return isinstance(t, (BFloat16Type, Float16Type, Float32Type, Float64Type))


def _width(t: Attribute) -> int:
    return t.width.data


class _CastOp(IRDLOperation):
    """``%r = arith.<cast> %x : T to U`` on a scalar or an equally shaped vector."""

    input = operand_def()
    result = result_def()
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `to` type($result)"

    #: (input element test, result element test, width rule: "<" result narrower, ">" wider, "" any)
    RULE: ClassVar[tuple] = (_is_int, _is_int, "")

    def __init__(self, value: SSAValue | Operation, target_type: Attribute):
        super().__init__(operands=[value], result_types=[target_type])

    def verify_(self) -> None:
        src, dst = self.input.type, self.result.type
        if _shape(src) != _shape(dst):
            raise VerifyException(f"{self.name}: input {src} and result {dst} must have the same shape")
        ok_in, ok_out, width = self.RULE
        a, b = _elem(src), _elem(dst)
        if not (ok_in(a) and ok_out(b)):
            raise VerifyException(f"{self.name}: cannot convert {a} to {b}")
        if width == ">" and not _width(b) > _width(a):
            raise VerifyException(f"{self.name}: the result ({b}) must be wider than the input ({a})")
        if width == "<" and not _width(b) < _width(a):
            raise VerifyException(f"{self.name}: the result ({b}) must be narrower than the input ({a})")


def _is_intlike(t: Attribute) -> bool:
    return isinstance(t, (IntegerType, IndexType))


def _cast_op(class_name: str, op_name: str, rule: tuple) -> type[_CastOp]:
    """One arith cast: only the name and the element RULE differ between them."""
    body = {"name": op_name, "RULE": rule, "__module__": __name__, "__annotations__": {"RULE": "ClassVar[tuple]"}}
    return irdl_op_definition(type(class_name, (_CastOp,), body))


ExtSIOp = _cast_op("ExtSIOp", "arith.extsi", (_is_int, _is_int, ">"))
ExtUIOp = _cast_op("ExtUIOp", "arith.extui", (_is_int, _is_int, ">"))
TruncIOp = _cast_op("TruncIOp", "arith.trunci", (_is_int, _is_int, "<"))
SIToFPOp = _cast_op("SIToFPOp", "arith.sitofp", (_is_int, _is_float, ""))
UIToFPOp = _cast_op("UIToFPOp", "arith.uitofp", (_is_int, _is_float, ""))
FPToSIOp = _cast_op("FPToSIOp", "arith.fptosi", (_is_float, _is_int, ""))
FPToUIOp = _cast_op("FPToUIOp", "arith.fptoui", (_is_float, _is_int, ""))


@irdl_op_definition
class IndexCastOp(_CastOp):
    """Exactly one side is ``index`` (element-wise on vectors)."""

    name = "arith.index_cast"
    RULE: ClassVar[tuple] = (_is_intlike, _is_intlike, "")

    def verify_(self) -> None:
        super().verify_()
        if isinstance(_elem(self.input.type), IndexType) == isinstance(_elem(self.result.type), IndexType):
            raise VerifyException(f"{self.name}: exactly one of {self.input.type} and {self.result.type} "
                                  f"must have index elements")


@irdl_op_definition
class SelectOp(IRDLOperation):
    """``arith.select %c, %a, %b : T``; ``%c`` is i1 or a vector of i1 shaped like T."""

    name = "arith.select"
    _T: ClassVar = VarConstraint("_T", AnyAttr())
    cond = operand_def()
    lhs, rhs = like_fields(operand_def, _T, 2)
    result = result_def(_T)
    traits = traits_def(Pure())
    assembly_format = "$cond `,` $lhs `,` $rhs attr-dict `:` type($cond) `,` type($result)"

    def __init__(self, cond: SSAValue | Operation, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        lhs = SSAValue.get(lhs)
        super().__init__(operands=[cond, lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        c, t = self.cond.type, self.result.type
        if not (self.lhs.type == self.rhs.type == t):
            raise VerifyException(f"{self.name}: both choices and the result must have one type, got "
                                  f"{self.lhs.type}, {self.rhs.type} -> {t}")
        if _elem(c) != IntegerType(1) or (_shape(c) is not None and _shape(c) != _shape(t)):
            raise VerifyException(f"{self.name}: condition {c} must be i1 or a vector of i1 shaped like {t}")


def _i1_like(t: Attribute) -> Attribute:
    """i1, or a vector of i1 shaped like ``t``."""
    return VectorType(IntegerType(1), t.get_shape()) if isinstance(t, VectorType) else IntegerType(1)


class _Comparison(arith.ComparisonOperation):
    """``arith.cmpi`` / ``arith.cmpf`` on scalars or vectors: the result is i1 or, for
    vector operands, a vector of i1 (as in MLIR; xDSL's ops take scalars only)."""

    predicate = prop_def(IntegerAttr)
    lhs, rhs = like_fields(operand_def, Attribute, 2)
    result = result_def()
    traits = traits_def(Pure())

    def verify_(self) -> None:
        if self.lhs.type != self.rhs.type:
            raise VerifyException(f"{self.name}: operands must have one type, got {self.lhs.type} and "
                                  f"{self.rhs.type}")
        want = _i1_like(self.lhs.type)
        if self.result.type != want:
            raise VerifyException(f"{self.name}: result must be {want} for operands {self.lhs.type}, got "
                                  f"{self.result.type}")


@irdl_op_definition
class CmpiOp(_Comparison):
    """``arith.cmpi`` on scalars or vectors."""

    name = "arith.cmpi"
    parse = classmethod(arith.CmpiOp.parse.__func__)
    print = arith.CmpiOp.print

    def __init__(self, operand1, operand2, arg):
        operand1 = SSAValue.get(operand1)
        if isinstance(arg, str):
            arg = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge").index(arg)
        super().__init__(operands=[operand1, operand2], result_types=[_i1_like(operand1.type)],
                         properties={"predicate": IntegerAttr(arg, 64)})


@irdl_op_definition
class CmpfOp(_Comparison):
    """``arith.cmpf`` on scalars or vectors."""

    name = "arith.cmpf"
    fastmath = prop_def(arith.FastMathFlagsAttr, default_value=arith.FastMathFlagsAttr("none"))
    parse = classmethod(arith.CmpfOp.parse.__func__)
    print = arith.CmpfOp.print

    def __init__(self, operand1, operand2, arg, fastmath=None):
        operand1 = SSAValue.get(operand1)
        if isinstance(arg, str):
            arg = arith.CMPF_COMPARISON_OPERATIONS.index(arg) if isinstance(
                arith.CMPF_COMPARISON_OPERATIONS, (list, tuple)) else {
                v: k for k, v in arith.CMPF_COMPARISON_OPERATIONS.items()}[arg]
        super().__init__(operands=[operand1, operand2], result_types=[_i1_like(operand1.type)],
                         properties={"predicate": IntegerAttr(arg, 64),
                                     "fastmath": fastmath or arith.FastMathFlagsAttr("none")})


REPLACED = (CmpiOp, CmpfOp, ExtSIOp, ExtUIOp, TruncIOp, SIToFPOp, UIToFPOp, FPToSIOp, FPToUIOp, IndexCastOp, SelectOp)

@irdl_op_definition
class RemFOp(arith.FloatingPointLikeBinaryOperation):
    """``%r = arith.remf %x, %y : T``: MLIR's float remainder, C's ``fmod`` (exact, the sign
    of ``%x``; NaN for a zero ``%y``), on scalars and vectors.  xDSL 0.74 has no remf."""

    name = "arith.remf"
    traits = traits_def(Pure())


#: arith ops xDSL lacks
ADDED = (RemFOp,)

ARITH = Dialect(
    "arith",
    [op for op in arith.Arith.operations if op.name not in {r.name for r in REPLACED}] + list(REPLACED)
    + list(ADDED),
    list(arith.Arith.attributes),
)
