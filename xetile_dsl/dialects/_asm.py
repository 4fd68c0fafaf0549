"""Custom-assembly helpers shared by the XeTile and XeGPU ops.

The RFCs write op syntax loosely (``->``, ``into`` and ``to`` all separate operand types
from result types; attribute dictionaries hold bare ``#attr`` entries; types are written
``tile<...>`` without the ``!xetile.`` prefix).  These helpers accept those spellings when
parsing and always print one canonical form (see docs/ir.md).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    IntAttr,
    IntegerAttr,
    StringAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ._xegpu_attrs import NbarrierType, TensorDescType
from ._xetile_types import TileType

ARROWS = ("into", "to")
_SEGMENTS = "operandSegmentSizes"


# ----------------------------------------------------------------------------- parsing
def peek(parser: Parser):
    """The token after the current one, without consuming anything."""
    state = parser._parser_state  # noqa: SLF001 -- xDSL has no public one-token lookahead
    pos = state.lexer.pos
    token = state.lexer.lex()
    state.lexer.pos = pos
    return token


def parse_arrow(parser: Parser) -> None:
    """``->`` (canonical), or the RFC's ``into`` / ``to``."""
    if not parse_optional_arrow(parser):
        parser.raise_error("expected '->' (or 'into') before the result type")


def parse_optional_arrow(parser: Parser) -> bool:
    if parser.parse_optional_punctuation("->") is not None:
        return True
    return any(parser.parse_optional_keyword(word) is not None for word in ARROWS)


def parse_type(parser: Parser) -> Attribute:
    """A type; also accepts the RFC's unprefixed ``tile<..>``, ``tensor_desc<..>`` and
    ``nbarrier``."""
    short: dict[str, type] = {"tile": TileType, "tensor_desc": TensorDescType}
    for word, cls in short.items():
        if parser.parse_optional_keyword(word) is not None:
            return cls.new(cls.parse_parameters(parser))
    if parser.parse_optional_keyword("nbarrier") is not None:
        return NbarrierType()
    return parser.parse_type()


def parse_types(parser: Parser, count: int | None = None) -> list[Attribute]:
    """A comma separated type list, optionally in parentheses (``(t1, t2) -> t3``)."""
    paren = parser.parse_optional_punctuation("(") is not None
    types = [parse_type(parser)]
    while (count is None or len(types) < count) and parser.parse_optional_punctuation(",") is not None:
        if parser._current_token.text in ("->", *ARROWS):  # noqa: SLF001 -- RFC: ``t0, t1, into t2``
            break
        types.append(parse_type(parser))
    if paren:
        parser.parse_punctuation(")")
    return types


def parse_operands(parser: Parser) -> list[UnresolvedOperand]:
    """``%a, %b, %c`` (at least one); a trailing comma (the RFC's ``%a, %b, {attrs}``)
    is accepted and consumed."""
    ops = [parser.parse_unresolved_operand()]
    while parser.parse_optional_punctuation(",") is not None:
        nxt = parser.parse_optional_unresolved_operand()
        if nxt is None:
            break
        ops.append(nxt)
    return ops


def parse_operand_to(parser: Parser) -> tuple[SSAValue, Attribute, dict[str, Attribute]]:
    """The one-operand form ``%a {attrs} : type(a) -> result_type`` (``->`` or the RFC's
    ``into``/``to``; the RFC's comma after ``%a`` is accepted): the resolved operand, the
    result type and the attribute entries, for ``build_op``."""
    operand = parser.parse_unresolved_operand()
    parser.parse_optional_punctuation(",")
    attrs = parse_attr_entries(parser)
    parser.parse_punctuation(":")
    operand_type = parse_type(parser)
    parse_arrow(parser)
    result_type = parse_type(parser)
    return parser.resolve_operand(operand, operand_type), result_type, attrs


def parse_operands_types(parser: Parser, positional: Mapping[int, Sequence[str]] | None = None):
    """The common form ``%a, %b {attrs} : ta, tb (-> tres)?`` (``->`` or ``into``/``to``):
    the unresolved operands, the attribute entries, the operand types and the result type
    (None without an arrow).  Callers resolve and check counts: the RFC omits or permutes
    types per op."""
    operands = parse_operands(parser)
    attrs = parse_attr_entries(parser, positional)
    parser.parse_punctuation(":")
    types = parse_types(parser)
    result = parse_type(parser) if parse_optional_arrow(parser) else None
    return operands, attrs, types, result


def parse_bracket_operands(parser: Parser) -> list[UnresolvedOperand]:
    """``[%a, %b]``."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)


def resolve(parser: Parser, operands: Sequence[UnresolvedOperand], types: Sequence[Attribute]) -> list[SSAValue]:
    if len(operands) != len(types):
        parser.raise_error(f"expected {len(operands)} types for {len(operands)} operands, got {len(types)}")
    return [parser.resolve_operand(o, t) for o, t in zip(operands, types)]


def parse_int_array(parser: Parser) -> list[int]:
    """``[1, 0]`` or ``array<i64: 1, 0>``."""
    if parser.parse_optional_keyword("array") is not None:
        parser.parse_punctuation("<")
        parser.parse_type()
        values: list[int] = []
        if parser.parse_optional_punctuation(":") is not None:
            values = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_integer)
        parser.parse_punctuation(">")
        return values
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def parse_optional_int_array(parser: Parser) -> list[int] | None:
    if parser._current_token.text in ("[", "array"):  # noqa: SLF001
        return parse_int_array(parser)
    return None


def parse_attr_entries(parser: Parser, positional: Mapping[int, Sequence[str]] | None = None) -> dict[str, Attribute]:
    """An optional attribute dictionary in the RFC's loose form.

    Entries are ``name = attr``, ``name`` (unit), ``name = word`` (a bare enum word, kept
    as a string) or a bare ``#attr``; bare attributes are named by their position through
    ``positional`` (count -> names)."""
    result: dict[str, Attribute] = {}
    bare: list[Attribute] = []
    if parser._current_token.text == "<" and peek(parser).text == "{":  # noqa: SLF001 -- MLIR: ``<{props}>``
        parser.parse_punctuation("<")
        result.update(_parse_dict_body(parser, bare))
        parser.parse_punctuation(">")
    if parser._current_token.text == "{":  # noqa: SLF001
        result.update(_parse_dict_body(parser, bare))
    if bare:
        names = (positional or {}).get(len(bare))
        if names is None:
            parser.raise_error(f"unexpected {len(bare)} unnamed attribute(s); name them (e.g. wg_map = #...)")
        result.update(zip(names, bare))
    return result


def _parse_dict_body(parser: Parser, bare: list[Attribute]) -> dict[str, Attribute]:
    result: dict[str, Attribute] = {}
    parser.parse_punctuation("{")
    while parser.parse_optional_punctuation("}") is None:
        name = parser.parse_optional_identifier()
        if name is None:
            name = parser.parse_optional_str_literal()
        if name is None:
            bare.append(parser.parse_attribute())
        elif parser.parse_optional_punctuation("=") is None:
            result[name] = UnitAttr()
        else:
            result[name] = _parse_entry_value(parser)
        if parser.parse_optional_punctuation(",") is None:
            if parser._current_token.text.startswith("#"):  # noqa: SLF001 -- RFC: {#a #b}
                continue
            parser.parse_punctuation("}")
            break
    return result


_ATTR_WORDS = ("true", "false", "unit", "array", "dense", "affine_map", "affine_set", "loc")


def _parse_entry_value(parser: Parser) -> Attribute:
    if parser._current_token.text not in _ATTR_WORDS:  # noqa: SLF001
        word = parser.parse_optional_identifier()
        if word is not None:  # a bare enum word: cached, gpu, slm, ...
            return StringAttr(word)
    return parser.parse_attribute()


def as_int_list(attr: Attribute) -> list[int] | None:
    """Ints held by ``[1, 0]`` (IntegerAttr or IntAttr entries) or ``array<i64: ...>``."""
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    if isinstance(attr, ArrayAttr):
        out = []
        for v in attr.data:
            if isinstance(v, IntegerAttr):
                out.append(v.value.data)
            elif isinstance(v, IntAttr):
                out.append(v.data)
            else:
                return None
        return out
    return None


def as_word(attr: Attribute) -> str | None:
    """The enum word of ``cached``, ``"cached"`` or ``#xegpu.cache_hint<cached>``."""
    if isinstance(attr, StringAttr):
        return attr.data
    value = getattr(attr, "value", None)
    if isinstance(value, StringAttr):
        return value.data
    return None


# IMEX's names for the wg_maps of vector ops (map1 describes the source, map2 the result)
KEY_ALIASES = {"map1": "wg_map_source", "map2": "wg_map", "wg_map_result": "wg_map", "wg_map_c": "wg_map"}


def make_alias(op_name: str, target: type[IRDLOperation], doc: str) -> type[IRDLOperation]:
    """An op name that only parses, into ``target`` (other spellings of the same op)."""
    def parse(cls, parser: Parser):
        return target.parse(parser)

    cls = type(f"{target.__name__}Alias_{op_name.split('.')[-1]}", (IRDLOperation,),
               {"name": op_name, "__doc__": doc, "parse": classmethod(parse)})
    return irdl_op_definition(cls)


def build_op(parser: Parser, cls: type[IRDLOperation], make: Callable[[], Operation],
             attrs: Mapping[str, Attribute]) -> Operation:
    """Construct the op, then distribute the parsed dictionary: names the op declares as
    properties become properties, the rest discardable attributes."""
    op = make()
    prop_names = set(cls.get_irdl_definition().properties)
    for name, value in attrs.items():
        if name not in prop_names and KEY_ALIASES.get(name) in prop_names:
            name = KEY_ALIASES[name]
        if name in prop_names:
            op.properties[name] = value
        else:
            op.attributes[name] = value
    return op


def int_array(values: Iterable[int]) -> DenseArrayBase:
    """The i64 array attribute of ``values``, built once per value (xDSL attributes are
    immutable, and building and verifying one costs tens of microseconds; strided
    slices take three per op)."""
    key = tuple(values)
    found = _INT_ARRAYS.get(key)
    if found is None:
        found = _INT_ARRAYS[key] = _kept(_INT_ARRAYS, DenseArrayBase.from_list(i64, list(key)))
    return found


def vector_type(element_type: Attribute, shape: Iterable[int]) -> VectorType:
    """``VectorType(element_type, shape)``, built once per value (see :func:`int_array`)."""
    key = (element_type, tuple(shape))
    found = _VECTOR_TYPES.get(key)
    if found is None:
        found = _VECTOR_TYPES[key] = _kept(_VECTOR_TYPES, VectorType(element_type, list(key[1])))
    return found


_INT_ARRAYS: dict[tuple, DenseArrayBase] = {}
_VECTOR_TYPES: dict[tuple, VectorType] = {}
#: attributes kept per table, beyond which the table starts again
_KEEP = 4096


def _kept(table: dict, value):
    """``value``, with ``table`` emptied first when it is full (a process compiling
    kernels of ever new shapes keeps a bounded number)."""
    if len(table) >= _KEEP:
        table.clear()
    return value


# ----------------------------------------------------------------------------- printing
def print_operands(printer: Printer, values: Iterable[SSAValue]) -> None:
    printer.print_list(values, printer.print_operand)


def print_types(printer: Printer, types: Iterable[Attribute]) -> None:
    printer.print_list(types, printer.print_attribute)


def print_operands_to(printer: Printer, op: Operation, result_type: Attribute | None, between: str = "",
                      skip: Iterable[str] = (), words: Iterable[str] = ()) -> None:
    """The common form `` %a, %b{between} {attrs} : type(a), type(b) -> result_type``
    (no arrow when ``result_type`` is None); ``skip``/``words`` as in print_attr_entries.
    Ops whose canonical form is exactly this print through it (the RFC spellings they
    also accept keep their parsers custom: see docs/ir.md, "Declarative formats and custom parsers")."""
    printer.print_string(" ")
    print_operands(printer, op.operands)
    printer.print_string(between)
    print_attr_entries(printer, op, skip=skip, words=words)
    printer.print_string(" : ")
    print_types(printer, [o.type for o in op.operands])
    if result_type is not None:
        printer.print_string(" -> ")
        printer.print_attribute(result_type)


class OperandsToSyntax:
    """Mixin for the ops whose canonical form is `` %a, %b {attrs} : ta, tb -> tres``
    (no arrow without a result); ``WORDS`` names properties printed as bare enum words.
    Their parsers stay per op: each accepts its own RFC spellings."""

    WORDS: ClassVar[tuple[str, ...]] = ()

    def print(self, printer: Printer) -> None:
        print_operands_to(printer, self, self.results[0].type if self.results else None, words=self.WORDS)


def print_int_array(printer: Printer, values: Iterable[int]) -> None:
    printer.print_string("[" + ", ".join(str(v) for v in values) + "]")


def print_attr_entries(printer: Printer, op: Operation, skip: Iterable[str] = (),
                       words: Iterable[str] = ()) -> None:
    """`` {name = value, ...}`` of the op's properties and attributes, minus ``skip``.
    Names in ``words`` hold enum words printed bare (``l1_hint = cached``)."""
    skip = set(skip) | {_SEGMENTS}
    words = set(words)
    entries = {**op.properties, **op.attributes}
    items = [(k, v) for k, v in entries.items() if k not in skip]
    if not items:
        return
    printer.print_string(" {")
    for i, (name, value) in enumerate(items):
        if i:
            printer.print_string(", ")
        printer.print_string(name)
        if isinstance(value, UnitAttr):
            continue
        printer.print_string(" = ")
        if name in words and as_word(value) is not None:
            printer.print_string(as_word(value))
        elif isinstance(value, ArrayAttr) and all(isinstance(v, IntAttr) for v in value.data):
            printer.print_string("array<i64: " + ", ".join(str(v.data) for v in value.data) + ">")
        else:
            printer.print_attribute(value)
    printer.print_string("}")


def checked(parser: Parser, make: Callable[[], Attribute]) -> Attribute:
    """Build an attribute, turning a VerifyException into a located parse error."""
    try:
        return make()
    except VerifyException as exc:
        parser.raise_error(str(exc))
