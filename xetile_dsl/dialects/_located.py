"""Verification errors located at the op's source text, as mlir-opt reports them.

xDSL 0.74 gives parsed ops no location and a failing ``module.verify()`` does not say
which op failed.  :class:`LocatingParser` remembers where each op's text starts;
:func:`verify_located` verifies op by op and prefixes the failing op's
``file:line:col`` (and the source line with a caret) to the message.
"""
from __future__ import annotations

from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException
from xdsl.utils.lexer import Span


class LocatingParser(Parser):
    """A Parser that records the span of the first token of every op it parses."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.op_spans: dict[Operation, Span] = {}

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        self.op_spans[op] = span
        return op


def located_message(span: Span | None, message: str) -> str:
    """``file:line:col: error: message`` plus the source line with a caret."""
    if span is None:
        return message
    loc = span.get_location()
    lines = span.print_with_context(message).rstrip().split("\n")[1:]  # drop xDSL's position line
    if lines and lines[-1].strip() == message.strip().split("\n")[-1].strip():
        lines = lines[:-1]  # and its repeat of the message
    return "\n".join([f"{loc.file}:{loc.line}:{loc.col}: error: {message}", *lines])


def verify_located(module: Operation, op_spans: dict[Operation, Span]) -> None:
    """``module.verify()``, but the error names the failing op's position."""
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, DiagnosticException) as exc:
            raise VerifyException(located_message(op_spans.get(op), str(exc))) from exc
    module.verify()  # whatever a per-op check cannot see (nothing in practice)
