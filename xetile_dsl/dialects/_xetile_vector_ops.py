"""XeTile vector ops, atomics and scatter memory ops (the XeTile RFC)::

    %r = xetile.atomic_rmw addf %v, %t : vector<8x16xf32>, !xetile.tile<8x16xf32> -> vector<8x16xf32>
    %r = xetile.tile_transpose %v [1, 0] : vector<64x32xf32> -> vector<32x64xf32>
    %r = xetile.tile_reduce <add> %v [1] : vector<64x32xf32> -> vector<64x1xf32>
    %r = xetile.tile_broadcast %v [0] : vector<1x32xf32> -> vector<64x32xf32>
    %r = xetile.tile_pack %v {inner_blocks = array<i64: 16, 16>} : vector<64x32xf32> -> vector<4x2x16x16xf32>
    %r = xetile.tile_unpack %v {inner_blocks = array<i64: 16, 16>} : vector<4x2x16x16xf32> -> vector<64x32xf32>
    %r = xetile.load_gather %t, %mask {padding = 0.0 : f32} : !xetile.tile<..>, vector<1x16xi1> -> vector<1x16xf32>
    xetile.store_scatter %v, %t, %mask : vector<1x16xf32>, !xetile.tile<..>, vector<1x16xi1>
    %r = xetile.tile_conv_layout %v {wg_map = #a, wg_map_source = #b} : vector<..> -> vector<..>

A ``wg_map`` on a vector op describes its result; ``{#a}`` / ``{#a #b}`` (result, then
source) is accepted for the RFC's unnamed form.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerType, StringAttr, VectorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import AttrSizedOperandSegments, IRDLOperation, irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from . import _asm
from ._fields import like_fields
from ._xetile_atomic_ops import ATOMIC_KINDS, check_order
from ._xetile_ops import PaddedLoadOp, _check_tile_vector, match_by_type
from ._xetile_types import TileType, WgMapAttr, check_wg_map

INT_REDUCE_KINDS = ("add", "mul", "minsi", "minui", "maxsi", "maxui", "and", "or", "xor")
FLOAT_REDUCE_KINDS = ("add", "mul", "minnumf", "maxnumf", "minimumf", "maximumf")
_ONE_MAP = {1: ("wg_map",), 2: ("wg_map", "wg_map_source")}


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _verify_result_map(op: IRDLOperation) -> None:
    wg = op.properties.get("wg_map")
    if isinstance(wg, WgMapAttr) and len(_shape(op.results[0])) == 2:
        check_wg_map(wg, _shape(op.results[0]), f"{op.name} result")


def _print_unary(printer: Printer, op: IRDLOperation, between: str = "", skip: Sequence[str] = ()) -> None:
    _asm.print_operands_to(printer, op, op.results[0].type, between=between, skip=skip)


def _parse_tail(parser: Parser, operand, positional=_ONE_MAP):
    """``attrs : src_type -> result_type`` after the operand."""
    attrs = _asm.parse_attr_entries(parser, positional)
    parser.parse_optional_punctuation(",")
    if parser.parse_optional_punctuation(":") is None:
        parser.parse_punctuation(":")
    src_type = _asm.parse_type(parser)
    # IMEX's convert_layout writes only the source type: the result type is the same
    res_type = _asm.parse_type(parser) if _asm.parse_optional_arrow(parser) else src_type
    return parser.resolve_operand(operand, src_type), res_type, attrs


def _parse_kind(parser: Parser) -> str:
    """``<add>``, ``add``, ``"add"`` or ``"add",``."""
    if parser.parse_optional_punctuation("<") is not None:
        kind = parser.parse_identifier()
        parser.parse_punctuation(">")
    else:
        kind = parser.parse_optional_str_literal() or parser.parse_identifier()
    parser.parse_optional_punctuation(",")
    return kind


class AtomicKindOp(IRDLOperation):
    """An atomic read-modify-write (``xetile.atomic_rmw``, ``xegpu.atomic_rmw``): its
    ``kind``, the old values it returns, the checks and the printed form both share
    (`` addf %v, %t.. {attrs} : types -> type``)."""

    kind = prop_def(StringAttr)
    #: memory order and scope (``_xetile_atomic_ops``; absent: acq_rel, device)
    sem = opt_prop_def(StringAttr)
    scope = opt_prop_def(StringAttr)
    result = result_def(VectorType)

    def verify_(self) -> None:
        check_order(self)
        if self.kind.data not in ATOMIC_KINDS:
            raise VerifyException(f"{self.name}: unknown kind '{self.kind.data}'; use one of {', '.join(ATOMIC_KINDS)}")
        if self.result.type != self.value.type:
            raise VerifyException(f"{self.name}: result type {self.result.type} must equal the value type "
                                  f"{self.value.type}")
        if (self.kind.data == "cmpxchg") != (self.cmp is not None):
            raise VerifyException(f"{self.name}: kind cmpxchg takes a cmp operand, and only it does")
        if self.cmp is not None:
            t = self.value.type.element_type
            if self.cmp.type != self.value.type or not isinstance(t, IntegerType) or t.width.data not in (32, 64):
                raise VerifyException(f"{self.name}: cmpxchg compares 32/64-bit integers: cmp {self.cmp.type} and "
                                      f"value {self.value.type} must be one such vector type")
        self.verify_memory()

    def verify_memory(self) -> None:
        raise NotImplementedError

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.kind.data}")
        _asm.print_operands_to(printer, self, self.result.type, skip=("kind", _asm._SEGMENTS))


@irdl_op_definition
class AtomicRMWOp(AtomicKindOp):
    """Atomically read-modify-write the memory of a tile; returns the old values.  On a
    scattered tile an optional ``mask`` (after the tile, as load_gather's) selects the
    lanes that update memory; a masked-off lane touches nothing and returns 0.  Kind
    ``cmpxchg`` (compare-and-swap) takes ``cmp``, the last operand: an element whose old
    value equals ``cmp`` becomes ``value``.  ``xetile.atomic_rmw cmpxchg %v, %t, %cmp :
    vector<8x16xi32>, !xetile.tile<8x16xi32>, vector<8x16xi32> -> vector<8x16xi32>``"""

    name = "xetile.atomic_rmw"
    value = operand_def(VectorType)
    tile = operand_def(TileType)
    mask = opt_operand_def(VectorType)
    cmp = opt_operand_def(VectorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, kind: str, value: SSAValue, tile: SSAValue, result_type: VectorType | None = None,
                 mask: SSAValue | None = None, cmp: SSAValue | None = None):
        opt = lambda v: [] if v is None else [v]  # noqa: E731
        super().__init__(operands=[value, tile, opt(mask), opt(cmp)],
                         result_types=[result_type or value.type], properties={"kind": StringAttr(kind)})

    def verify_memory(self) -> None:
        _check_tile_vector(self.name, self.tile.type, self.value.type)
        if self.mask is not None:
            _check_mask(self, self.mask, self.tile)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicRMWOp:
        kind = _parse_kind(parser)
        operands = _asm.parse_operands(parser)
        attrs = _asm.parse_attr_entries(parser)
        parser.parse_punctuation(":")
        types = _asm.parse_types(parser)
        _asm.parse_arrow(parser)
        res = _asm.parse_type(parser)
        cas = kind == "cmpxchg"
        if len(operands) != len(types) or len(types) - cas not in (2, 3):
            parser.raise_error("xetile.atomic_rmw: expected a value, a tile, an optional mask (and cmpxchg's cmp), "
                               "with their types")
        mask = cmp = None
        if cas:  # value, tile, (mask,) cmp in that order
            value, tile, *rest = _asm.resolve(parser, operands, types)
            mask, cmp = rest if len(rest) == 2 else (None, rest[0])
        elif len(types) == 3:  # value, tile, mask in that order
            value, tile, mask = _asm.resolve(parser, operands, types)
        else:
            value, tile = match_by_type(parser, operands, types, (VectorType, TileType))
        return _asm.build_op(parser, AtomicRMWOp, lambda: AtomicRMWOp(kind, value, tile, res, mask, cmp), attrs)


AtomicRMWTileOp = _asm.make_alias("xetile.atomic_rmw_tile", AtomicRMWOp,
                                  "The RFC's xetile.atomic_rmw_tile spelling; parses into AtomicRMWOp.")


class WgVectorOp(IRDLOperation):
    """A vector op on one source vector whose result (``wg_map``) and source
    (``wg_map_source``) may carry a workgroup distribution; the op class declares its
    own properties, these fields come after them (xDSL collects parent fields)."""

    source = operand_def(VectorType)
    result = result_def(VectorType)
    wg_map, wg_map_source = like_fields(opt_prop_def, WgMapAttr, 2)

    @staticmethod
    def with_maps(props: dict, wg_map: WgMapAttr | None, wg_map_source: WgMapAttr | None = None) -> dict:
        """``props`` plus the maps that are given."""
        maps = {"wg_map": wg_map, "wg_map_source": wg_map_source}
        return {**props, **{k: v for k, v in maps.items() if v is not None}}


@irdl_op_definition
class TileTransposeOp(WgVectorOp):
    """Transpose a 2-D vector (``permutation`` is [1, 0])."""

    name = "xetile.tile_transpose"
    permutation = prop_def(DenseArrayBase)

    def __init__(self, source: SSAValue, permutation: Sequence[int], result_type: VectorType,
                 wg_map: WgMapAttr | None = None, wg_map_source: WgMapAttr | None = None):
        props = self.with_maps({"permutation": _asm.int_array(permutation)}, wg_map, wg_map_source)
        super().__init__(operands=[source], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        perm = _asm.as_int_list(self.permutation)
        src, res = _shape(self.source), _shape(self.result)
        if len(src) != 2 or perm != [1, 0]:
            raise VerifyException(f"{self.name}: transposes 2-D vectors only, with permutation [1, 0] ([0, 1] "
                                  f"would not transpose); got {list(src)} and {perm} (use tile_pack/unpack for 4-D)")
        if tuple(src[p] for p in perm) != res or self.source.type.element_type != self.result.type.element_type:
            raise VerifyException(f"{self.name}: result must be {[src[p] for p in perm]} of "
                                  f"{self.source.type.element_type}, got {self.result.type}")
        _verify_result_map(self)
        if self.wg_map_source is not None:  # any distribution of the source (RFC Appendix 2.3's differs
            check_wg_map(self.wg_map_source, src, f"{self.name} source")  # from the swapped default)

    def print(self, printer: Printer) -> None:
        _print_unary(printer, self, " " + str(list(_asm.as_int_list(self.permutation))), skip=("permutation",))

    @classmethod
    def parse(cls, parser: Parser) -> TileTransposeOp:
        perm = _asm.parse_optional_int_array(parser)  # RFC: ``tile_transpose [1, 0] %v``
        operand = parser.parse_unresolved_operand()
        if perm is None:
            parser.parse_optional_punctuation(",")  # IMEX: ``transpose %v, [1, 0]``
        perm = _asm.parse_optional_int_array(parser) or perm or [1, 0]
        src, res, attrs = _parse_tail(parser, operand)
        return _asm.build_op(parser, cls, lambda: cls(src, perm, res), attrs)


@irdl_op_definition
class TileReduceOp(WgVectorOp):
    """Reduce a 2-D (or blocked 4-D) vector along ``reduction_dims``; reduced sizes become 1."""

    name = "xetile.tile_reduce"
    kind = prop_def(StringAttr)
    reduction_dims = prop_def(DenseArrayBase)

    def __init__(self, kind: str, source: SSAValue, reduction_dims: Sequence[int], result_type: VectorType | None = None,
                 wg_map: WgMapAttr | None = None):
        if result_type is None:
            shape = [1 if i in reduction_dims else d for i, d in enumerate(source.type.get_shape())]
            result_type = VectorType(source.type.element_type, shape)
        props = self.with_maps({"kind": StringAttr(kind), "reduction_dims": _asm.int_array(reduction_dims)}, wg_map)
        super().__init__(operands=[source], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        elem = self.source.type.element_type
        kinds = INT_REDUCE_KINDS if isinstance(elem, IntegerType) else FLOAT_REDUCE_KINDS
        if self.kind.data not in kinds:
            raise VerifyException(f"{self.name}: kind '{self.kind.data}' is not defined for {elem}; "
                                  f"use one of {', '.join(kinds)}")
        src, dims = _shape(self.source), _asm.as_int_list(self.reduction_dims)
        if len(src) not in (2, 4) or any(not 0 <= d < len(src) for d in dims):
            raise VerifyException(f"{self.name}: reduces a 2-D or 4-D vector along existing dims, got {list(src)} "
                                  f"and dims {dims}")
        want = tuple(1 if i in dims else d for i, d in enumerate(src))
        if _shape(self.result) != want or self.result.type.element_type != elem:
            raise VerifyException(f"{self.name}: result must be vector<{'x'.join(map(str, want))}x{elem}> "
                                  f"(reduced dims become 1), got {self.result.type}")
        _verify_result_map(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" <{self.kind.data}>")
        _print_unary(printer, self, " " + str(list(_asm.as_int_list(self.reduction_dims))),
                     skip=("kind", "reduction_dims"))

    @classmethod
    def parse(cls, parser: Parser) -> TileReduceOp:
        attrs0 = _asm.parse_attr_entries(parser, _ONE_MAP)  # RFC appendix: maps before the kind
        kind = _parse_kind(parser)
        operand = parser.parse_unresolved_operand()
        dims = _asm.parse_int_array(parser)
        src, res, attrs = _parse_tail(parser, operand)
        return _asm.build_op(parser, cls, lambda: cls(kind, src, dims, res), {**attrs0, **attrs})


@irdl_op_definition
class TileBroadcastOp(WgVectorOp):
    """Broadcast a vector along ``broadcast_dims`` (whose source size is 1)."""

    name = "xetile.tile_broadcast"
    broadcast_dims = prop_def(DenseArrayBase)

    def __init__(self, source: SSAValue, broadcast_dims: Sequence[int], result_type: VectorType,
                 wg_map: WgMapAttr | None = None):
        props = self.with_maps({"broadcast_dims": _asm.int_array(broadcast_dims)}, wg_map)
        super().__init__(operands=[source], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        src, res, dims = _shape(self.source), _shape(self.result), _asm.as_int_list(self.broadcast_dims)
        if len(src) != len(res) or len(res) not in (2, 4):
            raise VerifyException(f"{self.name}: source and result must have the same rank, 2 or 4 (reshape a "
                                  f"1-D vector to 2-D first), got {list(src)} and {list(res)}")
        for i, (s, r) in enumerate(zip(src, res)):
            if (i in dims and s != 1) or (i not in dims and s != r):
                raise VerifyException(f"{self.name}: dim {i}: source size {s} -> result {r}; broadcast dims must "
                                      f"have source size 1 and the other dims equal sizes (dims {dims})")
        if self.source.type.element_type != self.result.type.element_type:
            raise VerifyException(f"{self.name}: element types differ")
        _verify_result_map(self)

    def print(self, printer: Printer) -> None:
        _print_unary(printer, self, " " + str(list(_asm.as_int_list(self.broadcast_dims))), skip=("broadcast_dims",))

    @classmethod
    def parse(cls, parser: Parser) -> TileBroadcastOp:
        attrs0 = _asm.parse_attr_entries(parser, _ONE_MAP)
        operand = parser.parse_unresolved_operand()
        dims = _asm.parse_int_array(parser)
        src, res, attrs = _parse_tail(parser, operand)
        return _asm.build_op(parser, cls, lambda: cls(src, dims, res), {**attrs0, **attrs})


class _PackBase(_asm.OperandsToSyntax, IRDLOperation):
    """``tile_pack`` and ``tile_unpack``: a vector reblocked by ``inner_blocks``."""

    source = operand_def(VectorType)
    result = result_def(VectorType)
    inner_blocks = prop_def(DenseArrayBase)

    def _check(self, flat: Sequence[int], blocked: Sequence[int]) -> None:
        ib = _asm.as_int_list(self.inner_blocks)
        if len(ib) != 2 or len(flat) != 2 or any(b <= 0 for b in ib):
            raise VerifyException(f"{self.name}: needs a 2-D vector and two inner_blocks, got {list(flat)}, {ib}")
        if flat[0] % ib[0] or flat[1] % ib[1]:
            raise VerifyException(f"{self.name}: inner_blocks {ib} must divide the 2-D shape {list(flat)}")
        want = (flat[0] // ib[0], flat[1] // ib[1], ib[0], ib[1])
        if tuple(blocked) != want:
            raise VerifyException(f"{self.name}: the 4-D shape must be {list(want)} for {list(flat)} with "
                                  f"inner_blocks {ib}, got {list(blocked)}")
        if self.operands[0].type.element_type != self.results[0].type.element_type:
            raise VerifyException(f"{self.name}: element types differ")

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        src, res, attrs = _parse_tail(parser, operand)
        blocks = _asm.as_int_list(attrs.pop("inner_blocks")) if "inner_blocks" in attrs else None
        if blocks is None:
            parser.raise_error(f"{cls.name} needs {{inner_blocks = array<i64: m, n>}}")
        return _asm.build_op(parser, cls, lambda: cls(src, blocks, res), attrs)


@irdl_op_definition
class TilePackOp(_PackBase):
    """2-D vector -> 4-D blocked vector [M/bm, N/bn, bm, bn] (internal, for blocking)."""

    name = "xetile.tile_pack"

    def __init__(self, source: SSAValue, inner_blocks: Sequence[int], result_type: VectorType | None = None):
        if result_type is None:
            m, n = source.type.get_shape()
            result_type = VectorType(source.type.element_type, [m // inner_blocks[0], n // inner_blocks[1], *inner_blocks])
        super().__init__(operands=[source], result_types=[result_type],
                         properties={"inner_blocks": _asm.int_array(inner_blocks)})

    def verify_(self) -> None:
        self._check(_shape(self.source), _shape(self.result))


@irdl_op_definition
class TileUnpackOp(_PackBase):
    """4-D blocked vector -> 2-D vector (internal, for blocking)."""

    name = "xetile.tile_unpack"

    def __init__(self, source: SSAValue, inner_blocks: Sequence[int], result_type: VectorType | None = None):
        if result_type is None:
            a, b, bm, bn = source.type.get_shape()
            result_type = VectorType(source.type.element_type, [a * bm, b * bn])
        super().__init__(operands=[source], result_types=[result_type],
                         properties={"inner_blocks": _asm.int_array(inner_blocks)})

    def verify_(self) -> None:
        self._check(_shape(self.result), _shape(self.source))


def _check_mask(op: IRDLOperation, mask: SSAValue, tile: SSAValue) -> None:
    mt = mask.type
    if not (isinstance(mt, VectorType) and mt.element_type == IntegerType(1)
            and tuple(mt.get_shape()) == tile.type.get_shape()):
        raise VerifyException(f"{op.name}: mask must be vector<{'x'.join(map(str, tile.type.get_shape()))}xi1>, got {mt}")
    if not tile.type.attr.is_scattered:
        raise VerifyException(f"{op.name}: needs a scattered tile (#xetile.tile_attr<scattered = true>); "
                              f"use load_tile/store_tile for a block tile")


class _ScatterTileOp(_asm.OperandsToSyntax, IRDLOperation):
    """``load_gather`` and ``store_scatter``: a scattered tile and its mask (the last
    operands, after a stored value); the value has the tile's shape."""

    tile = operand_def(TileType)
    mask = operand_def(VectorType)

    def verify_(self) -> None:
        _check_mask(self, self.mask, self.tile)
        if tuple(self.value.type.get_shape()) != self.tile.type.get_shape():
            raise VerifyException(f"{self.name}: {'result' if self.results else 'value'} shape must equal the "
                                  "tile shape")


@irdl_op_definition
class LoadGatherOp(_ScatterTileOp, PaddedLoadOp):
    name = "xetile.load_gather"

    def __init__(self, tile: SSAValue, mask: SSAValue, result_type: VectorType, padding: Attribute | None = None):
        super().__init__(operands=[tile, mask], result_types=[result_type], properties=self.padding_props(padding))

    @classmethod
    def parse(cls, parser: Parser) -> LoadGatherOp:
        operands = _asm.parse_operands(parser)
        parser.parse_optional_punctuation(",")
        attrs = _asm.parse_attr_entries(parser)
        parser.parse_punctuation(":")
        types = _asm.parse_types(parser)
        _asm.parse_arrow(parser)
        res = _asm.parse_type(parser)
        if len(types) == 1 and len(operands) == 2:  # RFC omits the mask type
            types.append(VectorType(IntegerType(1), res.get_shape()))
        tile, mask = match_by_type(parser, operands, types, (TileType, VectorType))
        return _asm.build_op(parser, cls, lambda: cls(tile, mask, res), attrs)


@irdl_op_definition
class StoreScatterOp(_ScatterTileOp):
    name = "xetile.store_scatter"
    value = operand_def(VectorType)

    def __init__(self, value: SSAValue, tile: SSAValue, mask: SSAValue):
        super().__init__(operands=[value, tile, mask])

    @classmethod
    def parse(cls, parser: Parser) -> StoreScatterOp:
        operands, attrs, types, last = _asm.parse_operands_types(parser)
        if last is not None:  # RFC: ``vector<..> into tile<..>`` (mask type implied)
            types.append(last)
        if len(types) == 2 and len(operands) == 3:
            types.insert(1, VectorType(IntegerType(1), types[0].get_shape()))
        values = _asm.resolve(parser, operands, types)
        tile = next((v for v in values if isinstance(v.type, TileType)), None)
        rest = [v for v in values if v is not tile]
        if tile is None or len(rest) != 2:
            parser.raise_error("expected a value, a scattered tile and a mask")
        value, mask = sorted(rest, key=lambda v: isinstance(v.type.element_type, IntegerType)
                             and v.type.element_type.width.data == 1)
        return _asm.build_op(parser, cls, lambda: cls(value, tile, mask), attrs)


@irdl_op_definition
class TileConvLayoutOp(_asm.OperandsToSyntax, WgVectorOp):
    """Redistribute a workgroup-level vector from ``wg_map_source`` to ``wg_map``."""

    name = "xetile.tile_conv_layout"

    def __init__(self, source: SSAValue, wg_map: WgMapAttr, wg_map_source: WgMapAttr | None = None,
                 result_type: VectorType | None = None):
        props = self.with_maps({}, wg_map, wg_map_source)
        super().__init__(operands=[source], result_types=[result_type or source.type], properties=props)

    def verify_(self) -> None:
        if self.result.type != self.source.type:
            raise VerifyException(f"{self.name}: result type {self.result.type} must equal the source type")
        if self.wg_map is None:
            raise VerifyException(f"{self.name}: needs the target wg_map ({{wg_map = #xetile.wg_map<...>}})")
        _verify_result_map(self)
        if self.wg_map_source is not None:
            check_wg_map(self.wg_map_source, _shape(self.source), f"{self.name} source")

    @classmethod
    def parse(cls, parser: Parser) -> TileConvLayoutOp:
        attrs0 = _asm.parse_attr_entries(parser, _ONE_MAP)
        operand = parser.parse_unresolved_operand()
        src, res, attrs = _parse_tail(parser, operand)
        attrs = {**attrs0, **attrs}
        return _asm.build_op(parser, cls, lambda: cls(src, attrs.get("wg_map"), None, res), attrs)


# IMEX's later names for the same ops (docs/ir.md, "Spellings from IMEX and MLIR")
LoadAlias = _asm.make_alias("xetile.load", LoadGatherOp, "IMEX name of xetile.load_gather.")
StoreAlias = _asm.make_alias("xetile.store", StoreScatterOp, "IMEX name of xetile.store_scatter.")
TransposeAlias = _asm.make_alias("xetile.transpose", TileTransposeOp, "IMEX name of xetile.tile_transpose.")
ReductionAlias = _asm.make_alias("xetile.reduction", TileReduceOp, "IMEX name of xetile.tile_reduce.")
ReduceAlias = _asm.make_alias("xetile.reduce", TileReduceOp, "IMEX's later name of xetile.tile_reduce.")
BroadcastAlias = _asm.make_alias("xetile.broadcast", TileBroadcastOp, "IMEX name of xetile.tile_broadcast.")
ConvertLayoutAlias = _asm.make_alias("xetile.convert_layout", TileConvLayoutOp, "IMEX name of xetile.tile_conv_layout.")
ALIAS_OPS = [LoadAlias, StoreAlias, TransposeAlias, ReductionAlias, ReduceAlias, BroadcastAlias, ConvertLayoutAlias]
