"""The barriers of the SLM exchanges in ``xetile-wg-to-sg``: a named barrier per group of
subgroups where the exchange stays inside independent groups and the target has the ids,
else the workgroup barrier ``gpu.barrier``.

For groups ``(sg // step) mod count`` of ``size`` subgroups (sg_groups.py), the function's
block gets, once per distinct grouping::

    %nb_id = arith.index_cast (sg_id / step mod count + base) : index to i8
    %nb_count = arith.constant size : i8
    %nb = xegpu.init_nbarrier %nb_id, %nb_count : i8, i8 -> !xegpu.nbarrier

and each barrier of an exchange with that grouping is ``xegpu.nbarrier_arrive %nb`` and
``xegpu.nbarrier_wait %nb`` (every member signals and waits: the symmetric use codegen
compiles).  Ids are ``Target.named_barrier_ids()`` (1 .. 31 on pvc; 0 is the workgroup
barrier); groupings are numbered in the order the exchanges appear,
and ``xegpu.alloc_nbarrier`` at the top of the function counts every id handed out.
"""
from __future__ import annotations

from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Operation, SSAValue

from ....dialects import xegpu
from ...analysis import sg_groups
from ...analysis.sg_groups import Groups, Region

I8 = IntegerType(8)


class ExchangeBarriers:
    """The barriers of one distribution's exchanges; ``d`` is the wg-to-sg distributor
    (its ``emit``, ``const_index``, ``sg_id``, ``top``, ``target``, ``maps``)."""

    def __init__(self, d):
        self.d = d
        #: subgroup grouping -> its named barrier (in the function's block)
        self.named_barriers: dict[Groups, SSAValue] = {}

    def exchange_groups(self, buffer_shape, writes: Region, reads: Region) -> Groups | None:
        """The groups an exchange's barriers may be limited to (None: the whole workgroup)."""
        return sg_groups.exchange_groups(self.d.maps.num_subgroups, buffer_shape, writes, reads)

    def exchange_barrier(self, like: Operation, groups: Groups | None) -> None:
        """A barrier ordering an exchange among ``groups`` (a workgroup barrier when None,
        or when the target has no named barriers left for them)."""
        barrier = self._named_barrier(groups, like) if groups is not None else None
        if barrier is None:
            self.d.emit(gpu.BarrierOp(), like)
            return
        self.d.emit(xegpu.NbarrierArriveOp(barrier), like)
        self.d.emit(xegpu.NbarrierWaitOp(barrier), like)

    def _named_barrier(self, groups: Groups, like: Operation) -> SSAValue | None:
        known = self.named_barriers
        if groups not in known:
            ids = self.d.target.named_barrier_ids()
            base = ids.start + sum(g.count for g in known)
            if base + groups.count - 1 not in ids:
                return None  # the target's ids are used up (or it has none)
            known[groups] = self._init_nbarrier(groups, base, like)
        return known[groups]

    def _init_nbarrier(self, groups: Groups, base: int, like: Operation) -> SSAValue:
        """``init_nbarrier`` of this subgroup's group, in the function's block."""
        saved, self.d.block = self.d.block, self.d.top
        group = self.d.sg_id
        if groups.step > 1:
            group = self.d.emit(arith.DivSIOp(group, self.d.const_index(groups.step, like)), like).result
        if groups.step * groups.count < self.d.maps.num_subgroups:
            group = self.d.emit(arith.RemSIOp(group, self.d.const_index(groups.count, like)), like).result
        if group is not self.d.sg_id:
            group.name_hint = "nb_group"
        index = self.d.emit(arith.AddiOp(group, self.d.const_index(base, like)), like).result
        nb_id = self.d.emit(arith.IndexCastOp(index, I8), like).result
        nb_id.name_hint = "nb_id"
        count = self.d.emit(arith.ConstantOp(IntegerAttr(groups.size, I8)), like).result
        count.name_hint = "nb_count"
        barrier = self.d.emit(xegpu.InitNbarrierOp(nb_id, count), like).result
        barrier.name_hint = "nb"
        self.d.block = saved
        return barrier

    def allocate_named_barriers(self) -> None:
        """``xegpu.alloc_nbarrier <ids handed out>`` first in the function."""
        known = self.named_barriers
        if known:
            first = self.d.fn.body.block.first_op
            alloc = xegpu.AllocNbarrierOp(sum(g.count for g in known))
            alloc.location = first.location if first is not None else alloc.location
            self.d.fn.body.block.insert_op_before(alloc, first)
