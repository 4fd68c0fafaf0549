"""Pass ``xetile-prefetch-stages``: the prefetch distance of K loops from ``num_stages``.

A K loop (an ``scf.for`` whose body holds a ``tile_mma``) that prefetches a tile ahead of
the loads it serves is written as in the XeTile RFC's GEMMs::

    ta = init_tile(a, [m, 0], ...)              # the loaded tile
    pa = init_tile(a, [m, PF * BK], ...)        # the prefetched tile, PF steps ahead
    for k ...:
        load_tile(ta); prefetch_tile(pa); ...
        ta = update_tile_offset(ta, 0, BK)
        pa = update_tile_offset(pa, 0, BK)

With ``num_stages = s`` (the launch option) every such prefetch runs ``s - 1`` steps ahead:
its tile's starting offset along the moving dimension becomes the loaded tile's plus
``(s - 1)`` steps (``s = 1``: the prefetch reads the step's own tile, no look-ahead).  A
prefetched tile qualifies when it is a loop-carried ``init_tile`` that the body prefetches
and moves by constant offsets along one dimension, and a loaded tile of the same loop,
from the same array, moves by the same offsets, starts at the same offset in the other
dimension and at a constant one in the moving dimension, as the prefetch does; anything
else is left as written (a debug-level log record says so).  ``num_stages = 0`` (the
default, no option given) changes nothing.

It runs first, on the user's workgroup- or subgroup-level tiles: one offset per tile,
before the distribution and blocking make several of each.  Prefetches read nothing into
registers, so results do not change; the loads and the DPAS are untouched.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from ...dialects import xetile
from ...dialects.walk import ops_in

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class XeTilePrefetchStages(ModulePass):
    """Set the prefetch distance of K loops to ``num_stages - 1`` steps (module docstring)."""

    name = "xetile-prefetch-stages"
    num_stages: int = 0   # 0: keep the kernel's own distances

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.num_stages < 1:
            return
        for fn in op.ops:
            if not isinstance(fn, func.FuncOp):
                continue
            for loop in [o for o in ops_in(fn) if isinstance(o, scf.ForOp)]:
                if any(isinstance(o, xetile.TileMMAOp) for o in loop.body.block.ops):
                    _set_distances(loop, self.num_stages - 1)


@dataclass(frozen=True)
class _Carried:
    """A loop-carried tile: its position among the iter_args, its ``init_tile``, its
    per-step move (rows, columns) and its starting offsets (an int where constant)."""

    index: int
    init: xetile.InitTileOp
    step: tuple[int, int]
    offsets: tuple


def _set_distances(loop: scf.ForOp, distance: int) -> None:
    """Give each qualifying prefetch of ``loop`` the distance ``distance`` (in steps)."""
    carried = {i: c for i in range(len(loop.iter_args)) if (c := _carried(loop, i)) is not None}
    prefetched = {i for i in carried if loop.body.block.args[i + 1] in _used_by(loop, xetile.PrefetchTileOp)}
    loaded = {i for i in carried if loop.body.block.args[i + 1] in _used_by(loop, xetile.LoadTileOp)}
    for i in sorted(prefetched):
        lead = next((carried[j] for j in sorted(loaded) if j != i and _leads(carried[j], carried[i])), None)
        if lead is None:
            _log.debug("xetile-prefetch-stages: a prefetch of %s is left at its own distance (no loaded tile of the "
                       "same array moving with it from a constant offset)", loop.name)
            continue
        _move_start(loop, carried[i], lead, distance)


def _used_by(loop: scf.ForOp, kind) -> set[SSAValue]:
    return {o.tile for o in loop.body.block.ops if isinstance(o, kind)}


def _carried(loop: scf.ForOp, i: int) -> _Carried | None:
    """The loop-carried tile at iter_arg ``i`` when it qualifies (module docstring)."""
    init = loop.iter_args[i].owner
    arg = loop.body.block.args[i + 1]
    if not isinstance(init, xetile.InitTileOp) or init.tile.type.attr.is_scattered or len(init.offsets) != 2:
        return None
    moved = loop.body.block.last_op.operands[i].owner
    if not isinstance(moved, xetile.UpdateTileOffsetOp) or moved.tile is not arg or moved.const_offsets is not None:
        return None
    step = tuple(_constant(v) for v in moved.offset_values())
    if len(step) != 2 or None in step or sum(1 for s in step if s) != 1:
        return None
    return _Carried(i, init, step, tuple(_constant(v) if _constant(v) is not None else v for v in init.offsets))


def _leads(load: _Carried, pf: _Carried) -> bool:
    """Whether loaded tile ``load`` is the one prefetch ``pf`` runs ahead of."""
    if load.init.source is not pf.init.source or load.step != pf.step:
        return False
    dim = 0 if pf.step[0] else 1
    other = 1 - dim
    same_other = load.offsets[other] is pf.offsets[other] or (
        isinstance(load.offsets[other], int) and load.offsets[other] == pf.offsets[other])
    return same_other and isinstance(load.offsets[dim], int) and isinstance(pf.offsets[dim], int)


def _move_start(loop: scf.ForOp, pf: _Carried, lead: _Carried, distance: int) -> None:
    """Start the prefetched tile ``distance`` steps after ``lead``: a copy of its
    ``init_tile`` before the loop with the new offset, carried in its place."""
    dim = 0 if pf.step[0] else 1
    start = lead.offsets[dim] + distance * pf.step[dim]
    if start == pf.offsets[dim]:
        return
    const = arith.ConstantOp(IntegerAttr(start, IndexType()))
    init = pf.init.clone()
    init.operands[1 + dim] = const.result    # operands: the source, then the two offsets
    loop.parent_block().insert_ops_before([const, init], loop)
    loop.operands[len(loop.operands) - len(loop.iter_args) + pf.index] = init.tile
    if not pf.init.tile.uses:
        pf.init.parent_block().erase_op(pf.init)


def _constant(value: SSAValue) -> int | None:
    """The int of an ``arith.constant`` index value, else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None
