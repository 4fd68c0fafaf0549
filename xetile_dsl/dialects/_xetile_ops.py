"""XeTile memory ops and tile_mma (the XeTile RFC), with the RFC's custom syntax.

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

from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, VectorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (AttrSizedOperandSegments, IRDLOperation, irdl_op_definition, operand_def, opt_operand_def,
                       opt_prop_def, result_def, var_operand_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from . import _asm, _mixed
from ._fields import like_fields
from ._init_syntax import InitLikeOp, is_index_vector, parse_update_offsets
from ._memref_layout import check_order_matches, const_index, is_address
from ._xetile_types import TileType, WgMapAttr, check_wg_map


@irdl_op_definition
class InitTileOp(InitLikeOp):
    """Create a tile over a 2-D base matrix: a memref (static, or dynamic with shape and
    strides operands) or a raw i64 address with shape and strides; or a scattered tile
    from an i64 address and a vector of per-element offsets."""

    name = "xetile.init_tile"
    source = operand_def()
    offsets = var_operand_def()  # index scalars, or one vector<..xindex> for scatter tiles
    sizes = var_operand_def(IndexType)
    tile = result_def(TileType)

    def verify_(self) -> None:
        tile_type = self.tile.type
        assert isinstance(tile_type, TileType)
        self._verify_memory_space(tile_type)
        if tile_type.attr.is_scattered:
            self._verify_scatter(tile_type)
            return
        _mixed.verify_static(self, self.offsets)
        offsets = _mixed.mixed(self, self.offsets)
        if len(offsets) != 2 or not all(isinstance(o, int) or isinstance(o.type, IndexType) for o in offsets):
            raise VerifyException(f"{self.name}: expects 2 index offsets, got {len(offsets)}; a vector of "
                                  "offsets needs a scattered tile (#xetile.tile_attr<scattered = true>)")
        src = self.source.type
        if isinstance(src, MemRefType):
            if src.element_type != tile_type.element_type:
                raise VerifyException(f"{self.name}: element type {src.element_type} of the base does not match "
                                      f"the tile's {tile_type.element_type}")
            dynamic = any(d < 0 for d in src.get_shape())
            if dynamic and (len(self.sizes) != 2 or len(self.strides) != 2):
                raise VerifyException(f"{self.name}: a dynamic memref needs 2 sizes and 2 strides")
            if not dynamic and (self.sizes or self.strides):
                raise VerifyException(f"{self.name}: a memref with a static shape takes no sizes or strides "
                                      "operands (they come from the memref type)")
        elif is_address(src):
            if len(self.sizes) != 2 or len(self.strides) != 2:
                raise VerifyException(f"{self.name}: an i64 base address needs 2 sizes and 2 strides")
        else:
            raise VerifyException(f"{self.name}: base must be a memref or an i64 address, got {src}")
        check_order_matches(self.name, src, tile_type.attr.order_list, [const_index(v) for v in self.strides])

    def _verify_memory_space(self, tile_type: TileType) -> None:
        src = self.source.type
        if not isinstance(src, MemRefType):
            return
        space = src.memory_space
        src_space = space.value.data if isinstance(space, IntegerAttr) else (3 if _asm.as_word(space) == "slm" else 0)
        if src_space != tile_type.attr.memory_space.data:
            raise VerifyException(f"{self.name}: the base memref is in memory space {src_space} but the tile says "
                                  f"memory_space = {tile_type.attr.memory_space.data}; make them agree")

    def _verify_scatter(self, tile_type: TileType) -> None:
        # Offsets are linear element offsets from the base's first element, so any memref
        # (the DSL passes the 2-D array itself) or an i64 address can be the base.
        src = self.source.type
        if not (is_address(src) or isinstance(src, MemRefType)):
            raise VerifyException(f"{self.name}: a scattered tile takes an i64 address or a memref base, "
                                  f"got {src}")
        if len(self.offsets) != 1 or not is_index_vector(self.offsets[0].type):
            raise VerifyException(f"{self.name}: a scattered tile takes one vector<..xindex> of offsets")
        if tuple(self.offsets[0].type.get_shape()) != tile_type.get_shape():
            raise VerifyException(f"{self.name}: offsets shape {list(self.offsets[0].type.get_shape())} must equal "
                                  f"the scattered tile shape {list(tile_type.get_shape())}")
        if self.sizes or self.strides:
            raise VerifyException(f"{self.name}: a scattered tile takes no sizes or strides")


class PaddedLoadOp(IRDLOperation):
    """A load into a vector ``value`` whose out-of-bounds elements read ``padding``
    (xetile_dsl's extension; the hardware reads 0 and codegen selects): ``load_tile``,
    ``load_gather`` and ``xegpu.load_nd``."""

    value = result_def(VectorType)
    padding = opt_prop_def(Attribute)

    @staticmethod
    def padding_props(padding: Attribute | None) -> dict[str, Attribute]:
        return {"padding": padding} if padding else {}

    @classmethod
    def normalize_entries(cls, parser: Parser, attrs: dict[str, Attribute]) -> dict[str, Attribute]:
        """The parsed ``{..}`` with the RFC's other names mapped to the op's (none here)."""
        return attrs

    @classmethod
    def parse(cls, parser: Parser) -> PaddedLoadOp:
        """``%src {attrs} : src_type -> vector<..>`` (``load_tile``, ``load_nd``)."""
        source, result_type, attrs = _asm.parse_operand_to(parser)
        attrs = cls.normalize_entries(parser, attrs)
        return _asm.build_op(parser, cls, lambda: cls(source, result_type), attrs)


@irdl_op_definition
class LoadTileOp(_asm.OperandsToSyntax, PaddedLoadOp):
    """Load a tile into a vector (2-D, or 4-D when the tile has inner_blocks)."""

    name = "xetile.load_tile"
    tile = operand_def(TileType)

    def __init__(self, tile: SSAValue, result_type: VectorType, padding: Attribute | None = None):
        super().__init__(operands=[tile], result_types=[result_type], properties=self.padding_props(padding))

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
class UpdateTileOffsetOp(_mixed.ConstOffsetsOp):
    """Move a tile by (offset_x, offset_y) elements (rows, columns); either may be a
    constant (``const_offsets``).  A scattered tile moves by a vector of ``indices``."""

    name = "xetile.update_tile_offset"
    tile = operand_def(TileType)
    offset_x, offset_y = like_fields(opt_operand_def, IndexType, 2)
    indices = opt_operand_def(VectorType)
    result = result_def(TileType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, tile: SSAValue, offset_x: SSAValue | None, offset_y: SSAValue | None = None,
                 indices: SSAValue | None = None, const_offsets: Sequence[int] | None = None):
        props = {} if const_offsets is None else {_mixed.CONST_OFFSETS: _mixed.const_attr(const_offsets)}
        opt = lambda v: [] if v is None else [v]  # noqa: E731
        super().__init__(operands=[tile, opt(offset_x), opt(offset_y), opt(indices)], result_types=[tile.type],
                         properties=props)

    def offset_values(self) -> list[SSAValue]:
        return [v for v in (self.offset_x, self.offset_y) if v is not None]

    def verify_(self) -> None:
        if self.result.type != self.tile.type:
            raise VerifyException(f"{self.name}: result type must equal the tile type")
        tile = self.tile.type
        if tile.attr.is_scattered:
            if self.indices is None or self.offset_values() or self.const_offsets is not None:
                raise VerifyException(f"{self.name}: a scattered tile moves by one vector<..xindex> of indices")
            if not is_index_vector(self.indices.type) or self.indices.type.get_shape() != tile.get_shape():
                raise VerifyException(f"{self.name}: indices must be vector<{'x'.join(map(str, tile.get_shape()))}"
                                      f"xindex>, got {self.indices.type}")
            return
        if self.indices is not None:
            raise VerifyException(f"{self.name}: a vector of indices needs a scattered tile; use 2 index offsets")
        _mixed.verify_static(self, self.offset_values())
        if len(_mixed.mixed(self, self.offset_values())) != 2:
            raise VerifyException(f"{self.name}: expects 2 offsets (rows, columns)")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tile)
        printer.print_string(", ")
        if self.indices is not None:
            printer.print_operand(self.indices)
        elif self.const_offsets is not None:
            _mixed.print_mixed(printer, self, self.offset_values())
        else:
            _asm.print_operands(printer, self.offset_values())
        _asm.print_attr_entries(printer, self, skip=(_mixed.CONST_OFFSETS,))
        printer.print_string(" : ")
        printer.print_attribute(self.tile.type)
        if self.indices is not None:
            printer.print_string(", ")
            printer.print_attribute(self.indices.type)

    @classmethod
    def parse(cls, parser: Parser) -> UpdateTileOffsetOp:
        tile_u, operands, static, attrs, types = parse_update_offsets(parser)
        tile = parser.resolve_operand(tile_u, types[0])
        if len(operands) == 1 and static is None and len(types) > 1 and isinstance(types[1], VectorType):
            idx = parser.resolve_operand(operands[0], types[1])
            return _asm.build_op(parser, cls, lambda: cls(tile, None, None, idx), attrs)
        values = [parser.resolve_operand(o, IndexType()) for o in operands]
        entries = static if static is not None else [_mixed.DYNAMIC] * len(values)
        if len(entries) != 2:
            parser.raise_error(f"expected 2 offsets (rows, columns), got {len(entries)}")
        it = iter(values)
        dx, dy = (next(it) if e == _mixed.DYNAMIC else None for e in entries)
        return _asm.build_op(parser, cls, lambda: cls(tile, dx, dy, None, static), attrs)


def parse_tdesc_update(parser: Parser) -> list[SSAValue]:
    """``%t, %dx, %dy : T`` and the RFC's ``: T, index, index -> T`` (dynamic offsets only)."""
    tdesc, operands, static, _, types = parse_update_offsets(parser)
    if static is not None or len(operands) != 2:
        parser.raise_error(f"expected a descriptor and 2 offset values, got {len(operands)}")
    return _asm.resolve(parser, [tdesc, *operands], [types[0], IndexType(), IndexType()])


@irdl_op_definition
class TileMMAOp(_asm.OperandsToSyntax, IRDLOperation):
    """``D = A x B (+ C)`` on 2-D vectors, or on 4-D blocked vectors after blocking."""

    name = "xetile.tile_mma"
    a, b = like_fields(operand_def, VectorType, 2)
    c = opt_operand_def(VectorType)
    output = result_def(VectorType)
    wg_map_c = opt_prop_def(WgMapAttr, prop_name="wg_map")
    wg_map_a, wg_map_b = like_fields(opt_prop_def, WgMapAttr, 2)

    POSITIONAL: ClassVar = {1: ("wg_map",), 3: ("wg_map_a", "wg_map_b", "wg_map")}

    def __init__(self, a: SSAValue, b: SSAValue, c: SSAValue | None, result_type: VectorType,
                 wg_map: WgMapAttr | None = None):
        super().__init__(operands=[a, b, [c] if c is not None else []], result_types=[result_type],
                         properties={"wg_map": wg_map} if wg_map else {})

    def verify_(self) -> None:
        a, b, out = self.a.type, self.b.type, self.output.type
        sa, sb, so = a.get_shape(), b.get_shape(), out.get_shape()
        if not len(sa) == len(sb) == len(so):
            raise VerifyException(f"{self.name}: A, B and the result must have the same rank (2-D, or 4-D after "
                                  f"blocking), got {a}, {b} -> {out}")
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
        if a.element_type != b.element_type and not _mixed_signed_ints(a.element_type, b.element_type):
            # i8 x u8 (and u8 x i8) are DPAS forms too: only the widths must agree.
            raise VerifyException(f"{self.name}: A and B must have the same element type (or 8-bit integers "
                                  f"of either signedness), got {a.element_type} and {b.element_type}")
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


def _mixed_signed_ints(a, b) -> bool:
    """True for two integer types of the same width that differ only in signedness."""
    return isinstance(a, IntegerType) and isinstance(b, IntegerType) and a.width == b.width
