"""Codegen of ``xegpu.dpas``: one call of the target's DPAS builtin
(:meth:`~..builtins.intel.IntelBuiltins.dpas`), its operands and result bitcast to the
builtin's per-lane types."""
from __future__ import annotations

from llvmlite import ir

from ...dialects import xegpu
from ...dialects.types import type_name
from ...targets.target import MMA_INPUT_ALIASES
from ..llvm_types import llvm_type
from . import EMITTERS


@EMITTERS.register(xegpu.DpasOp)
def emit_dpas(gen, op: xegpu.DpasOp) -> None:
    a_t, b_t, r_t = op.lhs.type, op.rhs.type, op.result.type
    m = r_t.get_shape()[0]
    fn = gen.lib.dpas(_mma_input(a_t.element_type), _mma_input(b_t.element_type),
                      type_name(r_t.element_type), m)
    fty = fn.function_type
    a = _cast_bits(gen.b, gen.v(op.lhs), fty.args[0])
    bb = _cast_bits(gen.b, gen.v(op.rhs), fty.args[1])
    acc = gen.v(op.acc) if op.acc is not None else ir.Constant(fty.args[2], None)
    acc = _cast_bits(gen.b, acc, fty.args[2])
    res = gen.b.call(fn, [a, bb, acc])
    gen.values[op.result] = _cast_bits(gen.b, res, llvm_type(r_t))


def _mma_input(t) -> str:
    """The DPAS input name of element type ``t`` (f32 operands are tf32)."""
    name = type_name(t)
    return MMA_INPUT_ALIASES.get(name, name)


def _cast_bits(b: ir.IRBuilder, value: ir.Value, to: ir.Type) -> ir.Value:
    return value if value.type == to else b.bitcast(value, to)
