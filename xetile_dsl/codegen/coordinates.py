"""How wide a kernel's tile coordinates are: 32 bits unless they can exceed 32 bits.

A 2-D tensor descriptor is a surface (base, width, height, pitch) and a block position
(x, y); the 2D block messages take all of them as 32-bit values (the Xe codegen reference
§3), and so do the per-lane fallbacks, which keeps a GEMM's K loop in 32-bit adds.
Array extents fit: the launcher refuses arrays addressed through tiles whose rows, row
bytes or pitch exceed :data:`~xetile_dsl.runtime.abi.MAX_TILED_EXTENT`.

Coordinates are index values (64-bit).  They stay on the 32-bit path when they are
computed only from i32 arguments, program/subgroup ids, constants that fit i32 and array
extents.  A kernel where a tile offset depends on anything 64-bit (an i64 argument —
the launcher passes an int as i64 when it does not fit i32 —, i64 data, a constant
outside i32) keeps every descriptor's true position in 64 bits as well, and each message
gets it *saturated* to ``±MAX_TILED_EXTENT`` (in bytes for x): a saturated position lies
outside every surface the launcher accepts, and no 32-bit sum of it and a block offset
overflows, so the block reads padding and writes nothing — exactly what the true
position gives.  Nothing is ever silently wrapped.
"""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, VectorType
from xdsl.ir import Operation, SSAValue

from ..dialects import xegpu
from ..dialects.walk import ops_in
from ..runtime.abi import MAX_TILED_EXTENT

I32, I64 = ir.IntType(32), ir.IntType(64)
_I32_RANGE = range(-(2**31), 2**31)


def has_wide_offsets(fn: func.FuncOp) -> bool:
    """Whether some block descriptor offset of ``fn`` may depend on a 64-bit value."""
    wide = _wide_values(fn)
    return any(v in wide for op in ops_in(fn)
               if isinstance(op, (xegpu.CreateNdTdescOp, xegpu.UpdateNdOffsetOp)) for v in op.offsets)


def _wide_values(fn: func.FuncOp) -> set[SSAValue]:
    """Values that may hold more than 32 bits: 64-bit integers, constants outside i32 and
    everything computed from them (through loops and branches: to a fixed point)."""
    wide: set[SSAValue] = {a for a in fn.body.block.args if _is_i64(a.type)}
    ops = ops_in(fn)
    changed = True
    while changed:
        changed = False
        for op in ops:
            if _is_wide_source(op) or any(v in wide for v in op.operands):
                for v in _reached(op):
                    if v not in wide:
                        wide.add(v)
                        changed = True
    return wide


def _is_i64(t) -> bool:
    elem = t.element_type if isinstance(t, VectorType) else t
    return isinstance(elem, IntegerType) and elem.width.data == 64


def _is_wide_source(op: Operation) -> bool:
    if any(_is_i64(r.type) for r in op.results):
        return True
    return (isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr)
            and op.value.value.data not in _I32_RANGE)


def _reached(op: Operation) -> list[SSAValue]:
    """The values an op's operands flow into: its results and its regions' block
    arguments; a terminator's operands flow into its parent's results and arguments."""
    out = list(op.results) + [a for r in op.regions for blk in r.blocks for a in blk.args]
    if isinstance(op, (scf.YieldOp, scf.ConditionOp)) and op.parent_op() is not None:
        out += _reached(op.parent_op())
    return out


def saturate(b: ir.IRBuilder, value: ir.Value, unit_bytes: int = 1) -> ir.Value:
    """``value`` (i64) clamped to ``±MAX_TILED_EXTENT // unit_bytes``, as i32."""
    bound = MAX_TILED_EXTENT // unit_bytes
    if isinstance(value, ir.Constant) and -bound <= value.constant <= bound:
        return ir.Constant(I32, value.constant)
    hi, lo = ir.Constant(I64, bound), ir.Constant(I64, -bound)
    value = b.select(b.icmp_signed(">", value, hi), hi, value)
    value = b.select(b.icmp_signed("<", value, lo), lo, value)
    return b.trunc(value, I32)
