"""Codegen for shared local memory (SLM) and workgroup barriers.

* A ``memref.alloc`` in memory space 3 becomes a module-scope ``addrspace(3)`` global
  (a SPIR-V ``Workgroup`` variable; IGC reports its size as ``slm_size``). The kernel's
  total is checked against ``Target.slm_bytes``.
* Tensor descriptors over such a buffer are read and written per lane (2D block messages
  address global memory only): a block ``R x sg`` in the element-wise lane layout (lane n
  holds column n, one element per row) is R scalar accesses per lane; ``1 x sg`` rows and
  ``R x 1`` columns use the small-block accesses of vector_ops.
* Except a block whose rows are contiguous in SLM (the buffer is as wide as the block)
  with one 16- or 32-bit unit per lane and row, on targets that read rows with subgroup
  block messages (ARC): its ``R`` units per lane are ``R / 8`` block messages of up to
  8 units (``intel_sub_group_block_read*`` on local memory; lane n's unit u is unit
  ``u*sg + n`` of the block, i.e. row u).  An 8x16 f16 DPAS A block is then one
  256-byte block read (IGC: two 128-byte ``load.slm.d32x32t``) instead of 8 per-lane
  loads (docs/decisions/016-transposes.md).
* ``gpu.barrier`` is the OpenCL ``barrier(CLK_LOCAL_MEM_FENCE)``, which LLVM's SPIR-V
  backend emits as ``OpControlBarrier Workgroup Workgroup 0x110`` (ISA: ``fence.slm``,
  ``signal barrier``, ``sync.bar``).
"""
from __future__ import annotations

from llvmlite import ir

from ...errors import LoweringError
from ...dialects.types import bit_width
from ..builtins import block1d
from . import vector_ops

I32, I64 = ir.IntType(32), ir.IntType(64)
SLM_ADDRSPACE = 3
CLK_LOCAL_MEM_FENCE = 1


def is_slm(d) -> bool:
    """Whether a descriptor's surface is in shared local memory."""
    return getattr(d.base.type, "addrspace", 0) == SLM_ADDRSPACE


def alloc(gen, op) -> None:
    """A module-scope Workgroup array for ``memref.alloc() : memref<RxCxT, 3>``."""
    t = op.memref.type
    shape = list(t.get_shape())
    if len(shape) != 2 or any(s < 0 for s in shape):
        raise LoweringError("shared local memory buffers must be static 2-D memrefs", op)
    bits = bit_width(t.element_type)
    nbytes = shape[0] * shape[1] * bits // 8
    gen.slm.take(nbytes, op, f"this {shape[0]}x{shape[1]} buffer of {bits}-bit elements (an xt.slm_alloc "
                 f"buffer or a layout conversion/cross-subgroup reduction) lives in shared local memory",
                 "use smaller workgroup tiles")
    elem = ir.IntType(bits)
    arr = ir.ArrayType(elem, shape[0] * shape[1])
    var = ir.GlobalVariable(gen.llmod, arr, gen.llmod.get_unique_name("slm"), addrspace=SLM_ADDRSPACE)
    var.linkage = "internal"
    var.initializer = ir.Constant(arr, ir.Undefined)  # Workgroup variables take no initializer
    var.align = 64
    var.type = ir.PointerType(addrspace=SLM_ADDRSPACE)  # used as an opaque pointer, like the arguments
    ptr = var
    gen.memrefs[op.memref] = (ptr, [ir.Constant(I64, s) for s in shape], [ir.Constant(I64, shape[1]),
                                                                        ir.Constant(I64, 1)])
    gen.values[op.memref] = ptr


def reinterpret(gen, op) -> None:
    """``memref.reinterpret_cast`` of an SLM buffer to a static view (the column-major view
    a workgroup transpose loads through): the same pointer with the view's sizes and strides."""
    ptr = gen.values[op.source]
    t = op.result.type
    strides = [int(s) for s in t.layout.get_strides()]
    gen.memrefs[op.result] = (ptr, [ir.Constant(I64, s) for s in t.get_shape()], [ir.Constant(I64, s) for s in strides])
    gen.values[op.result] = ptr


def barrier(gen) -> None:
    fn = gen.lib.declare("_Z7barrierj", ir.FunctionType(ir.VoidType(), [I32]))
    gen.b.call(fn, [ir.Constant(I32, CLK_LOCAL_MEM_FENCE)])


def load(gen, d, bits: int, rows: int, cols: int, lt: ir.Type, sg_map=None, pitch: int | None = None) -> ir.Value:
    """A block of an SLM buffer in the descriptor's lane layout ``[1, sg] x [1, w]``: lane n
    holds columns ``n*w .. n*w+w-1`` of every row, row-major (the element-wise layout, A
    operands, and VNNI-packed B, whose pairs are consecutive rows of one column).
    ``pitch``: the buffer's row length in elements when it is static."""
    if cols == 1 or rows == 1:
        return vector_ops.load_small(gen, d, bits, rows, cols, lt)
    width = _lane_width(gen, cols, sg_map)
    b = gen.b
    unit_bits = _contiguous_unit_bits(gen, bits, rows, cols, pitch)
    if unit_bits:
        units = []
        for first, count in _messages(gen, rows):
            read = block1d.block_read(gen.lib, unit_bits, count, SLM_ADDRSPACE)
            value = b.call(read, [_row_pointer(gen, d, bits, first)])
            units += [value] if count == 1 else [b.extract_element(value, ir.Constant(I32, u)) for u in range(count)]
        raw = vector_ops._pack(b, units, ir.VectorType(ir.IntType(unit_bits), rows))
        return b.bitcast(raw, lt)
    first = b.mul(gen.lib.lane_id(b), ir.Constant(I32, width))
    raw_t = ir.IntType(bits)
    parts = [b.load(_element(gen, d, bits, r, b.add(b.add(d.x, first), ir.Constant(I32, j))), typ=raw_t,
                    align=bits // 8) for r in range(rows) for j in range(width)]
    raw = vector_ops._pack(b, parts, ir.VectorType(raw_t, len(parts)))
    return raw if lt == raw.type else b.bitcast(raw, lt)


def load_transposed(gen, d, bits: int, rows: int, cols: int, lt: ir.Type, sg_map) -> ir.Value:
    """``load_nd {transpose}`` of a ``rows x cols`` SLM block: the ``cols x rows`` logical
    value in its lane layout ``[1, sg] x [1, w]`` (the descriptor carries it transposed):
    lane n holds logical columns ``n*w .. n*w+w-1`` of every logical row, row-major, and
    logical ``(r, c)`` is memory ``(y + c, x + r)``."""
    value_map = _Swapped(sg_map) if sg_map is not None else None
    width = _lane_width(gen, rows, value_map)
    b = gen.b
    first = b.add(d.y, b.mul(gen.lib.lane_id(b), ir.Constant(I32, width)))
    raw_t = ir.IntType(bits)
    parts = []
    for r in range(cols):
        for j in range(width):
            _, ptr = vector_ops._address(gen, d, bits, b.add(first, ir.Constant(I32, j)),
                                         b.add(d.x, ir.Constant(I32, r)))
            parts.append(b.load(ptr, typ=raw_t, align=bits // 8))
    raw = vector_ops._pack(b, parts, ir.VectorType(raw_t, len(parts)))
    return raw if lt == raw.type else b.bitcast(raw, lt)


class _Swapped:
    """The value's sg_map from a transposed descriptor's (layout and data swap back)."""

    def __init__(self, sg_map):
        self.layout = tuple(sg_map.layout)[::-1]
        self.data = tuple(sg_map.data)[::-1]


def store(gen, d, bits: int, rows: int, cols: int, value: ir.Value, sg_map=None, pitch: int | None = None) -> None:
    """Write this lane's fragment (the lane layout of :func:`load`)."""
    if cols == 1 or rows == 1:
        vector_ops.store_small(gen, d, bits, rows, cols, value)
        return
    width = _lane_width(gen, cols, sg_map)
    b = gen.b
    unit_bits = _contiguous_unit_bits(gen, bits, rows, cols, pitch)
    if unit_bits:
        unit_t = ir.IntType(unit_bits)
        units = b.bitcast(value, ir.VectorType(unit_t, rows))
        for first, count in _messages(gen, rows):
            parts = [b.extract_element(units, ir.Constant(I32, first + u)) for u in range(count)]
            part = parts[0] if count == 1 else vector_ops._pack(b, parts, ir.VectorType(unit_t, count))
            write = block1d.block_write(gen.lib, unit_bits, count, SLM_ADDRSPACE)
            b.call(write, [_row_pointer(gen, d, bits, first), part])
        return
    raw_t = ir.VectorType(ir.IntType(bits), rows * width)
    raw = value if value.type == raw_t else b.bitcast(value, raw_t)
    first = b.add(d.x, b.mul(gen.lib.lane_id(b), ir.Constant(I32, width)))
    for r in range(rows):
        for j in range(width):
            elem = b.extract_element(raw, ir.Constant(I32, r * width + j))
            b.store(elem, _element(gen, d, bits, r, b.add(first, ir.Constant(I32, j))), align=bits // 8)


def _contiguous_unit_bits(gen, bits: int, rows: int, cols: int, pitch: int | None) -> int | None:
    """The unit (bits) of a lane's row when this block is read/written as whole-block
    subgroup block messages: the target reads rows that way (no 2D block IO), the block
    spans its buffer's rows (``pitch == cols``: consecutive rows are consecutive bytes, and
    row starts are ``cols * bits / 8`` >= 16-byte aligned in the 64-byte aligned buffer,
    as block writes need), and a lane holds one 16- or 32-bit unit per row."""
    t = gen.target
    if t.has_2d_block_io or 1 not in (t.subgroup_block_units or ()) or bits not in t.row_block_elem_bits:
        return None
    unit_bits = cols // t.subgroup_size * bits
    if pitch != cols or unit_bits not in (16, 32) or (cols * bits // 8) % block1d.WRITE_ALIGN:
        return None
    return unit_bits


def _messages(gen, rows: int) -> list[tuple[int, int]]:
    """(first row, units) of each block message over ``rows`` one-unit rows: the largest
    unit counts the target's subgroup block messages take."""
    out, first = [], 0
    while first < rows:
        count = max(u for u in gen.target.subgroup_block_units if u <= rows - first)
        out.append((first, count))
        first += count
    return out


def _row_pointer(gen, d, bits: int, row: int) -> ir.Value:
    """Address of row ``y + row`` at column ``x`` (a uniform address: the block message's)."""
    _, ptr = vector_ops._address(gen, d, bits, gen.b.add(d.y, ir.Constant(I32, row)), d.x)
    return ptr


def _lane_width(gen, cols: int, sg_map) -> int:
    """Columns per lane; SLM blocks must be spread along rows over all lanes."""
    sg = gen.target.subgroup_size
    if sg_map is not None and (tuple(sg_map.layout)[0] != 1 or tuple(sg_map.layout)[1] != sg):
        raise LoweringError(f"an SLM block with the lane layout {list(sg_map.layout)} is not supported "
                            f"(only [1, {sg}])")
    if cols % sg:
        raise LoweringError(f"internal: an SLM block must be a multiple of {sg} columns wide, got {cols}")
    return cols // sg


def _element(gen, d, bits: int, r: int, col: ir.Value) -> ir.Value:
    """Address of row ``y + r``, column ``col``. Unguarded: an SLM buffer has exactly the
    workgroup tile's shape and every piece of a wg_map lies inside it (branch-free code
    keeps a 32x32 accumulator's copy out of spills on ARC)."""
    _, ptr = vector_ops._address(gen, d, bits, gen.b.add(d.y, ir.Constant(I32, r)), col)
    return ptr


