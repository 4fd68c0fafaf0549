"""Chained tile_mma: a tile_mma result (through element-wise ops such as ``xt.astype``)
feeding another tile_mma as operand A (back-to-back GEMM, the attention pattern), on a
target whose DPAS result blocks are not operand A blocks (docs/design.md, "Chained
tile_mma").

A DPAS result block is ``8 x N`` with lane n holding column n (N = the subgroup size).
Operand A is ``8 x K``; on PVC with 16-bit elements K = N and A's lanes hold one column
each too, so the result blocks are A blocks and nothing moves. On ARC (8 lanes) 16-bit A
is ``8 x 16``, lane n holding columns 2n and 2n + 1 packed in one dword: its columns live
in two result blocks and in other lanes. Here the chain keeps the result blocking, and
the A operand is re-laid out where the layouts meet:

* **Blocking** (:func:`relaid_operands`, :func:`insert_relayout`): the chain's family is
  blocked like a result (``8 x L``); before the consuming tile_mma, ``tile_unpack`` of those
  blocks and ``tile_pack`` into ``8 x K`` A blocks.
* **XeGPU** (:func:`pack_to_xegpu`): each A block is one ``xegpu.a_from_c`` of the ``K / L``
  result blocks that are its columns, side by side.
* **SIMT**: ``a_from_c`` takes the ``[8, 1]`` lane columns and yields A's ``[8, K / L]`` lane
  fragment (the SIMT pass gives the result A's layout because it feeds dpas's lhs);
  codegen/a_from_c.py moves the elements with subgroup shuffles.

Only 16-bit A is re-laid out: the chains PVC runs (its 16-bit result and A blocks agree).
8-bit and tf32 A blocks differ from result blocks on PVC too, and a result feeding operand
B needs ``K x N`` blocks on every target: those stay the located error of
blocking.py (``_check_chained_mma``), the same on PVC and ARC.
"""
from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import VectorType

from ..dialects import xegpu, xetile
from ..errors import LoweringError
from ..frontend.types import bit_width, type_name
from ..targets import Target
from .analysis import Families

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


def relaid_operands(fn: func.FuncOp, families: Families, target: Target) -> set[xetile.TileMMAOp]:
    """The tile_mma ops whose operand A is (element-wise) another tile_mma's result and
    must be re-laid out on ``target``; ``families`` already joined element-wise."""
    mmas = [op for op in fn.walk() if isinstance(op, xetile.TileMMAOp)]
    results = {families.find(op.output) for op in mmas}
    found = {op for op in mmas if families.find(op.a) in results and needs_shuffles(op, target)}
    for op in found:
        _check_shape(op, target)
    return found


def _a_blocks(op: xetile.TileMMAOp, target: Target) -> tuple[int, int]:
    """Operand A's blocks: the largest DPAS M (blocking.DPAS_M) by K."""
    cfg = _dpas_of(op, target)
    return max(cfg.m_values), cfg.k


def _check_shape(op: xetile.TileMMAOp, target: Target) -> None:
    rows, cols = op.a.type.get_shape()
    m, k = _a_blocks(op, target)
    if rows % m or cols % k:
        name = type_name(op.a.type.element_type)
        raise LoweringError(
            f"tile {rows}x{cols}x{name} cannot be used as operand A of tile_mma on {target.name}: it is split "
            f"into {m}x{k} blocks (the DPAS sizes for {name}), so its shape must be a multiple of [{m}, {k}]", op)


def insert_relayout(ops: set[xetile.TileMMAOp], target: Target) -> None:
    """After blocking retyped the chain to result blocks: ``tile_unpack`` + ``tile_pack``
    into A blocks before each tile_mma of ``ops``."""
    for op in ops:
        source = op.a
        unpack = xetile.TileUnpackOp(source, source.type.get_shape()[2:])
        pack = xetile.TilePackOp(unpack.result, _a_blocks(op, target))
        for new in (unpack, pack):
            new.location = op.location
        op.parent_block().insert_ops_before([unpack, pack], op)
        op.operands = [pack.result, *op.operands[1:]]


def is_relayout(pack: xetile.TilePackOp) -> bool:
    """A tile_pack straight after a tile_unpack (no transpose between): a re-layout."""
    return isinstance(pack.source.owner, xetile.TileUnpackOp)


def pack_to_xegpu(tr, op: xetile.TilePackOp) -> None:
    """Each ``8 x K`` A block: one ``xegpu.a_from_c`` of the ``K / N`` result blocks holding
    its columns (``tr.vmap`` of the unpacked value: the result blocks, row-major)."""
    unpacked = op.source.owner
    _, src_cols, rows, width = unpacked.source.type.get_shape()
    out_rows, out_cols, b0, b1 = op.result.type.get_shape()
    if rows != b0 or b1 % width:
        raise LoweringError(f"a chained tile_mma operand re-laid out from {rows}x{width} result blocks into "
                            f"{b0}x{b1} A blocks: the A block must be whole result blocks side by side", op)
    per = b1 // width
    blocks, block_t = tr.vmap[op.source], VectorType(op.result.type.element_type, [b0, b1])
    tr.vmap[op.result] = [
        tr.emit(xegpu.AFromCOp([blocks[i * src_cols + j * per + t] for t in range(per)], block_t), op).result
        for i in range(out_rows) for j in range(out_cols)]

