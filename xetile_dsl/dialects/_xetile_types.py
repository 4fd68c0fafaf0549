"""XeTile attributes and types (the XeTile RFC): wg_map, tile_attr, tile."""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    IntAttr,
    NoneAttr,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ._syntax import LayoutDataAttr, int_tuple, parse_fields, ints, parse_int_list, parse_int_value, print_int_list


# ----------------------------------------------------------------------------- attributes
@irdl_attr_definition
class WgMapAttr(LayoutDataAttr):
    """``#xetile.wg_map<sg_layout = [8, 4], sg_data = [32, 64]>``: how a workgroup tile is
    split among subgroups (row-major subgroup ids, round-robin over sg_data)."""

    name = "xetile.wg_map"
    sg_layout: ArrayAttr[IntAttr]
    sg_data: ArrayAttr[IntAttr]
    KEYS: ClassVar = ("sg_layout", "sg_data")

    def verify(self) -> None:
        if len(self.layout) != len(self.data) or not 1 <= len(self.layout) <= 2:
            raise VerifyException("wg_map: sg_layout and sg_data must both have rank 1 or 2")
        if any(v <= 0 for v in self.layout + self.data):
            raise VerifyException("wg_map: sg_layout and sg_data entries must be positive")


@irdl_attr_definition
class TileAttr(ParametrizedAttribute):
    """``#xetile.tile_attr<order = [0, 1], inner_blocks = [8, 16], wg_map = ..., memory_space = 3>``.

    Defaults (order [1, 0], no inner blocks, no wg_map, global memory, not scattered) are not
    printed."""

    name = "xetile.tile_attr"
    order: ArrayAttr[IntAttr]
    inner_blocks: ArrayAttr[IntAttr]
    wg_map: Attribute
    memory_space: IntAttr
    scattered: BoolAttr

    def __init__(
        self,
        order: Sequence[int] = (1, 0),
        inner_blocks: Sequence[int] = (),
        wg_map: WgMapAttr | None = None,
        memory_space: int = 0,
        scattered: bool = False,
    ):
        super().__init__(
            ArrayAttr(IntAttr(v) for v in order),
            ArrayAttr(IntAttr(v) for v in inner_blocks),
            wg_map if wg_map is not None else NoneAttr(),
            IntAttr(memory_space),
            BoolAttr.from_bool(scattered),
        )

    @property
    def in_slm(self) -> bool:
        """True for a tile over shared local memory (memref memory space 3)."""
        return self.memory_space.data == 3

    order_list = int_tuple("order")

    blocks = int_tuple("inner_blocks")

    @property
    def wg(self) -> WgMapAttr | None:
        return self.wg_map if isinstance(self.wg_map, WgMapAttr) else None

    @property
    def is_scattered(self) -> bool:
        return bool(self.scattered.value.data)

    def is_default(self) -> bool:
        return (
            self.order_list == (1, 0) and not self.blocks and self.wg is None
            and self.memory_space.data == 0 and not self.is_scattered
        )

    def print_parameters(self, printer: Printer) -> None:
        parts = []
        if self.order_list != (1, 0):
            parts.append(f"order = {print_int_list(self.order_list)}")
        if self.blocks:
            parts.append(f"inner_blocks = {print_int_list(self.blocks)}")
        if self.wg is not None:
            parts.append(f"wg_map = #xetile.wg_map<sg_layout = {print_int_list(self.wg.layout)}, "
                         f"sg_data = {print_int_list(self.wg.data)}>")
        if self.memory_space.data != 0:
            parts.append(f"memory_space = {self.memory_space.data}")
        if self.is_scattered:
            parts.append("scattered = true")
        printer.print_string("<" + ", ".join(parts) + ">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        fields = parse_fields(parser, _parse_tile_attr_value)
        attr = TileAttr(
            order=fields.get("order", (1, 0)),
            inner_blocks=fields.get("inner_blocks", ()),
            wg_map=fields.get("wg_map", fields.get("wg")),
            memory_space=fields.get("memory_space", 0),
            scattered=fields.get("scattered", False),
        )
        return list(attr.parameters)

    def verify(self) -> None:
        if sorted(self.order_list) != [0, 1]:
            raise VerifyException(f"tile_attr: order must be [1, 0] (row-major) or [0, 1] (column-major), "
                                  f"got {list(self.order_list)}")
        if self.blocks and (len(self.blocks) != 2 or any(b <= 0 for b in self.blocks)):
            raise VerifyException("tile_attr: inner_blocks must hold two positive sizes")


def _parse_tile_attr_value(parser: AttrParser, key: str) -> object:
    if key in ("order", "inner_blocks"):
        if parser.parse_optional_keyword("array") is not None:  # array<i64: 16, 16>
            parser.parse_punctuation("<")
            parser.parse_keyword("i64")
            parser.parse_punctuation(":")
            values = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_integer)
            parser.parse_punctuation(">")
            return values
        return parse_int_list(parser)
    if key in ("wg_map", "wg"):
        attr = parser.parse_attribute()
        if not isinstance(attr, WgMapAttr):
            parser.raise_error("expected #xetile.wg_map<...>")
        return attr
    if key == "memory_space":
        word = parser.parse_optional_identifier()
        if word is not None:
            if word not in ("global", "slm"):
                parser.raise_error(f"tile_attr: memory_space must be 0/global or 3/slm, got {word}")
            return 3 if word == "slm" else 0
        return parse_int_value(parser)
    if key == "scattered":
        return parser.parse_boolean()
    parser.raise_error(f"unknown tile_attr field '{key}' (expected order, inner_blocks, wg_map, memory_space)")


# ----------------------------------------------------------------------------- types
@irdl_attr_definition
class TileType(ParametrizedAttribute, TypeAttribute):
    """``!xetile.tile<64x32xf16, #xetile.tile_attr<...>>``: a 2-D region of memory."""

    name = "xetile.tile"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    encoding: Attribute

    def __init__(self, shape: Sequence[int], element_type: Attribute, encoding: TileAttr | None = None):
        if encoding is not None and encoding.is_default():
            encoding = None
        super().__init__(ArrayAttr(IntAttr(v) for v in shape), element_type,
                         encoding if encoding is not None else NoneAttr())

    def get_shape(self) -> tuple[int, ...]:
        return ints(self.shape)

    @property
    def attr(self) -> TileAttr:
        return self.encoding if isinstance(self.encoding, TileAttr) else _default_tile_attr()

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "x".join(str(d) for d in self.get_shape()) + "x")
        printer.print_attribute(self.element_type)
        if isinstance(self.encoding, TileAttr):
            printer.print_string(", ")
            printer.print_attribute(self.encoding)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape, elem = parser.parse_ranked_shape()
            encoding: Attribute = NoneAttr()
            if parser.parse_optional_punctuation(",") is not None:
                encoding = parser.parse_attribute()
        if isinstance(encoding, TileAttr) and encoding.is_default():
            encoding = NoneAttr()
        return [ArrayAttr(IntAttr(v) for v in shape), elem, encoding]

    def verify(self) -> None:
        shape = self.get_shape()
        if len(shape) not in (1, 2) or any(d <= 0 for d in shape):
            raise VerifyException(f"tile: shape must be 1-D or 2-D with static positive sizes, got {list(shape)}")
        if not isinstance(self.encoding, (TileAttr, NoneAttr)):
            raise VerifyException(f"tile: the encoding must be #xetile.tile_attr<...>, got {self.encoding}")
        blocks = self.attr.blocks
        if blocks and len(shape) == 2 and any(s % b for s, b in zip(shape, blocks)):
            raise VerifyException(f"tile: inner_blocks {list(blocks)} must divide the tile shape {list(shape)}")
        wg = self.attr.wg
        if wg is not None:
            check_wg_map(wg, shape, "tile")


def check_wg_map(wg: WgMapAttr, shape: Sequence[int], what: str) -> None:
    """The RFC's distribution rules: per dimension, sg_layout*sg_data and the workgroup
    size divide one another (round-robin or wrap-around), and sg_data divides the size."""
    if len(wg.layout) != len(shape):
        raise VerifyException(f"{what}: wg_map rank {len(wg.layout)} differs from the shape rank {len(shape)}; "
                              f"give sg_layout and sg_data one entry per dimension of {list(shape)}")
    for dim, (size, lay, dat) in enumerate(zip(shape, wg.layout, wg.data)):
        unit = lay * dat
        if size % unit and unit % size:
            raise VerifyException(
                f"{what}: wg_map dim {dim}: sg_layout*sg_data = {lay}*{dat} = {unit} and the size {size} must "
                f"divide one another (round-robin or wrap-around); pick sg_data from the divisors of {size}")
        if size % dat:
            raise VerifyException(f"{what}: wg_map dim {dim}: sg_data {dat} must divide the size {size}")


_DEFAULTS: dict[str, TileAttr] = {}


def _default_tile_attr() -> TileAttr:
    """The encoding of a tile type that has none, built once (attributes are immutable;
    building and verifying one cost ~0.1 ms, and passes ask for it hundreds of times)."""
    found = _DEFAULTS.get("tile")
    if found is None:
        found = _DEFAULTS["tile"] = TileAttr()
    return found
