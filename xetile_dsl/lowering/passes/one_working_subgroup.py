"""``xetile-one-working-subgroup``: a kernel without ``wg_map`` launched with
``num_warps=n > 1`` runs ``n`` subgroups per workgroup, of which subgroup 0 does the
kernel's work and the others leave at entry (docs/decisions/045-num-warps-on-kernels-without-wg-map.md).

The kernel's body is moved into ``scf.if subgroup_id == 0`` and the function gets
``xetile.num_subgroups = n`` (codegen's workgroup size, as for a distributed kernel).
Every flavour thus computes what the one-subgroup kernel computes, once per workgroup:
no store, atomic or scalar write runs ``n`` times.  A kernel that calls ``xt.barrier()``
is refused (a LaunchError): the subgroups that left would never reach its barriers.  The pass notes a warning at the
kernel's first line saying that the work was not split.  A kernel with a ``wg_map``,
or a launch without ``num_warps`` (or ``num_warps=1``), is left as it is.

Example: ``python -m xetile_dsl opt -p 'xetile-one-working-subgroup{num_warps=4}' k.mlir``
wraps ``k``'s body in ``scf.if`` on ``gpu.subgroup_id`` and marks 4 subgroups.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from ...dialects.attributes import NUM_SUBGROUPS_ATTR
from ...dialects.xetile import TileType, WgMapAttr
from ...errors import LoweringWarning
from ...launch_options import barrier_refusal, one_working_subgroup_message
from .. import notes


class OneWorkingSubgroupNote(LoweringWarning):
    """A kernel without wg_map launched with num_warps > 1: one subgroup does the work."""


def has_wg_map(fn: func.FuncOp) -> bool:
    """True when some op or tile of ``fn`` carries a wg_map (a workgroup-level kernel)."""
    for op in fn.walk():
        if any(isinstance(v, WgMapAttr) for v in op.properties.values()):
            return True
        if any(isinstance(r.type, TileType) and r.type.attr.wg is not None for r in op.results):
            return True
    return False


@dataclass(frozen=True)
class XeTileOneWorkingSubgroup(ModulePass):
    """Run a kernel without wg_map in subgroup 0 of a ``num_warps``-subgroup workgroup."""

    name = "xetile-one-working-subgroup"
    num_warps: int = 0

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.num_warps <= 1:
            return
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and fn.body.blocks and not has_wg_map(fn):
                if any(isinstance(o, gpu.BarrierOp) for o in fn.walk()):
                    raise barrier_refusal(fn.sym_name.data, self.num_warps)
                _guard_body(fn)
                fn.attributes[NUM_SUBGROUPS_ATTR] = IntegerAttr(self.num_warps, 32)
                first = next((o for o in fn.body.blocks.first.ops), None)
                notes.note(OneWorkingSubgroupNote(one_working_subgroup_message(fn.sym_name.data, self.num_warps),
                                                  first))


def _guard_body(fn: func.FuncOp) -> None:
    """Move every op of the kernel's entry block but its return into ``scf.if
    subgroup_id == 0`` (a kernel returns nothing; an early return inside is already an
    ``scf.if`` of the frontend)."""
    entry = fn.body.blocks.first
    ret = entry.last_op
    inner = Block()
    for o in list(entry.ops):
        if o is ret:
            break
        o.detach()
        inner.add_op(o)
    inner.add_op(scf.YieldOp())
    sg = gpu.SubgroupIdOp()
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    first = arith.CmpiOp(sg.result, zero.result, "eq")
    guard = scf.IfOp(first.result, [], Region(inner), Region(Block([scf.YieldOp()])))
    for o in (sg, zero, first, guard):
        entry.insert_op_before(o, ret)
    loc = getattr(inner.first_op, "location", None)
    if loc is not None:
        for o in (sg, zero, first, guard):
            o.location = loc
