"""2D block messages through an address payload built once (IGC's payload builtins).

IGC's ``__builtin_IB_subgroup_createBlock2DAddressPayload`` returns a private pointer to
a message payload (surface base, width-1, height-1, pitch-1 in bytes, x, y, block width,
height and count), the ``setBlock2DAddressPayloadBlock{X,Y}`` builtins move it in place,
and ``__builtin_IB_subgroup_block_read_ap_*`` send a message through it
(:mod:`..emit.prefetch_payloads`, :mod:`..emit.transposed_payloads`).  On a GPU they are
declarations IGC resolves.

On the CPU device (``bi.emulate``) they are defined from that description, so the CPU
runs the kernel body the GPU runs and a wrong field gives wrong results there too: the
payload is the create builtin's arguments in private memory, ``set`` stores one field,
a read takes its surface and position from the fields and calls the emulated plain
builtin (:func:`.transpose._intel_read_transpose`), a prefetch does nothing (as
the emulated plain prefetch).  A read whose fields break the message's rules (block shape
not the one its name reads, width not whole dwords, pitch not a multiple of 16 bytes or
below the width: the Xe codegen reference section 3.4) is undefined on the GPU and reads
all ones here, so that a test sees it.  An off-by-one width or pitch breaks those rules;
a height one row short drops the surface's last row.

The one difference in the kernel body: a function cannot return storage of its caller,
so in emulation :func:`create_payload` allocates the payload in the kernel's entry block
and calls ``__xetile_emulated_createBlock2DAddressPayload(storage, fields...)`` instead
of the create builtin (same fields, same order); every later call is the GPU's.
"""
from __future__ import annotations

from llvmlite import ir

I32, I64 = ir.IntType(32), ir.IntType(64)
GLOBAL_PTR = ir.PointerType(addrspace=1)
PRIVATE_PTR = ir.PointerType(addrspace=0)

_CREATE = "__builtin_IB_subgroup_createBlock2DAddressPayload"
_CREATE_FIELDS = [I64] + [I32] * 8
_EMULATED_CREATE = "__xetile_emulated_createBlock2DAddressPayload"
_COPY = "__builtin_IB_subgroup_copyBlock2DAddressPayload"
_EMULATED_COPY = "__xetile_emulated_copyBlock2DAddressPayload"
#: the emulated payload: the create builtin's arguments, in its order
PAYLOAD_FIELDS = ("base", "width_m1", "height_m1", "pitch_m1", "x", "y", "block_width", "block_height", "blocks")
_PAYLOAD_TYPE = ir.LiteralStructType(_CREATE_FIELDS)
_SET_FNTY = ir.FunctionType(ir.VoidType(), [PRIVATE_PTR, I32])
_PREFETCH_FNTY = ir.FunctionType(ir.VoidType(), [PRIVATE_PTR, I32, I32, I32])
#: pitch alignment of a 2D block surface in bytes (the Xe codegen reference section 3.4)
_PITCH_ALIGN = 16


def create_payload(bi, builder, surface, rows: int, cols: int, count: int) -> ir.Value:
    """The address payload for ``count`` blocks of ``rows x cols`` elements of ``surface``
    (base, width bytes, height rows, pitch bytes, x, y): the fields the hardware takes
    minus one are given minus one (the element size is the message's).  Emulated, the
    payload lives in the kernel's entry block (module doc)."""
    base, width, height, pitch, x, y = surface
    one = ir.Constant(I32, 1)
    args = [builder.ptrtoint(base, I64), builder.sub(width, one), builder.sub(height, one), builder.sub(pitch, one),
            x, y, ir.Constant(I32, cols), ir.Constant(I32, rows), ir.Constant(I32, count)]
    if not bi.emulate:
        return builder.call(bi.declare(_CREATE, ir.FunctionType(PRIVATE_PTR, _CREATE_FIELDS)), args, name="payload")
    storage = _entry_alloca(builder, _PAYLOAD_TYPE)
    builder.call(_emulated_create(bi), [storage] + args)
    return storage


def set_position(bi, builder, payload, x, y) -> None:
    """Set the block position fields of ``payload`` given (``x``/``y``, None = unchanged)."""
    for axis, value in (("X", x), ("Y", y)):
        if value is not None:
            builder.call(_set(bi, axis), [payload, value])


def prefetch(bi, builder, payload, elem_bits: int, rows: int, cols: int, count: int, cache_option: int) -> None:
    """Prefetch the payload's blocks with IGC's LSC_LDCC ``cache_option``."""
    name = f"__builtin_IB_subgroup_block_read_ap_prefetch_u{elem_bits}_m{rows}k{cols}v{count}"
    zero = ir.Constant(I32, 0)
    builder.call(_prefetch(bi, name), [payload, zero, zero, ir.Constant(I32, cache_option)])


def prefetch_moved(bi, builder, payload, elem_bits: int, rows: int, cols: int, count: int, cache_option: int,
                   x_offset: ir.Value | None, y_offset: ir.Value | None) -> None:
    """:func:`prefetch` of the payload's blocks moved by (``x_offset``, ``y_offset``;
    None = 0), through a copy of the payload made here: the payload itself is not written."""
    moved = _copy(bi, builder, payload)
    for axis, offset in (("X", x_offset), ("Y", y_offset)):
        if offset is not None:
            builder.call(_add(bi, axis), [moved, offset])
    prefetch(bi, builder, moved, elem_bits, rows, cols, count, cache_option)


def read_transpose(bi, builder, payload, rows: int, cols32: int, cache_option: int, emulated_read) -> ir.Value:
    """The 32-bit transposed read of ``rows x cols32`` dwords through ``payload``: lane
    n's ``<cols32 x i32>``, dword j = ``mem32[y + n][x + j]``.  ``emulated_read()`` is the
    plain builtin of the same message, defined from its spec (emulation only)."""
    name = f"__builtin_IB_subgroup_block_read_ap_transpose_u32_m{rows}k{cols32}v1"
    words = ir.VectorType(I32, cols32)
    fnty = ir.FunctionType(words, [PRIVATE_PTR, I32, I32, I32])
    fn = bi.gpu_builtin(name, fnty, lambda: _define_read(bi, name, fnty, rows, cols32, emulated_read()))
    zero = ir.Constant(I32, 0)
    return builder.call(fn, [payload, zero, zero, ir.Constant(I32, cache_option)])


# --- emulation (CPU device) ----------------------------------------------------------------
def _entry_alloca(builder, typ: ir.Type) -> ir.Value:
    """Private storage of ``typ`` allocated once per call of the kernel: in its entry
    block (at the builder when it is there: a second builder inserting into the block
    the first is filling would leave the first's position stale)."""
    entry = builder.function.entry_basic_block
    if builder.block is entry:
        return builder.alloca(typ, name="payload")
    at_entry = ir.IRBuilder(entry)
    at_entry.position_at_start(entry)
    return at_entry.alloca(typ, name="payload")


def _field(builder, payload, name: str) -> ir.Value:
    """The address of field ``name`` of an emulated payload."""
    index = PAYLOAD_FIELDS.index(name)
    return builder.gep(payload, [ir.Constant(I32, 0), ir.Constant(I32, index)], source_etype=_PAYLOAD_TYPE)


def _load_field(builder, payload, name: str) -> ir.Value:
    return builder.load(_field(builder, payload, name), typ=_CREATE_FIELDS[PAYLOAD_FIELDS.index(name)])


def _emulated_create(bi) -> ir.Function:
    """``__xetile_emulated_createBlock2DAddressPayload(storage, fields...)``: stores the fields."""
    fn = bi.module.globals.get(_EMULATED_CREATE)
    if fn is not None:
        return fn
    fn = bi.define_internal(_EMULATED_CREATE, ir.FunctionType(ir.VoidType(), [PRIVATE_PTR] + _CREATE_FIELDS))
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    storage, *fields = fn.args
    for name, value in zip(PAYLOAD_FIELDS, fields, strict=True):
        builder.store(value, _field(builder, storage, name))
    builder.ret_void()
    return fn


def _set(bi, axis: str) -> ir.Function:
    """``setBlock2DAddressPayloadBlock{axis}``: declared, or (emulation) stores field x/y."""
    return _field_update(bi, "set", axis)


def _field_update(bi, verb: str, axis: str) -> ir.Function:
    """``{verb}Block2DAddressPayloadBlock{axis}`` (verb "set" or "add"): declared, or
    (emulation) writes the value to field x/y, or adds it to the field."""
    name = f"__builtin_IB_subgroup_{verb}Block2DAddressPayloadBlock{axis}"

    def define() -> ir.Function:
        fn = bi.define_internal(name, _SET_FNTY)
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        payload, value = fn.args
        field = _field(builder, payload, axis.lower())
        builder.store(builder.add(builder.load(field, typ=I32), value) if verb == "add" else value, field)
        builder.ret_void()
        return fn

    return bi.gpu_builtin(name, _SET_FNTY, define)


def _copy(bi, builder, payload) -> ir.Value:
    """A copy of ``payload`` (``copyBlock2DAddressPayload``); emulated, into storage in
    the kernel's entry block, as :func:`create_payload` does."""
    if not bi.emulate:
        return builder.call(bi.declare(_COPY, ir.FunctionType(PRIVATE_PTR, [PRIVATE_PTR])), [payload], name="moved")
    storage = _entry_alloca(builder, _PAYLOAD_TYPE)
    fn = bi.module.globals.get(_EMULATED_COPY)
    if fn is None:
        fn = bi.define_internal(_EMULATED_COPY, ir.FunctionType(ir.VoidType(), [PRIVATE_PTR, PRIVATE_PTR]))
        at = ir.IRBuilder(fn.append_basic_block("entry"))
        at.store(at.load(fn.args[1], typ=_PAYLOAD_TYPE), fn.args[0])
        at.ret_void()
    builder.call(fn, [storage, payload])
    return storage


def _add(bi, axis: str) -> ir.Function:
    """``addBlock2DAddressPayloadBlock{axis}``: declared, or (emulation) adds to field x/y."""
    return _field_update(bi, "add", axis)


def _prefetch(bi, name: str) -> ir.Function:
    """A prefetch through a payload: declared, or (emulation) a hint that does nothing."""
    def define() -> ir.Function:
        fn = bi.define_internal(name, _PREFETCH_FNTY)
        ir.IRBuilder(fn.append_basic_block("entry")).ret_void()
        return fn

    return bi.gpu_builtin(name, _PREFETCH_FNTY, define)


def _define_read(bi, name: str, fnty: ir.FunctionType, rows: int, cols32: int, plain: ir.Function) -> ir.Function:
    """The emulated read through a payload: the plain builtin ``plain`` on the payload's
    surface at its position plus the immediate offsets; all ones when the fields break
    the message's rules (module doc)."""
    fn = bi.define_internal(name, fnty)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    payload, x_offset, y_offset, _cache_option = fn.args
    one = ir.Constant(I32, 1)
    width = builder.add(_load_field(builder, payload, "width_m1"), one)
    height = builder.add(_load_field(builder, payload, "height_m1"), one)
    pitch = builder.add(_load_field(builder, payload, "pitch_m1"), one)
    x = builder.add(_load_field(builder, payload, "x"), x_offset)
    y = builder.add(_load_field(builder, payload, "y"), y_offset)
    base = builder.inttoptr(_load_field(builder, payload, "base"), GLOBAL_PTR)
    buf = builder.alloca(fnty.return_type, name="block")
    coord = builder.insert_element(ir.Constant(ir.VectorType(I32, 2), None), x, ir.Constant(I32, 0))
    coord = builder.insert_element(coord, y, ir.Constant(I32, 1))
    builder.call(plain, [base, width, height, pitch, coord, buf])
    data = builder.load(buf, typ=fnty.return_type)
    legal = _fields_legal(builder, payload, width, pitch, (cols32, rows, 1))
    ones = ir.Constant(fnty.return_type, [0xFFFFFFFF] * cols32)
    builder.ret(builder.select(legal, data, ones))
    return fn


def _fields_legal(builder, payload, width, pitch, shape: tuple[int, int, int]) -> ir.Value:
    """i1: the payload's block shape is ``shape`` (width, height, count: the message's),
    its width whole dwords and its pitch a multiple of 16 bytes, at least the width."""
    checks = [builder.icmp_unsigned("==", _load_field(builder, payload, name), ir.Constant(I32, value))
              for name, value in zip(("block_width", "block_height", "blocks"), shape, strict=True)]
    checks.append(builder.icmp_unsigned("==", builder.and_(width, ir.Constant(I32, 3)), ir.Constant(I32, 0)))
    checks.append(builder.icmp_unsigned("==", builder.and_(pitch, ir.Constant(I32, _PITCH_ALIGN - 1)),
                                        ir.Constant(I32, 0)))
    checks.append(builder.icmp_unsigned(">=", pitch, width))
    legal = checks[0]
    for check in checks[1:]:
        legal = builder.and_(legal, check)
    return legal
