"""Codegen of non-splat constant vectors (lowering/rewrites/constants.py made their SIMT form).

* A constant every lane holds whole (a replicated column, or a block the same in every
  lane) is an LLVM vector constant.
* A lane table ``vector<sg x ...>`` read by ``vector.extract %table[%lane]`` is a
  module-scope ``addrspace(2)`` constant array (SPIR-V ``UniformConstant``, OpenCL
  ``__constant``), lane-major; each lane loads its fragment's elements from row ``lane``.
  i1 tables are stored as bytes.  An integer table affine in the lane and the fragment
  position (``c + a*lane + b*k``: every ``arange``) is computed instead of loaded.
"""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import IndexType, IntegerType

from ...errors import LoweringError
from ..llvm_types import llvm_scalar, llvm_type
from .vector_ops import _pack

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
CONSTANT_ADDRSPACE = 2


class LaneTable:
    """A lane-major constant array: ``row`` elements per lane, of LLVM type ``elem``."""

    def __init__(self, ptr, array: ir.ArrayType | None, row: int, elem: ir.Type, stored: ir.Type,
                 affine: tuple[int, int, int] | None = None):
        self.ptr, self.array, self.row, self.elem, self.stored = ptr, array, row, elem, stored
        self.affine = affine  # (c, a, b): element k of lane l is c + a*l + b*k


def _affine(flat: list, lanes: int, row: int) -> tuple[int, int, int] | None:
    """``(c, a, b)`` with ``flat[l*row + k] == c + a*l + b*k``, else None."""
    c = int(flat[0])
    a = int(flat[row]) - c if lanes > 1 else 0
    b = int(flat[1]) - c if row > 1 else 0
    ok = all(int(flat[l * row + k]) == c + a * l + b * k for l in range(lanes) for k in range(row))
    return (c, a, b) if ok else None


def is_lane_table(op: arith.ConstantOp) -> bool:
    uses = list(op.result.uses)
    return bool(uses) and all(isinstance(u.operation, vector.ExtractOp) and len(u.operation.dynamic_position) == 1
                              for u in uses)


def constant(gen, op: arith.ConstantOp, scalar_const) -> None:
    """A non-splat ``arith.constant``; ``scalar_const(llvm_type, xdsl_type, value)``."""
    t = op.result.type
    flat = list(op.value.get_values())
    if is_lane_table(op):
        gen.values[op.result] = _table(gen, t, flat, llvm_scalar(t.element_type), scalar_const)
        return
    lt = llvm_type(t)
    if not isinstance(lt, ir.VectorType) or lt.count != len(flat):
        raise LoweringError(f"codegen: a constant {t} does not fit one lane's registers", op)
    gen.values[op.result] = ir.Constant(lt, [scalar_const(lt.element, t.element_type, v) for v in flat])


def _table(gen, t, flat: list, elem: ir.Type, scalar_const) -> LaneTable:
    lanes = t.get_shape()[0]
    row = len(flat) // lanes
    if (isinstance(t.element_type, IntegerType) and t.element_type.width.data > 1) or isinstance(t.element_type, IndexType):
        affine = _affine(flat, lanes, row)
        if affine is not None:
            return LaneTable(None, None, row, elem, elem, affine)
    stored = I8 if isinstance(t.element_type, IntegerType) and t.element_type.width.data == 1 else elem
    array = ir.ArrayType(stored, len(flat))
    var = ir.GlobalVariable(gen.llmod, array, gen.llmod.get_unique_name("lane_table"), addrspace=CONSTANT_ADDRSPACE)
    var.linkage = "internal"
    var.global_constant = True
    var.initializer = ir.Constant(array, [scalar_const(stored, t.element_type, v) for v in flat])
    var.align = 16
    return LaneTable(var, array, row, elem, stored)



def lane_read(gen, op: vector.ExtractOp) -> None:
    """A dynamic ``vector.extract`` (its emitter is in :mod:`.scattered_ops`): this lane's
    fragment, elements ``lane*row .. lane*row + row - 1`` of the table."""
    table = gen.v(op.vector)
    if not isinstance(table, LaneTable):
        raise LoweringError("codegen: vector.extract at a dynamic position is lowered for constant lane tables only",
                            op)
    b = gen.b
    lane = gen.v(op.dynamic_position[0])
    parts = _computed(b, table, lane) if table.affine else _loaded(b, table, lane)
    lt = llvm_type(op.result.type)
    if table.row == 1:
        gen.values[op.result] = parts[0]
        return
    vt = ir.VectorType(table.elem, table.row)
    packed = _pack(b, parts, vt)
    gen.values[op.result] = packed if vt == lt else b.bitcast(packed, lt)


def _computed(b: ir.IRBuilder, table: LaneTable, lane: ir.Value) -> list[ir.Value]:
    c, a, step = table.affine
    lane = b.trunc(lane, table.elem) if table.elem.width < 64 else lane
    first = b.add(b.mul(lane, ir.Constant(table.elem, a)), ir.Constant(table.elem, c))
    return [b.add(first, ir.Constant(table.elem, step * k)) if k else first for k in range(table.row)]


def _loaded(b: ir.IRBuilder, table: LaneTable, lane: ir.Value) -> list[ir.Value]:
    start = b.mul(lane, ir.Constant(I64, table.row))
    parts = []
    for k in range(table.row):
        ptr = b.gep(table.ptr, [ir.Constant(I64, 0), b.add(start, ir.Constant(I64, k))], inbounds=True,
                    source_etype=table.array)
        x = b.load(ptr, typ=table.stored)
        parts.append(b.trunc(x, table.elem) if table.stored != table.elem else x)
    return parts
