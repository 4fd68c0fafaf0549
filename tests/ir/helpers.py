"""Shared helpers for the IR tests: wrap op lines in a function, round-trip, verify."""
from __future__ import annotations

from io import StringIO

from xdsl.printer import Printer

from xetile_dsl.dialects import parse_module, print_module


def wrap(args: str, body: str) -> str:
    return f"func.func @f({args}) {{\n{body}\n  func.return\n}}\n"


def generic(module) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=True).print_op(module)
    return out.getvalue()


def roundtrip(text: str):
    """Parse, verify, print; parse the print and the generic print back; all equal."""
    module = parse_module(text)
    module.verify()
    printed = print_module(module)
    again = parse_module(printed)
    again.verify()
    assert print_module(again) == printed
    assert module.is_structurally_equivalent(again)
    from_generic = parse_module(generic(module))
    assert from_generic.is_structurally_equivalent(module)
    return module, printed
