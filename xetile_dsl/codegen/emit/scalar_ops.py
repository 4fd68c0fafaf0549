"""Codegen of the scalar ops: memref metadata and SLM buffers, gpu ids and barriers, and
the scalar form of arith (constants, binary ops, divisions, casts).  An arith op of
this module on vectors (a lane fragment) is element-wise: :func:`scalar_form` hands it
to :mod:`.vector_ops`, as it does every other arith op (compares, selects, min/max, the
other casts) in both forms.

An arith op class is registered as xDSL defines it and as the compiler's context parses
it (``dialects/_arith_vector.py`` redefines the casts, compares and select to accept
vectors; passes build either)."""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from xdsl.dialects import arith, gpu, memref
from xdsl.dialects.builtin import BFloat16Type, DenseIntOrFPElementsAttr, FloatAttr, IntegerAttr, VectorType, i1

from ...dialects import _arith_vector as av
from ...dialects.types import bit_width
from ...errors import LoweringError
from ..llvm_types import llvm_scalar, llvm_type
from . import EMITTERS, array_slices, constant_vectors, slm, vector_ops

I32, I64 = ir.IntType(32), ir.IntType(64)

#: arith op class -> IRBuilder method of its scalar (one-element) form
BINARY = {
    arith.AddiOp: "add",
    arith.SubiOp: "sub",
    arith.MuliOp: "mul",
    arith.AndIOp: "and_",
    arith.OrIOp: "or_",
    arith.XOrIOp: "xor",
    arith.ShLIOp: "shl",
    arith.ShRSIOp: "ashr",
    arith.AddfOp: "fadd",
    arith.SubfOp: "fsub",
    arith.MulfOp: "fmul",
    arith.DivfOp: "fdiv",
    av.RemFOp: "frem",
}
#: the divisions whose operand may be the subgroup id (see :func:`emit_subgroup_coord`)
SUBGROUP_COORD = {arith.RemSIOp: "srem", arith.DivSIOp: "sdiv"}


def scalar_form(*op_classes):
    """Register the decorated function as the emitter of the scalar form of arith
    ``op_classes``; the same op on vectors (any vector result) goes to the element-wise
    emitter (:func:`.vector_ops.emit`)."""
    def decorate(scalar):
        def emit(gen, op) -> None:
            if any(isinstance(r.type, VectorType) for r in op.results):
                vector_ops.emit(gen, op)
            else:
                scalar(gen, op)
        emit.__qualname__ = emit.__name__ = scalar.__name__
        EMITTERS.register(*op_classes)(emit)
        return scalar
    return decorate


@EMITTERS.register(memref.ExtractStridedMetaDataOp)
def emit_extract_strided_metadata(gen, op) -> None:
    ptr, sizes, strides = gen.memrefs[op.source]
    gen.values[op.base_buffer] = ptr
    gen.values[op.offset] = ir.Constant(I64, 0)
    for r, s in zip(op.sizes, sizes):
        gen.values[r] = s
    for r, s in zip(op.strides, strides):
        gen.values[r] = s


@EMITTERS.register(memref.LoadOp)
def emit_element_load(gen, op: memref.LoadOp) -> None:
    """One element of an array (``x[i, j]`` in a kernel; the frontend guards the bounds).
    Every lane computes the same address: a uniform scalar load."""
    ptr, ty, align = _element_pointer(gen, op.memref, op.indices, op.res.type, op)
    value = gen.b.load(ptr, typ=ty, align=align)
    gen.values[op.res] = gen.b.icmp_unsigned("!=", value, ir.Constant(ty, 0)) if op.res.type == i1 else value


@EMITTERS.register(memref.StoreOp)
def emit_element_store(gen, op: memref.StoreOp) -> None:
    """``x[i, j] = v``: one element written (the same address and value in every lane)."""
    ptr, ty, align = _element_pointer(gen, op.memref, op.indices, op.value.type, op)
    value = gen.v(op.value)
    gen.b.store(gen.b.zext(value, ty) if op.value.type == i1 else value, ptr, align=align)


def _element_pointer(gen, array, indices, elem, op):
    """The element's pointer, its LLVM type in memory (a bool is a byte) and alignment."""
    if array not in gen.memrefs:
        raise LoweringError("codegen: an element access needs an array parameter or an SLM buffer", op)
    base, _, strides = gen.memrefs[array]
    ty = ir.IntType(8) if elem == i1 else llvm_scalar(elem)
    offset = None
    for index, stride in zip(indices, strides, strict=True):
        term = gen.b.mul(gen.v(index), stride)
        offset = term if offset is None else gen.b.add(offset, term)
    return gen.b.gep(base, [offset], source_etype=ty), ty, max(1, bit_width(elem) // 8)


@EMITTERS.register(memref.AllocOp)
def emit_alloc(gen, op) -> None:
    slm.alloc(gen, op)


@EMITTERS.register(memref.ReinterpretCastOp)
def emit_reinterpret_cast(gen, op) -> None:
    if array_slices.is_dynamic_view(op):    # the 2-D slice of an N-D array
        array_slices.reinterpret(gen, op)
    else:
        slm.reinterpret(gen, op)


@EMITTERS.register(gpu.BarrierOp)
def emit_barrier(gen, op) -> None:
    slm.barrier(gen)


@EMITTERS.register(gpu.BlockIdOp)
def emit_block_id(gen, op) -> None:
    gen.values[op.result] = _workitem_fn(gen, "_Z12get_group_idj", op.dimension)


@EMITTERS.register(gpu.SubgroupIdOp)
def emit_subgroup_id(gen, op) -> None:
    fn = gen.lib.declare("_Z16get_sub_group_idv", ir.FunctionType(I32, []))
    gen.values[op.result] = gen.b.zext(gen.b.call(fn, []), I64)


@EMITTERS.register(gpu.NumSubgroupsOp)
def emit_num_subgroups(gen, op) -> None:
    fn = gen.lib.declare("_Z18get_num_sub_groupsv", ir.FunctionType(I32, []))
    gen.values[op.result] = gen.b.zext(gen.b.call(fn, []), I64)


@EMITTERS.register(gpu.LaneIdOp)
def emit_lane_id(gen, op) -> None:
    gen.values[op.result] = gen.b.zext(gen.lib.lane_id(gen.b), I64)


@EMITTERS.register(gpu.GridDimOp)
def emit_grid_dim(gen, op) -> None:
    gen.values[op.result] = _workitem_fn(gen, "_Z14get_num_groupsj", op.dimension)


def _workitem_fn(gen, name: str, dim_attr) -> ir.Value:
    fn = gen.lib.declare(name, ir.FunctionType(I64, [I32]))
    dim = "xyz".index(str(dim_attr.data.value if hasattr(dim_attr.data, "value") else dim_attr.data))
    return gen.b.call(fn, [ir.Constant(I32, dim)])


# --- arith -------------------------------------------------------------------------------
@EMITTERS.register(arith.ConstantOp)
def emit_constant(gen, op) -> None:
    t, attr = op.result.type, op.value
    lt = llvm_type(t)
    if isinstance(attr, DenseIntOrFPElementsAttr) and len(set(attr.get_values())) > 1:
        constant_vectors.constant(gen, op, _scalar_const)
    elif isinstance(attr, DenseIntOrFPElementsAttr):
        splat = attr.get_values()[0]
        if isinstance(lt, ir.VectorType):
            element = _scalar_const(lt.element, t.element_type, splat)
            gen.values[op.result] = ir.Constant(lt, [element] * lt.count)
        else:
            gen.values[op.result] = _scalar_const(lt, t.element_type, splat)
    elif isinstance(attr, (IntegerAttr, FloatAttr)):
        gen.values[op.result] = _scalar_const(lt, t, attr.value.data)
    else:
        raise LoweringError(f"codegen: unsupported constant {attr}", op)


@scalar_form(*BINARY)
def emit_binary(gen, op) -> None:
    if isinstance(op.result.type, BFloat16Type):  # i16 bits: computed in f32 as on vectors
        vector_ops.emit(gen, op)
        return
    gen.values[op.result] = getattr(gen.b, BINARY[type(op)])(gen.v(op.lhs), gen.v(op.rhs))


@scalar_form(*SUBGROUP_COORD)
def emit_subgroup_coord(gen, op) -> None:
    """``srem``/``sdiv``; of the subgroup id (a subgroup's coordinate in a wg_map
    layout), the result is frozen: LLVM 22's loop strength reduction otherwise turns
    ``trunc(iv + (id srem 4) * 16)`` in a loop into an i2 truncation that the SPIR-V
    backend widens to i8 without its mask (``(id & 255) << 4``), so subgroups of
    later layout rows skipped iterations of an ``init_tile`` inside a loop. ``freeze``
    of a defined value is that value; it hides the remainder's range from SCEV."""
    method = SUBGROUP_COORD[type(op)]
    gen.values[op.result] = vector_ops.int_divide(gen.b, method, gen.v(op.lhs), gen.v(op.rhs))
    if _of_subgroup_id(op):
        frozen = ir.instructions.Instruction(gen.b.block, gen.values[op.result].type, "freeze",
                                             [gen.values[op.result]])
        gen.b._insert(frozen)
        gen.values[op.result] = frozen


@scalar_form(arith.FloorDivSIOp)
def emit_floordivsi(gen, op) -> None:
    """Python's ``//`` (vector_ops.floor_divide; 0 by zero)."""
    gen.values[op.result] = vector_ops.floor_divide(gen.b, gen.v(op.lhs), gen.v(op.rhs))


@scalar_form(arith.TruncIOp, av.TruncIOp)
def emit_trunci(gen, op) -> None:
    gen.values[op.result] = gen.b.trunc(gen.v(op.input), llvm_scalar(op.result.type))


@scalar_form(arith.ExtSIOp, av.ExtSIOp)
def emit_extsi(gen, op) -> None:
    gen.values[op.result] = gen.b.sext(gen.v(op.input), llvm_scalar(op.result.type))


@scalar_form(arith.IndexCastOp, av.IndexCastOp)
def emit_index_cast(gen, op) -> None:
    src, dst = gen.v(op.input), llvm_scalar(op.result.type)
    if src.type.width == dst.width:
        gen.values[op.result] = src
    elif src.type.width < dst.width:
        gen.values[op.result] = gen.b.sext(src, dst)
    else:
        gen.values[op.result] = gen.b.trunc(src, dst)


#: every other arith op (compares, selects, min/max, casts, ...): element-wise, and on a
#: scalar too (a one-element fragment is a scalar, so the element-wise emitter lowers it
#: unchanged)
EMITTERS.register(*(cls for cls in (*arith.Arith.operations, *av.ARITH.operations)
                    if cls not in EMITTERS))(vector_ops.emit)


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
