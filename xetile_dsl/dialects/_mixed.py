"""Operand lists that mix SSA values, integer constants and the RFC's value packs.

``init_tile``, ``create_nd_tdesc``, ``update_nd_offset`` and ``update_tile_offset`` take
offsets written ``[%i, 16]`` (a constant mixed with a value, as the IMEX/MLIR tests do),
``[%off:2]`` or a bare ``%off:2`` (the RFC's shorthand for ``%off#0, %off#1``: both results
of a two-result op).  Constants live in the ``const_offsets`` property (an
``array<i64: ...>`` with :data:`DYNAMIC` where an operand stands); an op without
constants has no such property, so ops built by the frontend are unchanged.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, i64
from xdsl.ir import Operation, SSAValue
from xdsl.irdl import IRDLOperation, opt_prop_def
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.mlir_lexer import MLIRTokenKind

from . import _asm

DYNAMIC = -(2**63)  # MLIR's ShapedType::kDynamic: "an operand stands here"
CONST_OFFSETS = "const_offsets"

Entry = UnresolvedOperand | int


class ConstOffsetsOp(IRDLOperation):
    """An op whose offsets may mix values and constants: the constants are its
    ``const_offsets`` property (absent when every offset is a value)."""

    const_offsets = opt_prop_def(DenseArrayBase)


_peek = _asm.peek


def parse_optional_entry(parser: Parser) -> list[Entry] | None:
    """``%x``, ``%x#1``, ``%x:N`` (N values ``%x#0..%x#N-1``) or an integer literal."""
    operand = parser.parse_optional_unresolved_operand()
    if operand is None:
        value = parser.parse_optional_integer(allow_boolean=False)
        return None if value is None else [value]
    if parser._current_token.text == ":" and _peek(parser).kind == MLIRTokenKind.INTEGER_LIT:  # noqa: SLF001
        parser.parse_punctuation(":")
        count = parser.parse_integer(allow_boolean=False, allow_negative=False)
        if count < 1:
            parser.raise_error("a value pack %name:N needs N >= 1")
        return [UnresolvedOperand(operand.span, i) for i in range(count)]
    return [operand]


def parse_entry(parser: Parser) -> list[Entry]:
    return parser.expect(lambda: parse_optional_entry(parser), "expected an SSA value, %name:N or an integer")


def parse_bracket_list(parser: Parser) -> list[Entry]:
    """``[e, e, ...]`` of :func:`parse_entry` items (packs flattened)."""
    groups = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_entry(parser))
    return [e for g in groups for e in g]


def parse_flat_list(parser: Parser) -> list[Entry]:
    """``e, e, ...`` without brackets; stops before a token that starts no entry."""
    entries = parse_entry(parser)
    while parser._current_token.text == ",":  # noqa: SLF001
        nxt = _peek(parser)
        if nxt.kind not in (MLIRTokenKind.PERCENT_IDENT, MLIRTokenKind.INTEGER_LIT):
            break
        parser.parse_punctuation(",")
        entries += parse_entry(parser)
    return entries


def split(entries: Sequence[Entry]) -> tuple[list[UnresolvedOperand], list[int] | None]:
    """Operands, and the static array (``None`` when every entry is an operand)."""
    operands = [e for e in entries if not isinstance(e, int)]
    if len(operands) == len(entries):
        return operands, None
    return operands, [e if isinstance(e, int) else DYNAMIC for e in entries]


def const_attr(static: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(static))


def static_of(op: Operation, name: str = CONST_OFFSETS) -> list[int] | None:
    attr = op.properties.get(name)
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    return None


def mixed(op: Operation, values: Sequence[SSAValue], name: str = CONST_OFFSETS) -> list[SSAValue | int]:
    """The full list in order: an ``int`` for each constant, the SSA value otherwise."""
    static = static_of(op, name)
    if static is None:
        return list(values)
    it = iter(values)
    return [next(it) if s == DYNAMIC else s for s in static]


def verify_static(op: Operation, values: Sequence[SSAValue], name: str = CONST_OFFSETS) -> None:
    static = static_of(op, name)
    if static is not None and sum(1 for s in static if s == DYNAMIC) != len(values):
        raise VerifyException(f"{op.name}: {name} has {sum(1 for s in static if s == DYNAMIC)} dynamic "
                              f"entries for {len(values)} operands")


def print_mixed(printer: Printer, op: Operation, values: Sequence[SSAValue], name: str = CONST_OFFSETS) -> None:
    """``[%a, 16, %b]``."""
    printer.print_string("[")
    for i, entry in enumerate(mixed(op, values, name)):
        if i:
            printer.print_string(", ")
        if isinstance(entry, int):
            printer.print_string(str(entry))
        else:
            printer.print_operand(entry)
    printer.print_string("]")
