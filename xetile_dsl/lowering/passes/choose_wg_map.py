"""``xetile-choose-wg-map``: a kernel without any ``wg_map`` launched with ``num_warps=n > 1``
gets wg_maps chosen by the compiler, so that its ``n`` subgroups split the work
(docs/decisions/048-compiler-chosen-wg-map.md).

The mapping rule.  One ``sg_layout [a, b]`` (``a * b = n``) for the whole kernel; each 2-D
tile and tile value gets ``sg_data`` by its role:

* **GEMM** (the kernel has a ``tile_mma``): ``[a, b]`` cuts the ``tile_mma`` result ``C``
  (``M x N``) into ``a x b`` pieces of ``M/a x N/b``, each a whole number of DPAS blocks
  (the target's DPAS repeat count by its N: ``8 x 16`` on pvc, ``8 x 8`` on arc).  Among
  the layouts that do, the one whose piece is the most square (the least A and B each
  subgroup loads), more rows split on a tie.  Operand A (and what it is loaded from) is
  ``[M/a, K]``: split by rows, shared by the ``b`` subgroups of a row; operand B
  ``[K, N/b]``: split by columns, shared by the ``a`` subgroups of a column; everything
  else (the accumulator, its epilogue, the C tile) ``[R/a, C/b]``.
* **No tile_mma** (element-wise and row kernels): ``[n, 1]``, every tile split by rows
  (``[R/n, C]``: a row reduction stays in one subgroup); when a stored tile's rows do not
  split, ``[1, n]`` (columns).
* A tile dimension smaller than its share of the layout (a ``[1, C]`` row broadcast over
  rows, a mask's column indices) is held whole by every subgroup.  A stored tile must be
  split exactly (no two subgroups write one element); a prefetch-only tile takes the role
  of a loaded tile of the same array and shape.

The pass keeps the first layout that the distribution (``xetile-wg-to-sg``) and the
blocking accept on a copy of the kernel.  It leaves a kernel it cannot split as it is,
with the reason in ``xetile.unsplit`` for ``xetile-one-working-subgroup`` (the decision-045
fallback: subgroup 0 does the work, with a warning naming the reason): a barrier, SLM,
atomics, masked or scattered (per-lane) accesses, element (scalar) stores, the subgroup
id, transposes and layout conversions, an array read through one tile and written
through another (one subgroup could read what another wrote), shapes no layout divides.

Example: ``python -m xetile_dsl opt -p 'xetile-choose-wg-map{num_warps=4}' gemm.mlir``
gives a 32x32 GEMM's tiles ``sg_layout = [2, 2]`` (A ``sg_data = [16, K]``, B ``[K, 16]``,
C ``[16, 16]``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, gpu, memref, vector
from xdsl.dialects.builtin import ModuleOp, StringAttr, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...dialects import make_context, retype, xetile
from ...dialects.attributes import UNSPLIT_ATTR
from ...dialects.walk import ops_in
from ...errors import LoweringError
from ...targets import Target, as_target
from ...dialects.types import bit_width, type_name
from ..analysis import prefetch_plan
from ..analysis.families import Families
from .. import notes
from ..analysis.op_kinds import is_elementwise
from .blocking import XeTileBlocking
from .one_working_subgroup import has_wg_map
from .sg_transpose import XeTileSgTranspose
from .wg_to_sg import XeTileWgToSg

#: the xetile ops a chosen distribution handles (others keep the kernel in one subgroup)
_TILE_OPS = (xetile.InitTileOp, xetile.LoadTileOp, xetile.StoreTileOp, xetile.PrefetchTileOp,
             xetile.UpdateTileOffsetOp, xetile.TileMMAOp, xetile.TileReduceOp, xetile.TileBroadcastOp,
             xetile.ExternElementwiseOp)
#: roles: which dimensions of a value the layout splits (rows by a, columns by b)
_SPLITS = {"A": (True, False), "B": (False, True), "C": (True, True)}


@dataclass(frozen=True)
class XeTileChooseWgMap(ModulePass):
    """Give a kernel without wg_map the wg_maps that split it among ``num_warps`` subgroups."""

    name = "xetile-choose-wg-map"
    num_warps: int = 0
    target: Target | str = "pvc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.num_warps <= 1:
            return
        target = as_target(self.target)
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and fn.body.blocks and not has_wg_map(fn):
                reason = choose(op, fn, self.num_warps, target)
                if reason is not None:
                    fn.attributes[UNSPLIT_ATTR] = StringAttr(reason)


def choose(module: ModuleOp, fn: func.FuncOp, n: int, target: Target) -> str | None:
    """Give ``fn`` (a function of ``module``) the first wg_maps of ``n`` subgroups that the
    distribution accepts; None when it did, else why it was left as it is."""
    reason = unsplittable(fn)
    if reason is not None:
        return reason
    roles = _Roles(fn)
    if roles.conflict:
        return roles.conflict
    layouts, why_none = _candidates(fn, n, target)
    if not layouts:
        return why_none
    first_reason = None
    for layout in layouts:
        maps = roles.maps(layout, target)
        if isinstance(maps, str):
            first_reason = first_reason or maps
            continue
        trial = module.clone()
        trial_fn = next(f for f in trial.ops if isinstance(f, func.FuncOp) and f.sym_name == fn.sym_name)
        trial_roles = _Roles(trial_fn)
        _assign(trial_fn, trial_roles, trial_roles.maps(layout, target))
        with notes.collecting():   # the trial's notes are the real compile's to give
            refused = _refused(trial, target)
        if refused is None:
            _assign(fn, roles, maps)
            return None
        first_reason = first_reason or f"sg_layout {list(layout)}: {refused}"
    return first_reason


def unsplittable(fn: func.FuncOp) -> str | None:
    """Why no chosen wg_map can split ``fn`` (an op the distribution would have to repeat
    or cannot cut), else None."""
    for op in ops_in(fn):
        why = _op_reason(op)
        if why is not None:
            return why
    return _read_and_written(fn)


def _op_reason(op: Operation) -> str | None:
    if isinstance(op, gpu.BarrierOp):
        return "it calls xt.barrier()"
    if isinstance(op, (gpu.SubgroupIdOp, gpu.ThreadIdOp, gpu.LaneIdOp)):
        return f"it reads its {op.name.split('.')[1].replace('_', ' ')}"
    if isinstance(op, memref.StoreOp):
        return "it stores an array element (x[i] = v), which every subgroup would repeat"
    if isinstance(op, (memref.AllocOp, memref.AllocaOp)) or any(
            isinstance(r.type, xetile.TileType) and r.type.attr.in_slm for r in op.results):
        return "it uses shared local memory"
    if isinstance(op, xetile.InitTileOp) and op.tile.type.attr.is_scattered:
        return "it has a masked or per-lane (scattered) access"
    if op.name.startswith("xetile."):
        if isinstance(op, _TILE_OPS):
            return None
        what = "an atomic" if "atomic" in op.name or isinstance(op, xetile.FenceOp) else op.name
        return f"it uses {what}, which the chosen distribution does not split"
    if op.name.startswith("vector.") and not isinstance(op, vector.BroadcastOp):
        return f"it uses {op.name}"
    for v in list(op.results) + list(op.operands):
        if isinstance(v.type, VectorType) and len(v.type.get_shape()) != 2:
            return f"{op.name} has a {len(v.type.get_shape())}-D value"
    return None


def _read_and_written(fn: func.FuncOp) -> str | None:
    """An array read through a tile (or element) other than the one it is written
    through: one subgroup's read could see another's write, which one subgroup would
    have ordered."""
    families = Families(fn)
    stored: dict[SSAValue, set] = {}
    for op in ops_in(fn):
        if isinstance(op, xetile.StoreTileOp):
            init = _init_of(op.tile, families, fn)
            stored.setdefault(init.source if init else None, set()).add(_tile_key(init, families, op.tile))
    for op in ops_in(fn):
        if isinstance(op, xetile.LoadTileOp):
            init = _init_of(op.tile, families, fn)
            source = init.source if init else None
            if source in stored and _tile_key(init, families, op.tile) not in stored[source]:
                return f"it reads array '{_name(source)}' through a tile other than the one it writes it through"
        elif isinstance(op, memref.LoadOp) and op.memref in stored:
            return f"it reads an element of array '{_name(op.memref)}', which it writes"
    return None


def _init_of(tile: SSAValue, families: Families, fn: func.FuncOp) -> xetile.InitTileOp | None:
    root = families.find(tile)
    for op in ops_in(fn):
        if isinstance(op, xetile.InitTileOp) and families.find(op.tile) is root:
            return op
    return None


def _tile_key(init, families: Families, tile: SSAValue):
    """One key per tile family, or per init_tile operands (two tiles made alike)."""
    if init is None:
        return families.find(tile)
    return (tuple(init.operands), tuple(init.tile.type.get_shape()))


def _name(v: SSAValue | None) -> str:
    return (v.name_hint or "?") if v is not None else "?"


class _Roles:
    """Each 2-D tile or vector value's role (A, B or C) in groups of values that share
    one map: families (loops, offset updates, accumulators), a tile and what is loaded
    from or stored to it, the operands and results of element-wise ops."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.families = Families(fn)
        self.parent: dict[SSAValue, SSAValue] = {}
        self.role: dict[SSAValue, str] = {}
        self.stored: set[SSAValue] = set()
        self.conflict: str | None = None
        self.values: list[SSAValue] = []
        for op in ops_in(fn):
            self._join(op)
            self.values += [v for v in op.results if _is_2d(v)]
            for region in op.regions:
                for block in region.blocks:
                    self.values += [a for a in block.args if _is_2d(a)]
        self._propagate()

    def find(self, v: SSAValue) -> SSAValue:
        root = self.families.find(v)
        while self.parent.get(root, root) is not root:
            root = self.parent[root]
        return root

    def union(self, a: SSAValue, b: SSAValue) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb

    def _join(self, op: Operation) -> None:
        if isinstance(op, (xetile.LoadTileOp, xetile.StoreTileOp)):
            value = op.value
            self.union(op.tile, value)
            if isinstance(op, xetile.StoreTileOp):
                self.stored.add(op.tile)
        elif is_elementwise(op):
            vecs = [v for v in list(op.operands) + list(op.results) if isinstance(v.type, VectorType)]
            for v in vecs[1:]:
                self.union(vecs[0], v)

    def _set(self, v: SSAValue, role: str, op: Operation) -> None:
        root = self.find(v)
        old = self.role.get(root)
        if old is not None and old != role and not self.conflict:
            self.conflict = (f"a value is both {_ROLE_WORDS[old]} and {_ROLE_WORDS[role]} of a tile_mma "
                             f"(line {_line(op)})")
        self.role.setdefault(root, role)

    def _propagate(self) -> None:
        for op in ops_in(self.fn):
            if isinstance(op, xetile.TileMMAOp):
                self._set(op.a, "A", op)
                self._set(op.b, "B", op)
                self._set(op.output, "C", op)
        for _ in range(4):   # reductions and broadcasts keep their source's role
            for op in ops_in(self.fn):
                if isinstance(op, (xetile.TileReduceOp, xetile.TileBroadcastOp)):
                    src, res = self.role.get(self.find(op.source)), self.role.get(self.find(op.result))
                    if src and not res:
                        self._set(op.result, src, op)
                    elif res and not src:
                        self._set(op.source, res, op)
        self._prefetch_roles()

    def _prefetch_roles(self) -> None:
        """A tile only prefetched takes the role of a loaded tile of the same array and shape."""
        loaded = {}
        for op in ops_in(self.fn):
            if isinstance(op, xetile.InitTileOp) and (role := self.role.get(self.find(op.tile))):
                loaded.setdefault((op.source, tuple(op.tile.type.get_shape())), role)
        for op in ops_in(self.fn):
            if isinstance(op, xetile.InitTileOp) and self.find(op.tile) not in self.role:
                role = loaded.get((op.source, tuple(op.tile.type.get_shape())))
                if role:
                    self.role[self.find(op.tile)] = role

    def maps(self, layout: tuple[int, int], target: Target) -> dict[SSAValue, xetile.WgMapAttr] | str:
        """root -> map under ``layout``, or why a value cannot take one.  A tile only
        prefetched takes the prefetch plan's map (one 2D block message per subgroup,
        no data twice) where there is one."""
        stored_roots = {self.find(t) for t in self.stored}
        out: dict[SSAValue, xetile.WgMapAttr] = {}
        n = layout[0] * layout[1]
        if target.has_2d_block_io:
            for init in prefetch_plan.prefetch_only_tiles(self.fn, self.families).values():
                t = init.tile.type
                best = prefetch_plan.best_map(target, tuple(t.get_shape()), bit_width(t.element_type), n)
                if best is not None:
                    out[self.find(init.tile)] = best
        planned = set(out)
        for v in self.values:
            root = self.find(v)
            if root in planned:
                continue
            shape = tuple(v.type.get_shape())
            split = _SPLITS[self.role.get(root, "C")]
            data = []
            for size, parts, cut in zip(shape, layout, split):
                if not cut or parts == 1 or (size < parts and root not in stored_roots):
                    data.append(size)          # whole: every subgroup of the layout's row/column holds it
                elif size % parts:
                    return (f"sg_layout {list(layout)}: a {'x'.join(map(str, shape))} "
                            f"{'stored ' if root in stored_roots else ''}tile does not split into {parts} "
                            f"pieces along a dimension of {size}")
                else:
                    data.append(size // parts)
            m = xetile.WgMapAttr(layout, tuple(data))
            if out.setdefault(root, m) != m:
                return f"sg_layout {list(layout)}: values of one family have different shapes"
        return out


_ROLE_WORDS = {"A": "operand A", "B": "operand B", "C": "the accumulator"}


def _is_2d(v: SSAValue) -> bool:
    t = v.type
    return isinstance(t, (xetile.TileType, VectorType)) and len(t.get_shape()) == 2


def _line(op: Operation) -> int:
    return getattr(getattr(getattr(op, "location", None), "line", None), "data", 0)


def _candidates(fn: func.FuncOp, n: int, target: Target) -> tuple[list[tuple[int, int]], str | None]:
    """The layouts to try, best first, or none and why."""
    mmas = [op for op in ops_in(fn) if isinstance(op, xetile.TileMMAOp)]
    pairs = [(n >> i, 1 << i) for i in range(int(math.log2(n)) + 1)]   # (a, b), a * b = n, most rows first
    if not mmas:
        return [(n, 1), (1, n)], None
    kept = []
    for a, b in pairs:
        if all(_whole_blocks(op, a, b, target) for op in mmas):
            kept.append((a, b))
    if not kept:
        m, nn = mmas[0].output.type.get_shape()
        cfg = target.dpas_for(*(type_name(v.type.element_type) for v in (mmas[0].a, mmas[0].b)))
        blocks = f"{cfg.m}x{cfg.n}" if cfg is not None else "DPAS"
        return [], (f"its tile_mma result {m}x{nn} does not split into {n} pieces of whole {blocks} DPAS blocks "
                    f"on {target.name}")
    m, nn = mmas[0].output.type.get_shape()
    kept.sort(key=lambda ab: (abs(math.log2(m / ab[0]) - math.log2(nn / ab[1])), -ab[0]))
    return kept, None


def _whole_blocks(op: xetile.TileMMAOp, a: int, b: int, target: Target) -> bool:
    m, n = op.output.type.get_shape()
    cfg = target.dpas_for(type_name(op.a.type.element_type), type_name(op.b.type.element_type))
    if cfg is None or m % a or n % b:
        return False
    return (m // a) % cfg.m == 0 and (n // b) % cfg.n == 0


def _assign(fn: func.FuncOp, roles: "_Roles", maps: dict[SSAValue, xetile.WgMapAttr]) -> None:
    """Put each group's map (``maps``: group root -> map) on its tiles' types and on the
    tile_mma, tile_reduce and tile_broadcast ops (vectors take theirs from these in the
    distribution)."""
    for v in roles.values:
        if isinstance(v.type, xetile.TileType):
            a = v.type.attr
            retype(v, xetile.TileType(v.type.get_shape(), v.type.element_type,
                                      xetile.TileAttr(a.order_list, a.blocks, maps[roles.find(v)],
                                                      a.memory_space.data, a.is_scattered)))
    for op in ops_in(fn):
        if isinstance(op, (xetile.TileMMAOp, xetile.TileReduceOp, xetile.TileBroadcastOp)):
            result = op.output if isinstance(op, xetile.TileMMAOp) else op.result
            op.properties["wg_map"] = maps[roles.find(result)]


def _refused(module: ModuleOp, target: Target) -> str | None:
    """The distribution's and blocking's objection to ``module``'s maps, else None."""
    ctx = make_context()
    try:
        for p in (XeTileWgToSg(target=target), XeTileSgTranspose(target=target), XeTileBlocking(target=target)):
            p.apply(ctx, module)
        module.verify()
    except LoweringError as exc:
        return str(exc).split("\n")[0]
    except Exception as exc:  # noqa: BLE001 - a distribution the passes cannot build is one not chosen
        return f"{type(exc).__name__}: {exc}".split("\n")[0]
    return None
