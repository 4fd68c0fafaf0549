"""vector ops the XeGPU RFC's workgroup snippets use, with the layouts attached to them::

    %s = vector.shape_cast %v {layout_result_0 = #xegpu.layout<..>} : vector<256x128xf32> to vector<8x32x128xf32>
    %t = vector.transpose %v, [1, 0] {layout_result_0 = #xegpu.layout<..>} : vector<512x128xf32> to vector<128x512xf32>
    %r = vector.multi_reduction <add>, %v, %acc {layout_result_0 = #xegpu.slice<#l, dims = [1]>} [1]
           : vector<256x128xf32> to vector<256xf32>
    %b = vector.broadcast %v {layout_operand_0 = #xegpu.slice<#l, dims = [0]>} : vector<128xf32> to vector<64x128xf32>
    %e = vector.extract_strided_slice %v {offsets = [8, 0], sizes = [8, 16], strides = [1, 1]} : vector<16x16xf32> to vector<8x16xf32>
    %i = vector.insert_strided_slice %e, %v {offsets = [0, 0], strides = [1, 1]} : vector<8x16xf32> into vector<16x16xf32>

xDSL 0.74 has no shape_cast, transpose, multi_reduction or strided slices (the register
transpose joins blocks into lanes x lanes squares with them), and its broadcast checks only
the element type; :data:`VECTOR` is xDSL's vector dialect with these definitions added
(broadcast and bitcast replaced by subclasses that add MLIR's shape rules).

Layouts are discardable attributes, as MLIR's XeGPU passes attach them:
``layout_result_0`` describes the result, ``layout_operand_N`` operand N.  The RFC's
unnamed form ``{#l}`` names the attribute by rank (the result's unless only the source
has the attribute's rank); ``{#a #b}`` is ``layout_operand_0, layout_result_0`` (source
first, as the RFC's Appendix 1.2 writes ``vector.transpose %10 {#mp_bt #mp_b}``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar
from math import prod

from xdsl.dialects import vector
from xdsl.dialects.builtin import DenseArrayBase, IntegerType, IndexType, StringAttr, VectorType
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import IRDLOperation, base, irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from . import _asm
from ._fields import PureVectorOp, like_fields
from ._xegpu_attrs import LayoutAttr, SGMapAttr, SliceAttr, layout_rank
from ._xetile_vector_ops import FLOAT_REDUCE_KINDS, INT_REDUCE_KINDS

RESULT_LAYOUT = "layout_result_0"
_BARE = "__unnamed_layout"
_POSITIONAL = {1: (_BARE,), 2: ("layout_operand_0", RESULT_LAYOUT)}


def operand_layout_name(index: int) -> str:
    return f"layout_operand_{index}"


def _shape(t: Attribute) -> tuple[int, ...]:
    return tuple(t.get_shape()) if isinstance(t, VectorType) else ()


# ----------------------------------------------------------------------------- layouts
def verify_layout_attrs(op: IRDLOperation) -> None:
    """Every ``layout_result_0`` / ``layout_operand_N`` names a value of the op and is a
    layout or slice of the value's rank (a plain layout also follows the workgroup
    distribution rule) or an sg_map that divides a 1-D/2-D value."""
    named = {RESULT_LAYOUT: op.results[0]} if op.results else {}
    named.update({operand_layout_name(i): v for i, v in enumerate(op.operands)})
    for name, attr in op.attributes.items():
        if not name.startswith("layout_"):
            continue
        if name not in named:
            raise VerifyException(f"{op.name}: {name} names no value of the op (it has {len(op.operands)} "
                                  f"operand(s); legal: {', '.join(sorted(named))})")
        shape = _shape(named[name].type)
        if isinstance(attr, SGMapAttr):
            _check_sg_map(op, name, attr, named[name].type)
            continue
        if not isinstance(attr, (LayoutAttr, SliceAttr)):
            raise VerifyException(f"{op.name}: {name} must be #xegpu.layout, #xegpu.slice or #xegpu.sg_map, "
                                  f"got {attr}")
        if layout_rank(attr) != len(shape):
            raise VerifyException(f"{op.name}: {name} has rank {layout_rank(attr)} but describes "
                                  f"{named[name].type} of rank {len(shape)}")
        if isinstance(attr, LayoutAttr):
            attr.check_shape(shape, f"{op.name} {name}")


def _check_sg_map(op: IRDLOperation, name: str, sg_map: SGMapAttr, value_type: Attribute) -> None:
    """The RFC's subgroup-level form: an sg_map describes a 1-D or 2-D vector and divides it."""
    if len(_shape(value_type)) not in (1, 2):
        raise VerifyException(f"{op.name}: {name} is an sg_map, which describes 1-D or 2-D vectors, not "
                              f"{value_type}")
    sg_map.fragment_shape(_shape(value_type))


def _layout(op: IRDLOperation, name: str) -> Attribute | None:
    return op.attributes.get(name)


def _sg_count(attr: Attribute) -> int | None:
    """Subgroups a layout distributes over (None without sg_layout)."""
    while isinstance(attr, SliceAttr):
        attr = attr.parent
    return prod(attr.field("sg_layout")) if isinstance(attr, LayoutAttr) and attr.field("sg_layout") else None


def _name_unnamed(attrs: dict[str, Attribute], src_type: Attribute, res_type: Attribute) -> dict[str, Attribute]:
    """The RFC's single unnamed layout describes the result, unless only the source has its rank."""
    if _BARE not in attrs:
        return attrs
    attr = attrs.pop(_BARE)
    rank = layout_rank(attr) if isinstance(attr, (LayoutAttr, SliceAttr)) else None
    to_source = rank is not None and rank != len(_shape(res_type)) and rank == len(_shape(src_type))
    attrs[operand_layout_name(0) if to_source else RESULT_LAYOUT] = attr
    return attrs


def _parse_attrs(parser: Parser) -> dict[str, Attribute]:
    return _asm.parse_attr_entries(parser, _POSITIONAL)


def _parse_types(parser: Parser) -> tuple[Attribute, Attribute]:
    """``: T to U`` (also ``into`` / ``->``)."""
    parser.parse_punctuation(":")
    src = _asm.parse_type(parser)
    _asm.parse_arrow(parser)
    return src, _asm.parse_type(parser)


def _build(parser: Parser, cls, make, attrs, src_type, res_type):
    return _asm.build_op(parser, cls, make, _name_unnamed(attrs, src_type, res_type))


def _print_types(printer: Printer, op: IRDLOperation, src: SSAValue) -> None:
    printer.print_string(" : ")
    printer.print_attribute(src.type)
    printer.print_string(" to ")
    printer.print_attribute(op.results[0].type)


class _CastSyntax:
    """``%src {layouts} : T to U`` (also ``into`` / ``->``) for one-operand casts built as
    ``cls(source, result_type)``."""

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        cls.check_after_source(parser)
        attrs = _parse_attrs(parser)
        src_type, res_type = _parse_types(parser)
        src = parser.resolve_operand(operand, src_type)
        return _build(parser, cls, lambda: cls(src, res_type), attrs, src_type, res_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        _asm.print_attr_entries(printer, self)
        _print_types(printer, self, self.source)

    @classmethod
    def check_after_source(cls, parser: Parser) -> None:
        """Refuse a spelling of another op right after the source (none by default)."""


# ----------------------------------------------------------------------------- shape_cast
@irdl_op_definition
class ShapeCastOp(_CastSyntax, PureVectorOp):
    """``vector.shape_cast``: the same elements, in row-major order, in another shape."""

    name = "vector.shape_cast"
    source = operand_def(VectorType)

    def __init__(self, source: SSAValue, result_type: VectorType):
        # Operation's constructor (one operand, one result): xDSL's generic builder costs
        # tens of microseconds more, and a lowering makes one per coalesced block
        Operation.__init__(self, operands=[SSAValue.get(source)], result_types=[result_type])

    def verify_(self) -> None:
        src, res = self.source.type, self.result.type
        if src.element_type != res.element_type:
            raise VerifyException(f"vector.shape_cast: element types differ ({src} to {res}); "
                                  f"use vector.bitcast to change the element type")
        if prod(_shape(src)) != prod(_shape(res)):
            raise VerifyException(f"vector.shape_cast: {src} has {prod(_shape(src))} elements, {res} has "
                                  f"{prod(_shape(res))}; the element count must be preserved")
        verify_layout_attrs(self)
        _verify_same_subgroups(self, _layout(self, operand_layout_name(0)), _layout(self, RESULT_LAYOUT))



def _verify_same_subgroups(op: IRDLOperation, src: Attribute | None, res: Attribute | None) -> None:
    """A reshaping op keeps the number of subgroups the data is spread over."""
    if src is None or res is None or _sg_count(src) is None or _sg_count(res) is None:
        return
    if _sg_count(src) != _sg_count(res):
        raise VerifyException(f"{op.name}: the source layout spreads over {_sg_count(src)} subgroups, the result "
                              f"layout over {_sg_count(res)}; sg_layout must keep the subgroup count")


# ----------------------------------------------------------------------------- transpose
@irdl_op_definition
class TransposeOp(PureVectorOp):
    """``vector.transpose %v, [1, 0]``: result dim i is source dim permutation[i]."""

    name = "vector.transpose"
    vector = operand_def(VectorType)
    permutation = prop_def(DenseArrayBase)

    def __init__(self, source: SSAValue, permutation: Sequence[int], result_type: VectorType | None = None):
        source = SSAValue.get(source)
        if result_type is None:
            shape = _shape(source.type)
            result_type = VectorType(source.type.element_type, [shape[p] for p in permutation])
        super().__init__(operands=[source], result_types=[result_type],
                         properties={"permutation": _asm.int_array(permutation)})

    @property
    def perm(self) -> list[int]:
        return [int(v) for v in self.permutation.get_values()]

    def verify_(self) -> None:
        src, res, perm = _shape(self.vector.type), _shape(self.result.type), self.perm
        if sorted(perm) != list(range(len(src))):
            raise VerifyException(f"vector.transpose: permutation {perm} must be a permutation of "
                                  f"0..{len(src) - 1} for {self.vector.type}")
        if self.vector.type.element_type != self.result.type.element_type or res != tuple(src[p] for p in perm):
            want = VectorType(self.vector.type.element_type, [src[p] for p in perm])
            raise VerifyException(f"vector.transpose: {self.vector.type} permuted by {perm} is {want}, "
                                  f"not {self.result.type}")
        verify_layout_attrs(self)
        self._verify_layouts(perm)

    def _verify_layouts(self, perm: list[int]) -> None:
        src, res = _layout(self, operand_layout_name(0)), _layout(self, RESULT_LAYOUT)
        if isinstance(src, SGMapAttr) and isinstance(res, SGMapAttr):
            want = SGMapAttr(src.layout[::-1], src.data[::-1])  # the RFC: transpose swaps wi_layout and wi_data
        elif isinstance(src, LayoutAttr) and isinstance(res, LayoutAttr):
            want = permute_layout(src, perm)
        else:
            return
        if res != want:
            raise VerifyException(f"vector.transpose: the result layout must be the source layout with its "
                                  f"dimensions permuted by {perm}: {want}, got {res}")

    @classmethod
    def parse(cls, parser: Parser) -> "TransposeOp":
        perm = _asm.parse_optional_int_array(parser)  # the RFC's ``[1, 0] %v``
        operand = parser.parse_unresolved_operand()
        if perm is None and parser.parse_optional_punctuation(",") is not None:
            perm = _asm.parse_int_array(parser)
        attrs = _parse_attrs(parser)
        if perm is None:
            perm = _asm.parse_optional_int_array(parser)  # the RFC's ``%v [1, 0] {..}``
        src_type, res_type = _parse_types(parser)
        src = parser.resolve_operand(operand, src_type)
        if perm is None:  # the RFC writes 2-D transposes without one
            perm = list(range(len(_shape(src_type))))[::-1]
        return _build(parser, cls, lambda: cls(src, perm, res_type), attrs, src_type, res_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.vector)
        printer.print_string(", ")
        _asm.print_int_array(printer, self.perm)
        _asm.print_attr_entries(printer, self, skip=("permutation",))
        _print_types(printer, self, self.vector)


def permute_layout(layout: LayoutAttr, perm: Sequence[int]) -> LayoutAttr:
    """The layout of a value transposed by ``perm``: every per-dim field permuted; ``order``
    (dims from fastest) renamed to the new dim numbers."""
    fields = {f: layout.field(f) for f in ("sg_layout", "sg_data", "inst_data", "lane_layout", "lane_data")}
    moved = {f: [v[p] for p in perm] if v else [] for f, v in fields.items()}
    new_dim = {old: new for new, old in enumerate(perm)}
    order = [new_dim[d] for d in layout.field("order")]
    return LayoutAttr(order=order, **moved)


# ----------------------------------------------------------------------------- multi_reduction
@irdl_op_definition
class MultiReductionOp(IRDLOperation):
    """``vector.multi_reduction <kind>, %src, %acc [dims]``: reduce ``dims`` of ``%src``,
    combined with ``%acc`` (the result's type: the source shape without ``dims``, or the
    element type when every dim is reduced)."""

    name = "vector.multi_reduction"
    source = operand_def(VectorType)
    acc = operand_def()
    result = result_def()
    #: the kind word; MLIR's generic ``#vector.kind<add>`` is accepted too (xDSL 0.74 cannot print it back)
    kind = prop_def(base(StringAttr) | base(vector.CombiningKindAttr))
    reduction_dims = prop_def(DenseArrayBase)
    traits = traits_def(Pure())

    def __init__(self, kind: str, source: SSAValue, acc: SSAValue, dims: Sequence[int]):
        acc = SSAValue.get(acc)
        super().__init__(operands=[source, acc], result_types=[acc.type],
                         properties={"kind": StringAttr(kind), "reduction_dims": _asm.int_array(dims)})

    @property
    def dims(self) -> list[int]:
        return [int(v) for v in self.reduction_dims.get_values()]

    @property
    def kind_name(self) -> str:
        """``add``, ``maximumf``, ... (from ``"add"`` or MLIR's ``#vector.kind<add>``)."""
        data = self.kind.data
        if isinstance(data, str):  # StringAttr, or a parsed #vector.kind<..>
            return data
        return "|".join(sorted(getattr(flag, "value", str(flag)) for flag in data))

    def reduced_type(self) -> Attribute:
        """The source type without the reduced dims."""
        src = self.source.type
        kept = [s for i, s in enumerate(_shape(src)) if i not in self.dims]
        return VectorType(src.element_type, kept) if kept else src.element_type

    def verify_(self) -> None:
        src, dims = self.source.type, self.dims
        if len(set(dims)) != len(dims) or any(not 0 <= d < len(_shape(src)) for d in dims):
            raise VerifyException(f"vector.multi_reduction: reduction dims {dims} must be distinct dims of {src}")
        want = self.reduced_type()
        if self.result.type != want or self.acc.type != want:
            raise VerifyException(f"vector.multi_reduction: reducing dims {dims} of {src} gives {want}; the "
                                  f"accumulator is {self.acc.type} and the result {self.result.type}")
        self._verify_kind(src.element_type)
        verify_layout_attrs(self)
        self._verify_layouts()

    def _verify_kind(self, elem: Attribute) -> None:
        legal = INT_REDUCE_KINDS if isinstance(elem, (IntegerType, IndexType)) else FLOAT_REDUCE_KINDS
        if self.kind_name not in legal:
            raise VerifyException(f"vector.multi_reduction: kind <{self.kind_name}> is not defined on {elem} "
                                  f"(legal: {', '.join(legal)})")

    def _verify_layouts(self) -> None:
        src, res = _layout(self, operand_layout_name(0)), _layout(self, RESULT_LAYOUT)
        acc = _layout(self, operand_layout_name(1))
        if acc is not None and res is not None and acc != res:
            raise VerifyException(f"vector.multi_reduction: the accumulator layout {acc} differs from the "
                                  f"result layout {res}")
        if isinstance(res, SliceAttr):
            if sorted(res.dim_list) != sorted(self.dims):
                raise VerifyException(f"vector.multi_reduction: the result layout must slice the reduced dims "
                                      f"{sorted(self.dims)}, got dims = {list(res.dim_list)}")
            if src is not None and res.parent != src:
                raise VerifyException(f"vector.multi_reduction: the result layout must be a slice of the source "
                                      f"layout {src}, got a slice of {res.parent}")
        elif isinstance(res, LayoutAttr) and _shape(self.result.type):
            raise VerifyException(f"vector.multi_reduction: the result layout must be "
                                  f"#xegpu.slice<#source_layout, dims = {sorted(self.dims)}>, got {res}")

    @classmethod
    def parse(cls, parser: Parser) -> "MultiReductionOp":
        kind = _parse_kind(parser)
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        acc = parser.parse_unresolved_operand()
        attrs = _parse_attrs(parser)
        dims = _asm.parse_int_array(parser)
        attrs.update(_parse_attrs(parser))  # the RFC writes ``[1] {#slice}``
        src_type, res_type = _parse_types(parser)
        src = parser.resolve_operand(operand, src_type)
        acc_value = parser.resolve_operand(acc, res_type)
        return _build(parser, cls, lambda: cls(kind, src, acc_value, dims), attrs, src_type, res_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" <{self.kind_name}>, ")
        _asm.print_operands(printer, self.operands)
        _asm.print_attr_entries(printer, self, skip=("kind", "reduction_dims"))
        printer.print_string(" ")
        _asm.print_int_array(printer, self.dims)
        _print_types(printer, self, self.source)


def _parse_kind(parser: Parser) -> str:
    """``<add>,`` (MLIR) or ``<add>`` (the RFC)."""
    parser.parse_punctuation("<")
    kind = parser.parse_identifier()
    legal = [flag.value for flag in vector.CombiningKindFlag]
    if kind not in legal:
        parser.raise_error(f"vector.multi_reduction: unknown kind <{kind}>; use one of {', '.join(legal)}")
    parser.parse_punctuation(">")
    parser.parse_optional_punctuation(",")
    return kind


# ----------------------------------------------------------------------------- broadcast
@irdl_op_definition
class BroadcastOp(_CastSyntax, vector.BroadcastOp):
    """xDSL's ``vector.broadcast`` with MLIR's shape rule (the source's dims align with the
    result's trailing dims and are 1 or equal) and layouts; parses the RFC's unnamed
    ``{#layout}``."""

    name = "vector.broadcast"
    source = operand_def()
    vector = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = None

    def added_dims(self) -> list[int]:
        """Result dims the source does not have (leading) or has as 1 (stretched)."""
        src, res = _shape(self.source.type), _shape(self.vector.type)
        lead = len(res) - len(src)
        return list(range(lead)) + [lead + i for i, s in enumerate(src) if s == 1 and res[lead + i] != 1]

    def verify_(self) -> None:
        super().verify_()
        src, res = _shape(self.source.type), _shape(self.vector.type)
        lead = len(res) - len(src)
        if lead < 0 or any(s not in (1, res[lead + i]) for i, s in enumerate(src)):
            raise VerifyException(f"vector.broadcast: {self.source.type} does not broadcast to {self.vector.type} "
                                  f"(source dims align with the result's trailing dims and must be 1 or equal)")
        verify_layout_attrs(self)
        self._verify_layouts(lead)

    def _verify_layouts(self, lead: int) -> None:
        src, res = _layout(self, operand_layout_name(0)), _layout(self, RESULT_LAYOUT)
        if not isinstance(src, SliceAttr):
            return
        if sorted(src.dim_list) != list(range(lead)):
            raise VerifyException(f"vector.broadcast: a sliced source layout must slice the added leading dims "
                                  f"{list(range(lead))}, got dims = {list(src.dim_list)}")
        if res is not None and src.parent != res:
            raise VerifyException(f"vector.broadcast: the source layout must be a slice of the result layout "
                                  f"{res}, got a slice of {src.parent}")

    @classmethod
    def check_after_source(cls, parser: Parser) -> None:
        if parser._current_token.text == "[":  # noqa: SLF001 -- the RFC's ``%v [1]``
            parser.raise_error("vector.broadcast takes no dimension list: it prepends dims and stretches "
                               "size-1 dims (to broadcast a vector<N> along dim 1, shape_cast it to "
                               "vector<Nx1> first)")


# ----------------------------------------------------------------------------- bitcast
@irdl_op_definition
class BitcastOp(_CastSyntax, vector.BitcastOp):
    """xDSL's ``vector.bitcast`` (same bits, the innermost dim rescaled) with MLIR's shape rule
    (all dims but the innermost equal) and layouts; parses the RFC's ``{#sg_map} .. into ..``."""

    name = "vector.bitcast"
    source = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())
    assembly_format = None

    def verify_(self) -> None:
        super().verify_()
        src, res = _shape(self.source.type), _shape(self.result.type)
        if len(src) != len(res) or src[:-1] != res[:-1]:
            raise VerifyException(f"vector.bitcast: {self.source.type} to {self.result.type} may change only the "
                                  f"innermost dimension")
        verify_layout_attrs(self)



# ----------------------------------------------------------------------------- strided slices
def _slice_props(parser: Parser, names: tuple[str, ...]) -> tuple[dict[str, list[int]], dict[str, Attribute]]:
    """``{offsets = [..], sizes = [..], strides = [..]}`` (MLIR's I64ArrayAttr form, or
    ``array<i64: ..>``): the named int lists, and any other (layout) attributes."""
    attrs = _parse_attrs(parser)
    lists = {}
    for name in names:
        values = _asm.as_int_list(attrs.pop(name)) if name in attrs else None
        if values is None:
            parser.raise_error(f"expected {name} = [..] (a list of integers)")
        lists[name] = values
    return lists, attrs


def _print_slice_props(printer: Printer, op: IRDLOperation, names: tuple[str, ...]) -> None:
    printer.print_string(" {" + ", ".join(f"{n} = [{', '.join(str(v) for v in _ints(op, n))}]" for n in names))
    layouts = [(k, v) for k, v in op.attributes.items()]
    for k, v in layouts:
        printer.print_string(f", {k} = ")
        printer.print_attribute(v)
    printer.print_string("}")


def _ints(op: IRDLOperation, name: str) -> list[int]:
    return [int(v) for v in op.properties[name].get_values()]


def _check_slice(name: str, small: tuple[int, ...], big: tuple[int, ...], offsets: list[int],
                 strides: list[int]) -> None:
    """MLIR's rule for a ``small`` slice of ``big`` (same rank here), unit strides."""
    if len(small) != len(big) or len(offsets) != len(big) or len(strides) != len(big):
        raise VerifyException(f"{name}: offsets {offsets}, strides {strides} and the slice {list(small)} must all "
                              f"have the rank of {list(big)}")
    if any(s != 1 for s in strides):
        raise VerifyException(f"{name}: only unit strides are supported, got {strides}")
    for d, (o, n, size) in enumerate(zip(offsets, small, big)):
        if o < 0 or o + n > size:
            raise VerifyException(f"{name}: dim {d}: offset {o} + size {n} exceeds {size}")


class _StridedSliceOp(PureVectorOp):
    """``vector.extract_strided_slice`` / ``vector.insert_strided_slice``: one vector
    result, a box at ``offsets`` with unit ``strides`` (the op declares its operands and,
    for extract, ``sizes``; these fields come after them)."""

    offsets = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)


@irdl_op_definition
class ExtractStridedSliceOp(_StridedSliceOp):
    """``vector.extract_strided_slice %v {offsets = [8, 0], sizes = [8, 16], strides = [1, 1]}
    : vector<16x16xf32> to vector<8x16xf32>``: the ``sizes`` box at ``offsets``."""

    name = "vector.extract_strided_slice"
    vector = operand_def(VectorType)
    sizes = prop_def(DenseArrayBase)
    NAMES: ClassVar = ("offsets", "sizes", "strides")

    def __init__(self, source: SSAValue, offsets: Sequence[int], sizes: Sequence[int],
                 result_type: VectorType | None = None):
        source = SSAValue.get(source)
        result_type = result_type or _asm.vector_type(source.type.element_type, sizes)
        Operation.__init__(self, operands=[source], result_types=[result_type],  # as ShapeCastOp's
                           properties={"offsets": _asm.int_array(offsets), "sizes": _asm.int_array(sizes),
                                       "strides": _asm.int_array([1] * len(sizes))})

    def verify_(self) -> None:
        src, res = _shape(self.vector.type), _shape(self.result.type)
        if list(res) != _ints(self, "sizes") or self.vector.type.element_type != self.result.type.element_type:
            raise VerifyException(f"vector.extract_strided_slice: the result must be vector<sizes x element type>, "
                                  f"sizes {_ints(self, 'sizes')}, got {self.result.type}")
        _check_slice(self.name, res, src, _ints(self, "offsets"), _ints(self, "strides"))

    @classmethod
    def parse(cls, parser: Parser) -> "ExtractStridedSliceOp":
        operand = parser.parse_unresolved_operand()
        lists, attrs = _slice_props(parser, cls.NAMES)
        src_type, res_type = _parse_types(parser)
        src = parser.resolve_operand(operand, src_type)
        return _build(parser, cls, lambda: cls(src, lists["offsets"], lists["sizes"], res_type), attrs, src_type,
                      res_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.vector)
        _print_slice_props(printer, self, self.NAMES)
        _print_types(printer, self, self.vector)


@irdl_op_definition
class InsertStridedSliceOp(_StridedSliceOp):
    """``vector.insert_strided_slice %src, %dst {offsets = [8, 0], strides = [1, 1]}
    : vector<8x16xf32> into vector<16x16xf32>``: ``%dst`` with ``%src`` written at ``offsets``."""

    name = "vector.insert_strided_slice"
    source, dest = like_fields(operand_def, VectorType, 2)
    NAMES: ClassVar = ("offsets", "strides")

    def __init__(self, source: SSAValue, dest: SSAValue, offsets: Sequence[int]):
        dest = SSAValue.get(dest)
        super().__init__(operands=[source, dest], result_types=[dest.type],
                         properties={"offsets": _asm.int_array(offsets),
                                     "strides": _asm.int_array([1] * len(offsets))})

    def verify_(self) -> None:
        src, dst = self.source.type, self.dest.type
        if self.result.type != dst or src.element_type != dst.element_type:
            raise VerifyException(f"vector.insert_strided_slice: {src} into {dst} must give {dst} (same element "
                                  f"type), got {self.result.type}")
        _check_slice(self.name, _shape(src), _shape(dst), _ints(self, "offsets"), _ints(self, "strides"))

    @classmethod
    def parse(cls, parser: Parser) -> "InsertStridedSliceOp":
        operands = _asm.parse_operands(parser)
        lists, attrs = _slice_props(parser, cls.NAMES)
        parser.parse_punctuation(":")
        src_type = _asm.parse_type(parser)
        parser.parse_keyword("into")
        dst_type = _asm.parse_type(parser)
        src, dst = _asm.resolve(parser, operands, [src_type, dst_type])
        return _build(parser, cls, lambda: cls(src, dst, lists["offsets"]), attrs, src_type, dst_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _asm.print_operands(printer, self.operands)
        _print_slice_props(printer, self, self.NAMES)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" into ")
        printer.print_attribute(self.dest.type)


ADDED = (ShapeCastOp, TransposeOp, MultiReductionOp, BroadcastOp, BitcastOp, ExtractStridedSliceOp,
         InsertStridedSliceOp)

VECTOR = Dialect(
    "vector",
    [op for op in vector.Vector.operations if op.name not in {a.name for a in ADDED}] + list(ADDED),
    list(vector.Vector.attributes),
)
