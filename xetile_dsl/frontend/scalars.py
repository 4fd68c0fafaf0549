"""Binary operators on constexprs (folded in Python) and index/float scalars (arith ops)."""
from __future__ import annotations

import ast
import operator

from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType
from xdsl.ir import SSAValue

from .types import is_float

_PY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
       ast.Mod: operator.mod, ast.Div: operator.truediv, ast.Pow: operator.pow, ast.LShift: operator.lshift,
       ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_INT_OPS = {ast.Add: arith.AddiOp, ast.Sub: arith.SubiOp, ast.Mult: arith.MuliOp, ast.FloorDiv: arith.FloorDivSIOp,
            ast.Mod: arith.RemSIOp, ast.BitAnd: arith.AndIOp, ast.BitOr: arith.OrIOp, ast.BitXor: arith.XOrIOp,
            ast.LShift: arith.ShLIOp, ast.RShift: arith.ShRSIOp}
_FLOAT_OPS = {ast.Add: arith.AddfOp, ast.Sub: arith.SubfOp, ast.Mult: arith.MulfOp, ast.Div: arith.DivfOp}


def binop(builder, op: ast.operator, lhs, rhs, node: ast.AST):
    """``lhs <op> rhs`` for constexprs and scalars (tile arithmetic lives in tile_ops)."""
    if not isinstance(lhs, SSAValue) and not isinstance(rhs, SSAValue):
        try:
            return _PY[type(op)](lhs, rhs)
        except (KeyError, TypeError, ZeroDivisionError) as exc:
            raise builder.error(node, f"cannot fold constant expression: {exc}") from None
    kind = _scalar_kind(builder, lhs, rhs, node)
    if kind == "index":
        cls = _INT_OPS.get(type(op))
        if cls is None:
            raise builder.error(node, f"operator {type(op).__name__} is not supported on integer scalars")
        if type(op) is ast.FloorDiv:
            # Python floors; arith.floordivsi floors too, so semantics match for negatives.
            pass
        return builder.emit(cls(builder.index(lhs, node), builder.index(rhs, node))).result
    cls = _FLOAT_OPS.get(type(op))
    if cls is None:
        raise builder.error(node, f"operator {type(op).__name__} is not supported on float scalars")
    return builder.emit(cls(_as_float(builder, lhs, kind, node), _as_float(builder, rhs, kind, node))).result


def _scalar_kind(builder, lhs, rhs, node):
    types = [v.type for v in (lhs, rhs) if isinstance(v, SSAValue)]
    for t in types:
        if not (isinstance(t, IndexType) or is_float(t)):
            from .ast_to_xetile import describe

            raise builder.error(node, f"arithmetic on {describe(lhs if isinstance(lhs, SSAValue) else rhs)} "
                                f"is not supported yet; only integer and float scalars")
    floats = [t for t in types if is_float(t)]
    if floats:
        return floats[0]
    if any(isinstance(v, float) for v in (lhs, rhs)):
        raise builder.error(node, "mixing a float constant with an integer scalar; convert explicitly")
    return "index"


def _as_float(builder, value, ftype, node):
    if isinstance(value, SSAValue):
        if value.type != ftype:
            raise builder.error(node, f"float scalars of different types ({value.type} vs {ftype})")
        return value
    return builder.emit(arith.ConstantOp(FloatAttr(float(value), ftype))).result
