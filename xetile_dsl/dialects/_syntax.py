"""Small printing/parsing helpers shared by the XeTile and XeGPU dialects."""
from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.parser import AttrParser


def ints(array: ArrayAttr[IntAttr]) -> tuple[int, ...]:
    """The Python ints held by an ArrayAttr of IntAttr."""
    return tuple(v.data for v in array.data)


def print_int_list(values: Iterable[int]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def parse_int_list(parser: AttrParser) -> list[int]:
    """Parse ``[1, 2, 3]``."""
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


def parse_int_value(parser: AttrParser) -> int:
    """An integer, optionally typed as MLIR prints it (``2 : i64``)."""
    value = parser.parse_integer()
    if parser.parse_optional_punctuation(":") is not None:
        parser.parse_type()
    return value
