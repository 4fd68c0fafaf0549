"""XeGPU block (nd) ops and dpas, with the RFC's custom syntax::

    %d = xegpu.create_nd_tdesc %src[%i, %j] : memref<64x64xf16> -> !xegpu.tensor_desc<8x16xf16>
    %d = xegpu.create_nd_tdesc %p[%i, %j], [%h, %w], [%s, %c1] : i64 -> !xegpu.tensor_desc<8x16xf16>
    %v = xegpu.load_nd %d {packed, l1_hint = cached} : !xegpu.tensor_desc<16x16xf16> -> vector<8x16x2xf16>
    xegpu.store_nd %v, %d {l1_hint = write_back} : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32>
    xegpu.prefetch_nd %d {l1_hint = cached} : !xegpu.tensor_desc<8x16xf16>
    %e = xegpu.update_nd_offset %d, %di, %dj : !xegpu.tensor_desc<8x16xf16>
    %c = xegpu.dpas %a, %b, %c : vector<8x16xf16>, vector<16x16xf16>, vector<8x16xf32> -> vector<8x16xf32>

Cache hints print as bare words; ``L1_hint``/``L1`` and ``#xegpu.cache_hint<..>`` parse too.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    IndexType,
    IntAttr,
    IntegerAttr,
    MemRefType,
    StringAttr,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import (IRDLOperation, irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, result_def,
                       var_operand_def)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from . import _asm, _mixed
from ._fields import like_fields
from ._init_syntax import InitLikeOp, parse_update_offsets
from ._memref_layout import const_index, is_address
from ._xegpu_attrs import CacheHintAttr, LayoutAttr, TensorDescType, element_bits
from ._xetile_ops import PaddedLoadOp, parse_mma_like

CACHE_HINTS = ("l1_hint", "l2_hint", "l3_hint")
_HINT_KEYS = {"l1": "l1_hint", "l2": "l2_hint", "l3": "l3_hint"}


def _hint_props(hints: dict[str, str] | None) -> dict[str, Attribute]:
    return {k: StringAttr(v) for k, v in (hints or {}).items()}


def normalize_mem_attrs(parser: Parser, attrs: dict[str, Attribute], unit_transpose: bool = False) -> dict[str, Attribute]:
    """Map the RFC's spellings onto the stored properties: ``L1``/``L1_hint`` ->
    ``l1_hint`` (a string), ``transpose = [1, 0]`` -> ArrayAttr of IntAttr (or a unit
    attribute for scattered loads), ``transpose_bit_width = 32`` -> IntAttr."""
    out: dict[str, Attribute] = {}
    for key, value in attrs.items():
        low = key.lower()
        low = _HINT_KEYS.get(low, low)
        if low in CACHE_HINTS:
            word = _asm.as_word(value)
            if word not in CacheHintAttr.VALUES:
                parser.raise_error(f"{key}: cache hint must be one of {', '.join(CacheHintAttr.VALUES)}, got {value}")
            out[low] = StringAttr(word)
        elif low == "transpose" and not isinstance(value, UnitAttr):
            perm = _asm.as_int_list(value)
            if perm is None:
                parser.raise_error(f"transpose: expected [1, 0], got {value}")
            out[low] = UnitAttr() if unit_transpose else ArrayAttr(IntAttr(v) for v in perm)
        elif low == "transpose_bit_width" and isinstance(value, IntegerAttr):
            out[low] = IntAttr(value.value.data)
        else:
            out[key] = value
    return out


def check_hints(op: IRDLOperation, allowed: Sequence[str]) -> None:
    for key in CACHE_HINTS:
        value = op.properties.get(key)
        if value is not None and value.data not in allowed:
            raise VerifyException(f"{op.name}: {key} = {value.data} is not a {'load' if 'cached' in allowed else 'store'} "
                                  f"policy; use one of {', '.join(allowed)}")


LOAD_POLICIES = ("cached", "uncached", "streaming", "read_invalidate")
STORE_POLICIES = ("uncached", "write_back", "write_through", "streaming")


@irdl_op_definition
class CreateNdTdescOp(InitLikeOp):
    """Describe a 1-D/2-D block of a base tensor given as a memref or an i64 address."""

    name = "xegpu.create_nd_tdesc"
    source = operand_def()
    offsets = var_operand_def(IndexType)
    shape = var_operand_def(IndexType)
    tensor_desc = result_def(TensorDescType)
    sizes = property(lambda self: self.shape, doc="The base's sizes (``shape`` in the XeGPU RFC).")

    def verify_(self) -> None:
        src = self.source.type
        tdesc = self.tensor_desc.type
        rank = len(tdesc.get_shape())
        if tdesc.is_scattered:
            raise VerifyException(f"{self.name}: result must be a block tensor_desc; use xegpu.create_tdesc for a "
                                  "scatter_tdesc_attr descriptor")
        # a 1-D memref viewed as the one-row 2-D surface its shape operands give ([1, n]:
        # the tiles of 1-D arrays, docs/decisions/025-one-dimensional-values.md)
        view = isinstance(src, MemRefType) and len(src.get_shape()) == 1 and rank == 2 and len(self.shape) == 2
        if isinstance(src, MemRefType):
            if any(d < 0 for d in src.get_shape()) and len(self.shape) != len(src.get_shape()) and not view:
                raise VerifyException(f"{self.name}: a dynamic memref needs its shape and strides as operands")
            if src.element_type != tdesc.element_type:
                raise VerifyException(f"{self.name}: element type {src.element_type} of the source differs from the "
                                      f"descriptor's {tdesc.element_type}")
            self._check_memref_stride(src)
            space = "slm" if _memref_space(src) == 3 else "global"
            if space != tdesc.memory_space:
                raise VerifyException(f"{self.name}: the source memref is in {space} memory but the descriptor says "
                                      f"memory_space = {tdesc.memory_space}; make them agree")
        elif is_address(src):
            if rank == 1 and not self.shape and tdesc.block_attr.checks_bounds:
                raise VerifyException(f"{self.name}: a 1-D descriptor without base shape cannot check bounds; "
                                      "set boundary_check = false or pass the shape and strides")
            if rank == 2 and len(self.shape) != 2:
                raise VerifyException(f"{self.name}: an i64 address needs the base shape and strides for a 2-D "
                                      "descriptor")
        else:
            raise VerifyException(f"{self.name}: source must be a memref or an i64 address, got {src}")
        _mixed.verify_static(self, self.offsets)
        n_offsets = len(_mixed.mixed(self, self.offsets))
        if n_offsets < rank:
            raise VerifyException(f"{self.name}: a rank-{rank} descriptor needs at least {rank} offsets, got "
                                  f"{n_offsets}")
        if isinstance(src, MemRefType) and n_offsets != len(src.get_shape()) and not view:
            raise VerifyException(f"{self.name}: give one offset per dimension of the source {src} "
                                  f"({len(src.get_shape())}), got {n_offsets}")
        if len(self.shape) != len(self.strides):
            raise VerifyException(f"{self.name}: give as many strides as shape sizes")
        last = const_index(self.strides[-1]) if self.strides else None
        if last is not None and last != 1:
            raise VerifyException(f"{self.name}: the innermost stride must be 1 (2-D block messages read contiguous "
                                  f"rows), got {last}; use a transposed load or xegpu.create_tdesc for strided data")

    def _check_memref_stride(self, src: MemRefType) -> None:
        layout = src.layout
        strides = getattr(layout, "strides", None)
        if strides is None:
            return
        vals = [getattr(s, "data", s) for s in getattr(strides, "data", ())]
        if vals and isinstance(vals[-1], int) and vals[-1] != 1:
            raise VerifyException(f"{self.name}: the innermost stride of the source memref must be 1, got {vals[-1]}; "
                                  "use a transposed load or xegpu.create_tdesc for strided data")


def _memref_space(t: MemRefType) -> int:
    space = t.memory_space
    if isinstance(space, IntegerAttr):
        return space.value.data
    word = _asm.as_word(space)
    return 3 if word in ("slm", "shared") else 0


class _MemOp(_asm.OperandsToSyntax, IRDLOperation):
    """A memory op with the three cache-hint properties (``l1_hint = cached``), printed
    ``operands {attrs} : types (-> result)?``.  xDSL collects field definitions from the
    parent classes, so the hints are declared once here."""

    l1_hint, l2_hint, l3_hint = like_fields(opt_prop_def, StringAttr, 3)
    WORDS: ClassVar = CACHE_HINTS

    @classmethod
    def normalize_entries(cls, parser: Parser, attrs: dict[str, Attribute]) -> dict[str, Attribute]:
        return normalize_mem_attrs(parser, attrs)


@irdl_op_definition
class LoadNdOp(_MemOp, PaddedLoadOp):
    name = "xegpu.load_nd"
    tensor_desc = operand_def(TensorDescType)
    packed = opt_prop_def(UnitAttr)
    transpose = opt_prop_def(ArrayAttr)
    transpose_bit_width = opt_prop_def(IntAttr)

    def __init__(self, tdesc: SSAValue, result_type: VectorType, packed: bool = False,
                 transpose: Sequence[int] | None = None, hints: dict[str, str] | None = None,
                 transpose_bit_width: int | None = None, padding: Attribute | None = None):
        props = _hint_props(hints)
        if padding is not None:
            props["padding"] = padding
        if packed:
            props["packed"] = UnitAttr()
        if transpose is not None:
            props["transpose"] = ArrayAttr(IntAttr(v) for v in transpose)
        if transpose_bit_width is not None:
            props["transpose_bit_width"] = IntAttr(transpose_bit_width)
        super().__init__(operands=[tdesc], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        if self.packed is not None and self.transpose is not None:
            raise VerifyException(f"{self.name}: packed (VNNI) and transpose cannot be combined; use transpose with "
                                  "transpose_bit_width = 32 to get a transposed VNNI layout")
        check_hints(self, LOAD_POLICIES)
        tdesc = self.tensor_desc.type
        if tdesc.is_scattered:
            raise VerifyException(f"{self.name}: needs a block tensor_desc; use xegpu.load for a scattered one")
        perm = None if self.transpose is None else [v.data for v in self.transpose.data]
        if perm is not None and perm != [1, 0]:
            raise VerifyException(f"{self.name}: transpose must be [1, 0], got {perm}")
        if tdesc.layout is None:
            self._verify_shape(tdesc, perm)

    def _verify_shape(self, tdesc: TensorDescType, perm) -> None:
        shape, bits = list(tdesc.get_shape()), element_bits(tdesc.element_type)
        out = list(self.value.type.get_shape())
        arr = tdesc.block_attr.arr_len
        if perm is not None and len(shape) == 2:
            unit = self.transpose_bit_width.data if self.transpose_bit_width is not None else bits
            f = max(1, unit // bits)
            want = [shape[1] // f, shape[0] * f]
            if f > 1 and out == [shape[1] // f, shape[0], f]:  # the same data as VNNI [K/f, N, f]
                want = out
        elif self.packed is not None and len(shape) == 2:
            f = max(1, 32 // bits)
            want = [shape[0] // f, shape[1], f]
            if out == [shape[0] // f, shape[1] * f]:
                want = out
        else:
            want = shape
        if arr > 1:
            want = [arr, *want]
        if out != want:
            raise VerifyException(f"{self.name}: result shape must be {want} for {tdesc}, got {out}")



@irdl_op_definition
class StoreNdOp(_MemOp):
    name = "xegpu.store_nd"
    value = operand_def(VectorType)
    tensor_desc = operand_def(TensorDescType)

    def __init__(self, value: SSAValue, tdesc: SSAValue, hints: dict[str, str] | None = None):
        super().__init__(operands=[value, tdesc], properties=_hint_props(hints))

    def verify_(self) -> None:
        check_hints(self, STORE_POLICIES)
        tdesc = self.tensor_desc.type
        if tdesc.is_scattered:
            raise VerifyException(f"{self.name}: needs a block tensor_desc; use xegpu.store for a scattered one")
        if tdesc.block_attr.arr_len != 1:
            raise VerifyException(f"{self.name}: array_length is for loads only; store each block separately")
        if tdesc.layout is None and tuple(self.value.type.get_shape()) != tdesc.get_shape():
            raise VerifyException(f"{self.name}: value shape {list(self.value.type.get_shape())} must equal the "
                                  f"descriptor shape {list(tdesc.get_shape())}")

    @classmethod
    def parse(cls, parser: Parser) -> StoreNdOp:
        operands = _asm.parse_operands(parser)
        attrs = normalize_mem_attrs(parser, _asm.parse_attr_entries(parser))
        parser.parse_punctuation(":")
        types = _asm.parse_types(parser)
        value, tdesc = _asm.resolve(parser, operands, types)
        return _asm.build_op(parser, cls, lambda: cls(value, tdesc), attrs)


class PrefetchBase(_MemOp):
    """``xegpu.prefetch_nd`` and ``xegpu.prefetch``: a descriptor and load cache hints."""

    tensor_desc = operand_def(TensorDescType)

    def __init__(self, tdesc: SSAValue, hints: dict[str, str] | None = None):
        super().__init__(operands=[tdesc], properties=_hint_props(hints))

    def verify_(self) -> None:
        check_hints(self, LOAD_POLICIES)
        self.verify_descriptor(self.tensor_desc.type)

    def verify_descriptor(self, tdesc: TensorDescType) -> None:
        raise NotImplementedError


@irdl_op_definition
class PrefetchNdOp(PrefetchBase):
    name = "xegpu.prefetch_nd"

    def verify_descriptor(self, tdesc: TensorDescType) -> None:
        if tdesc.is_scattered:
            raise VerifyException(f"{self.name}: needs a block tensor_desc; use xegpu.prefetch for a scattered one")

    @classmethod
    def parse(cls, parser: Parser) -> PrefetchNdOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_optional_punctuation(",")
        attrs = normalize_mem_attrs(parser, _asm.parse_attr_entries(parser))
        parser.parse_punctuation(":")
        t = parser.resolve_operand(operand, _asm.parse_type(parser))
        return _asm.build_op(parser, cls, lambda: cls(t), attrs)


class MoveDescriptorOp(IRDLOperation):
    """``update_nd_offset`` / ``update_offset``: the moved descriptor has the type of
    ``tensor_desc`` (the op declares its operands; ``result`` comes after them)."""

    result = result_def(TensorDescType)

    def verify_(self) -> None:
        tdesc = self.tensor_desc.type
        self.verify_offsets(tdesc)
        if self.result.type != tdesc:
            raise VerifyException(f"{self.name}: result type must equal the descriptor type")

    def verify_offsets(self, tdesc: TensorDescType) -> None:
        raise NotImplementedError


@irdl_op_definition
class UpdateNdOffsetOp(_mixed.ConstOffsetsOp, MoveDescriptorOp):
    """Move a block descriptor by relative offsets (values or constants)."""

    name = "xegpu.update_nd_offset"
    tensor_desc = operand_def(TensorDescType)
    offsets = var_operand_def(IndexType)

    def __init__(self, tdesc: SSAValue, offsets: Sequence[SSAValue], const_offsets: Sequence[int] | None = None):
        props = {} if const_offsets is None else {_mixed.CONST_OFFSETS: _mixed.const_attr(const_offsets)}
        super().__init__(operands=[tdesc, offsets], result_types=[tdesc.type], properties=props)

    def verify_offsets(self, tdesc: TensorDescType) -> None:
        if tdesc.is_scattered:
            raise VerifyException(f"{self.name}: needs a block tensor_desc; use xegpu.update_offset for a "
                                  "scattered one")
        _mixed.verify_static(self, self.offsets)
        count = len(_mixed.mixed(self, self.offsets))
        if count != len(tdesc.get_shape()):
            raise VerifyException(f"{self.name}: needs one offset per descriptor dimension "
                                  f"({len(tdesc.get_shape())}), got {count}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.tensor_desc)
        printer.print_string(", ")
        if self.const_offsets is not None:
            _mixed.print_mixed(printer, self, self.offsets)
        else:
            _asm.print_operands(printer, self.offsets)
        _asm.print_attr_entries(printer, self, skip=(_mixed.CONST_OFFSETS,))
        printer.print_string(" : ")
        printer.print_attribute(self.tensor_desc.type)

    @classmethod
    def parse(cls, parser: Parser) -> UpdateNdOffsetOp:
        tdesc_u, operands, static, attrs, types = parse_update_offsets(parser)
        tdesc = parser.resolve_operand(tdesc_u, types[0])
        values = [parser.resolve_operand(o, IndexType()) for o in operands]
        return _asm.build_op(parser, cls, lambda: cls(tdesc, values, static), attrs)


@irdl_op_definition
class DpasOp(_asm.OperandsToSyntax, IRDLOperation):
    """``D = A x B (+ C)`` for one DPAS instruction, in the plain 2-D, the VNNI 3-D or the
    per-lane (SIMT) operand form."""

    name = "xegpu.dpas"
    lhs, rhs = like_fields(operand_def, VectorType, 2)
    acc = opt_operand_def(VectorType)
    result = result_def(VectorType)
    layout_a, layout_b, layout_cd = like_fields(opt_prop_def, Attribute, 3)

    POSITIONAL: ClassVar = {1: ("layout_cd",), 3: ("layout_a", "layout_b", "layout_cd")}
    #: MLIR's names for the same layouts (its propagation attaches layout_result_0 / layout_operand_N)
    KEY_ALIASES: ClassVar = {"layout_result_0": "layout_cd", "layout": "layout_cd", "layout_operand_0": "layout_a",
                             "layout_operand_1": "layout_b", "layout_operand_2": "layout_cd"}

    def __init__(self, lhs: SSAValue, rhs: SSAValue, acc: SSAValue | None, result_type: VectorType):
        # Operation's constructor: xDSL's generic builder costs ~80 us an op more, and a
        # GEMM lowering makes one per DPAS; the op has no segment sizes to build
        Operation.__init__(self, operands=[lhs, rhs] + ([acc] if acc is not None else []), result_types=[result_type])

    def _verify_layouts(self, a: list[int], b: list[int], d: list[int]) -> None:
        """The RFC's dpas propagation rule: A, B and C/D share sg_layout and order; sg_data
        agrees on M (A, D), N (B, D) and K (A, B); layout_cd distributes the result."""
        la, lb, lcd = (self.properties.get(n) for n in ("layout_a", "layout_b", "layout_cd"))
        if isinstance(lcd, LayoutAttr):
            lcd.check_shape(d, f"{self.name} layout_cd")
        wg = {n: v for n, v in (("layout_a", la), ("layout_b", lb), ("layout_cd", lcd))
              if isinstance(v, LayoutAttr) and v.field("sg_layout") and v.rank == 2}
        if "layout_cd" not in wg:
            return
        out = wg["layout_cd"]
        for name in ("layout_a", "layout_b"):
            lay = wg.get(name)
            if lay is not None and lay.field("sg_layout") != out.field("sg_layout"):
                raise VerifyException(f"{self.name}: {name} must have the result's sg_layout "
                                      f"{list(out.field('sg_layout'))}, got {list(lay.field('sg_layout'))}")
            if lay is not None and lay.field("order") and out.field("order") and lay.field("order") != out.field("order"):
                raise VerifyException(f"{self.name}: {name} must have the result's order {list(out.field('order'))}")
        sa, sb, sd = (wg[n].field("sg_data") if n in wg else None for n in ("layout_a", "layout_b", "layout_cd"))
        for what, x, y in (("M", sa and sa[0], sd[0]), ("N", sb and sb[1], sd[1]), ("K", sa and sa[1], sb and sb[0])):
            if x and y and x != y:
                raise VerifyException(f"{self.name}: the layouts' sg_data disagree on {what} ({x} vs {y}); A is "
                                      f"[M, K], B [K, N], the result [M, N]")

    def verify_(self) -> None:
        if self.acc is not None and self.acc.type != self.result.type:
            raise VerifyException(f"{self.name}: accumulator type {self.acc.type} must equal result {self.result.type}")
        a, b, d = (list(v.type.get_shape()) for v in (self.lhs, self.rhs, self.result))
        if len(d) != 2 or len(a) not in (2, 3) or len(b) not in (2, 3):
            raise VerifyException(f"{self.name}: expects A 2-D/3-D, B 2-D/3-D (VNNI) and a 2-D result, got "
                                  f"{a}, {b} -> {d}")
        if d[1] == 1 and not (len(b) == 2 and b[1] == 1 and len(a) == 2 and a[1] == b[0]):
            # per-lane (SIMT) fragments (tf32 A is [M/2, 1] against B [K, 1]): shapes are
            # checked against the layout, not here
            return
        m, k_a = a[0], (a[1] * a[2] if len(a) == 3 else a[1])
        k_b, n = (b[0] * b[2], b[1]) if len(b) == 3 else (b[0], b[1])
        if len(a) == 3 and (len(b) != 3 or a[2] != b[2]):
            raise VerifyException(f"{self.name}: a 3-D A {a} needs a VNNI B with the same packing factor, got {b}")
        if k_a != k_b or d != [m, n]:
            raise VerifyException(f"{self.name}: shapes do not multiply: A {a} (M={m}, K={k_a}) x B {b} (K={k_b}, "
                                  f"N={n}) must give [{m}, {n}], got {d}")
        bits_a = element_bits(self.lhs.type.element_type)
        if len(b) == 3 and b[2] * element_bits(self.rhs.type.element_type) != 32:
            raise VerifyException(f"{self.name}: VNNI packing factor {b[2]} must fill 32 bits; use "
                                  f"{32 // element_bits(self.rhs.type.element_type)}")
        if bits_a != element_bits(self.rhs.type.element_type):
            raise VerifyException(f"{self.name}: A and B element widths differ ({self.lhs.type.element_type}, "
                                  f"{self.rhs.type.element_type})")
        self._verify_layouts(a, b, d)

    @classmethod
    def parse(cls, parser: Parser) -> DpasOp:
        a, b, c, out, attrs = parse_mma_like(parser, cls.POSITIONAL)
        attrs = {cls.KEY_ALIASES.get(k, k): v for k, v in attrs.items()}
        return _asm.build_op(parser, cls, lambda: cls(a, b, c, out), attrs)
