"""Errors located at the source text, as mlir-opt reports them.

xDSL 0.74 gives parsed ops no location and a failing ``module.verify()`` does not say
which op failed.  :class:`LocatingParser` remembers where each op's text starts;
:func:`verify_located` verifies op by op and prefixes the failing op's
``file:line:col`` (and the source line with a caret) to the message.
:meth:`LocatingParser.parse_module` also turns the few exceptions xDSL raises from inside
its own parsers (e.g. ``dense<14> : vector<4xi1>`` is a ValueError) into a ParseError at
the op being parsed.
"""
from __future__ import annotations

from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException
from xdsl.utils.lexer import Span

from .walk import ops_in


class LocatingParser(Parser):
    """A Parser that records the span of the first token of every op it parses."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.op_spans: dict[Operation, Span] = {}
        self._failed_op: Span | None = None  # the innermost op whose parsing raised

    def parse_module(self, *args, **kwargs):
        try:
            return super().parse_module(*args, **kwargs)
        except ParseError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, AssertionError, VerifyException) as exc:
            where = self._failed_op or self._current_token.span
            raise ParseError(where, f"{type(exc).__name__}: {exc}") from exc

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        try:
            op = super().parse_operation()
        except Exception:
            self._failed_op = self._failed_op or span
            raise
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
    for op in ops_in(module):
        try:
            op.verify(verify_nested_ops=False)
        except (VerifyException, DiagnosticException) as exc:
            raise VerifyException(located_message(op_spans.get(op), str(exc))) from exc
    module.verify()  # whatever a per-op check cannot see (nothing in practice)
