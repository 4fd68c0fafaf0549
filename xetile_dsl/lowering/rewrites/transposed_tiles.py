"""Rules for ``order = [0, 1]`` tiles (the transposed view of a row-major array).

A tile ``[R, C]`` with ``order = [0, 1]`` over the array ``M`` reads ``T[r, c] = M[c, r]``;
the frontend gives it swapped extents and strides ``[1, pitch]``.  Its blocks are lowered
to descriptors over ``M`` itself: block ``b0 x b1`` at logical ``(i, j)`` is a
``b1 x b0`` descriptor at ``(j, i)`` of ``M``, loaded with ``load_nd {transpose = [1, 0]}``
(with the load's ``padding``: elements outside ``M`` read it, selected per element in
codegen).
A 16-bit operand B adds ``transpose_bit_width = 32``: transposing pairs of elements gives
the VNNI form ``[K/2, N, 2]`` directly (xegpu RFC, "transpose_bit_width").  In the SIMT
stage the descriptor carries the transposed sg_map of the loaded value
(:func:`memory_sg_map`), as the RFC's transposed-load examples do.  The same view of an SLM
buffer (a ``memref.reinterpret_cast`` to strides ``[1, cols]``, from wg_to_sg/transpose.py) gives
descriptors over the row-major buffer in memory space ``slm``.
"""
from __future__ import annotations

from xdsl.dialects import memref
from xdsl.dialects.builtin import UnitAttr, VectorType

from ...dialects import xegpu, xetile
from ...dialects.attributes import LANE_ROWS_ATTR
from ...dialects.types import bit_width


#: unit attribute on a transposed ``load_nd`` that codegen may read with per-lane row
#: loads (codegen/builtins/transposed_loads.py ``_lane_rows``): set where the target has them
#: (``Target.lane_row_load_elem_bits``) and the load is a plain GEMM step's operand
#: (:func:`mark_lane_rows`); elsewhere (attention's K^T next to its softmax) the fast and
#: cold paths of every block kept more live than per-element loads (ARC: 2304 B of spill)


def mark_lane_rows(loads: list, target, elem_bits: int, plain_step: bool) -> None:
    """Set :data:`LANE_ROWS_ATTR` on ``loads`` (xegpu.LoadNdOp) when ``target`` reads
    transposed ``elem_bits`` tiles with per-lane row loads and they feed a plain GEMM step."""
    if target is not None and plain_step and elem_bits in target.lane_row_load_elem_bits:
        for load in loads:
            load.attributes[LANE_ROWS_ATTR] = UnitAttr()


def is_transposed(tile_type) -> bool:
    """Whether an XeTile tile type is an ``order = [0, 1]`` view."""
    return isinstance(tile_type, xetile.TileType) and tuple(tile_type.attr.order_list) == (0, 1)


def init_descs(tr, op: xetile.InitTileOp, plan=None) -> list:
    """One ``b1 x b0`` descriptor over the row-major array per logical block (row-major
    over the logical block grid), or one per coalesced message of ``plan``
    (:func:`.block_messages.choose_transposed`)."""
    t = op.tile.type
    (rows, cols), (b0, b1) = t.get_shape(), t.attr.blocks
    src = tr.one(op.source)
    view = src.owner
    if isinstance(view, memref.ReinterpretCastOp) and not (view.offsets or view.sizes or view.strides):
        src = view.source  # a column-major view of an SLM buffer (wg_to_sg/transpose.py), not an N-D array's slice
    sizes = [tr.one(v) for v in op.sizes][::-1]  # back to the array's own extents and strides
    strides = [tr.one(v) for v in op.strides][::-1]
    o0, o1 = (tr.one(v) for v in op.offsets)
    slm = xegpu.BlockTdescAttr("slm") if t.attr.memory_space.data == 3 else None
    tdesc_type = xegpu.TensorDescType([b1, b0], t.element_type, slm)
    corners = [(i * b0, j * b1) for i in range(rows // b0) for j in range(cols // b1)]
    if plan is not None:
        tdesc_type, corners = xegpu.TensorDescType([b1, plan.rows], t.element_type), plan.offsets()
    descs = []
    for r, c in corners:
        offs = [tr.add(o1, c, op), tr.add(o0, r, op)]
        descs.append(tr.emit(xegpu.CreateNdTdescOp(src, offs, tdesc_type, sizes, strides), op).tensor_desc)
    return descs


def load_blocks(tr, op: xetile.LoadTileOp, packed: bool) -> list:
    """Transposed loads of every block; ``packed`` (16/8-bit operand B) transposes 32-bit
    units so that the result is already VNNI ``[K/v, N, v]``."""
    t = op.tile.type
    b0, b1 = t.attr.blocks
    elem = t.element_type
    pad = op.padding  # out-of-bounds elements (of the array M) read it; codegen selects it per element
    if packed:
        vnni = 32 // bit_width(elem)
        vtype = VectorType(elem, [b0 // vnni, b1, vnni])
        make = lambda d: xegpu.LoadNdOp(d, vtype, transpose=[1, 0], transpose_bit_width=32,  # noqa: E731
                                        padding=pad)
    else:
        vtype = VectorType(elem, [b0, b1])
        make = lambda d: xegpu.LoadNdOp(d, vtype, transpose=[1, 0], padding=pad)  # noqa: E731
    return [tr.emit(make(d), op).value for d in tr.descs(op.tile)]


def memory_sg_map(layout, data) -> tuple[tuple[int, int], tuple[int, int]]:
    """The sg_map of a transposed load's descriptor, from the (logical) sg_map of the
    value it loads: wi_layout and wi_data swap with the dimensions."""
    return (layout[1], layout[0]), (data[1], data[0])
