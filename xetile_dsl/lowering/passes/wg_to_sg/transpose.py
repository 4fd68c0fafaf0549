"""``tile_transpose`` at workgroup level, in ``xetile-wg-to-sg`` (XeTile RFC, Workgroup Level
extension and Appendix 2.2 / 2.3).

Maps: the result's map is the op's ``wg_map``; the source's is ``wg_map_source``, else its
producer's, else the RFC's derivation (sg_layout and sg_data swapped).

Three lowerings, chosen per op in this order:

* **In place** (RFC 2.3, "in-register"): when every subgroup's source pieces are exactly the
  transposes of its result pieces (result piece ``(i, j)`` = source piece ``(j, i)``,
  checked numerically for every subgroup id) and the source is a ``load_tile`` used only
  by such transposes, the loaded tile itself becomes the transposed view of its memory
  (``order = [0, 1]`` pieces; ``update_tile_offset`` deltas swap), so each subgroup loads
  its result pieces directly with transposed 2D block reads. No data crosses subgroups or
  lanes through memory.
* **In registers**: when every subgroup's result pieces are the transposes of its own
  source pieces (as above) but the source is computed (or a tile also used otherwise),
  and each piece fits the register transpose (dims multiples of the subgroup size,
  16/32-bit elements, at most half the register file, not operand A of a tile_mma;
  lowering/rewrites/register_transpose.py), the
  result piece ``(i, j)`` is a subgroup-level ``tile_transpose`` of source piece ``(j, i)``,
  which xetile-sg-transpose keeps and the later passes lower to lane shuffles.
* **Through SLM** (RFC 2.2 and any other map pair): each subgroup stores its source pieces
  row-major into an SLM buffer of the source's shape, a barrier (named per group when the
  pieces stay inside independent groups of subgroups), and each
  subgroup loads its result pieces through a column-major view of that buffer
  (``memref.reinterpret_cast`` to strides ``[1, cols]`` and ``order = [0, 1]`` tiles), the
  RFC's "store with the source map row-major, load with the result map column-major".
  Inside a loop a barrier also precedes the stores.
"""
from __future__ import annotations

from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, MemRefType, StridedLayoutAttr, VectorType
from xdsl.ir import SSAValue

from ....dialects import xetile
from ....dialects._arith_vector import ExtUIOp, TruncIOp
from ....dialects.walk import ops_in
from ....dialects.types import bit_width
from ...analysis.sg_groups import Region, piece_origins
from ...rewrites.register_transpose import fits_registers, operand_a_roots

SLM_SPACE = 3


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def swapped(m: xetile.WgMapAttr) -> xetile.WgMapAttr:
    """The RFC's derived source map of a transpose: sg_layout and sg_data swapped."""
    return xetile.WgMapAttr(tuple(m.layout)[::-1], tuple(m.data)[::-1])


# --- map inference --------------------------------------------------------------------------
def infer_transpose(inf, op: xetile.TileTransposeOp) -> None:
    res = op.wg_map or inf.map_of(op.result)
    if res is not None:
        inf.set(op.result, res, op, "the tile_transpose result")
    src = op.wg_map_source or inf.map_of(op.source)
    if src is None and res is not None:
        src = swapped(res)
    if src is not None:
        inf.set(op.source, src, op, "the tile_transpose source")
    if res is None and src is not None:
        inf.set(op.result, swapped(src), op, "the tile_transpose result")


# --- which subgroup holds what (piece_origins: sg_groups.py) ----------------------------
def holds_own_transpose(src: xetile.WgMapAttr, src_shape, dst: xetile.WgMapAttr) -> bool:
    """Whether every subgroup's result piece ``(i, j)`` is the transpose of its own source
    piece ``(j, i)`` (then no data moves between subgroups)."""
    if tuple(dst.data) != tuple(src.data)[::-1]:
        return False
    dst_shape = tuple(src_shape)[::-1]
    count = src.layout[0] * src.layout[1]
    for sg in range(count):
        (s0, s1), s_offs = piece_origins(src, src_shape, sg)
        (d0, d1), d_offs = piece_origins(dst, dst_shape, sg)
        if (d0, d1) != (s1, s0):
            return False
        for i in range(d0):
            for j in range(d1):
                r, c = s_offs[j * s1 + i]
                if d_offs[i * d1 + j] != (c, r):
                    return False
    return True


# --- distribution --------------------------------------------------------------------------
#: 8-bit values go through SLM widened to 16 bits: bytes stored row-major and read back
#: through the column-major view came back wrong on the CPU device (the per-lane SLM reads
#: of single bytes), and 16-bit exchanges are exact; the widening is value-preserving
SLM_WIDE_BITS = 16


def slm_element(elem):
    """The element type a transposed value of ``elem`` has in SLM."""
    return IntegerType(SLM_WIDE_BITS) if bit_width(elem) == 8 else elem


def widen_for_slm(emit, value: SSAValue) -> SSAValue:
    """``value`` zero-extended to :func:`slm_element` (unchanged when not 8-bit);
    ``emit(op)`` emits one op and returns it."""
    elem = value.type.element_type
    if slm_element(elem) is elem:
        return value
    return emit(ExtUIOp(value, VectorType(slm_element(elem), value.type.get_shape()))).results[0]


def narrow_from_slm(emit, value: SSAValue, elem) -> SSAValue:
    """A value read back from SLM in its original element type ``elem``."""
    if value.type.element_type == elem:
        return value
    return emit(TruncIOp(value, VectorType(elem, value.type.get_shape()))).results[0]


def column_major_view(rebuilder, src: SSAValue, like) -> SSAValue:
    """A static row-major memref as its transpose (strides ``[1, cols]``), emitted through
    ``rebuilder``; dynamic memrefs and addresses take the swapped sizes and strides
    operands instead (returned unchanged)."""
    t = src.type
    if not isinstance(t, MemRefType) or any(d < 0 for d in t.get_shape()):
        return src
    rows, cols = t.get_shape()
    view_type = MemRefType(t.element_type, [cols, rows], StridedLayoutAttr([1, cols], 0),
                           memory_space=t.memory_space)
    return rebuilder.emit(memref.ReinterpretCastOp.from_dynamic(src, [0], [cols, rows], [1, cols], view_type),
                          like).result


class TransposeDistribution:
    """tile_transpose in place or through SLM, for the wg-to-sg distributor ``d``."""

    def __init__(self, d):
        self.d = d
        self.find_transpose_folds()

    def find_transpose_folds(self) -> None:
        """Tile families whose loads feed only in-place transposes become transposed views."""
        self.folded_tiles: dict[SSAValue, xetile.WgMapAttr] = {}
        self.a_operand_roots = operand_a_roots(self.d.fn)  # for the register path, on the original function
        families = self.d.maps.families
        candidates: dict[SSAValue, set] = {}
        for op in ops_in(self.d.fn):
            if isinstance(op, xetile.TileTransposeOp) and self._foldable(op):
                load = op.source.owner
                if isinstance(load, xetile.LoadTileOp) and len(list(op.source.uses)) == 1:
                    root = families.find(load.tile)
                    candidates.setdefault(root, set()).add(self.d.maps.map_of(op.result))
        for root, dst_maps in candidates.items():
            if len(dst_maps) == 1 and self._only_transposed_loads(root):
                self.folded_tiles[root] = dst_maps.pop()

    def _foldable(self, op: xetile.TileTransposeOp) -> bool:
        """Whether a transpose of a loaded tile may become a transposed load: both maps
        known.  Which subgroup loaded which source piece does not matter then: the data
        is in global memory, so each subgroup reads its result pieces itself (before, only
        :meth:`_in_place` transposes were folded; the others went through SLM: 64
        per-lane SLM stores and a barrier per K step for A^T.B at 256x256x32)."""
        return self.d.maps.map_of(op.source) is not None and self.d.maps.map_of(op.result) is not None

    def _in_place(self, op: xetile.TileTransposeOp) -> bool:
        src, dst = self.d.maps.map_of(op.source), self.d.maps.map_of(op.result)
        return src is not None and dst is not None and holds_own_transpose(src, _shape(op.source), dst)

    def _only_transposed_loads(self, root: SSAValue) -> bool:
        """Every value of the tile family is a row-major global tile from init_tile, moved
        by update_tile_offset and loops, and loaded only into foldable transposes."""
        families = self.d.maps.families
        for v in families.members(self.d.fn, root):
            owner = v.owner
            if isinstance(owner, xetile.InitTileOp):
                attr = v.type.attr
                if tuple(attr.order_list) != (1, 0) or attr.memory_space.data != 0 or attr.is_scattered:
                    return False
            for use in v.uses:
                user = use.operation
                if isinstance(user, (xetile.UpdateTileOffsetOp, scf.ForOp, scf.YieldOp)):
                    continue
                if not isinstance(user, xetile.LoadTileOp) or len(list(user.value.uses)) != 1:
                    return False
                (t_use,) = list(user.value.uses)
                if not (isinstance(t_use.operation, xetile.TileTransposeOp) and self._foldable(t_use.operation)):
                    return False
        return True

    def folded_map(self, tile: SSAValue) -> xetile.WgMapAttr | None:
        return self.folded_tiles.get(self.d.maps.families.find(tile))

    def init_transposed_view(self, op: xetile.InitTileOp, dst: xetile.WgMapAttr) -> None:
        """The result pieces of the transpose, as ``order = [0, 1]`` tiles over the same
        memory (offsets, extents and strides of the transposed view)."""
        t = op.tile.type
        view_shape = tuple(t.get_shape())[::-1]
        (n0, n1), (d0, d1) = self.d._sg_shape(dst, view_shape)
        ttype = xetile.TileType([d0, d1], t.element_type, xetile.TileAttr(order=(0, 1)))
        r, c = self.d._coords(dst.layout, op)
        o0, o1 = (self.d.one(v) for v in op.offsets)
        sizes, strides = [self.d.one(v) for v in op.sizes][::-1], [self.d.one(v) for v in op.strides][::-1]
        rows = [self.d._piece_offset(o1, r, i, view_shape[0], dst.layout[0], d0, op) for i in range(n0)]
        cols = [self.d._piece_offset(o0, c, j, view_shape[1], dst.layout[1], d1, op) for j in range(n1)]
        base = column_major_view(self.d, self.d.one(op.source), op)
        self.d.vmap[op.tile] = [self.d.emit(xetile.InitTileOp(base, [row, col], ttype, sizes, strides), op).tile
                              for row in rows for col in cols]

    def update_transposed_view(self, op: xetile.UpdateTileOffsetOp) -> None:
        dx, dy = self.d.one(op.offset_x), self.d.one(op.offset_y)
        self.d.vmap[op.result] = [self.d.emit(xetile.UpdateTileOffsetOp(t, dy, dx), op).result
                                for t in self.d.vmap[op.tile]]

    def _op_TileTransposeOp(self, op: xetile.TileTransposeOp) -> None:
        dst = self.d.maps.map_of(op.result)
        if dst is None:
            self.d._clone(op)
            return
        load = op.source.owner
        if isinstance(load, xetile.LoadTileOp) and self.folded_map(load.tile) is not None:
            self.d.vmap[op.result] = list(self.d.vmap[op.source])  # loaded already transposed
            return
        if self._in_place(op) and self._pieces_fit_registers(op):
            self.d.vmap[op.result] = self._transpose_per_piece(op)
            return
        self.d.vmap[op.result] = self._transpose_through_slm(op, self.d.maps.map_of(op.source), dst)

    def _pieces_fit_registers(self, op: xetile.TileTransposeOp) -> bool:
        """Every source piece can be transposed in registers (register_transpose.py)."""
        families, roots = self.a_operand_roots
        if families.find(op.source) in roots or families.find(op.result) in roots:
            return False
        elem = op.source.type.element_type
        return all(fits_registers(_shape(p), elem, self.d.target) for p in self.d.vmap[op.source])

    def _transpose_per_piece(self, op: xetile.TileTransposeOp) -> list[SSAValue]:
        """Result piece ``(i, j)`` is the subgroup-level transpose of source piece ``(j, i)``
        (xetile-sg-transpose then lowers each one in registers)."""
        (s0, s1), _ = self.d._sg_shape(self.d.maps.map_of(op.source), _shape(op.source))
        pieces = self.d.vmap[op.source]
        out = []
        for i in range(s1):
            for j in range(s0):
                piece = pieces[j * s1 + i]
                rtype = VectorType(piece.type.element_type, list(_shape(piece))[::-1])
                out.append(self.d.emit(xetile.TileTransposeOp(piece, [1, 0], rtype), op).result)
        return out

    def _transpose_through_slm(self, op, src, dst) -> list[SSAValue]:
        """The exchange (8-bit values widened to 16 bits in SLM, narrowed after)."""
        emit = lambda new: self.d.emit(new, op)  # noqa: E731
        pieces = [widen_for_slm(emit, piece) for piece in self.d.vmap[op.source]]
        wide = self._exchange_through_slm(op, src, dst, pieces, slm_element(op.source.type.element_type))
        return [narrow_from_slm(emit, v, op.source.type.element_type) for v in wide]

    def _exchange_through_slm(self, op, src, dst, pieces, elem) -> list[SSAValue]:
        shape = _shape(op.source)
        self.d.vectors.check_slm(op, shape, elem)
        space = IntegerAttr(SLM_SPACE, 64)
        buf = self.d.emit(memref.AllocOp([], [], MemRefType(elem, list(shape), memory_space=space)), op).memref
        view_shape = shape[::-1]
        groups = self.d.barriers.exchange_groups(shape, Region(src, shape), Region(dst, view_shape, transposed=True))
        if not isinstance(op.parent_op(), type(self.d.fn)):  # in a loop: earlier readers first
            self.d.barriers.exchange_barrier(op, groups)
        for piece, tile in zip(pieces, self.d.vectors.slm_tiles(op, buf, src, shape, elem, [], []), strict=True):
            self.d.emit(xetile.StoreTileOp(piece, tile), op)
        self.d.barriers.exchange_barrier(op, groups)
        view_type = MemRefType(elem, list(view_shape), StridedLayoutAttr([1, shape[1]], 0), memory_space=space)
        view = self.d.emit(memref.ReinterpretCastOp.from_dynamic(buf, [0], list(view_shape), [1, shape[1]],
                                                               view_type), op).result
        (n0, n1), (d0, d1) = self.d._sg_shape(dst, view_shape)
        r, c = self.d._coords(dst.layout, op)
        zero = self.d.const_index(0, op)
        ttype = xetile.TileType([d0, d1], elem, xetile.TileAttr(order=(0, 1), memory_space=SLM_SPACE))
        rows = [self.d._piece_offset(zero, r, i, view_shape[0], dst.layout[0], d0, op) for i in range(n0)]
        cols = [self.d._piece_offset(zero, c, j, view_shape[1], dst.layout[1], d1, op) for j in range(n1)]
        out = []
        for row in rows:
            for col in cols:
                tile = self.d.emit(xetile.InitTileOp(view, [row, col], ttype), op).tile
                out.append(self.d.emit(xetile.LoadTileOp(tile, VectorType(elem, [d0, d1])), op).value)
        return out

