"""The frontend's entry point: a ``@jit`` function's AST -> verified XeTile IR."""
from __future__ import annotations

from xdsl.utils.exceptions import VerifyException

from ..knobs import debug_tracebacks
from .ast_to_xetile import KernelIRBuilder
from .ranks import drop_rank_casts
from .source import KernelSource


def build_module(fn, args: dict, constants: dict, target, src: KernelSource | None = None):
    """Parse ``fn`` (or take its parsed ``src``, as the compiler driver has it) and emit
    its XeTile module for ``target`` (a Target); verify every op, reporting a verifier
    failure at the user's line of the op that broke the rule.

    Returns (module, names of the arrays the kernel writes)."""
    src = src if src is not None else KernelSource.of(fn)
    builder = KernelIRBuilder(src, fn.__globals__, args, constants, target)
    module = builder.build()
    drop_rank_casts(module)
    for op in module.walk(reverse=True):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as exc:
            if debug_tracebacks():
                raise
            raise _located(src, op, str(exc).splitlines()[0]) from None
    return module, builder.written_arrays


def _located(src, op, message: str):
    loc = getattr(op, "location", None)
    line = getattr(getattr(loc, "line", None), "data", 0)
    col = getattr(getattr(loc, "column", None), "data", 1) - 1
    node = type("Loc", (), {"lineno": line or src.first_line, "col_offset": max(col, 0)})()
    return src.error(node, f"invalid operation {op.name}: {message}")
