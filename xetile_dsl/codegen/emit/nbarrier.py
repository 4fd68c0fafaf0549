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

**Barriers per group** (what ``xetile-wg-to-sg`` generates for SLM exchanges that stay
inside groups of subgroups): the id is computed from ``gpu.subgroup_id`` (``sg / step mod
count + base``).  Codegen evaluates that expression for every subgroup of the workgroup,
checks that each id has exactly ``participant_thread_num`` members, and on pvc emits one
``named_barrier_init`` per id (IGC gives each call its own hardware barrier, and resolves a
``work_group_named_barrier`` only on a value that comes straight from one of those calls)
and, at the wait, a ``switch`` on the runtime id whose cases each synchronise on their own
barrier: ``sync.bar`` with one id per group in the ISA.

Targets without named barriers (arc, and its CPU flavour) report them.  On the CPU
device (no named barriers) the barrier is defined from its specification on
top of the work-group barrier, which is exact when every subgroup of the workgroup
participates.  It is also a correct over-approximation for barriers per group whose
groups cover the workgroup: every subgroup reaches the same program point (its group's
barrier there), so waiting for all of them there waits for the group too, and no
subgroup is kept from its own group's barrier.  A barrier over a subset of the subgroups
with one constant id cannot be emulated (its waiters would block the work-group barrier
of the others) and is reported.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from ...dialects import xegpu
from ...errors import LoweringError
from . import EMITTERS, slm

I32 = ir.IntType(32)
LOCAL_PTR = ir.PointerType(addrspace=3)
NAMED_BARRIER_INIT = "_Z18named_barrier_initi"
NAMED_BARRIER_WAIT = "_Z24work_group_named_barrierPU3AS314__namedBarrierj"


@EMITTERS.register(xegpu.AllocNbarrierOp)
def emit_alloc_nbarrier(gen, op: xegpu.AllocNbarrierOp) -> None:
    """Nothing: IGC assigns the barrier ids."""


@EMITTERS.register(xegpu.InitNbarrierOp)
def emit_init_nbarrier(gen, op: xegpu.InitNbarrierOp) -> None:
    gen.values[op.result] = _init(gen, op)


@EMITTERS.register(xegpu.NbarrierArriveOp)
def emit_nbarrier_arrive(gen, op: xegpu.NbarrierArriveOp) -> None:
    """Held until the ``nbarrier_wait`` of the same barrier (see the module docstring)."""
    _pending(gen)[op.nbarrier] = op


@EMITTERS.register(xegpu.NbarrierWaitOp)
def emit_nbarrier_wait(gen, op: xegpu.NbarrierWaitOp) -> None:
    if _pending(gen).pop(op.nbarrier, None) is None:
        raise LoweringError("nbarrier_wait needs an nbarrier_arrive of the same barrier before it (the "
                            "named barrier IGC compiles is arrive and wait in one)", op)
    _wait(gen, gen.v(op.nbarrier))


def _pending(gen) -> dict:
    """The barriers arrived at and not yet waited for (kept on ``gen``)."""
    return gen.__dict__.setdefault("nbarrier_arrived", {})


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


@dataclass
class _GroupBarriers:
    """A named barrier per group: the runtime id and, on the GPU, each id's barrier."""

    nb_id: ir.Value | None
    by_id: dict[int, ir.Value]


_EVAL = {"arith.addi": lambda a, b: a + b, "arith.subi": lambda a, b: a - b, "arith.muli": lambda a, b: a * b,
         "arith.divsi": lambda a, b: a // b, "arith.divui": lambda a, b: a // b,
         "arith.remsi": lambda a, b: a % b, "arith.remui": lambda a, b: a % b}
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi", "arith.trunci")


def _value_for(value: SSAValue, sg: int) -> int | None:
    """``value`` in subgroup ``sg`` when it is computed from constants and
    ``gpu.subgroup_id`` by integer arith (None otherwise)."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    if not isinstance(op, Operation):
        return None
    if op.name == "gpu.subgroup_id":
        return sg
    if op.name in _CASTS:
        return _value_for(op.operands[0], sg)
    if op.name in _EVAL:
        a, b = (_value_for(v, sg) for v in op.operands)
        return None if a is None or b is None else _EVAL[op.name](a, b)
    return None


def _ids(op: xegpu.InitNbarrierOp, subgroups: int) -> list[int] | None:
    """The barrier id of every subgroup, when it can be computed."""
    ids = [_value_for(op.nbarrier_id, sg) for sg in range(subgroups)]
    return None if None in ids else ids


def _check_groups(op, ids: list[int], count: int | None) -> None:
    """Each id of a barrier per group must have exactly ``count`` members."""
    members = Counter(ids)
    wrong = {i: n for i, n in sorted(members.items()) if n != count}
    if count is None or wrong:
        raise LoweringError(f"init_nbarrier: the barrier id depends on the subgroup, so each id needs exactly "
                            f"{'a constant number of' if count is None else count} participant(s), but the "
                            f"ids have these member counts: {dict(sorted(members.items()))}", op)


def _init_groups(gen, op: xegpu.InitNbarrierOp, ids: list[int], count: int | None) -> _GroupBarriers:
    _check_groups(op, ids, count)
    if gen.lib.emulate:
        return _GroupBarriers(None, {})
    fn = gen.lib.declare(NAMED_BARRIER_INIT, ir.FunctionType(LOCAL_PTR, [I32]))
    by_id = {i: gen.b.call(fn, [ir.Constant(I32, count)]) for i in sorted(set(ids))}
    return _GroupBarriers(gen.v(op.nbarrier_id), by_id)


def _init(gen, op: xegpu.InitNbarrierOp) -> ir.Value | _GroupBarriers:
    count, subgroups = _participants(op), gen.workgroup_subgroups
    if gen.target.named_barriers == 0:
        raise LoweringError(f"init_nbarrier: {gen.target.name} has no named barriers; use gpu.barrier", op)
    if count is not None and not 1 <= count <= subgroups:
        raise LoweringError(f"init_nbarrier: {count} participants, but the workgroup has {subgroups} subgroup(s); "
                            f"use 1..{subgroups}", op)
    ids = _ids(op, subgroups)
    if ids is not None and len(set(ids)) > 1:
        return _init_groups(gen, op, ids, count)
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


def _wait(gen, barrier: ir.Value | _GroupBarriers) -> None:
    if gen.lib.emulate:
        slm.barrier(gen)
        return
    if isinstance(barrier, _GroupBarriers):
        _wait_groups(gen, barrier)
        return
    fn = gen.lib.declare(NAMED_BARRIER_WAIT, ir.FunctionType(ir.VoidType(), [LOCAL_PTR, I32]))
    gen.b.call(fn, [barrier, ir.Constant(I32, slm.CLK_LOCAL_MEM_FENCE)])


def _wait_groups(gen, barriers: _GroupBarriers) -> None:
    """``switch`` on this subgroup's id; each case waits on its own group's barrier."""
    b = gen.b
    done = b.append_basic_block("nbarrier.done")
    switch = b.switch(barriers.nb_id, done)
    fn = gen.lib.declare(NAMED_BARRIER_WAIT, ir.FunctionType(ir.VoidType(), [LOCAL_PTR, I32]))
    for nb_id, barrier in barriers.by_id.items():
        case = b.append_basic_block(f"nbarrier.{nb_id}")
        switch.add_case(ir.Constant(barriers.nb_id.type, nb_id), case)
        b.position_at_end(case)
        b.call(fn, [barrier, ir.Constant(I32, slm.CLK_LOCAL_MEM_FENCE)])
        b.branch(done)
    b.position_at_end(done)
