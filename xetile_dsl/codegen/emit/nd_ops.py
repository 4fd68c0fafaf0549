"""Codegen of the 2-D block descriptor ops: ``create_nd_tdesc``, ``update_nd_offset``,
``load_nd``, ``store_nd``, ``prefetch_nd``.

A descriptor is a :class:`~..tdesc.TDesc` (surface and block position as LLVM values).
A load or store picks its message from the block's shape and the target: SLM buffers
(:mod:`.slm`), columns and one-element-per-lane rows (:mod:`.vector_ops`), transposed
reads (hoisted out of their loop by :mod:`.transposed_payloads` where that pays), a
coalesced read larger than one vector (:mod:`.message_pieces`), else the 2D block
wrappers of :class:`~..builtins.intel.IntelBuiltins`.  Every array accessed with a 2D block
message is recorded (``gen.uses_block2d``): the launcher checks only those.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from xdsl.dialects.builtin import BFloat16Type, Float16Type, Float32Type, MemRefType
from xdsl.ir import SSAValue

from ...dialects import xegpu
from ...dialects.types import bit_width
from ...dialects._memref_layout import is_address
from ...dialects.attributes import LANE_ROWS_ATTR, ROTATION_BUFFER_ATTR
from ...errors import LoweringError
from .. import coordinates
from ..builtins.transposed_loads import transpose_kind
from ..llvm_types import llvm_scalar, llvm_type
from ..tdesc import TDesc
from . import EMITTERS, message_pieces, prefetch_payloads, slm, transposed_payloads, vector_ops

I32, I64 = ir.IntType(32), ir.IntType(64)
GLOBAL_PTR = ir.PointerType(addrspace=1)


@EMITTERS.register(xegpu.CreateNdTdescOp)
def emit_create_nd_tdesc(gen, op: xegpu.CreateNdTdescOp) -> None:
    t = op.tensor_desc.type
    address = is_address(op.source.type)
    if len(t.get_shape()) != 2 or not (isinstance(op.source.type, MemRefType) or (address and op.shape)):
        raise LoweringError("codegen supports 2-D tensor descriptors over memrefs or i64 addresses "
                            "(with shape and strides) only", op)
    elem_bytes = bit_width(t.element_type) // 8
    b = gen.b
    # an i64 address (an array table's entry, the XeGPU RFC's create_nd_tdesc form): a global pointer
    base = b.inttoptr(gen.v(op.source), GLOBAL_PTR) if address else gen.v(op.source)
    if op.shape:
        rows, cols = (gen.v(s) for s in op.shape)
        pitch = gen.v(op.strides[0])
    else:  # a static memref (an SLM buffer): sizes and strides from its type
        _, (rows, cols), (pitch, _) = gen.memrefs[op.source]
    i32 = lambda x: b.trunc(x, I32)  # noqa: E731 - extents: the launcher bounds them (MAX_TILED_EXTENT)
    surface = (base, i32(b.mul(cols, ir.Constant(I64, elem_bytes))), i32(rows),
               i32(b.mul(pitch, ir.Constant(I64, elem_bytes))))
    y, x = (gen.v(o) for o in op.offsets)
    gen.values[op.tensor_desc] = _positioned(gen, surface, x, y, elem_bytes)


def _positioned(gen, surface, x: ir.Value, y: ir.Value, elem_bytes: int) -> TDesc:
    """A descriptor of ``surface`` at the index position (x, y): 32-bit, or (a kernel
    with wide offsets) 64-bit and saturated for the messages."""
    if not gen.wide_offsets:
        return TDesc(*surface, gen.b.trunc(x, I32), gen.b.trunc(y, I32))
    return TDesc(*surface, coordinates.saturate(gen.b, x, elem_bytes), coordinates.saturate(gen.b, y),
                 wide_x=x, wide_y=y)


@EMITTERS.register(xegpu.UpdateNdOffsetOp)
def emit_update_nd_offset(gen, op: xegpu.UpdateNdOffsetOp) -> None:
    d = gen.v(op.tensor_desc)
    if gen.wide_offsets:
        dy, dx = (gen.v(o) for o in op.offsets)
        elem_bytes = bit_width(op.tensor_desc.type.element_type) // 8
        gen.values[op.result] = _positioned(gen, d.surface()[:4], gen.b.add(d.wide_x, dx),
                                            gen.b.add(d.wide_y, dy), elem_bytes)
        return
    dy, dx = (gen.b.trunc(gen.v(o), I32) for o in op.offsets)
    gen.values[op.result] = TDesc(d.base, d.width_bytes, d.height, d.pitch_bytes,
                                  gen.b.add(d.x, dx), gen.b.add(d.y, dy))


def _block_args(gen, op) -> tuple[TDesc, xegpu.TensorDescType, int, int, int]:
    t = op.tensor_desc.type
    rows, cols = t.get_shape()
    return gen.v(op.tensor_desc), t, rows, cols, bit_width(t.element_type)


def _row_block_read(gen, tensor_desc: SSAValue, elem_bits: int, rows: int) -> bool:
    """Whether a one-element-per-lane row is read with a subgroup block read: on
    targets that read rows that way (no 2D block IO, single-unit block messages),
    for 32-bit elements (a bias or scale row; the 1x8 f16 pieces of a 32x32 tile read this
    way made an SLM permute kernel spill 192 B, per-lane 0), not for narrow per-lane
    arrays."""
    t = gen.target
    return (rows == 1 and not t.has_2d_block_io and 1 in (t.subgroup_block_units or ())
            and elem_bits == 32 and not gen.per_lane_array(tensor_desc))


def _row_block_message(gen, op, kind: str, bits: int, cols: int, arr_len: int) -> bool:
    """Whether a one-row descriptor over an array (a row of a 2-D array, or a 1-D array's
    ``memref<?xT>`` seen as ``[1, n]``) is read or written with a 2D block message of one
    row on a target that has them, where the per-lane form (one element per lane) would be
    a gather of contiguous memory: a norm weight stored ``[1, N]``, a bias row, a 1-D
    tile.  Arrays in the per-lane specialisation (decision 018) keep the per-lane form."""
    source = gen.desc_source.get(gen.families.find(op.tensor_desc))
    return (gen.target.has_2d_block_io and isinstance(getattr(source, "type", None), MemRefType)
            and len(source.type.get_shape()) in (1, 2) and not gen.per_lane_array(op.tensor_desc)
            and gen.target.find_block2d(kind, bits, 1, cols, arr_len) is not None)


@EMITTERS.register(xegpu.LoadNdOp)
def emit_load_nd(gen, op: xegpu.LoadNdOp) -> None:
    d, t, rows, cols, bits = _block_args(gen, op)
    m = t.map
    if op.transpose is not None and rows == 1 and m is None:  # a row read as a replicated column
        pad = pad_bits(op.padding, t.element_type) if op.padding is not None else 0
        gen.values[op.value] = vector_ops.load_row_replicated(gen, d, bits, cols, llvm_type(op.value.type), pad)
        return
    if slm.is_slm(d) and op.transpose is not None:
        gen.values[op.value] = slm.load_transposed(gen, d, bits, rows, cols, llvm_type(op.value.type), m)
        return
    if slm.is_slm(d):
        gen.values[op.value] = slm.load(gen, d, bits, rows, cols, llvm_type(op.value.type), m,
                                        gen.slm_pitch(op.tensor_desc))
        return
    pad = pad_bits(op.padding, t.element_type) if op.padding is not None else 0
    if op.transpose is not None and cols == 1:  # a column read as a row: one element per lane
        gen.values[op.value] = vector_ops.load_column_per_lane(gen, d, bits, rows, llvm_type(op.value.type), pad)
        return
    if cols == 1 or (rows == 1 and cols == gen.target.subgroup_size and t.block_attr.arr_len == 1
                     and not _row_block_message(gen, op, "read", bits, cols, 1)):
        # a column / one element per lane (a 1-row descriptor of several blocks is a 2D read)
        block_row = _row_block_read(gen, op.tensor_desc, bits, rows)
        gen.values[op.value] = vector_ops.load_small(gen, d, bits, rows, cols, llvm_type(op.value.type), pad,
                                                     block_row)
        return
    if op.transpose is not None:
        _load_transposed(gen, op, d, bits, rows, cols, pad)
        return
    _load_block(gen, op, d, bits, rows, cols, pad)


def _load_transposed(gen, op: xegpu.LoadNdOp, d: TDesc, bits: int, rows: int, cols: int, pad: int) -> None:
    """A transposed 2D block read: the descriptor's map is the value's, transposed."""
    (l0, l1), (d0, d1) = op.tensor_desc.type.map.layout, op.tensor_desc.type.map.data
    per_lane = gen.per_lane_array(op.tensor_desc)
    lane_rows = LANE_ROWS_ATTR in op.attributes
    if transpose_kind(gen.target, bits, rows, cols, (l1, l0), (d1, d0), per_lane, lane_rows) != "gather":
        gen.uses_block2d(op.tensor_desc)
    hoisted = gen.hoisted_reads.get(op)
    if hoisted is not None:  # its address payload was made before the loop (no padding)
        gen.values[op.value] = gen.b.bitcast(transposed_payloads.read(gen, op, hoisted, (l1, l0), (d1, d0)),
                                             llvm_type(op.value.type))
        return
    fn = gen.lib.load_2d_transposed(bits, rows, cols, (l1, l0), (d1, d0), per_lane, lane_rows)
    raw = gen.b.call(fn, d.surface())
    if pad:  # the transposed read filled 0 out of bounds
        pad_fn = gen.lib.pad_2d_transposed(bits, rows, cols, (l1, l0), (d1, d0))
        raw = gen.b.call(pad_fn, d.surface() + [raw, ir.Constant(ir.IntType(bits), pad)])
    gen.values[op.value] = gen.b.bitcast(raw, llvm_type(op.value.type))


def _load_block(gen, op: xegpu.LoadNdOp, d: TDesc, bits: int, rows: int, cols: int, pad: int) -> None:
    """A 2D block read in the sg_map fragment order (in pieces when it is larger than one vector)."""
    t = op.tensor_desc.type
    m = t.map
    per_lane = gen.per_lane_array(op.tensor_desc)
    lane_elems = rows * cols * t.block_attr.arr_len // gen.target.subgroup_size
    if not pad and message_pieces.in_pieces(lane_elems) and message_pieces.only_sliced(op.value):
        # a coalesced message larger than one vector, cut into DPAS blocks
        fn = gen.lib.load_2d_pieces(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data, per_lane)
        if not per_lane:
            gen.uses_block2d(op.tensor_desc)
        buffer = op.attributes.get(ROTATION_BUFFER_ATTR)
        gen.values[op.value] = message_pieces.load(gen, fn, d.surface(), lane_elems,
                                                   llvm_scalar(op.value.type.element_type),
                                                   buffer.data if buffer is not None else None)
        return
    fn = gen.lib.load_2d(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data, per_lane)
    if gen.lib.load_2d_kind(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data, per_lane) != "gather":
        gen.uses_block2d(op.tensor_desc)
    raw = gen.b.call(fn, d.surface())
    if pad:  # the block read filled 0 out of bounds
        pad_fn = gen.lib.pad_2d(bits, rows, cols, t.block_attr.arr_len, m.layout, m.data)
        raw = gen.b.call(pad_fn, d.surface() + [raw, ir.Constant(ir.IntType(bits), pad)])
    gen.values[op.value] = gen.b.bitcast(raw, llvm_type(op.value.type))


@EMITTERS.register(xegpu.StoreNdOp)
def emit_store_nd(gen, op: xegpu.StoreNdOp) -> None:
    d, t, rows, cols, bits = _block_args(gen, op)
    m = t.map
    if slm.is_slm(d):
        slm.store(gen, d, bits, rows, cols, gen.v(op.value), m, gen.slm_pitch(op.tensor_desc))
        return
    if cols == 1 or (rows == 1 and cols == gen.target.subgroup_size
                     and not _row_block_message(gen, op, "write", bits, cols, 1)):  # a column / one element per lane
        vector_ops.store_small(gen, d, bits, rows, cols, gen.v(op.value))
        return
    per_lane = gen.per_lane_array(op.tensor_desc)
    fn = gen.lib.store_2d(bits, rows, cols, m.layout, m.data, per_lane)
    if gen.lib.store_2d_kind(bits, rows, cols, m.layout, m.data, per_lane) != "scatter":
        gen.uses_block2d(op.tensor_desc)
    value = gen.b.bitcast(gen.v(op.value), fn.function_type.args[-1])
    gen.b.call(fn, d.surface() + [value])


@EMITTERS.register(xegpu.PrefetchNdOp)
def emit_prefetch_nd(gen, op: xegpu.PrefetchNdOp) -> None:
    d, t, rows, cols, bits = _block_args(gen, op)
    hints = {k: getattr(op, k).data for k in ("l1_hint", "l2_hint", "l3_hint") if getattr(op, k) is not None}
    per_lane = gen.per_lane_array(op.tensor_desc)
    if not per_lane and gen.target.has_2d_block_io and gen.target.find_block2d("prefetch", bits, rows, cols,
                                                                               t.block_attr.arr_len):
        gen.uses_block2d(op.tensor_desc)
    hoisted = gen.hoisted_prefetches.get(op)
    if hoisted is not None:  # its address payload was made before the loop
        prefetch_payloads.prefetch(gen, op, hoisted)
        return
    fn = gen.lib.prefetch_2d(bits, rows, cols, t.block_attr.arr_len, gen.target.cache_controls(hints), per_lane)
    gen.b.call(fn, d.surface())


def pad_bits(attr, elem) -> int:
    """The bit pattern of a padding attribute in element type ``elem`` (0 for zero)."""
    value = attr.value.data
    bits = bit_width(elem)
    if isinstance(elem, BFloat16Type):
        return int(np.array([value], np.float32).view(np.uint32)[0]) >> 16
    if isinstance(elem, (Float16Type, Float32Type)):
        ftype, utype = (np.float16, np.uint16) if bits == 16 else (np.float32, np.uint32)
        return int(np.array([value], ftype).view(utype)[0])
    return int(value) & ((1 << bits) - 1)
