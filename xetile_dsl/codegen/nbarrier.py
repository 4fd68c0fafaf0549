"""Codegen of XeGPU named barriers (``alloc_nbarrier``, ``init_nbarrier``,
``nbarrier_arrive``, ``nbarrier_wait``).

On the GPU (pvc) they become the ``cl_khr_subgroup_named_barrier`` builtins IGC compiles
(reference §5.4): ``named_barrier_init(subgroups)`` returns a barrier in local memory and
``work_group_named_barrier(nb, CLK_LOCAL_MEM_FENCE)`` is an SLM fence, ``signal barrier``
and ``sync.bar <id>`` with IGC-assigned ids 1, 2, ...  That builtin is arrive and wait in
one, so an ``nbarrier_arrive`` is held until the ``nbarrier_wait`` of the same barrier
that follows it (every participant both arrives and waits: the symmetric use the SLM
exchanges need).  An arrive never waited for, or a wait with no arrive before it, is a
:class:`LoweringError` (IGC has no separate signal for named barriers in SPIR-V; the
core ``OpNamedBarrierInitialize`` / ``OpMemoryNamedBarrier`` crash ocloc).  The id operand
of ``init_nbarrier`` is not needed (IGC assigns ids); ``alloc_nbarrier`` emits nothing.

Targets without named barriers (arc, and its CPU flavour) report them.  On the CPU
device (no named barriers) the barrier is defined from its specification on
top of the work-group barrier, which is exact when every subgroup of the workgroup
participates; a barrier over a subset of the subgroups cannot be emulated (its waiters
would block the work-group barrier of the others) and is reported.
"""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation

from ..dialects import xegpu
from ..errors import LoweringError
from . import slm

I32 = ir.IntType(32)
LOCAL_PTR = ir.PointerType(addrspace=3)
NAMED_BARRIER_INIT = "_Z18named_barrier_initi"
NAMED_BARRIER_WAIT = "_Z24work_group_named_barrierPU3AS314__namedBarrierj"


def handles(op: Operation) -> bool:
    """Whether :func:`emit` lowers ``op``."""
    return isinstance(op, (xegpu.AllocNbarrierOp, xegpu.InitNbarrierOp, xegpu.NbarrierArriveOp,
                           xegpu.NbarrierWaitOp))


def emit(gen, op: Operation) -> None:
    """Lower ``op`` into ``gen`` (a ``simt_to_llvm._KernelGen``)."""
    pending = gen.__dict__.setdefault("nbarrier_arrived", {})
    if isinstance(op, xegpu.AllocNbarrierOp):
        return
    if isinstance(op, xegpu.InitNbarrierOp):
        gen.values[op.result] = _init(gen, op)
    elif isinstance(op, xegpu.NbarrierArriveOp):
        pending[op.nbarrier] = op
    else:
        if pending.pop(op.nbarrier, None) is None:
            raise LoweringError("nbarrier_wait needs an nbarrier_arrive of the same barrier before it (the "
                                "named barrier IGC compiles is arrive and wait in one)", op)
        _wait(gen, gen.v(op.nbarrier))


def finish(gen) -> None:
    """Report an ``nbarrier_arrive`` that no ``nbarrier_wait`` followed."""
    for op in gen.__dict__.get("nbarrier_arrived", {}).values():
        raise LoweringError("nbarrier_arrive without a later nbarrier_wait of the same barrier: only "
                            "arrive-then-wait pairs can be compiled (IGC's named barrier is both in one)", op)


def _participants(op: xegpu.InitNbarrierOp) -> int | None:
    """The participant count when it is a constant."""
    owner = op.participant_thread_num.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _init(gen, op: xegpu.InitNbarrierOp) -> ir.Value:
    count, subgroups = _participants(op), gen.workgroup_subgroups
    if gen.target.named_barriers == 0:
        raise LoweringError(f"init_nbarrier: {gen.target.name} has no named barriers; use gpu.barrier", op)
    if count is not None and not 1 <= count <= subgroups:
        raise LoweringError(f"init_nbarrier: {count} participants, but the workgroup has {subgroups} subgroup(s); "
                            f"use 1..{subgroups}", op)
    if gen.lib.emulate:
        if count != subgroups:
            raise LoweringError(f"init_nbarrier: the CPU device emulates a named barrier with the workgroup "
                                f"barrier, so all {subgroups} subgroups must participate (got "
                                f"{'a runtime count' if count is None else count})", op)
        return ir.Constant(LOCAL_PTR, None)
    fn = gen.lib.declare(NAMED_BARRIER_INIT, ir.FunctionType(LOCAL_PTR, [I32]))
    return gen.b.call(fn, [_as_i32(gen.b, gen.v(op.participant_thread_num))])


def _as_i32(builder: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """An unsigned count (i8 ... index) as i32."""
    width = value.type.width
    if width == 32:
        return value
    return builder.zext(value, I32) if width < 32 else builder.trunc(value, I32)


def _wait(gen, barrier: ir.Value) -> None:
    if gen.lib.emulate:
        slm.barrier(gen)
        return
    fn = gen.lib.declare(NAMED_BARRIER_WAIT, ir.FunctionType(ir.VoidType(), [LOCAL_PTR, I32]))
    gen.b.call(fn, [barrier, ir.Constant(I32, slm.CLK_LOCAL_MEM_FENCE)])
