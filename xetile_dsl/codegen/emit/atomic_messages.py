"""Codegen of the atomics with their memory order: the SPIR-V atomic instructions each
``sem``/``scope`` becomes, the element atomics (``xetile.atomic_rmw_scalar``,
``xetile.atomic_cas_scalar``) and ``xetile.fence``; ``scattered_ops`` calls
:func:`atomic_update` for each lane of a tile atomic.

Every atomic is a call of a SPIR-V-friendly builtin (``__spirv_AtomicIAdd``,
``__spirv_AtomicCompareExchange``, ``__spirv_MemoryBarrier``...) with its scope and
memory-semantics operands as constants: LLVM's SPIR-V backend turns each into the one
instruction (``OpAtomicIAdd %p %scope %semantics %v``), keeping the storage-class bit
(CrossWorkgroupMemory) that its own ``atomicrmw`` ordering lowering leaves out, and
without which the order covers no memory.  ``acquire`` / ``release`` / ``acq_rel`` are
semantics 0x2 / 0x4 / 0x8 with CrossWorkgroupMemory (0x200; a fence also
WorkgroupMemory, 0x100); ``relaxed`` is 0.  Scopes: device 1, workgroup 2.

An f32 add is ``OpAtomicFAddEXT`` where the target has it (``Target.atomic_float_add``).
Other float kinds, multiplication, and 16-bit elements are a compare-exchange loop on the
32/64-bit word that holds the element (a 16-bit element: the aligned 32-bit word, the
other half kept); the loop's exchange carries the order.  An element atomic is done by
lane 0 of the program's one subgroup; every lane gets lane 0's old value.
"""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type

from ...dialects import xetile
from ...dialects.types import bit_width
from ...errors import LoweringError
from ..llvm_types import llvm_scalar
from . import EMITTERS
from .vector_ops import _Emitter  # the f32 <-> f16/bf16 conversions

I8, I16, I32, I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)

#: SPIR-V memory semantics of each order (without the storage-class bits)
_SEMANTICS = {"relaxed": 0x0, "acquire": 0x2, "release": 0x4, "acq_rel": 0x8}
_GLOBAL_MEMORY, _WORKGROUP_MEMORY = 0x200, 0x100
#: SPIR-V scopes
_SCOPES = {"device": 1, "workgroup": 2}
#: integer kinds with one SPIR-V instruction (OpAtomic<name>)
_INT_OPS = {"addi": "IAdd", "maxs": "SMax", "mins": "SMin", "maxu": "UMax", "minu": "UMin", "andi": "And",
            "ori": "Or", "xori": "Xor", "assign": "Exchange"}


def semantics(sem: str, storage: int = _GLOBAL_MEMORY) -> int:
    return _SEMANTICS[sem] | (storage if sem != "relaxed" else 0)


def _failure_sem(sem: str) -> str:
    """A compare-exchange's order when it fails: no release part (SPIR-V's rule)."""
    return {"release": "relaxed", "acq_rel": "acquire"}.get(sem, sem)


def _c(value: int) -> ir.Constant:
    return ir.Constant(I32, value)


def _spirv(gen, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """The SPIR-V-friendly builtin ``__spirv_<name>`` (Itanium-mangled on its argument types)."""
    code = {I32: "i", I64: "l", ir.FloatType(): "f"}
    full = f"__spirv_{name}"
    mangled = f"_Z{len(full)}{full}" + "".join("PU3AS1" + code[ret] if isinstance(t, ir.PointerType) else
                                                code.get(t, "i") for t in args)
    return gen.lib.declare(mangled, ir.FunctionType(ret, args))


def atomic_update(gen, kind: str, ptr: ir.Value, value: ir.Value, elem, order: tuple[str, str], op) -> ir.Value:
    """One atomic ``kind`` of ``value`` (LLVM type of the IR element type ``elem``) at
    ``ptr`` with ``order`` = (sem, scope); returns the old element."""
    sem, scope = order
    b = gen.b
    if isinstance(value.type, ir.IntType) and value.type.width in (32, 64) and kind in _INT_OPS:
        fn = _spirv(gen, f"Atomic{_INT_OPS[kind]}", value.type, [ptr.type, I32, I32, value.type])
        return b.call(fn, [ptr, _c(_SCOPES[scope]), _c(semantics(sem)), value])
    if kind == "addf" and isinstance(elem, Float32Type) and "f32" in gen.target.atomic_float_add:
        fn = _spirv(gen, "AtomicFAddEXT", value.type, [ptr.type, I32, I32, value.type])
        return b.call(fn, [ptr, _c(_SCOPES[scope]), _c(semantics(sem)), value])
    if isinstance(elem, (Float32Type, Float16Type, BFloat16Type)) or kind == "muli" or \
            (isinstance(value.type, ir.IntType) and value.type.width == 64):
        return _cas_loop(gen, kind, ptr, value, elem, order, op)
    raise LoweringError(f"codegen: atomic {kind} on {value.type} is not supported", op)


def compare_exchange(gen, ptr: ir.Value, cmp: ir.Value, value: ir.Value, order: tuple[str, str]) -> ir.Value:
    """``OpAtomicCompareExchange`` on a 32/64-bit int; returns the old value."""
    sem, scope = order
    t = value.type
    fn = _spirv(gen, "AtomicCompareExchange", t, [ptr.type, I32, I32, I32, t, t])
    return gen.b.call(fn, [ptr, _c(_SCOPES[scope]), _c(semantics(sem)), _c(semantics(_failure_sem(sem))),
                           value, cmp])


def _cas_loop(gen, kind: str, ptr: ir.Value, value: ir.Value, elem, order, op) -> ir.Value:
    """``old = *word; do new = f(old, value) while cmpxchg(word, old, new) != old``."""
    b = gen.b
    half = isinstance(elem, (Float16Type, BFloat16Type))
    word_t = I64 if isinstance(value.type, ir.IntType) and value.type.width == 64 else I32
    shift = None
    if half:  # the aligned 32-bit word that holds the element, and the element's bit offset in it
        offset = b.and_(b.ptrtoint(ptr, I64), ir.Constant(I64, 3))
        ptr = b.gep(ptr, [b.neg(offset)], source_etype=I8)
        shift = b.trunc(b.shl(offset, ir.Constant(I64, 3)), I32)
    first = b.load(ptr, typ=word_t)
    pre = b.block
    loop, done = b.append_basic_block("cas.loop"), b.append_basic_block("cas.done")
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.phi(word_t)
    seen.add_incoming(first, pre)
    if half:
        bits = b.trunc(b.lshr(seen, shift), I16)
        old = bits if isinstance(elem, BFloat16Type) else b.bitcast(bits, ir.HalfType())
        conv = _Emitter(gen)
        new = conv.from_f32(_combine(b, kind, conv.to_f32(old, elem), conv.to_f32(value, elem), op), elem)
        new_bits = b.zext(new if isinstance(elem, BFloat16Type) else b.bitcast(new, I16), I32)
        keep = b.not_(b.shl(ir.Constant(I32, 0xFFFF), shift))
        new_word = b.or_(b.and_(seen, keep), b.shl(new_bits, shift))
    else:
        old = seen if word_t == value.type else b.bitcast(seen, value.type)
        new = _combine(b, kind, old, value, op)
        new_word = new if word_t == value.type else b.bitcast(new, word_t)
    now = compare_exchange(gen, ptr, seen, new_word, order)
    seen.add_incoming(now, b.block)
    b.cbranch(b.icmp_unsigned("==", now, seen), done, loop)
    b.position_at_end(done)
    return old


def _combine(b: ir.IRBuilder, kind: str, old: ir.Value, value: ir.Value, op) -> ir.Value:
    if kind == "addf":
        return b.fadd(old, value)
    if kind == "mulf":
        return b.fmul(old, value)
    if kind in ("muli", "addi"):
        return b.mul(old, value) if kind == "muli" else b.add(old, value)
    if kind in ("maximumf", "maxnumf", "minimumf", "minnumf"):
        pick_old = b.fcmp_ordered(">" if kind.startswith("max") else "<", old, value)
        if kind in ("maximumf", "minimumf"):  # NaN propagates: keep a NaN old value
            pick_old = b.or_(pick_old, b.fcmp_unordered("uno", old, old))
        return b.select(pick_old, old, value)
    if kind == "assign":
        return value
    raise LoweringError(f"codegen: atomic_rmw {kind} on {value.type} is not supported", op)


# ----------------------------------------------------------------------------- element atomics
def guarded(b: ir.IRBuilder, mask: ir.Value, body, ty: ir.Type) -> ir.Value:
    """``mask ? body() : 0`` with ``body`` executed only when ``mask`` holds."""
    pre = b.block
    then = b.append_basic_block("lane.on")
    done = b.append_basic_block("lane.done")
    b.cbranch(mask, then, done)
    b.position_at_end(then)
    value = body()
    then_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(ty)
    phi.add_incoming(ir.Constant(ty, None), pre)  # zero-initialised
    phi.add_incoming(value, then_end)
    return phi


def _element(gen, op) -> tuple[ir.Value, ir.Value]:
    """(pointer to the element, whether its indices lie inside the array) of an element atomic."""
    if gen.workgroup_subgroups > 1:
        raise LoweringError(xetile.scalar_atomic_subgroups_error(op.name, gen.workgroup_subgroups), op)
    if op.memref not in gen.memrefs:
        raise LoweringError(f"codegen: {op.name} needs a kernel array argument", op)
    b = gen.b
    base, sizes, strides = gen.memrefs[op.memref]
    offset, inside = ir.Constant(I64, 0), ir.Constant(ir.IntType(1), 1)
    for idx, size, stride in zip(op.indices, sizes, strides):
        i = gen.v(idx)
        offset = b.add(offset, b.mul(i, stride))
        inside = b.and_(inside, b.icmp_unsigned("<", i, size))
    elem_bytes = ir.Constant(I64, bit_width(op.memref.type.element_type) // 8)
    return b.gep(base, [b.mul(offset, elem_bytes)], source_etype=I8), inside


def _once(gen, inside: ir.Value, body, ty: ir.Type) -> ir.Value:
    """``body()`` on lane 0 when ``inside`` holds (else 0), broadcast to every lane."""
    b = gen.b
    lane0 = b.icmp_unsigned("==", gen.lib.lane_id(b), ir.Constant(I32, 0))
    old = guarded(b, b.and_(inside, lane0), body, ty)
    return _from_lane0(gen, old)


def _from_lane0(gen, value: ir.Value) -> ir.Value:
    b = gen.b
    zero = ir.Constant(I32, 0)
    t = value.type
    if t == I64:
        lo = gen.lib.shuffle_i32(b, b.trunc(value, I32), zero)
        hi = gen.lib.shuffle_i32(b, b.trunc(b.lshr(value, ir.Constant(I64, 32)), I32), zero)
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
    bits = 32 if t in (I32, ir.FloatType()) else 16
    word = b.bitcast(value, I32) if t == ir.FloatType() else value if t == I32 else \
        b.zext(value if t == I16 else b.bitcast(value, I16), I32)
    word = gen.lib.shuffle_i32(b, word, zero)
    if bits == 32:
        return word if t == I32 else b.bitcast(word, t)
    short = b.trunc(word, I16)
    return short if t == I16 else b.bitcast(short, t)


@EMITTERS.register(xetile.AtomicRMWScalarOp)
def emit_atomic_rmw_scalar(gen, op: xetile.AtomicRMWScalarOp) -> None:
    ptr, inside = _element(gen, op)
    elem = op.memref.type.element_type
    ty = llvm_scalar(elem)
    value = gen.v(op.value)
    gen.values[op.result] = _once(gen, inside, lambda: atomic_update(gen, op.kind.data, ptr, value, elem,
                                                                     xetile.order_of(op), op), ty)


@EMITTERS.register(xetile.AtomicCASScalarOp)
def emit_atomic_cas_scalar(gen, op: xetile.AtomicCASScalarOp) -> None:
    ptr, inside = _element(gen, op)
    ty = llvm_scalar(op.memref.type.element_type)
    cmp, value = gen.v(op.cmp), gen.v(op.value)
    gen.values[op.result] = _once(gen, inside, lambda: compare_exchange(gen, ptr, cmp, value, xetile.order_of(op)),
                                  ty)


@EMITTERS.register(xetile.FenceOp)
def emit_fence(gen, op: xetile.FenceOp) -> None:
    sem, scope = xetile.order_of(op)
    fn = _spirv(gen, "MemoryBarrier", ir.VoidType(), [I32, I32])
    gen.b.call(fn, [_c(_SCOPES[scope]), _c(semantics(sem, _GLOBAL_MEMORY | _WORKGROUP_MEMORY))])
