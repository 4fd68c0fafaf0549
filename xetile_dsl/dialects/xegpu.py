"""The XeGPU dialect (spec/xegpu-rfc.md, spec/xegpu-op-reference.md) on xDSL.

Attributes first, then types, then operations, then the Dialect registry.
"""
from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    IndexType,
    IntAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
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
class SGMapAttr(ParametrizedAttribute):
    """``#xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>``: how a subgroup's tensor is
    split among its work items (lanes)."""

    name = "xegpu.sg_map"
    wi_layout: ArrayAttr[IntAttr]
    wi_data: ArrayAttr[IntAttr]

    def __init__(self, wi_layout: Sequence[int], wi_data: Sequence[int]):
        super().__init__(ArrayAttr(IntAttr(v) for v in wi_layout), ArrayAttr(IntAttr(v) for v in wi_data))

    @property
    def layout(self) -> tuple[int, ...]:
        return ints(self.wi_layout)

    @property
    def data(self) -> tuple[int, ...]:
        return ints(self.wi_data)

    @property
    def lanes(self) -> int:
        return self.layout[0] * self.layout[1]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<wi_layout = {print_int_list(self.layout)}, wi_data = {print_int_list(self.data)}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            parser.parse_keyword("wi_layout")
            parser.parse_punctuation("=")
            layout = parse_int_list(parser)
            parser.parse_punctuation(",")
            parser.parse_keyword("wi_data")
            parser.parse_punctuation("=")
            data = parse_int_list(parser)
        return list(SGMapAttr(layout, data).parameters)

    def verify(self) -> None:
        if len(self.layout) != 2 or len(self.data) != 2:
            raise VerifyException("sg_map: wi_layout and wi_data must have two entries each")
        if self.data[0] > 1 and self.data[1] > 1:
            raise VerifyException("sg_map: wi_data elements must come from one contiguous dimension")

    def fragment_shape(self, shape: Sequence[int]) -> tuple[int, int]:
        """Per-lane fragment ``[n_distribution_units, wi_data_size]`` of a tensor ``shape``."""
        rows, cols = (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])
        lay, dat = self.layout, self.data
        if rows % (lay[0] * dat[0]) or cols % (lay[1] * dat[1]):
            raise VerifyException(f"sg_map {list(lay)}x{list(dat)} does not divide tensor {list(shape)}")
        units = (rows * cols) // (lay[0] * lay[1] * dat[0] * dat[1])
        return units, dat[0] * dat[1]


@irdl_attr_definition
class BlockTdescAttr(ParametrizedAttribute):
    """``#xegpu.block_tdesc_attr<memory_space = global, array_length = 1, boundary_check = true>``."""

    name = "xegpu.block_tdesc_attr"
    memory_space: StringAttr
    array_length: IntAttr
    boundary_check: BoolAttr

    def __init__(self, memory_space: str = "global", array_length: int = 1, boundary_check: bool = True):
        super().__init__(StringAttr(memory_space), IntAttr(array_length), BoolAttr.from_bool(boundary_check))

    @property
    def space(self) -> str:
        return self.memory_space.data

    @property
    def arr_len(self) -> int:
        return self.array_length.data

    @property
    def checks_bounds(self) -> bool:
        return bool(self.boundary_check.value.data)

    def is_default(self) -> bool:
        return self.space == "global" and self.arr_len == 1 and self.checks_bounds

    def print_parameters(self, printer: Printer) -> None:
        parts = []
        if self.space != "global":
            parts.append(f"memory_space = {self.space}")
        if self.arr_len != 1:
            parts.append(f"array_length = {self.arr_len}")
        if not self.checks_bounds:
            parts.append("boundary_check = false")
        printer.print_string("<" + ", ".join(parts) + ">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        fields: dict[str, object] = {}
        with parser.in_angle_brackets():
            key = parser.parse_optional_identifier()
            while key is not None:
                parser.parse_punctuation("=")
                if key == "memory_space":
                    fields[key] = parser.parse_identifier()
                elif key == "array_length":
                    fields[key] = parser.parse_integer()
                elif key == "boundary_check":
                    fields[key] = parser.parse_boolean()
                else:
                    parser.raise_error(f"unknown block_tdesc_attr field '{key}'")
                key = parser.parse_identifier() if parser.parse_optional_punctuation(",") else None
        return list(BlockTdescAttr(**fields).parameters)

    def verify(self) -> None:
        if self.space not in ("global", "slm"):
            raise VerifyException(f"block_tdesc_attr: memory_space must be global or slm, got {self.space}")
        if self.arr_len < 1:
            raise VerifyException("block_tdesc_attr: array_length must be >= 1")


# ----------------------------------------------------------------------------- types
@irdl_attr_definition
class TensorDescType(ParametrizedAttribute, TypeAttribute):
    """``!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<...>, #xegpu.sg_map<...>>``."""

    name = "xegpu.tensor_desc"
    shape: ArrayAttr[IntAttr]
    element_type: Attribute
    encoding: Attribute
    sg_map: Attribute

    def __init__(self, shape: Sequence[int], element_type: Attribute, encoding: Attribute | None = None,
                 sg_map: SGMapAttr | None = None):
        if isinstance(encoding, BlockTdescAttr) and encoding.is_default():
            encoding = None
        super().__init__(ArrayAttr(IntAttr(v) for v in shape), element_type,
                         encoding if encoding is not None else NoneAttr(),
                         sg_map if sg_map is not None else NoneAttr())

    def get_shape(self) -> tuple[int, ...]:
        return ints(self.shape)

    @property
    def block_attr(self) -> BlockTdescAttr:
        return self.encoding if isinstance(self.encoding, BlockTdescAttr) else BlockTdescAttr()

    @property
    def map(self) -> SGMapAttr | None:
        return self.sg_map if isinstance(self.sg_map, SGMapAttr) else None

    def with_sg_map(self, sg_map: SGMapAttr | None) -> "TensorDescType":
        enc = self.encoding if not isinstance(self.encoding, NoneAttr) else None
        return TensorDescType(self.get_shape(), self.element_type, enc, sg_map)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "x".join(str(d) for d in self.get_shape()) + "x")
        printer.print_attribute(self.element_type)
        for extra in (self.encoding, self.sg_map):
            if not isinstance(extra, NoneAttr):
                printer.print_string(", ")
                printer.print_attribute(extra)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            shape, elem = parser.parse_ranked_shape()
            encoding: Attribute | None = None
            sg_map: Attribute | None = None
            while parser.parse_optional_punctuation(",") is not None:
                attr = parser.parse_attribute()
                if isinstance(attr, SGMapAttr):
                    sg_map = attr
                else:
                    encoding = attr
        return list(TensorDescType(shape, elem, encoding, sg_map).parameters)

    def verify(self) -> None:
        shape = self.get_shape()
        if len(shape) not in (1, 2) or any(d <= 0 for d in shape):
            raise VerifyException(f"tensor_desc: shape must be 1-D or 2-D and static, got {list(shape)}")
        if self.map is not None:
            self.map.fragment_shape(shape)


# ----------------------------------------------------------------------------- operations
CACHE_HINTS = ("l1_hint", "l2_hint", "l3_hint")


def _hint_props(hints: dict[str, str] | None) -> dict[str, Attribute]:
    return {k: StringAttr(v) for k, v in (hints or {}).items()}


@irdl_op_definition
class CreateNdTdescOp(IRDLOperation):
    """Describe a 1-D/2-D block of a base tensor given as a memref or an i64 address."""

    name = "xegpu.create_nd_tdesc"
    source = operand_def()
    offsets = var_operand_def(IndexType)
    shape = var_operand_def(IndexType)
    strides = var_operand_def(IndexType)
    tensor_desc = result_def(TensorDescType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, source: SSAValue, offsets: Sequence[SSAValue], result_type: TensorDescType,
                 shape: Sequence[SSAValue] = (), strides: Sequence[SSAValue] = ()):
        super().__init__(operands=[source, offsets, shape, strides], result_types=[result_type])

    def verify_(self) -> None:
        src = self.source.type
        rank = len(self.tensor_desc.type.get_shape())
        if isinstance(src, MemRefType):
            if any(d < 0 for d in src.get_shape()) and len(self.shape) != len(src.get_shape()):
                raise VerifyException(f"{self.name}: a dynamic memref needs its shape and strides as operands")
        elif src != i64:
            raise VerifyException(f"{self.name}: source must be a memref or an i64 address, got {src}")
        if len(self.offsets) < rank:
            raise VerifyException(f"{self.name}: needs at least {rank} offsets")


@irdl_op_definition
class LoadNdOp(IRDLOperation):
    name = "xegpu.load_nd"
    tensor_desc = operand_def(TensorDescType)
    value = result_def(VectorType)
    packed = opt_prop_def(UnitAttr)
    transpose = opt_prop_def(ArrayAttr)
    transpose_bit_width = opt_prop_def(IntAttr)
    l1_hint = opt_prop_def(StringAttr)
    l2_hint = opt_prop_def(StringAttr)
    l3_hint = opt_prop_def(StringAttr)

    def __init__(self, tdesc: SSAValue, result_type: VectorType, packed: bool = False,
                 transpose: Sequence[int] | None = None, hints: dict[str, str] | None = None):
        props = _hint_props(hints)
        if packed:
            props["packed"] = UnitAttr()
        if transpose is not None:
            props["transpose"] = ArrayAttr(IntAttr(v) for v in transpose)
        super().__init__(operands=[tdesc], result_types=[result_type], properties=props)

    def verify_(self) -> None:
        if self.packed is not None and self.transpose is not None:
            raise VerifyException(f"{self.name}: packed (VNNI) and transpose cannot be combined")


@irdl_op_definition
class StoreNdOp(IRDLOperation):
    name = "xegpu.store_nd"
    value = operand_def(VectorType)
    tensor_desc = operand_def(TensorDescType)
    l1_hint = opt_prop_def(StringAttr)
    l2_hint = opt_prop_def(StringAttr)
    l3_hint = opt_prop_def(StringAttr)

    def __init__(self, value: SSAValue, tdesc: SSAValue, hints: dict[str, str] | None = None):
        super().__init__(operands=[value, tdesc], properties=_hint_props(hints))


@irdl_op_definition
class PrefetchNdOp(IRDLOperation):
    name = "xegpu.prefetch_nd"
    tensor_desc = operand_def(TensorDescType)
    l1_hint = opt_prop_def(StringAttr)
    l2_hint = opt_prop_def(StringAttr)
    l3_hint = opt_prop_def(StringAttr)

    def __init__(self, tdesc: SSAValue, hints: dict[str, str] | None = None):
        super().__init__(operands=[tdesc], properties=_hint_props(hints))


@irdl_op_definition
class UpdateNdOffsetOp(IRDLOperation):
    name = "xegpu.update_nd_offset"
    tensor_desc = operand_def(TensorDescType)
    offsets = var_operand_def(IndexType)
    result = result_def(TensorDescType)

    def __init__(self, tdesc: SSAValue, offsets: Sequence[SSAValue]):
        super().__init__(operands=[tdesc, offsets], result_types=[tdesc.type])


@irdl_op_definition
class DpasOp(IRDLOperation):
    """``D = A x B (+ C)`` for one DPAS instruction, in the plain 2-D, the VNNI 3-D or the
    per-lane (SIMT) operand form."""

    name = "xegpu.dpas"
    lhs = operand_def(VectorType)
    rhs = operand_def(VectorType)
    acc = opt_operand_def(VectorType)
    result = result_def(VectorType)

    def __init__(self, lhs: SSAValue, rhs: SSAValue, acc: SSAValue | None, result_type: VectorType):
        super().__init__(operands=[lhs, rhs, [acc] if acc is not None else []], result_types=[result_type])

    def verify_(self) -> None:
        if self.acc is not None and self.acc.type != self.result.type:
            raise VerifyException(f"{self.name}: accumulator type {self.acc.type} must equal result {self.result.type}")


XeGPU = Dialect(
    "xegpu",
    [CreateNdTdescOp, LoadNdOp, StoreNdOp, PrefetchNdOp, UpdateNdOffsetOp, DpasOp],
    [SGMapAttr, BlockTdescAttr, TensorDescType],
)
