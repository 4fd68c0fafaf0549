"""Chained tile_mma: a tile_mma result (through element-wise ops such as ``xt.astype``)
feeding another tile_mma as operand A (back-to-back GEMM, the attention pattern) or as
operand B (the transposed attention ``O^T = V^T P^T``), where the DPAS result blocks are
not operand blocks (docs/decisions/005-both-lane-layouts.md).

A DPAS result block is ``M x N`` with lane n holding column n (M = the target's DPAS
repeat count ``Target.dpas_m``, 8 on PVC and ARC; N = the subgroup size).
Operand A is ``M x K``; on PVC with 16-bit elements K = N and A's lanes hold one column
each too, so the result blocks are A blocks and nothing moves. On ARC (8 lanes) 16-bit A
is ``8 x 16``, lane n holding columns 2n and 2n + 1 packed in one dword: its columns live
in two result blocks and in other lanes. Operand B is ``K x N`` (16-bit: K = 16, 8-bit:
32), lane n holding column n with consecutive rows packed in dwords (VNNI): on every
target ``K / M`` result blocks stacked, each lane's columns concatenated, nothing crossing
lanes. The chain keeps the result blocking, and the operand is re-laid out where the
layouts meet:

* **Blocking** (:func:`relaid_operands`, :func:`insert_relayout`): the chain's family is
  blocked like a result (``M x L``); before the consuming tile_mma, ``tile_unpack`` of those
  blocks and ``tile_pack`` into ``M x K`` A (``K x N`` B) blocks.
* **XeGPU** (:func:`pack_to_xegpu`): each A block is one ``xegpu.a_from_c`` of the ``K / L``
  result blocks that are its columns, side by side; each B block the ``K / M`` result
  blocks above each other, joined with ``vector.insert_strided_slice``.
* **SIMT**: ``a_from_c`` takes the ``[M, 1]`` lane columns and yields A's ``[M, K / L]`` lane
  fragment (the SIMT pass gives the result A's layout because it feeds dpas's lhs);
  codegen/emit/a_from_c.py moves the elements with subgroup shuffles. The B join becomes a
  lane-local join of ``[M, 1]`` columns into the ``[K, 1]`` column dpas reads as VNNI
  dwords (register_transpose.distribute).

Only 16-bit A is re-laid out: the chains PVC runs (its 16-bit result and A blocks agree).
8-bit and tf32 A blocks differ from result blocks on PVC too: those stay the located
error of blocking.py (``_check_chained_mma``), the same on PVC and ARC.
"""
from __future__ import annotations

from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, VectorType

from ...dialects import xegpu, xetile
from ...dialects.walk import ops_in
from ...errors import LoweringError
from ...dialects.types import bit_width, type_name
from ...targets import Target
from ..analysis.families import Families
from .register_transpose import join_rows

#: the A element width whose chains are re-laid out (the chains PVC runs without moving data)
RELAID_BITS = 16


def _dpas_of(op: xetile.TileMMAOp, target: Target):
    return target.dpas_for(*(type_name(v.type.element_type) for v in (op.a, op.b)))


def needs_shuffles(op: xetile.TileMMAOp, target: Target) -> bool:
    """Whether ``op``'s operand A, if it were a tile_mma result, would have to move across
    lanes on ``target``: 16-bit A whose lane layout packs ``K / L`` consecutive columns per
    lane (ARC), with result blocks one column per lane (N = L)."""
    cfg = _dpas_of(op, target)
    lanes = target.subgroup_size
    if cfg is None or bit_width(op.a.type.element_type) != RELAID_BITS or cfg.n != lanes or cfg.k == cfg.n:
        return False
    return cfg.k % lanes == 0 and target.sg_map("A", RELAID_BITS) == ((1, lanes), (1, cfg.k // lanes))


def needs_row_join(op: xetile.TileMMAOp, target: Target) -> bool:
    """Whether ``op``'s operand B, if it were a tile_mma result, needs its ``M x N`` result
    blocks stacked into ``K x N`` B blocks: B's lanes hold one column each (N = L, VNNI
    pairs or quadruples of rows in a dword are consecutive rows of that column), so a B
    block is ``K / M`` result blocks one above the other, with no cross-lane movement."""
    cfg = _dpas_of(op, target)
    rows = max(cfg.m_values) if cfg is not None else 0
    return cfg is not None and cfg.n == target.subgroup_size and cfg.k != rows and cfg.k % rows == 0


def relaid_operands(fn: func.FuncOp, families: Families, target: Target) -> dict[xetile.TileMMAOp, tuple[str, ...]]:
    """The tile_mma ops whose operands (``"A"``, ``"B"``) are (element-wise) another
    tile_mma's result and must be re-laid out on ``target``; ``families`` already joined
    element-wise."""
    mmas = [op for op in ops_in(fn) if isinstance(op, xetile.TileMMAOp)]
    results = {families.find(op.output) for op in mmas}
    found = {}
    for op in mmas:
        roles = tuple(role for role, operand, needed in (("A", op.a, needs_shuffles), ("B", op.b, needs_row_join))
                      if families.find(operand) in results and needed(op, target))
        for role in roles:
            _check_shape(op, role, target)
        if roles:
            found[op] = roles
    return found


def _operand_blocks(op: xetile.TileMMAOp, role: str, target: Target) -> tuple[int, int]:
    """Operand A's blocks: the largest DPAS M (the target's ``DpasConfig.m``) by K; operand B's: K by N."""
    cfg = _dpas_of(op, target)
    return (max(cfg.m_values), cfg.k) if role == "A" else (cfg.k, cfg.n)


def _check_shape(op: xetile.TileMMAOp, role: str, target: Target) -> None:
    operand = op.a if role == "A" else op.b
    rows, cols = operand.type.get_shape()
    m, k = _operand_blocks(op, role, target)
    if rows % m or cols % k:
        name = type_name(operand.type.element_type)
        raise LoweringError(
            f"tile {rows}x{cols}x{name} cannot be used as operand {role} of tile_mma on {target.name}: it is split "
            f"into {m}x{k} blocks (the DPAS sizes for {name}), so its shape must be a multiple of [{m}, {k}]", op)


def insert_relayout(ops: dict[xetile.TileMMAOp, tuple[str, ...]], target: Target) -> None:
    """After blocking retyped the chains to result blocks: ``tile_unpack`` + ``tile_pack``
    into operand blocks before each tile_mma of ``ops``, for each operand re-laid out."""
    for op, roles in ops.items():
        for role in roles:
            index = 0 if role == "A" else 1
            source = op.operands[index]
            unpack = xetile.TileUnpackOp(source, source.type.get_shape()[2:])
            pack = xetile.TilePackOp(unpack.result, _operand_blocks(op, role, target))
            for new in (unpack, pack):
                new.location = op.location
            op.parent_block().insert_ops_before([unpack, pack], op)
            operands = list(op.operands)
            operands[index] = pack.result
            op.operands = operands


def is_relayout(pack: xetile.TilePackOp) -> bool:
    """A tile_pack straight after a tile_unpack (no transpose between): a re-layout."""
    return isinstance(pack.source.owner, xetile.TileUnpackOp)


def stacks_rows(pack: xetile.TilePackOp) -> bool:
    """A re-layout into operand B blocks: whole result blocks stacked, each lane keeping
    its column (the block width unchanged)."""
    if not is_relayout(pack) or len(pack.source.owner.source.type.get_shape()) != 4:
        return False
    return pack.source.owner.source.type.get_shape()[3] == pack.result.type.get_shape()[3]


def pack_to_xegpu(tr, op: xetile.TilePackOp) -> None:
    """Each operand block from the result blocks (``tr.vmap`` of the unpacked value,
    row-major): an ``M x K`` A block is one ``xegpu.a_from_c`` of the ``K / N`` result blocks
    side by side; a ``K x N`` B block is its ``K / M`` result blocks stacked, joined with
    ``vector.insert_strided_slice`` (lane-local at SIMT: each lane's column fragments
    concatenated, register_transpose.join_rows)."""
    unpacked = op.source.owner
    _, src_cols, rows, width = unpacked.source.type.get_shape()
    out_rows, out_cols, b0, b1 = op.result.type.get_shape()
    blocks, elem = tr.vmap[op.source], op.result.type.element_type
    if b1 == width and b0 % rows == 0:
        tr.vmap[op.result] = [join_rows(tr, op, blocks[j::src_cols], rows, i * b0, b0, width, elem)
                              for i in range(out_rows) for j in range(out_cols)]
        return
    if rows != b0 or b1 % width:
        raise LoweringError(f"a chained tile_mma operand re-laid out from {rows}x{width} result blocks into "
                            f"{b0}x{b1} operand blocks: an A block must be whole result blocks side by side, a B "
                            f"block whole result blocks one above the other", op)
    per = b1 // width
    block_t = VectorType(elem, [b0, b1])
    tr.vmap[op.result] = [_a_block(tr, op, [blocks[i * src_cols + j * per + t] for t in range(per)], block_t)
                          for i in range(out_rows) for j in range(out_cols)]


def _a_block(tr, op: xetile.TilePackOp, sources: list, block_t: VectorType):
    """One A block from its result blocks: an ``xegpu.a_from_c``, or, when a constant select
    masked every source off (xt.dot_scaled's K blocks), a zero block that is masked off too,
    so the consuming tile_mma drops its DPAS and no shuffle moves zeros."""
    if all(s in tr.masked_off for s in sources):
        zero = tr.emit(arith.ConstantOp(DenseIntOrFPElementsAttr.from_list(block_t, [0.0])), op).result
        tr.masked_off.add(zero)
        return zero
    return tr.emit(xegpu.AFromCOp(sources, block_t), op).result
