"""The XeTile dialect (spec/xetile-rfc.md) on xDSL.

Attributes first, then types, then operations, then the Dialect registry.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from ._syntax import ints, parse_int_list, print_int_list


# ----------------------------------------------------------------------------- attributes
@irdl_attr_definition
class WgMapAttr(ParametrizedAttribute):
    """``#xetile.wg_map<sg_layout = [8, 4], sg_data = [32, 64]>``: how a workgroup tile is
    split among subgroups (row-major subgroup ids, round-robin over sg_data)."""

    name = "xetile.wg_map"
    sg_layout: ArrayAttr[IntAttr]
    sg_data: ArrayAttr[IntAttr]

    def __init__(self, sg_layout: Sequence[int], sg_data: Sequence[int]):
        super().__init__(ArrayAttr(IntAttr(v) for v in sg_layout), ArrayAttr(IntAttr(v) for v in sg_data))

    @property
    def layout(self) -> tuple[int, ...]:
        return ints(self.sg_layout)

    @property
    def data(self) -> tuple[int, ...]:
        return ints(self.sg_data)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<sg_layout = {print_int_list(self.layout)}, sg_data = {print_int_list(self.data)}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            values = _parse_keyword_lists(parser, ("sg_layout", "sg_data"))
        return [ArrayAttr(IntAttr(v) for v in values["sg_layout"]), ArrayAttr(IntAttr(v) for v in values["sg_data"])]

    def verify(self) -> None:
        if len(self.layout) != len(self.data) or not 1 <= len(self.layout) <= 2:
            raise VerifyException("wg_map: sg_layout and sg_data must both have rank 1 or 2")
        if any(v <= 0 for v in self.layout + self.data):
            raise VerifyException("wg_map: sg_layout and sg_data entries must be positive")


def _parse_keyword_lists(parser: AttrParser, keys: Sequence[str]) -> dict[str, list[int]]:
    values: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        if i:
            parser.parse_punctuation(",")
        parser.parse_keyword(key)
        parser.parse_punctuation("=")
        values[key] = parse_int_list(parser)
    return values


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
    def order_list(self) -> tuple[int, ...]:
        return ints(self.order)

    @property
    def blocks(self) -> tuple[int, ...]:
        return ints(self.inner_blocks)

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
        fields: dict[str, object] = {}
        with parser.in_angle_brackets():
            key = parser.parse_optional_identifier()
            while key is not None:
                parser.parse_punctuation("=")
                fields[key] = _parse_tile_attr_value(parser, key)
                key = parser.parse_identifier() if parser.parse_optional_punctuation(",") else None
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
            raise VerifyException(f"tile_attr: order must be [1, 0] or [0, 1], got {list(self.order_list)}")
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
        return parser.parse_integer()
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
        return self.encoding if isinstance(self.encoding, TileAttr) else TileAttr()

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
        return [ArrayAttr(IntAttr(v) for v in shape), elem, encoding]

    def verify(self) -> None:
        shape = self.get_shape()
        if len(shape) not in (1, 2) or any(d <= 0 for d in shape):
            raise VerifyException(f"tile: shape must be 1-D or 2-D with static positive sizes, got {list(shape)}")
        blocks = self.attr.blocks
        if blocks and len(shape) == 2 and any(s % b for s, b in zip(shape, blocks)):
            raise VerifyException(f"tile: inner_blocks {list(blocks)} must divide the tile shape {list(shape)}")


# ----------------------------------------------------------------------------- operations
@irdl_op_definition
class InitTileOp(IRDLOperation):
    """Create a tile over a 2-D base matrix: a memref (static, or dynamic with shape and
    strides operands) or a raw i64 address with shape and strides."""

    name = "xetile.init_tile"
    source = operand_def()
    offsets = var_operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    strides = var_operand_def(IndexType)
    tile = result_def(TileType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue], result_type: TileType,
                 sizes: Sequence[SSAValue] = (), strides: Sequence[SSAValue] = ()):
        super().__init__(operands=[source, offsets, sizes, strides], result_types=[result_type])

    def verify_(self) -> None:
        tile_type = self.tile.type
        assert isinstance(tile_type, TileType)
        if tile_type.attr.is_scattered:
            return
        if len(self.offsets) != 2:
            raise VerifyException(f"{self.name}: expects 2 offsets, got {len(self.offsets)}")
        src = self.source.type
        if isinstance(src, MemRefType):
            if src.element_type != tile_type.element_type:
                raise VerifyException(f"{self.name}: element type {src.element_type} of the base does not match "
                                      f"the tile's {tile_type.element_type}")
            dynamic = any(d < 0 for d in src.get_shape())
            if dynamic and (len(self.sizes) != 2 or len(self.strides) != 2):
                raise VerifyException(f"{self.name}: a dynamic memref needs 2 sizes and 2 strides")
        elif src == i64:
            if len(self.sizes) != 2 or len(self.strides) != 2:
                raise VerifyException(f"{self.name}: an i64 base address needs 2 sizes and 2 strides")
        else:
            raise VerifyException(f"{self.name}: base must be a memref or an i64 address, got {src}")


@irdl_op_definition
class LoadTileOp(IRDLOperation):
    """Load a tile into a vector (2-D, or 4-D when the tile has inner_blocks)."""

    name = "xetile.load_tile"
    tile = operand_def(TileType)
    value = result_def(VectorType)
    padding = opt_prop_def(Attribute)

    def __init__(self, tile: SSAValue, result_type: VectorType, padding: Attribute | None = None):
        super().__init__(operands=[tile], result_types=[result_type], properties={"padding": padding} if padding else {})

    def verify_(self) -> None:
        _check_tile_vector(self.name, self.tile.type, self.value.type)


@irdl_op_definition
class StoreTileOp(IRDLOperation):
    name = "xetile.store_tile"
    value = operand_def(VectorType)
    tile = operand_def(TileType)

    def __init__(self, value: SSAValue, tile: SSAValue):
        super().__init__(operands=[value, tile])

    def verify_(self) -> None:
        _check_tile_vector(self.name, self.tile.type, self.value.type)


@irdl_op_definition
class PrefetchTileOp(IRDLOperation):
    name = "xetile.prefetch_tile"
    tile = operand_def(TileType)
    locality = opt_prop_def(IntegerAttr)

    def __init__(self, tile: SSAValue, locality: int | None = None):
        props = {"locality": IntegerAttr(locality, i64)} if locality is not None else {}
        super().__init__(operands=[tile], properties=props)


@irdl_op_definition
class UpdateTileOffsetOp(IRDLOperation):
    """Move a tile by (offset_x, offset_y) elements (rows, columns)."""

    name = "xetile.update_tile_offset"
    tile = operand_def(TileType)
    offset_x = operand_def(IndexType)
    offset_y = operand_def(IndexType)
    result = result_def(TileType)

    def __init__(self, tile: SSAValue, offset_x: SSAValue, offset_y: SSAValue):
        super().__init__(operands=[tile, offset_x, offset_y], result_types=[tile.type])

    def verify_(self) -> None:
        if self.result.type != self.tile.type:
            raise VerifyException(f"{self.name}: result type must equal the tile type")


@irdl_op_definition
class TileMMAOp(IRDLOperation):
    """``D = A x B (+ C)`` on 2-D vectors, or on 4-D blocked vectors after blocking."""

    name = "xetile.tile_mma"
    a = operand_def(VectorType)
    b = operand_def(VectorType)
    c = opt_operand_def(VectorType)
    output = result_def(VectorType)
    wg_map_c = opt_prop_def(WgMapAttr, prop_name="wg_map")

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue | None, result_type: VectorType,
                 wg_map: WgMapAttr | None = None):
        super().__init__(operands=[a, b, [c] if c is not None else []], result_types=[result_type],
                         properties={"wg_map": wg_map} if wg_map else {})

    def verify_(self) -> None:
        a, b, out = self.a.type, self.b.type, self.output.type
        sa, sb, so = a.get_shape(), b.get_shape(), out.get_shape()
        if len(sa) == 2:
            if sa[1] != sb[0] or (sa[0], sb[1]) != tuple(so):
                raise VerifyException(f"{self.name}: shapes do not multiply: {list(sa)} x {list(sb)} -> {list(so)}")
        elif len(sa) == 4:
            if (sa[1], sa[3]) != (sb[0], sb[2]) or (sa[0], sb[1], sa[2], sb[3]) != tuple(so):
                raise VerifyException(f"{self.name}: blocked shapes do not multiply: {list(sa)} x {list(sb)} -> {list(so)}")
        else:
            raise VerifyException(f"{self.name}: operands must be 2-D or 4-D vectors")
        if self.c is not None and self.c.type != out:
            raise VerifyException(f"{self.name}: accumulator type {self.c.type} must equal the result type {out}")


def _check_tile_vector(op_name: str, tile_type: Attribute, vec_type: Attribute) -> None:
    assert isinstance(tile_type, TileType) and isinstance(vec_type, VectorType)
    shape, vshape = tile_type.get_shape(), vec_type.get_shape()
    blocks = tile_type.attr.blocks
    if blocks:
        expect = (shape[0] // blocks[0], shape[1] // blocks[1], blocks[0], blocks[1])
    else:
        expect = shape
    if tuple(vshape) != tuple(expect):
        raise VerifyException(f"{op_name}: vector shape {list(vshape)} does not match tile shape {list(expect)}")
    if vec_type.element_type != tile_type.element_type:
        raise VerifyException(f"{op_name}: vector element type {vec_type.element_type} differs from the tile's "
                              f"{tile_type.element_type}")


XeTile = Dialect(
    "xetile",
    [InitTileOp, LoadTileOp, StoreTileOp, PrefetchTileOp, UpdateTileOffsetOp, TileMMAOp],
    [WgMapAttr, TileAttr, TileType],
)
