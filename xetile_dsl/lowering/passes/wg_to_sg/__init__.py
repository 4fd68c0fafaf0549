"""Pass ``xetile-wg-to-sg``: workgroup-level XeTile (``wg_map``) -> one subgroup's share.

The distribution is the XeTile RFC's ("Workgroup Level XeTile extension"):

* subgroup ids are laid out row-major over ``sg_layout``: subgroup ``s`` sits at
  ``(s // sg_layout[1], s % sg_layout[1])``;
* per dimension, the tile is dealt to the subgroups in ``sg_data`` pieces, round-robin:
  when ``sg_layout * sg_data`` is smaller than the tile, subgroup ``i`` owns pieces
  ``i, i + sg_layout, ...`` (several sub-tiles); when it is larger, the assignment wraps
  around the tile and the remaining subgroups share the same data (piece offset
  ``(i * sg_data) mod size``).

Every workgroup-level value becomes the grid of its subgroup-level pieces (1:N).  A
vector's map comes from its producer (the tile it was loaded from, the ``wg_map`` of
``tile_mma``) and is carried through loops; tile_mma derives its operands' maps from its
result map (same sg_layout, sg_data M and N from the result, K from the operands) and
checks them against the producers'.  The function gets ``xetile.num_subgroups``, which
codegen turns into the workgroup size (num_subgroups x subgroup size).

The pass is a package: this module holds the pass and its distributor (tiles, tile_mma,
constants); its parts beside it are the workgroup vector ops (``vectors.py``, with
``conv_rounds.py`` for a tile_conv_layout staged in rounds), the workgroup tile_transpose
(``transpose.py``), the barriers of the SLM exchanges (``exchange_barriers.py``) and the
operand swap the pass runs first (``operand_swap.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ....dialects import xetile
from ....dialects.walk import ops_in
from ....errors import LoweringError
from ....dialects.attributes import LARGE_GRF_ATTR, NUM_SUBGROUPS_ATTR
from ....dialects.types import bit_width
from ....targets import Target, as_target
from ....targets.slm_budget import SlmBudget
from ...analysis import prefetch_plan, register_budget, slm_tiles
from ...analysis.families import Families
from ...analysis.unlowered import reject_unlowered
from ...rewrites import constants
from ...rewrites.rebuild import Rebuilder
from . import operand_swap
from .exchange_barriers import ExchangeBarriers
from .transpose import TransposeDistribution
from .vectors import VectorDistribution
from .vectors import infer as infer_vector_maps



@dataclass(frozen=True)
class XeTileWgToSg(ModulePass):
    """Distribute workgroup-level tiles and tile values among subgroups per wg_map."""

    name = "xetile-wg-to-sg"
    target: Target | str = "pvc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = as_target(self.target)
        reject_unlowered(op, self.name)
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp):
                user_slm = slm_tiles.check_user_slm(fn, target)
                operand_swap.swap_transposed_operands(fn, target)
                maps = _MapInference(fn).run()
                prefetch_plan.plan(fn, target, maps, maps.num_subgroups)
                if maps.by_root:
                    _check_workgroup_size(fn, maps.num_subgroups, target)
                    register_budget.check(fn, target)
                    # compiler exchanges come on top of the user's buffers
                    dist = _Distributor(fn, maps, target, SlmBudget(target, user_slm))
                    dist.run()
                    dist.barriers.allocate_named_barriers()
                    fn.attributes[NUM_SUBGROUPS_ATTR] = IntegerAttr(maps.num_subgroups, 32)
                register_budget.check_subgroup_tiles(fn, target)
                if needs_large_grf(fn, target):
                    fn.attributes[LARGE_GRF_ATTR] = IntegerAttr(1, 1)


def _fmt(m: xetile.WgMapAttr) -> str:
    return f"wg_map(sg_layout={list(m.layout)}, sg_data={list(m.data)})"


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


class _MapInference:
    """Assigns a wg_map to every value family that carries workgroup-level data."""

    def __init__(self, fn: func.FuncOp):
        self.fn = fn
        self.families = Families(fn)
        self.by_root: dict[SSAValue, xetile.WgMapAttr] = {}
        self.num_subgroups = 0

    def map_of(self, v: SSAValue) -> xetile.WgMapAttr | None:
        return self.by_root.get(self.families.find(v))

    def set(self, v: SSAValue, m: xetile.WgMapAttr, op: Operation, what: str) -> None:
        root = self.families.find(v)
        old = self.by_root.get(root)
        if old is not None and old != m:
            raise LoweringError(f"{what} is distributed as {_fmt(m)} here but as {_fmt(old)} by its producer; "
                                f"the maps must agree (convert with tile_conv_layout)", op)
        self.by_root[root] = m

    def run(self) -> "_MapInference":
        for op in ops_in(self.fn):  # tiles carry their map in their type
            for v in op.results:
                if isinstance(v.type, xetile.TileType) and v.type.attr.wg is not None:
                    self.set(v, v.type.attr.wg, op, "this tile")
        for op in ops_in(self.fn):
            if isinstance(op, xetile.LoadTileOp) and (m := self.map_of(op.tile)):
                self.set(op.value, m, op, "the loaded value")
            elif isinstance(op, xetile.TileMMAOp) and op.wg_map_c is not None:
                self.set(op.output, op.wg_map_c, op, "the tile_mma result")
        infer_vector_maps(self)
        for op in ops_in(self.fn):
            if isinstance(op, xetile.TileMMAOp) and op.wg_map_c is not None:
                self._check_mma(op)
            elif isinstance(op, xetile.StoreTileOp) and (m := self.map_of(op.tile)):
                self.set(op.value, m, op, "the stored value")
        infer_vector_maps(self)
        self._check_subgroup_counts()
        return self

    def _check_mma(self, op: xetile.TileMMAOp) -> None:
        """The RFC's derivation: A = (layout, [M_c, K]), B = (layout, [K, N_c]), checked
        against the producers' maps (and the op's explicit wg_map_a/wg_map_b)."""
        c = op.wg_map_c
        k = _shape(op.a)[1]
        ma, mb = self.map_of(op.a), self.map_of(op.b)
        k_data = ma.data[1] if ma else (mb.data[0] if mb else k)
        derived = {"A": xetile.WgMapAttr(c.layout, (c.data[0], k_data)),
                   "B": xetile.WgMapAttr(c.layout, (k_data, c.data[1]))}
        for name, value, explicit in (("A", op.a, op.wg_map_a), ("B", op.b, op.wg_map_b)):
            want = derived[name]
            if explicit is not None and explicit != want:
                raise LoweringError(f"tile_mma: the wg_map given for operand {name}, {_fmt(explicit)}, differs from "
                                    f"the one derived from the result's {_fmt(c)}: {_fmt(want)}", op)
            got = self.map_of(value)
            if got is not None and got != want:
                raise LoweringError(
                    f"tile_mma: operand {name} is distributed as {_fmt(got)}, but the result's {_fmt(c)} needs "
                    f"{_fmt(want)} (same sg_layout, sg_data {'M' if name == 'A' else 'N'} from the result, K "
                    f"shared by A and B)", op)
            self.set(value, want, op, f"tile_mma operand {name}")
        if k_data != k:
            raise LoweringError(f"tile_mma: each subgroup must hold the whole K dimension ({k}) of A and B, but "
                                f"sg_data gives it {k_data}; use sg_data K = {k} (subgroups then share A and B "
                                f"by wrap-around)", op)

    def _check_subgroup_counts(self) -> None:
        counts = {m.layout[0] * m.layout[1]: m for m in self.by_root.values()}
        if len(counts) > 1:
            text = ", ".join(f"{_fmt(m)} -> {n}" for n, m in sorted(counts.items()))
            raise LoweringError(f"every wg_map of a kernel must describe the same number of subgroups "
                                f"(sg_layout[0] * sg_layout[1]); got {text}", self.fn)
        self.num_subgroups = next(iter(counts), 0)


def _pieces(size: int, layout: int, data: int) -> int:
    """Pieces of ``data`` elements one subgroup owns along a dimension of ``size``."""
    return max(1, size // (layout * data))


class _Distributor(Rebuilder):
    """Rebuilds the function with every workgroup-level value split into its pieces: tiles,
    tile_mma and constants here; vector ops and SLM exchanges in ``vectors``
    (vectors.py), transposes in ``transposes`` (transpose.py), the exchanges'
    barriers in ``barriers`` (exchange_barriers.py); ``slm`` is the kernel's SLM budget."""

    lowering_name = "the workgroup-to-subgroup distribution"

    def __init__(self, fn: func.FuncOp, maps: _MapInference, target: Target, slm: SlmBudget):
        super().__init__(fn)
        self.maps, self.target, self.slm = maps, target, slm
        self.sg_id: SSAValue | None = None
        self.coords: dict[tuple[int, int], tuple[SSAValue, SSAValue]] = {}
        self.barriers = ExchangeBarriers(self)
        self.vectors = VectorDistribution(self)
        self.transposes = TransposeDistribution(self)

    def _translate(self, op: Operation) -> None:
        if self.vectors.distribute_vector_op(op):  # element-wise ops at workgroup level
            return
        name = f"_op_{type(op).__name__}"
        handler = getattr(self.vectors, name, None) or getattr(self.transposes, name, None)
        if handler is not None:
            handler(op)
        else:
            super()._translate(op)

    def prologue(self, like: Operation | None) -> None:
        self.top = self.block  # the function's block: subgroup coordinates are emitted there
        self.sg_id = self.emit(gpu.SubgroupIdOp(), like).result
        self.sg_id.name_hint = "sg_id"

    def _coords(self, layout: tuple[int, int], like: Operation) -> tuple[SSAValue, SSAValue]:
        """This subgroup's (row, col) in ``layout`` (ids row-major)."""
        if layout not in self.coords:  # at function level, so that uses after a loop see them too
            saved, self.block = self.block, self.top
            cols = self.const_index(layout[1], like)
            row = self.emit(arith.DivSIOp(self.sg_id, cols), like).result
            col = self.emit(arith.RemSIOp(self.sg_id, cols), like).result
            self.coords[layout] = (row, col)
            self.block = saved
        return self.coords[layout]

    def _sg_shape(self, m: xetile.WgMapAttr, shape) -> tuple[tuple[int, int], tuple[int, int]]:
        """(pieces per dimension, piece shape)."""
        return tuple(_pieces(s, lay, d) for s, lay, d in zip(shape, m.layout, m.data)), tuple(m.data)

    def _piece_offset(self, base: SSAValue, coord: SSAValue, piece: int, size: int, lay: int, dat: int,
                      like: Operation) -> SSAValue:
        """``base + ((coord + piece * lay) * dat) mod size``; the mod only when wrapping."""
        off = self.binary(arith.MuliOp, coord, self.const_index(dat, like), like)
        off = self.add(off, piece * lay * dat, like)
        if lay * dat > size:
            off = self.binary(arith.RemSIOp, off, self.const_index(size, like), like)
        return self.binary(arith.AddiOp, base, off, like)

    # --- tiles ------------------------------------------------------------------------
    def _op_AtomicRMWScalarOp(self, op: xetile.AtomicRMWScalarOp) -> None:
        self._element_atomic(op)

    def _op_AtomicCASScalarOp(self, op: xetile.AtomicCASScalarOp) -> None:
        self._element_atomic(op)

    def _op_FenceOp(self, op: xetile.FenceOp) -> None:
        self._clone(op)  # every subgroup orders its own accesses

    def _element_atomic(self, op) -> None:
        """An element atomic is done once per program: only a workgroup of one subgroup has
        one to do it (codegen/emit/atomic_messages.py)."""
        if self.maps.num_subgroups > 1:
            raise LoweringError(xetile.scalar_atomic_subgroups_error(op.name, self.maps.num_subgroups), op)
        self._clone(op)

    def _op_InitTileOp(self, op: xetile.InitTileOp) -> None:
        t = op.tile.type
        m = self.maps.map_of(op.tile) if t.attr.wg is not None else None  # prefetch_plan may replace it
        if m is None:
            self._clone(op)
            return
        if (dst := self.transposes.folded_map(op.tile)) is not None:  # loaded only into in-place transposes
            self.transposes.init_transposed_view(op, dst)
            return
        shape = t.get_shape()
        (n0, n1), (d0, d1) = self._sg_shape(m, shape)
        attr = t.attr
        sg_type = xetile.TileType([d0, d1], t.element_type, xetile.TileAttr(attr.order_list, attr.blocks, None,
                                                                            attr.memory_space.data))
        r, c = self._coords(m.layout, op)
        o0, o1 = (self.one(v) for v in op.offsets)
        sizes, strides = [self.one(v) for v in op.sizes], [self.one(v) for v in op.strides]
        rows = [self._piece_offset(o0, r, i, shape[0], m.layout[0], d0, op) for i in range(n0)]
        cols = [self._piece_offset(o1, c, j, shape[1], m.layout[1], d1, op) for j in range(n1)]
        self.vmap[op.tile] = [
            self.emit(xetile.InitTileOp(self.one(op.source), [row, col], sg_type, sizes, strides), op).tile
            for row in rows for col in cols]

    def _op_LoadTileOp(self, op: xetile.LoadTileOp) -> None:
        self.vmap[op.value] = [
            self.emit(xetile.LoadTileOp(t, VectorType(op.value.type.element_type, t.type.get_shape()), op.padding),
                      op).value for t in self.vmap[op.tile]]

    def _op_StoreTileOp(self, op: xetile.StoreTileOp) -> None:
        for v, t in zip(self.vmap[op.value], self.vmap[op.tile], strict=True):
            self.emit(xetile.StoreTileOp(v, t), op)

    def _op_PrefetchTileOp(self, op: xetile.PrefetchTileOp) -> None:
        locality = op.locality.value.data if op.locality is not None else None
        for t in self.vmap[op.tile]:
            self.emit(xetile.PrefetchTileOp(t, locality), op)

    def _op_UpdateTileOffsetOp(self, op: xetile.UpdateTileOffsetOp) -> None:
        if self.transposes.folded_map(op.tile) is not None:
            self.transposes.update_transposed_view(op)
            return
        dx, dy = self.one(op.offset_x), self.one(op.offset_y)
        self.vmap[op.result] = [self.emit(xetile.UpdateTileOffsetOp(t, dx, dy), op).result
                                for t in self.vmap[op.tile]]

    # --- vectors ----------------------------------------------------------------------
    def _op_ConstantOp(self, op: arith.ConstantOp) -> None:
        m = self.maps.map_of(op.result)
        t = op.result.type
        if m is None or not isinstance(t, VectorType):
            self._clone(op)
            return
        self.vmap[op.result] = constants.distribute_workgroup(self, op, m)

    def _op_TileMMAOp(self, op: xetile.TileMMAOp) -> None:
        mc = self.maps.map_of(op.output)
        if mc is None:
            self._clone(op)
            return
        (nm, nn), (dm, dn) = self._sg_shape(mc, _shape(op.output))
        a, b = self.vmap[op.a], self.vmap[op.b]
        nk = len(a) // nm
        c = self.vmap[op.c] if op.c is not None else None
        rtype = VectorType(op.output.type.element_type, [dm, dn])
        out = []
        for i in range(nm):
            for j in range(nn):
                acc = c[i * nn + j] if c is not None else None
                for k in range(nk):
                    acc = self.emit(xetile.TileMMAOp(a[i * nk + k], b[k * nn + j], acc, rtype), op).output
                out.append(acc)
        self.vmap[op.output] = out


def _check_workgroup_size(fn: func.FuncOp, num_subgroups: int, target: Target) -> None:
    items = num_subgroups * target.subgroup_size
    if items > target.max_workgroup_size:
        raise LoweringError(f"the wg_maps describe {num_subgroups} subgroups of {target.subgroup_size} lanes = {items} "
                            f"work items per workgroup, but {target.name} runs at most "
                            f"{target.max_workgroup_size}; use an sg_layout with at most "
                            f"{target.max_workgroup_size // target.subgroup_size} subgroups", fn)


def needs_large_grf(fn: func.FuncOp, target: Target) -> bool:
    """Whether the kernel's tile_mma accumulators alone (with their operands, when those
    come from SLM) fill more than half of one subgroup's default register file (then it
    is built in the large-GRF mode)."""
    seen, total = set(), 0
    families = Families(fn)
    for op in ops_in(fn):
        if isinstance(op, xetile.TileMMAOp):
            root = families.find(op.output)
            if root not in seen:
                seen.add(root)
                r, c = _shape(op.output)
                total += r * c * bit_width(op.output.type.element_type) // 8
            if _loads_operands_from_slm(op):  # per-lane SLM reads stage A/B in registers once more
                for v in (op.a, op.b):
                    r, c = _shape(v)
                    total += r * c * bit_width(v.type.element_type) // 8
    return total > target.grf_count * target.grf_bytes // 2


def _loads_operands_from_slm(op: xetile.TileMMAOp) -> bool:
    return any(isinstance(v.owner, xetile.LoadTileOp) and v.owner.tile.type.attr.memory_space.data == 3
               for v in (op.a, op.b))


def check_undistributed_subgroup_tiles(module: ModuleOp, target: Target) -> None:
    """The per-subgroup tile limit (register_budget.check_subgroup_tiles) for a module that
    is not lowered (the interpreter), so that it refuses what the compiled flavours do: a
    kernel without wg_maps holds each value in one subgroup as written; map inference only
    reads the IR."""
    for fn in [f for f in module.ops if isinstance(f, func.FuncOp)]:
        if not _MapInference(fn).run().by_root:
            register_budget.check_subgroup_tiles(fn, target)
