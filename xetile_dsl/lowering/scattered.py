"""Rules for scattered tiles (``init_tile(base, offsets_tile)``): load_gather,
store_scatter and atomic_rmw, at subgroup level.

* **Blocking.** A scattered tile must be one row ``[1, C]`` with C a multiple of the
  subgroup size; its offsets, values, masks and atomic results are blocked ``1 x sg``
  (the C blocking of a one-row tile), so each block is one element per lane.
* **XeGPU.** Each block becomes ``xegpu.create_tdesc %base, %offs`` over ``sg`` lanes
  (``vector.extract`` takes the row out of the ``[1, sg]`` block), ``xegpu.load`` /
  ``xegpu.store`` / ``xegpu.atomic_rmw`` with the block's mask (all-true for atomics);
  1-D results go back to ``[1, sg]`` with ``vector.broadcast``.
* **SIMT.** The descriptor gets ``sg_map [1, sg] x [1, 1]``; every ``vector<sg x T>`` of
  these ops is one element per lane (``vector<1xT>``).
"""
from __future__ import annotations

from xdsl.dialects import arith, gpu, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerType, VectorType

from ..dialects import _arith_vector as av
from ..dialects import xegpu, xetile
from ..errors import LoweringError

SCATTER_OPS = (xetile.LoadGatherOp, xetile.StoreScatterOp, xetile.AtomicRMWOp)


def is_scattered(tile_type) -> bool:
    return isinstance(tile_type, xetile.TileType) and tile_type.attr.is_scattered


def values_of(op) -> list:
    """The vector values of a scattered-tile op that share its ``1 x sg`` blocking."""
    if isinstance(op, xetile.LoadGatherOp):
        return [op.value, op.mask]
    if isinstance(op, xetile.StoreScatterOp):
        return [op.value, op.mask]
    return [op.value, op.result]


def check_shape(tile_type, sg: int, op) -> None:
    shape = tuple(tile_type.get_shape())
    if len(shape) != 2 or shape[0] != 1 or shape[1] % sg:
        raise LoweringError(f"a scattered tile must be one row [1, C] with C a multiple of the subgroup size {sg} "
                            f"(one offset per lane), got {list(shape)}", op)


def _row(tr, block, op):
    """``vector.extract %block[0]``: the ``[1, sg]`` block as ``vector<sg x T>``."""
    t = block.type
    return tr.emit(vector.ExtractOp(block, [0], VectorType(t.element_type, [t.get_shape()[-1]])), op).result


def _as_block(tr, row, op):
    t = row.type
    return tr.emit(vector.BroadcastOp(row, VectorType(t.element_type, [1, t.get_shape()[0]])), op).vector


def init_descs(tr, op: xetile.InitTileOp) -> list:
    t = op.tile.type
    src = tr.one(op.source)
    sg = t.attr.blocks[1]
    tdesc_type = xegpu.TensorDescType([sg], t.element_type, xegpu.ScatterTdescAttr())
    return [tr.emit(xegpu.CreateTdescOp(src, _row(tr, blk, op), tdesc_type), op).tensor_desc
            for blk in tr.vmap[op.offsets[0]]]


def load_gather(tr, op: xetile.LoadGatherOp) -> None:
    if op.padding is not None:
        raise LoweringError("load_gather with a non-zero padding is not lowered yet (masked lanes read 0)", op)
    elem = op.value.type.element_type
    out = []
    for d, m in zip(tr.vmap[op.tile], tr.vmap[op.mask], strict=True):
        row = tr.emit(xegpu.LoadGatherOp(d, _row(tr, m, op), VectorType(elem, [d.type.get_shape()[0]])), op).value
        out.append(_as_block(tr, row, op))
    tr.vmap[op.value] = out


def store_scatter(tr, op: xetile.StoreScatterOp) -> None:
    for v, d, m in zip(tr.vmap[op.value], tr.vmap[op.tile], tr.vmap[op.mask], strict=True):
        tr.emit(xegpu.StoreScatterOp(_row(tr, v, op), d, _row(tr, m, op)), op)


def atomic_rmw(tr, op: xetile.AtomicRMWOp) -> None:
    if not is_scattered(op.tile.type):
        block_atomic_rmw(tr, op)
        return
    out = []
    for v, d in zip(tr.vmap[op.value], tr.vmap[op.tile], strict=True):
        lanes = d.type.get_shape()[0]
        mtype = VectorType(IntegerType(1), [lanes])
        mask = tr.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(mtype, [1])), op).result
        row = tr.emit(xegpu.AtomicRMWOp(op.kind.data, _row(tr, v, op), d, mask), op).result
        out.append(_as_block(tr, row, op))
    tr.vmap[op.result] = out


# --- atomic_rmw on a block tile ---------------------------------------------------------------
def block_atomic_rmw(tr, op: xetile.AtomicRMWOp) -> None:
    """Each ``b0 x sg`` block row by row: offsets ``(y + r) * pitch + x + iota(sg)`` into a
    scattered descriptor, masked to the array's bounds, one ``xegpu.atomic_rmw`` per row.
    The old values (the op's result) are not reassembled yet."""
    t = op.tile.type
    if tuple(t.attr.order_list) != (1, 0):
        raise LoweringError("atomic_rmw on an order=[0, 1] tile is not lowered yet", op)
    if op.result.uses:
        raise LoweringError("the old values returned by atomic_rmw on a block tile are not lowered yet; "
                            "use a scattered tile to read them", op)
    b0, sg = t.attr.blocks
    index, i1 = IndexType(), IntegerType(1)
    iota = tr.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(VectorType(index, [sg]), list(range(sg)))),
                   op).result
    for v, d in zip(tr.vmap[op.value], tr.vmap[op.tile], strict=True):
        nd = d.owner
        if not isinstance(nd, xegpu.CreateNdTdescOp):
            raise LoweringError("atomic_rmw on a tile moved by update_tile_offset is not lowered yet; "
                                "init_tile the destination where it is updated", op)
        y, x = nd.offsets
        (height, width), pitch = nd.shape, nd.strides[0]
        bcast = lambda s: tr.emit(vector.BroadcastOp(s, VectorType(index, [sg])), op).vector  # noqa: E731
        cols = tr.emit(arith.AddiOp(bcast(x), iota), op).result
        col_ok = tr.emit(av.CmpiOp(cols, bcast(width), "ult"), op).result
        tdesc_type = xegpu.TensorDescType([sg], v.type.element_type, xegpu.ScatterTdescAttr())
        for r in range(b0):
            row = tr.add(y, r, op)
            row_ok = tr.emit(av.CmpiOp(bcast(row), bcast(height), "ult"), op).result
            mask = tr.emit(arith.AndIOp(col_ok, row_ok), op).result
            start = tr.emit(arith.MuliOp(row, pitch), op).result
            offs = tr.emit(arith.AddiOp(bcast(start), cols), op).result
            desc = tr.emit(xegpu.CreateTdescOp(nd.source, offs, tdesc_type), op).tensor_desc
            value = tr.emit(vector.ExtractOp(v, [r], VectorType(v.type.element_type, [sg])), op).result
            tr.emit(xegpu.AtomicRMWOp(op.kind.data, value, desc, mask), op)
    tr.vmap[op.result] = []


def is_lane_iota(const: arith.ConstantOp, lanes: int) -> bool:
    """Whether ``const`` is ``dense<[0, 1, ..., lanes-1]> : vector<lanes x index>`` (the lane
    offsets of a block atomic)."""
    t = const.result.type
    if not (isinstance(t, VectorType) and t.get_shape() == (lanes,) and isinstance(t.element_type, IndexType)):
        return False
    return [int(x) for x in const.value.get_values()] == list(range(lanes))


def lane_iota_to_lane_id(const: arith.ConstantOp) -> None:
    """SIMT rule for a lane iota: lane n holds n, i.e. ``gpu.lane_id`` (as ``vector<1xindex>``)."""
    lane = gpu.LaneIdOp()
    per_lane = vector.BroadcastOp(lane.result, VectorType(IndexType(), [1]))
    block = const.parent_block()
    block.insert_ops_before([lane, per_lane], const)
    const.result.replace_all_uses_with(per_lane.vector)
    block.erase_op(const)
