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
from ...dialects.walk import ops_in


class Families:
    """Union-find over SSA values, joined through loops and offset updates."""

    def __init__(self, root: Operation):
        self.parent: dict[SSAValue, SSAValue] = {}
        for op in ops_in(root):
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
        join = _JOINS.get(type(op))
        if join is None:
            join = _JOINS[type(op)] = _join_of(type(op))
        if join is not _skip:
            join(self, op)

    def _join_for(self, op: scf.ForOp) -> None:
        body = op.body.block
        for init, barg, res in zip(op.iter_args, body.args[1:], op.results):
            self.union(init, barg)
            self.union(barg, res)
        yield_op = body.last_op
        for yv, barg in zip(yield_op.operands, body.args[1:]):
            self.union(yv, barg)

    def _join_if(self, op: scf.IfOp) -> None:
        for region in op.regions:
            for block in region.blocks:
                for yv, res in zip(block.last_op.operands, op.results):
                    self.union(yv, res)

    def _join_update(self, op: Operation) -> None:
        self.union(op.operands[0], op.results[0])

    def _join_mma(self, op: xetile.TileMMAOp) -> None:
        if op.c is not None:
            self.union(op.c, op.output)

    def _join_dpas(self, op: xegpu.DpasOp) -> None:
        if op.acc is not None:
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



def _skip(families: Families, op: Operation) -> None:
    """Ops that join no values (most of them)."""


def _join_of(op_type: type):
    """The :class:`Families` method joining the values of an op of ``op_type`` (the
    first ``isinstance`` match, in the order the checks were written), else
    :func:`_skip`; kept per type in ``_JOINS``: the families are built ~11 times per
    compile, over every op, and the isinstance chain was most of it."""
    for base, join in ((scf.ForOp, Families._join_for), (scf.IfOp, Families._join_if),
                       (scf.WhileOp, Families._join_while),
                       ((xetile.UpdateTileOffsetOp, xegpu.UpdateNdOffsetOp), Families._join_update),
                       (xetile.TileMMAOp, Families._join_mma), (xegpu.DpasOp, Families._join_dpas)):
        if issubclass(op_type, base):
            return join
    return _skip


#: op type -> its join (:func:`_join_of`)
_JOINS: dict[type, object] = {}
