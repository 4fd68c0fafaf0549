"""Python operators on constexprs (folded here), runtime scalars and tile values.

Operands are unified by :mod:`.semantic` (promotion, broadcasting), then one arith op is
emitted on scalars or element-wise on vectors; which op depends on the element type
(float, signed or unsigned int).
"""
from __future__ import annotations

import ast
import operator

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, f32, i1

from ..dialects import _arith_vector as av
from . import semantic as sem
from .ir_values import describe
from ..dialects.types import is_float, is_unsigned

_PY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
       ast.Mod: operator.mod, ast.Div: operator.truediv, ast.Pow: operator.pow, ast.LShift: operator.lshift,
       ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor,
       ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
       ast.NotEq: operator.ne}
# (signed int op, unsigned int op, float op)
_OPS = {ast.Add: (arith.AddiOp, arith.AddiOp, arith.AddfOp), ast.Sub: (arith.SubiOp, arith.SubiOp, arith.SubfOp),
        ast.Mult: (arith.MuliOp, arith.MuliOp, arith.MulfOp), ast.Div: (None, None, arith.DivfOp),
        ast.FloorDiv: (arith.FloorDivSIOp, arith.DivUIOp, None), ast.Mod: (arith.RemSIOp, arith.RemUIOp, None),
        ast.BitAnd: (arith.AndIOp, arith.AndIOp, None), ast.BitOr: (arith.OrIOp, arith.OrIOp, None),
        ast.BitXor: (arith.XOrIOp, arith.XOrIOp, None), ast.LShift: (arith.ShLIOp, arith.ShLIOp, None),
        ast.RShift: (arith.ShRSIOp, arith.ShRUIOp, None)}
_CMP = {ast.Lt: ("slt", "ult", "olt"), ast.LtE: ("sle", "ule", "ole"), ast.Gt: ("sgt", "ugt", "ogt"),
        ast.GtE: ("sge", "uge", "oge"), ast.Eq: ("eq", "eq", "oeq"), ast.NotEq: ("ne", "ne", "une")}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
           ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
           ast.MatMult: "@"}


def _fold(builder, op, lhs, rhs, node):
    try:
        return _PY[type(op)](lhs, rhs)
    except (KeyError, TypeError, ZeroDivisionError) as exc:
        raise builder.error(node, f"cannot fold constant expression: {exc}") from None


def _variant(elem) -> int:
    """0 signed int (and index), 1 unsigned int (and i1), 2 float."""
    if is_float(elem):
        return 2
    return 1 if (is_unsigned(elem) or elem == i1) else 0


def _check_operands(builder, values, node) -> None:
    for v in values:
        if not (sem.is_const(v) or sem.is_tile(v) or sem.is_scalar(v)):
            raise builder.error(node, f"type mismatch: arithmetic needs numbers, scalars or tile values, "
                                f"got {describe(v)}")
    sem.refuse_fp8(builder, values, node)


def binop(builder, op: ast.operator, lhs, rhs, node: ast.AST):
    """``lhs <op> rhs``: folded for constexprs, else one arith op (element-wise on tiles)."""
    if not isinstance(lhs, sem.SSAValue) and not isinstance(rhs, sem.SSAValue):
        return _fold(builder, op, lhs, rhs, node)
    _check_operands(builder, (lhs, rhs), node)
    elem = sem.operand_type((lhs, rhs))
    if isinstance(op, ast.Div) and not is_float(elem):
        elem = f32  # true division gives a float, as in Python
    if isinstance(op, ast.FloorDiv | ast.Mod) and is_float(elem):
        raise builder.error(node, f"operator {_SYMBOL[type(op)]} is only defined on integers here, got "
                            f"{sem.describe_type(elem)} operands")
    cls_row = _OPS.get(type(op))
    cls = cls_row[_variant(elem)] if cls_row else None
    if cls is None:
        raise builder.error(node, f"operator {_SYMBOL.get(type(op), type(op).__name__)} is not supported on "
                            f"{sem.describe_type(elem)} values")
    (a, b), _, _ = sem.unify(builder, (lhs, rhs), node, elem)
    if cls is arith.RemSIOp:
        return _floor_mod(builder, a, b, elem)
    return builder.emit(cls(a, b)).result


def _floor_mod(builder, a, b, elem):
    """Python's ``a % b`` on signed integers: the remainder takes the divisor's sign (so
    that ``a == b * (a // b) + a % b`` with the floor division ``//`` lowers to).
    ``remsi`` truncates; where it is non-zero and its sign differs from ``b``'s, add ``b``."""
    shape = sem.shape_of(a) or sem.shape_of(b)
    rem = builder.emit(arith.RemSIOp(a, b)).result
    zero = sem.constant(builder, 0, elem, shape)
    nonzero = builder.emit(av.CmpiOp(rem, zero, "ne")).result
    signs_differ = builder.emit(av.CmpiOp(builder.emit(arith.XOrIOp(rem, b)).result, zero, "slt")).result
    fix = builder.emit(arith.AndIOp(nonzero, signs_differ)).result
    return builder.emit(av.SelectOp(fix, builder.emit(arith.AddiOp(rem, b)).result, rem)).result


def compare(builder, op: ast.cmpop, lhs, rhs, node: ast.AST):
    """``lhs <cmp> rhs``: a Python bool for constexprs, else i1 (element-wise on tiles)."""
    if not isinstance(lhs, sem.SSAValue) and not isinstance(rhs, sem.SSAValue):
        return _fold(builder, op, lhs, rhs, node)
    if type(op) not in _CMP:
        raise builder.error(node, f"comparison {type(op).__name__} is not supported in kernels")
    _check_operands(builder, (lhs, rhs), node)
    (a, b), elem, _ = sem.unify(builder, (lhs, rhs), node)
    pred = _CMP[type(op)][_variant(elem)]
    cls = av.CmpfOp if is_float(elem) else av.CmpiOp
    return builder.emit(cls(a, b, pred)).result


def unary(builder, op: ast.unaryop, operand, node: ast.AST):
    """``-x``, ``+x``, ``~x``, ``not x``."""
    if not isinstance(operand, sem.SSAValue):
        try:
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
                    ast.Not: operator.not_}[type(op)](operand)
        except TypeError as exc:
            raise builder.error(node, f"cannot fold constant expression: {exc}") from None
    _check_operands(builder, (operand,), node)
    elem, shape = sem.elem_of(operand), sem.shape_of(operand)
    if isinstance(op, ast.UAdd):
        return operand
    if isinstance(op, ast.USub):
        if is_float(elem):
            return builder.emit(arith.NegfOp(operand)).result
        return builder.emit(arith.SubiOp(sem.constant(builder, 0, elem, shape), operand)).result
    if isinstance(op, ast.Not) and elem != i1:
        raise builder.error(node, "`not` needs a boolean (a comparison result); use == 0 for numbers")
    if is_float(elem):
        raise builder.error(node, f"operator ~ is only defined on integers, got {sem.describe_type(elem)}")
    ones = 1 if elem == i1 else (-1 if not is_unsigned(elem) else (1 << elem.width.data) - 1)
    if isinstance(elem, IndexType):
        ones = -1
    return builder.emit(arith.XOrIOp(operand, sem.constant(builder, ones, elem, shape))).result


__all__ = ["binop", "compare", "unary", "f32"]
