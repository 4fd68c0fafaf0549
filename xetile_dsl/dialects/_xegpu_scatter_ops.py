"""XeGPU scattered memory ops, atomics, named barriers, fence, convert_layout::

    %d = xegpu.create_tdesc %p, %offs : i64, vector<16xindex> -> !xegpu.tensor_desc<16x8xf32, #xegpu.scatter_tdesc_attr<chunk_size = 8>>
    %v = xegpu.load %d, %mask {transpose, l1_hint = cached} : !xegpu.tensor_desc<..>, vector<16xi1> -> vector<8x16xf32>
    xegpu.store %v, %d, %mask : vector<16xf32>, !xegpu.tensor_desc<..>, vector<16xi1>
    xegpu.prefetch %d : !xegpu.tensor_desc<..>
    %e = xegpu.update_offset %d, %delta : !xegpu.tensor_desc<..>, vector<16xindex>
    %r = xegpu.atomic_rmw addf %v, %d, %mask : vector<16xf32>, !xegpu.tensor_desc<..>, vector<16xi1> -> vector<16xf32>
    xegpu.alloc_nbarrier %n : i8
    %b = xegpu.init_nbarrier %id, %count : i8, i8 -> !xegpu.nbarrier
    xegpu.nbarrier_arrive %b : !xegpu.nbarrier
    xegpu.nbarrier_wait %b : !xegpu.nbarrier
    xegpu.fence memory_kind = global, fence_scope = workgroup
    %r = xegpu.convert_layout %v {target_layout = #xegpu.layout<..>} : vector<..> -> vector<..>

Earlier-RFC names parse into the current ops: load_gather -> load, store_scatter -> store,
update_offsets -> update_offset, mfence -> fence.
"""
from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, MemRefType, StringAttr, UnitAttr, VectorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, prop_def, result_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from . import _asm
from ._xegpu_attrs import FenceScopeAttr, LayoutAttr, MemorySpaceAttr, NbarrierType, SGMapAttr, SliceAttr, TensorDescType
from ._directives import Arrow, ColonNbarrier, OptionalComma, ResultAsSource, RfcType
from ._memref_layout import is_address
from ._xegpu_ops import (LOAD_POLICIES, STORE_POLICIES, MoveDescriptorOp, PrefetchBase, _hint_props, _memref_space,
                         _MemOp, check_hints, normalize_mem_attrs)
from ._xetile_vector_ops import AtomicKindOp, _parse_kind


def _is_mask(t: Attribute) -> bool:
    return isinstance(t, VectorType) and t.element_type == IntegerType(1)


def _check_scatter(op: IRDLOperation, tdesc: TensorDescType, mask: SSAValue | None = None) -> None:
    if not tdesc.is_scattered:
        raise VerifyException(f"{op.name}: needs a scattered tensor_desc (#xegpu.scatter_tdesc_attr<...>); use the "
                              f"_nd form for a block descriptor")
    lanes = tdesc.get_shape()[0]
    if mask is not None and tdesc.layout is None and (not _is_mask(mask.type) or mask.type.get_shape() != (lanes,)):
        raise VerifyException(f"{op.name}: mask must be vector<{lanes}xi1> (one bit per offset), got {mask.type}")


def _value_shape(tdesc: TensorDescType, transposed: bool) -> list[int]:
    shape = list(tdesc.get_shape())
    return shape[::-1] if transposed and len(shape) == 2 else shape


def _parse_by_types(parser: Parser, cls, unit_transpose: bool = True, kind: str | None = None):
    """``operands attrs : types (-> result)?``; operands are matched to types by position
    and then put in the op's order (value, tdesc, mask), as the RFC permutes them."""
    operands, attrs, types, result = _asm.parse_operands_types(parser)
    attrs = normalize_mem_attrs(parser, attrs, unit_transpose)
    values = _asm.resolve(parser, operands, types)
    tdesc = [v for v in values if isinstance(v.type, TensorDescType)]
    masks = [v for v in values if _is_mask(v.type)]
    others = [v for v in values if v not in tdesc and v not in masks]
    if len(tdesc) != 1:
        parser.raise_error(f"{cls.name}: expected one tensor_desc operand")
    if len(masks) > 1:  # an i1 value vector: the mask is the later one
        others, masks = [masks[0]], [masks[1]]
    return others, tdesc[0], (masks[0] if masks else None), result, attrs


@irdl_op_definition
class CreateTdescOp(IRDLOperation):
    """A scattered descriptor: one base address, one offset per lane."""

    name = "xegpu.create_tdesc"
    source = operand_def()
    offsets = operand_def(VectorType)
    tensor_desc = result_def(TensorDescType)
    #: the RFC writes ``create_tdesc, %base, %offsets`` and ``: T, vector<..>, -> T``
    assembly_format = ("custom<OptionalComma>() $source `,` $offsets attr-dict `:` type($source) `,` "
                       "type($offsets) custom<OptionalComma>() custom<Arrow>() custom<RfcType>(type($tensor_desc))")
    custom_directives = (OptionalComma, Arrow, RfcType)

    def __init__(self, source: SSAValue, offsets: SSAValue, result_type: TensorDescType):
        super().__init__(operands=[source, offsets], result_types=[result_type])

    def verify_(self) -> None:
        tdesc = self.tensor_desc.type
        _check_scatter(self, tdesc)
        src = self.source.type
        if not (isinstance(src, MemRefType) or is_address(src)):
            raise VerifyException(f"{self.name}: source must be an i64/ui64 address or a memref, got {src}")
        if isinstance(src, MemRefType):
            space = "slm" if _memref_space(src) == 3 else "global"
            if space != tdesc.memory_space:
                raise VerifyException(f"{self.name}: the source memref is in {space} memory but the descriptor says "
                                      f"memory_space = {tdesc.memory_space}; make them agree")
        off = self.offsets.type
        per_lane = tdesc.layout is not None and off.get_shape() == (1,)  # SIMT form: this lane's offset
        if not isinstance(off.element_type, IndexType) or (off.get_shape() != (tdesc.get_shape()[0],)
                                                           and not per_lane):
            raise VerifyException(f"{self.name}: offsets must be vector<{tdesc.get_shape()[0]}xindex> (one per lane "
                                  f"of {tdesc}), got {off}")


class _ScatterMemOp(_MemOp):
    """``xegpu.load`` and ``xegpu.store``: a scattered descriptor and a mask (the last
    operands, after a stored value), the cache hints and ``transpose`` (the
    [chunk_size, lanes] value form)."""

    tensor_desc = operand_def(TensorDescType)
    mask = operand_def(VectorType)
    transpose = opt_prop_def(UnitAttr)
    POLICIES: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def props(transpose: bool, hints: dict[str, str] | None) -> dict:
        props = _hint_props(hints)
        if transpose:
            props["transpose"] = UnitAttr()
        return props

    def verify_(self) -> None:
        tdesc = self.tensor_desc.type
        _check_scatter(self, tdesc, self.mask)
        check_hints(self, self.POLICIES)
        if tdesc.layout is None:  # per-lane (SIMT) shapes are checked against the layout
            self._verify_shape(tdesc, tdesc.scatter_attr.chunk)

    def _verify_shape(self, tdesc: TensorDescType, chunk: int) -> None:
        raise NotImplementedError

    @classmethod
    def parse(cls, parser: Parser) -> _ScatterMemOp:
        others, tdesc, mask, res, attrs = _parse_by_types(parser, cls)
        return _asm.build_op(parser, cls, lambda: cls.from_parsed(parser, others, tdesc, mask, res), attrs)


@irdl_op_definition
class LoadGatherOp(_ScatterMemOp):
    """``xegpu.load``: each lane loads ``chunk_size`` elements at its offset."""

    name = "xegpu.load"
    value = result_def(VectorType)
    POLICIES: ClassVar = LOAD_POLICIES

    def __init__(self, tdesc: SSAValue, mask: SSAValue, result_type: VectorType, transpose: bool = False,
                 hints: dict[str, str] | None = None):
        super().__init__(operands=[tdesc, mask], result_types=[result_type], properties=self.props(transpose, hints))

    def _verify_shape(self, tdesc: TensorDescType, chunk: int) -> None:
        if chunk > 1 and self.transpose is None:
            raise VerifyException(f"{self.name}: a chunk_size = {chunk} load yields [chunk, lanes]; add the "
                                  f"'transpose' attribute to say so")
        want = _value_shape(tdesc, self.transpose is not None)
        if list(self.value.type.get_shape()) != want:
            raise VerifyException(f"{self.name}: result shape must be {want}, got {list(self.value.type.get_shape())}")

    @classmethod
    def from_parsed(cls, parser: Parser, _others, tdesc: SSAValue, mask: SSAValue, res) -> LoadGatherOp:
        if res is None:
            parser.raise_error("xegpu.load needs its result type: `: tensor_desc<..>, vector<..xi1> -> vector<..>`")
        return cls(tdesc, mask, res)


@irdl_op_definition
class StoreScatterOp(_ScatterMemOp):
    """``xegpu.store``: each lane stores ``chunk_size`` elements at its offset."""

    name = "xegpu.store"
    value = operand_def(VectorType)
    POLICIES: ClassVar = STORE_POLICIES

    def __init__(self, value: SSAValue, tdesc: SSAValue, mask: SSAValue, transpose: bool = False,
                 hints: dict[str, str] | None = None):
        super().__init__(operands=[value, tdesc, mask], properties=self.props(transpose, hints))

    def _verify_shape(self, tdesc: TensorDescType, chunk: int) -> None:
        want = _value_shape(tdesc, self.transpose is not None or chunk > 1)
        if list(self.value.type.get_shape()) != want:
            raise VerifyException(f"{self.name}: value shape must be {want} ([chunk_size, lanes] when chunked), got "
                                  f"{list(self.value.type.get_shape())}")

    @classmethod
    def from_parsed(cls, parser: Parser, others, tdesc: SSAValue, mask: SSAValue | None, _res) -> StoreScatterOp:
        if len(others) != 1 or mask is None:
            parser.raise_error("xegpu.store: expected a value, a tensor_desc and a vector<..xi1> mask")
        return cls(others[0], tdesc, mask)


@irdl_op_definition
class PrefetchOp(PrefetchBase):
    name = "xegpu.prefetch"

    def verify_descriptor(self, tdesc: TensorDescType) -> None:
        _check_scatter(self, tdesc)

    @classmethod
    def parse(cls, parser: Parser) -> PrefetchOp:
        _, tdesc, _, _, attrs = _parse_by_types(parser, cls)
        return _asm.build_op(parser, cls, lambda: cls(tdesc), attrs)


@irdl_op_definition
class UpdateOffsetOp(MoveDescriptorOp):
    name = "xegpu.update_offset"
    tensor_desc = operand_def(TensorDescType)
    offsets = operand_def(VectorType)
    assembly_format = ("$tensor_desc `,` $offsets attr-dict `:` custom<RfcType>(type($tensor_desc)) `,` "
                       "type($offsets) custom<OptionalComma>() custom<ResultAsSource>(type($result), "
                       "ref(type($tensor_desc)))")
    custom_directives = (RfcType, OptionalComma, ResultAsSource)

    def __init__(self, tdesc: SSAValue, offsets: SSAValue):
        super().__init__(operands=[tdesc, offsets], result_types=[tdesc.type])

    def verify_offsets(self, tdesc: TensorDescType) -> None:
        _check_scatter(self, tdesc)
        lanes = tdesc.get_shape()[0]
        shape = self.offsets.type.get_shape()
        per_lane = tdesc.layout is not None and shape == (1,)  # SIMT form: this lane's delta
        if (shape != (lanes,) and not per_lane) or not isinstance(self.offsets.type.element_type, IndexType):
            raise VerifyException(f"{self.name}: offsets must be vector<{lanes}xindex>, got {self.offsets.type}")



@irdl_op_definition
class AtomicRMWOp(AtomicKindOp):
    """Atomic read-modify-write through a scattered descriptor; returns the old values.
    Kind ``cmpxchg`` takes ``cmp`` last: a lane whose old value equals it stores ``value``
    (``xegpu.atomic_rmw cmpxchg %v, %d, %mask, %cmp``)."""

    name = "xegpu.atomic_rmw"
    value = operand_def(VectorType)
    tensor_desc = operand_def(TensorDescType)
    mask = operand_def(VectorType)
    cmp = opt_operand_def(VectorType)

    def __init__(self, kind: str, value: SSAValue, tdesc: SSAValue, mask: SSAValue, result_type: VectorType | None = None,
                 cmp: SSAValue | None = None):
        super().__init__(operands=[value, tdesc, mask, [cmp] if cmp is not None else []],
                         result_types=[result_type or value.type], properties={"kind": StringAttr(kind)})

    def verify_memory(self) -> None:
        tdesc = self.tensor_desc.type
        _check_scatter(self, tdesc, self.mask)
        if tdesc.layout is None and tuple(self.value.type.get_shape()) != tdesc.get_shape():
            raise VerifyException(f"{self.name}: value shape {list(self.value.type.get_shape())} must equal the "
                                  f"descriptor shape {list(tdesc.get_shape())}")

    @classmethod
    def parse(cls, parser: Parser) -> AtomicRMWOp:
        kind = _parse_kind(parser)
        others, tdesc, mask, res, attrs = _parse_by_types(parser, cls)
        if len(others) != 1 + (kind == "cmpxchg") or mask is None:
            parser.raise_error("xegpu.atomic_rmw: expected a value, a tensor_desc, a mask (and cmpxchg's cmp)")
        cmp = others[1] if len(others) == 2 else None
        return _asm.build_op(parser, cls, lambda: cls(kind, others[0], tdesc, mask, res, cmp), attrs)


LoadGatherAlias = _asm.make_alias("xegpu.load_gather", LoadGatherOp, "Earlier RFC name of xegpu.load.")
StoreScatterAlias = _asm.make_alias("xegpu.store_scatter", StoreScatterOp, "Earlier RFC name of xegpu.store.")
UpdateOffsetsAlias = _asm.make_alias("xegpu.update_offsets", UpdateOffsetOp, "RFC typo of xegpu.update_offset.")


def _parse_int_operand(parser: Parser, count: int, result: Attribute | None):
    operands = _asm.parse_operands(parser)
    if len(operands) != count:
        parser.raise_error(f"expected {count} operand(s), got {len(operands)}")
    parser.parse_punctuation(":")
    types = _asm.parse_types(parser)
    if result is not None and _asm.parse_optional_arrow(parser):
        _asm.parse_type(parser)
    if len(types) == 1 and count > 1:
        types = types * count
    return _asm.resolve(parser, operands, types)


def _check_int(op: IRDLOperation, *values: SSAValue) -> None:
    for v in values:
        if not isinstance(v.type, (IntegerType, IndexType)):
            raise VerifyException(f"{op.name}: operands must be integers (e.g. i8) or index, got {v.type}")


@irdl_op_definition
class AllocNbarrierOp(IRDLOperation):
    """Allocate named barriers for the workgroup: ``%n : i8`` (RFC) or a constant ``8``
    (MLIR's spelling, kept in the ``nbarrier_count`` property)."""

    name = "xegpu.alloc_nbarrier"
    nbarrier_num = opt_operand_def()
    nbarrier_count = opt_prop_def(IntegerAttr)

    def __init__(self, nbarrier_num: SSAValue | int):
        if isinstance(nbarrier_num, int):
            super().__init__(operands=[[]], properties={"nbarrier_count": IntegerAttr(nbarrier_num, i64)})
        else:
            super().__init__(operands=[[nbarrier_num]])

    def verify_(self) -> None:
        if (self.nbarrier_num is None) == (self.nbarrier_count is None):
            raise VerifyException(f"{self.name}: give the barrier count as one operand or one constant")
        if self.nbarrier_num is not None:
            _check_int(self, self.nbarrier_num)
        elif not 1 <= self.nbarrier_count.value.data <= 32:
            raise VerifyException(f"{self.name}: barrier count must be 1..32, got {self.nbarrier_count.value.data}")

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if self.nbarrier_num is None:
            printer.print_string(str(self.nbarrier_count.value.data))
            return
        printer.print_operand(self.nbarrier_num)
        printer.print_string(" : ")
        printer.print_attribute(self.nbarrier_num.type)

    @classmethod
    def parse(cls, parser: Parser) -> AllocNbarrierOp:
        count = parser.parse_optional_integer(allow_boolean=False, allow_negative=False)
        if count is not None:
            return cls(count)
        (n,) = _parse_int_operand(parser, 1, None)
        return cls(n)


@irdl_op_definition
class InitNbarrierOp(IRDLOperation):
    """Bind named barrier ``nbarrier_id`` with ``participant_thread_num`` participants."""

    name = "xegpu.init_nbarrier"
    nbarrier_id = operand_def()
    participant_thread_num = operand_def()
    result = result_def(NbarrierType)

    assembly_format = ("$nbarrier_id `,` $participant_thread_num attr-dict `:` type($nbarrier_id) `,` "
                       "type($participant_thread_num) custom<Arrow>() custom<RfcType>(type($result))")
    custom_directives = (Arrow, RfcType)

    def __init__(self, nbarrier_id: SSAValue, participant_thread_num: SSAValue):
        super().__init__(operands=[nbarrier_id, participant_thread_num], result_types=[NbarrierType()])

    def verify_(self) -> None:
        _check_int(self, self.nbarrier_id, self.participant_thread_num)


class _NbarrierUse(IRDLOperation):
    """``xegpu.nbarrier_arrive %b : !xegpu.nbarrier`` (the RFC leaves out the type)."""

    nbarrier = operand_def(NbarrierType)
    assembly_format = "$nbarrier attr-dict custom<ColonNbarrier>(type($nbarrier))"
    custom_directives = (ColonNbarrier,)

    def __init__(self, nbarrier: SSAValue):
        super().__init__(operands=[nbarrier])


@irdl_op_definition
class NbarrierArriveOp(_NbarrierUse):
    name = "xegpu.nbarrier_arrive"


@irdl_op_definition
class NbarrierWaitOp(_NbarrierUse):
    name = "xegpu.nbarrier_wait"


_SCOPE_WORDS = {"workgroup": "workgroup", "local": "workgroup", "group": "workgroup", "gpu": "gpu",
                "global": "gpu", "tile": "gpu"}
_KIND_WORDS = {"global": "global", "ugm": "global", "slm": "slm", "shared": "slm"}


@irdl_op_definition
class FenceOp(IRDLOperation):
    """Order memory accesses of ``memory_kind`` within ``fence_scope``."""

    name = "xegpu.fence"
    memory_kind = prop_def(MemorySpaceAttr)
    fence_scope = prop_def(FenceScopeAttr)

    def __init__(self, memory_kind: str = "global", fence_scope: str = "workgroup"):
        super().__init__(properties={"memory_kind": MemorySpaceAttr(memory_kind),
                                     "fence_scope": FenceScopeAttr(fence_scope)})

    def print(self, printer: Printer) -> None:
        printer.print_string(f" memory_kind = {self.memory_kind.word}, fence_scope = {self.fence_scope.word}")

    @classmethod
    def parse(cls, parser: Parser) -> FenceOp:
        if parser._current_token.text == "{":  # noqa: SLF001 -- RFC: {scope = gpu, memory_kind = global}
            attrs = _asm.parse_attr_entries(parser)
        else:
            attrs = {}
            while (key := parser.parse_optional_identifier()) is not None:
                parser.parse_punctuation("=")
                attrs[key] = StringAttr(parser.parse_optional_str_literal() or parser.parse_identifier())
                if parser.parse_optional_punctuation(",") is None:
                    break
        kind, scope = "global", "workgroup"
        for key, value in attrs.items():
            word = _asm.as_word(value)
            if key in ("memory_kind",) and word in _KIND_WORDS:
                kind = _KIND_WORDS[word]
            elif key in ("scope", "fence_scope") and word in _SCOPE_WORDS:
                scope = _SCOPE_WORDS[word]
            elif key != "fence_op":
                parser.raise_error(f"xegpu.fence: unexpected {key} = {value}; expected memory_kind = global|slm, "
                                   "fence_scope = workgroup|gpu")
        return cls(kind, scope)


MfenceAlias = _asm.make_alias("xegpu.mfence", FenceOp, "Earlier RFC name of xegpu.fence.")


@irdl_op_definition
class CompileHintOp(IRDLOperation):
    """``xegpu.compile_hint {hint = schedule_barrier}`` (earlier RFC): a scheduling hint
    for the lower-level compiler; no semantics."""

    name = "xegpu.compile_hint"

    def print(self, printer: Printer) -> None:
        _asm.print_attr_entries(printer, self)

    @classmethod
    def parse(cls, parser: Parser) -> CompileHintOp:
        attrs = _asm.parse_attr_entries(parser)
        return _asm.build_op(parser, cls, cls, attrs)


@irdl_op_definition
class ConvertLayoutOp(_asm.OperandsToSyntax, IRDLOperation):
    """Redistribute a vector from ``input_layout`` to ``target_layout``."""

    name = "xegpu.convert_layout"
    source = operand_def(VectorType)
    result = result_def(VectorType)
    target_layout = prop_def(Attribute)
    input_layout = opt_prop_def(Attribute)

    POSITIONAL: ClassVar = {1: ("target_layout",), 2: ("target_layout", "input_layout")}
    #: MLIR's earlier names (layout.mlir: ``{srcMap = #a, resMap = #b}``)
    KEY_ALIASES: ClassVar = {"resMap": "target_layout", "srcMap": "input_layout"}

    def __init__(self, source: SSAValue, target_layout: Attribute, input_layout: Attribute | None = None):
        props = {"target_layout": target_layout}
        if input_layout is not None:
            props["input_layout"] = input_layout
        super().__init__(operands=[source], result_types=[source.type], properties=props)

    def verify_(self) -> None:
        if self.result.type != self.source.type:
            raise VerifyException(f"{self.name}: result type must equal the source type {self.source.type}")
        for name in ("target_layout", "input_layout"):
            attr = self.properties.get(name)
            if attr is not None and not isinstance(attr, (LayoutAttr, SliceAttr, SGMapAttr)):
                raise VerifyException(f"{self.name}: {name} must be a #xegpu.layout or #xegpu.slice, got {attr}")
            if isinstance(attr, LayoutAttr):
                attr.check_shape(self.source.type.get_shape(), f"{self.name} {name}")
        target, source = self.properties.get("target_layout"), self.properties.get("input_layout")
        if target is not None and target == source:
            raise VerifyException(f"{self.name}: input_layout and target_layout are the same {target}; nothing to "
                                  "convert (drop the op)")
        if isinstance(target, LayoutAttr) and isinstance(source, LayoutAttr) and \
                bool(target.field("sg_layout")) != bool(source.field("sg_layout")):
            raise VerifyException(f"{self.name}: input_layout and target_layout must both be workgroup layouts "
                                  "(with sg_layout) or both subgroup layouts (without)")

    @classmethod
    def parse(cls, parser: Parser) -> ConvertLayoutOp:
        operand = parser.parse_unresolved_operand()
        attrs = _asm.parse_attr_entries(parser, cls.POSITIONAL)
        attrs = {cls.KEY_ALIASES.get(k, k): v for k, v in attrs.items()}
        parser.parse_punctuation(":")
        src_type = _asm.parse_type(parser)
        if _asm.parse_optional_arrow(parser) and _asm.parse_type(parser) != src_type:
            parser.raise_error(f"xegpu.convert_layout: the result type must be the source type {src_type}")
        if "target_layout" not in attrs:
            parser.raise_error("xegpu.convert_layout needs {target_layout = #xegpu.layout<...>}")
        src = parser.resolve_operand(operand, src_type)
        return _asm.build_op(parser, cls, lambda: cls(src, attrs["target_layout"]), attrs)
