"""Subgroup block reads and writes: one message per memory row of a 2D block.

Targets without 2D block messages (ARC) still have the subgroup block messages of
``cl_intel_subgroups`` / ``cl_intel_subgroups_short`` / ``cl_intel_subgroups_char``
(``OpSubgroupBlockReadINTEL`` / ``OpSubgroupBlockWriteINTEL``): from one uniform address,
lane ``n`` reads (writes) the ``U`` units ``p[u*lanes + n]``, ``u < U``.  A row of an
sg_map fragment with ``wi_layout = [1, lanes]`` is exactly that: lane ``n`` holds, for
column unit ``cb``, the ``wi_data[1]`` elements at ``x + cb*lanes*wi_data[1] +
n*wi_data[1]``, i.e. unit ``cb*lanes + n`` of the row when a unit is ``wi_data[1]``
elements.  So a ``rows x cols`` block is ``rows`` messages instead of one per-lane gather
per element (288 ``load.ugm.d16u32`` per 17 DPAS on ARC).

Block messages have no bounds checks and want a 4-byte aligned address (16 bytes for
writes, OpenCL ``cl_intel_subgroups``), so the wrappers test, once per block and
uniformly for the subgroup, that the whole block lies inside the surface and is aligned;
otherwise they take the guarded per-lane path of ``block2d``.

On the CPU device the builtins are *defined* from that specification (lane ``n`` reads
unit ``u*lanes + n``), so the CPU runs the ARC kernel body itself.
"""
from __future__ import annotations

from llvmlite import ir

from .mangle import Ptr, mangle, vec

I32, I64 = ir.IntType(32), ir.IntType(64)
#: element code of the pointee per unit width, and the builtin's suffix
_UNIT_CODES = {8: ("h", "_uc"), 16: ("t", "_us"), 32: ("j", "")}
#: byte alignment the block messages require of their address (cl_intel_subgroups)
READ_ALIGN, WRITE_ALIGN = 4, 16
#: OpenCL address space of the global memory the row messages address (SLM's is 3)
GLOBAL = 1


def row_units(target, elem_bits: int, cols: int, wi_layout, wi_data) -> int | None:
    """Units per lane of one row read for this fragment, or None when a row of it is not
    one subgroup block message (not a one-row lane layout, a unit that is not 8, 16 or 32
    bits, or too many units)."""
    (l0, l1), (_, d1) = wi_layout, wi_data
    lanes = target.subgroup_size
    if l0 != 1 or l1 != lanes or d1 * elem_bits not in _UNIT_CODES or cols % (lanes * d1):
        return None
    units = cols // (lanes * d1)
    return units if units in target.subgroup_block_units else None


def _builtin_name(op: str, unit_bits: int, units: int, space: int) -> str:
    code, suffix = _UNIT_CODES[unit_bits]
    count = "" if units == 1 else str(units)
    if op == "read":
        return mangle(f"intel_sub_group_block_read{suffix}{count}", [Ptr(code, space, const=True)])
    return mangle(f"intel_sub_group_block_write{suffix}{count}", [Ptr(code, space), vec(units, code)])


def _value_type(unit_bits: int, units: int) -> ir.Type:
    unit = ir.IntType(unit_bits)
    return unit if units == 1 else ir.VectorType(unit, units)


def block_read(bi, unit_bits: int, units: int, space: int = GLOBAL) -> ir.Function:
    """``intel_sub_group_block_read*`` from global (``space`` 1) or shared local memory
    (3): declared for the GPU, defined for the CPU device."""
    fnty = ir.FunctionType(_value_type(unit_bits, units), [ir.PointerType(addrspace=space)])
    fn, builder = _builtin(bi, _builtin_name("read", unit_bits, units, space), fnty)
    if builder is not None:
        unit = ir.IntType(unit_bits)
        out = [builder.load(slot, typ=unit, align=unit_bits // 8)
               for slot in _unit_slots(bi, builder, fn.args[0], unit_bits, units)]
        builder.ret(_pack(builder, out, unit_bits, units))
    return fn


def block_write(bi, unit_bits: int, units: int, space: int = GLOBAL) -> ir.Function:
    """``intel_sub_group_block_write*`` to global (``space`` 1) or shared local memory
    (3): declared for the GPU, defined for the CPU device."""
    fnty = ir.FunctionType(ir.VoidType(), [ir.PointerType(addrspace=space), _value_type(unit_bits, units)])
    fn, builder = _builtin(bi, _builtin_name("write", unit_bits, units, space), fnty)
    if builder is not None:
        ptr, value = fn.args
        for u, slot in enumerate(_unit_slots(bi, builder, ptr, unit_bits, units)):
            part = value if units == 1 else builder.extract_element(value, ir.Constant(I32, u))
            builder.store(part, slot, align=unit_bits // 8)
        builder.ret_void()
    return fn


def _builtin(bi, name: str, fnty: ir.FunctionType) -> tuple[ir.Function, ir.IRBuilder | None]:
    """The subgroup block builtin ``name``: already in the module, or declared (convergent)
    for the GPU -- then no builder -- or an internal definition to fill for the CPU device."""
    fn = bi.module.globals.get(name)
    if fn is not None:
        return fn, None
    if not bi.emulate:
        fn = bi.declare(name, fnty)
        fn.attributes.add("convergent")
        return fn, None
    fn = bi.define_internal(name, fnty)
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _unit_slots(bi, builder: ir.IRBuilder, ptr, unit_bits: int, units: int) -> list:
    """Addresses of this lane's ``units`` units: unit ``u`` of lane ``l`` is element
    ``l + u * subgroup_size`` (the block message's interleaved layout)."""
    lane = builder.zext(bi.lane_id(builder), I64)
    unit = ir.IntType(unit_bits)
    return [builder.gep(ptr, [builder.add(lane, ir.Constant(I64, u * bi.subgroup_size))], source_etype=unit)
            for u in range(units)]


def _pack(builder, parts, unit_bits, units):
    if units == 1:
        return parts[0]
    out = ir.Constant(ir.VectorType(ir.IntType(unit_bits), units), None)
    for u, part in enumerate(parts):
        out = builder.insert_element(out, part, ir.Constant(I32, u))
    return out


def _unit(builder, value, units: int, u: int):
    return value if units == 1 else builder.extract_element(value, ir.Constant(I32, u))


class RowBlock:
    """Addresses and the in-bounds test of a block read or written row by row."""

    def __init__(self, builder, frag, surface, align: int):
        self.builder, self.frag = builder, frag
        self.base, width, height, pitch, self.x, self.y = surface
        self.ebytes = frag.elem_bits // 8
        b = builder
        width_elems = b.lshr(width, ir.Constant(I32, self.ebytes.bit_length() - 1))
        last_col = b.add(self.x, ir.Constant(I32, frag.cols))
        last_row = b.add(self.y, ir.Constant(I32, frag.rows))
        self.pitch = b.sext(pitch, I64)
        first = self.row_pointer(0)
        aligned = b.and_(b.ptrtoint(first, I64), ir.Constant(I64, align - 1))
        # unsigned compares reject negative coordinates; last_* cannot wrap for tiles
        # inside an i32 surface
        checks = [b.icmp_unsigned("<", self.x, width_elems), b.icmp_unsigned("<=", last_col, width_elems),
                  b.icmp_unsigned("<", self.y, height), b.icmp_unsigned("<=", last_row, height),
                  b.icmp_unsigned("==", aligned, ir.Constant(I64, 0)),
                  b.icmp_unsigned("==", b.and_(pitch, ir.Constant(I32, align - 1)), ir.Constant(I32, 0))]
        self.inside = checks[0]
        for check in checks[1:]:
            self.inside = b.and_(self.inside, check)

    def row_pointer(self, row_off: int) -> ir.Value:
        b = self.builder
        row = b.sext(b.add(self.y, ir.Constant(I32, row_off)), I64)
        offset = b.add(b.mul(row, self.pitch), b.mul(b.sext(self.x, I64), ir.Constant(I64, self.ebytes)))
        return b.gep(self.base, [offset], source_etype=ir.IntType(8))


def read_rows(bi, builder, frag, addr: RowBlock, units: int) -> list:
    """This lane's fragment elements (fragment order) read with one block read per row;
    only valid where ``addr.inside``."""
    d0, d1 = frag.wi_data
    unit_bits = d1 * frag.elem_bits
    read = block_read(bi, unit_bits, units)
    row_units_ = frag.rows // d0
    values = [None] * frag.size
    for rr in range(frag.rows):
        row = builder.call(read, [addr.row_pointer(rr)])
        rb, i = divmod(rr, d0)
        for cb in range(units):
            word = _unit(builder, row, units, cb)
            for j in range(d1):
                piece = builder.lshr(word, ir.Constant(word.type, j * frag.elem_bits)) if j else word
                element = builder.trunc(piece, ir.IntType(frag.elem_bits)) if d1 > 1 else piece
                values[(cb * row_units_ + rb) * (d0 * d1) + i * d1 + j] = element
    return values


def write_rows(bi, builder, frag, addr: RowBlock, units: int, element_of) -> None:
    """Write this lane's fragment with one block write per row (``element_of(index)``
    gives element ``index`` of the fragment); only valid where ``addr.inside``."""
    d0, d1 = frag.wi_data
    unit_bits = d1 * frag.elem_bits
    write = block_write(bi, unit_bits, units)
    row_units_ = frag.rows // d0
    unit_ty = ir.IntType(unit_bits)
    for rr in range(frag.rows):
        rb, i = divmod(rr, d0)
        parts = []
        for cb in range(units):
            word = None
            for j in range(d1):
                element = element_of((cb * row_units_ + rb) * (d0 * d1) + i * d1 + j)
                piece = builder.zext(element, unit_ty) if d1 > 1 else element
                if j:
                    piece = builder.shl(piece, ir.Constant(unit_ty, j * frag.elem_bits))
                word = piece if word is None else builder.or_(word, piece)
            parts.append(word)
        builder.call(write, [addr.row_pointer(rr), _pack(builder, parts, unit_bits, units)])
