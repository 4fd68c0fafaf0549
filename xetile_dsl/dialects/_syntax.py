"""Small printing/parsing helpers shared by the XeTile and XeGPU dialects."""
from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import ArrayAttr, IntAttr
from xdsl.parser import AttrParser
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
