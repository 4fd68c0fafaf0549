"""Custom directives for xDSL's declarative ``assembly_format``: the RFC spellings a
format cannot say by itself, each parsed in every spelling and printed in the canonical
one, so that an op whose syntax differs from a format only there is declared with one.

    custom<Arrow>()                       ``->``; the RFC also writes ``into`` / ``to``
    custom<RfcType>(type($x))             a type; also the RFC's ``tile<..>``,
                                          ``tensor_desc<..>`` and ``nbarrier``
    custom<OptionalComma>()               a comma the RFC writes and the canonical form
                                          leaves out
    custom<ColonNbarrier>(type($b))       `` : !xegpu.nbarrier``, which the RFC leaves out
    custom<ResultAsSource>(type($r), ref(type($s)))
                                          the result has the source's type: printed
                                          nothing, parsed from an optional ``-> T``
"""
from __future__ import annotations

from xdsl.irdl.declarative_assembly_format import (
    CustomDirective,
    ParsingState,
    PrintingState,
    TypeDirective,
    irdl_custom_directive,
)
from xdsl.irdl.operations import IRDLOperation
from xdsl.parser import Parser
from xdsl.printer import Printer

from . import _asm
from ._xegpu_attrs import NbarrierType


def _print_token(printer: Printer, state: PrintingState, token: str) -> None:
    """A word or punctuation after a space, as the format prints ``->`` and ``:``."""
    state.print_whitespace(printer)
    printer.print_string(token)


@irdl_custom_directive
class Arrow(CustomDirective):
    def parse(self, parser: Parser, state: ParsingState) -> None:
        _asm.parse_arrow(parser)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        _print_token(printer, state, "->")


@irdl_custom_directive
class RfcType(CustomDirective):
    type: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.type.set(state, (_asm.parse_type(parser),))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        self.type.print(printer, state, op)


@irdl_custom_directive
class OptionalComma(CustomDirective):
    def parse(self, parser: Parser, state: ParsingState) -> None:
        parser.parse_optional_punctuation(",")

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        return

    def is_optional_like(self) -> bool:
        return True


@irdl_custom_directive
class ColonNbarrier(CustomDirective):
    type: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        written = _asm.parse_type(parser) if parser.parse_optional_punctuation(":") is not None else None
        self.type.set(state, (written or NbarrierType(),))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        _print_token(printer, state, ":")
        self.type.print(printer, state, op)


@irdl_custom_directive
class ResultAsSource(CustomDirective):
    result: TypeDirective
    source: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        source = state.operand_types[self.source.inner.index]
        if _asm.parse_optional_arrow(parser):
            written = _asm.parse_type(parser)
            if written != source[0]:
                parser.raise_error(f"result type {written} must equal the operand type {source[0]}")
        self.result.set(state, source)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        return
