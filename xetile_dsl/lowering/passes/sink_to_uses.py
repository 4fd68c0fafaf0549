"""Pass ``xegpu-sink-to-uses``: block-by-block order for per-block element-wise chains.

The XeGPU conversion clones each element-wise op once per block, op by op, so an
epilogue ``y = f(g(acc))`` over eight blocks comes out as eight ``g``s, then eight
``f``s, then eight stores: every block's temporaries are live at the same time (a GELU
after a 32x32 f32 accumulator spilled about 4 KB on pvc at 128 GRFs).  This pass moves
each side-effect-free op (arith, math, vector, the 2-D xetile reduce/broadcast) to just
before its first user in the same block, visiting ops bottom-up, so each block's chain
ends up next to its store: ``g0 f0 store0 g1 f1 store1 ...``.  Only the order changes
(no op is duplicated or removed); ops whose users sit in other blocks (a loop body, a
branch) stay where they are.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from ...dialects import xegpu, xetile
from ...dialects.walk import ops_in

#: dialects whose ops (here) have no side effects
_PURE_DIALECTS = ("arith", "math", "vector")


@dataclass(frozen=True)
class SinkToUses(ModulePass):
    name = "xegpu-sink-to-uses"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                for block in [b for o in ops_in(fn) for r in o.regions for b in r.blocks]:
                    sink_block(block)


def is_movable(op: Operation) -> bool:
    """Pure ops with results (constants stay put: they cost no registers until used) and
    block loads (moved only past ops that do not write memory, see :func:`sink_block`)."""
    if op.name == "arith.constant" or not op.results or op.regions:
        return False
    return (op.dialect_name() in _PURE_DIALECTS or isinstance(op, (xetile.TileReduceOp, xetile.TileBroadcastOp))
            or isinstance(op, xegpu.LoadNdOp))


def _writes_memory(op: Operation) -> bool:
    """Whether ``op`` may write memory or synchronise (a load must not move past it)."""
    if op.regions or op.name.startswith(("gpu.barrier", "func.call")):
        return True
    return isinstance(op, (xegpu.StoreNdOp, xegpu.StoreScatterOp, xegpu.AtomicRMWOp))


def sink_block(block: Block) -> None:
    """Move each movable op of ``block`` just before its first user there (each op and
    each use looked at once: the cost is linear in the block, not quadratic).

    Ops are visited bottom-up, so when an op is visited every op after it is already in
    place: the order of those never changes again, only earlier ops get inserted among
    them.  :class:`_Order` keeps a comparable position per op under such insertions, so
    an op's first user is the use with the smallest position and a load's first later
    memory write is a bisection in the (never moving) writes, not a walk."""
    order = _Order(block)
    for op in reversed(list(block.ops)):
        if not is_movable(op):
            continue
        first = _first_user_in(block, op, order, stop_at_writes=isinstance(op, xegpu.LoadNdOp))
        if first is not None and first is not op.next_op:
            op.detach()
            block.insert_op_before(op, first)
            order.moved_before(op, first)


class _Order:
    """Positions of a block's ops that stay comparable while ops move: integers with gaps,
    a moved op taking the midpoint of its new neighbours (all renumbered in the rare case
    of no gap left), and the sorted positions of the ops that write memory (never moved)."""

    #: moves into one gap before a renumbering: many loads can move in front of one store,
    #: each halving the gap left (Python ints are unbounded; comparing them stays cheap)
    GAP = 1 << 1024

    def __init__(self, block: Block):
        self.block = block
        self._renumber()

    def _renumber(self) -> None:
        self.pos = {op: (i + 1) * self.GAP for i, op in enumerate(self.block.ops)}
        writes = [op for op in self.block.ops if _writes_memory(op)]
        self.write_pos = [self.pos[op] for op in writes]
        self.write_at = {self.pos[op]: op for op in writes}

    def moved_before(self, op: Operation, user: Operation) -> None:
        prev = op.prev_op
        low = self.pos[prev] if prev is not None else 0
        mid = (low + self.pos[user]) // 2
        if mid == low:
            self._renumber()
        else:
            self.pos[op] = mid

    def first_write_after(self, op: Operation) -> Operation | None:
        i = bisect.bisect_right(self.write_pos, self.pos[op])
        return self.write_at[self.write_pos[i]] if i < len(self.write_pos) else None


def _first_user_in(block: Block, op: Operation, order: _Order, stop_at_writes: bool = False) -> Operation | None:
    """The earliest op of ``block`` that uses a result of ``op`` (directly or through a
    nested region); None when some user is outside ``block``.  With ``stop_at_writes``
    (a load) the first memory write after ``op`` if that comes earlier, or None when that
    write is right after ``op``."""
    first = None
    for result in op.results:
        for use in result.uses:
            user = block.find_ancestor_op_in_block(use.operation)
            if user is None:
                return None
            if first is None or order.pos[user] < order.pos[first]:
                first = user
    if first is None or not stop_at_writes:
        return first
    write = order.first_write_after(op)
    if write is not None and order.pos[write] < order.pos[first]:
        return write if write is not op.next_op else None    # as far as the first write
    return first
