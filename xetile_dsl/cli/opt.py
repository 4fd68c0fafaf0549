"""``python -m xetile_dsl opt FILE.mlir [-p pass,pass] [--target pvc]``: parse, verify,
run passes, verify again and print, as mlir-opt does.

Errors are reported as ``file:line:col: error: message`` (parse errors and verification
of the input, at the failing op) or ``file: error (after pass P): message`` (verification
after a pass), with exit code 1 and no Python traceback.
"""
from __future__ import annotations

import argparse
import sys
from typing import TextIO

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.passes import PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException, VerifyException

from xetile_dsl.dialects import make_context
from xetile_dsl.dialects._located import LocatingParser, located_message, verify_located
from xetile_dsl.dialects.target_legality import verify_for_target
from xetile_dsl.lowering.registry import available_passes


def _located(exc: ParseError, fallback: str) -> str:
    """``file:line:col: error: message`` and the source line with carets."""
    try:
        loc = exc.span.get_location()
        context = exc.span.print_with_context(exc.msg).split("\n", 1)[1]
        return f"{loc.file}:{loc.line}:{loc.col}: error: {exc.msg}\n{context}"
    except Exception:  # noqa: BLE001 -- fall back to xDSL's own rendering
        return f"{fallback}: error: {exc}"


def _position(loc) -> tuple[int, int] | None:
    """(line, col) of a ``FileLineColLoc``, else None."""
    try:
        return loc.line.data, loc.column.data
    except AttributeError:
        return None


def _attach_locations(op_spans: dict) -> dict:
    """Give every parsed op a ``FileLineColLoc`` of its text, so that the passes (which copy
    an op's location to what they build from it) report errors at the input line.  Returns
    (line, col) -> span for rendering those errors with the source line."""
    by_position = {}
    for op, span in op_spans.items():
        loc = span.get_location()
        op.location = FileLineColLoc(StringAttr(loc.file), IntAttr(loc.line), IntAttr(loc.col))
        by_position[(loc.line, loc.col)] = span
    return by_position


def run_opt(text: str, name: str, passes: str = "", target: str | None = None,
            generic: bool = False, debug: bool = False, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Do the work of the ``opt`` subcommand on ``text``; returns the exit code."""
    ctx = make_context()
    parser = LocatingParser(ctx, text, name)
    try:
        module = parser.parse_module()
    except ParseError as exc:
        print(_located(exc, name).rstrip(), file=err)
        return 1
    spans_by_position = _attach_locations(parser.op_spans)
    try:
        verify_located(module, parser.op_spans)
    except VerifyException as exc:
        print(str(exc), file=err)
        return 1
    stage = "input"
    try:
        if passes:
            registry = available_passes()
            try:
                pipeline = PassPipeline.parse_spec({k: (lambda c=v: c) for k, v in registry.items()}, passes)
            except Exception as exc:  # noqa: BLE001 -- unknown pass or bad options
                print(f"{name}: error: {exc}; known passes: {', '.join(sorted(registry)) or 'none'}", file=err)
                return 1
            for p in pipeline.passes:
                stage = f"after pass {p.name}"
                p.apply(ctx, module)
                module.verify()
        if target:
            stage = f"target {target}"
            verify_for_target(module, target)
    except (VerifyException, DiagnosticException, PassFailedException, ValueError) as exc:
        print(f"{name}: error ({stage}): {exc}", file=err)
        return 1
    except Exception as exc:  # noqa: BLE001 -- a pass's own error type (LoweringError, ...)
        if debug:
            raise
        span = spans_by_position.get(_position(getattr(getattr(exc, "op", None), "location", None)))
        message = f"{type(exc).__name__} ({stage}): {exc}"
        print(located_message(span, message) if span else f"{name}: error {message}", file=err)
        return 1
    try:
        Printer(stream=out, print_generic_format=generic).print_op(module)
        out.write("\n")
    except BrokenPipeError:  # ``| head``
        pass
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="MLIR file to read ('-' for stdin)")
    parser.add_argument("-p", "--passes", default="", help="comma-separated pass pipeline (xDSL syntax)")
    parser.add_argument("--target", default=None, help="also check legality for a target (pvc, bmg, lnl, ptl, arc)")
    parser.add_argument("--generic", action="store_true", help="print the generic op form")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks of failing passes")
    parser.add_argument("-o", "--output", default=None, help="write the result here instead of stdout")


def run(args: argparse.Namespace) -> int:
    if args.file == "-":
        text, name = sys.stdin.read(), "<stdin>"
    else:
        try:
            with open(args.file, encoding="utf-8") as f:
                text = f.read()
        except OSError as exc:
            print(f"{args.file}: error: {exc.strerror}", file=sys.stderr)
            return 1
        name = args.file
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            return run_opt(text, name, args.passes, args.target, args.generic, args.debug, out=out)
    return run_opt(text, name, args.passes, args.target, args.generic, args.debug)


HELP = "parse, verify, run passes and print MLIR (like mlir-opt)"
