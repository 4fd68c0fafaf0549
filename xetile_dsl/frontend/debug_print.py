"""``print(...)`` in a kernel -> ``xtdebug.print`` (run by the interpreter only).

Arguments that are compile-time values (strings, constexprs) are folded into the format
text; runtime values (scalars, tile values) become ``{}`` fields.  f-strings work the
same way, format specs included (``f"{acc:.3f}"`` formats every element of a tile).
``sep`` and ``end`` must be constant strings.  The compiler rejects the op (see
dialects/xtdebug.py): printing is a debugging aid of ``XETILE_INTERPRET=1``.
"""
from __future__ import annotations

import ast

from xdsl.ir import SSAValue

from ..dialects.xetile import TileType
from ..dialects.xtdebug import PrintOp


def _escape(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


def build_print(builder, node: ast.Call) -> None:
    """Emit ``xtdebug.print`` for the call ``print(*args, sep=..., end=...)``."""
    options = {"sep": " ", "end": "\n"}
    for kw in node.keywords:
        if kw.arg not in options:
            raise builder.error(kw, f"print(): only sep= and end= are supported in kernels, got {kw.arg}=")
        value = builder.constexpr(kw.value, f"print()'s {kw.arg}")
        if not isinstance(value, str):
            raise builder.error(kw.value, f"print()'s {kw.arg} must be a string")
        options[kw.arg] = value
    pieces, operands = [], []
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise builder.error(arg, "print(*args) is not supported in kernels")
        pieces.append(_piece(builder, arg, operands))
    fmt = _escape(options["sep"]).join(pieces) + _escape(options["end"])
    builder.emit(PrintOp(fmt, operands))


def _piece(builder, arg: ast.AST, operands: list) -> str:
    if isinstance(arg, ast.JoinedStr):
        return "".join(_fstring_part(builder, part, operands) for part in arg.values)
    return _field(builder, builder.visit(arg), "", arg, operands)


def _fstring_part(builder, part: ast.AST, operands: list) -> str:
    if isinstance(part, ast.Constant):
        return _escape(str(part.value))
    if part.conversion not in (-1, ord("s")):
        raise builder.error(part, "print(): !r/!a conversions are not supported in kernels")
    spec = ""
    if part.format_spec is not None:
        spec = "".join(str(builder.constexpr(p, "a format spec")) if isinstance(p, ast.FormattedValue)
                       else str(p.value) for p in part.format_spec.values)
    return _field(builder, builder.visit(part.value), spec, part, operands)


def _field(builder, value, spec: str, node: ast.AST, operands: list) -> str:
    if isinstance(value, SSAValue):
        if isinstance(value.type, TileType):
            raise builder.error(node, "print() of a tile descriptor is not supported; load it and print the value")
        operands.append(value)
        return "{:" + spec + "}" if spec else "{}"
    return _escape(format(value, spec))
