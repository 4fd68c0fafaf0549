"""Pass ``xetile-sg-transpose``: subgroup-level ``tile_transpose`` (no ``wg_map``).

Runs after ``xetile-wg-to-sg`` (which lowers every workgroup-level transpose, or leaves
per-piece subgroup transposes for the register path), before blocking. Three lowerings,
chosen per op in this order:

* **In the load.** When the source is a ``load_tile`` whose tile family (init_tile,
  update_tile_offset, loop-carried) is a global tile loaded only into such transposes
  (with or without a padding, which the transposed load keeps),
  the tile becomes the transposed view of the same memory: an ``order = [0, 1]`` tile
  with swapped shape, offsets, sizes and strides (static memrefs: a
  ``memref.reinterpret_cast`` to strides ``[1, cols]``), update deltas swapped; an
  ``order = [0, 1]`` tile flips back to the row-major tile of its array. The
  load then yields the transpose directly (lowering/rewrites/transposed_tiles.py: ``load_nd {transpose}``,
  on PVC transposed 32-bit 2D block reads, VNNI for free for a 16-bit operand B).
* **In registers** (lowering/rewrites/register_transpose.py): a computed value (or a tile also used
  untransposed) whose dims are multiples of the subgroup size, with 16/32-bit elements,
  at most half the default register file, neither side operand A of a tile_mma: the op
  is kept; blocking and the XeGPU conversion cut it into ``lanes x lanes`` squares, each
  a ``vector.transpose``, which the SIMT pass turns into ``xegpu.lane_transpose`` (lane
  shuffles).
* **Through SLM** (any other computed value or tile also used untransposed): the value is
  stored row-major into an SLM buffer of its shape and read back through a column-major
  view of that buffer (``order = [0, 1]`` SLM tile), as wg_to_sg/transpose.py does for
  workgroups. Each subgroup has its own slice: the buffer stacks ``num_subgroups``
  source shapes and subgroup ``s`` uses rows ``s * R`` on (a kernel without wg_map runs
  one subgroup per workgroup: the whole buffer). A workgroup barrier (with one subgroup,
  a subgroup-wide one) orders the lanes' stores before the transposed reads, and inside
  a loop one more barrier orders the previous iteration's reads before the stores.

8-bit values, shapes that are not multiples of the subgroup size, values larger than half
the register file and operand A sides take the SLM path (lowering/rewrites/register_transpose.py says why).
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, gpu, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StridedLayoutAttr, VectorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass

from ...dialects import xetile
from ...dialects.walk import ops_in
from ...dialects.types import bit_width, type_name
from ...dialects.attributes import LARGE_GRF_ATTR, NUM_SUBGROUPS_ATTR
from ...targets import Target, as_target
from ...targets.slm_budget import SlmBudget
from ..analysis.families import Families
from ..analysis.slm_tiles import check_user_slm
from ..rewrites.rebuild import Rebuilder
from ..rewrites.register_transpose import operand_a_roots, register_transposable
from .wg_to_sg.transpose import column_major_view, narrow_from_slm, widen_for_slm
from .wg_to_sg import needs_large_grf

SLM_SPACE = 3


@dataclass(frozen=True)
class XeTileSgTranspose(ModulePass):
    """Lower subgroup-level tile_transpose into the load or through SLM."""

    name = "xetile-sg-transpose"
    target: Target | str = "pvc"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        target = as_target(self.target)
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and any(isinstance(o, xetile.TileTransposeOp) for o in ops_in(fn)):
                rebuilder = _SgTranspose(fn, target, SlmBudget(target, check_user_slm(fn, target)))
                rebuilder.run()
                if needs_large_grf(fn, target):  # operands now staged in SLM count too
                    fn.attributes[LARGE_GRF_ATTR] = IntegerAttr(1, 1)


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _is_column_major(attr: xetile.TileAttr) -> bool:
    return tuple(attr.order_list) == (0, 1)


def _feeds_only_transposes(load: xetile.LoadTileOp) -> bool:
    uses = list(load.value.uses)
    return bool(uses) and all(isinstance(u.operation, xetile.TileTransposeOp) for u in uses)


class _SgTranspose(Rebuilder):
    """Rebuilds a function 1:1, folding transposes into loads or staging them in SLM."""

    owned_dialect = ""  # every op without a handler is cloned
    lowering_name = "the subgroup-level transpose lowering"

    def __init__(self, fn: func.FuncOp, target: Target, slm: SlmBudget):
        super().__init__(fn)
        self.target, self.slm = target, slm
        self.families = Families(fn)
        self.folded = self._find_folds()
        self.a_roots = operand_a_roots(fn)  # on the original function, before rebuilding

    # --- which tile families become transposed views ---------------------------------
    def _find_folds(self) -> set[SSAValue]:
        roots = set()
        for op in ops_in(self.fn):
            if isinstance(op, xetile.TileTransposeOp) and isinstance(op.source.owner, xetile.LoadTileOp):
                roots.add(self.families.find(op.source.owner.tile))
        return {r for r in roots if self._only_transposed_loads(r)}

    def _only_transposed_loads(self, root: SSAValue) -> bool:
        """Every value of the family is a global block tile from init_tile (row-major, or a
        column-major view with sizes and strides), moved by update_tile_offset and loops,
        and loaded only into transposes."""
        for v in self.families.members(self.fn, root) or [root]:
            owner = v.owner
            if isinstance(owner, xetile.InitTileOp):
                attr = v.type.attr
                if attr.memory_space.data != 0 or attr.is_scattered or attr.wg is not None \
                        or len(owner.offsets) != 2 or (_is_column_major(attr) and len(owner.sizes) != 2):
                    return False
            for use in v.uses:
                user = use.operation
                if isinstance(user, (xetile.UpdateTileOffsetOp, scf.ForOp, scf.YieldOp, scf.WhileOp,
                                     scf.ConditionOp)):
                    continue
                if not (isinstance(user, xetile.LoadTileOp) and _feeds_only_transposes(user)):
                    return False
        return True

    def _is_folded(self, tile: SSAValue) -> bool:
        return self.families.find(tile) in self.folded

    # --- tiles of folded families -------------------------------------------------------
    def _op_InitTileOp(self, op: xetile.InitTileOp) -> None:
        if not self._is_folded(op.tile):
            self._clone(op)
            return
        t = op.tile.type
        flipped = (1, 0) if _is_column_major(t.attr) else (0, 1)  # a column-major view flips back
        view_type = xetile.TileType(list(_shape(op.tile))[::-1], t.element_type, xetile.TileAttr(order=flipped))
        offsets = [self.one(v) for v in op.offsets][::-1]
        sizes, strides = [self.one(v) for v in op.sizes][::-1], [self.one(v) for v in op.strides][::-1]
        base = self.one(op.source) if _is_column_major(t.attr) else column_major_view(self, self.one(op.source), op)
        self.vmap[op.tile] = [self.emit(xetile.InitTileOp(base, offsets, view_type, sizes, strides), op).tile]

    def _op_UpdateTileOffsetOp(self, op: xetile.UpdateTileOffsetOp) -> None:
        if not self._is_folded(op.tile):
            self._clone(op)
            return
        dx, dy = self.one(op.offset_x), self.one(op.offset_y)
        self.vmap[op.result] = [self.emit(xetile.UpdateTileOffsetOp(self.one(op.tile), dy, dx), op).result]

    def _op_LoadTileOp(self, op: xetile.LoadTileOp) -> None:
        if not self._is_folded(op.tile):
            self._clone(op)
            return
        tile = self.one(op.tile)
        vtype = VectorType(op.value.type.element_type, tile.type.get_shape())
        # a padding stays: the view's out-of-bounds elements are the source tile's, transposed
        self.vmap[op.value] = [self.emit(xetile.LoadTileOp(tile, vtype, op.padding), op).value]

    # --- the transposes -----------------------------------------------------------------
    def _op_TileTransposeOp(self, op: xetile.TileTransposeOp) -> None:
        load = op.source.owner
        if isinstance(load, xetile.LoadTileOp) and self._is_folded(load.tile):
            self.vmap[op.result] = [self.one(op.source)]  # loaded already transposed
            return
        if register_transposable(op, self.target, self.a_roots):
            self._clone(op)  # kept: blocking and the XeGPU conversion lower it to lane shuffles
            return
        emit = lambda new: self.emit(new, op)  # noqa: E731
        value = widen_for_slm(emit, self.one(op.source))   # 8-bit values: 16 bits in SLM
        self.vmap[op.result] = [narrow_from_slm(emit, self._through_slm(op, value), op.source.type.element_type)]

    def _through_slm(self, op: xetile.TileTransposeOp, value: SSAValue) -> SSAValue:
        """Store ``value`` (the source) row-major into this subgroup's slice (rows ``sg * R``
        on) of a buffer of ``num_subgroups`` stacked source shapes, read it back through a
        column-major view."""
        (rows, cols), elem = _shape(op.source), value.type.element_type
        n_sg = self._num_subgroups()
        self._check_slm(op, (rows, cols), elem, n_sg)
        space = IntegerAttr(SLM_SPACE, 64)
        buf = self.emit(memref.AllocOp([], [], MemRefType(elem, [n_sg * rows, cols], memory_space=space)), op).memref
        if not isinstance(op.parent_op(), func.FuncOp):  # in a loop: the previous reads first
            self.emit(gpu.BarrierOp(), op)
        zero, first_row = self.const_index(0, op), self._slice_row(rows, n_sg, op)
        row_major = xetile.TileType([rows, cols], elem, xetile.TileAttr(memory_space=SLM_SPACE))
        store_tile = self.emit(xetile.InitTileOp(buf, [first_row, zero], row_major), op).tile
        self.emit(xetile.StoreTileOp(value, store_tile), op)
        self.emit(gpu.BarrierOp(), op)
        view_shape = [cols, n_sg * rows]
        view_type = MemRefType(elem, view_shape, StridedLayoutAttr([1, cols], 0), memory_space=space)
        view = self.emit(memref.ReinterpretCastOp.from_dynamic(buf, [0], view_shape, [1, cols], view_type),
                         op).result
        col_major = xetile.TileType([cols, rows], elem, xetile.TileAttr(order=(0, 1), memory_space=SLM_SPACE))
        load_tile = self.emit(xetile.InitTileOp(view, [zero, first_row], col_major), op).tile
        return self.emit(xetile.LoadTileOp(load_tile, VectorType(elem, [cols, rows])), op).value

    def _num_subgroups(self) -> int:
        """Subgroups per workgroup: 1 unless wg-to-sg distributed the kernel."""
        attr = self.fn.attributes.get(NUM_SUBGROUPS_ATTR)
        return attr.value.data if attr is not None else 1

    def _slice_row(self, rows: int, n_sg: int, like: Operation) -> SSAValue:
        """The first buffer row of this subgroup's slice (0 with one subgroup)."""
        if n_sg == 1:
            return self.const_index(0, like)
        sg_id = self.emit(gpu.SubgroupIdOp(), like).result
        return self.emit(arith.MuliOp(sg_id, self.const_index(rows, like)), like).result

    def _check_slm(self, op: Operation, shape, elem, n_sg: int) -> None:
        self.slm.take(n_sg * shape[0] * shape[1] * bit_width(elem) // 8, op,
                      f"this tile_transpose of a computed {shape[0]}x{shape[1]} {type_name(elem)} value, staged for "
                      f"{n_sg} subgroup(s), goes through shared local memory",
                      "transpose a smaller tile, or transpose a loaded tile (folded into the load)")
