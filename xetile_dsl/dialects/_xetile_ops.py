"""XeTile memory ops and tile_mma (spec/xetile-rfc.md), with the RFC's custom syntax.

Canonical printed forms (the parser also accepts ``into``/``to`` for ``->``, unprefixed
``tile<..>`` types and the RFC's other spellings listed in docs/ir.md)::

    %t = xetile.init_tile %base[%i, %j] : memref<128x128xf16> -> !xetile.tile<8x16xf16>
    %t = xetile.init_tile %p[%i, %j], [%h, %w], [%s, %c1] : i64 -> !xetile.tile<8x16xf16>
    %t = xetile.init_tile %p, %offs : i64, vector<1x16xindex> -> !xetile.tile<1x16xf32, #xetile.tile_attr<scattered = true>>
    %v = xetile.load_tile %t {padding = 0.0 : f32} : !xetile.tile<8x16xf16> -> vector<8x16xf16>
    xetile.store_tile %v, %t : vector<8x16xf16>, !xetile.tile<8x16xf16>
    xetile.prefetch_tile %t locality<3> : !xetile.tile<8x16xf16>
    %u = xetile.update_tile_offset %t, %dx, %dy : !xetile.tile<8x16xf16>
    %c = xetile.tile_mma %a, %b, %c {wg_map = #xetile.wg_map<..>} : vector<..>, vector<..>, vector<..> -> vector<..>
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, VectorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    result_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from . import _asm
from ._xetile_types import TileType, WgMapAttr, check_wg_map


def _is_index_vector(t: Attribute) -> bool:
    return isinstance(t, VectorType) and isinstance(t.element_type, IndexType)


@irdl_op_definition
class InitTileOp(IRDLOperation):
    """Create a tile over a 2-D base matrix: a memref (static, or dynamic with shape and
    strides operands) or a raw i64 address with shape and strides; or a scattered tile
    from an i64 address and a vector of per-element offsets."""

    name = "xetile.init_tile"
    source = operand_def()
    offsets = var_operand_def()  # index scalars, or one vector<..xindex> for scatter tiles
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
            self._verify_scatter(tile_type)
            return
        if len(self.offsets) != 2 or not all(isinstance(o.type, IndexType) for o in self.offsets):
            raise VerifyException(f"{self.name}: expects 2 index offsets, got {len(self.offsets)}; a vector of "
                                  "offsets needs a scattered tile (#xetile.tile_attr<scattered = true>)")
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

    def _verify_scatter(self, tile_type: TileType) -> None:
        if len(self.offsets) != 1 or not _is_index_vector(self.offsets[0].type):
            raise VerifyException(f"{self.name}: a scattered tile takes one vector<..xindex> of offsets")
        if tuple(self.offsets[0].type.get_shape()) != tile_type.get_shape():
            raise VerifyException(f"{self.name}: offsets shape {list(self.offsets[0].type.get_shape())} must equal "
                                  f"the scattered tile shape {list(tile_type.get_shape())}")
        if self.sizes or self.strides:
            raise VerifyException(f"{self.name}: a scattered tile takes no sizes or strides")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        if len(self.offsets) == 1 and _is_index_vector(self.offsets[0].type):
            printer.print_string(", ")
            printer.print_operand(self.offsets[0])
            _asm.print_attr_entries(printer, self)
            printer.print_string(" : ")
            _asm.print_types(printer, [self.source.type, self.offsets[0].type])
        else:
            print_offsets_sizes_strides(printer, self.offsets, self.sizes, self.strides)
            _asm.print_attr_entries(printer, self)
            printer.print_string(" : ")
            printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.tile.type)

    @classmethod
    def parse(cls, parser: Parser) -> InitTileOp:
        return parse_init_like(parser, cls)


def print_offsets_sizes_strides(printer: Printer, offsets, sizes, strides) -> None:
    printer.print_string("[")
    _asm.print_operands(printer, offsets)
    printer.print_string("]")
    for group in (sizes, strides):
        if group:
            printer.print_string(", [")
            _asm.print_operands(printer, group)
            printer.print_string("]")


def parse_init_like(parser: Parser, cls):
    """``%src[%o..](, [%sizes], [%strides])? attrs : src_type -> result_type``, the RFC's
    ``%src, [%o..], ...`` and the scatter form ``%src, %offsets : t0, t1 -> result``."""
    source = parser.parse_unresolved_operand()
    comma = parser.parse_optional_punctuation(",") is not None
    scatter = comma and parser._current_token.text.startswith("%")  # noqa: SLF001
    if scatter:
        offsets = [parser.parse_unresolved_operand()]
        groups = [offsets, [], []]
    else:
        groups = [_asm.parse_bracket_operands(parser)]
        while len(groups) < 3 and parser.parse_optional_punctuation(",") is not None:
            groups.append(_asm.parse_bracket_operands(parser))
        groups += [[]] * (3 - len(groups))
    attrs = _asm.parse_attr_entries(parser)
    parser.parse_punctuation(":")
    types = _asm.parse_types(parser)
    # the RFC writes ``memref<..>, index, index -> ..``: trailing index types are redundant
    src_type = types[0]
    _asm.parse_arrow(parser)
    result_type = _asm.parse_type(parser)
    src = parser.resolve_operand(source, src_type)
    index = IndexType()
    if scatter:
        if len(types) < 2:
            parser.raise_error("the scatter form needs the offsets' vector type after the base type")
        offs = [parser.resolve_operand(groups[0][0], types[1])]
    else:
        offs = [parser.resolve_operand(o, index) for o in groups[0]]
    sizes = [parser.resolve_operand(o, index) for o in groups[1]]
    strides = [parser.resolve_operand(o, index) for o in groups[2]]
    return _asm.build_op(parser, cls, lambda: cls(src, offs, result_type, sizes, strides), attrs)


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

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tile)
        _asm.print_attr_entries(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.tile.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.value.type)

    @classmethod
    def parse(cls, parser: Parser) -> LoadTileOp:
        tile = parser.parse_unresolved_operand()
        parser.parse_optional_punctuation(",")
        attrs = _asm.parse_attr_entries(parser)
        parser.parse_punctuation(":")
        tile_type = _asm.parse_type(parser)
        _asm.parse_arrow(parser)
        vec = _asm.parse_type(parser)
        t = parser.resolve_operand(tile, tile_type)
        return _asm.build_op(parser, cls, lambda: cls(t, vec), attrs)


@irdl_op_definition
class StoreTileOp(IRDLOperation):
    name = "xetile.store_tile"
    value = operand_def(VectorType)
    tile = operand_def(TileType)

    def __init__(self, value: SSAValue, tile: SSAValue):
        super().__init__(operands=[value, tile])

    def verify_(self) -> None:
        _check_tile_vector(self.name, self.tile.type, self.value.type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _asm.print_operands(printer, [self.value, self.tile])
        _asm.print_attr_entries(printer, self)
        printer.print_string(" : ")
        _asm.print_types(printer, [self.value.type, self.tile.type])

    @classmethod
    def parse(cls, parser: Parser) -> StoreTileOp:
        operands = _asm.parse_operands(parser)
        attrs = _asm.parse_attr_entries(parser)
        parser.parse_punctuation(":")
        types = _parse_pair_types(parser)
        value, tile = match_by_type(parser, operands, types, (VectorType, TileType))
        return _asm.build_op(parser, cls, lambda: cls(value, tile), attrs)


def _parse_pair_types(parser: Parser) -> list[Attribute]:
    """``t0, t1`` or the RFC's ``t0 into t1`` / ``t0 to t1`` / ``(t0, t1)``."""
    paren = parser.parse_optional_punctuation("(") is not None
    first = _asm.parse_type(parser)
    if parser.parse_optional_punctuation(",") is None:
        _asm.parse_arrow(parser)
    second = _asm.parse_type(parser)
    if paren:
        parser.parse_punctuation(")")
    return [first, second]


def match_by_type(parser: Parser, operands, types, kinds: Sequence[type]) -> list[SSAValue]:
    """Resolve operands written in either order: pair each operand with its type by
    position, then order the values by ``kinds`` (the RFC swaps operand orders)."""
    values = _asm.resolve(parser, operands, types)
    ordered = []
    pool = list(values)
    for kind in kinds:
        hit = next((v for v in pool if isinstance(v.type, kind)), None)
        if hit is None:
            parser.raise_error(f"expected an operand of type {kind.__name__}")
        pool.remove(hit)
        ordered.append(hit)
    return ordered


@irdl_op_definition
class PrefetchTileOp(IRDLOperation):
    name = "xetile.prefetch_tile"
    tile = operand_def(TileType)
    locality = opt_prop_def(IntegerAttr)

    def __init__(self, tile: SSAValue, locality: int | None = None):
        props = {"locality": IntegerAttr(locality, i64)} if locality is not None else {}
        super().__init__(operands=[tile], properties=props)

    def verify_(self) -> None:
        if self.locality is not None and not 0 <= self.locality.value.data <= 3:
            raise VerifyException(f"{self.name}: locality must be 0 (none) to 3 (keep in cache), "
                                  f"got {self.locality.value.data}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tile)
        if self.locality is not None:
            printer.print_string(f" locality<{self.locality.value.data}>")
        _asm.print_attr_entries(printer, self, skip=("locality",))
        printer.print_string(" : ")
        printer.print_attribute(self.tile.type)

    @classmethod
    def parse(cls, parser: Parser) -> PrefetchTileOp:
        tile = parser.parse_unresolved_operand()
        parser.parse_optional_punctuation(",")
        locality = None
        if parser.parse_optional_keyword("locality") is not None:
            parser.parse_punctuation("<")
            locality = parser.parse_integer()
            parser.parse_punctuation(">")
        attrs = _asm.parse_attr_entries(parser)
        if "locality" in attrs:
            locality = attrs.pop("locality").value.data
        parser.parse_punctuation(":")
        t = parser.resolve_operand(tile, _asm.parse_type(parser))
        return _asm.build_op(parser, cls, lambda: cls(t, locality), attrs)


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

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _asm.print_operands(printer, [self.tile, self.offset_x, self.offset_y])
        _asm.print_attr_entries(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.tile.type)

    @classmethod
    def parse(cls, parser: Parser) -> UpdateTileOffsetOp:
        tile, dx, dy = parse_tdesc_update(parser)
        return _asm.build_op(parser, cls, lambda: cls(tile, dx, dy), {})


def parse_tdesc_update(parser: Parser) -> list[SSAValue]:
    """``%t, %dx, %dy : T`` and the RFC's ``: T, index, index -> T``."""
    operands = _asm.parse_operands(parser)
    if len(operands) != 3:
        parser.raise_error(f"expected a descriptor and 2 offsets, got {len(operands)} operands")
    parser.parse_punctuation(":")
    types = _asm.parse_types(parser)
    if _asm.parse_optional_arrow(parser):
        result = _asm.parse_type(parser)
        if result != types[0]:
            parser.raise_error(f"result type {result} must equal the operand type {types[0]}")
    return _asm.resolve(parser, operands, [types[0], IndexType(), IndexType()])


@irdl_op_definition
class TileMMAOp(IRDLOperation):
    """``D = A x B (+ C)`` on 2-D vectors, or on 4-D blocked vectors after blocking."""

    name = "xetile.tile_mma"
    a = operand_def(VectorType)
    b = operand_def(VectorType)
    c = opt_operand_def(VectorType)
    output = result_def(VectorType)
    wg_map_c = opt_prop_def(WgMapAttr, prop_name="wg_map")
    wg_map_a = opt_prop_def(WgMapAttr)
    wg_map_b = opt_prop_def(WgMapAttr)

    POSITIONAL: ClassVar = {1: ("wg_map",), 3: ("wg_map_a", "wg_map_b", "wg_map")}

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue | None, result_type: VectorType,
                 wg_map: WgMapAttr | None = None):
        super().__init__(operands=[a, b, [c] if c is not None else []], result_types=[result_type],
                         properties={"wg_map": wg_map} if wg_map else {})

    def verify_(self) -> None:
        a, b, out = self.a.type, self.b.type, self.output.type
        sa, sb, so = a.get_shape(), b.get_shape(), out.get_shape()
        if len(sa) == 2:
            if sa[1] != sb[0] or (sa[0], sb[1]) != tuple(so):
                raise VerifyException(f"{self.name}: shapes do not multiply: {list(sa)} x {list(sb)} -> {list(so)}; "
                                      f"expected A[M,K] x B[K,N] -> [M,N]")
        elif len(sa) == 4:
            if (sa[1], sa[3]) != (sb[0], sb[2]) or (sa[0], sb[1], sa[2], sb[3]) != tuple(so):
                raise VerifyException(f"{self.name}: blocked shapes do not multiply: {list(sa)} x {list(sb)} -> "
                                      f"{list(so)}; expected [m,k,bm,bk] x [k,n,bk,bn] -> [m,n,bm,bn]")
        else:
            raise VerifyException(f"{self.name}: operands must be 2-D or 4-D vectors")
        if self.c is not None and self.c.type != out:
            raise VerifyException(f"{self.name}: accumulator type {self.c.type} must equal the result type {out}")
        self._verify_wg_maps(sa, sb, so)

    def _verify_wg_maps(self, sa, sb, so) -> None:
        if self.wg_map_c is not None and len(so) == 2:
            check_wg_map(self.wg_map_c, so, f"{self.name} result")
            c = self.wg_map_c
            for name, m, want_layout, dims in (("A", self.wg_map_a, c.layout, (0,)), ("B", self.wg_map_b, c.layout, (1,))):
                if m is None:
                    continue
                if m.layout != want_layout:
                    raise VerifyException(f"{self.name}: wg_map of {name} must have the result's sg_layout "
                                          f"{list(want_layout)}, got {list(m.layout)}")
                d = dims[0]
                idx = 0 if name == "A" else 1
                if m.data[idx] != c.data[d]:
                    raise VerifyException(f"{self.name}: sg_data of {name} along {'M' if name == 'A' else 'N'} must "
                                          f"equal the result's {c.data[d]}, got {m.data[idx]}")
            if self.wg_map_a is not None and self.wg_map_b is not None and self.wg_map_a.data[1] != self.wg_map_b.data[0]:
                raise VerifyException(f"{self.name}: sg_data along K must agree for A and B, got "
                                      f"{self.wg_map_a.data[1]} and {self.wg_map_b.data[0]}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _asm.print_operands(printer, self.operands)
        _asm.print_attr_entries(printer, self)
        printer.print_string(" : ")
        _asm.print_types(printer, [o.type for o in self.operands])
        printer.print_string(" -> ")
        printer.print_attribute(self.output.type)

    @classmethod
    def parse(cls, parser: Parser) -> TileMMAOp:
        a, b, c, out, attrs = parse_mma_like(parser, cls.POSITIONAL)
        return _asm.build_op(parser, cls, lambda: cls(a, b, c, out), attrs)


def parse_mma_like(parser: Parser, positional):
    """``%a, %b(, %c)? attrs : ta, tb(, tc)? -> tres`` (also ``(ta, tb) -> tres``)."""
    operands = _asm.parse_operands(parser)
    if len(operands) not in (2, 3):
        parser.raise_error(f"expected 2 or 3 operands (A, B and optionally C), got {len(operands)}")
    attrs = _asm.parse_attr_entries(parser, positional)
    parser.parse_punctuation(":")
    types = _asm.parse_types(parser)
    _asm.parse_arrow(parser)
    out = _asm.parse_type(parser)
    if len(operands) == 3 and len(types) == 2:
        types.append(out)  # the RFC sometimes omits C's type: it equals the result type
    values = _asm.resolve(parser, operands, types)
    return values[0], values[1], (values[2] if len(values) == 3 else None), out, attrs


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
