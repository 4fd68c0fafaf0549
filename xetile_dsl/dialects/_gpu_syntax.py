"""MLIR's custom syntax for ``gpu.module``, ``gpu.func`` and ``gpu.return``::

    gpu.module @test {
      gpu.func @k(%a: memref<8x16xf16>, %n: index) kernel attributes {known = 1} {
        gpu.return
      }
    }

xDSL 0.74 has these ops in generic form only; MLIR's XeGPU tests write every kernel in
this form, so :data:`GPU` is xDSL's gpu dialect with these three replaced by subclasses
that parse and print it (the generic form still parses).
"""
from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.dialects.builtin import DenseArrayBase, FunctionType, SymbolNameConstraint, UnitAttr, i32
from xdsl.ir import Block, Dialect
from xdsl.irdl import (
    attr_def, irdl_op_definition, opt_attr_def, opt_prop_def, prop_def, region_def, traits_def, var_operand_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, NoTerminator, SymbolOpInterface, SymbolTable
from xdsl.parser import Parser
from xdsl.printer import Printer

from . import _asm

_FUNC_RESERVED = ("sym_name", "function_type", "kernel")


@irdl_op_definition
class ModuleOp(gpu.ModuleOp):
    """``gpu.module @name (attributes {..})? { ops }``."""

    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    traits = traits_def(IsolatedFromAbove(), NoTerminator(), SymbolOpInterface(), SymbolTable())

    @classmethod
    def parse(cls, parser: Parser) -> "ModuleOp":
        name = parser.parse_symbol_name()
        extra = parser.parse_optional_attr_dict_with_keyword(("sym_name",))
        region = parser.parse_region()
        if not region.blocks:
            region.add_block(Block())
        op = cls(name, region)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_op_attributes(self.attributes, reserved_attr_names=("sym_name",), print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False, print_empty_block=False)


@irdl_op_definition
class FuncOp(gpu.FuncOp):
    """``gpu.func @name(%a: T, ..) (-> results)? kernel? (attributes {..})? { body }``."""

    body = region_def()
    sym_name = attr_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    kernel = opt_prop_def(UnitAttr)
    known_block_size = opt_attr_def(DenseArrayBase.constr(i32), attr_name="gpu.known_block_size")
    known_grid_size = opt_attr_def(DenseArrayBase.constr(i32), attr_name="gpu.known_grid_size")
    traits = traits_def(IsolatedFromAbove(), HasParent(gpu.ModuleOp), SymbolOpInterface())

    @classmethod
    def parse(cls, parser: Parser) -> "FuncOp":
        name = parser.parse_symbol_name()
        args = parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_argument)
        results = _parse_results(parser)
        kernel = parser.parse_optional_keyword("kernel") is not None
        extra = parser.parse_optional_attr_dict_with_keyword(_FUNC_RESERVED)
        region = parser.parse_region(args)
        op = cls(name.data, ([a.type for a in args], results), region, kernel=kernel)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string("(")
        printer.print_list(self.body.blocks.first.args, printer.print_block_argument)
        printer.print_string(")")
        outputs = self.function_type.outputs.data
        if len(outputs) == 1:
            printer.print_string(" -> ")
            printer.print_attribute(outputs[0])
        elif outputs:
            printer.print_string(" -> (")
            _asm.print_types(printer, outputs)
            printer.print_string(")")
        if self.kernel is not None:
            printer.print_string(" kernel")
        printer.print_op_attributes(self.attributes, reserved_attr_names=_FUNC_RESERVED, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


def _parse_results(parser: Parser) -> list:
    if parser.parse_optional_punctuation("->") is None:
        return []
    if parser._current_token.text == "(":  # noqa: SLF001
        return parser.parse_comma_separated_list(parser.Delimiter.PAREN, parser.parse_type)
    return [parser.parse_type()]


@irdl_op_definition
class ReturnOp(gpu.ReturnOp):
    """``gpu.return (%v, .. : T, ..)?``."""

    args = var_operand_def()
    traits = traits_def(IsTerminator(), HasParent(gpu.FuncOp))
    assembly_format = "attr-dict ($args^ `:` type($args))?"


REPLACED = (ModuleOp, FuncOp, ReturnOp)

GPU = Dialect(
    "gpu",
    [op for op in gpu.GPU.operations if op.name not in {r.name for r in REPLACED}] + list(REPLACED),
    list(gpu.GPU.attributes),
)
