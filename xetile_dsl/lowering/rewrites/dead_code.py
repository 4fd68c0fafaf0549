"""Dead loop-carried values and dead side-effect-free ops (a helper, not a pass).

After a pass duplicates a loop and each copy keeps only part of its results (see
lowering/passes/split_accumulators.py), the copies carry values nothing reads any more: an
accumulator whose result is taken from another copy, the tensor descriptors of blocks
only that accumulator loaded.  :func:`drop_dead_iter_args` removes such iter_args with
the ops that only fed them; :func:`erase_dead_ops` removes unused side-effect-free ops
of a block (the loop's initial values, for instance).
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, Operation

from ...dialects import xegpu, xetile
from ...dialects.walk import ops_in

#: dialects whose ops have no side effects
_PURE_DIALECTS = ("arith", "math", "vector")
#: XeGPU/XeTile ops that neither write memory nor synchronise (reading memory is fine:
#: a load nobody uses may go)
_PURE_OPS = (xegpu.DpasOp, xegpu.LoadNdOp, xegpu.LoadGatherOp, xegpu.CreateNdTdescOp, xegpu.CreateTdescOp,
             xegpu.UpdateNdOffsetOp, xegpu.UpdateOffsetOp, xetile.TileReduceOp, xetile.TileBroadcastOp)


def is_pure(op: Operation) -> bool:
    """Whether ``op`` can be erased when nothing uses its results (ops with regions never)."""
    if op.regions or not op.results:
        return False
    return op.dialect_name() in _PURE_DIALECTS or isinstance(op, _PURE_OPS)


def erase_dead_ops(block: Block) -> int:
    """Erase the pure ops of ``block`` whose results nobody uses (walking backwards, so
    chains go at once); return how many."""
    erased = 0
    for op in reversed(list(block.ops)):
        if is_pure(op) and all(not r.uses for r in op.results):
            block.erase_op(op)
            erased += 1
    return erased


def _live_ops(body: Block, kept_positions: set[int]) -> set[Operation]:
    """Ops of ``body`` (top level) that side effects or the yields at ``kept_positions``
    need; every op that is not pure, and everything nested in it, is needed."""
    terminator = body.last_op
    live: set[Operation] = set()
    work = [op for op in body.ops if op is not terminator and not is_pure(op)]
    roots = [terminator.operands[i] for i in kept_positions]
    for op in work:
        roots.extend(o for nested in ops_in(op) for o in nested.operands)
    while roots or work:
        if work:
            op = work.pop()
            if op in live:
                continue
            live.add(op)
            roots.extend(op.operands)
            continue
        value = roots.pop()
        owner = value.owner
        if isinstance(owner, Operation):
            top = body.find_ancestor_op_in_block(owner)
            if top is not None and top not in live:
                work.append(top)
    return live


def _args_read_by(body: Block, live: set[Operation], kept: set[int]) -> set[int]:
    """Positions of the iter_args that a live op or a kept yield operand reads."""
    terminator = body.last_op
    read = set()
    for pos, arg in enumerate(body.args[1:]):
        for use in arg.uses:
            user = body.find_ancestor_op_in_block(use.operation)
            if user is terminator:
                if use.index in kept:
                    read.add(pos)
            elif user in live:
                read.add(pos)
    return read


def dead_iter_args(loop: scf.ForOp) -> set[int]:
    """Positions whose result is unused and whose value only feeds its own next value."""
    n = len(loop.results)
    dead = {i for i in range(n) if not loop.results[i].uses}
    while True:
        kept = set(range(n)) - dead
        live = _live_ops(loop.body.block, kept)
        still_dead = dead - _args_read_by(loop.body.block, live, kept)
        if still_dead == dead:
            return dead
        dead = still_dead


def drop_dead_iter_args(loop: scf.ForOp) -> scf.ForOp:
    """``loop`` without its dead iter_args (:func:`dead_iter_args`) and the body ops only
    they needed; returns the new loop (``loop`` itself when nothing is dead)."""
    dead = dead_iter_args(loop)
    if not dead:
        return loop
    body = loop.body.block
    kept = [i for i in range(len(loop.results)) if i not in dead]
    terminator = body.last_op
    new_yield = scf.YieldOp(*[terminator.operands[i] for i in kept])
    body.insert_op_before(new_yield, terminator)
    body.erase_op(terminator)
    live = _live_ops(body, set(range(len(kept))))
    for op in reversed(list(body.ops)):
        if op is not new_yield and op not in live:
            body.erase_op(op, safe_erase=False)
    for i in sorted(dead, reverse=True):
        body.erase_arg(body.args[i + 1])
    region = loop.detach_region(loop.body)
    new = scf.ForOp(loop.lb, loop.ub, loop.step, [loop.iter_args[i] for i in kept], region)
    block = loop.parent_block()
    block.insert_op_before(new, loop)
    for new_pos, old_pos in enumerate(kept):
        loop.results[old_pos].replace_all_uses_with(new.results[new_pos])
    block.erase_op(loop)
    return new


def prune_loop(loop: scf.ForOp) -> scf.ForOp:
    """:func:`drop_dead_iter_args`, then the unused ops that computed its initial values."""
    new = drop_dead_iter_args(loop)
    if new is not loop:
        erase_dead_ops(new.parent_block())
    return new

