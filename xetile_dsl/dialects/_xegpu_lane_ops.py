"""``xegpu.lane_transpose``: the SIMT form of a ``lanes x lanes`` block transpose in registers
(an xetile_dsl extension; the RFC's SIMT form has no cross-lane vector op)::

    %t = xegpu.lane_transpose %v : vector<16x1xf32> -> vector<16x1xf32>

Before SIMT distribution the block is ``vector.transpose %sq, [1, 0] : vector<16x16xf32> to
vector<16x16xf32>`` with source and result in the plain lane layout (``wi_layout = [1, L],
wi_data = [1, 1]``: lane n holds column n). After distribution each lane holds its column as
``vector<L x 1 x T>``; ``lane_transpose`` gives lane n row n of the block, i.e. element j of
lane n's result is element n of lane j's source. Codegen does it with L subgroup shuffles
(codegen/lane_transpose.py). L is the subgroup size (checked by target_legality).
"""
from __future__ import annotations

from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from . import _asm


@irdl_op_definition
class LaneTransposeOp(IRDLOperation):
    """Transpose a ``lanes x lanes`` block held one column per lane (SIMT form)."""

    name = "xegpu.lane_transpose"
    source = operand_def(VectorType)
    result = result_def(VectorType)
    traits = traits_def(Pure())

    def __init__(self, source: SSAValue):
        source = SSAValue.get(source)
        super().__init__(operands=[source], result_types=[source.type])

    @property
    def lanes(self) -> int:
        return self.source.type.get_shape()[0]

    def verify_(self) -> None:
        t = self.source.type
        shape = tuple(t.get_shape())
        if len(shape) != 2 or shape[1] != 1 or shape[0] < 2:
            raise VerifyException(f"{self.name}: the source must be one lane's column of a lanes x lanes block, "
                                  f"vector<L x 1 x T> (L = subgroup size), got {t}")
        if self.result.type != t:
            raise VerifyException(f"{self.name}: the result type must be the source type {t}, got "
                                  f"{self.result.type}")

    @classmethod
    def parse(cls, parser: Parser) -> "LaneTransposeOp":
        operand = parser.parse_unresolved_operand()
        attrs = _asm.parse_attr_entries(parser)
        parser.parse_punctuation(":")
        src_type = _asm.parse_type(parser)
        if _asm.parse_optional_arrow(parser) and _asm.parse_type(parser) != src_type:
            parser.raise_error(f"{cls.name}: the result type must be the source type {src_type}")
        src = parser.resolve_operand(operand, src_type)
        return _asm.build_op(parser, cls, lambda: cls(src), attrs)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.source)
        _asm.print_attr_entries(printer, self)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.result.type)
