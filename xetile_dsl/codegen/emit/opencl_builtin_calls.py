"""Codegen of ``xetile.extern_elementwise``: a call of the named OpenCL builtin on the
lane's fragment (a vector of 2, 3, 4, 8 or 16 elements, or a scalar), mangled from the
operand types as clang mangles OpenCL C (``hypot`` on two ``float8``: ``_Z5hypotDv8_fS_``).
Fragments of other lengths call the scalar builtin element by element.  The builtin is
only declared: the OpenCL library resolves it when ocloc links the module, and a name it
lacks is reported there (:mod:`xetile_dsl.tools.ocloc`)."""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, Float64Type, IntegerType, VectorType

from ...dialects import xetile
from ...dialects.types import is_unsigned
from ...errors import LoweringError
from ..builtins.mangle import mangle, vec
from ..llvm_types import llvm_type
from . import EMITTERS
from .vector_ops import _check_fragments

_I32 = ir.IntType(32)
#: (signed, unsigned) Itanium codes of the integer widths
_INT_CODES = {8: ("c", "h"), 16: ("s", "t"), 32: ("i", "j"), 64: ("l", "m")}
_OPENCL_VECTOR_LENGTHS = (2, 3, 4, 8, 16)


def _code(t, op) -> str:
    """The Itanium code of an element type (``f``, ``Dh``, ``i``, ``j``...)."""
    e = t.element_type if isinstance(t, VectorType) else t
    if isinstance(e, Float32Type):
        return "f"
    if isinstance(e, Float64Type):
        return "d"
    if isinstance(e, Float16Type):
        return "Dh"
    if isinstance(e, IntegerType) and e.width.data in _INT_CODES:
        return _INT_CODES[e.width.data][is_unsigned(e)]
    kind = "bf16 (pass it as f32)" if isinstance(e, BFloat16Type) else str(e)
    raise LoweringError(f"xetile.extern_elementwise: no OpenCL builtin takes {kind}", op)


@EMITTERS.register(xetile.ExternElementwiseOp)
def emit_extern(gen, op: xetile.ExternElementwiseOp) -> None:
    """``callee(args...)`` on the lane's fragments."""
    _check_fragments(op)
    codes = [_code(v.type, op) for v in op.args]
    args = [gen.v(v) for v in op.args]
    gen.values[op.result] = _call(gen, op.callee.data, codes, args, llvm_type(op.result.type))


def _call(gen, name: str, codes: list[str], args: list[ir.Value], result: ir.Type) -> ir.Value:
    n = result.count if isinstance(result, ir.VectorType) else 1
    if n != 1 and n not in _OPENCL_VECTOR_LENGTHS:   # no OpenCL overload: element by element
        out = ir.Constant(result, None)
        for k in range(n):
            idx = ir.Constant(_I32, k)
            out = gen.b.insert_element(out, _call(gen, name, codes, [gen.b.extract_element(a, idx) for a in args],
                                                  result.element), idx)
        return out
    fn = gen.lib.declare(mangle(name, [vec(n, c) for c in codes]), ir.FunctionType(result, [a.type for a in args]))
    return gen.b.call(fn, args)
