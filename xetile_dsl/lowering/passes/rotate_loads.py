"""Pass ``xegpu-rotate-loads``: K-loop loads issued a step ahead of the DPAS (register
double buffering), on the per-lane SIMT IR, last in the pipeline.

Without it each K step loads its A and B tiles and runs its DPAS on them at once, so
every iteration waits for its own loads: IGC does not software-pipeline.

**Default (``auto``): two K steps per trip.**  A K loop (a DPAS in its body, a constant
step, only plain 2D block loads: :func:`load_rotation.plain_loads`) whose two steps of loaded operands and carried values fit
``accumulator_register_share`` of the register file of the kernel's GRF mode
(:func:`load_rotation.pair_fits`) becomes a loop over pairs of steps, ``k`` and
``k + s``, while ``k + s`` is in range, and the body once more after it when the step
count is odd (an ``scf.if``; the two-step loop's bound ``max(ub, s) - s`` stays a 32-bit
value for codegen's 32-bit counter).  Every step runs exactly as before, in the same
order, so any body is legal; when the body writes nothing, the second step's block loads
(with the descriptor moves they need) go before the first step's first DPAS, so the
second step's operands are in flight while the first step's DPAS run.  Nothing is read
past the loop's range.

**``carry``: loads rotated one step ahead, as a measurement.**  A load the analysis
allows (a bounds-checked 2D block load from global memory of a loop-carried descriptor
advanced by ``update_nd_offset``, in a loop that writes nothing and holds no region;
within the budget, loads taken in body order) is loaded before the loop and carried as
an iter_arg; each step loads the next tile before the DPAS that use the current one::

    v0 = load(d0)                                  # before the loop
    for k ...  iter_args(d = d0, v = v0, ...):
        d' = update_nd_offset(d, ...)              # moved up with the offsets it needs
        v' = load(d')                              # the next tile, before the first DPAS
        ... dpas(v, ...) ...                       # the current tile, loaded a step ago
        yield d', v', ...

then runs two steps per trip as above.  The last step loads one step past the loop's
range: a 2D block load reads rows and columns outside its surface as zeros (or its
padding) and never faults, which is why only such loads are rotated (never per-lane
gathers or SLM blocks).  IGC copies the carried tiles at every back edge whatever the
unrolling (pvc M = 16: 23 hot-loop instructions per step, 70 carried one step per trip,
90 per two steps), so it is not the default (docs/decisions/021-code-shaped-for-igc.md).

``mode`` ("" = ``XETILE_ROTATE_LOADS``): ``auto``, ``off`` (nothing), ``force`` (pairs
whatever the budget; measurements) or ``carry``.  A loop left alone for the budget gets
a debug-level log record.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntAttr, IntegerAttr, IntegerType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from ... import knobs
from ...dialects import xegpu
from ...dialects.walk import ops_in
from ...dialects.attributes import LARGE_GRF_ATTR, ROTATION_BUFFER_ATTR
from ...targets import Target, kernel_target
from ..analysis import load_rotation
from ..analysis.load_rotation import Rotation

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RotateLoads(ModulePass):
    """Schedule the K loops' loads a step ahead (module docstring)."""

    name = "xegpu-rotate-loads"
    target: Target | str = ""  # default: the function's xetile.kernel attribute (else pvc)
    mode: str = ""    # auto, off, force, carry; default: XETILE_ROTATE_LOADS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        mode = self.mode or knobs.ROTATE_LOADS.get()
        if mode == "off":
            return
        buffers = count()   # BUFFER_ATTR numbers, unique in the module
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                target = kernel_target(fn, self.target)
                large = LARGE_GRF_ATTR in fn.attributes
                for loop in [o for o in ops_in(fn) if isinstance(o, scf.ForOp)]:
                    if load_rotation.first_dpas(loop) is None or load_rotation.constant_step(loop) is None:
                        continue
                    if mode == "carry":
                        _carry(fn, loop, target, large, buffers)
                    elif mode == "force" or (load_rotation.plain_loads(loop)
                                             and load_rotation.pair_fits(loop, target, large)):
                        pair_steps(loop)
                    else:
                        _log.debug("%s: K loop not paired: transposed or per-lane loads, or two steps of operands "
                                   "exceed the register budget of %s", fn.sym_name.data, target.name)


def _carry(fn: func.FuncOp, loop: scf.ForOp, target, large: bool, buffers: Iterator[int]) -> None:
    """``mode=carry``: the loads the analysis allows and the budget holds carried one
    step ahead, in a two-step loop."""
    found = load_rotation.candidates(loop)
    chosen = load_rotation.within_budget(loop, found, target, large)
    if len(chosen) < len(found):
        _log.debug("%s: %d of %d K-loop loads not rotated: the register budget of %s has no room",
                   fn.sym_name.data, len(found) - len(chosen), len(found), target.name)
    if chosen:
        rotated, firsts = rotate(loop, chosen)
        unroll_pairs(rotated, firsts, buffers)


def pair_steps(loop: scf.ForOp) -> None:
    """``loop`` in two steps per trip (:func:`unroll_pairs`), the second step's block
    loads issued before the first step's first DPAS when nothing in the body writes
    memory (else in body order: IGC may still move them up to the first write)."""
    loads_first = load_rotation.writes_nothing(loop)
    per_step = sum(isinstance(op, xegpu.LoadNdOp) for op in loop.body.block.ops)
    pairs = unroll_pairs(loop, {}, iter(()))
    if not loads_first:
        return
    block = pairs.body.block
    point = next(op for op in block.ops if isinstance(op, xegpu.DpasOp))
    for load in [op for op in block.ops if isinstance(op, xegpu.LoadNdOp)][per_step:]:
        _hoist_before(load, point, block)


def rotate(loop: scf.ForOp, rotations: list[Rotation]) -> tuple[scf.ForOp, dict[Operation, Operation]]:
    """``loop`` with each of ``rotations`` carried one iteration ahead: the new loop (its
    extra results, the tiles past the range, are unused) and its next-tile loads, each
    with the load of the first tile before the loop."""
    body = loop.body.block
    point = load_rotation.first_dpas(loop)
    for r in rotations:
        _hoist_before(r.update, point, body)
    firsts, next_loads = [], {}
    for r in rotations:
        first = r.load.clone(value_mapper={r.load.tensor_desc: loop.iter_args[r.position]})
        loop.parent_block().insert_op_before(first, loop)
        firsts.append(first)
        current = body.insert_arg(r.load.results[0].type, len(body.args))
        nxt = r.load.clone(value_mapper={r.load.tensor_desc: r.update.result})
        body.insert_op_before(nxt, point)
        next_loads[nxt] = first
        r.load.results[0].replace_all_uses_with(current)
        body.erase_op(r.load)
        _append_yield(body, nxt.results[0])
    return _with_iter_args(loop, [f.results[0] for f in firsts]), next_loads


def unroll_pairs(loop: scf.ForOp, next_loads: dict[Operation, Operation], buffers: Iterator[int]) -> scf.ForOp:
    """Replace ``loop`` by a loop running two steps per trip and, for an odd step count,
    the last step once after it (:func:`_last_step`); return the two-step loop.  (A
    guard around the second step instead let IGC sink that step's loads into it.)

    ``next_loads`` (carry mode: each next-tile load -> the first tile's load before the
    loop) are left out of the last step; the first tile's load and the second step's
    next-tile load get one :data:`ROTATION_BUFFER_ATTR` number from ``buffers``, the
    first step's next-tile load another: the first step's tile is read before the second
    step overwrites it."""
    body = loop.body.block
    step = load_rotation.constant_step(loop)
    before = loop.parent_block()
    double = arith.ConstantOp(IntegerAttr(2 * step, IndexType()))
    before.insert_op_before(double, loop)
    pairs_end = _minus_step(loop.ub, step, loop)
    block = Block(arg_types=[a.type for a in body.args])
    for old, new in zip(body.args, block.args):
        new.name_hint = old.name_hint    # the user's names (%k, %ta, %acc) in the printed IR
    first = dict(zip(body.args, block.args))
    _clone_into(block, body, first)
    second_k = arith.AddiOp(block.args[0], loop.step)
    block.add_op(second_k)
    second = {body.args[0]: second_k.result, **{a: first.get(v, v) for a, v in zip(body.args[1:], body.last_op.operands)}}
    _clone_into(block, body, second)
    block.add_op(scf.YieldOp(*[second.get(v, v) for v in body.last_op.operands]))
    pairs = scf.ForOp(loop.lb, pairs_end, double.result, loop.iter_args, Region(block))
    pairs.attributes.update(loop.attributes)
    before.insert_op_before(pairs, loop)
    for nxt, first_load in next_loads.items():
        even, odd = IntAttr(next(buffers)), IntAttr(next(buffers))
        first_load.attributes[ROTATION_BUFFER_ATTR] = even
        second[nxt.results[0]].owner.attributes[ROTATION_BUFFER_ATTR] = even
        first[nxt.results[0]].owner.attributes[ROTATION_BUFFER_ATTR] = odd
    _last_step(loop, pairs, next_loads)
    return pairs


def _clone_into(block: Block, body: Block, mapping: dict) -> None:
    """Clone ``body``'s ops but its yield into ``block`` (``mapping`` gains the results)."""
    for op in body.ops:
        if op is not body.last_op:
            block.add_op(op.clone(value_mapper=mapping))


def _minus_step(ub: SSAValue, step: int, loop: scf.ForOp) -> SSAValue:
    """``max(ub, step) - step`` before ``loop``, where the two-step loop stops: for an
    ``index_cast`` of an i32 bound computed in i32 (codegen keeps a 32-bit counter for
    such a bound, control_flow._narrow_loop_bounds), else in index."""
    source = ub.owner.operands[0] if getattr(ub.owner, "name", "") == "arith.index_cast" else None
    narrow = source is not None and isinstance(source.type, IntegerType) and source.type.bitwidth == 32
    value, ty = (source, source.type) if narrow else (ub, IndexType())
    c = arith.ConstantOp(IntegerAttr(step, ty))
    top = arith.MaxSIOp(value, c.result)
    end = arith.SubiOp(top.result, c.result)
    ops = [c, top, end] + ([arith.IndexCastOp(end.result, IndexType())] if narrow else [])
    for op in ops:
        loop.parent_block().insert_op_before(op, loop)
    return ops[-1].results[0]


def _end_of(pairs: scf.ForOp, loop: scf.ForOp) -> SSAValue:
    """The first step the two-step loop ``pairs`` did not run, computed after it (a
    carried counter cost a 64-bit add in the hot loop): ``lb + n * 2s`` with
    ``n = ceil(max(ub' - lb, 0) / 2s)``."""
    lb, double = pairs.lb, pairs.step
    one = arith.ConstantOp(IntegerAttr(1, IndexType()))
    span = arith.SubiOp(arith.MaxSIOp(pairs.ub, lb).result, lb)
    ops = [one, span.lhs.owner, span]
    rounded = arith.SubiOp(arith.AddiOp(span.result, double).result, one.result)
    trips = arith.DivSIOp(rounded.result, double)
    end = arith.AddiOp(lb, arith.MuliOp(trips.result, double).result)
    ops += [rounded.lhs.owner, rounded, trips, end.rhs.owner, end]
    for op in ops:
        loop.parent_block().insert_op_before(op, loop)
    return end.result


def _last_step(loop: scf.ForOp, pairs: scf.ForOp, next_loads: dict[Operation, Operation]) -> None:
    """Replace ``loop`` by its body run once at the two-step loop's end when that is still
    in range (an odd step count), without the next-tile loads nothing reads any more."""
    body = loop.body.block
    kept = len(loop.results) - len(next_loads)
    carried = list(pairs.results)
    end_k = _end_of(pairs, loop)
    in_range = arith.CmpiOp(end_k, loop.ub, "slt")
    then = Block()
    mapping = {body.args[0]: end_k, **dict(zip(body.args[1:], carried))}
    for op in body.ops:
        if op is not body.last_op and op not in next_loads:
            then.add_op(op.clone(value_mapper=mapping))
    then.add_op(scf.YieldOp(*[mapping.get(v, v) for v in body.last_op.operands[:kept]]))
    otherwise = Block([scf.YieldOp(*carried[:kept])])
    last = scf.IfOp(in_range.result, [r.type for r in loop.results[:kept]], Region(then), Region(otherwise))
    before = loop.parent_block()
    before.insert_op_before(in_range, loop)
    before.insert_op_before(last, loop)
    for old, replacement in zip(loop.results[:kept], last.results):
        old.replace_all_uses_with(replacement)
    before.erase_op(loop)


def _hoist_before(op: Operation, point: Operation, body: Block) -> None:
    """Move ``op`` and the body ops its operands need in front of ``point`` when they
    come after it (the analysis checked they are pure and read no load)."""
    if not _after(op, point):
        return
    for value in op.operands:
        owner = value.owner
        if isinstance(owner, Operation) and owner.parent_block() is body:
            _hoist_before(owner, point, body)
    op.detach()
    body.insert_op_before(op, point)


def _after(op: Operation, point: Operation) -> bool:
    """Whether ``op`` comes after ``point`` in their block."""
    node = point.next_op
    while node is not None:
        if node is op:
            return True
        node = node.next_op
    return False


def _append_yield(body: Block, value: SSAValue) -> None:
    old = body.last_op
    body.insert_op_before(scf.YieldOp(*old.operands, value), old)
    body.erase_op(old)


def _with_iter_args(loop: scf.ForOp, extra: list[SSAValue]) -> scf.ForOp:
    """A copy of ``loop`` (its body moved) whose iter_args end with ``extra``; the old
    loop's results are replaced by the new one's first results."""
    region = loop.detach_region(loop.body)
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [*loop.iter_args, *extra], region)
    new.attributes.update(loop.attributes)
    loop.parent_block().insert_op_before(new, loop)
    for old, replacement in zip(loop.results, new.results):
        old.replace_all_uses_with(replacement)
    loop.parent_block().erase_op(loop)
    return new

