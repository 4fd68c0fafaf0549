"""Workgroup-level vector ops in ``xetile-wg-to-sg``: element-wise ops, tile_broadcast,
tile_reduce and tile_conv_layout (through shared local memory).

Map rules (XeTile RFC, Workgroup Level extension):

* an element-wise op's operands and result share one map; splat constants and scalar
  broadcasts take the map of the op that uses them; each subgroup applies the op to its
  pieces;
* ``tile_reduce {wg_map}`` over dim d: the source map has the same sg_layout, sg_data of
  the source's whole size along d and the result's sg_data along the other dim; every
  subgroup reduces its own pieces. A source that splits d across subgroups is reduced in
  two steps: each subgroup reduces its piece to a partial, the partials are redistributed
  through SLM (tile_conv_layout) so that every subgroup holds all partials of its rows
  (columns), and a second local reduction combines them;
* ``tile_broadcast {wg_map}`` along d: the source map has sg_data 1 along d;
* ``tile_conv_layout``: each subgroup stores its pieces (source map) into an SLM buffer of
  the workgroup tile's shape, a barrier, then each subgroup loads its pieces of the target
  map. Inside a loop a barrier also precedes the stores, so that no subgroup overwrites
  partials another is still reading. The barriers are named barriers per group of
  subgroups when the exchange stays inside independent groups (exchange_barriers.py),
  else workgroup barriers. A tile larger than the SLM left goes in rounds of row chunks
  (conv_rounds.py).
"""
from __future__ import annotations

from xdsl.dialects import memref, vector
from xdsl.dialects.builtin import IntegerAttr, MemRefType, VectorType
from xdsl.ir import Operation, SSAValue

from ....dialects import _asm, xetile
from ....dialects.walk import ops_in
from ....errors import LoweringError
from ....dialects.types import bit_width
from ...analysis.op_kinds import combine_op, is_elementwise, is_vector
from ...analysis.sg_groups import Region
from .conv_rounds import ConvRounds
from .transpose import infer_transpose

SLM_SPACE = 3


def _shape(v: SSAValue) -> tuple[int, ...]:
    return tuple(v.type.get_shape())


def _fmt(m: xetile.WgMapAttr) -> str:
    return f"wg_map(sg_layout={list(m.layout)}, sg_data={list(m.data)})"


def _with(m: xetile.WgMapAttr, dim: int, value: int) -> xetile.WgMapAttr:
    data = list(m.data)
    data[dim] = value
    return xetile.WgMapAttr(m.layout, tuple(data))


# --- map inference --------------------------------------------------------------------------
def infer(inf) -> None:
    """Propagate maps through the vector ops of ``inf.fn`` until nothing changes."""
    for _ in range(8):
        before = dict(inf.by_root)
        for op in ops_in(inf.fn):
            _infer_op(inf, op)
        if before == inf.by_root:
            return


def _infer_op(inf, op: Operation) -> None:
    if isinstance(op, xetile.TileConvLayoutOp):
        if op.wg_map_source is not None:
            inf.set(op.source, op.wg_map_source, op, "the tile_conv_layout source")
        inf.set(op.result, op.wg_map, op, "the tile_conv_layout result")
    elif isinstance(op, xetile.TileReduceOp):
        _infer_reduce(inf, op)
    elif isinstance(op, xetile.TileTransposeOp):
        infer_transpose(inf, op)
    elif isinstance(op, xetile.TileBroadcastOp):
        dims = _asm.as_int_list(op.broadcast_dims)
        src, res = inf.map_of(op.source), op.wg_map or inf.map_of(op.result)
        if res is not None:
            inf.set(op.result, res, op, "the tile_broadcast result")
            want = res
            for d in dims:
                want = _with(want, d, 1)
            if src is not None and src != want:
                raise LoweringError(f"tile_broadcast: the source is distributed as {_fmt(src)}, but the result's "
                                    f"{_fmt(res)} needs {_fmt(want)} (same sg_layout, sg_data 1 along the "
                                    f"broadcast dimension)", op)
            inf.set(op.source, want, op, "the tile_broadcast source")
        elif src is not None:
            want = src
            for d in dims:
                want = _with(want, d, _shape(op.result)[d] // src.layout[d] or 1)
            inf.set(op.result, want, op, "the tile_broadcast result")
    elif is_elementwise(op) or isinstance(op, vector.BroadcastOp):
        vecs = [v for v in list(op.operands) + list(op.results) if is_vector(v)]
        maps = {inf.map_of(v) for v in vecs} - {None}
        if len(maps) > 1:
            raise LoweringError(f"{op.name}: the operands are distributed differently ("
                                f"{', '.join(sorted(_fmt(m) for m in maps))}); convert one with tile_conv_layout",
                                op)
        if maps:
            m = maps.pop()
            for v in vecs:
                inf.set(v, m, op, f"this {op.name} operand")


def _infer_reduce(inf, op: xetile.TileReduceOp) -> None:
    dims = _asm.as_int_list(op.reduction_dims)
    if len(dims) != 1:
        if inf.map_of(op.source) is not None or op.wg_map is not None or inf.map_of(op.result) is not None:
            raise LoweringError(f"tile_reduce: a workgroup tile is reduced along one dimension at a time "
                                f"(reduction_dims {dims}): reduce dimension 1, then dimension 0", op)
        return
    (dim,) = dims
    size = _shape(op.source)[dim]
    src, res = inf.map_of(op.source), op.wg_map or inf.map_of(op.result)
    if res is not None:
        inf.set(op.result, res, op, "the tile_reduce result")
        if res.data[dim] != 1:
            raise LoweringError(f"tile_reduce: the result's {_fmt(res)} must have sg_data 1 along the reduced "
                                f"dimension {dim}", op)
        if src is None:
            inf.set(op.source, _with(res, dim, size), op, "the tile_reduce source")
        elif src.layout != res.layout or src.data[1 - dim] != res.data[1 - dim]:
            raise LoweringError(f"tile_reduce: the source is distributed as {_fmt(src)}, but the result's "
                                f"{_fmt(res)} needs the same sg_layout and sg_data {res.data[1 - dim]} along "
                                f"dimension {1 - dim} (sg_data {size}, the whole size, along the reduced "
                                f"dimension)", op)
    elif src is not None:
        inf.set(op.result, _with(src, dim, 1), op, "the tile_reduce result")


def _feeds_one_reduce(op: xetile.TileConvLayoutOp) -> bool:
    """A conversion whose only user is a one-dimension tile_reduce in the same block."""
    if len(list(op.result.uses)) != 1:
        return False
    (use,) = list(op.result.uses)
    user = use.operation
    return (isinstance(user, xetile.TileReduceOp) and user.parent_block() is op.parent_block()
            and len(_asm.as_int_list(user.reduction_dims)) == 1)


# --- distribution --------------------------------------------------------------------------
class VectorDistribution:
    """Per-piece vector ops and SLM exchanges, for the wg-to-sg distributor ``d``."""

    def __init__(self, d):
        self.d = d
        self.rounds = ConvRounds(d)
        #: tile_conv_layout ops whose one tile_reduce combines partials instead
        self.reduce_first: set[Operation] = set()

    def distribute_vector_op(self, op: Operation) -> bool:
        """Clone an element-wise op (or a scalar broadcast) once per piece; False when the
        op is not a workgroup-level vector op."""
        if not (is_elementwise(op) or isinstance(op, vector.BroadcastOp)):
            return False
        m = self.d.maps.map_of(op.results[0])
        if m is None:
            return False
        n, piece = self._count(m, _shape(op.results[0]))
        outs = [[] for _ in op.results]
        for k in range(n):
            operands = [self.d.vmap[v][k] if len(self.d.vmap[v]) > 1 else self.d.one(v) for v in op.operands]
            new = self.d.emit(type(op).create(operands=operands,
                                            result_types=[VectorType(r.type.element_type, list(piece))
                                                          for r in op.results],
                                            properties=dict(op.properties), attributes=dict(op.attributes)), op)
            for out, r in zip(outs, new.results):
                out.append(r)
        for r, out in zip(op.results, outs):
            self.d.vmap[r] = out
        return True

    def _count(self, m, shape) -> tuple[int, tuple[int, int]]:
        (n0, n1), piece = self.d._sg_shape(m, shape)
        return n0 * n1, piece

    def _op_TileBroadcastOp(self, op: xetile.TileBroadcastOp) -> None:
        m = self.d.maps.map_of(op.result)
        if m is None:
            self.d._clone(op)
            return
        (n0, n1), piece = self.d._sg_shape(m, _shape(op.result))
        (s0, s1), _ = self.d._sg_shape(self.d.maps.map_of(op.source), _shape(op.source))
        dims = _asm.as_int_list(op.broadcast_dims)
        src, out = self.d.vmap[op.source], []
        rtype = VectorType(op.result.type.element_type, list(piece))
        for i in range(n0):
            for j in range(n1):
                s = src[(0 if 0 in dims else i) * s1 + (0 if 1 in dims else j)]
                out.append(self.d.emit(xetile.TileBroadcastOp(s, dims, rtype), op).result)
        self.d.vmap[op.result] = out

    def _op_TileReduceOp(self, op: xetile.TileReduceOp) -> None:
        src_map = self.d.maps.map_of(op.source)
        if src_map is None:
            self.d._clone(op)
            return
        (dim,) = _asm.as_int_list(op.reduction_dims)
        size = _shape(op.source)[dim]
        conv = op.source.owner
        if conv in self.reduce_first:  # tile_conv_layout + tile_reduce: reduce, then exchange
            conv_map = self.d.maps.map_of(conv.source)
            pieces = self._local_reduce(op, self.d.vmap[conv.source], conv_map, _shape(op.source), dim)
            self.d.vmap[op.result] = self._combine_partials(op, pieces, conv_map, dim)
            return
        pieces = self._local_reduce(op, self.d.vmap[op.source], src_map, _shape(op.source), dim)
        if src_map.data[dim] == size:
            self.d.vmap[op.result] = pieces
            return
        if dim == 1:
            self.d.vmap[op.result] = self._combine_partials(op, pieces, src_map, dim)
            return
        self._cross_subgroup_reduce(op, pieces, src_map, dim)

    def _combine_partials(self, op, partials: list[SSAValue], m, dim: int) -> list[SSAValue]:
        """Partials of the source map ``m`` (each subgroup's pieces reduced along ``dim``)
        -> SLM, a ``[rows, layout[1]]`` (or ``[layout[0], cols]``) workgroup tile -> each
        subgroup loads, for its pieces of the result's map, the ``layout[dim]`` partials of
        its rows (columns) one column (row) at a time and combines them."""
        shape = _shape(op.source)
        lay = m.layout[dim]
        _refuse_wrapping_reduce(op, m, dim, shape)
        pshape = list(shape)
        pshape[dim] = lay
        pshape = tuple(pshape)
        elem = op.source.type.element_type
        self.check_slm(op, pshape, elem)
        buf = self.d.emit(memref.AllocOp([], [], MemRefType(elem, list(pshape), memory_space=IntegerAttr(SLM_SPACE,
                                                                                                       64))), op)
        res = self.d.maps.map_of(op.result)
        groups = self.d.barriers.exchange_groups(pshape, Region(_with(m, dim, 1), pshape), Region(_with(res, dim, lay), pshape))
        if not isinstance(op.parent_op(), type(self.d.fn)):  # in a loop: earlier readers first
            self.d.barriers.exchange_barrier(op, groups)
        for piece, tile in zip(partials, self.slm_tiles(op, buf.memref, _with(m, dim, 1), pshape, elem, [], []),
                               strict=True):
            self.d.emit(xetile.StoreTileOp(piece, tile), op)
        self.d.barriers.exchange_barrier(op, groups)
        combine = combine_op(op.kind.data, elem, op)
        per_slice = [self._slm_slice_tiles(op, buf.memref, res, pshape, elem, dim, k) for k in range(lay)]
        out = []
        for tiles in zip(*per_slice):
            acc = None
            for tile in tiles:
                v = self.d.emit(xetile.LoadTileOp(tile, VectorType(elem, tile.type.get_shape())), op).value
                acc = v if acc is None else self.d.emit(combine(acc, v), op).result
            out.append(acc)
        return out

    def _slm_slice_tiles(self, op, buf, res, pshape, elem, dim: int, k: int) -> list[SSAValue]:
        """This subgroup's pieces of the result map ``res`` at column (row) ``k`` of ``buf``."""
        rshape = list(pshape)
        rshape[dim] = 1
        (n0, n1), (d0, d1) = self.d._sg_shape(res, rshape)
        r, c = self.d._coords(res.layout, op)
        zero = self.d.const_index(0, op)
        ttype = xetile.TileType([d0, d1], elem, xetile.TileAttr(memory_space=SLM_SPACE))
        rows = ([self.d.const_index(k, op)] if dim == 0 else
                [self.d._piece_offset(zero, r, i, rshape[0], res.layout[0], d0, op) for i in range(n0)])
        cols = ([self.d.const_index(k, op)] if dim == 1 else
                [self.d._piece_offset(zero, c, j, rshape[1], res.layout[1], d1, op) for j in range(n1)])
        return [self.d.emit(xetile.InitTileOp(buf, [row, col], ttype), op).tile for row in rows for col in cols]

    def _local_reduce(self, op, src: list[SSAValue], m, shape, dim: int) -> list[SSAValue]:
        """Reduce each piece along ``dim`` and combine a subgroup's pieces along ``dim``."""
        (n0, n1), (d0, d1) = self.d._sg_shape(m, shape)
        kind, elem = op.kind.data, op.source.type.element_type
        rtype = VectorType(elem, [1, d1] if dim == 0 else [d0, 1])
        combine = combine_op(kind, elem, op)
        out = []
        for a in range(1 if dim == 0 else n0):
            for b in range(1 if dim == 1 else n1):
                parts = [src[i * n1 + j] for i in (range(n0) if dim == 0 else [a])
                         for j in (range(n1) if dim == 1 else [b])]
                acc = None
                for p in parts:
                    r = self.d.emit(xetile.TileReduceOp(kind, p, [dim], rtype), op).result
                    acc = r if acc is None else self.d.emit(combine(acc, r), op).result
                out.append(acc)
        return out

    def _cross_subgroup_reduce(self, op, partials: list[SSAValue], m, dim: int) -> None:
        """Partials (one per subgroup along ``dim``) -> SLM -> every subgroup -> reduced."""
        shape = _shape(op.source)
        lay = m.layout[dim]
        _refuse_wrapping_reduce(op, m, dim, shape)
        sg = self.d.target.subgroup_size
        if dim == 1 and lay % sg:
            raise LoweringError(
                f"tile_reduce over dimension 1 split across {lay} subgroups ({_fmt(m)}) is not lowered yet: their "
                f"partial sums would form a {shape[0]}x{lay} tile, narrower than a subgroup ({sg} lanes on "
                f"{self.d.target.name}); give each subgroup whole rows (sg_data[1] = {shape[1]}), e.g. with "
                f"tile_conv_layout to wg_map(sg_layout=[{m.layout[0] * lay}, 1], ...) first", op)
        pshape = list(shape)
        pshape[dim] = lay
        part_map = _with(m, dim, 1)
        all_map = _with(m, dim, lay)
        gathered = self.exchange(op, partials, part_map, all_map, tuple(pshape), op.source.type.element_type)
        self.d.vmap[op.result] = self._local_reduce(op, gathered, all_map, tuple(pshape), dim)

    def _op_TileConvLayoutOp(self, op: xetile.TileConvLayoutOp) -> None:
        src, dst = self.d.maps.map_of(op.source), op.wg_map
        if src == dst:
            self.d.vmap[op.result] = list(self.d.vmap[op.source])
            return
        if _feeds_one_reduce(op):  # the reduce combines partials instead: far less SLM
            self.reduce_first.add(op)
            self.d.vmap[op.result] = []
            return
        shape, elem = _shape(op.source), op.source.type.element_type
        if not self.rounds.fits_in_slm(shape, elem):  # in rounds of row chunks (conv_rounds.py)
            self.d.vmap[op.result] = self.rounds.exchange_in_rounds(op, self.d.vmap[op.source], src, dst, shape, elem)
            return
        self.d.vmap[op.result] = self.exchange(op, self.d.vmap[op.source], src, dst, shape, elem)

    def exchange(self, op, pieces, src, dst, shape, elem) -> list[SSAValue]:
        """Store ``pieces`` (map ``src``) into a new SLM buffer of ``shape``, barrier, and
        load this subgroup's pieces of map ``dst``."""
        self.check_slm(op, shape, elem)
        buf = self.d.emit(memref.AllocOp([], [], MemRefType(elem, list(shape), memory_space=IntegerAttr(SLM_SPACE,
                                                                                                     64))), op)
        sizes, strides = [], []  # a static memref: they come from its type
        groups = self.d.barriers.exchange_groups(shape, Region(src, shape), Region(dst, shape))
        if not isinstance(op.parent_op(), type(self.d.fn)):  # in a loop: earlier readers first
            self.d.barriers.exchange_barrier(op, groups)
        for piece, tile in zip(pieces, self.slm_tiles(op, buf.memref, src, shape, elem, sizes, strides),
                               strict=True):
            self.d.emit(xetile.StoreTileOp(piece, tile), op)
        self.d.barriers.exchange_barrier(op, groups)
        out = []
        for tile in self.slm_tiles(op, buf.memref, dst, shape, elem, sizes, strides):
            vtype = VectorType(elem, tile.type.get_shape())
            out.append(self.d.emit(xetile.LoadTileOp(tile, vtype), op).value)
        return out

    def check_slm(self, op, shape, elem) -> None:
        """Every exchange has its own buffer; their total must fit the target's SLM."""
        what = "tile_conv_layout" if isinstance(op, xetile.TileConvLayoutOp) else "tile_reduce across subgroups"
        self.d.slm.take(shape[0] * shape[1] * bit_width(elem) // 8, op,
                        f"{what} exchanges a {shape[0]}x{shape[1]} {elem} workgroup tile through shared local memory",
                        "use a smaller workgroup tile")

    def slm_tiles(self, op, buf, m, shape, elem, sizes, strides) -> list[SSAValue]:
        (n0, n1), (d0, d1) = self.d._sg_shape(m, shape)
        r, c = self.d._coords(m.layout, op)
        zero = self.d.const_index(0, op)
        ttype = xetile.TileType([d0, d1], elem, xetile.TileAttr(memory_space=SLM_SPACE))
        rows = [self.d._piece_offset(zero, r, i, shape[0], m.layout[0], d0, op) for i in range(n0)]
        cols = [self.d._piece_offset(zero, c, j, shape[1], m.layout[1], d1, op) for j in range(n1)]
        return [self.d.emit(xetile.InitTileOp(buf, [row, col], ttype, sizes, strides), op).tile
                for row in rows for col in cols]


def _refuse_wrapping_reduce(op, m, dim: int, shape) -> None:
    """A reduction across subgroups whose map wraps around ``dim`` would count the data
    the subgroups share twice: refused, saying which maps would do."""
    if m.layout[dim] * m.data[dim] > shape[dim]:
        raise LoweringError(f"tile_reduce: the source's {_fmt(m)} wraps around dimension {dim} (subgroups "
                            f"share data), so their partial results would be counted twice; give the "
                            f"reduced dimension sg_data {shape[dim]} or sg_layout * sg_data = {shape[dim]}", op)
