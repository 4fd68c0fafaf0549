"""Codegen of the scalar ops (memref metadata and SLM buffers, gpu ids and barriers,
scalar arith) for :class:`~.simt_to_llvm._KernelGen` (``gen``), which owns the LLVM
builder and the value map and asks :meth:`ScalarOps.handler` for an op's emitter."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import BFloat16Type, DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr

from ..errors import LoweringError
from . import constants, slm, vector_ops
from .llvm_types import llvm_scalar, llvm_type

I32, I64 = ir.IntType(32), ir.IntType(64)


class ScalarOps:
    """memref/gpu/arith emitters (``_<dialect>_<OpClass>``) over ``gen``'s builder and values."""

    #: arith op class name -> IRBuilder method of its scalar (one-element) form
    BINARY = {
        "AddiOp": "add",
        "SubiOp": "sub",
        "MuliOp": "mul",
        "AndIOp": "and_",
        "OrIOp": "or_",
        "XOrIOp": "xor",
        "ShLIOp": "shl",
        "ShRSIOp": "ashr",
        "AddfOp": "fadd",
        "SubfOp": "fsub",
        "MulfOp": "fmul",
        "DivfOp": "fdiv",
    }
    #: the divisions whose operand may be the subgroup id (see :meth:`_subgroup_coord`)
    SUBGROUP_COORD = {"RemSIOp": "srem", "DivSIOp": "sdiv"}

    def __init__(self, gen):
        self.gen = gen

    def handler(self, op):
        """The emitter of ``op`` here, or None."""
        name = type(op).__name__
        if op.dialect_name() == "arith" and name in self.BINARY:
            return lambda o: self._binary(o, self.BINARY[name])
        if op.dialect_name() == "arith" and name in self.SUBGROUP_COORD:
            return lambda o: self._subgroup_coord(o, self.SUBGROUP_COORD[name])
        return getattr(self, f"_{op.dialect_name()}_{name}", None)

    def _memref_ExtractStridedMetaDataOp(self, op) -> None:
        ptr, sizes, strides = self.gen.memrefs[op.source]
        self.gen.values[op.base_buffer] = ptr
        self.gen.values[op.offset] = ir.Constant(I64, 0)
        for r, s in zip(op.sizes, sizes):
            self.gen.values[r] = s
        for r, s in zip(op.strides, strides):
            self.gen.values[r] = s

    def _memref_AllocOp(self, op) -> None:
        slm.alloc(self.gen, op)

    def _memref_ReinterpretCastOp(self, op) -> None:
        slm.reinterpret(self.gen, op)

    def _gpu_BarrierOp(self, op) -> None:
        slm.barrier(self.gen)

    def _gpu_BlockIdOp(self, op) -> None:
        self.gen.values[op.result] = self._workitem_fn("_Z12get_group_idj", op.dimension)

    def _gpu_SubgroupIdOp(self, op) -> None:
        fn = self.gen.lib.declare("_Z16get_sub_group_idv", ir.FunctionType(I32, []))
        self.gen.values[op.result] = self.gen.b.zext(self.gen.b.call(fn, []), I64)

    def _gpu_NumSubgroupsOp(self, op) -> None:
        fn = self.gen.lib.declare("_Z18get_num_sub_groupsv", ir.FunctionType(I32, []))
        self.gen.values[op.result] = self.gen.b.zext(self.gen.b.call(fn, []), I64)

    def _gpu_LaneIdOp(self, op) -> None:
        self.gen.values[op.result] = self.gen.b.zext(self.gen.lib.lane_id(self.gen.b), I64)

    def _gpu_GridDimOp(self, op) -> None:
        self.gen.values[op.result] = self._workitem_fn("_Z14get_num_groupsj", op.dimension)

    def _workitem_fn(self, name: str, dim_attr) -> ir.Value:
        fn = self.gen.lib.declare(name, ir.FunctionType(I64, [I32]))
        dim = "xyz".index(str(dim_attr.data.value if hasattr(dim_attr.data, "value") else dim_attr.data))
        return self.gen.b.call(fn, [ir.Constant(I32, dim)])

    # --- arith -------------------------------------------------------------------------------
    def _arith_ConstantOp(self, op) -> None:
        t, attr = op.result.type, op.value
        lt = llvm_type(t)
        if isinstance(attr, DenseIntOrFPElementsAttr) and len(set(attr.get_values())) > 1:
            constants.constant(self.gen, op, _scalar_const)
        elif isinstance(attr, DenseIntOrFPElementsAttr):
            splat = attr.get_values()[0]
            if isinstance(lt, ir.VectorType):
                element = _scalar_const(lt.element, t.element_type, splat)
                self.gen.values[op.result] = ir.Constant(lt, [element] * lt.count)
            else:
                self.gen.values[op.result] = _scalar_const(lt, t.element_type, splat)
        elif isinstance(attr, (IntegerAttr, FloatAttr)):
            self.gen.values[op.result] = _scalar_const(lt, t, attr.value.data)
        else:
            raise LoweringError(f"codegen: unsupported constant {attr}", op)

    def _binary(self, op, method: str) -> None:
        self.gen.values[op.result] = getattr(self.gen.b, method)(self.gen.v(op.lhs), self.gen.v(op.rhs))

    def _subgroup_coord(self, op, method: str) -> None:
        """``srem``/``sdiv``; of the subgroup id (a subgroup's coordinate in a wg_map
        layout), the result is frozen: LLVM 22's loop strength reduction otherwise turns
        ``trunc(iv + (id srem 4) * 16)`` in a loop into an i2 truncation that the SPIR-V
        backend widens to i8 without its mask (``(id & 255) << 4``), so subgroups of
        later layout rows skipped iterations of an ``init_tile`` inside a loop. ``freeze``
        of a defined value is that value; it hides the remainder's range from SCEV."""
        self.gen.values[op.result] = vector_ops.int_divide(self.gen.b, method, self.gen.v(op.lhs), self.gen.v(op.rhs))
        if _of_subgroup_id(op):
            frozen = ir.instructions.Instruction(self.gen.b.block, self.gen.values[op.result].type, "freeze",
                                                 [self.gen.values[op.result]])
            self.gen.b._insert(frozen)
            self.gen.values[op.result] = frozen

    def _arith_FloorDivSIOp(self, op) -> None:
        """Python's ``//`` (vector_ops.floor_divide; 0 by zero)."""
        self.gen.values[op.result] = vector_ops.floor_divide(self.gen.b, self.gen.v(op.lhs), self.gen.v(op.rhs))

    def _arith_TruncIOp(self, op) -> None:
        self.gen.values[op.result] = self.gen.b.trunc(self.gen.v(op.input), llvm_scalar(op.result.type))

    def _arith_ExtSIOp(self, op) -> None:
        self.gen.values[op.result] = self.gen.b.sext(self.gen.v(op.input), llvm_scalar(op.result.type))

    def _arith_IndexCastOp(self, op) -> None:
        src, dst = self.gen.v(op.input), llvm_scalar(op.result.type)
        if src.type.width == dst.width:
            self.gen.values[op.result] = src
        elif src.type.width < dst.width:
            self.gen.values[op.result] = self.gen.b.sext(src, dst)
        else:
            self.gen.values[op.result] = self.gen.b.trunc(src, dst)


def _scalar_const(lt: ir.Type, t, py) -> ir.Constant:
    if isinstance(t, BFloat16Type):
        bits = int(np.array([py], dtype=np.float32).view(np.uint32)[0]) >> 16
        return ir.Constant(lt, bits)
    if isinstance(lt, (ir.HalfType, ir.FloatType, ir.DoubleType)):
        return ir.Constant(lt, float(py))
    return ir.Constant(lt, int(py))


def _of_subgroup_id(op) -> bool:
    """Whether a signed division/remainder divides the subgroup id by a constant."""
    return isinstance(op.lhs.owner, gpu.SubgroupIdOp) and isinstance(op.rhs.owner, arith.ConstantOp)
