"""Value families: SSA values that are the same program variable across loops and updates.

A tile created by init_tile, moved by update_tile_offset and carried through scf.for
iter_args (or out of an scf.if, whose results join the values both branches yield) is one
family; so is an accumulator carried through a loop.  Passes give each
family one blocking and one lane layout.
"""
from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Operation, SSAValue

from ...dialects import xegpu, xetile


class Families:
    """Union-find over SSA values, joined through loops and offset updates."""

    def __init__(self, root: Operation):
        self.parent: dict[SSAValue, SSAValue] = {}
        for op in root.walk():
            self._join_op(op)

    def find(self, v: SSAValue) -> SSAValue:
        root = v
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        self.parent[v] = root
        return root

    def union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb

    def _join_op(self, op: Operation) -> None:
        if isinstance(op, scf.ForOp):
            body = op.body.block
            for init, barg, res in zip(op.iter_args, body.args[1:], op.results):
                self.union(init, barg)
                self.union(barg, res)
            yield_op = body.last_op
            for yv, barg in zip(yield_op.operands, body.args[1:]):
                self.union(yv, barg)
        elif isinstance(op, scf.IfOp):
            for region in op.regions:
                for block in region.blocks:
                    for yv, res in zip(block.last_op.operands, op.results):
                        self.union(yv, res)
        elif isinstance(op, scf.WhileOp):
            self._join_while(op)
        elif isinstance(op, (xetile.UpdateTileOffsetOp, xegpu.UpdateNdOffsetOp)):
            self.union(op.operands[0], op.results[0])
        elif isinstance(op, xetile.TileMMAOp) and op.c is not None:
            self.union(op.c, op.output)
        elif isinstance(op, xegpu.DpasOp) and op.acc is not None:
            self.union(op.acc, op.result)

    def _join_while(self, op: scf.WhileOp) -> None:
        """scf.while: init i, before arg i, condition arg i, after arg i, yield i and
        result i are one program variable (the frontend keeps the carried values in order)."""
        before, after = op.before_region.block, op.after_region.block
        cond, yielded = before.last_op, after.last_op
        for init, barg, carg, aarg, yv, res in zip(op.arguments, before.args, cond.args, after.args,
                                                   yielded.operands, op.results, strict=True):
            for v in (barg, carg, aarg, yv, res):
                self.union(init, v)

    def members(self, root: Operation, v: SSAValue) -> list[SSAValue]:
        r = self.find(v)
        return [x for x in self.parent if self.find(x) is r]

