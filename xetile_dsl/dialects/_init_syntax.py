"""What ``xetile.init_tile`` and ``xegpu.create_nd_tdesc`` share: their base op class
(the strides, the constant offsets, the constructor, the syntax) and the parsers.

Accepted operand spellings (printed canonically as ``%src[%o, 8], [%h, %w], [%s, %c1]``)::

    %src[%i, 16]                                    (constants mixed with values)
    %src, [%off:2], [%shape:2], [%strides:2]        (xetile RFC, value packs)
    %src, %off:2, %shape:2, %strides:2 : i64, index, index, ...   (xegpu RFC flat form)
    %src, %off : ui64, index                         (flat 1-D)
    %src, %offsets : i64, vector<16xindex>          (scattered tile: one offsets vector)

In the flat form the entries are split by count: a base with a static shape takes only
offsets; otherwise ``3k`` entries are ``k`` offsets, ``k`` sizes and ``k`` strides.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from xdsl.dialects.builtin import DenseArrayBase, IndexType, MemRefType, VectorType, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, var_operand_def
from xdsl.parser import Parser
from xdsl.printer import Printer

from . import _asm, _mixed


def print_offsets_sizes_strides(printer: Printer, offsets, sizes, strides, op=None) -> None:
    if op is not None:
        _mixed.print_mixed(printer, op, offsets)
    else:
        printer.print_string("[")
        _asm.print_operands(printer, offsets)
        printer.print_string("]")
    for group in (sizes, strides):
        if group:
            printer.print_string(", [")
            _asm.print_operands(printer, group)
            printer.print_string("]")


def is_index_vector(t: Attribute) -> bool:
    return isinstance(t, VectorType) and isinstance(t.element_type, IndexType)


def _value(v: SSAValue | Operation) -> SSAValue:
    """An operand given as a value or as the op defining it (as xDSL's builders accept)."""
    return v.results[0] if isinstance(v, Operation) else v


@lru_cache(maxsize=None)
def _segment_sizes(offsets: int, sizes: int, strides: int) -> DenseArrayBase:
    """The ``operandSegmentSizes`` of source, offsets, sizes and strides (built once)."""
    return DenseArrayBase.from_list(i32, [1, offsets, sizes, strides])


class InitLikeOp(_mixed.ConstOffsetsOp):
    """A view of a 2-D base (memref or i64 address): ``source``, ``offsets`` and the
    base's sizes, declared by the op, then ``strides`` here and ``const_offsets`` (xDSL
    collects field definitions from parent classes, after the op's own).  Printed
    ``%src[%o, 8], [%h, %w], [%s, %c1] {attrs} : src_type -> result_type``, or
    ``%src, %offsets {attrs} : src_type, vector<..xindex> -> result_type`` for a
    scattered tile."""

    strides = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue], result_type: Attribute,
                 sizes: Sequence[SSAValue] = (), strides: Sequence[SSAValue] = ()):
        # what xDSL's generic builder (irdl_op_init) makes, without its ~200 us an op, most
        # of it rebuilding the segment sizes: a lowering makes one per block
        groups = [[_value(v) for v in group] for group in (offsets, sizes, strides)]
        Operation.__init__(self, operands=[_value(source), *groups[0], *groups[1], *groups[2]],
                           result_types=[result_type],
                           properties={AttrSizedOperandSegments.attribute_name: _segment_sizes(*map(len, groups))})

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        types = [self.source.type]
        if len(self.offsets) == 1 and is_index_vector(self.offsets[0].type):
            printer.print_string(", ")
            printer.print_operand(self.offsets[0])
            types.append(self.offsets[0].type)
        else:
            print_offsets_sizes_strides(printer, self.offsets, self.sizes, self.strides, self)
        _asm.print_attr_entries(printer, self, skip=(_mixed.CONST_OFFSETS,))
        printer.print_string(" : ")
        _asm.print_types(printer, types)
        printer.print_string(" -> ")
        printer.print_attribute(self.results[0].type)

    @classmethod
    def parse(cls, parser: Parser) -> InitLikeOp:
        return parse_init_like(parser, cls)


def _parse_groups(parser: Parser) -> tuple[list[list], bool]:
    """The operand part after the base; returns (groups, flat)."""
    if parser.parse_optional_punctuation(",") is None or parser._current_token.text == "[":  # noqa: SLF001
        groups = [_mixed.parse_bracket_list(parser)]
        while len(groups) < 3 and parser.parse_optional_punctuation(",") is not None:
            groups.append(_mixed.parse_bracket_list(parser))
        return groups, False
    return [_mixed.parse_flat_list(parser)], True


def _split_flat(entries: list, src_type: Attribute) -> list[list]:
    static_memref = isinstance(src_type, MemRefType) and all(d >= 0 for d in src_type.get_shape())
    if static_memref or len(entries) % 3 or not entries:
        return [entries]
    k = len(entries) // 3
    return [entries[:k], entries[k:2 * k], entries[2 * k:]]


def parse_init_like(parser: Parser, cls):
    """``%src <operands> attrs : src_type (, index...)? -> result_type`` (see module doc)."""
    source = parser.parse_unresolved_operand()
    groups, flat = _parse_groups(parser)
    attrs = _asm.parse_attr_entries(parser)
    parser.parse_punctuation(":")
    types = _asm.parse_types(parser)
    parser.parse_optional_punctuation(",")
    _asm.parse_arrow(parser)
    result_type = _asm.parse_type(parser)
    src = parser.resolve_operand(source, types[0])
    index = IndexType()
    if flat and len(groups[0]) == 1 and len(types) == 2 and isinstance(types[1], VectorType):
        if isinstance(groups[0][0], int):
            parser.raise_error("the offsets of a scattered tile must be a vector<..xindex> value")
        offs = [parser.resolve_operand(groups[0][0], types[1])]  # scattered: one offsets vector
        return _asm.build_op(parser, cls, lambda: cls(src, offs, result_type), attrs)
    if flat:
        groups = _split_flat(groups[0], types[0])
    groups += [[]] * (3 - len(groups))
    operands, static = _mixed.split(groups[0])
    for group in groups[1:]:
        if any(isinstance(e, int) for e in group):
            parser.raise_error("sizes and strides must be SSA values (use arith.constant for a constant)")
    offs = [parser.resolve_operand(o, index) for o in operands]
    sizes = [parser.resolve_operand(o, index) for o in groups[1]]
    strides = [parser.resolve_operand(o, index) for o in groups[2]]
    if static is not None:
        attrs = {**attrs, _mixed.CONST_OFFSETS: _mixed.const_attr(static)}
    return _asm.build_op(parser, cls, lambda: cls(src, offs, result_type, sizes, strides), attrs)


def parse_update_offsets(parser: Parser) -> tuple[object, list, list[int] | None, dict, list[Attribute]]:
    """``%t, %dx, %dy``, ``%t, [%dx, 16]`` or ``%t, %off:2`` then ``attrs : T (, index...)? (-> T)?``.

    Returns the unresolved descriptor, the offset entries' operands, the static array
    (or None), the attributes and the parsed types."""
    tdesc = parser.parse_unresolved_operand()
    parser.parse_punctuation(",")
    if parser._current_token.text == "[":  # noqa: SLF001
        entries = _mixed.parse_bracket_list(parser)
    else:
        entries = _mixed.parse_flat_list(parser)
    attrs = _asm.parse_attr_entries(parser)
    parser.parse_punctuation(":")
    types = _asm.parse_types(parser)
    parser.parse_optional_punctuation(",")
    if _asm.parse_optional_arrow(parser):
        result = _asm.parse_type(parser)
        if result != types[0]:
            parser.raise_error(f"result type {result} must equal the operand type {types[0]}")
    operands, static = _mixed.split(entries)
    return tdesc, operands, static, attrs, types
