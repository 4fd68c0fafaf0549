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

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from ..dialects import xegpu, xetile

#: dialects whose ops (here) have no side effects
_PURE_DIALECTS = ("arith", "math", "vector")


@dataclass(frozen=True)
class SinkToUses(ModulePass):
    name = "xegpu-sink-to-uses"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                for block in [b for o in fn.walk() for r in o.regions for b in r.blocks]:
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
    """Move each movable op of ``block`` just before its first user there."""
    for op in reversed(list(block.ops)):
        if not is_movable(op):
            continue
        first = _first_user_in(block, op, stop_at_writes=isinstance(op, xegpu.LoadNdOp))
        if first is not None and first is not op.next_op:
            op.detach()
            block.insert_op_before(op, first)


def _first_user_in(block: Block, op: Operation, stop_at_writes: bool = False) -> Operation | None:
    """The earliest op of ``block`` that uses a result of ``op`` (directly or through a
    nested region); None when some user is outside ``block``.  Users follow ``op``, so a
    forward walk finds the first one."""
    users = set()
    for result in op.results:
        for use in result.uses:
            user = block.find_ancestor_op_in_block(use.operation)
            if user is None:
                return None
            users.add(user)
    cur = op.next_op
    while users and cur is not None:
        if cur in users:
            return cur
        if stop_at_writes and _writes_memory(cur):
            return cur if cur is not op.next_op else None  # as far as the first write
        cur = cur.next_op
    return None
