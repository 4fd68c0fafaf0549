"""``tile_conv_layout`` of a workgroup tile larger than the SLM left for it, staged in
rounds of row chunks (part of ``xetile-wg-to-sg``: a helper object of its distributor).

The tile's rows are cut into chunks of ``R`` rows, ``R`` a multiple of the pieces' heights
of both maps (so no piece straddles two chunks) and as large as the SLM budget allows:
``Target.slm_bytes`` minus what the kernel already allocates (the user's ``xt.slm_alloc``
buffers and earlier exchanges). One ``R x W`` buffer serves every round; the rounds are
an ``scf.for`` over the chunk index ``k`` (one copy of the code, whatever the count):

* each subgroup stores every source piece whose first row ``p`` lies in chunk ``k``
  (``p div R == k``, a runtime test: pieces move with the subgroup id) at buffer row
  ``p - k R`` (an ``scf.if`` without results),
* a barrier,
* each subgroup loads every target piece that lies in chunk ``k``
  (``scf.if`` yielding the loaded piece, else the piece so far; loop-carried),
* a barrier (this round's reads before the next round's stores; after the last round it
  also orders the reads before the stores of the next iteration of an enclosing loop).

So ``n`` rounds run ``2 n`` barriers (two in the code) and each element is stored and
loaded exactly once, as in the one-buffer exchange. A located error remains only when not
even one chunk (the least common multiple of the two piece heights, times the width) fits.
"""
from __future__ import annotations

import math

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IndexType, IntegerAttr, IntegerType, MemRefType, VectorType
from xdsl.ir import Block, Region, SSAValue

from ....dialects import xetile
from ....errors import LoweringError
from ....dialects.types import bit_width, type_name

SLM_SPACE = 3


def _fmt(m: xetile.WgMapAttr) -> str:
    return f"wg_map(sg_layout={list(m.layout)}, sg_data={list(m.data)})"


def chunk_rows(height: int, granule: int, max_rows: int) -> int:
    """Rows per round: a multiple of ``granule``, at most ``max_rows``, as few rounds as
    possible and, for that number of rounds, the smallest buffer; 0 when none fits."""
    largest = max_rows // granule * granule
    if largest == 0:
        return 0
    rounds = math.ceil(height / largest)
    return math.ceil(math.ceil(height / rounds) / granule) * granule


class ConvRounds:
    """A too-large conversion in row chunks, for the wg-to-sg distributor ``d``."""

    def __init__(self, d):
        self.d = d

    def fits_in_slm(self, shape, elem) -> bool:
        """Whether one buffer of ``shape`` fits next to what the kernel already allocates."""
        nbytes = shape[0] * shape[1] * bit_width(elem) // 8
        return self.d.slm.fits(nbytes)

    def exchange_in_rounds(self, op, pieces, src, dst, shape, elem) -> list[SSAValue]:
        """``pieces`` (map ``src``) -> this subgroup's pieces of map ``dst``, one row chunk
        of the tile per iteration of an ``scf.for`` through one chunk-sized SLM buffer."""
        rows = self._round_rows(op, src, dst, shape, elem)
        self.d.slm.used += rows * shape[1] * bit_width(elem) // 8  # _round_rows chose rows that fit
        buf = self.d.emit(memref.AllocOp([], [], MemRefType(elem, [rows, shape[1]],
                                                          memory_space=IntegerAttr(SLM_SPACE, 64))), op).memref
        stores = self._placed(op, src, shape, rows)
        loads = self._placed(op, dst, shape, rows)
        zeros = [self._zeros(op, elem, dst.data) for _ in loads]
        body = Block(arg_types=[IndexType()] + [z.type for z in zeros])
        saved, self.d.block = self.d.block, body
        k, prev = body.args[0], list(body.args[1:])
        first = self.d.emit(arith.MuliOp(k, self.d.const_index(rows, op)), op).result  # the chunk's first row
        for piece, place in zip(pieces, stores, strict=True):
            self._store_if(op, buf, piece, place, k, first)
        self.d.emit(gpu.BarrierOp(), op)
        out = [self._load_if(op, buf, v, place, k, first) for v, place in zip(prev, loads, strict=True)]
        self.d.emit(gpu.BarrierOp(), op)  # this round's readers before the next round's (iteration's) writers
        self.d.emit(scf.YieldOp(*out), op)
        self.d.block = saved
        count = math.ceil(shape[0] / rows)
        loop = self.d.emit(scf.ForOp(self.d.const_index(0, op), self.d.const_index(count, op), self.d.const_index(1, op),
                                   zeros, Region(body)), op)
        return list(loop.results)

    def _round_rows(self, op, src, dst, shape, elem) -> int:
        """Rows per round; a located error when not even one chunk fits."""
        for m in (src, dst):
            if shape[0] % m.data[0]:
                raise LoweringError(f"tile_conv_layout: the {shape[0]}-row tile does not fit SLM whole and is "
                                    f"staged in row chunks, which needs whole pieces: {_fmt(m)} has "
                                    f"{m.data[0]}-row pieces, which do not divide {shape[0]}", op)
        granule = math.lcm(src.data[0], dst.data[0])
        row_bytes = shape[1] * bit_width(elem) // 8
        left = self.d.slm.left
        rows = chunk_rows(shape[0], granule, left // row_bytes)
        if rows == 0:
            raise LoweringError(
                f"tile_conv_layout exchanges a {shape[0]}x{shape[1]} {type_name(elem)} workgroup tile through "
                f"shared local memory in rounds of row chunks; a chunk must hold whole pieces of the source's "
                f"{_fmt(src)} and the result's {_fmt(dst)}, i.e. a multiple of {granule} rows "
                f"({granule * row_bytes} B), but {self.d.target.name} has {self.d.target.slm_bytes} B per workgroup "
                f"and {left} B are left in this kernel; use maps whose pieces have fewer rows (sg_data[0]) or a "
                f"narrower workgroup tile", op)
        return rows

    def _placed(self, op, m, shape, rows) -> list[tuple[SSAValue, SSAValue, SSAValue]]:
        """Per piece of this subgroup in map ``m``: its chunk (first row div ``rows``), its
        first row and its first column (runtime values: they depend on the subgroup)."""
        (n0, n1), (d0, d1) = self.d._sg_shape(m, shape)
        r, c = self.d._coords(m.layout, op)
        zero = self.d.const_index(0, op)
        firsts = [self.d._piece_offset(zero, r, i, shape[0], m.layout[0], d0, op) for i in range(n0)]
        cols = [self.d._piece_offset(zero, c, j, shape[1], m.layout[1], d1, op) for j in range(n1)]
        size = self.d.const_index(rows, op)
        chunks = [self.d.emit(arith.DivUIOp(p, size), op).result for p in firsts]
        return [(chunk, p, col) for chunk, p in zip(chunks, firsts) for col in cols]

    def _in_round(self, op, chunk, k) -> SSAValue:
        return self.d.emit(arith.CmpiOp(chunk, k, "eq"), op).result

    def _slm_tile(self, op, buf, row, col, first, piece_shape, elem) -> SSAValue:
        local = self.d.emit(arith.SubiOp(row, first), op).result
        ttype = xetile.TileType(list(piece_shape), elem, xetile.TileAttr(memory_space=SLM_SPACE))
        return self.d.emit(xetile.InitTileOp(buf, [local, col], ttype), op).tile

    def _store_if(self, op, buf, piece, place, k, first) -> None:
        """Store ``piece`` at its row in the chunk when it lies in chunk ``k``."""
        chunk, row, col = place
        cond = self._in_round(op, chunk, k)

        def store():
            tile = self._slm_tile(op, buf, row, col, first, piece.type.get_shape(), piece.type.element_type)
            self.d.emit(xetile.StoreTileOp(piece, tile), op)
            return []

        self.d.emit(scf.IfOp(cond, [], Region(self._branch(op, store)), Region(self._branch(op, lambda: []))), op)

    def _load_if(self, op, buf, prev, place, k, first) -> SSAValue:
        """The piece loaded from chunk ``k`` when it lies there, else ``prev``."""
        chunk, row, col = place
        cond = self._in_round(op, chunk, k)
        vtype = prev.type

        def load():
            tile = self._slm_tile(op, buf, row, col, first, vtype.get_shape(), vtype.element_type)
            return [self.d.emit(xetile.LoadTileOp(tile, vtype), op).value]

        new = self.d.emit(scf.IfOp(cond, [vtype], Region(self._branch(op, load)),
                                 Region(self._branch(op, lambda: [prev]))), op)
        return new.results[0]

    def _branch(self, op, build) -> Block:
        """A block holding what ``build`` emits, ending in a yield of what it returns."""
        block, saved = Block(), self.d.block
        self.d.block = block
        try:
            values = build()
            self.d.emit(scf.YieldOp(*values), op)
        finally:
            self.d.block = saved
        return block

    def _zeros(self, op, elem, shape) -> SSAValue:
        """A zero piece: the value of a target piece before the round that loads it."""
        vtype = VectorType(elem, list(shape))
        zero = 0 if isinstance(elem, (IntegerType, IndexType)) else 0.0
        return self.d.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(vtype, [zero])), op).result
