"""Small printing/parsing helpers shared by the XeTile and XeGPU dialects."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.ir import Attribute, ParametrizedAttribute
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException


def ints(array: ArrayAttr[IntAttr]) -> tuple[int, ...]:
    """The Python ints held by an ArrayAttr of IntAttr."""
    return tuple(v.data for v in array.data)


def int_tuple(parameter: str) -> property:
    """A read-only property: the ints of the attribute's ``ArrayAttr[IntAttr]`` parameter
    ``parameter``, as a tuple."""
    return property(lambda self: ints(getattr(self, parameter)),
                    doc=f"The ints of parameter ``{parameter}``.")


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


def parse_fields(parser: AttrParser, read: Callable[[AttrParser, str], object]) -> dict[str, object]:
    """``<key = value, ...>`` (possibly ``<>``): each value read by ``read(parser, key)``,
    which raises the parse error for a key it does not know."""
    fields: dict[str, object] = {}
    with parser.in_angle_brackets():
        key = parser.parse_optional_identifier()
        while key is not None:
            parser.parse_punctuation("=")
            fields[key] = read(parser, key)
            key = parser.parse_identifier() if parser.parse_optional_punctuation(",") else None
    return fields


def parse_keyword_lists(parser: AttrParser, keys: Sequence[str]) -> dict[str, list[int]]:
    """``key0 = [..], key1 = [..]`` in the order of ``keys``."""
    values: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if i:
            parser.parse_punctuation(",")
        parser.parse_keyword(key)
        parser.parse_punctuation("=")
        values[key] = parse_int_list(parser)
    return values


class LayoutDataAttr(ParametrizedAttribute):
    """A distribution written ``<layout_key = [..], data_key = [..]>``: how many units
    (subgroups, lanes) per dimension, and the block each unit holds.  The attribute
    declares its two ``ArrayAttr[IntAttr]`` parameters and names them in ``KEYS``."""

    KEYS: ClassVar[tuple[str, str]] = ("layout", "data")

    def __init__(self, layout: Sequence[int], data: Sequence[int]):
        super().__init__(ArrayAttr(IntAttr(v) for v in layout), ArrayAttr(IntAttr(v) for v in data))

    @property
    def layout(self) -> tuple[int, ...]:
        return ints(self.parameters[0])

    @property
    def data(self) -> tuple[int, ...]:
        return ints(self.parameters[1])

    def print_parameters(self, printer: Printer) -> None:
        key_layout, key_data = self.KEYS
        printer.print_string(f"<{key_layout} = {print_int_list(self.layout)}, "
                             f"{key_data} = {print_int_list(self.data)}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            values = parse_keyword_lists(parser, cls.KEYS)
        return [ArrayAttr(IntAttr(v) for v in values[key]) for key in cls.KEYS]


def locate_verify_errors(*classes: type) -> None:
    """Make a failing ``verify`` of a parsed attribute/type a located parse error.

    xDSL verifies an attribute when it is built from the parsed parameters, outside the
    parser, so the error would carry no line and column; here the parameters are checked
    while the parser still points just past the attribute."""
    for cls in classes:
        original = cls.parse_parameters.__func__

        def parse_parameters(c, parser: AttrParser, _original=original):
            try:
                params = _original(c, parser)
                c.new(params)
            except VerifyException as exc:
                parser.raise_error(str(exc))
            return params

        cls.parse_parameters = classmethod(parse_parameters)
