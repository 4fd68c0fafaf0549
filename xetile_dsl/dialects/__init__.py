"""xDSL dialects: XeTile and XeGPU, plus the standard dialects the compiler uses.

Everything that touches xDSL's context and printer goes through here, so that an xDSL
upgrade is one change.
"""
from __future__ import annotations

from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.dialects.memref import MemRef
from xdsl.dialects.scf import Scf
from xdsl.printer import Printer

from ._arith_vector import ARITH
from ._math_ops import MATH
from ._gpu_syntax import GPU
from ._located import LocatingParser
from ._vector_ops import VECTOR
from .xegpu import XeGPU
from .xetile import XeTile
from .xtdebug import XTDebug


def make_context() -> Context:
    """An xDSL context with every dialect our IR can contain (arith with its casts and
    select on vectors, see ``_arith_vector``; vector with shape_cast,
    transpose and multi_reduction, see ``_vector_ops``;
    gpu.module/func/return in MLIR's custom syntax, see ``_gpu_syntax``)."""
    ctx = Context(allow_unregistered=False)
    for dialect in (Builtin, Func, ARITH, Scf, MATH, MemRef, GPU, VECTOR, XeTile, XeGPU, XTDebug):
        ctx.load_dialect(dialect)
    return ctx


def print_module(module) -> str:
    """MLIR text of ``module`` (custom syntax where the op defines one)."""
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def parse_module(text: str, name: str = "<text>"):
    """Parse MLIR text into a builtin.module; every error is a located ParseError."""
    return LocatingParser(make_context(), text, name).parse_module()


def retype(value, new_type) -> None:
    """Change the type of an SSA value in place (xDSL keeps it in a private field)."""
    value._type = new_type  # noqa: SLF001 - the one place that knows xDSL's layout
