"""Rules for scattered tiles (``init_tile(base, offsets_tile)``): load_gather,
store_scatter and atomic_rmw, at subgroup level.

* **Blocking.** A scattered tile ``[R, C]`` needs C a multiple of the subgroup size; its
  offsets, values, masks and atomic results are blocked ``1 x sg`` (role "S", which wins
  over the C blocking of element-wise and block-tile neighbours), so each block is one
  row segment, one element per lane.
* **XeGPU.** Each block becomes ``xegpu.create_tdesc %base, %offs`` over ``sg`` lanes
  (``vector.extract`` takes the row out of the ``[1, sg]`` block), ``xegpu.load`` /
  ``xegpu.store`` / ``xegpu.atomic_rmw`` with the block's mask (all-true for an unmasked atomic);
  1-D results go back to ``[1, sg]`` with ``vector.broadcast``; a gather's ``padding`` is
  an ``arith.select`` of the block on its mask.
* **Per-row block accesses** (block atomics, stores to order=[0, 1] tiles): one scattered
  descriptor per block row; a tile moved by update_tile_offset carries its logical
  offsets next to its descriptors (:class:`RowOffsets`).
* **SIMT.** The descriptor gets ``sg_map [1, sg] x [1, 1]``; every ``vector<sg x T>`` of
  these ops is one element per lane (``vector<1xT>``).
"""
from __future__ import annotations

from xdsl.dialects import arith, gpu, scf, vector
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerType, VectorType

from ...dialects import _arith_vector as av
from ...dialects import xegpu, xetile
from ...dialects.walk import ops_in
from ...errors import LoweringError
from ...dialects.types import bit_width

SCATTER_OPS = (xetile.LoadGatherOp, xetile.StoreScatterOp, xetile.AtomicRMWOp)


def is_scattered(tile_type) -> bool:
    return isinstance(tile_type, xetile.TileType) and tile_type.attr.is_scattered


def values_of(op) -> list:
    """The vector values of a scattered-tile op that share its ``1 x sg`` blocking."""
    if isinstance(op, xetile.LoadGatherOp):
        return [op.value, op.mask]
    if isinstance(op, xetile.StoreScatterOp):
        return [op.value, op.mask]
    return [op.value, op.result] + ([op.cmp] if op.cmp is not None else [])


#: rows per block of a scattered tile and its values: each block is one create_tdesc
#: with one offset per lane (chunk_size 1)
BLOCK_ROWS = 1


def check_shape(tile_type, sg: int, op) -> None:
    shape = tuple(tile_type.get_shape())
    if len(shape) != 2 or shape[1] % sg:
        raise LoweringError(f"a scattered tile must be [R, C] with C a multiple of the subgroup size {sg} "
                            f"(one offset per lane, row by row), got {list(shape)}", op)


def _row(tr, block, op):
    """``vector.extract %block[0]``: the ``[1, sg]`` block as ``vector<sg x T>``."""
    t = block.type
    if t.get_shape()[0] != BLOCK_ROWS:
        raise LoweringError(f"the values of a scattered access are blocked {list(t.get_shape())} here because they "
                            f"also feed tile_mma; scattered accesses need [1, sg] blocks: store them to a tile "
                            f"and load that for the mma", op)
    return tr.emit(vector.ExtractOp(block, [0], VectorType(t.element_type, [t.get_shape()[-1]])), op).result


def _as_block(tr, row, op):
    t = row.type
    return tr.emit(vector.BroadcastOp(row, VectorType(t.element_type, [1, t.get_shape()[0]])), op).vector


def init_descs(tr, op: xetile.InitTileOp) -> list:
    t = op.tile.type
    src = tr.one(op.source)
    sg = t.attr.blocks[1]
    space = "slm" if t.attr.in_slm else "global"
    tdesc_type = xegpu.TensorDescType([sg], t.element_type, xegpu.ScatterTdescAttr(space))
    return [tr.emit(xegpu.CreateTdescOp(src, _row(tr, blk, op), tdesc_type), op).tensor_desc
            for blk in tr.vmap[op.offsets[0]]]


def load_gather(tr, op: xetile.LoadGatherOp) -> None:
    """One ``xegpu.load`` per ``1 x sg`` block (masked-off lanes read 0); with a
    ``padding``, ``arith.select(mask, loaded, padding)`` per block gives masked-off lanes
    the padding instead (an element-wise op on the block, one select per lane)."""
    elem = op.value.type.element_type
    out = []
    for d, m in zip(tr.vmap[op.tile], tr.vmap[op.mask], strict=True):
        row = tr.emit(xegpu.LoadGatherOp(d, _row(tr, m, op), VectorType(elem, [d.type.get_shape()[0]])), op).value
        block = _as_block(tr, row, op)
        if op.padding is not None:
            pad = tr.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(block.type, [op.padding.value.data])),
                          op).result
            block = tr.emit(av.SelectOp(m, block, pad), op).result
        out.append(block)
    tr.vmap[op.value] = out


def store_scatter(tr, op: xetile.StoreScatterOp) -> None:
    for v, d, m in zip(tr.vmap[op.value], tr.vmap[op.tile], tr.vmap[op.mask], strict=True):
        tr.emit(xegpu.StoreScatterOp(_row(tr, v, op), d, _row(tr, m, op)), op)


def atomic_rmw(tr, op: xetile.AtomicRMWOp) -> None:
    if not is_scattered(op.tile.type):
        block_atomic_rmw(tr, op)
        return
    out = []
    masks = tr.vmap[op.mask] if op.mask is not None else [None] * len(tr.vmap[op.tile])
    cmps = tr.vmap[op.cmp] if op.cmp is not None else [None] * len(tr.vmap[op.tile])
    for v, d, m, c in zip(tr.vmap[op.value], tr.vmap[op.tile], masks, cmps, strict=True):
        if m is None:
            mtype = VectorType(IntegerType(1), [d.type.get_shape()[0]])
            mask = tr.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(mtype, [1])), op).result
        else:  # a masked-off lane touches nothing and returns 0 (codegen's guarded atomic)
            mask = _row(tr, m, op)
        cmp = _row(tr, c, op) if c is not None else None
        row = tr.emit(_ordered(xegpu.AtomicRMWOp(op.kind.data, _row(tr, v, op), d, mask, cmp=cmp), op), op).result
        out.append(_as_block(tr, row, op))
    tr.vmap[op.result] = out


# --- block tiles through per-row scattered accesses -----------------------------------------
def _ordered(new, op):
    """``new`` with the memory order and scope of the XeTile atomic ``op``."""
    for key in ("sem", "scope"):
        if key in op.properties:
            new.properties[key] = op.properties[key]
    return new


def block_atomic_rmw(tr, op: xetile.AtomicRMWOp) -> None:
    """Each ``b0 x sg`` block row by row (:func:`_block_rows`), one ``xegpu.atomic_rmw``
    per row; the old values (one ``vector<sg x T>`` per row) are put back together into
    the block with ``vector.insert``."""
    b0, sg = op.tile.type.attr.blocks
    zero = 0.0 if not isinstance(op.value.type.element_type, (IntegerType, IndexType)) else 0
    out = []
    cmps = tr.vmap[op.cmp] if op.cmp is not None else [None] * len(tr.vmap[op.value])
    for v, c, place in zip(tr.vmap[op.value], cmps, _block_places(tr, op), strict=True):
        old = tr.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(v.type, [zero])), op).result
        for r, desc, mask in _block_rows(tr, op, place, b0, sg):
            cmp = _block_row(tr, c, r, op) if c is not None else None
            row = tr.emit(_ordered(xegpu.AtomicRMWOp(op.kind.data, _block_row(tr, v, r, op), desc, mask, cmp=cmp),
                                   op), op).result
            old = tr.emit(vector.InsertOp(row, old, [r], v.type), op).result
        out.append(old)
    tr.vmap[op.result] = out


def transposed_store(tr, op: xetile.StoreTileOp) -> None:
    """store_tile to an ``order = [0, 1]`` tile: no 2D block message writes a transpose,
    so each logical block row r (lane n's element r, memory ``(y + n, x + r)``) is a
    masked ``xegpu.store`` through a scattered descriptor."""
    b0, sg = op.tile.type.attr.blocks
    for v, place in zip(tr.vmap[op.value], _block_places(tr, op), strict=True):
        for r, desc, mask in _block_rows(tr, op, place, b0, sg):
            tr.emit(xegpu.StoreScatterOp(_block_row(tr, v, r, op), desc, mask), op)


def _block_row(tr, block, r: int, op):
    """Row ``r`` of a ``b0 x sg`` block as ``vector<sg x T>``."""
    t = block.type
    return tr.emit(vector.ExtractOp(block, [r], VectorType(t.element_type, [t.get_shape()[-1]])), op).result


def _block_rows(tr, op, place, b0: int, sg: int):
    """``(r, descriptor, mask)`` per logical row r of a block at ``place`` =
    ``(array, (height, width), pitch, y, x)``, the memory block's array and position (a
    row-major or an order=[0, 1] tile).  Lane n's element sits at memory ``(y + r, x + n)``,
    or ``(y + n, x + r)`` when transposed (the memory block then is ``sg x b0``); the mask
    keeps it inside the array."""
    source, (height, width), pitch, y, x = place
    flipped = tuple(op.tile.type.attr.order_list) == (0, 1)
    index = IndexType()
    iota = tr.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(VectorType(index, [sg]), list(range(sg)))),
                   op).result
    bcast = lambda s: tr.emit(vector.BroadcastOp(s, VectorType(index, [sg])), op).vector  # noqa: E731
    lane_dim, lane_limit, row_dim, row_limit = (y, height, x, width) if flipped else (x, width, y, height)
    lanes = tr.emit(arith.AddiOp(bcast(lane_dim), iota), op).result
    lane_ok = tr.emit(av.CmpiOp(lanes, bcast(lane_limit), "ult"), op).result
    if flipped:
        lanes = tr.emit(arith.MuliOp(lanes, bcast(pitch)), op).result
    tdesc_type = xegpu.TensorDescType([sg], op.tile.type.element_type, xegpu.ScatterTdescAttr())
    for r in range(b0):
        pos = tr.add(row_dim, r, op)
        row_ok = tr.emit(av.CmpiOp(bcast(pos), bcast(row_limit), "ult"), op).result
        mask = tr.emit(arith.AndIOp(lane_ok, row_ok), op).result
        start = pos if flipped else tr.emit(arith.MuliOp(pos, pitch), op).result
        offs = tr.emit(arith.AddiOp(bcast(start), lanes), op).result
        yield r, tr.emit(xegpu.CreateTdescOp(source, offs, tdesc_type), op).tensor_desc, mask


def _block_places(tr, op):
    """``(array, (height, width), pitch, y, x)`` of each block of ``op.tile`` (row-major
    over the block grid): from the block's ``create_nd_tdesc``, or, for a tile moved by
    update_tile_offset (a descriptor cannot tell its position), from the tile's logical
    offsets that the conversion carries next to its descriptors (:class:`RowOffsets`)."""
    tile = op.tile
    if not tr.row_offsets.tracks(tile):
        for d in tr.vmap[tile]:
            nd = d.owner
            if not isinstance(nd, xegpu.CreateNdTdescOp):
                raise LoweringError(f"internal: {op.name} needs the position of a moved tile that is not tracked", op)
            yield (nd.source, *_extents(tr, nd, op), *nd.offsets)
        return
    source, extents, pitch = tr.row_offsets.base(tile)
    o0, o1 = tr.row_offsets.offsets(tr.vmap[tile])
    (rows, cols), (b0, b1) = tile.type.get_shape(), tile.type.attr.blocks
    flipped = tuple(tile.type.attr.order_list) == (0, 1)
    for i in range(rows // b0):
        for j in range(cols // b1):
            lo0, lo1 = tr.add(o0, i * b0, op), tr.add(o1, j * b1, op)
            yield (source, extents, pitch, *((lo1, lo0) if flipped else (lo0, lo1)))


class RowOffsets:
    """Logical offsets of block tiles moved by update_tile_offset that block atomics or
    stores to order=[0, 1] tiles reach (per-element addresses need the tile's position).
    Such a tile maps to its descriptors (none when only per-row accesses use it) followed
    by its two offsets, which loops and ``scf.if`` carry like any other part."""

    def __init__(self, fn, families):
        self.families = families
        self.roots: dict = {}  # family root -> whether its descriptors are needed
        self.bases: dict = {}  # family root -> (array, (height, width), pitch)
        for op in ops_in(fn):
            if _needs_rows(op):
                members = families.members(fn, op.tile) or [op.tile]
                if any(not isinstance(v.owner, xetile.InitTileOp) for v in members):
                    needed = any(_needs_descriptors(u.operation) for v in members for u in v.uses)
                    self.roots[families.find(op.tile)] = needed

    def tracks(self, tile) -> bool:
        """Whether ``tile``'s parts end with its two logical offsets."""
        return self.families.find(tile) in self.roots

    def needs_descriptors(self, tile) -> bool:
        """Whether anything but per-row accesses (and moves) uses the tracked ``tile``."""
        return self.roots[self.families.find(tile)]

    @staticmethod
    def descriptors(parts: list) -> list:
        """The descriptors among a tracked tile's parts."""
        return parts[:-2]

    @staticmethod
    def offsets(parts: list) -> list:
        """The two logical offsets among a tracked tile's parts."""
        return parts[-2:]

    def record_base(self, tr, op: xetile.InitTileOp) -> None:
        """The array, its extents and pitch, from the family's init_tile (every init_tile of
        the family, e.g. both branches of an ``if``, must be on the same array)."""
        root = self.families.find(op.tile)
        src = tr.one(op.source)
        if root in self.bases:
            if self.bases[root][0] is not src:
                raise LoweringError(f"{op.name}: a tile that block atomics or stores to order=[0, 1] tiles use "
                                    f"after update_tile_offset (or a loop, or an if) must stay on one array; "
                                    f"this init_tile is on another array than an earlier one of the same tile "
                                    f"variable", op)
            return
        sizes, strides = [tr.one(v) for v in op.sizes], [tr.one(v) for v in op.strides]
        if tuple(op.tile.type.attr.order_list) == (0, 1):  # back to the array's own extents and strides
            sizes, strides = sizes[::-1], strides[::-1]
        if sizes:
            self.bases[root] = (src, tuple(sizes), strides[0])
            return
        rows, cols = src.type.get_shape()
        const = lambda n: tr.emit(arith.ConstantOp.from_int_and_width(n, IndexType()), op).result  # noqa: E731
        self.bases[root] = (src, (const(rows), const(cols)), const(cols))

    def base(self, tile):
        """(array, (height, width), pitch) of a tracked tile."""
        return self.bases[self.families.find(tile)]


def _needs_rows(op) -> bool:
    """Block atomics and stores to order=[0, 1] tiles: per-row scattered accesses."""
    if isinstance(op, xetile.AtomicRMWOp):
        return not is_scattered(op.tile.type)
    return isinstance(op, xetile.StoreTileOp) and tuple(op.tile.type.attr.order_list) == (0, 1)


def _needs_descriptors(user) -> bool:
    """Whether a tile use reads its block descriptors (loads, prefetches, block stores)."""
    if isinstance(user, (xetile.UpdateTileOffsetOp, scf.ForOp, scf.YieldOp, scf.IfOp, scf.WhileOp,
                         scf.ConditionOp)):
        return False
    return not _needs_rows(user)


def _extents(tr, nd: xegpu.CreateNdTdescOp, op):
    """``((height, width), pitch)`` of a descriptor's array: its operands, or constants
    from a static row-major memref type."""
    if nd.shape:
        return tuple(nd.shape), nd.strides[0]
    rows, cols = nd.source.type.get_shape()
    const = lambda n: tr.emit(arith.ConstantOp.from_int_and_width(n, IndexType()), op).result  # noqa: E731
    return (const(rows), const(cols)), const(cols)


def lane_sg_map(t: xegpu.TensorDescType, sg: int) -> xegpu.SGMapAttr:
    """SIMT ``sg_map`` of a scattered descriptor: one offset per lane.  Without chunk_size
    (``[sg]``) lane n owns element n; with ``chunk_size = c`` (``[sg, c]``) lane n owns row
    n, its c consecutive elements, in 32-bit units (the XeGPU RFC's ``wi_layout = [sg, 1]``,
    ``wi_data = [1, 32 / bits]``)."""
    if t.scatter_attr.chunk == 1:
        return xegpu.SGMapAttr((1, sg), (1, 1))
    return xegpu.SGMapAttr((sg, 1), (1, max(1, 32 // bit_width(t.element_type))))


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
