"""Coalesced 2D block messages: one subgroup tile load or prefetch as the fewest, largest
legal messages (part of ``convert-xetile-to-xegpu``).

Blocking sizes a tile's blocks for DPAS (8x16 A, 16x16 B for 16-bit inputs); one 2D
block message per block costs a payload rebuilt field by field and splits the DPAS into
runs between the loads (measured with ocloc on the RFC 2.1 GEMM: 16 loads, 4 prefetches
and 176 hot-loop instructions per K step).  Here a tile whose descriptors only load,
prefetch and move gets one descriptor per *message*: ``g0`` block rows by ``g1`` block
columns, read as ``g0*b0`` rows of ``g1`` array blocks ``b1`` wide (``array_length``),
the largest shape the target lists for every kind of access the tile sees (read, VNNI
read_transform, prefetch; ``Target.find_block2d``).  The DPAS blocks are cut out of the
loaded value with ``vector.extract_strided_slice`` (+ ``vector.shape_cast`` dropping the
array dimension); xegpu-simt turns those into lane-local element ranges.

A message covers exactly the elements of the blocks it replaces (array blocks sit side
by side at ``x + a*b1``; out-of-bounds elements still read as 0), so results do not
change.  Only tile_mma operands of a plain K step (besides lane-local vector work) are
coalesced, when the accumulator
and the whole K step of operands fit ``Target.coalesced_register_share`` of the register
file (:func:`_plain_gemm_block`, :func:`_mma_operand_tiles`).  Not coalesced: other
loads (but the unpadded loads of one-row tiles, of 1-D arrays or rows of 2-D ones: a
few elements per lane, so messages of several blocks keep nothing more live), tiles that are stored, padded,
scattered, in SLM or moved for per-row accesses,
transposed tiles other than 16-bit operand A (:func:`choose_transposed`); 8-bit
elements (their per-lane pieces need packing); and tiles loaded in a K loop the
register budget may split (xegpu-split-accumulators keeps only some block rows
per copy, so messages must stay one block per descriptor there).  Prefetch-only tiles
are always coalesced (a prefetch holds no registers).
"""
from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func, scf, vector
from xdsl.dialects.builtin import MemRefType, VectorType
from xdsl.ir import Operation, SSAValue

from ...dialects import _asm, retype, xegpu, xetile
from ...dialects._vector_ops import ExtractStridedSliceOp, ShapeCastOp
from ...dialects.walk import ops_in
from ...dialects.types import bit_width
from ...dialects.attributes import LARGE_GRF_ATTR, REGISTER_BUDGET_ATTR
from ...targets import Target
from . import mma_relayout, scattered
from . import transposed_tiles as transposed
from ..analysis.families import Families
from ..analysis.op_kinds import is_elementwise

#: per-lane elements of one piece a large message travels in (the largest SPIR-V vector)
PIECE_ELEMENTS = 16
#: most rows of one message (the Xe codegen reference section 3.2: R up to 32)
_ROW_GROUPS = (8, 4, 2, 1)
_COUNTS = (8, 4, 2, 1)


@dataclass(frozen=True)
class Messages:
    """How a tile's ``R x C`` grid of ``b0 x b1`` blocks is read: messages of ``g0`` block
    rows and ``g1`` block columns (``g1`` = array_length), row-major over the tile."""

    blocks: tuple[int, int]
    grid: tuple[int, int]  # blocks per tile dimension
    g0: int
    g1: int
    #: an ``order = [0, 1]`` tile: each message is the ``b1 x g0*b0`` block of the
    #: row-major array underneath, read with a 32-bit transposed 2D block message
    transposed: bool = False

    @property
    def rows(self) -> int:
        return self.g0 * self.blocks[0]

    @property
    def message_grid(self) -> tuple[int, int]:
        """Messages per tile dimension (a transposed message may cover more block rows
        than the tile has: :func:`choose_transposed`)."""
        return -(-self.grid[0] // self.g0), self.grid[1] // self.g1

    def message_of(self, i: int, j: int) -> tuple[int, int, int]:
        """(message index, array block, first row in it) of block ``(i, j)``."""
        mi, mj = i // self.g0, j // self.g1
        return mi * self.message_grid[1] + mj, j % self.g1, (i % self.g0) * self.blocks[0]

    def offsets(self) -> list[tuple[int, int]]:
        """(row, column) offset of each message in the tile, row-major."""
        (b0, b1), (mr, mc) = self.blocks, self.message_grid
        return [(mi * self.g0 * b0, mj * self.g1 * b1) for mi in range(mr) for mj in range(mc)]


def choose(target: Target, kinds: set[str], shape, blocks, elem_bits: int) -> Messages | None:
    """The message shape covering the most blocks that every access kind allows, or None
    when that is one block (nothing to coalesce)."""
    (rows, cols), (b0, b1) = shape, blocks
    grid = (rows // b0, cols // b1)
    lanes = target.subgroup_size
    best = None
    for g0 in _ROW_GROUPS:
        for g1 in _COUNTS:
            if grid[0] % g0 or grid[1] % g1 or g0 * g1 == 1:
                continue
            if not all(_legal(target, k, elem_bits, g0, b0, b1, g1) for k in kinds):
                continue
            per_lane = g0 * b0 * b1 * g1 // lanes
            if any(k != "prefetch" for k in kinds) and per_lane > PIECE_ELEMENTS and per_lane % PIECE_ELEMENTS:
                continue
            if best is None or g0 * g1 > best.g0 * best.g1:
                best = Messages((b0, b1), grid, g0, g1)
    return best


def _legal(target: Target, kind: str, elem_bits: int, g0: int, b0: int, b1: int, g1: int) -> bool:
    """Whether one message may read ``g0`` block rows of ``g1`` blocks for ``kind``: a
    listed 2D block shape, or, without 2D block IO, a message per row of ``g1`` blocks
    (``Target.subgroup_block_units``: one block is one unit per lane; rows are one
    message each anyway, so only ``g0 = 1``, and only for ``Target.row_block_elem_bits``;
    a prefetch compiles to nothing there)."""
    if target.has_2d_block_io:
        return target.find_block2d(kind, elem_bits, g0 * b0, b1, g1) is not None
    return kind == "prefetch" or (g0 == 1 and g1 in target.subgroup_block_units
                                  and elem_bits in target.row_block_elem_bits)


def plan_tiles(fn: func.FuncOp, target: Target, packed: set[SSAValue]) -> dict[SSAValue, Messages]:
    """Family root -> message plan, for every tile of ``fn`` worth coalescing."""
    if not (target.has_2d_block_io or target.subgroup_block_units):
        return {}
    families = Families(fn)
    operands = (_mma_operand_tiles(fn, target) | _transposed_a_tiles(fn) | _row_loads(fn, families)
                | _row_piece_loads(fn) | _dequantised_operand_tiles(fn, target))
    kinds: dict[SSAValue, set[str]] = {}
    rejected: set[SSAValue] = set()
    for op in ops_in(fn):
        tiles = [v for v in list(op.operands) + list(op.results) if isinstance(v.type, xetile.TileType)]
        for tile in tiles:
            root = families.find(tile)
            kind = _access_kind(op, tile, packed, operands, not target.has_2d_block_io)
            if kind is None:
                rejected.add(root)
            elif kind:
                kinds.setdefault(root, set()).add(kind)
    plans = {}
    for root, used in kinds.items():
        t = root.type
        if root in rejected:
            continue
        if transposed.is_transposed(t):
            m = choose_transposed(target, used, t, root in packed)
        elif _eligible(t):
            m = choose(target, used, t.get_shape(), t.attr.blocks, bit_width(t.element_type))
        else:
            continue
        if m is not None:
            plans[root] = m
    return plans


def choose_transposed(target: Target, kinds: set[str], t: xetile.TileType, packed: bool) -> Messages | None:
    """Operand A of 16-bit elements through an ``order = [0, 1]`` tile (A stored K x M):
    the ``16 / r`` DPAS blocks ``r x 16`` (``r`` rows: the DPAS repeat count; two 8-row
    blocks on pvc) are the ``16 x 16`` block of the array underneath, and one
    ``read_transpose`` of it as 16 rows of 8 dwords gives lane ``n`` dword ``j``
    = ``A[2j][n] | A[2j+1][n] << 16`` (the Xe codegen reference section 3.4), i.e. the
    16 A rows of lane ``n``'s column in order: the operand A layout of those blocks
    without a shuffle.  A tile of one 8-row block (the M = 1 GEMM's 8-row tile) reads
    the whole 16-row message and keeps its first 8 rows (the rows past the tile are read
    and dropped, zeros past the array): 2D block reads instead of one gather per element
    (f16 A^T.B at [1, 8] x 8x32: 237 -> 61 hot-loop instructions).  None
    for anything else (operand B, already one 16x16 transposed message per block; other
    widths, SLM, padding)."""
    if packed or bit_width(t.element_type) != 16 or t.attr.memory_space.data != 0 or scattered.is_scattered(t):
        return None
    if not kinds or not kinds <= {"read", "prefetch"}:
        return None
    (rows, cols), (b0, b1) = t.get_shape(), t.attr.blocks
    lanes = target.subgroup_size
    if not target.has_2d_block_io:
        return _lane_row_messages(target, kinds, t)
    if b1 != lanes or b0 >= lanes or lanes % b0 or (rows % lanes and rows != b0):
        return None
    g0 = lanes // b0
    if "read" in kinds and target.find_block2d("read_transpose", 32, b1, lanes // 2, 1) is None:
        return None
    if "prefetch" in kinds and target.find_block2d("prefetch", 16, b1, lanes, 1) is None:
        return None
    return Messages((b0, b1), (rows // b0, cols // b1), g0, 1, transposed=True)


def _lane_row_messages(target: Target, kinds: set[str], t: xetile.TileType) -> Messages | None:
    """16-bit operand A through an ``order = [0, 1]`` tile on a target that reads such
    tiles with per-lane row loads (``Target.lane_row_load_elem_bits``: ARC): two 8-row
    DPAS blocks ``8 x 16`` are one ``16 x 16`` block of the array, whose lane n reads
    memory rows 2n and 2n + 1 as 32 bytes each (codegen/builtins/transposed_loads.py
    ``_lane_rows``: two 256-byte ``load.ugm.d32x8`` for two DPAS blocks, where one block
    took two 128-byte ``d32x4``).  Two blocks only: a lane's fragment is then 16 dwords,
    the largest vector."""
    (rows, _), (b0, b1) = t.get_shape(), t.attr.blocks
    lanes = target.subgroup_size
    if kinds != {"read"} or bit_width(t.element_type) not in target.lane_row_load_elem_bits:
        return None
    if b0 != lanes or b1 != 2 * lanes or rows % (2 * b0):
        return None
    return Messages((b0, b1), (rows // b0, t.get_shape()[1] // b1), 2, 1, transposed=True)


def _eligible(t: xetile.TileType) -> bool:
    bits = bit_width(t.element_type)
    return (bits in (16, 32) and t.attr.blocks and t.attr.memory_space.data == 0
            and not transposed.is_transposed(t) and not scattered.is_scattered(t))


def _mma_operand_tiles(fn: func.FuncOp, target: Target) -> set[SSAValue]:
    """Tiles whose loads feed tile_mma directly (operand A or B), when the accumulator and
    the whole K step of operands fit ``Target.coalesced_register_share`` of the kernel's
    register file (the 256-GRF mode when wg-to-sg chose it or the target always builds
    in it: ARC's ``build_options``)."""
    large = LARGE_GRF_ATTR in fn.attributes or target.large_grf_option in target.build_options.split()
    grfs = target.large_grf_count if large else target.grf_count
    room = grfs * target.grf_bytes * target.coalesced_register_share
    found = set()
    for op in ops_in(fn):
        if isinstance(op, xetile.TileMMAOp) and sum(_bytes(v) for v in (op.output, op.a, op.b)) <= room:
            for operand in (op.a, op.b):
                if isinstance(operand.owner, xetile.LoadTileOp):
                    found.add(operand.owner.tile)
    return found


def _dequantised_operand_tiles(fn: func.FuncOp, target: Target) -> set[SSAValue]:
    """Tiles of 32-bit words whose loads reach operand B of tile_mma only through
    element-wise ops (packed weight codes shifted out, converted and dequantised in
    registers: ops.matmul_wq), under :func:`_mma_operand_tiles`' register share: their
    lanes hold B's columns, so a message of several blocks is cut into lane-local pieces
    like a B operand's (pvc, the int4 GEMV's 32 x 32 word tile: four 16 x 16 messages ->
    two 32 x 16)."""
    large = LARGE_GRF_ATTR in fn.attributes or target.large_grf_option in target.build_options.split()
    room = (target.large_grf_count if large else target.grf_count) * target.grf_bytes * target.coalesced_register_share
    found = set()
    for op in ops_in(fn):
        if not isinstance(op, xetile.TileMMAOp) or isinstance(op.b.owner, xetile.LoadTileOp):
            continue
        stack, seen = [op.b], set()
        while stack:
            value = stack.pop()
            if value in seen:
                continue
            seen.add(value)
            owner = value.owner
            if isinstance(owner, xetile.LoadTileOp):
                if (bit_width(value.type.element_type) == 32 and _bytes(value) <= room
                        and all(is_elementwise(use.operation) for use in value.uses)):
                    found.add(owner.tile)
            elif isinstance(owner, Operation) and is_elementwise(owner):
                stack.extend(owner.operands)
    return found


def _row_loads(fn: func.FuncOp, families: Families) -> set[SSAValue]:
    """One-row tiles of arrays that are loaded unpadded: tiles of 1-D arrays (a
    ``memref<?xT>`` seen as one row) and ``[1, N]`` tiles of 2-D arrays (a norm weight
    stored ``[1, N]``, a row of a matrix)."""
    roots = {families.find(op.tile) for op in ops_in(fn) if isinstance(op, xetile.InitTileOp)
             and isinstance(op.source.type, MemRefType) and (len(op.source.type.get_shape()) == 1
                                                             or op.tile.type.get_shape()[0] == 1)}
    return {op.tile for op in ops_in(fn) if isinstance(op, xetile.LoadTileOp) and op.padding is None
            and families.find(op.tile) in roots}


def _row_piece_loads(fn: func.FuncOp) -> set[SSAValue]:
    """Block tiles of several rows blocked in one-row pieces (their values are stored,
    or gathered alongside, through a scattered access: a store mask other than a row edge,
    frontend/masks.py), loaded unpadded outside a split K loop: read as messages of
    several rows (a ``1 x sg`` piece is one element per lane of the message's fragment,
    cut out lane-locally), not one message per row."""
    return {op.tile for op in ops_in(fn) if isinstance(op, xetile.LoadTileOp) and op.padding is None
            and _eligible(op.tile.type) and op.tile.type.attr.blocks[0] == 1
            and op.tile.type.get_shape()[0] > 1 and not _mma_fed(op) and not _in_split_loop(op)}


def _transposed_a_tiles(fn: func.FuncOp) -> set[SSAValue]:
    """``order = [0, 1]`` tiles loaded as operand A: coalesced whatever the register share,
    since a message holds only two DPAS blocks and the alternative is one gather per
    element (measured, 32x32x32 in 128-GRF mode: 64 gathers and 1022 hot-loop
    instructions per K step, no spill either way)."""
    return {op.a.owner.tile for op in ops_in(fn) if isinstance(op, xetile.TileMMAOp)
            and isinstance(op.a.owner, xetile.LoadTileOp) and transposed.is_transposed(op.a.owner.tile.type)}


def _bytes(value: SSAValue) -> int:
    n = 1
    for d in value.type.get_shape():
        n *= d
    return n * bit_width(value.type.element_type) // 8


def _access_kind(op: Operation, tile: SSAValue, packed: set[SSAValue], operands: set[SSAValue],
                 lane_rows: bool = False) -> str | None:
    """The message kind ``op`` needs of ``tile`` ("" for ops that only carry or move it),
    None when ``op`` needs one descriptor per block: loads other than tile_mma operands
    keep one message per block (their values feed element-wise chains, transposes and
    stores block by block, and a 32-row message would keep more of them live: measured
    spills in register transposes and row sums).  ``lane_rows`` (no 2D block IO: ARC's
    per-lane row loads of transposed tiles, :func:`_lane_row_messages`): a transposed
    operand is coalesced exactly in a plain GEMM step, in a split loop too (ARC RFC 2.1's
    copies take whole pairs of block rows: 40 -> 28 sends per copy, 0 spill)."""
    if isinstance(op, xetile.LoadTileOp):
        if op.padding is not None or op.tile not in operands:
            return None
        if len(op.tile.type.get_shape()) == 2 and op.tile.type.get_shape()[0] == 1 and not _mma_fed(op):
            return "read"   # a one-row tile (_row_loads)
        if _eligible(op.tile.type) and op.tile.type.attr.blocks[0] == 1 and not _mma_fed(op):
            return "read"   # one-row pieces of a tile of several rows (_row_piece_loads)
        is_t, plain = transposed.is_transposed(op.tile.type), plain_gemm_block(op)
        if lane_rows and is_t:  # coalesced where codegen reads them as lane rows (transposed.mark_lane_rows)
            return "read" if plain else None
        if _in_split_loop(op) or not (plain or is_t):
            return None
        return "read_transform" if op.tile in packed else "read"
    if isinstance(op, xetile.PrefetchTileOp):
        return "prefetch"
    if isinstance(op, (xetile.InitTileOp, xetile.UpdateTileOffsetOp, scf.ForOp, scf.YieldOp, scf.IfOp)):
        return ""
    return None


def _mma_fed(op: xetile.LoadTileOp) -> bool:
    return any(isinstance(use.operation, xetile.TileMMAOp) for use in op.value.uses)


#: ops a K step may hold besides scalar arithmetic for its operand loads to be coalesced
_GEMM_STEP_OPS = (xetile.LoadTileOp, xetile.PrefetchTileOp, xetile.UpdateTileOffsetOp, xetile.InitTileOp,
                  xetile.TileMMAOp)


def plain_gemm_block(op: Operation) -> bool:
    """Whether the block holding a load is a plain GEMM step: loads, prefetches, offset
    updates and tile_mma, besides scalars and lane-local vector work (:func:`_lane_local`).
    A message keeps all its K blocks live until its last DPAS, so coalesced operands hold
    a whole K step in registers, not the one DPAS K block the register budget counts;
    with nothing else live that fits (RFC 2.1: 8 KiB of accumulators + 6 KiB of operands,
    no spill), next to row sums or transposes it spilled (0.5-1.5 KB, measured with
    ocloc).  Lane-local work keeps no cross-lane temporaries: the transposed attention
    step (element-wise softmax, column reductions, operand B stacked from a result) took
    its K tile in two 32x16x2 messages instead of sixteen 8x16 ones, without spill (pvc,
    D = 64 and 128: 18.3 -> 15.6 and 15.4 -> 12.2 hot-loop instructions per DPAS).  So
    does a runtime ``if`` holding only such work, and the reduction of one row to one
    value that decides it (the attention step's lazy rescale: without them the K tile
    fell back to 32 one-block messages, 829 -> 1092 hot-loop instructions at D = 64)."""
    return all(_step_op(other) for other in op.parent_block().ops)


def _step_op(op: Operation) -> bool:
    """Whether ``op`` may sit next to a coalesced K step (:func:`_plain_gemm_block`)."""
    if isinstance(op, scf.IfOp):
        return all(_branch_op(inner) for region in op.regions for block in region.blocks for inner in block.ops)
    if op.regions and not isinstance(op, scf.ForOp):
        return False
    return isinstance(op, _GEMM_STEP_OPS) or _branch_op(op)


def _branch_op(op: Operation) -> bool:
    """Work a runtime ``if`` next to a K step may hold: scalars, constants, lane-local
    vector work and one-row reductions (no tiles: an ``if`` that loads, prefetches or
    moves tiles keeps its block's messages one per block, as before)."""
    if op.regions:
        return False
    if op.name == "arith.constant" or _lane_local(op) or _one_row_reduce(op):
        return True
    return not (op.name.startswith("xetile.") or any(isinstance(r.type, VectorType) for r in op.results))


def _one_row_reduce(op: Operation) -> bool:
    """A reduction of a single row (a few registers, no large cross-lane temporaries)."""
    if not isinstance(op, xetile.TileReduceOp):
        return False
    shape = op.source.type.get_shape()
    return shape[0] * (shape[2] if len(shape) == 4 else 1) == 1


def _lane_local(op: Operation) -> bool:
    """Vector ops whose every lane computes from its own elements: element-wise ops,
    scalar splats, broadcasts, reductions down the rows of a block (not across its
    columns: 4-D dims 1 and 3), and the tile_unpack / tile_pack that stack result blocks
    into operand B blocks (mma_relayout.stacks_rows)."""
    if is_elementwise(op) or isinstance(op, (vector.BroadcastOp, xetile.TileBroadcastOp, xetile.TileUnpackOp)):
        return True
    if isinstance(op, xetile.TileReduceOp):
        return not set(_asm.as_int_list(op.reduction_dims)) & {1, 3}
    return isinstance(op, xetile.TilePackOp) and mma_relayout.stacks_rows(op)


def _in_split_loop(op: Operation) -> bool:
    """Whether ``op`` sits in a K loop the register budget marked for splitting."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.ForOp) and REGISTER_BUDGET_ATTR in parent.attributes:
            return True
        parent = parent.parent_op()
    return False


# --- XeGPU ops ----------------------------------------------------------------------
def descriptor_type(m: Messages, elem) -> xegpu.TensorDescType:
    if m.transposed:  # the block of the array underneath
        return xegpu.TensorDescType([m.blocks[1], m.rows], elem)
    attr = xegpu.BlockTdescAttr(array_length=m.g1) if m.g1 > 1 else None
    return xegpu.TensorDescType([m.rows, m.blocks[1]], elem, attr)


def load_blocks(tr, op: xetile.LoadTileOp, m: Messages, descs: list[SSAValue], packed: bool) -> list[SSAValue]:
    """One load_nd per message, then each block (row-major) cut out of its message."""
    elem = op.tile.type.element_type
    (b0, b1), vnni = m.blocks, (32 // bit_width(elem) if packed else 1)
    inner = [m.rows // vnni, b1, vnni] if packed else [m.rows, b1]
    whole = VectorType(elem, ([m.g1] if m.g1 > 1 else []) + inner)
    if m.transposed:
        loaded = [tr.emit(xegpu.LoadNdOp(d, whole, transpose=[1, 0]), op).value for d in descs]
    else:
        loaded = [tr.emit(xegpu.LoadNdOp(d, whole, packed=packed), op).value for d in descs]
    block = [b0 // vnni, b1, vnni] if packed else [b0, b1]
    out = []
    for i in range(m.grid[0]):
        for j in range(m.grid[1]):
            k, a, r0 = m.message_of(i, j)
            out.append(_cut(tr, op, loaded[k], m.g1 > 1, a, r0 // vnni, block))
    return out


def _cut(tr, like, value: SSAValue, has_array: bool, a: int, row: int, block: list[int]) -> SSAValue:
    """Block ``a``/``row`` of a message value: a slice, then a shape_cast to the block's
    shape (always, also without an array dimension: it marks the slice as a message
    piece, :func:`is_message_slice`)."""
    lead_off, lead_size = ([a], [1]) if has_array else ([], [])
    offsets = lead_off + [row] + [0] * (len(block) - 1)
    part = tr.emit(ExtractStridedSliceOp(value, offsets, lead_size + block), like).result
    return tr.emit(ShapeCastOp(part, _asm.vector_type(value.type.element_type, block)), like).result


def is_message_slice(op: Operation) -> bool:
    """Whether ``op`` cuts a block out of a coalesced load (:func:`load_blocks`): a slice
    of a load_nd value whose every use is a shape_cast."""
    return (isinstance(op, ExtractStridedSliceOp) and isinstance(op.vector.owner, xegpu.LoadNdOp)
            and bool(op.result.uses) and all(isinstance(u.operation, ShapeCastOp) for u in op.result.uses))


def source_load(value: SSAValue) -> xegpu.LoadNdOp | None:
    """The coalesced load a block value was cut from (through its shape_cast), if any."""
    owner = value.owner
    if isinstance(owner, ShapeCastOp):
        owner = owner.source.owner
    if isinstance(owner, ExtractStridedSliceOp) and is_message_slice(owner):
        return owner.vector.owner
    return None


# --- XeGPU -> SIMT ------------------------------------------------------------------
def distribute(fn: func.FuncOp) -> set[Operation]:
    """After the SIMT pass gave every value its fragment: each message slice becomes a
    lane-local range ``[first, first + n)`` of units of the message fragment ``[units,
    per]`` (array blocks one after the other, rows in order within one) and the
    shape_cast after it disappears (the same fragment).  Returns the slices, which the
    register-transpose rules must leave alone."""
    done = set()
    for op in ops_in(fn):
        if not is_message_slice(op):
            continue
        done.add(op)
        load = op.vector.owner
        desc = load.tensor_desc.type
        arrays = desc.block_attr.arr_len
        vnni = max(1, 32 // bit_width(desc.element_type)) if load.packed is not None else 1
        # rows of one array block, in the slice's row unit (a transposed load's logical
        # rows are its descriptor's columns)
        block_rows = desc.get_shape()[1 if load.transpose is not None else 0] // vnni
        units, per = op.vector.type.get_shape()
        offsets = _asm.as_int_list(op.offsets)
        a, row = (offsets[0], offsets[1]) if arrays > 1 else (0, offsets[0])
        per_block = units // arrays
        first = a * per_block + row * per_block // block_rows
        casts = [u.operation for u in op.result.uses]
        n_units = casts[0].result.type.get_shape()[0]
        op.properties["offsets"] = _asm.int_array([first, 0])
        op.properties["sizes"] = _asm.int_array([n_units, per])
        op.properties["strides"] = _asm.int_array([1, 1])
        retype(op.result, casts[0].result.type)
        for cast in casts:
            cast.result.replace_all_uses_with(op.result)
            cast.parent_block().erase_op(cast)
    return done
