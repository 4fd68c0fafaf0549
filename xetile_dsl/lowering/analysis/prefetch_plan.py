"""Prefetch planning (part of ``xetile-wg-to-sg``): a workgroup tile that is only
prefetched may be dealt to the subgroups in block-friendly pieces, whatever its wg_map.

A prefetch is a hint (it changes no result), so the compiler may choose who prefetches
what.  The user's map can make that expensive: ``gemm_wg_kernel``'s B prefetch map
``sg_layout [32, 1], sg_data [1, 256]`` gives each subgroup one 256-element row, which
no 2D block prefetch covers (at most 64 bytes wide): 8 one-row messages per subgroup and
K step (measured with ocloc).  A map that also repeats data (``sg_layout * sg_data``
larger than the tile) has subgroups prefetch the same lines twice.

Here a tile whose family only initialises, moves and prefetches gets, on a target with
2D block prefetches, the ``sg_layout`` (same subgroup count) whose piece is one legal
prefetch message covering the tile exactly once, the widest such message first (a full
64-byte row is one cache line).  When the user's map is not already one message per
subgroup without repeats, it is replaced and a located :class:`PrefetchPlanNote` says so.
"""
from __future__ import annotations

from xdsl.dialects import func, scf
from xdsl.ir import SSAValue

from ...dialects import xetile
from ...dialects.walk import ops_in
from ...errors import PrefetchPlanNote
from ...dialects.types import bit_width
from ...targets import Target
from .. import notes
from .families import Families


def plan(fn: func.FuncOp, target: Target, maps, num_subgroups: int) -> None:
    """Replace, in ``maps`` (wg_to_sg's map inference), the map of every prefetch-only
    tile that a block-friendly distribution serves with fewer messages (module docstring)."""
    if not target.has_2d_block_io or num_subgroups < 1:
        return
    families = Families(fn)
    for root, init in prefetch_only_tiles(fn, families).items():
        old = maps.by_root.get(root)
        if old is None:
            continue
        t = init.tile.type
        shape, bits = tuple(t.get_shape()), bit_width(t.element_type)
        if _one_message_each(target, shape, bits, old):
            continue
        new = best_map(target, shape, bits, num_subgroups)
        if new is None:
            continue
        maps.by_root[root] = new
        notes.note(PrefetchPlanNote(
            f"this tile is only prefetched: its {_fmt(old)} gives each subgroup "
            f"{_messages_text(target, shape, bits, old)}; the compiler prefetches it as {_fmt(new)} instead, one "
            f"{new.data[0]}x{new.data[1]} 2D block message per subgroup and no data twice (a prefetch is a hint, so "
            f"results do not change); write that wg_map to silence this note", init))


def _fmt(m: xetile.WgMapAttr) -> str:
    return f"wg_map(sg_layout={list(m.layout)}, sg_data={list(m.data)})"


def prefetch_only_tiles(fn: func.FuncOp, families: Families) -> dict[SSAValue, xetile.InitTileOp]:
    """Family root -> its init_tile, for tile families used only to prefetch."""
    inits, prefetched, other = {}, set(), set()
    for op in ops_in(fn):
        for v in list(op.operands) + list(op.results):
            if not isinstance(v.type, xetile.TileType):
                continue
            root = families.find(v)
            if isinstance(op, xetile.InitTileOp):
                inits[root] = op
            elif isinstance(op, xetile.PrefetchTileOp):
                prefetched.add(root)
            elif not isinstance(op, (xetile.UpdateTileOffsetOp, scf.ForOp, scf.YieldOp, scf.IfOp)):
                other.add(root)
    return {r: op for r, op in inits.items() if r in prefetched and r not in other
            and op.tile.type.attr.memory_space.data == 0 and op.tile.type.attr.order_list == (1, 0)}


def _message(target: Target, bits: int, rows: int, cols: int):
    """The widest legal prefetch message of exactly ``rows x cols`` elements, or None."""
    for count in (4, 2, 1):
        if cols % count == 0 and target.find_block2d("prefetch", bits, rows, cols // count, count) is not None:
            return rows, cols // count, count
    return None


def _one_message_each(target: Target, shape, bits: int, m: xetile.WgMapAttr) -> bool:
    exact = all(lay * dat == s for s, lay, dat in zip(shape, m.layout, m.data))
    return exact and _message(target, bits, *m.data) is not None


def _messages_text(target: Target, shape, bits: int, m: xetile.WgMapAttr) -> str:
    repeats = any(lay * dat > s for s, lay, dat in zip(shape, m.layout, m.data))
    what = f"a {m.data[0]}x{m.data[1]} piece"
    if _message(target, bits, *m.data) is None:
        what += " that no single 2D block prefetch covers"
    return what + (" and several subgroups prefetch the same data" if repeats else "")


def best_map(target: Target, shape, bits: int, subgroups: int) -> xetile.WgMapAttr | None:
    """The sg_layout with one legal message per subgroup, widest message first."""
    best, best_key = None, None
    for l0 in (d for d in range(1, subgroups + 1) if subgroups % d == 0):
        l1 = subgroups // l0
        if shape[0] % l0 or shape[1] % l1:
            continue
        rows, cols = shape[0] // l0, shape[1] // l1
        if _message(target, bits, rows, cols) is None:
            continue
        key = (cols * bits, -rows)
        if best_key is None or key > best_key:
            best, best_key = xetile.WgMapAttr((l0, l1), (rows, cols)), key
    return best
