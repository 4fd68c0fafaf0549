"""Transposed block loads (``load_nd {transpose = [1, 0]}``) in the sg_map fragment order.

The wrapper takes the surface and position of the *memory* block (``rows x cols`` of the
row-major array) and returns this lane's fragment of its transpose, distributed by the
logical sg_map ``(wi_layout, wi_data)`` of the loaded value (the contract of
:mod:`.block2d`, with logical element ``(r, c)`` at memory ``(y + c, x + r)``).

* With 2D block IO on 16 lanes, when the value's map is ``[1, 16] x [32/E, 1]`` (operand
  B: f32/tf32 with one element per lane and row, 16-bit as VNNI pairs) and the memory
  block is 16 rows of 32 bytes, one ``intel_sub_group_2d_block_read_transpose_32b_16r8x1c``
  serves it: lane n's dword j is ``mem32[y + n][x + j]`` (reference §3.4), which is column
  n of the transposed block, 32/E logical rows per dword — the fragment itself.  The
  same holds for 16-bit operand A (map ``[1, 16] x [1, 1]``, A stored K x M): lane n's
  16 halves are logical rows 0..15 of column n, in order (low half first).
* Otherwise (ARC, operand A, other shapes) each lane loads its elements one by one in
  transposed order, guarded by bounds checks (out-of-bounds elements are 0).
"""
from __future__ import annotations

from llvmlite import ir

from . import block2d as b2d
from . import payload as address_payload
from .mangle import Ptr, mangle, vec

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
_OP = "read_transpose"


def transpose_kind(target, elem_bits, rows, cols, wi_layout, wi_data, per_lane: bool = False,
                   lane_rows: bool = False) -> str:
    """``read_transpose`` when one 32-bit transposed 2D block read gives the fragment,
    ``read_transpose_pairs`` for 8-bit operand A (two of them, :func:`_row_pairs`), else
    ``gather`` (always for ``per_lane``: an array too narrow for 2D block messages)."""
    lanes = target.subgroup_size
    if lane_rows and not per_lane and _lane_rows_fit(target, elem_bits, rows, cols, wi_layout, wi_data):
        return _LANE_ROWS
    if per_lane or not target.has_2d_block_io or lanes != 16 or elem_bits not in (8, 16, 32):
        return "gather"
    if _pairs_fit(target, elem_bits, rows, cols, wi_layout, wi_data):
        return _PAIRS
    packed_only = elem_bits == 8  # an 8-bit fragment is whole dwords only as VNNI operand B (4 rows a dword)
    fragments = ((32 // elem_bits, 1),) if packed_only else ((32 // elem_bits, 1), (1, 1))
    if tuple(wi_layout) != (1, lanes) or tuple(wi_data) not in fragments:
        return "gather"
    if rows != lanes or target.find_block2d(_OP, 32, rows, cols * elem_bits // 32, 1) is None:
        return "gather"
    return _OP


_PAIRS = "read_transpose_pairs"
_LANE_ROWS = "lane_rows"


def _lane_rows_fit(target, elem_bits, rows, cols, wi_layout, wi_data) -> bool:
    """Whether each lane's fragment is ``wi_data[1]`` whole runs of the memory block's
    rows, read with per-lane vector loads (:func:`_lane_rows`): on targets that do so
    (``Target.lane_row_load_elem_bits``, ARC), a one-row lane layout whose logical block
    is ``lanes x wi_data[1]`` memory rows, element ``index`` of the fragment being memory
    column ``index // wi_data[1]`` of the lane's row ``index % wi_data[1]``, each run a
    whole number of dwords that one vector load moves."""
    (l0, l1), (_, d1) = wi_layout, wi_data
    lanes = target.subgroup_size
    if elem_bits not in target.lane_row_load_elem_bits or (l0, l1) != (1, lanes) or rows != lanes * d1:
        return False
    if b2d.check_fragment(lanes, elem_bits, cols, rows, wi_layout, wi_data) is not None:
        return False
    frag = b2d.Fragment(elem_bits, cols, rows, tuple(wi_layout), tuple(wi_data))
    run_words = cols * elem_bits // 32
    if frag.pack not in (1, d1) or cols * elem_bits % 32 or run_words not in b2d.SPIRV_VECTOR_SIZES:
        return False
    return all(index == row_off * d1 + col_off for index, row_off, col_off in frag.elements())
#: dwords of one 32-bit transposed read (the Xe codegen reference section 3.2: 8 x 1 only)
_PAIR_DWORDS = 8


def _pairs_fit(target, elem_bits, rows, cols, wi_layout, wi_data) -> bool:
    """8-bit operand A (lane n holds K columns 2n, 2n+1 of each row, as 2 bytes) of a
    block stored transposed: ``2L`` memory rows (K) by at most 32 bytes (M)."""
    lanes = target.subgroup_size
    return (elem_bits == 8 and tuple(wi_layout) == (1, lanes) and tuple(wi_data) == (1, 2) and rows == 2 * lanes
            and cols <= 4 * _PAIR_DWORDS and cols % 4 == 0
            and target.find_block2d(_OP, 32, lanes, _PAIR_DWORDS, 1) is not None)


def _intel_read_transpose(bi, rows: int, cols32: int) -> ir.Function:
    """``intel_sub_group_2d_block_read_transpose_32b_<rows>r<cols32>x1c``: declared, or
    defined from its spec for the CPU device (dword j of lane n = mem32[y+n][x+j], i.e.
    the memory-side map [16, 1] x [1, 1] of :class:`~.block2d.Fragment`)."""
    name = mangle(f"intel_sub_group_2d_block_{_OP}_32b_{rows}r{cols32}x1c",
                  [Ptr("v", 1), "i", "i", "i", vec(2, "i"), Ptr("j")])
    return bi.gpu_builtin(name, b2d._BUILTIN_FNTY, lambda: _emulated_read_transpose(bi, name, rows, cols32))


def _emulated_read_transpose(bi, name: str, rows: int, cols32: int) -> ir.Function:
    """The CPU device's definition of :func:`_intel_read_transpose`, from its spec."""
    fn = bi.define_internal(name, b2d._BUILTIN_FNTY)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    base, width, height, pitch, coord, data = fn.args
    x = builder.extract_element(coord, ir.Constant(I32, 0))
    y = builder.extract_element(coord, ir.Constant(I32, 1))
    frag = b2d.Fragment(32, rows, cols32, (rows, 1), (1, 1))
    builder.store(b2d._gather(bi, builder, frag, (base, width, height, pitch, x, y)), data)
    builder.ret_void()
    return fn


def build_load_transposed(bi, elem_bits, rows, cols, wi_layout, wi_data, per_lane=False,
                          lane_rows=False) -> ir.Function:
    """The transposed load wrapper (see :meth:`IntelBuiltins.load_2d_transposed`)."""
    frag = b2d._fragment(bi, elem_bits, cols, rows, wi_layout, wi_data)  # the logical (transposed) block
    kind = transpose_kind(bi.target, elem_bits, rows, cols, wi_layout, wi_data, per_lane, lane_rows)
    # "_t": the plain load of a block of the same shape, kind and lane tag (a gather of a
    # narrow array) is another function; one name for both defined it twice
    name = f"__xetile_load2d_{kind}_t_{elem_bits}b_{rows}r{cols}x1c_{b2d._tag(frag)}"
    fn, builder = b2d._wrapper(bi, name, frag.vector_type(), [])
    base, width, height, pitch, x, y = fn.args
    if kind == "gather":
        builder.ret(_gather_transposed(bi, builder, frag, fn.args))
        return fn
    if kind == _LANE_ROWS:
        builder.ret(_lane_rows(bi, builder, frag, fn.args))
        return fn

    def message():
        if kind == _PAIRS:
            return _row_pairs(bi, builder, frag, fn.args)
        cols32 = cols * elem_bits // 32
        intel = _intel_read_transpose(bi, rows, cols32)
        words = ir.VectorType(I32, cols32)
        buf = builder.alloca(words, name="block")
        builder.call(intel, [base, width, height, pitch, b2d._coord(builder, _dword_x(builder, x, elem_bits), y), buf])
        return builder.bitcast(builder.load(buf, typ=words), frag.vector_type())

    builder.ret(dword_aligned_or_gather(builder, x, elem_bits, frag.vector_type(), message,
                                        lambda: _gather_transposed(bi, builder, frag, fn.args)))
    return fn


def starts_dword(builder, x: ir.Value, elem_bits: int) -> ir.Value:
    """Whether column ``x`` of ``elem_bits`` elements starts a dword (an i1)."""
    mask = 32 // elem_bits - 1
    return builder.icmp_unsigned("==", builder.and_(x, ir.Constant(x.type, mask)), ir.Constant(x.type, 0))


def dword_aligned_or_gather(builder, x: ir.Value, elem_bits: int, typ, message, gather,
                            aligned: ir.Value | None = None) -> ir.Value:
    """``message()`` where column ``x`` starts a dword, else ``gather()``.  The 32-bit
    transposed read addresses whole dwords: a 16-bit column ``x`` (8-bit: 4 per dword)
    inside a dword cannot be expressed, and ``x >> 1`` would start the block at the
    column before (the values of the row before for operand A stored K x M).  ``x`` is
    uniform (the subgroup's block position), so the test is one uniform branch, folded
    away where ``x`` is a constant.  ``aligned``: the test made already (before a loop)."""
    if aligned is None:
        aligned = starts_dword(builder, x, elem_bits)
    with builder.if_else(aligned, likely=True) as (fast, slow):
        with fast:
            fast_value = message()
            fast_block = builder.block
        with slow:
            slow_value = gather()
            slow_block = builder.block
    phi = builder.phi(typ)
    phi.add_incoming(fast_value, fast_block)
    phi.add_incoming(slow_value, slow_block)
    return phi


def _dword_x(builder, x: ir.Value, elem_bits: int) -> ir.Value:
    """Column ``x`` of ``elem_bits`` elements as a column of dwords (the 32-bit message's)."""
    return builder.lshr(x, ir.Constant(I32, (32 // elem_bits).bit_length() - 1))


# --- the read through an address payload built once (codegen/emit/transposed_payloads.py)
def create_read_payload(bi, builder, surface, elem_bits: int, rows: int, cols: int) -> ir.Value:
    """The address payload of the ``read_transpose`` message of :func:`build_load_transposed`
    for the memory block ``rows x cols`` (``elem_bits`` elements) of ``surface``."""
    base, width, height, pitch, x, y = surface
    cols32 = cols * elem_bits // 32
    dword_surface = [base, width, height, pitch, _dword_x(builder, x, elem_bits), y]
    return address_payload.create_payload(bi, builder, dword_surface, rows, cols32, 1)


def read_through_payload(bi, builder, payload, x, y, elem_bits: int, rows: int, cols: int,
                         cache_option: int) -> ir.Value:
    """Set the position fields given (``x`` in elements / ``y``, None = unchanged since the
    payload was made), then the ``read_transpose`` message through ``payload``: the
    ``<cols32 x i32>`` of lane n that the wrapper of :func:`build_load_transposed` reads."""
    cols32 = cols * elem_bits // 32
    address_payload.set_position(bi, builder, payload, None if x is None else _dword_x(builder, x, elem_bits), y)
    return address_payload.read_transpose(bi, builder, payload, rows, cols32, cache_option,
                                           lambda: _intel_read_transpose(bi, rows, cols32))


def _row_pairs(bi, builder, frag: b2d.Fragment, surface) -> ir.Value:
    """8-bit operand A from its transpose stored row-major (``2L`` rows of K by up to 32
    bytes of M): lane n needs bytes of memory rows ``y + 2n`` and ``y + 2n + 1``.  Read
    ``t`` (0, 1) sees the rows of one parity as a surface of twice the pitch (odd rows
    start ``pitch`` bytes into its rows, so width and height stay exact bounds), and one
    32-bit transposed read of it gives lane n row ``y + t + 2n`` as 32 bytes; fragment
    element ``2m + t`` is byte m of read t.  Two messages and a lane-local byte
    interleave instead of 32 per-lane gathers."""
    base, width, height, pitch, x, y = surface
    one = ir.Constant(I32, 1)
    words = ir.VectorType(I32, _PAIR_DWORDS)
    intel = _intel_read_transpose(bi, bi.subgroup_size, _PAIR_DWORDS)
    halves = []
    for t in range(2):
        row = builder.add(y, ir.Constant(I32, t))
        parity = builder.and_(row, one)
        rows = builder.lshr(builder.add(builder.sub(height, parity), one), one)
        # a one-row array has no odd rows: read the even surface (its values meet only the
        # zero rows B reads past K), never an empty surface (height 0 is no legal message)
        parity = builder.select(builder.icmp_unsigned("==", rows, ir.Constant(I32, 0)), ir.Constant(I32, 0), parity)
        rows = builder.lshr(builder.add(builder.sub(height, parity), one), one)
        shift = builder.mul(parity, pitch)  # the odd rows sit one pitch into a double-pitch row
        buf = builder.alloca(words, name=f"rows{t}")
        coord = b2d._coord(builder, builder.lshr(builder.add(x, shift), ir.Constant(I32, 2)), builder.lshr(row, one))
        builder.call(intel, [base, builder.add(width, shift), rows, builder.shl(pitch, one), coord, buf])
        halves.append(builder.bitcast(builder.load(buf, typ=words), ir.VectorType(I8, 4 * _PAIR_DWORDS)))
    return _interleave_bytes(builder, halves[0], halves[1], frag)


def _interleave_bytes(builder, even: ir.Value, odd: ir.Value, frag: b2d.Fragment) -> ir.Value:
    """Byte m of ``even`` and of ``odd`` (``<8 x i32>``) as the 16-bit element m of the
    fragment (even byte low), computed on 16-bit words so that each instruction moves a
    row for all lanes: word w holds bytes 2w, 2w+1."""
    n = frag.rows
    i16 = ir.IntType(16)
    half = ir.VectorType(i16, n // 2)
    words = [builder.shuffle_vector(builder.bitcast(v, ir.VectorType(i16, 2 * _PAIR_DWORDS)),
                                    ir.Constant(ir.VectorType(i16, 2 * _PAIR_DWORDS), None),
                                    ir.Constant(ir.VectorType(I32, n // 2), list(range(n // 2)))) for v in (even, odd)]
    splat = lambda c: ir.Constant(half, [c] * (n // 2))  # noqa: E731
    low_rows = builder.or_(builder.and_(words[0], splat(0xFF)), builder.shl(words[1], splat(8)))
    high_rows = builder.or_(builder.lshr(words[0], splat(8)), builder.and_(words[1], splat(0xFF00)))
    order = [k * (n // 2) + w for w in range(n // 2) for k in range(2)]
    rows16 = builder.shuffle_vector(low_rows, high_rows, ir.Constant(ir.VectorType(I32, n), order))
    return builder.bitcast(rows16, frag.vector_type())


def build_pad_transposed(bi, elem_bits, rows, cols, wi_layout, wi_data) -> ir.Function:
    """The padding wrapper of a transposed load (see :meth:`IntelBuiltins.pad_2d_transposed`):
    each element of this lane's logical fragment whose memory element ``(y + c, x + r)`` lies
    outside the surface becomes ``pad`` (a compare and a select per element; the transposed
    block read itself stays one message)."""
    frag = b2d._fragment(bi, elem_bits, cols, rows, wi_layout, wi_data)
    name = f"__xetile_pad2d_transposed_{elem_bits}b_{rows}r{cols}x1c_{b2d._tag(frag)}"
    fn, builder = b2d._wrapper(bi, name, frag.vector_type(), [frag.vector_type(), ir.IntType(elem_bits)])
    *surface, value, pad = fn.args
    addr = _TransposedAddressing(bi, builder, frag, surface)
    values = {}
    for index, row_off, col_off in frag.elements():
        ok, _ = addr.element(row_off, col_off)
        values[index] = builder.select(ok, b2d._element_of(builder, frag, value, index), pad)
    builder.ret(b2d._assemble(builder, frag, [values[i] for i in range(frag.size)]))
    return fn


class _TransposedAddressing:
    """Bounds checks and addresses of one lane's logical elements: logical ``(r, c)`` is
    memory ``(y + c, x + r)``."""

    def __init__(self, bi, builder, frag: b2d.Fragment, surface):
        self.builder = builder
        self.base, width, self.height, pitch, x, y = surface
        self.ebytes = frag.elem_bits // 8
        self.width_elems = builder.lshr(width, ir.Constant(I32, self.ebytes.bit_length() - 1))
        self.pitch = builder.sext(pitch, I64)
        lane_row, lane_col = b2d._lane_position(bi, builder, frag.wi_layout)
        r0 = builder.mul(lane_row, ir.Constant(I32, frag.wi_data[0]))  # logical row = memory column
        c0 = builder.mul(lane_col, ir.Constant(I32, frag.wi_data[1]))  # logical column = memory row
        self.mem_row0, self.mem_col0 = builder.add(y, c0), builder.add(x, r0)

    def element(self, row_off: int, col_off: int):
        """(in_bounds: i1, address) of logical element ``(r0 + row_off, c0 + col_off)``;
        unsigned compares also reject negative coordinates."""
        b = self.builder
        row = b.add(self.mem_row0, ir.Constant(I32, col_off))
        col = b.add(self.mem_col0, ir.Constant(I32, row_off))
        ok = b.and_(b.icmp_unsigned("<", row, self.height), b.icmp_unsigned("<", col, self.width_elems))
        offset = b.add(b.mul(b.sext(row, I64), self.pitch), b.mul(b.sext(col, I64), ir.Constant(I64, self.ebytes)))
        return ok, b.gep(self.base, [offset], source_etype=I8)


def _gather_transposed(bi, builder, frag: b2d.Fragment, surface) -> ir.Value:
    """This lane's logical fragment by plain loads: logical ``(r, c)`` is memory
    ``(y + c, x + r)``.  Branch-free like :func:`.block2d._gather`."""
    return b2d.gather_by(_TransposedAddressing(bi, builder, frag, surface), builder, frag)


# --- per-lane row runs (no 2D block IO: ARC) -----------------------------------------
def _lane_rows(bi, builder, frag: b2d.Fragment, surface) -> ir.Value:
    """The logical fragment when lane n's elements are memory rows ``y + n*d + t``
    (``t < d = wi_data[1]``), columns ``x ..`` in order (:func:`_lane_rows_fit`): one
    per-lane vector load per row run where the block lies inside the surface and is
    dword aligned (one uniform test), interleaved ``t``-wise (element ``i*d + t`` is
    column i of run t); else :func:`_lane_rows_loop`.  A 16-bit ``8 x 16`` operand B (A
    stored row-major, read as A^T) is one ``load.ugm.d32x8``: 256 bytes for 8 lanes
    where the row block reads took 8 messages (docs/decisions/016-transposes.md)."""
    b = builder
    with b.if_else(_lane_rows_inside(b, frag, surface), likely=True) as (fast, slow):
        with fast:
            value = _interleave_runs(b, _row_runs(bi, b, frag, surface), frag)
            fast_block = b.block
        with slow:
            slow_value = _lane_rows_loop(bi, b, frag, surface)
            slow_block = b.block
    phi = b.phi(frag.vector_type())
    phi.add_incoming(value, fast_block)
    phi.add_incoming(slow_value, slow_block)
    return phi


def _lane_rows_inside(b, frag: b2d.Fragment, surface) -> ir.Value:
    """Whether the whole memory block (``frag.cols`` rows of ``frag.rows`` elements at
    ``(x, y)``) lies inside the surface with its first element and pitch dword aligned,
    as the vector loads need: one uniform test (unsigned compares also reject negative
    coordinates)."""
    base, width, height, pitch, x, y = surface
    ebytes = frag.elem_bits // 8
    width_elems = b.lshr(width, ir.Constant(I32, ebytes.bit_length() - 1))
    first = b.add(b.mul(b.sext(y, I64), b.sext(pitch, I64)), b.mul(b.sext(x, I64), ir.Constant(I64, ebytes)))
    aligned = b.and_(b.add(b.ptrtoint(base, I64), first), ir.Constant(I64, 3))
    checks = [b.icmp_unsigned("<=", b.add(x, ir.Constant(I32, frag.rows)), width_elems),
              b.icmp_unsigned("<", x, width_elems),
              b.icmp_unsigned("<", y, height),
              b.icmp_unsigned("<=", b.add(y, ir.Constant(I32, frag.cols)), height),
              b.icmp_unsigned("==", aligned, ir.Constant(I64, 0)),
              b.icmp_unsigned("==", b.and_(pitch, ir.Constant(I32, 3)), ir.Constant(I32, 0))]
    inside = checks[0]
    for check in checks[1:]:
        inside = b.and_(inside, check)
    return inside


def _row_runs(bi, b, frag: b2d.Fragment, surface) -> list:
    """This lane's ``d`` runs (memory rows ``y + lane*d + t``, columns ``x ..``), one
    dword-vector load each, as ``<run x iE>``."""
    base, _, _, pitch, x, y = surface
    d, run, ebytes = frag.wi_data[1], frag.rows, frag.elem_bits // 8
    words = ir.VectorType(I32, run * frag.elem_bits // 32)
    row0 = b.add(y, b.mul(bi.lane_id(b), ir.Constant(I32, d)))
    runs = []
    for t in range(d):
        row = b.sext(b.add(row0, ir.Constant(I32, t)), I64)
        offset = b.add(b.mul(row, b.sext(pitch, I64)), b.mul(b.sext(x, I64), ir.Constant(I64, ebytes)))
        loaded = b.load(b.gep(base, [offset], source_etype=I8), typ=words, align=4)
        runs.append(b.bitcast(loaded, ir.VectorType(ir.IntType(frag.elem_bits), run)))
    return runs


def _interleave_runs(builder, runs: list, frag: b2d.Fragment) -> ir.Value:
    """Fragment element ``i*d + t`` = element i of run t (``d = len(runs)``); packed
    carriers (:attr:`~.block2d.Fragment.pack` = d) hold element i of every run
    in component i, run t in bits ``t*E ..``."""
    if len(runs) == 1:
        return builder.bitcast(runs[0], frag.vector_type())
    d, run = len(runs), frag.rows
    if frag.pack == d:
        vty = frag.vector_type()
        out = None
        for t, part in enumerate(runs):
            wide = builder.zext(part, vty)
            if t:
                wide = builder.shl(wide, ir.Constant(vty, [t * frag.elem_bits] * run))
            out = wide if out is None else builder.or_(out, wide)
        return out
    if d == 2:
        order = [t * run + i for i in range(run) for t in range(2)]
        out = builder.shuffle_vector(runs[0], runs[1], ir.Constant(ir.VectorType(I32, 2 * run), order))
        return builder.bitcast(out, frag.vector_type())
    vty = frag.vector_type()
    out = ir.Constant(vty, None)
    for i in range(run):
        for t in range(d):
            out = builder.insert_element(out, builder.extract_element(runs[t], ir.Constant(I32, i)),
                                         ir.Constant(I32, i * d + t))
    return out


def _lane_rows_loop(bi, builder, frag: b2d.Fragment, surface) -> ir.Value:
    """The fragment of :func:`_lane_rows` by guarded per-lane loads, one element per
    iteration of a loop over the columns that lie inside the surface (a trip count known
    only at run time, so IGC keeps one gather in the machine code, not one per element);
    elements outside read as 0."""
    base, width, height, pitch, x, y = surface
    d = frag.wi_data[1]
    ebytes = frag.elem_bits // 8
    elem_ty = ir.IntType(frag.elem_bits)
    b = builder
    zero = ir.Constant(I32, 0)
    size = ir.Constant(I32, frag.size)
    width_elems = b.lshr(width, ir.Constant(I32, ebytes.bit_length() - 1))
    first = b2d._clamp(b, b.mul(b.sub(zero, x), ir.Constant(I32, d)), zero, size)
    end = b2d._clamp(b, b.mul(b.sub(width_elems, x), ir.Constant(I32, d)), zero, size)
    row0 = b.add(y, b.mul(bi.lane_id(b), ir.Constant(I32, d)))
    vty = frag.vector_type()
    loop = b2d.CountedLoop(b, "lanerows", "e", first, end, [ir.Constant(vty, [0] * vty.count)])
    e, (acc,) = loop.counter, loop.carried
    col = b.add(x, b.udiv(e, ir.Constant(I32, d)))
    row = b.add(row0, b.urem(e, ir.Constant(I32, d)))
    ok = b.and_(b.icmp_unsigned("<", row, height), b.icmp_unsigned("<", col, width_elems))
    offset = b.add(b.mul(b.sext(row, I64), b.sext(pitch, I64)), b.mul(b.sext(col, I64), ir.Constant(I64, ebytes)))
    ptr = b.gep(base, [offset], source_etype=I8)
    loaded = b.select(ok, b.load(b.select(ok, ptr, base), typ=elem_ty, align=ebytes), ir.Constant(elem_ty, 0))
    if frag.pack == 1:
        updated = b.insert_element(acc, loaded, e)
    else:  # element e is bits (e % pack) * E of component e // pack
        word_ty = vty.element
        slot = b.udiv(e, ir.Constant(I32, frag.pack))
        shift = b.zext(b.mul(b.urem(e, ir.Constant(I32, frag.pack)), ir.Constant(I32, frag.elem_bits)), word_ty)
        word = b.or_(b.extract_element(acc, slot), b.shl(b.zext(loaded, word_ty), shift))
        updated = b.insert_element(acc, word, slot)
    return loop.close([updated])[0]
