"""A K loop whose tile_mma reads its operands with less transposing the other way round
computes ``C^T = B^T . A^T`` instead (run first in ``xetile-wg-to-sg``, on
workgroup-level XeTile).

``C[m, n] = sum_k A[m, k] B[k, n]``, so ``C^T = B^T . A^T``: each operand tile family
flips its order (an ``order = [0, 1]`` view becomes the row-major tile over the same array
and the other way round; offsets, extents, strides and ``update_tile_offset`` deltas
swap), operand B becomes operand A.  What it saves: a transposed operand B is one 32-bit
transposed read per block, already VNNI; a transposed operand A needs its 16-bit halves
unpacked (two movs per register, 64 per 32x32 f16 tile) or its bytes paired.  So the loop
is swapped when fewer operand-A elements per subgroup are then read transposed
(:func:`_cheaper_swapped`): A stored ``K x M`` and B stored ``N x K`` (nothing left to
unpack), or A stored ``K x M`` and B row-major with the C subgroup tile narrower in N than
in M; and on a target that reads transposed 16-bit tiles with per-lane row loads (ARC:
``Target.lane_row_load_elem_bits``, no 2D block IO) a plain A.B too, whose row-major
operands cost one message per row there.  The accumulator is kept transposed (every
``wg_map`` swapped, so each subgroup holds the transpose of a C piece) and the epilogue
stores it through an ``order = [0, 1]`` view of C (a masked scattered store per row, once
per kernel, not per K step).  pvc hot loop
(benchmarks/gemm_isa.py): f16 A^T.B^T 256x256 169 -> 65, A^T.B M = 64 122 -> 81.

Applied only to exactly a GEMM step: the operand tiles are global tiles only loaded into
that tile_mma and moved, made by init_tile with explicit extents and strides; the
accumulator is carried by the loop from a constant and its result only stored, through a
row-major global tile; and the swapped C subgroup tile has both dimensions multiples of 16
(DPAS N is 16 lanes on pvc: an 8-row M = 1 tile stays as it is).
"""
from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Operation, SSAValue

from ....dialects import _mixed, retype, xetile
from ....dialects.walk import ops_in
from ....dialects.types import bit_width
from ....targets import Target
from ...analysis.families import Families
from ...rewrites import constants
from ...rewrites.transposed_tiles import is_transposed
from .transpose import swapped

#: the swapped C subgroup tile's dims must be multiples of this (the widest DPAS N)
_DIM_MULTIPLE = 16


def swapped_map(m: xetile.WgMapAttr | None) -> xetile.WgMapAttr | None:
    """The map of the transposed value (sg_layout and sg_data swapped), None for None."""
    return None if m is None else swapped(m)


def swap_transposed_operands(fn: func.FuncOp, target: Target | None = None) -> int:
    """Rewrite every K loop of ``fn`` that fits (module doc) for ``target`` (None: only
    the rules that hold on every target); returns how many."""
    done = 0
    for loop in [op for op in ops_in(fn) if isinstance(op, scf.ForOp)]:
        for mma in [op for op in loop.body.block.ops if isinstance(op, xetile.TileMMAOp)]:
            plan = _match(fn, loop, mma, target)
            if plan is not None:
                _rewrite(loop, mma, *plan)
                done += 1
    return done


# --- matching ------------------------------------------------------------------------
def _match(fn, loop: scf.ForOp, mma: xetile.TileMMAOp, target: Target | None):
    """(operand A family, operand B family, accumulator index, store, C init_tile), or None."""
    loads = [v.owner for v in (mma.a, mma.b)]
    if not all(isinstance(ld, xetile.LoadTileOp) and len(list(ld.value.uses)) == 1 for ld in loads):
        return None
    if mma.c is None or mma.c.owner is not loop.body.block or not _c_fits(mma):
        return None
    index = mma.c.index - 1  # block arg 0 is the induction variable
    init, result = loop.iter_args[index], loop.results[index]
    yielded = loop.body.block.last_op.operands[index]
    if yielded is not mma.output or len(list(mma.output.uses)) != 1 or len(list(mma.c.uses)) != 1:
        return None
    if not (isinstance(init.owner, arith.ConstantOp) and len(list(init.uses)) == 1):
        return None
    store = _only_store(result)
    if store is None:
        return None
    families = Families(fn)
    members = []
    for ld in loads:
        family = _operand_family(fn, families, ld.tile)
        if family is None:
            return None
        members.append(family)
    if not _cheaper_swapped(mma, *(is_transposed(ld.tile.type) for ld in loads), _lane_rows(target, mma)):
        return None
    return members[0], members[1], index, store


def _lane_rows(target: Target | None, mma: xetile.TileMMAOp) -> bool:
    """Whether ``target`` reads transposed operands of this tile_mma's input type with
    per-lane row loads (``Target.lane_row_load_elem_bits``: ARC, 16-bit inputs)."""
    bits = {bit_width(v.type.element_type) for v in (mma.a, mma.b)}
    return target is not None and len(bits) == 1 and bits <= set(target.lane_row_load_elem_bits)


def _cheaper_swapped(mma: xetile.TileMMAOp, a_transposed: bool, b_transposed: bool, lane_rows: bool = False) -> bool:
    """Whether fewer operand-A elements per subgroup are read transposed after the swap.
    A transposed operand B is one 32-bit transposed read per block, already in the VNNI
    layout; a transposed operand A needs its 16-bit halves unpacked (2 movs per register)
    or its bytes paired.  Swapped, B becomes operand A (transposed when B is row-major).

    Where transposed operands are per-lane row loads (``lane_rows``: ARC, no 2D block
    IO) a row-major A.B is swapped too: its row-major operands cost one subgroup block
    read per row (2 per DPAS for 32x32 pieces), the swapped ones one 256-byte
    ``load.ugm.d32x8`` per 8 lanes x 16 elements (0.5 per DPAS; docs/decisions/
    016-transposes.md)."""
    if lane_rows and not a_transposed and not b_transposed:
        return True
    m, n = tuple(mma.wg_map_c.data) if mma.wg_map_c is not None else tuple(mma.output.type.get_shape())
    before = m if a_transposed else 0
    after = n if not b_transposed else 0
    return after < before


def _c_fits(mma: xetile.TileMMAOp) -> bool:
    """The swapped C subgroup tile (the map's sg_data, or the whole value) fits DPAS."""
    m = mma.wg_map_c
    dims = tuple(m.data) if m is not None else tuple(mma.output.type.get_shape())
    return len(dims) == 2 and all(d % _DIM_MULTIPLE == 0 for d in dims)


def _only_store(result: SSAValue) -> xetile.StoreTileOp | None:
    """The one store of the loop's accumulator result, into a row-major global tile that
    is made for it by init_tile and used nowhere else."""
    uses = list(result.uses)
    if len(uses) != 1 or not isinstance(uses[0].operation, xetile.StoreTileOp):
        return None
    store = uses[0].operation
    init = store.tile.owner
    if not isinstance(init, xetile.InitTileOp) or len(list(store.tile.uses)) != 1 or not _explicit_extents(init):
        return None
    attr = store.tile.type.attr
    if tuple(attr.order_list) != (1, 0) or attr.memory_space.data != 0 or attr.is_scattered or attr.blocks:
        return None
    return store


def _operand_family(fn, families: Families, tile: SSAValue) -> list[SSAValue] | None:
    """Every value of ``tile``'s family when it is a global tile (either order) made by
    init_tile, moved by update_tile_offset and loops, and only loaded into one tile_mma."""
    members = families.members(fn, families.find(tile))
    order = tuple(tile.type.attr.order_list)
    for v in members:
        attr = v.type.attr if isinstance(v.type, xetile.TileType) else None
        if attr is None or tuple(attr.order_list) != order or attr.memory_space.data != 0 or attr.is_scattered:
            return None
        if attr.blocks:
            return None
        owner = v.owner
        if isinstance(owner, Operation) and not isinstance(owner, (xetile.InitTileOp, xetile.UpdateTileOffsetOp,
                                                                  scf.ForOp)):
            return None
        if isinstance(owner, xetile.InitTileOp) and not _explicit_extents(owner):
            return None
        for use in v.uses:
            user = use.operation
            if isinstance(user, (xetile.UpdateTileOffsetOp, scf.ForOp, scf.YieldOp)):
                continue
            if not (isinstance(user, xetile.LoadTileOp) and len(list(user.value.uses)) == 1
                    and isinstance(next(iter(user.value.uses)).operation, xetile.TileMMAOp)):
                return None
    return members


def _explicit_extents(init: xetile.InitTileOp) -> bool:
    """The init_tile gives its array's extents and strides as operands (a dynamic memref
    or an address): swapping them gives the other order's view.  A static memref's
    transposed view is a reinterpret_cast (transpose.column_major_view); left alone."""
    return len(init.sizes) == 2 and len(init.strides) == 2


# --- rewriting -----------------------------------------------------------------------
def _row_major(t: xetile.TileType) -> xetile.TileType:
    """The row-major tile over the same array that an ``order = [0, 1]`` tile views."""
    rows, cols = t.get_shape()
    attr = xetile.TileAttr(order=(1, 0), wg_map=swapped_map(t.attr.wg), memory_space=t.attr.memory_space.data)
    return xetile.TileType([cols, rows], t.element_type, attr)


def _transposed_view(t: xetile.TileType) -> xetile.TileType:
    rows, cols = t.get_shape()
    attr = xetile.TileAttr(order=(0, 1), wg_map=swapped_map(t.attr.wg), memory_space=t.attr.memory_space.data)
    return xetile.TileType([cols, rows], t.element_type, attr)


def _swap_offsets(op: Operation, values, make) -> Operation:
    """A copy of an init_tile/update_tile_offset with its two offsets swapped (constants
    among them stay constants)."""
    mixed = _mixed.mixed(op, values)[::-1]
    operands = [v for v in mixed if not isinstance(v, int)]
    static = None if len(operands) == 2 else [v if isinstance(v, int) else _mixed.DYNAMIC for v in mixed]
    new = make(operands, static)
    new.location = op.location
    return new


def _flip_init(op: xetile.InitTileOp, new_type: xetile.TileType) -> None:
    """Replace an init_tile by the same tile seen in the other order: offsets, sizes and
    strides swap (the frontend gives an ``order = [0, 1]`` view swapped ones)."""
    def make(offsets, static):
        new = xetile.InitTileOp(op.source, offsets, new_type, list(op.sizes)[::-1], list(op.strides)[::-1])
        if static is not None:
            new.properties[_mixed.CONST_OFFSETS] = _mixed.const_attr(static)
        return new
    new = _swap_offsets(op, op.offsets, make)
    op.parent_block().insert_op_before(new, op)
    op.tile.replace_all_uses_with(new.tile)
    op.parent_block().erase_op(op)


def _flip_update(op: xetile.UpdateTileOffsetOp, new_type) -> None:
    static = op.const_offsets
    if static is None:
        x, y = op.offset_x, op.offset_y
        new = xetile.UpdateTileOffsetOp(op.tile, y, x)
    else:
        new = _swap_offsets(op, op.offset_values(),
                            lambda vals, st: xetile.UpdateTileOffsetOp(op.tile, *(list(vals) + [None] * 2)[:2],
                                                                       const_offsets=st))
    new.location = op.location
    op.parent_block().insert_op_before(new, op)
    op.result.replace_all_uses_with(new.result)
    op.parent_block().erase_op(op)
    retype(new.result, new_type)


def _flip_family(members: list[SSAValue]) -> None:
    """Every value of an operand tile family becomes the same tile in the other order."""
    t = members[0].type
    new_type = _row_major(t) if is_transposed(t) else _transposed_view(t)
    for v in members:
        owner = v.owner
        retype(v, new_type)
        if isinstance(owner, xetile.InitTileOp):
            _flip_init(owner, new_type)
        elif isinstance(owner, xetile.UpdateTileOffsetOp):
            _flip_update(owner, new_type)
    for v in members:
        for use in list(v.uses):
            if isinstance(use.operation, xetile.LoadTileOp):
                ld = use.operation
                retype(ld.value, VectorType(ld.value.type.element_type, list(ld.value.type.get_shape())[::-1]))


def _transposed_vector(t: VectorType) -> VectorType:
    return VectorType(t.element_type, list(t.get_shape())[::-1])


def _rewrite(loop: scf.ForOp, mma: xetile.TileMMAOp, fam_a, fam_b, index: int, store: xetile.StoreTileOp) -> None:
    _flip_family(fam_a)
    _flip_family(fam_b)
    acc_type = _transposed_vector(mma.output.type)
    const = loop.iter_args[index].owner
    new_const = arith.ConstantOp(constants.dense(acc_type, constants.values(const).T), acc_type)
    const.parent_block().insert_op_before(new_const, const)
    const.result.replace_all_uses_with(new_const.result)
    const.parent_block().erase_op(const)
    new_mma = xetile.TileMMAOp(mma.b, mma.a, mma.c, acc_type, swapped_map(mma.wg_map_c))
    if mma.wg_map_a is not None or mma.wg_map_b is not None:
        new_mma.properties["wg_map_a"] = swapped_map(mma.wg_map_b)
        new_mma.properties["wg_map_b"] = swapped_map(mma.wg_map_a)
    new_mma.location = mma.location
    mma.parent_block().insert_op_before(new_mma, mma)
    mma.output.replace_all_uses_with(new_mma.output)
    mma.parent_block().erase_op(mma)
    for v in (loop.body.block.args[index + 1], loop.results[index]):
        retype(v, acc_type)
    c_init = store.tile.owner
    _flip_init(c_init, _transposed_view(store.tile.type))
