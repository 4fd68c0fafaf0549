"""2D block loads, stores and prefetches in the sg_map fragment order.

Every wrapper built here has the same per-lane contract (the XeGPU sg_map
distribution, the XeGPU RFC): lane n, with ``(lr, lc) = divmod(n,
wi_layout[1])``, holds for column unit ``cb``, row unit ``rb``, ``i < wi_data[0]``,
``j < wi_data[1]`` the element

    row = y + rb*wi_layout[0]*wi_data[0] + lr*wi_data[0] + i
    col = x + cb*wi_layout[1]*wi_data[1] + lc*wi_data[1] + j

at fragment index ``(cb*RB + rb)*(wi_data[0]*wi_data[1]) + i*wi_data[1] + j``, with
``RB = rows / (wi_layout[0]*wi_data[0])``.  Out-of-bounds elements read as 0 and are
never written.

How a wrapper gets there is decided from the target:

* with 2D block IO, when the Intel builtin's own per-lane layout (reference §3.4) is
  the same order, the wrapper calls ``intel_sub_group_2d_block_{read,read_transform,
  write}_*`` through a private array (emulated by definition on the CPU);
* without 2D block IO, when each row of the fragment is one subgroup block message
  (``builtins_block1d``: ARC), one block read/write per row where the block lies inside
  the surface, and the per-lane path below where it does not;
* otherwise (an illegal shape, or a different layout) it uses plain per-lane
  loads/stores guarded by bounds checks.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from . import block1d as builtins_block1d
from .mangle import Ptr, mangle, vec

I8, I32, I64 = ir.IntType(8), ir.IntType(32), ir.IntType(64)
GLOBAL_PTR = ir.PointerType(addrspace=1)
PRIVATE_PTR = ir.PointerType(addrspace=0)
#: per-lane fragment sizes we can return: SPIR-V vector sizes except 1 (a 1-vector)
SPIRV_VECTOR_SIZES = (2, 3, 4, 8, 16)
_SURFACE_ARGS = ("base", "width_bytes", "height_rows", "pitch_bytes", "x", "y")
#: elements per vector the per-lane row loop carries its fragment in (a SPIR-V vector)
_PIECE = 16


@dataclass(frozen=True)
class Fragment:
    """One sg_map distribution of a ``rows x cols`` block of ``elem_bits`` elements."""

    elem_bits: int
    rows: int
    cols: int  # total columns (cols per block x count)
    wi_layout: tuple[int, int]
    wi_data: tuple[int, int]

    @property
    def lanes(self) -> int:
        return self.wi_layout[0] * self.wi_layout[1]

    @property
    def size(self) -> int:
        """Elements per lane (V)."""
        return self.rows * self.cols // self.lanes

    @property
    def pack(self) -> int:
        """Elements per carrier component: 1, or ``32 / elem_bits`` when the fragment has
        more elements than a SPIR-V vector may (32 bytes of 8-bit VNNI data per lane)."""
        if self.size in SPIRV_VECTOR_SIZES:
            return 1
        return 32 // self.elem_bits

    def vector_type(self) -> ir.Type:
        """The per-lane carrier: ``<size x iE>``, or ``<size/pack x i32>`` (element
        ``index`` in bits ``[(index % pack) * E, ...)`` of component ``index // pack``);
        the scalar ``iE`` for a one-element fragment (a one-row block of one element per
        lane: the 2D block messages of a 1-D array's f32 rows)."""
        if self.size == 1:
            return ir.IntType(self.elem_bits)
        return ir.VectorType(ir.IntType(self.elem_bits * self.pack), self.size // self.pack)

    def elements(self):
        """``(index, row_offset, col_offset)`` per fragment element; the lane's own
        offsets ``(lr*wi_data[0], lc*wi_data[1])`` are added at run time."""
        (l0, l1), (d0, d1) = self.wi_layout, self.wi_data
        row_units = self.rows // (l0 * d0)
        for cb in range(self.cols // (l1 * d1)):
            for rb in range(row_units):
                for i in range(d0):
                    for j in range(d1):
                        index = (cb * row_units + rb) * (d0 * d1) + i * d1 + j
                        yield index, rb * l0 * d0 + i, cb * l1 * d1 + j


def check_fragment(subgroup_size, elem_bits, rows, cols, wi_layout, wi_data, scalar_ok: bool = False) -> str | None:
    """Why this distribution is illegal, or None if it is fine (``scalar_ok``: one element
    per lane is fine too, carried as a scalar; block messages of one row ask for it)."""
    (l0, l1), (d0, d1) = wi_layout, wi_data
    if elem_bits not in (8, 16, 32, 64):
        return f"unsupported element width {elem_bits}"
    if l0 * l1 != subgroup_size:
        return f"wi_layout {wi_layout} does not cover the subgroup of {subgroup_size}"
    if rows % (l0 * d0) or cols % (l1 * d1):
        return f"block {rows}x{cols} is not divisible by wi_layout*wi_data {wi_layout}*{wi_data}"
    per_lane = rows * cols // subgroup_size
    packed = per_lane * elem_bits // 32 if elem_bits < 32 and per_lane * elem_bits % 32 == 0 else 0
    if per_lane not in SPIRV_VECTOR_SIZES and packed not in SPIRV_VECTOR_SIZES and not (scalar_ok and per_lane == 1):
        # SPIR-V (without VectorAnyINTEL) has no other vector sizes, and LLVM's backend
        # aborts the whole process on them: split the block into smaller loads instead.
        return (f"block {rows}x{cols} gives {per_lane} elements per lane; a fragment must have "
                f"{', '.join(map(str, SPIRV_VECTOR_SIZES))} elements (legal SPIR-V vector sizes)")
    return None


def _fragment(bi, elem_bits, rows, cols, wi_layout, wi_data, scalar_ok: bool = False) -> Fragment:
    problem = check_fragment(bi.subgroup_size, elem_bits, rows, cols, wi_layout, wi_data, scalar_ok)
    if problem:
        raise ValueError(problem)
    return Fragment(elem_bits, rows, cols, tuple(wi_layout), tuple(wi_data))


# --- which Intel builtin (if any) matches --------------------------------------------
#: (op, elem_bits, cols per block) -> (wi_layout, wi_data) of the builtin's per-lane
#: layout for a 16-wide subgroup (§3.4), Itanium code of its private data type).  The
#: data is the block row-major in registers, lane n taking the n-th element of every
#: 16-element group, so a 32b block 8 columns wide gives lane n rows 2i + n // 8 of column
#: n mod 8: the tf32 A operand's layout (wi_layout [2, 8]).  Shapes not listed (e.g.
#: transposes) have other layouts and fall back.
_L16 = (1, 16)
_BUILTIN_LAYOUTS = {
    ("read", 8, 16): (_L16, (1, 1), "h"),      # one byte per lane per row
    ("read", 8, 32): (_L16, (1, 2), "t"),      # one ushort (bytes 2n, 2n+1) per row
    ("read", 16, 16): (_L16, (1, 1), "t"),     # component b*H + r = mem[y+r][x+b*W+n]
    ("read", 32, 8): ((2, 8), (1, 1), "j"),    # component i = mem[y+2i+n//8][x+n%8]
    ("read", 32, 16): (_L16, (1, 1), "j"),
    ("read_transform", 8, 16): (_L16, (4, 1), "j"),   # dword j = rows 4j..4j+3 of column n
    ("read_transform", 16, 16): (_L16, (2, 1), "j"),  # dword j = rows 2j, 2j+1 of column n
    ("write", 8, 16): (_L16, (1, 1), "h"),
    ("write", 8, 32): (_L16, (1, 2), "t"),
    ("write", 16, 16): (_L16, (1, 1), "t"),
    ("write", 32, 16): (_L16, (1, 1), "j"),
}


def _builtin_op(target, op, elem_bits, rows, cols, count, wi_layout, wi_data) -> bool:
    """Whether the 2D block builtin ``op`` of this shape exists on ``target`` and hands
    each lane exactly the sg_map fragment."""
    if not target.has_2d_block_io or target.subgroup_size != target.block2d_builtin_lanes:
        return False
    layout = _BUILTIN_LAYOUTS.get((op, elem_bits, cols))
    if layout is None or layout[:2] != (tuple(wi_layout), tuple(wi_data)):
        return False
    return target.find_block2d(op, elem_bits, rows, cols, count) is not None


def _row_units(target, elem_bits, rows, cols, wi_layout, wi_data) -> int | None:
    """Units per lane of a subgroup block message per row, where the target reads and
    writes rows that way (targets without 2D block IO that have subgroup block IO).
    Not for a single-unit VNNI B block (16x8 on ARC): IGC hoisted its 16 row reads per
    block ahead of the DPAS and the RFC 2.1 program spilled 15 KB (its per-lane loads do
    not); nor for fragments the fallback row loop cannot carry in power-of-two pieces;
    nor for element widths outside ``Target.row_block_elem_bits``."""
    if target.has_2d_block_io or not target.subgroup_block_units or elem_bits not in target.row_block_elem_bits:
        return None
    units = builtins_block1d.row_units(target, elem_bits, cols, wi_layout, wi_data)
    per_lane = rows * cols // target.subgroup_size
    carried = per_lane % _PIECE == 0 if per_lane > _PIECE else per_lane & (per_lane - 1) == 0
    if (units == 1 and wi_data[0] > 1) or not carried:
        return None
    return units


def load_kind(target, elem_bits, rows, cols, count, wi_layout, wi_data, per_lane: bool = False) -> str:
    """``read``/``read_transform`` when a 2D block read serves the load, ``rows`` when
    subgroup block reads do (one per row), else ``gather`` (always for ``per_lane``: an
    array whose rows are too narrow for 2D block messages)."""
    if per_lane:
        return "gather"
    op = "read_transform" if wi_data[0] > 1 else "read"
    if _builtin_op(target, op, elem_bits, rows, cols, count, wi_layout, wi_data):
        return op
    return "rows" if _row_units(target, elem_bits, rows, cols * count, wi_layout, wi_data) else "gather"


def store_kind(target, elem_bits, rows, cols, wi_layout, wi_data, per_lane: bool = False) -> str:
    """``write`` when a 2D block write serves the store, ``rows`` when subgroup block
    writes do, else ``scatter`` (always for ``per_lane``)."""
    if per_lane:
        return "scatter"
    if _builtin_op(target, "write", elem_bits, rows, cols, 1, wi_layout, wi_data):
        return "write"
    return "rows" if _row_units(target, elem_bits, rows, cols, wi_layout, wi_data) else "scatter"


def _builtin_name(op, elem_bits, rows, cols, count) -> str:
    base = f"intel_sub_group_2d_block_{op}_{elem_bits}b_{rows}r{cols}x{count}c"
    params = [Ptr("v", 1), "i", "i", "i", vec(2, "i")]
    if op != "prefetch":
        params.append(Ptr(_BUILTIN_LAYOUTS[(op, elem_bits, cols)][2]))
    return mangle(base, params)


_BUILTIN_FNTY = ir.FunctionType(ir.VoidType(), [GLOBAL_PTR, I32, I32, I32, ir.VectorType(I32, 2), PRIVATE_PTR])
_PREFETCH_FNTY = ir.FunctionType(ir.VoidType(), [GLOBAL_PTR, I32, I32, I32, ir.VectorType(I32, 2)])


def _intel_block_builtin(bi, op, elem_bits, rows, cols, count) -> ir.Function:
    """The Intel 2D block builtin: declared, or (emulation) defined from its spec."""
    name = _builtin_name(op, elem_bits, rows, cols, count)
    fnty = _PREFETCH_FNTY if op == "prefetch" else _BUILTIN_FNTY
    return bi.gpu_builtin(name, fnty, lambda: bi.build_once(
        ("intel_block_builtin", op, elem_bits, rows, cols, count),
        lambda: _emulated_block_builtin(bi, name, fnty, op, elem_bits, rows, cols, count)))


def _emulated_block_builtin(bi, name, fnty, op, elem_bits, rows, cols, count) -> ir.Function:
    """The CPU device's definition of a 2D block builtin, from its spec."""
    fn = bi.define_internal(name, fnty)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    if op != "prefetch":  # a prefetch is only a hint: nothing to emulate
        wi_layout, wi_data, _ = _BUILTIN_LAYOUTS[(op, elem_bits, cols)]
        frag = Fragment(elem_bits, rows, cols * count, wi_layout, wi_data)
        base, width, height, pitch, coord, data = fn.args
        x = builder.extract_element(coord, ir.Constant(I32, 0))
        y = builder.extract_element(coord, ir.Constant(I32, 1))
        surface = (base, width, height, pitch, x, y)
        if op == "write":
            _scatter(bi, builder, frag, surface, builder.load(data, typ=frag.vector_type()))
        elif frag.size > max(SPIRV_VECTOR_SIZES):  # a coalesced message: element by element
            _gather_into(bi, builder, frag, surface, data)
        else:
            builder.store(_gather(bi, builder, frag, surface), data)
    builder.ret_void()
    return fn


#: SPV_INTEL_cache_controls: the CacheControlLoadINTEL decoration
_CACHE_CONTROL_LOAD_INTEL = 6442
_ANNOTATION = "llvm.ptr.annotation.p1.p1"


def _decorated(bi, builder, pointer, controls):
    """``pointer`` annotated ``{6442:"<level>,<control>"}`` per control: LLVM's SPIR-V
    backend turns a ``llvm.ptr.annotation`` of that form into ``CacheControlLoadINTEL``
    decorations of the result, and IGC sets the LSC cache bits of the 2D message from
    the decorations of its pointer."""
    if not controls:
        return pointer
    text = "".join(f'{{{_CACHE_CONTROL_LOAD_INTEL}:"{level},{control}"}}' for level, control in controls)
    fnty = ir.FunctionType(GLOBAL_PTR, [GLOBAL_PTR, GLOBAL_PTR, GLOBAL_PTR, I32, GLOBAL_PTR])
    annotate = bi.declare_intrinsic(_ANNOTATION, fnty)
    null = ir.Constant(GLOBAL_PTR, None)
    return builder.call(annotate, [pointer, _metadata_string(bi, text), null, ir.Constant(I32, 0), null])


def _metadata_string(bi, text: str) -> ir.GlobalVariable:
    """A NUL-terminated constant string in the ``llvm.metadata`` section (global memory)."""
    name = f"__xetile_annotation_{text.encode().hex()}"
    g = bi.module.globals.get(name)
    if g is None:
        data = bytearray(text.encode() + b"\0")
        g = ir.GlobalVariable(bi.module, ir.ArrayType(I8, len(data)), name, addrspace=1)
        g.initializer = ir.Constant(ir.ArrayType(I8, len(data)), data)
        g.global_constant, g.linkage, g.section = True, "private", "llvm.metadata"
    return g


# --- the wrappers codegen calls --------------------------------------------------------
def _wrapper(bi, name: str, ret: ir.Type, extra: list) -> tuple[ir.Function, ir.IRBuilder]:
    fnty = ir.FunctionType(ret, [GLOBAL_PTR, I32, I32, I32, I32, I32] + extra)
    fn = bi.define_internal(name, fnty)
    for arg, arg_name in zip(fn.args, _SURFACE_ARGS + ("value",)):
        arg.name = arg_name
    return fn, ir.IRBuilder(fn.append_basic_block("entry"))


def _tag(frag: Fragment) -> str:
    (l0, l1), (d0, d1) = frag.wi_layout, frag.wi_data
    return f"l{l0}x{l1}_d{d0}x{d1}"


def _coord(builder, x, y):
    coord = builder.insert_element(ir.Constant(ir.VectorType(I32, 2), None), x, ir.Constant(I32, 0))
    return builder.insert_element(coord, y, ir.Constant(I32, 1))


def build_load(bi, elem_bits, rows, cols, count, wi_layout, wi_data, per_lane=False) -> ir.Function:
    """The load wrapper (see :meth:`IntelBuiltins.load_2d`)."""
    frag = _fragment(bi, elem_bits, rows, cols * count, wi_layout, wi_data, scalar_ok=rows == 1)
    kind = load_kind(bi.target, elem_bits, rows, cols, count, wi_layout, wi_data, per_lane)
    name = f"__xetile_load2d_{kind}_{elem_bits}b_{rows}r{cols}x{count}c_{_tag(frag)}"
    fn, builder = _wrapper(bi, name, frag.vector_type(), [])
    if kind == "gather":
        builder.ret(_gather(bi, builder, frag, fn.args))
        return fn
    if kind == "rows":
        builder.ret(_read_rows_or_gather(bi, builder, frag, fn.args))
        return fn
    intel = _intel_block_builtin(bi, kind, elem_bits, rows, cols, count)
    buf = builder.alloca(frag.vector_type(), name="block")
    base, width, height, pitch, x, y = fn.args
    builder.call(intel, [base, width, height, pitch, _coord(builder, x, y), buf])
    builder.ret(builder.load(buf, typ=frag.vector_type()))
    return fn


def build_load_pieces(bi, elem_bits, rows, cols, count, wi_layout, wi_data, per_lane=False) -> ir.Function:
    """The load wrapper of a fragment too large for one vector (see
    :meth:`IntelBuiltins.load_2d_pieces`): the 2D block builtin writes straight into the
    caller's private array.  Only shapes whose builtin layout is the sg_map get here, or
    ``per_lane`` ones (an array too narrow for 2D blocks), which are gathered element by
    element into the same array."""
    frag = Fragment(elem_bits, rows, cols * count, tuple(wi_layout), tuple(wi_data))
    kind = load_kind(bi.target, elem_bits, rows, cols, count, wi_layout, wi_data, per_lane)
    if kind == "gather" and not per_lane:
        raise ValueError(f"no 2D block read gives the {rows}x{cols}x{count} fragment {_tag(frag)}")
    name = f"__xetile_load2d_pieces_{kind}_{elem_bits}b_{rows}r{cols}x{count}c_{_tag(frag)}"
    fn, builder = _wrapper(bi, name, ir.VoidType(), [PRIVATE_PTR])
    base, width, height, pitch, x, y, out = fn.args
    if kind == "gather":
        _gather_into(bi, builder, frag, (base, width, height, pitch, x, y), out)
        builder.ret_void()
        return fn
    if kind == "rows":
        _read_rows_or_gather_into(bi, builder, frag, (base, width, height, pitch, x, y), out)
        builder.ret_void()
        return fn
    intel = _intel_block_builtin(bi, kind, elem_bits, rows, cols, count)
    builder.call(intel, [base, width, height, pitch, _coord(builder, x, y), out])
    builder.ret_void()
    return fn


def build_pad(bi, elem_bits, rows, cols, count, wi_layout, wi_data) -> ir.Function:
    """The padding wrapper (see :meth:`IntelBuiltins.pad_2d`): each element of this lane's
    fragment that lies outside the surface becomes ``pad`` (a compare and a select per
    element, so the 2D block read itself stays one message)."""
    frag = _fragment(bi, elem_bits, rows, cols * count, wi_layout, wi_data, scalar_ok=rows == 1)
    name = f"__xetile_pad2d_{elem_bits}b_{rows}r{cols}x{count}c_{_tag(frag)}"
    elem_ty = ir.IntType(elem_bits)
    fn, builder = _wrapper(bi, name, frag.vector_type(), [frag.vector_type(), elem_ty])
    *surface, value, pad = fn.args
    addr = _Addressing(bi, builder, frag, surface)
    values = {}
    for index, row_off, col_off in frag.elements():
        ok, _ = addr.element(row_off, col_off)
        values[index] = builder.select(ok, _element_of(builder, frag, value, index), pad)
    builder.ret(_assemble(builder, frag, [values[i] for i in range(frag.size)]))
    return fn


def build_store(bi, elem_bits, rows, cols, wi_layout, wi_data, per_lane=False) -> ir.Function:
    """The store wrapper (see :meth:`IntelBuiltins.store_2d`)."""
    frag = _fragment(bi, elem_bits, rows, cols, wi_layout, wi_data, scalar_ok=rows == 1)
    kind = store_kind(bi.target, elem_bits, rows, cols, wi_layout, wi_data, per_lane)
    name = f"__xetile_store2d_{kind}_{elem_bits}b_{rows}r{cols}x1c_{_tag(frag)}"
    fn, builder = _wrapper(bi, name, ir.VoidType(), [frag.vector_type()])
    base, width, height, pitch, x, y, value = fn.args
    if kind == "scatter":
        _scatter(bi, builder, frag, (base, width, height, pitch, x, y), value)
    elif kind == "rows":
        _write_rows_or_scatter(bi, builder, frag, (base, width, height, pitch, x, y), value)
    else:
        intel = _intel_block_builtin(bi, "write", elem_bits, rows, cols, 1)
        buf = builder.alloca(frag.vector_type(), name="block")
        builder.store(value, buf)
        builder.call(intel, [base, width, height, pitch, _coord(builder, x, y), buf])
    builder.ret_void()
    return fn


def prefetch_legal(target, elem_bits, rows, cols, count, per_lane: bool = False) -> bool:
    """Whether a 2D block prefetch serves the block (never for a ``per_lane`` array)."""
    return bool(not per_lane and target.has_2d_block_io and target.find_block2d("prefetch", elem_bits, rows, cols, count))


def build_prefetch(bi, elem_bits, rows, cols, count, controls=(), per_lane=False) -> ir.Function:
    """The prefetch wrapper: a 2D block prefetch where legal (not for a ``per_lane``
    array), else nothing; its base pointer carries the cache-control decorations ``controls``."""
    legal = prefetch_legal(bi.target, elem_bits, rows, cols, count, per_lane)
    tag = "".join(f"_cc{level}{control}" for level, control in controls)
    name = f"__xetile_prefetch2d_{'block' if legal else 'none'}_{elem_bits}b_{rows}r{cols}x{count}c{tag}"
    fn, builder = _wrapper(bi, name, ir.VoidType(), [])
    if legal:
        base, width, height, pitch, x, y = fn.args
        intel = _intel_block_builtin(bi, "prefetch", elem_bits, rows, cols, count)
        builder.call(intel, [_decorated(bi, builder, base, controls), width, height, pitch, _coord(builder, x, y)])
    builder.ret_void()
    return fn


# --- subgroup block messages per row (no 2D block IO) ---------------------------------
def _read_rows_or_gather(bi, builder, frag: Fragment, surface) -> ir.Value:
    """The fragment by one block read per row when the block lies inside the surface
    (one uniform test per block), else by guarded per-lane loads (:func:`_row_loop`)."""
    values = _read_rows_or_gather_values(bi, builder, frag, surface)
    return _assemble(builder, frag, values)


def _read_rows_or_gather_into(bi, builder, frag: Fragment, surface, out) -> None:
    """:func:`_read_rows_or_gather` for a fragment larger than a vector: element
    ``index`` goes to the caller's private array ``out[index]``."""
    elem_ty = ir.IntType(frag.elem_bits)
    for index, value in enumerate(_read_rows_or_gather_values(bi, builder, frag, surface)):
        builder.store(value, builder.gep(out, [ir.Constant(I32, index)], source_etype=elem_ty))


def _read_rows_or_gather_values(bi, builder, frag: Fragment, surface) -> list:
    """This lane's fragment elements (fragment order): block reads inside, else the
    per-lane row loop; merged by phis (no private array: one indexed at run time would
    keep the fast path in memory too)."""
    units = builtins_block1d.row_units(bi.target, frag.elem_bits, frag.cols, frag.wi_layout, frag.wi_data)
    addr = builtins_block1d.RowBlock(builder, frag, surface, builtins_block1d.READ_ALIGN)
    with builder.if_else(addr.inside, likely=True) as (inside, outside):
        with inside:
            fast = builtins_block1d.read_rows(bi, builder, frag, addr, units)
            fast_block = builder.block
        with outside:
            slow = _gather_row_loop(bi, builder, frag, surface)
            slow_block = builder.block
    merged = []
    for a, b in zip(fast, slow, strict=True):
        phi = builder.phi(a.type)
        phi.add_incoming(a, fast_block)
        phi.add_incoming(b, slow_block)
        merged.append(phi)
    return merged


def _gather_row_loop(bi, builder, frag: Fragment, surface) -> list:
    """The fragment by guarded per-lane loads, one row per iteration (:func:`_row_loop`);
    elements of rows outside the surface are 0.  The fragment travels through the loop
    as vectors of ``_PIECE`` elements, each element inserted at its run-time index."""
    elem_ty = ir.IntType(frag.elem_bits)
    width = min(_PIECE, frag.size)
    zeros = [ir.Constant(ir.VectorType(elem_ty, width), [0] * width)] * (frag.size // width)

    def visit(ok, ptr, slot, slots, pieces):
        value = builder.load(builder.select(ok, ptr, surface[0]), typ=elem_ty, align=frag.elem_bits // 8)
        value = builder.select(ok, value, ir.Constant(elem_ty, 0))
        lane_slot = builder.and_(slot, ir.Constant(I32, width - 1))
        piece_of = builder.lshr(slot, ir.Constant(I32, width.bit_length() - 1))
        out = list(pieces)
        for p in {s // width for s in slots}:
            hit = builder.icmp_unsigned("==", piece_of, ir.Constant(I32, p))
            out[p] = builder.select(hit, builder.insert_element(pieces[p], value, lane_slot), pieces[p])
        return out
    pieces = _row_loop(bi, builder, frag, surface, visit, zeros)
    return [builder.extract_element(pieces[i // width], ir.Constant(I32, i % width)) for i in range(frag.size)]


def _write_rows_or_scatter(bi, builder, frag: Fragment, surface, value) -> None:
    """Write the fragment by one block write per row when the block lies inside the
    surface, else by guarded per-lane stores (:func:`_row_loop`)."""
    units = builtins_block1d.row_units(bi.target, frag.elem_bits, frag.cols, frag.wi_layout, frag.wi_data)
    addr = builtins_block1d.RowBlock(builder, frag, surface, builtins_block1d.WRITE_ALIGN)
    with builder.if_else(addr.inside, likely=True) as (inside, outside):
        with inside:
            builtins_block1d.write_rows(bi, builder, frag, addr, units,
                                        lambda index: _element_of(builder, frag, value, index))
        with outside:
            def visit(ok, ptr, slot, slots, state):
                element = _element_at(builder, frag, value, slot)
                with builder.if_then(ok):
                    builder.store(element, ptr, align=frag.elem_bits // 8)
                return state
            _row_loop(bi, builder, frag, surface, visit, [])


def _element_at(builder, frag: Fragment, value, index) -> ir.Value:
    """Element ``index`` (run-time i32, fragment order) of carrier ``value``."""
    if frag.pack == 1:
        return builder.extract_element(value, index)
    shift = ir.Constant(I32, frag.pack.bit_length() - 1)
    word = builder.extract_element(value, builder.lshr(index, shift))
    bits = builder.mul(builder.and_(index, ir.Constant(I32, frag.pack - 1)), ir.Constant(I32, frag.elem_bits))
    return builder.trunc(builder.lshr(word, builder.zext(bits, word.type)), ir.IntType(frag.elem_bits))


def _row_loop(bi, builder, frag: Fragment, surface, visit, state: list) -> list:
    """``state = visit(in_bounds, address, index, static_indices, state)`` for each of
    this lane's elements in the block's rows that lie inside the surface (``index`` is
    the element's run-time fragment index, ``static_indices`` all it may take), one row
    per iteration of a loop whose trip count is only known at run time, ``state``
    carried through it.  So the per-lane messages of a block the subgroup block
    messages cannot serve stay one row's worth in the machine code (IGC does not unroll
    the loop): the loop that holds the block counts its block messages, not one gather
    per element.  Rows outside the surface are not visited."""
    base, width, height, pitch, x, y = surface
    (_, lanes), (_, d1) = frag.wi_layout, frag.wi_data
    ebytes = frag.elem_bits // 8
    rows = ir.Constant(I32, frag.rows)
    zero = ir.Constant(I32, 0)
    first = _clamp(builder, builder.sub(zero, y), zero, rows)
    end = _clamp(builder, builder.sub(height, y), zero, rows)
    width_elems = builder.lshr(width, ir.Constant(I32, ebytes.bit_length() - 1))
    col0 = builder.add(x, builder.mul(bi.lane_id(builder), ir.Constant(I32, d1)))
    loop = CountedLoop(builder, "rows", "rr", first, end, state)
    rr, phis = loop.counter, loop.carried
    row_off = builder.mul(builder.sext(builder.add(y, rr), I64), builder.sext(pitch, I64))
    current = list(phis)
    for cb in range(frag.cols // (lanes * d1)):
        for j in range(d1):
            col = builder.add(col0, ir.Constant(I32, cb * lanes * d1 + j))
            ok = builder.icmp_unsigned("<", col, width_elems)
            ptr = builder.gep(base, [builder.add(row_off, builder.mul(builder.sext(col, I64), ir.Constant(I64, ebytes)))],
                              source_etype=I8)
            # fragment index of (row rr, unit cb, element j): cb*rows*d1 + rr*d1 + j
            first_slot = cb * frag.rows * d1 + j
            slot = builder.add(builder.mul(rr, ir.Constant(I32, d1)), ir.Constant(I32, first_slot))
            current = visit(ok, ptr, slot, range(first_slot, first_slot + frag.rows * d1, d1), current)
    return loop.close(current)


class CountedLoop:
    """``for counter in range(first, end)`` as basic blocks (``prefix``.head / .body /
    .done), carrying ``carried`` values through phis: made, the builder is in the body;
    :meth:`close` feeds the next iteration and leaves the builder after the loop.  The
    per-lane loops of this module and of builtins_transpose (ARC's lane rows) share it."""

    def __init__(self, builder, prefix: str, counter_name: str, first, end, carried):
        self.builder = builder
        self.head, body, self.done = (builder.append_basic_block(f"{prefix}.{n}") for n in ("head", "body", "done"))
        entry = builder.block
        builder.branch(self.head)
        builder.position_at_end(self.head)
        self.counter = builder.phi(I32, name=counter_name)
        self.counter.add_incoming(first, entry)
        self.carried = []
        for value in carried:
            phi = builder.phi(value.type)
            phi.add_incoming(value, entry)
            self.carried.append(phi)
        builder.cbranch(builder.icmp_signed("<", self.counter, end), body, self.done)
        builder.position_at_end(body)

    def close(self, updated) -> list:
        """End the body with ``updated`` as the carried values of the next iteration; the
        builder then continues after the loop, where the carried phis hold the results."""
        builder = self.builder
        latch = builder.block
        self.counter.add_incoming(builder.add(self.counter, ir.Constant(I32, 1)), latch)
        for phi, value in zip(self.carried, updated, strict=True):
            phi.add_incoming(value, latch)
        builder.branch(self.head)
        builder.position_at_end(self.done)
        return self.carried


def _clamp(builder, value, low, high):
    value = builder.select(builder.icmp_signed("<", value, low), low, value)
    return builder.select(builder.icmp_signed(">", value, high), high, value)


# --- plain per-lane memory access ----------------------------------------------------
def _lane_position(bi, builder, wi_layout) -> tuple[ir.Value, ir.Value]:
    """``(lr, lc) = divmod(lane, wi_layout[1])``, folded at build time when one of them
    is known: a one-row layout (``wi_layout = [1, sg]``) is ``(0, lane)`` and a
    one-column layout ``(lane, 0)``.

    The fold is not only tidier.  Intel's OpenCL CPU compiler miscompiles
    ``lane udiv subgroup_size`` (always 0) inside a loop whose trip count is only
    known at run time: a load whose row is ``y + 2*(lane/16)`` kept the value of the
    loop's first iteration, so a PVC GEMM with several K iterations lost the first
    VNNI row of every later B block.  Only emit the division when the quotient can
    really be nonzero."""
    l0, l1 = wi_layout
    lane = bi.lane_id(builder)
    zero = ir.Constant(I32, 0)
    if l0 == 1:
        return zero, lane
    if l1 == 1:
        return lane, zero
    return builder.udiv(lane, ir.Constant(I32, l1)), builder.urem(lane, ir.Constant(I32, l1))


class _Addressing:
    """Bounds checks and addresses of one lane's elements of a surface."""

    def __init__(self, bi, builder, frag: Fragment, surface):
        self.builder = builder
        self.base, width, self.height, pitch, x, y = surface
        self.ebytes = frag.elem_bits // 8
        shift = ir.Constant(I32, self.ebytes.bit_length() - 1)
        self.width_elems = builder.lshr(width, shift)
        self.pitch = builder.sext(pitch, I64)
        lane_row, lane_col = _lane_position(bi, builder, frag.wi_layout)
        self.row0 = builder.add(y, builder.mul(lane_row, ir.Constant(I32, frag.wi_data[0])))
        self.col0 = builder.add(x, builder.mul(lane_col, ir.Constant(I32, frag.wi_data[1])))

    def element(self, row_off: int, col_off: int):
        """(in_bounds: i1, address: ptr addrspace(1)) of one element.  Unsigned
        compares also reject negative coordinates."""
        b = self.builder
        row = b.add(self.row0, ir.Constant(I32, row_off))
        col = b.add(self.col0, ir.Constant(I32, col_off))
        ok = b.and_(b.icmp_unsigned("<", row, self.height), b.icmp_unsigned("<", col, self.width_elems))
        offset = b.add(b.mul(b.sext(row, I64), self.pitch), b.mul(b.sext(col, I64), ir.Constant(I64, self.ebytes)))
        return ok, b.gep(self.base, [offset], source_etype=I8)


def _gather(bi, builder, frag: Fragment, surface) -> ir.Value:
    """This lane's fragment by plain loads.  Branch-free: an out-of-bounds element
    loads from ``base`` (always valid) and is then replaced by 0."""
    return gather_by(_Addressing(bi, builder, frag, surface), builder, frag)


def gather_by(addr, builder, frag: Fragment) -> ir.Value:
    """This lane's fragment by plain loads of the elements ``addr`` addresses (the plain
    or the transposed addressing), branch-free as :func:`_gather` says."""
    elem_ty = ir.IntType(frag.elem_bits)
    values = {}
    for index, row_off, col_off in frag.elements():
        ok, ptr = addr.element(row_off, col_off)
        value = builder.load(builder.select(ok, ptr, addr.base), typ=elem_ty, align=addr.ebytes)
        values[index] = builder.select(ok, value, ir.Constant(elem_ty, 0))
    return _assemble(builder, frag, [values[i] for i in range(frag.size)])


def _gather_into(bi, builder, frag: Fragment, surface, out) -> None:
    """This lane's fragment by plain loads, stored element ``index`` at ``out[index]``
    (``iE`` elements: the builtin's private array, for fragments larger than a vector)."""
    addr = _Addressing(bi, builder, frag, surface)
    elem_ty = ir.IntType(frag.elem_bits)
    for index, row_off, col_off in frag.elements():
        ok, ptr = addr.element(row_off, col_off)
        value = builder.load(builder.select(ok, ptr, addr.base), typ=elem_ty, align=addr.ebytes)
        slot = builder.gep(out, [ir.Constant(I32, index)], source_etype=elem_ty)
        builder.store(builder.select(ok, value, ir.Constant(elem_ty, 0)), slot)


def _assemble(builder, frag: Fragment, values: list) -> ir.Value:
    """The carrier vector holding ``values`` (fragment order), packed per :attr:`Fragment.pack`."""
    vty = frag.vector_type()
    if frag.size == 1:
        return values[0]
    out = ir.Constant(vty, None)
    for c in range(vty.count):
        part = values[c * frag.pack:(c + 1) * frag.pack]
        word = part[0]
        if frag.pack > 1:
            word = builder.zext(word, vty.element)
            for f, v in enumerate(part[1:], start=1):
                word = builder.or_(word, builder.shl(builder.zext(v, vty.element), ir.Constant(vty.element, f * frag.elem_bits)))
        out = builder.insert_element(out, word, ir.Constant(I32, c))
    return out


def _element_of(builder, frag: Fragment, value, index: int) -> ir.Value:
    """Element ``index`` (fragment order) of carrier ``value``."""
    if frag.size == 1:
        return value
    word = builder.extract_element(value, ir.Constant(I32, index // frag.pack))
    if frag.pack == 1:
        return word
    shift = (index % frag.pack) * frag.elem_bits
    if shift:
        word = builder.lshr(word, ir.Constant(word.type, shift))
    return builder.trunc(word, ir.IntType(frag.elem_bits))


def _scatter(bi, builder, frag: Fragment, surface, value) -> None:
    """Write this lane's fragment by plain stores, skipping out-of-bounds elements."""
    addr = _Addressing(bi, builder, frag, surface)
    for index, row_off, col_off in frag.elements():
        ok, ptr = addr.element(row_off, col_off)
        element = _element_of(builder, frag, value, index)
        with builder.if_then(ok):
            builder.store(element, ptr, align=addr.ebytes)
