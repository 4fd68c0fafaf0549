"""Pass ``convert-xetile-to-xegpu``: blocked XeTile -> subgroup-level XeGPU.

Every blocked value becomes one XeGPU value per block (row-major over the block grid): a
tile becomes a grid of tensor descriptors, a 4-D vector a grid of 2-D vectors.  tile_mma
becomes one xegpu.dpas per (row block, column block, K block); operand B is loaded with
``packed`` (VNNI), giving the RFC's 3-D ``KxNx2`` form.
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import AnyFloat, DenseIntOrFPElementsAttr, ModuleOp, VectorType
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from ...dialects import xegpu, xetile
from ...dialects.walk import ops_in
from ...dialects.types import bit_width
from ...targets import Target, kernel_target
from ...targets.target import PREFETCH_LOCALITY_HINTS
from ..analysis import op_kinds
from ..analysis.families import Families
from ..rewrites import block_messages, constants, mma_relayout, register_transpose, scattered
from ..rewrites import transposed_tiles as transposed
from ..rewrites.rebuild import Rebuilder
from .blocking import has_xetile_ops


@dataclass(frozen=True)
class ConvertXeTileToXeGPU(ModulePass):
    name = "convert-xetile-to-xegpu"
    #: whose 2D block shapes coalesced messages may take (lowering/rewrites/block_messages.py);
    #: default: the function's xetile.kernel attribute; with neither (hand-written XeTile
    #: through the opt tool), one message per block
    target: Target | str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp) and has_xetile_ops(fn):
                _Translator(fn, kernel_target(fn, self.target, default=None)).run()


class _Translator(Rebuilder):
    """Rebuilds one function, mapping each blocked value to its blocks (row-major)."""

    lowering_name = "the XeGPU lowering"

    def __init__(self, fn: func.FuncOp, target: Target | None):
        super().__init__(fn)
        self.target = target
        self.families = Families(fn)
        self.packed_tiles = _tiles_loaded_as_b(fn, self.families)
        self.row_offsets = scattered.RowOffsets(fn, self.families)
        self.messages = block_messages.plan_tiles(fn, target, self.packed_tiles) if target is not None else {}
        #: zero blocks a select with a constant condition chose (op_kinds): masked-off K ranges
        self.masked_off: set[SSAValue] = set()

    def message_plan(self, tile: SSAValue) -> block_messages.Messages | None:
        """How ``tile``'s blocks are read, when several share one 2D block message."""
        return self.messages.get(self.families.find(tile))

    def descs(self, tile: SSAValue) -> list[SSAValue]:
        """A tile's block descriptors (a tile moved for per-row accesses also carries its
        offsets: scattered.RowOffsets)."""
        parts = self.vmap[tile]
        return self.row_offsets.descriptors(parts) if self.row_offsets.tracks(tile) else parts

    def run(self) -> None:
        super().run()
        self._drop_unused_descriptors()

    def _drop_unused_descriptors(self) -> None:
        """Descriptors nothing uses (a block tile reached only through per-row scattered
        accesses: atomics, stores to order=[0, 1] tiles) would still need an sg_map."""
        for op in ops_in(self.fn):
            if isinstance(op, xegpu.CreateNdTdescOp) and not op.tensor_desc.uses:
                op.parent_block().erase_op(op)

    def _translate(self, op: Operation) -> None:
        """Element-wise ops, broadcasts and reductions go to lowering/analysis/op_kinds.py."""
        if getattr(self, f"_op_{type(op).__name__}", None) is None and op_kinds.translate(self, op):
            return
        super()._translate(op)

    def _op_ConstantOp(self, op: arith.ConstantOp) -> None:
        t = op.result.type
        if not (isinstance(t, VectorType) and len(t.get_shape()) == 4):
            self._clone(op)
            return
        self.vmap[op.result] = [self.emit(arith.ConstantOp(attr), op).result for attr in constants.block_attrs(op)]

    def _op_InitTileOp(self, op: xetile.InitTileOp) -> None:
        if not op.tile.uses or not op.tile.type.attr.blocks:
            # dead: never used, or only moved and never read or written (e.g. reassigned under a
            # constant-folded if, or updated after its last load): blocking gave it no blocks
            self.vmap[op.tile] = []
            return
        self._init_descs(op)
        if self.row_offsets.tracks(op.tile):  # moved, and block atomics / transposed stores need its position
            self.row_offsets.record_base(self, op)
            descs = self.vmap[op.tile] if self.row_offsets.needs_descriptors(op.tile) else []
            self.vmap[op.tile] = descs + [self.one(v) for v in op.offsets]

    def _init_descs(self, op: xetile.InitTileOp) -> None:
        t = op.tile.type
        if transposed.is_transposed(t):
            self.vmap[op.tile] = transposed.init_descs(self, op, self.message_plan(op.tile))
            return
        if scattered.is_scattered(t):
            self.vmap[op.tile] = scattered.init_descs(self, op)
            return
        (rows, cols), (b0, b1) = t.get_shape(), t.attr.blocks
        src = self.one(op.source)
        sizes = [self.one(v) for v in op.sizes]
        strides = [self.one(v) for v in op.strides]
        o0, o1 = (self.one(v) for v in op.offsets)
        slm = xegpu.BlockTdescAttr("slm") if t.attr.memory_space.data == 3 else None  # SLM buffers (wg_to_sg/vectors.py)
        tdesc_type = xegpu.TensorDescType([b0, b1], t.element_type, slm)
        corners = [(i * b0, j * b1) for i in range(rows // b0) for j in range(cols // b1)]
        plan = self.message_plan(op.tile)
        if plan is not None:  # one descriptor per coalesced message
            tdesc_type, corners = block_messages.descriptor_type(plan, t.element_type), plan.offsets()
        descs = []
        for r, c in corners:
            offs = [self.add(o0, r, op), self.add(o1, c, op)]
            descs.append(self.emit(xegpu.CreateNdTdescOp(src, offs, tdesc_type, sizes, strides), op).tensor_desc)
        self.vmap[op.tile] = descs

    def _mark_lane_rows(self, op: xetile.LoadTileOp, loads: list) -> None:
        """Let codegen read these transposed loads of ``op`` with per-lane row loads
        (:data:`dialects.attributes.LANE_ROWS_ATTR`)."""
        transposed.mark_lane_rows([ld for ld in loads if ld is not None], self.target,
                                  bit_width(op.tile.type.element_type), block_messages.plain_gemm_block(op))

    def _op_LoadTileOp(self, op: xetile.LoadTileOp) -> None:
        t = op.tile.type
        b0, b1 = t.attr.blocks
        elem = t.element_type
        packed = op.tile in self.packed_tiles and bit_width(elem) < 32  # VNNI packs sub-dword elements
        plan = self.message_plan(op.tile)
        if transposed.is_transposed(t) and plan is None:
            self.vmap[op.value] = transposed.load_blocks(self, op, packed)
            self._mark_lane_rows(op, [v.owner for v in self.vmap[op.value]])
            return
        if plan is not None:
            self.vmap[op.value] = block_messages.load_blocks(self, op, plan, self.descs(op.tile), packed)
            if plan.transposed:
                self._mark_lane_rows(op, [block_messages.source_load(v) for v in self.vmap[op.value]])
            return
        if packed:
            vnni = 32 // bit_width(elem)
            vtype = VectorType(elem, [b0 // vnni, b1, vnni])
        else:
            vtype = VectorType(elem, [b0, b1])
        # a non-zero padding rides on load_nd: codegen replaces out-of-bounds elements
        self.vmap[op.value] = [self.emit(xegpu.LoadNdOp(d, vtype, packed=packed, padding=op.padding), op).value
                               for d in self.descs(op.tile)]

    def _op_StoreTileOp(self, op: xetile.StoreTileOp) -> None:
        if transposed.is_transposed(op.tile.type):
            scattered.transposed_store(self, op)
            return
        for v, d in zip(self.vmap[op.value], self.descs(op.tile), strict=True):
            self.emit(xegpu.StoreNdOp(v, d), op)

    def _op_LoadGatherOp(self, op: xetile.LoadGatherOp) -> None:
        scattered.load_gather(self, op)

    def _op_StoreScatterOp(self, op: xetile.StoreScatterOp) -> None:
        scattered.store_scatter(self, op)

    def _op_AtomicRMWOp(self, op: xetile.AtomicRMWOp) -> None:
        scattered.atomic_rmw(self, op)

    def _op_AtomicRMWScalarOp(self, op: xetile.AtomicRMWScalarOp) -> None:
        self._clone(op)  # one element of an array: already the SIMT form (codegen/emit/atomic_messages.py)

    def _op_AtomicCASScalarOp(self, op: xetile.AtomicCASScalarOp) -> None:
        self._clone(op)

    def _op_FenceOp(self, op: xetile.FenceOp) -> None:
        self._clone(op)

    def _op_PrefetchTileOp(self, op: xetile.PrefetchTileOp) -> None:
        """One prefetch_nd per block; ``locality`` becomes cache hints (targets/target.py)."""
        locality = op.locality.value.data if op.locality is not None else 3
        for d in self.descs(op.tile):
            self.emit(xegpu.PrefetchNdOp(d, dict(PREFETCH_LOCALITY_HINTS[locality])), op)

    def _op_UpdateTileOffsetOp(self, op: xetile.UpdateTileOffsetOp) -> None:
        d0, d1 = self.one(op.offset_x), self.one(op.offset_y)  # logical: rows, columns
        dx, dy = (d1, d0) if transposed.is_transposed(op.tile.type) else (d0, d1)  # the array underneath
        parts = [self.emit(xegpu.UpdateNdOffsetOp(d, [dx, dy]), op).result for d in self.descs(op.tile)]
        if self.row_offsets.tracks(op.tile):
            o0, o1 = self.row_offsets.offsets(self.vmap[op.tile])
            parts += [self.emit(arith.AddiOp(o0, d0), op).result, self.emit(arith.AddiOp(o1, d1), op).result]
        self.vmap[op.result] = parts

    # a register transpose: tile_unpack, tile_transpose, tile_pack (lowering/rewrites/register_transpose.py);
    # a chained tile_mma's operand A: tile_unpack, tile_pack (lowering/rewrites/mma_relayout.py)
    def _op_TileUnpackOp(self, op: xetile.TileUnpackOp) -> None:
        register_transpose.unpack_to_xegpu(self, op)

    def _op_TileTransposeOp(self, op: xetile.TileTransposeOp) -> None:
        register_transpose.transpose_to_xegpu(self, op)

    def _op_TilePackOp(self, op: xetile.TilePackOp) -> None:
        if mma_relayout.is_relayout(op):
            mma_relayout.pack_to_xegpu(self, op)
        else:
            register_transpose.pack_to_xegpu(self, op)

    def _op_TileMMAOp(self, op: xetile.TileMMAOp) -> None:
        mb, kb, _, _ = op.a.type.get_shape()
        _, nb, _, _ = op.b.type.get_shape()
        a, b = self.vmap[op.a], self.vmap[op.b]
        c = self.vmap[op.c] if op.c is not None else None
        out_t = op.output.type
        rtype = VectorType(out_t.element_type, out_t.get_shape()[2:])
        # K outermost: each K block's A column and B row are consumed by all (i, j) before
        # the next K block's operands are needed (shorter operand live ranges); every
        # accumulator still sums its K blocks in ascending order
        # a K block whose A or B block a constant select masked off to 0 (xt.dot_scaled's scale
        # blocks, which mask both sides, so the block adds exactly 0): no DPAS
        results = [c[i] if c is not None else None for i in range(mb * nb)]
        for k in range(kb):
            for i in range(mb):
                for j in range(nb):
                    if a[i * kb + k] in self.masked_off or b[k * nb + j] in self.masked_off:
                        continue
                    results[i * nb + j] = self.emit(
                        xegpu.DpasOp(a[i * kb + k], b[k * nb + j], results[i * nb + j], rtype), op).result
        for i, r in enumerate(results):
            if r is None:  # every K block masked off
                results[i] = self.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(
                    rtype, [0.0 if isinstance(rtype.element_type, AnyFloat) else 0] * rtype.element_count())),
                    op).result
        self.vmap[op.output] = results


def _tiles_loaded_as_b(fn: func.FuncOp, families: Families) -> set[SSAValue]:
    """Tiles whose loads feed operand B of tile_mma (loaded with VNNI packing): directly,
    or through loops that carry the loaded value (an scf.for iter_arg, scf.while before /
    after arguments, a loop result): every load of the carried value's family is packed,
    so the value has one type on all its loop edges."""
    found, families_of_b = set(), set()
    for op in ops_in(fn):
        if isinstance(op, xetile.TileMMAOp):
            if isinstance(op.b.owner, xetile.LoadTileOp):
                found.add(op.b.owner.tile)
                families_of_b.add(families.find(op.b))
            elif isinstance(op.b, BlockArgument) or isinstance(op.b.owner, (scf.ForOp, scf.WhileOp, scf.IfOp)):
                families_of_b.add(families.find(op.b))
    for op in ops_in(fn):
        if isinstance(op, xetile.LoadTileOp) and families.find(op.value) in families_of_b:
            found.add(op.tile)
    return found

