"""Codegen of per-lane scattered XeGPU ops: create_tdesc, update_offset, load, store,
atomic_rmw (one element per lane, the SIMT form of ``lowering/rewrites/scattered.py``).

A scattered descriptor is this lane's element pointer (``base + offset * elem_bytes``), a
plain LLVM value, so it flows through loops like any other.  A masked-off lane does not
touch memory: loads branch around the access (and read 0), stores and atomics skip it.
Each lane's atomic, with the op's memory order, is :func:`.atomic_messages.atomic_update`.
"""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import vector
from xdsl.dialects.builtin import VectorType

from ...dialects import xegpu, xetile
from ...errors import LoweringError
from ...dialects.types import bit_width
from ..llvm_types import SPIRV_VECTOR_SIZES, llvm_type
from . import EMITTERS, atomic_messages, constant_vectors
from .atomic_messages import guarded as _guarded

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)

@EMITTERS.register(vector.ExtractOp)
def emit_extract(gen, op: vector.ExtractOp) -> None:
    """A lane table's row (a dynamic position: :func:`.constant_vectors.lane_read`), the
    scalar of a one-element tile, or one row of a ``[R, 1]`` fragment."""
    if len(op.dynamic_position) == 1:
        constant_vectors.lane_read(gen, op)
    elif not isinstance(op.result.type, VectorType):
        gen.values[op.result] = _scalar_of_one(gen, op)
    else:
        n, pos = _count(op.vector.type), [int(p) for p in op.static_position.get_values()]
        if _count(op.result.type) != 1 or len(pos) != 1 or (n > 1 and list(op.vector.type.get_shape()) != [n, 1]):
            raise LoweringError(f"codegen: vector.extract {pos} of a {op.vector.type} lane fragment", op)
        # [1, 1] -> [1]: the same element; [R, 1] (a C block, one element per row) -> row pos
        gen.values[op.result] = gen.v(op.vector) if n == 1 else gen.b.extract_element(
            gen.v(op.vector), ir.Constant(ir.IntType(32), pos[0]))


@EMITTERS.register(vector.InsertOp)
def emit_insert(gen, op: vector.InsertOp) -> None:
    n, pos = _count(op.dest.type), [int(p) for p in op.static_position.get_values()]
    if _count(op.source.type) != 1 or len(pos) != 1 or (n > 1 and list(op.dest.type.get_shape()) != [n, 1]):
        raise LoweringError(f"codegen: vector.insert {pos} into a {op.dest.type} lane fragment", op)
    # the inverse of extract: one element per lane becomes row pos of a C block fragment
    gen.values[op.result] = gen.v(op.source) if n == 1 else gen.b.insert_element(
        gen.v(op.dest), gen.v(op.source), ir.Constant(ir.IntType(32), pos[0]))


@EMITTERS.register(xegpu.CreateTdescOp, xegpu.UpdateOffsetOp)
def emit_create_or_update_tdesc(gen, op) -> None:
    """This lane's element pointer: the base (an array, or the descriptor moved) plus its offset."""
    b = gen.b
    t = op.tensor_desc.type
    _check_one_per_lane(gen, t, op)
    base = gen.v(op.source) if isinstance(op, xegpu.CreateTdescOp) else gen.v(op.tensor_desc)
    if isinstance(base.type, ir.IntType):   # an i64 address (an array table's entry): a global pointer
        base = b.inttoptr(base, ir.PointerType(addrspace=1))
    offset = b.mul(gen.v(op.offsets), ir.Constant(I64, bit_width(t.element_type) // 8))
    result = op.tensor_desc if isinstance(op, xegpu.CreateTdescOp) else op.result
    gen.values[result] = b.gep(base, [offset], source_etype=I8)


@EMITTERS.register(xegpu.LoadGatherOp)
def emit_load_gather(gen, op: xegpu.LoadGatherOp) -> None:
    b = gen.b
    ty, align = _lane_access(gen, op.value.type, op.tensor_desc.type, op)
    gen.values[op.value] = _guarded(b, gen.v(op.mask),
                                    lambda: b.load(gen.v(op.tensor_desc), typ=ty, align=align), ty)


@EMITTERS.register(xegpu.StoreScatterOp)
def emit_store_scatter(gen, op: xegpu.StoreScatterOp) -> None:
    b = gen.b
    _, align = _lane_access(gen, op.value.type, op.tensor_desc.type, op)
    with b.if_then(gen.v(op.mask)):
        b.store(gen.v(op.value), gen.v(op.tensor_desc), align=align)


@EMITTERS.register(xegpu.AtomicRMWOp)
def emit_atomic_rmw(gen, op: xegpu.AtomicRMWOp) -> None:
    if op.tensor_desc.type.scatter_attr.chunk != 1:
        raise LoweringError(f"codegen: atomic_rmw through {op.tensor_desc.type} is not supported (an atomic "
                            "message updates one element per lane); use a descriptor without chunk_size", op)
    ty = _elem_type(gen, op.value.type)
    ptr, value, kind = gen.v(op.tensor_desc), gen.v(op.value), op.kind.data
    if kind == "cmpxchg":  # OpAtomicCompareExchange per lane
        cmp = gen.v(op.cmp)
        gen.values[op.result] = _guarded(gen.b, gen.v(op.mask), lambda: _cas(gen, ptr, cmp, value, op), ty)
        return
    gen.values[op.result] = _guarded(gen.b, gen.v(op.mask), lambda: _atomic(gen, kind, ptr, value, op), ty)


def _scalar_of_one(gen, op: vector.ExtractOp):
    """The scalar of a one-element tile (a ``[1, 1]`` reduction result, replicated in every
    lane, e.g. an ``if`` condition): its element, read from lane 0 so that IGC sees a
    subgroup-uniform value (a uniform branch: ``jmpi``, where the butterfly's own result
    gave a per-lane ``goto`` and copies of the registers live across it).  Every lane
    runs the extract: runtime scalars, and so branches, are uniform in this language."""
    if _count(op.vector.type) != 1:
        raise LoweringError(f"codegen: a scalar from a {op.vector.type} lane fragment (one element only)", op)
    b, value = gen.b, gen.v(op.vector)
    if isinstance(value.type, ir.VectorType):
        value = b.extract_element(value, ir.Constant(I32, 0))
    bits = value.type.width if isinstance(value.type, ir.IntType) else 32 if isinstance(value.type, ir.FloatType) \
        else None
    if bits is None or bits > 32:
        return value
    word = b.bitcast(value, I32) if bits == 32 and not isinstance(value.type, ir.IntType) else \
        value if bits == 32 else b.zext(value, I32)
    word = gen.lib.shuffle_i32(b, word, ir.Constant(I32, 0))
    return word if value.type == I32 else b.bitcast(word, value.type) if bits == 32 else b.trunc(word, value.type)


def _count(t) -> int:
    n = 1
    for d in t.get_shape():
        n *= d
    return n


def _elem_type(gen, t):
    return llvm_type(t)


def _check_one_per_lane(gen, t, op) -> None:
    if t.get_shape()[0] != gen.target.subgroup_size:
        raise LoweringError(f"codegen supports scattered descriptors with one offset per lane "
                            f"({gen.target.subgroup_size} lanes) only, got {t}", op)


def _lane_access(gen, value_type, tdesc_type, op) -> tuple[ir.Type, int]:
    """(LLVM type, alignment) of this lane's access: its ``chunk_size`` consecutive
    elements are one vector load/store at the lane's pointer (IGC makes it one LSC message
    with a vector size), aligned to the element, or to 4 bytes for a chunk of 8/16-bit
    elements (whose lane offsets must then be 32-bit aligned, as the RFC's d32 messages
    need).  A lane fragment of the wrong size or one SPIR-V cannot hold as a vector is
    rejected."""
    chunk = tdesc_type.scatter_attr.chunk
    if _count(value_type) != chunk:
        raise LoweringError(f"codegen: a lane of {tdesc_type} accesses {chunk} element(s), but the value is "
                            f"{value_type}", op)
    ty = llvm_type(value_type)
    if isinstance(ty, ir.VectorType) and ty.count not in SPIRV_VECTOR_SIZES:
        raise LoweringError(f"codegen: chunk_size = {chunk} of {value_type.element_type} is {ty} per lane, not a "
                            f"SPIR-V vector; use a chunk_size of {', '.join(map(str, SPIRV_VECTOR_SIZES))} "
                            "elements (8/16-bit data: up to 16 32-bit words)", op)
    elem_bytes = bit_width(tdesc_type.element_type) // 8
    # a chunk of 8/16-bit data is whole 32-bit units (the descriptor verifier), read as d32 words
    return ty, (elem_bytes if chunk == 1 else max(elem_bytes, 4))


def _atomic(gen, kind: str, ptr: ir.Value, value: ir.Value, op) -> ir.Value:
    return atomic_messages.atomic_update(gen, kind, ptr, value, op.value.type.element_type, xetile.order_of(op), op)


def _cas(gen, ptr: ir.Value, cmp: ir.Value, value: ir.Value, op) -> ir.Value:
    return atomic_messages.compare_exchange(gen, ptr, cmp, value, xetile.order_of(op))
