"""The warp-level tile ops of the NVPTX emitter: per-lane loads and stores (bounds-checked,
like the CPU device's per-lane paths), reductions across lanes with ``shfl.sync``,
broadcasts, and ``tile_mma`` as ``mma.sync.aligned.m16n8k16`` inline PTX."""
from __future__ import annotations

from llvmlite import ir

from ...errors import LoweringError
from ...dialects.types import is_unsigned
from .layouts import WARP, Layout, default_layout
from .lane_values import (F16, F32, I1, I16, I32, I64, Tile, Vec, bf16_to_f32, elem_of, f32_to_bf16, intrinsic, is_bf16,
                          joined, llvm_type)

ZERO64 = ir.Constant(I64, 0)


def lane_bases(b: ir.IRBuilder, lane: ir.Value, layout: Layout, warp: ir.Value | None = None
               ) -> tuple[ir.Value, ir.Value]:
    """(r0, c0) of this lane in ``layout``, i64: the lane's place in its warp's part plus,
    in a program of several warps, that part's first row and column."""
    out = []
    for shift, mask, mult in layout.lane_base():
        if not mask:
            out.append(ZERO64)
            continue
        v = b.and_(b.lshr(lane, ir.Constant(I64, shift)), ir.Constant(I64, mask))
        out.append(b.mul(v, ir.Constant(I64, mult)) if mult != 1 else v)
    if warp is not None and layout.warps != (1, 1):
        step_r, step_c = layout.warp_steps()
        wc = ir.Constant(I64, layout.warps[1])
        if step_r:
            out[0] = b.add(out[0], b.mul(b.udiv(warp, wc), ir.Constant(I64, step_r)))
        if step_c:
            out[1] = b.add(out[1], b.mul(b.urem(warp, wc), ir.Constant(I64, step_c)))
    return out[0], out[1]


def positions(b, lane, tile: Tile, layout: Layout, warp=None):
    """(in bounds, element index) of each slot of ``layout`` over ``tile`` (a transposed
    tile's (r, c) is the array's (col + c, row + r))."""
    r0, c0 = lane_bases(b, lane, layout, warp)
    row0, col0 = b.add(tile.row, r0), b.add(tile.col, c0)
    mem = tile.mem
    for dr, dc in layout.slots():
        row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
        col = b.add(col0, ir.Constant(I64, dc)) if dc else col0
        if tile.transposed:
            row, col = col, row
        inb = b.and_(b.icmp_unsigned("<", row, mem.rows), b.icmp_unsigned("<", col, mem.cols))
        yield inb, b.add(b.mul(row, mem.stride), col)


def load(b: ir.IRBuilder, lane, tile: Tile, layout: Layout, elem, op, warp=None) -> Vec:
    """Each slot read from its element, 0 outside the array.  A tile wholly inside the
    array (checked once per load) takes unguarded loads at constant offsets from one
    address per row, 32-bit aligned pairs marked so (the NVPTX load/store vectorizer then
    reads two 16-bit elements at once); other tiles clamp each address to the first
    element, so that no lane reads out of bounds.  A ``cols`` tile of 16-bit elements in
    runs of 4 bytes or more takes :func:`_packed_row_load` (both paths as 32-bit words)."""
    t = llvm_type(elem, op)
    if layout.kind == "mma_c_col_t":   # read as the [n, 1] value it is the transpose of
        column = load(b, lane, Tile(tile.mem, tile.col, tile.row, tile.shape[::-1], not tile.transposed),
                      layout.transposed(), elem, op, warp)
        return Vec(layout, column.elem, column.slots)
    if tile.transposed:
        return _transposed_load(b, lane, tile, layout, elem, t, warp)
    run = _run_bytes(layout, t)
    # a cols tile's fast path needs its runs aligned too (a second, pair-aligned fast
    # path would be merged with it by LLVM, which keeps the lesser alignment)
    inside = b.and_(_bounds(b, tile, layout), _aligned(b, tile, _bytes(t), run)) if run else \
        _wholly_inside(b, tile, layout, t)
    if run >= 4 and _is16(t):
        aligned = _aligned(b, tile, _bytes(t), run)
        return Vec(layout, elem, _packed_row_load(b, lane, tile, layout, t, warp, run, inside, aligned))
    with b.if_else(inside) as (fast, slow):
        with fast:
            fast_slots, fast_block = _unguarded_loads(b, lane, tile, layout, t, warp, run), b.block
        with slow:
            if layout.kind == "cols":
                slow_slots = _guarded_row_loads(b, lane, tile, layout, t, warp)
            else:
                slow_slots = []
                for inb, index in positions(b, lane, tile, layout, warp):
                    ptr = b.gep(tile.mem.ptr, [b.select(inb, index, ZERO64)], source_etype=t)
                    slow_slots.append(b.select(inb, b.load(ptr, typ=t), ir.Constant(t, 0)))
            slow_block = b.block
    return Vec(layout, elem, joined(b, fast_slots, fast_block, slow_slots, slow_block))


def _packed_row_load(b, lane, tile: Tile, layout: Layout, t: ir.Type, warp, run: int, inside, aligned) -> list:
    """A ``cols`` tile of 16-bit elements whose runs take aligned accesses, as 32-bit words
    (two elements each), split into slots after the join: so the in-bounds path's
    registers are the loads' own (no unpacking before the join, and half the registers
    until each element is used).  ``inside`` (the tile in the array, its runs aligned):
    one vector load a run; else :func:`_edge_run` a run."""
    words = run // 4
    per_run = 2 * words
    r0, c0 = lane_bases(b, lane, layout, warp)
    row0, col0 = b.add(tile.row, r0), b.add(tile.col, c0)
    slots = layout.slots()
    row_ptrs: dict = {}

    def run_ptr(i, inbounds=True):     # (the edge path's addresses may lie past the array)
        dr, dc = slots[i]
        if dr not in row_ptrs:
            row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
            row_ptrs[dr] = b.gep(tile.mem.ptr, [b.add(b.mul(row, tile.mem.stride), col0)], source_etype=t,
                                 inbounds=inbounds)
        return b.gep(row_ptrs[dr], [ir.Constant(I64, dc)], source_etype=t, inbounds=inbounds) if dc else \
            row_ptrs[dr]

    with b.if_else(inside) as (fast, slow):
        with fast:
            fast_words = []
            for i in range(0, len(slots), per_run):
                vec = b.load(run_ptr(i), typ=ir.VectorType(I32, words), align=run)
                fast_words += [b.extract_element(vec, ir.Constant(I32, k)) for k in range(words)]
            fast_block = b.block
        with slow:
            row_ptrs.clear()
            room = b.sub(tile.mem.cols, col0)       # columns left from this lane's first (signed)
            col_ok = b.icmp_signed(">=", col0, ZERO64)
            slow_words = []
            for i in range(0, len(slots), per_run):
                dr, dc = slots[i]
                row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
                row_ok = b.and_(b.icmp_unsigned("<", row, tile.mem.rows), col_ok)
                slow_words += _edge_run(b, run_ptr(i, False), t, words, run, row_ok, room, dc, aligned)
            slow_block = b.block
    return [half for word in joined(b, fast_words, fast_block, slow_words, slow_block)
            for half in _unpack16(b, word, t)]


def _edge_run(b, ptr, t: ir.Type, words: int, run: int, row_ok, room, dc: int, aligned) -> list:
    """One run of a tile past its fast path, as ``words`` 32-bit words: one vector load
    where the run lies wholly in the array and ``aligned``; else each element read where it
    lies in the array (a branch around each load; 0 elsewhere) and packed.  A branch a
    run keeps the registers a run's worth: ptxas holds one run's scalar loads at a time,
    not the tile's (layer_norm at 8192 f16 columns over 8 warps: 75 registers with the
    loads of the whole tile's elements in flight on its w and b edge paths)."""
    elems = 2 * words
    whole = b.and_(row_ok, b.icmp_signed(">=", room, ir.Constant(I64, dc + elems)))
    with b.if_else(b.and_(whole, aligned)) as (vector, scalar):
        with vector:
            vec = b.load(ptr, typ=ir.VectorType(I32, words), align=run)
            vector_words = [b.extract_element(vec, ir.Constant(I32, k)) for k in range(words)]
            vector_block = b.block
        with scalar:
            halves = [_guarded_load(b, ptr, e, t, b.and_(row_ok, b.icmp_signed(">", room, ir.Constant(I64, dc + e))))
                      for e in range(elems)]
            scalar_words = [_pack16(b, halves[k], halves[k + 1]) for k in range(0, elems, 2)]
            scalar_block = b.block
    return joined(b, vector_words, vector_block, scalar_words, scalar_block)


def _pack16(b, lo, hi):
    """Two 16-bit values (f16 or bf16's bits) as one i32, ``lo`` in the low half."""
    as16 = (lambda v: v) if lo.type == I16 else (lambda v: b.bitcast(v, I16))
    return b.or_(b.zext(as16(lo), I32), b.shl(b.zext(as16(hi), I32), ir.Constant(I32, 16)))


def _unpack16(b, word, t: ir.Type) -> list:
    """The low and high 16-bit halves of ``word`` as ``t`` values."""
    if t == I16:
        return [b.trunc(word, I16), b.trunc(b.lshr(word, ir.Constant(I32, 16)), I16)]
    pair = b.bitcast(word, ir.VectorType(t, 2))
    return [b.extract_element(pair, ir.Constant(I32, 0)), b.extract_element(pair, ir.Constant(I32, 1))]


def _guarded_row_loads(b, lane, tile: Tile, layout: Layout, t: ir.Type, warp) -> list:
    """A ``cols`` tile's slots past its fast path: each read only where it lies in the
    array (a branch around the load; 0 elsewhere), at a constant offset from one address
    per row, and each column checked as ``dc < columns - c0`` (one subtraction a tile):
    a whole-row program's 16 slots then hold one address, not 16 clamped 64-bit ones
    (ptxas: 32 registers instead of 64 for softmax over 8192 f16 columns at 16 warps, so
    4 programs fit a multiprocessor, not 2)."""
    r0, c0 = lane_bases(b, lane, layout, warp)
    row0, col0 = b.add(tile.row, r0), b.add(tile.col, c0)
    mem = tile.mem
    room = b.sub(mem.cols, col0)            # columns left from this lane's first (signed)
    col_ok = b.icmp_signed(">=", col0, ZERO64)
    rows, slots = {}, []
    for dr, dc in layout.slots():
        if dr not in rows:
            row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
            row_ok = b.and_(b.icmp_unsigned("<", row, mem.rows), col_ok)
            rows[dr] = (row_ok, b.gep(mem.ptr, [b.add(b.mul(row, mem.stride), col0)], source_etype=t))
        row_ok, row_ptr = rows[dr]
        slots.append(_guarded_load(b, row_ptr, dc, t, b.and_(row_ok, b.icmp_signed(">", room, ir.Constant(I64, dc)))))
    return slots


def _guarded_load(b, ptr, offset: int, t: ir.Type, ok) -> ir.Value:
    """Element ``offset`` of ``ptr`` where ``ok``, else 0: a branch around the load (no
    address of a lane that must not read is ever formed into a load)."""
    before = b.block
    with b.if_then(ok):
        value = b.load(b.gep(ptr, [ir.Constant(I64, offset)], source_etype=t) if offset else ptr, typ=t)
        loaded = b.block
    phi = b.phi(t)
    phi.add_incoming(ir.Constant(t, 0), before)
    phi.add_incoming(value, loaded)
    return phi


def _transposed_load(b, lane, tile: Tile, layout: Layout, elem, t: ir.Type, warp) -> Vec:
    """An ``order = [0, 1]`` tile: slot (r, c) reads array element (col + c, row + r); an
    ``mma_b`` fragment's pairs (rows 2t, 2t + 1 of one column) are adjacent in the array,
    so a tile wholly inside it, its base, pitch and first column even, reads each pair as
    one aligned 32-bit load; other tiles read guarded, 0 outside."""
    mem, (rows, cols) = tile.mem, layout.shape
    zero = ZERO64
    inside = b.and_(b.icmp_signed(">=", tile.row, zero), b.icmp_signed(">=", tile.col, zero))
    inside = b.and_(inside, b.icmp_signed("<=", b.add(tile.col, ir.Constant(I64, cols)), mem.rows))
    inside = b.and_(inside, b.icmp_signed("<=", b.add(tile.row, ir.Constant(I64, rows)), mem.cols))
    paired = _is16(t) and layout.kind == "mma_b"
    if paired:
        odd = b.or_(b.and_(b.ptrtoint(mem.ptr, I64), ir.Constant(I64, 3)),
                    b.and_(b.or_(mem.stride, tile.row), ir.Constant(I64, 1)))
        inside = b.and_(inside, b.icmp_unsigned("==", odd, zero))
    with b.if_else(inside) as (fast, slow):
        with fast:
            r0, c0 = lane_bases(b, lane, layout, warp)
            col0, row0 = b.add(tile.row, r0), b.add(tile.col, c0)     # the array's column, row
            fast_slots = []
            for dr, dc in layout.slots():
                index = b.add(b.mul(b.add(row0, ir.Constant(I64, dc)), mem.stride), b.add(col0, ir.Constant(I64, dr)))
                ptr = b.gep(mem.ptr, [index], source_etype=t, inbounds=True)
                fast_slots.append(b.load(ptr, typ=t, align=4 if paired and dr % 2 == 0 else None))
            fast_block = b.block
        with slow:
            slow_slots = []
            for inb, index in positions(b, lane, tile, layout, warp):
                ptr = b.gep(mem.ptr, [b.select(inb, index, ZERO64)], source_etype=t)
                slow_slots.append(b.select(inb, b.load(ptr, typ=t), ir.Constant(t, 0)))
            slow_block = b.block
    return Vec(layout, elem, joined(b, fast_slots, fast_block, slow_slots, slow_block))


def _run_bytes(layout: Layout, t: ir.Type) -> int:
    """Bytes of the aligned accesses a ``cols`` layout's runs take (its run of elements,
    at most 16), 0 where the run is one element or the layout is another kind."""
    if layout.kind != "cols" or layout.lane_base()[1][2] < 2 or t == I1:
        return 0
    return min(16, layout.lane_base()[1][2] * _bytes(t))


def _aligned(b, tile: Tile, t_bytes: int, run: int):
    """Whether the array's base, its row pitch and the tile's column put every run of
    ``run`` bytes at a multiple of ``run``."""
    mask = run // t_bytes - 1
    odd = b.or_(b.and_(b.ptrtoint(tile.mem.ptr, I64), ir.Constant(I64, run - 1)),
                b.and_(b.or_(tile.mem.stride, tile.col), ir.Constant(I64, mask)))
    return b.icmp_unsigned("==", odd, ZERO64)


def _bytes(t: ir.Type) -> int:
    return max(1, (t.width if isinstance(t, ir.IntType) else {F16: 16, F32: 32}.get(t, 64)) // 8)


def _bounds(b, tile: Tile, layout: Layout):
    """Whether the (row-major) tile lies inside its array."""
    mem, (rows, cols) = tile.mem, layout.shape
    cond = b.and_(b.icmp_signed(">=", tile.row, ZERO64), b.icmp_signed(">=", tile.col, ZERO64))
    cond = b.and_(cond, b.icmp_signed("<=", b.add(tile.row, ir.Constant(I64, rows)), mem.rows))
    return b.and_(cond, b.icmp_signed("<=", b.add(tile.col, ir.Constant(I64, cols)), mem.cols))


def _wholly_inside(b, tile: Tile, layout: Layout, t: ir.Type):
    """Whether the tile lies inside the array, and (16-bit elements, or f32 fragments of
    C) the array's base is 4-byte (8-byte) aligned and the row pitch and the tile's column
    are even, so that element pairs at even columns are 32-bit (64-bit) aligned."""
    mem, (rows, cols) = tile.mem, layout.shape
    zero = ZERO64
    cond = b.and_(b.icmp_signed(">=", tile.row, zero), b.icmp_signed(">=", tile.col, zero))
    cond = b.and_(cond, b.icmp_signed("<=", b.add(tile.row, ir.Constant(I64, rows)), mem.rows))
    cond = b.and_(cond, b.icmp_signed("<=", b.add(tile.col, ir.Constant(I64, cols)), mem.cols))
    if _is16(t) or t == F32 and layout.kind == "mma_c":
        base = b.ptrtoint(mem.ptr, I64)
        odd = b.or_(b.and_(base, ir.Constant(I64, 3 if _is16(t) else 7)),
                    b.and_(b.or_(mem.stride, tile.col), ir.Constant(I64, 1)))
        cond = b.and_(cond, b.icmp_unsigned("==", odd, zero))
    return cond


def _is16(t: ir.Type) -> bool:
    return isinstance(t, ir.HalfType) or t == I16


def _unguarded_loads(b, lane, tile: Tile, layout: Layout, t: ir.Type, warp=None, run: int = 0) -> list:
    r0, c0 = lane_bases(b, lane, layout, warp)
    row0, col0 = b.add(tile.row, r0), b.add(tile.col, c0)
    paired = _is16(t)
    even_lane_cols = layout.lane_base()[1][2] % 2 == 0
    t_bytes = _bytes(t)
    row_ptrs, slots = {}, []
    for dr, dc in layout.slots():
        if dr not in row_ptrs:
            row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
            row_ptrs[dr] = b.gep(tile.mem.ptr, [b.add(b.mul(row, tile.mem.stride), col0)], source_etype=t, inbounds=True)
        ptr = b.gep(row_ptrs[dr], [ir.Constant(I64, dc)], source_etype=t, inbounds=True) if dc else row_ptrs[dr]
        align = 4 if paired and even_lane_cols and dc % 2 == 0 else None
        if run and (dc * t_bytes) % run == 0:
            align = run
        slots.append(b.load(ptr, typ=t, align=align))
    return slots


def store(b: ir.IRBuilder, lane, value: Vec, tile: Tile, warp=None) -> None:
    """Each slot written where it is inside the array; a replicated value by lane 0 only.
    A fragment tile (``mma_c``) wholly inside the array, its pairs aligned (checked once),
    is written by unguarded stores at constant offsets from one address per row, pairs
    marked aligned (the vectorizer writes each pair at once)."""
    t = llvm_type(value.elem)
    if value.layout.kind == "mma_c_col_t":   # the [n, 1] value's registers, through the transposed tile
        value = Vec(value.layout.transposed(), value.elem, value.slots)
        tile = Tile(tile.mem, tile.col, tile.row, value.layout.shape, not tile.transposed)
    run = _run_bytes(value.layout, t)
    if run and not tile.transposed:
        # a cols tile inside the array, its runs aligned: run-aligned unguarded stores
        inside = b.and_(_bounds(b, tile, value.layout), _aligned(b, tile, _bytes(t), run))
        with b.if_else(inside) as (fast, slow):
            with fast:
                _unguarded_stores(b, lane, value, tile, t, warp, run)
            with slow:
                _guarded_stores(b, lane, value, tile, t, warp)
        return
    if value.layout.kind == "mma_c" and (t == F32 or _is16(t)) and not tile.transposed:
        inside = _wholly_inside(b, tile, value.layout, t)
        with b.if_else(inside) as (fast, slow):
            with fast:
                _unguarded_stores(b, lane, value, tile, t, warp)
            with slow:
                _guarded_stores(b, lane, value, tile, t, warp)
        return
    _guarded_stores(b, lane, value, tile, t, warp)


def _unguarded_stores(b, lane, value: Vec, tile: Tile, t: ir.Type, warp, run: int = 0) -> None:
    r0, c0 = lane_bases(b, lane, value.layout, warp)
    row0, col0 = b.add(tile.row, r0), b.add(tile.col, c0)
    pair_align = 8 if t == F32 else 4
    row_ptrs = {}
    group = run // _bytes(t) if run and value.layout.kind == "cols" else 1
    if group > 1:
        # whole aligned runs as one vector store each (else LLVM may sink a run's last
        # element into a store it shares with the guarded path, splitting the vector)
        slots, layout_slots = value.slots, value.layout.slots()
        vt = ir.VectorType(t, group)
        for i in range(0, len(slots), group):
            dr, dc = layout_slots[i]
            if dr not in row_ptrs:
                row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
                row_ptrs[dr] = b.gep(tile.mem.ptr, [b.add(b.mul(row, tile.mem.stride), col0)], source_etype=t,
                                     inbounds=True)
            vec = ir.Constant(vt, ir.Undefined)
            for e in range(group):
                vec = b.insert_element(vec, slots[i + e], ir.Constant(I32, e))
            ptr = b.gep(row_ptrs[dr], [ir.Constant(I64, dc)], source_etype=t, inbounds=True) if dc else row_ptrs[dr]
            b.store(vec, ptr, align=run)
        return
    for (dr, dc), v in zip(value.layout.slots(), value.slots):
        if dr not in row_ptrs:
            row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
            row_ptrs[dr] = b.gep(tile.mem.ptr, [b.add(b.mul(row, tile.mem.stride), col0)], source_etype=t,
                                 inbounds=True)
        ptr = b.gep(row_ptrs[dr], [ir.Constant(I64, dc)], source_etype=t, inbounds=True) if dc else row_ptrs[dr]
        if run:
            b.store(v, ptr, align=run if (dc * _bytes(t)) % run == 0 else None)
        else:
            b.store(v, ptr, align=pair_align if dc % 2 == 0 else None)


#: the lane bits along which a replicated kind holds copies (its stores keep those bits 0)
_COPY_BITS = {"rep": 31, "mma_c_row": 28, "mma_c_col": 3, "mma_c_col_t": 3, "mma_b_row": 3, "mma_b_col": 28}


def first_copy(b, lane, layout: Layout):
    """Whether this lane holds the first copy of a replicated ``layout``'s elements (None:
    each element lives in one lane)."""
    copies = _COPY_BITS.get(layout.kind)
    return None if copies is None else b.icmp_unsigned("==", b.and_(lane, ir.Constant(I64, copies)), ZERO64)


def first_copy_lane(b, lane, layout: Layout) -> ir.Value:
    """The lane (i32) of this lane's warp that holds the first copy of this lane's elements
    of a replicated ``layout``: its copy bits cleared."""
    return b.trunc(b.and_(lane, ir.Constant(I64, ~_COPY_BITS[layout.kind] & (WARP - 1))), I32)


def first_holder(b, lane, layout: Layout, warp):
    """Whether this thread holds the first copy of its elements in the program (None: each
    element lives in one thread): :func:`first_copy` within its warp, and, where the
    kind keeps a whole extent that the program's warp grid splits (a ``rep`` value in
    every warp, an ``mma_c_row`` column reduction in each warp row), warp row or column
    0 of the grid."""
    first = first_copy(b, lane, layout)
    rows, cols = layout.warp_copies()
    if warp is None or not (rows or cols):
        return first
    _, index, _ = warp_split(b, layout, warp, rows, cols)
    cond = b.icmp_unsigned("==", index, ZERO64)
    return cond if first is None else b.and_(first, cond)


def warp_split(b, layout: Layout, warp, rows: bool, cols: bool):
    """The warps of the program's grid along its rows (``rows``) and/or its columns
    (``cols``) that hold the same elements' parts: (how many, this warp's index among
    them, (its group, the groups) or None where they are all the program's warps)."""
    (wr, wc), grid_cols = layout.warps, ir.Constant(I64, layout.warps[1])
    if (rows or wr == 1) and (cols or wc == 1):
        return wr * wc, warp, None
    if rows:        # each warp column's warp rows apart
        return wr, b.udiv(warp, grid_cols), (b.urem(warp, grid_cols), wc)
    return wc, b.urem(warp, grid_cols), (b.udiv(warp, grid_cols), wr)


def _guarded_stores(b, lane, value: Vec, tile: Tile, t: ir.Type, warp) -> None:
    """Each slot stored where it is in the array (a transposed tile's (r, c) at the
    array's (col + c, row + r): one element a store); a ``cols`` value through an
    untransposed tile by rows (:func:`_guarded_row_stores`)."""
    if value.layout.kind == "cols" and not tile.transposed:
        _guarded_row_stores(b, lane, value, tile, t, warp)
        return
    first = first_holder(b, lane, value.layout, warp)
    for (inb, index), v in zip(positions(b, lane, tile, value.layout, warp), value.slots):
        cond = b.and_(inb, first) if first is not None else inb
        with b.if_then(cond):
            b.store(v, b.gep(tile.mem.ptr, [index], source_etype=t))


def _guarded_row_stores(b, lane, value: Vec, tile: Tile, t: ir.Type, warp) -> None:
    """A ``cols`` value's slots written where they lie in the array, at constant offsets
    from one address per row (the checks of :func:`_guarded_row_loads`)."""
    r0, c0 = lane_bases(b, lane, value.layout, warp)
    row0, col0 = b.add(tile.row, r0), b.add(tile.col, c0)
    mem = tile.mem
    room = b.sub(mem.cols, col0)
    col_ok = b.icmp_signed(">=", col0, ZERO64)
    rows = {}
    for (dr, dc), v in zip(value.layout.slots(), value.slots):
        if dr not in rows:
            row = b.add(row0, ir.Constant(I64, dr)) if dr else row0
            row_ok = b.and_(b.icmp_unsigned("<", row, mem.rows), col_ok)
            rows[dr] = (row_ok, b.gep(mem.ptr, [b.add(b.mul(row, mem.stride), col0)], source_etype=t))
        row_ok, row_ptr = rows[dr]
        with b.if_then(b.and_(row_ok, b.icmp_signed(">", room, ir.Constant(I64, dc)))):
            b.store(v, b.gep(row_ptr, [ir.Constant(I64, dc)], source_etype=t) if dc else row_ptr)


_REDUCE_FLOAT = {"add": "fadd", "mul": "fmul"}
_REDUCE_MINMAX = {"maximumf": "llvm.maximum.f32", "minimumf": "llvm.minimum.f32",
                  "maxnumf": "llvm.maxnum.f32", "minnumf": "llvm.minnum.f32"}
_REDUCE_INT = {"add": "add", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor"}


def _combine(b, kind: str, x, y, is_float: bool, op):
    if is_float and kind in _REDUCE_FLOAT:
        return getattr(b, _REDUCE_FLOAT[kind])(x, y)
    if is_float and kind in _REDUCE_MINMAX:
        return intrinsic(b, _REDUCE_MINMAX[kind], F32, [x, y])
    if not is_float and kind in _REDUCE_INT:
        return getattr(b, _REDUCE_INT[kind])(x, y)
    if not is_float and kind in ("maxsi", "minsi", "max", "min"):
        return b.select(b.icmp_signed(">" if "max" in kind else "<", x, y), x, y)
    if not is_float and kind in ("maxui", "minui"):
        return b.select(b.icmp_unsigned(">" if "max" in kind else "<", x, y), x, y)
    raise LoweringError(f"nvptx: tile_reduce <{kind}> is not supported on NVIDIA targets yet", op)


def _shuffle_xor(b, v, mask: int):
    """``shfl.sync.bfly.b32`` across the whole warp: the value of lane ``lane ^ mask``
    (64-bit values as two halves)."""
    if v.type == I64:
        lo = _shuffle_xor(b, b.trunc(v, I32), mask)
        hi = _shuffle_xor(b, b.trunc(b.lshr(v, ir.Constant(I64, 32)), I32), mask)
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
    name = "llvm.nvvm.shfl.sync.bfly.f32" if v.type == F32 else "llvm.nvvm.shfl.sync.bfly.i32"
    return intrinsic(b, name, v.type, [ir.Constant(I32, -1), v, ir.Constant(I32, mask), ir.Constant(I32, 31)])


def reduce(b: ir.IRBuilder, src: Vec, dims: tuple[int, ...], kind: str, result_layout: Layout, op,
           lane=None, warp=None, in_loop: bool = True) -> Vec:
    """``tile_reduce`` over ``dims``: the slots of one result element folded in the lane,
    then across the lanes whose base differs along a reduced dimension (a butterfly over
    those lane bits: a ``cols`` row's 5, an ``mma_c`` row's threadID_in_group (xor 1, 2),
    an ``mma_c`` column's groupID (xor 4, 8, 16)), then, where the program's warp grid
    splits a reduced extent of the value (a ``cols`` row over 1 x W warps, an ``mma_c``
    tile's columns over its warp rows), across those warps (:func:`across_warps`;
    ``lane``, ``warp`` this thread's, ``in_loop`` whether the op may run again before every
    warp has read the last result).  A ``cols`` or ``rep`` value whose result takes a
    fragment's layout is reduced in its own, then moved (:func:`relayout`)."""
    is_float = src.elem.__class__.__name__.startswith(("Float", "BFloat"))
    if src.layout.kind in ("cols", "rep") and result_layout.kind not in ("cols", "rep") and lane is not None:
        # a row or replicated value reduced into a fragment's layout (a one-warp program):
        # the result in its own layout, then each lane's slots of the fragment's
        held = reduce(b, src, dims, kind, Layout("rep", result_layout.shape) if src.layout.kind == "rep" else
                      default_layout(result_layout.shape), op, lane, warp, in_loop)
        return relayout(b, lane, held, result_layout, op)
    keys = [(0 if 0 in dims else dr, 0 if 1 in dims else dc) for dr, dc in src.layout.slots()]
    if not set(result_layout.slots()) <= set(keys) or (src.layout.kind not in ("cols", "rep") and
                                                       result_layout.warps != src.layout.warps):
        raise LoweringError(f"nvptx: tile_reduce of a {src.layout.kind} value over {list(dims)} into a "
                            f"{result_layout.kind} value is not supported yet (any reduction of cols/rep values "
                            f"is, and those of tile_mma accumulators and their row or column statistics)", op)
    wide = [bf16_to_f32(b, v) if is_bf16(src.elem) else v for v in src.slots]
    if is_float and wide and wide[0].type != F32:
        wide = [b.fpext(v, F32) for v in wide]
    if not is_float and wide and wide[0].type.width < 32:    # shuffles move 32 bits: widen by the kind's sign
        extend = b.zext if kind in ("maxui", "minui") or is_unsigned(src.elem) or wide[0].type.width == 1 else b.sext
        wide = [extend(v, I32) for v in wide]
    parts: dict[tuple[int, int], list] = {}
    for key, v in zip(keys, wide):
        parts.setdefault(key, []).append(v)
    acc = {key: _tree(b, kind, values, is_float, op) for key, values in parts.items()}
    for key, v in acc.items():
        for mask in reduced_lane_masks(src.layout, dims):
            v = _combine(b, kind, v, _shuffle_xor(b, v, mask), is_float, op)
        acc[key] = v
    fold = _warp_fold(b, src.layout, dims, warp)
    if fold is not None:
        order = list(acc)
        count, index, group = fold
        folded = across_warps(b, [acc[k] for k in order], count, kind, is_float, op, lane, index, in_loop, group)
        acc = dict(zip(order, folded))
    slots = [acc[pos] for pos in result_layout.slots()]
    return Vec(result_layout, src.elem, [_narrow(b, v, src.elem) for v in slots])


def reduced_lane_masks(layout: Layout, dims: tuple[int, ...]) -> list[int]:
    """The butterfly steps (xor masks) of a reduction over ``dims``: the lane bits that
    place a ``layout`` lane's base along them (a ``cols`` row's from the highest down).

    >>> reduced_lane_masks(Layout("mma_c", (16, 8)), (0,)), reduced_lane_masks(Layout("mma_c", (16, 8)), (1,))
    ([4, 8, 16], [1, 2])
    """
    (rs, rm, _), (cs, cm, _) = layout.lane_base()
    bits = (rm << rs if 0 in dims else 0) | (cm << cs if 1 in dims else 0)
    masks = [1 << i for i in range(5) if bits >> i & 1]
    return masks[::-1] if layout.kind == "cols" else masks


def _warp_fold(b, layout: Layout, dims: tuple[int, ...], warp):
    """:func:`warp_split` over the extents the reduction folds that the program's warp
    grid splits; None where it splits none of them."""
    rows, cols = (0 in dims and layout.warp_steps()[0] > 0), (1 in dims and layout.warp_steps()[1] > 0)
    if warp is None or not (rows or cols):
        return None
    return warp_split(b, layout, warp, rows, cols)


#: the independent chains an in-lane reduction folds its values in
REDUCE_CHAINS = 4


def _tree(b, kind: str, values: list, is_float: bool, op):
    """``values`` folded in :data:`REDUCE_CHAINS` interleaved chains (value i into chain i
    mod 4), then the chains pairwise: a dependency chain of n / 4 + 2 steps instead of
    n - 1, for the same n - 1 operations, with 4 partials live (a full pairwise tree
    keeps up to n / 2 live, which ptxas schedules breadth-first: 8 registers more for
    layer_norm's squares over 32 values a thread)."""
    chains = values[:REDUCE_CHAINS]
    for i, v in enumerate(values[REDUCE_CHAINS:]):
        chains[i % REDUCE_CHAINS] = _combine(b, kind, chains[i % REDUCE_CHAINS], v, is_float, op)
    values = chains
    while len(values) > 1:
        values = [_combine(b, kind, values[i], values[i + 1], is_float, op) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def across_warps(b: ir.IRBuilder, values: list, warps: int, kind: str, is_float: bool, op, lane, warp,
                 in_loop: bool = True, group: tuple | None = None) -> list:
    """Each of ``values`` (one per result element, already folded across the lanes of
    each warp) folded across the ``warps`` warps of the program: lane 0 of warp w writes
    its partials to a shared array of the op's own (element k's at ``k * warps + w``, so
    one element's partials are adjacent: vector shared loads), ``bar.sync``, then every
    thread reads the ``warps`` partials of each element and folds them in warp order (every
    thread gets the same bits).  A first ``bar.sync`` (``in_loop``) keeps a warp that runs
    ahead into the op's next trip from overwriting partials another warp has not read.

    A power-of-two count of 32-bit partials is read one a lane instead (lane l reads warp
    l mod W's) and folded by a butterfly over those lanes.

    ``group`` (index, count): the program's warps are ``count`` groups of ``warps`` each,
    folded apart (``warp`` the index within the group): an mma_c column reduction's warp
    rows, each warp column its own group.

    Example: softmax over one 8192-column row in 8 warps folds 8 partial maxima, then 8
    partial sums, each one shared load and 3 shuffles a lane."""
    module = b.module
    t = values[0].type
    index, count = group if group is not None else (None, 1)
    array = ir.ArrayType(t, warps * len(values) * count)
    base = b.mul(index, ir.Constant(I64, warps * len(values))) if index is not None else None

    def at(i):      # element i (an int or an i64) of this thread's group
        i = ir.Constant(I64, i) if isinstance(i, int) else i
        return b.gep(shared, [ZERO64, b.add(base, i) if base is not None else i], inbounds=True)
    shared = ir.GlobalVariable(module, array, module.get_unique_name("nv_partials"), addrspace=3)
    shared.linkage, shared.align = "internal", 16
    shared.initializer = ir.Constant(array, ir.Undefined)
    if in_loop:
        bar_sync(b)
    with b.if_then(is_first_lane(b, lane)):
        for k, v in enumerate(values):
            b.store(v, at(b.add(warp, ir.Constant(I64, k * warps))))
    bar_sync(b)
    if warps & (warps - 1) == 0 and warps <= WARP and t in (F32, I32):
        # lane l reads warp (l mod warps)'s partial; a butterfly over those lanes folds them
        # (each step combines two equal-bit values in both lanes, so every lane ends with
        # the same bits): one shared load and log2(warps) shuffles a value, not warps loads
        slot = b.and_(lane, ir.Constant(I64, warps - 1))
        out = []
        for k in range(len(values)):
            v = b.load(at(b.add(slot, ir.Constant(I64, k * warps))), typ=t)
            mask = warps // 2
            while mask:
                v = _combine(b, kind, v, _shuffle_xor(b, v, mask), is_float, op)
                mask //= 2
            out.append(v)
        return out
    out = []
    for k in range(len(values)):
        parts = [b.load(at(k * warps + w), typ=t,
                        align=16 if (k * warps + w) % 4 == 0 and warps % 4 == 0 else 4)
                 for w in range(warps)]
        acc = parts[0]
        for p in parts[1:]:
            acc = _combine(b, kind, acc, p, is_float, op)
        out.append(acc)
    return out


def bar_sync(b) -> None:
    """``bar.sync 0``: every thread of the program (a memory barrier for shared memory)."""
    b.asm(ir.FunctionType(ir.VoidType(), []), "bar.sync 0;", "~{memory}", [], True)


def _narrow(b, v, elem):
    if is_bf16(elem):
        return f32_to_bf16(b, v)
    t = llvm_type(elem)
    if isinstance(t, ir.IntType) and isinstance(v.type, ir.IntType) and v.type.width > t.width:
        return b.trunc(v, t)
    return b.fptrunc(v, t) if t != v.type and isinstance(t, ir.HalfType) else v


def broadcast(b: ir.IRBuilder, lane, src: Vec, dims: tuple[int, ...], layout: Layout, op) -> Vec:
    """``tile_broadcast`` along ``dims`` (extent 1 in ``src``) into ``layout``: each slot
    takes the source element of its row (dims [1]) or column (dims [0]), held by the same
    lane when both layouts place the lanes alike along the kept dimension."""
    which = broadcast_sources(src.layout, dims, layout)
    if which is not None:
        return Vec(layout, src.elem, [src.slots[i] for i in which])
    if src.layout.warps != (1, 1) or layout.warps != (1, 1):
        raise LoweringError(f"nvptx: tile_broadcast from a {src.layout.kind} value into a {layout.kind} value "
                            f"across the program's warps is not supported yet (within one warp it is)", op)
    # the lanes are placed otherwise: every element in every lane, broadcast, then each
    # lane's own slots of the result (:func:`relayout`: selects, no shuffle)
    held = replicated(b, src, op)
    rows, cols = layout.shape
    full = Layout("rep", (rows, cols))
    values = [held[(0 if 0 in dims else r, 0 if 1 in dims else c)] for r, c in full.slots()]
    return relayout(b, lane, Vec(full, src.elem, values), layout, op)


def broadcast_sources(src: Layout, dims: tuple[int, ...], layout: Layout) -> list[int] | None:
    """The source slot each slot of a broadcast along ``dims`` into ``layout`` takes, where
    the same lane holds it (both layouts place the lanes alike along the kept dimension);
    else None."""
    s_base, t_base = src.lane_base(), layout.lane_base()
    if any(d not in dims and s_base[d] != t_base[d] for d in (0, 1)):
        return None
    index = {pos: i for i, pos in enumerate(src.slots())}
    return [index[(0 if 0 in dims else dr, 0 if 1 in dims else dc)] for dr, dc in layout.slots()]


def shuffle_idx(b, v, src_lane: int):
    """``shfl.sync.idx.b32`` across the whole warp: the value of lane ``src_lane`` (64-bit
    values as two halves, narrower ones widened to 32 bits)."""
    t = v.type
    if t == I64:
        lo = shuffle_idx(b, b.trunc(v, I32), src_lane)
        hi = shuffle_idx(b, b.trunc(b.lshr(v, ir.Constant(I64, 32)), I32), src_lane)
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
    if t in (F32, I32):
        x = v
    elif t == F16:
        x = b.zext(b.bitcast(v, I16), I32)
    elif isinstance(t, ir.IntType) and t.width < 32:
        x = b.zext(v, I32)
    else:
        raise LoweringError(f"nvptx: shuffling {t} values across lanes is not supported yet", None)
    name = "llvm.nvvm.shfl.sync.idx.f32" if t == F32 else "llvm.nvvm.shfl.sync.idx.i32"
    src = ir.Constant(I32, src_lane) if isinstance(src_lane, int) else src_lane
    out = intrinsic(b, name, x.type, [ir.Constant(I32, -1), x, src, ir.Constant(I32, 31)])
    if t in (F32, I32):
        return out
    if t == F16:
        return b.bitcast(b.trunc(out, I16), F16)
    return b.trunc(out, t)


def replicated(b: ir.IRBuilder, src: Vec, op) -> dict:
    """Every element of ``src`` in every lane, {(row, column): value}: a ``rep`` value's own
    slots; a one-warp ``cols`` or fragment value's through one ``shfl.sync.idx`` from the
    lane that holds each element (the slot index of an element is the same in every lane)."""
    if src.layout.kind == "rep":
        return dict(zip(src.layout.slots(), src.slots))
    if src.layout.warps != (1, 1) or not src.layout.owned_once():
        raise LoweringError(f"nvptx: a {src.layout.kind} value of several warps cannot be gathered into every "
                            f"lane yet (one-warp cols, rep and fragment values can)", op)
    (rs, rm, rk), (cs, cm, ck) = src.layout.lane_base()
    out = {}
    for lane in range(WARP):
        r0, c0 = ((lane >> rs) & rm) * rk, ((lane >> cs) & cm) * ck
        for (dr, dc), v in zip(src.layout.slots(), src.slots):
            if (r0 + dr, c0 + dc) not in out:
                out[(r0 + dr, c0 + dc)] = (lane, v)
    return {pos: shuffle_idx(b, v, lane) for pos, (lane, v) in out.items()}


def _lane_table(b, lane, values: list) -> ir.Value:
    """``values[lane]`` (32 ints) as an i32: a constant, or a load from a constant table."""
    if len(set(values)) == 1:
        return ir.Constant(I32, values[0])
    module = b.module
    tables = module.__dict__.setdefault("_nv_lane_tables", {})
    key = tuple(values)
    if key not in tables:
        table_type = ir.ArrayType(I32, WARP)
        table = ir.GlobalVariable(module, table_type, f"nv_lanes{len(module.globals)}", addrspace=4)
        table.global_constant, table.linkage = True, "internal"
        table.initializer = ir.Constant(table_type, list(values))
        tables[key] = table
    table = tables[key]
    return b.load(b.gep(table, [ir.Constant(I64, 0), lane], source_etype=table.value_type), typ=I32)


def lane_positions(layout: Layout) -> list[list[tuple[int, int]]]:
    """The (row, column) of each slot of ``layout`` in each lane of one warp."""
    (rs, rm, rk), (cs, cm, ck) = layout.lane_base()
    slots = layout.slots()
    out = []
    for lane in range(WARP):
        r0, c0 = ((lane >> rs) & rm) * rk, ((lane >> cs) & cm) * ck
        out.append([(r0 + dr, c0 + dc) for dr, dc in slots])
    return out


def relayout_plan(src: Layout, dst: Layout, swap: bool = False, pad: bool = False
                  ) -> list[tuple[list[int], list[int]]]:
    """For each slot of ``dst``: the lane and the slot of ``src`` each lane takes it from
    (``swap``: the element at the transposed position), a lane's own register where it
    holds the element; ``pad``: ``dst`` may be larger, and a position ``src`` does not
    hold is slot -1 (a zero) of the lane itself.

    >>> lanes, slots = relayout_plan(Layout("rep", (1, 4)), Layout("rep", (4, 1)), swap=True)[2]
    >>> lanes[:3], slots[:3]
    ([0, 1, 2], [2, 2, 2])
    """
    held: dict = {}
    for lane, positions in enumerate(lane_positions(src)):
        for k, pos in enumerate(positions):
            held.setdefault(pos, {})[lane] = k
    dst_positions = lane_positions(dst)
    plan = []
    for j in range(len(dst.slots())):
        lanes, slots = [], []
        for lane in range(WARP):
            pos = dst_positions[lane][j]
            holders = held.get(pos[::-1] if swap else pos)
            if holders is None and pad:
                lanes.append(lane)
                slots.append(-1)
                continue
            if holders is None:
                raise ValueError(f"relayout_plan: {dst.kind} {list(dst.shape)} holds {pos}, which the "
                                 f"{src.kind} {list(src.shape)} value does not (pad=True zeros it)")
            owner, k = (lane, holders[lane]) if lane in holders else min(holders.items())
            lanes.append(owner)
            slots.append(k)
        plan.append((lanes, slots))
    return plan


#: the share of a block's static shared memory (``NvTarget.static_smem_per_block``) one
#: exchange of a value between layouts across warps may take: the rest is left to the
#: kernel's other static arrays (reduction partials, SLM)
EXCHANGE_SHARE = 2 / 3


def relayout(b: ir.IRBuilder, lane, src: Vec, layout: Layout, op, swap: bool = False, pad: bool = False,
             warp=None, in_loop: bool = True, static_smem: int = 0) -> Vec:
    """``src``'s elements in ``layout`` (``swap``: its transpose's), both held by one warp
    (:func:`relayout_plan`): each slot taken with ``shfl.sync.idx`` from its owner lane
    (no shuffle where every lane owns it), the source register chosen per lane by a
    select where lanes take different slots (lane tables in constant memory); ``pad``:
    ``layout`` may be larger than ``src``'s, its positions past ``src`` zeros.  Values of a
    program of several warps (``warp`` this thread's) go through shared memory instead
    (:func:`exchange`; ``static_smem`` the target's static shared memory a block)."""
    if src.layout.warps != (1, 1) or layout.warps != (1, 1):
        if warp is None or pad:
            raise LoweringError(f"nvptx: moving a {src.layout.kind} value into a {layout.kind} value across the "
                                f"program's warps is not supported here (within one warp it is)", op)
        return exchange(b, lane, warp, src, layout, op, swap, in_loop, int(static_smem * EXCHANGE_SHARE))
    slots = []
    zero = None
    for lanes, ks in relayout_plan(src.layout, layout, swap, pad):
        own = lanes == list(range(WARP))
        src_lane = None if own else _lane_table(b, lane, lanes)
        values = {k: src.slots[k] if own else shuffle_idx(b, src.slots[k], src_lane) for k in sorted(set(ks)) if k >= 0}
        if -1 in ks:
            t = src.slots[0].type
            zero = zero or ir.Constant(t, 0.0 if isinstance(t, (ir.HalfType, ir.FloatType, ir.DoubleType)) else 0)
            values[-1] = zero
        order = sorted(values)
        v = values[order[0]]
        if len(order) > 1:
            which = _lane_table(b, lane, ks)
            for k in order[1:]:
                v = b.select(b.icmp_unsigned("==", which, ir.Constant(I32, k)), values[k], v)
        slots.append(v)
    return Vec(layout, src.elem, slots)


def exchange(b: ir.IRBuilder, lane, warp, src: Vec, layout: Layout, op, swap: bool = False,
             in_loop: bool = True, limit: int = 0) -> Vec:
    """``src``'s elements in ``layout`` (``swap``: its transpose's) through a shared array
    of the op's own, in the source's row-major order: the first holder of each element
    (:func:`first_holder`) writes it at its place, ``bar.sync``, then every thread reads
    its slots of ``layout`` (a first ``bar.sync`` where the op may run again, so that no
    warp overwrites what another has not read).  The moves between fragments in programs
    of several warps: an mma result as the next one's B operand, or transposed into A.
    A value of more than ``limit`` bytes is a located error."""
    rows, cols = src.layout.shape
    want = (cols, rows) if swap else (rows, cols)
    if tuple(layout.shape) != want:
        raise LoweringError(f"nvptx: moving a {list(src.layout.shape)} value into a {list(layout.shape)} one", op)
    t = src.slots[0].type
    size = rows * cols * _bytes(t)
    if size > limit:
        raise LoweringError(f"nvptx: moving a {src.layout.kind} {list(src.layout.shape)} value into a {layout.kind} "
                            f"value across the program's warps goes through shared memory, at most "
                            f"{limit // 1024} KB (this one needs {size // 1024} KB); use smaller tiles or "
                            f"num_warps=1", op)
    module = b.module
    array = ir.ArrayType(t, rows * cols)
    shared = ir.GlobalVariable(module, array, module.get_unique_name("nv_exchange"), addrspace=3)
    shared.linkage, shared.align = "internal", 16
    shared.initializer = ir.Constant(array, ir.Undefined)

    def at(r, c):
        return b.gep(shared, [ZERO64, b.add(b.mul(r, ir.Constant(I64, cols)), c)], inbounds=True)

    if in_loop:
        bar_sync(b)
    r0, c0 = lane_bases(b, lane, src.layout, warp)
    first = first_holder(b, lane, src.layout, warp)

    def write():
        for (dr, dc), v in zip(src.layout.slots(), src.slots):
            b.store(v, at(b.add(r0, ir.Constant(I64, dr)), b.add(c0, ir.Constant(I64, dc))))
    if first is None:
        write()
    else:
        with b.if_then(first):
            write()
    bar_sync(b)
    r1, c1 = lane_bases(b, lane, layout, warp)
    slots = []
    for dr, dc in layout.slots():
        r, c = b.add(r1, ir.Constant(I64, dr)), b.add(c1, ir.Constant(I64, dc))
        slots.append(b.load(at(c, r) if swap else at(r, c), typ=t))
    return Vec(layout, src.elem, slots)


def transpose(b: ir.IRBuilder, lane, src: Vec, layout: Layout, op, warp=None, in_loop: bool = True,
              static_smem: int = 0) -> Vec:
    """``tile_transpose`` into a ``rep`` value (the frontend's [n, 1] <-> [1, n] turns of
    1-D row statistics): each slot the source element at the swapped position, gathered
    into every lane first where the source is not ``rep`` (:func:`replicated`)."""
    if layout.kind == "mma_c_col_t" and src.layout.kind == "mma_c_col":
        return Vec(layout, src.elem, src.slots)
    if layout.kind != "rep":
        return relayout(b, lane, src, layout, op, swap=True, warp=warp, in_loop=in_loop, static_smem=static_smem)
    held = replicated(b, src, op)
    return Vec(layout, src.elem, [held[(dc, dr)] for dr, dc in layout.slots()])


def _rounded_from_f32(v):
    """The f32 that the 16-bit ``v`` was rounded from (an f16 ``fptrunc`` of an f32, or
    :func:`.lane_values.f32_to_bf16`'s ``cvt.rn.bf16.f32``), else None."""
    if isinstance(v, ir.CastInstr) and v.opname == "fptrunc" and v.operands[0].type == F32:
        return v.operands[0]
    if isinstance(v, ir.CallInstr) and isinstance(v.callee, ir.InlineAsm) and \
            v.callee.asm == "cvt.rn.bf16.f32 $0, $1;":
        return v.args[0]
    return None


def _pack(b, lo, hi, elem):
    """Two 16-bit elements in one 32-bit register, ``lo`` in the low half (PTX fragments).
    Two values both just rounded from f32 (P = softmax(S) as A) take one packed
    ``cvt.rn.{f16,bf16}x2.f32`` of the f32s (round to nearest even, as each alone) instead
    of two converts and a byte permute; the unpacked converts are then dead."""
    wide_lo, wide_hi = _rounded_from_f32(lo), _rounded_from_f32(hi)
    if wide_lo is not None and wide_hi is not None:
        kind = "bf16x2" if is_bf16(elem) else "f16x2"   # d = {a: high half, b: low half}
        return b.asm(ir.FunctionType(I32, [F32, F32]), f"cvt.rn.{kind}.f32 $0, $1, $2;", "=r,f,f",
                     [wide_hi, wide_lo], False)
    return _pack16(b, lo, hi)


_MMA_ASM = ("mma.sync.aligned.m16n8k16.row.col.f32.{t}.{t}.f32 {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, {{$8,$9}}, "
            "{{$10,$11,$12,$13}};")
_MMA_I8_ASM = ("mma.sync.aligned.m16n8k16.row.col.s32.{ta}.{tb}.s32 {{$0,$1,$2,$3}}, {{$4,$5}}, {{$6}}, "
               "{{$7,$8,$9,$10}};")
_MMA_TF32_ASM = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {$0,$1,$2,$3}, {$4,$5,$6,$7}, {$8,$9}, "
                 "{$10,$11,$12,$13};")


def _mma_kind(elem) -> str | None:
    """The mma.sync input type of ``elem``: f16, bf16, s8, u8, tf32 (of f32), or None."""
    name = elem.__class__.__name__
    if name == "Float16Type":
        return "f16"
    if is_bf16(elem):
        return "bf16"
    if name == "Float32Type":
        return "tf32"
    if name == "IntegerType" and elem.width.data == 8:
        return "u8" if is_unsigned(elem) else "s8"
    return None


def _pack8(b, values) -> ir.Value:
    """Four 8-bit values in one 32-bit register, the first in the low byte."""
    out = None
    for i, v in enumerate(values):
        byte = b.zext(v if v.type == ir.IntType(8) else b.trunc(v, ir.IntType(8)), I32)
        byte = b.shl(byte, ir.Constant(I32, 8 * i)) if i else byte
        out = byte if out is None else b.or_(out, byte)
    return out


def _tf32(b, v) -> ir.Value:
    """``v`` (f32) rounded to tf32 (nearest, ties away: ``cvt.rna.tf32.f32``), as its bits."""
    return b.asm(ir.FunctionType(I32, [F32]), "cvt.rna.tf32.f32 $0, $1;", "=r,f", [v], False)


def mma(b: ir.IRBuilder, a: Vec, bv: Vec, c: Vec | None, layout: Layout, op) -> Vec:
    """``tile_mma`` as ``mma.sync`` per 16 x 8 block of C and 16-deep step of K, fragments
    already in the PTX layouts (:mod:`.layouts`, m16n8k16's for 16-bit inputs): f16/bf16
    one m16n8k16 (f32 accumulators); int8 (s8/u8, mixed allowed) one m16n8k16 with s32
    accumulators; f32 as tf32 two m16n8k8.  The 8- and 32-bit forms take the 16-bit
    fragments' elements as they are: a lane's k of A and of B are the same four (2t,
    2t + 1, 2t + 8, 2t + 9), handed to both operands in one order, so the instruction's
    sum over its k runs over the same pairs (a permutation of k, the same for A and B)."""
    kind, kind_b = _mma_kind(a.elem), _mma_kind(bv.elem)
    integer = kind in ("s8", "u8") and kind_b in ("s8", "u8")
    if kind is None or not (integer or a.elem == bv.elem):
        raise LoweringError(f"nvptx: tile_mma of {a.elem} x {bv.elem}: NVIDIA targets take f16 x f16, bf16 x bf16, "
                            f"8-bit integers (s8/u8) and f32 x f32 (as tf32)", op)
    if a.layout.kind == "mma_c":
        if kind not in ("f16", "bf16"):
            raise LoweringError(f"nvptx: a tile_mma A operand computed as an mma result is 16-bit only, got "
                                f"{a.elem}", op)
        a = c_as_a(a)
    (m, k), (_, n) = a.layout.sub, bv.layout.sub
    acc_type = I32 if integer else F32
    acc = list(c.slots) if c is not None else [ir.Constant(acc_type, 0)] * (m * n // WARP)
    if acc and acc[0].type != acc_type:
        raise LoweringError(f"nvptx: tile_mma of {a.elem} accumulates in {'i32' if integer else 'f32'} on NVIDIA "
                            f"targets", op)
    for mi in range(m // 16):
        for ni in range(n // 8):
            base_c = (mi * (n // 8) + ni) * 4
            for ki in range(k // 16):
                base_a, base_b = (mi * (k // 16) + ki) * 8, (ki * (n // 8) + ni) * 4
                fa, fb = a.slots[base_a:base_a + 8], bv.slots[base_b:base_b + 4]
                if integer:
                    regs = [_pack8(b, [fa[i] for i in (0, 1, 4, 5)]), _pack8(b, [fa[i] for i in (2, 3, 6, 7)]),
                            _pack8(b, fb)]
                    ty = ir.FunctionType(ir.LiteralStructType([I32] * 4), [I32] * 7)
                    out = b.asm(ty, _MMA_I8_ASM.format(ta=kind, tb=kind_b), "=r,=r,=r,=r," + ",".join(["r"] * 7),
                                regs + acc[base_c:base_c + 4], False)
                    acc[base_c:base_c + 4] = [b.extract_value(out, i) for i in range(4)]
                    continue
                if kind == "tf32":
                    ty = ir.FunctionType(ir.LiteralStructType([F32] * 4), [I32] * 6 + [F32] * 4)
                    for half in ((0, 2, 1, 3, 0, 1), (4, 6, 5, 7, 2, 3)):
                        regs = [_tf32(b, fa[i]) for i in half[:4]] + [_tf32(b, fb[i]) for i in half[4:]]
                        out = b.asm(ty, _MMA_TF32_ASM, "=f,=f,=f,=f," + ",".join(["r"] * 6 + ["f"] * 4),
                                    regs + acc[base_c:base_c + 4], False)
                        acc[base_c:base_c + 4] = [b.extract_value(out, i) for i in range(4)]
                    continue
                regs_a = (a.pairs[base_a // 2:base_a // 2 + 4] if a.pairs else
                          [_pack(b, fa[2 * i], fa[2 * i + 1], a.elem) for i in range(4)])
                regs_b = (bv.pairs[base_b // 2:base_b // 2 + 2] if bv.pairs else
                          [_pack(b, fb[2 * i], fb[2 * i + 1], a.elem) for i in range(2)])
                ty = ir.FunctionType(ir.LiteralStructType([F32] * 4), [I32] * 6 + [F32] * 4)
                out = b.asm(ty, _MMA_ASM.format(t=kind), "=f,=f,=f,=f," + ",".join(["r"] * 6 + ["f"] * 4),
                            regs_a + regs_b + acc[base_c:base_c + 4], False)
                acc[base_c:base_c + 4] = [b.extract_value(out, i) for i in range(4)]
    return Vec(layout, c.elem if c is not None else elem_of(op.results[0].type), acc)


def padded_mma(b: ir.IRBuilder, lane, a: Vec, bv: Vec, c: Vec | None, layout: Layout, padding, op) -> Vec:
    """``tile_mma`` where some extent is not an m16n8k16 multiple (A [m, k], B [k, n], one
    warp): each operand not already a fragment of its shape padded to ``padding`` (M, K,
    N) moved into one, zeros past its own extents; multiplied (:func:`mma`); the result's
    m x n moved back into ``layout`` unless that is the padded fragment itself."""
    pm, pk, pn = padding

    def fragment(v: Vec | None, want: Layout) -> Vec | None:
        return v if v is None or v.layout == want else relayout(b, lane, v, want, op, pad=True)
    out_layout = Layout("mma_c", (pm, pn))
    out = mma(b, fragment(a, Layout("mma_a", (pm, pk))), fragment(bv, Layout("mma_b", (pk, pn))),
              fragment(c, out_layout), out_layout, op)
    return out if layout == out_layout else relayout(b, lane, out, layout, op)


def c_as_a(c: Vec) -> Vec:
    """An ``mma_c`` value as an A operand: C's fragments of the 16 x 8 blocks (mi, 2j) and
    (mi, 2j + 1) are, register for register, A's fragment of the 16 x 16 block (mi, j)
    (both put lane l at row g, columns 2t, 2t + 1: PTX ISA, m16n8k16 fragments)."""
    layout = Layout("mma_a", c.layout.shape, c.layout.warps)
    if layout.sub[1] % 16:
        raise LoweringError(f"nvptx: a tile_mma A operand computed as an mma result needs a multiple of 16 "
                            f"columns, got {c.layout.shape[1]}", None)
    index = {pos: i for i, pos in enumerate(c.layout.slots())}
    return Vec(layout, c.elem, [c.slots[index[pos]] for pos in layout.slots()])


def thread_id(b: ir.IRBuilder) -> ir.Value:
    """This thread's index in its program (block), i64."""
    return b.zext(intrinsic(b, "llvm.nvvm.read.ptx.sreg.tid.x", I32, []), I64)


def lane_id(b: ir.IRBuilder, tid: ir.Value | None = None) -> ir.Value:
    """This thread's lane in its warp, i64."""
    return b.and_(tid if tid is not None else thread_id(b), ir.Constant(I64, WARP - 1))


def warp_id(b: ir.IRBuilder, tid: ir.Value) -> ir.Value:
    """This thread's warp in its program, i64."""
    return b.lshr(tid, ir.Constant(I64, 5))


def is_first_lane(b, lane) -> ir.Value:
    return b.icmp_unsigned("==", lane, ZERO64)


__all__ = ["I1", "broadcast", "lane_bases", "lane_id", "load", "mma", "reduce", "store"]
