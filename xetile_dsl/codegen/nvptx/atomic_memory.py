"""XeTile's atomics and fence on NVIDIA targets, as LLVM atomics (the NVPTX backend makes
them ``atom.*`` / ``atom.cas`` / ``fence.*`` PTX).

* ``xetile.atomic_rmw`` on a block tile: every element of the tile inside the array is one
  atomic by the lane that holds it (an element outside touches nothing and returns 0; a
  narrow tile every lane holds whole, element i by lane i mod 32 of warp 0, its old value
  then shuffled to every lane of a one-warp program; a value several lanes hold, a
  fragment's row or column statistic, by the first lane and warp that hold it, the old
  value shuffled from that lane to the other lanes of its warp); on
  a scattered tile, every slot whose mask is set, at its index.  Kinds LLVM has as one
  ``atomicrmw`` (integer add/and/or/xor/min/max, f32/f64 add, exchange) are one; the rest
  (products, the float minima and maxima) and 16-bit float adds are a compare-exchange
  loop on the element's bits; ``cmpxchg`` is one ``cmpxchg``.
* ``xetile.atomic_rmw_scalar`` / ``atomic_cas_scalar``: once a program, by its thread 0,
  the old element then handed to every thread (a shuffle in a one-warp program; through
  shared memory between two barriers in a program of several warps); an index outside the
  array touches nothing and returns 0.
* ``xetile.fence``: an LLVM ``fence`` of the order (``relaxed`` as ``acq_rel``).

The memory order is LLVM's of ``sem`` (relaxed = monotonic); the scope is the system's
(LLVM's default, which includes ``device`` and ``workgroup``)."""
from __future__ import annotations

from llvmlite import ir

from ...dialects._xetile_atomic_ops import order_of
from ...errors import LoweringError
from . import warp_ops
from .lane_values import I64, Tile, Vec, bf16_to_f32, elem_of, f32_to_bf16, intrinsic, llvm_type

ORDER = {"relaxed": "monotonic", "acquire": "acquire", "release": "release", "acq_rel": "acq_rel"}
#: a failed compare-exchange's order: no release part (LLVM's rule)
FAIL = {"relaxed": "monotonic", "acquire": "acquire", "release": "monotonic", "acq_rel": "acquire"}
#: kinds that are one ``atomicrmw`` (floats: f32 and f64 only)
NATIVE = {"addi": "add", "addf": "fadd", "assign": "xchg", "maxs": "max", "mins": "min", "maxu": "umax",
          "minu": "umin", "ori": "or", "andi": "and", "xori": "xor"}
_FLOAT_MINMAX = {"maximumf": "llvm.maximum", "minimumf": "llvm.minimum", "maxnumf": "llvm.maxnum",
                 "minnumf": "llvm.minnum"}


def _suffix(t: ir.Type) -> str:
    return {"float": "f32", "double": "f64", "half": "f16", "bfloat": "bf16"}[str(t)]


def _combine(b, kind: str, old, v, op):
    """``kind(old, v)`` for the kinds a compare-exchange loop does (bf16, whose values are
    their i16 bits here, computed in f32 and rounded back to nearest even)."""
    if kind in ("mulf", "addf", *_FLOAT_MINMAX) and isinstance(old.type, ir.IntType):
        return f32_to_bf16(b, _combine(b, kind, bf16_to_f32(b, old), bf16_to_f32(b, v), op))
    if kind in ("mulf", "muli"):
        return b.fmul(old, v) if kind == "mulf" else b.mul(old, v)
    if kind in _FLOAT_MINMAX:
        return intrinsic(b, f"{_FLOAT_MINMAX[kind]}.{_suffix(old.type)}", old.type, [old, v])
    if kind == "addf":
        return b.fadd(old, v)
    raise LoweringError(f"nvptx: atomic kind {kind} is not supported on NVIDIA targets", op)


def one(b: ir.IRBuilder, kind: str, ptr, v, sem: str, op, cmp=None):
    """The atomic ``kind`` of one element at ``ptr`` with ``v`` (and ``cmp``): its old value."""
    t = v.type
    if kind == "cmpxchg":
        return b.extract_value(b.cmpxchg(ptr, cmp, v, ORDER[sem], FAIL[sem]), 0)
    native = kind in NATIVE and (kind != "addf" or str(t) in ("float", "double"))
    if native:
        return b.atomic_rmw(NATIVE[kind], ptr, v, ORDER[sem])
    bits = ir.IntType(t.width) if isinstance(t, ir.IntType) else ir.IntType({"half": 16, "bfloat": 16,
                                                                              "float": 32, "double": 64}[str(t)])
    as_bits = (lambda x: x) if isinstance(t, ir.IntType) else (lambda x: b.bitcast(x, bits))  # noqa: E731
    as_value = (lambda x: x) if isinstance(t, ir.IntType) else (lambda x: b.bitcast(x, t))  # noqa: E731
    entry = b.block
    first = b.load(ptr, typ=t)
    loop = b.append_basic_block("atomic_loop")
    done = b.append_basic_block("atomic_done")
    b.branch(loop)
    b.position_at_end(loop)
    old = b.phi(t)
    old.add_incoming(first, entry)
    new = _combine(b, kind, old, v, op)
    pair = b.cmpxchg(ptr, as_bits(old), as_bits(new), ORDER[sem], FAIL[sem])
    old.add_incoming(as_value(b.extract_value(pair, 0)), b.block)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return old


def _guarded(b, cond, make, t):
    """``make()`` where ``cond`` holds, else 0 of ``t``."""
    before = b.block
    with b.if_then(cond):
        got = make()
        then = b.block
    merged = b.phi(t)
    merged.add_incoming(got, then)
    merged.add_incoming(ir.Constant(t, 0), before)
    return merged


def tile_rmw(em, op) -> None:
    """``xetile.atomic_rmw``: one atomic an element (see the module's text)."""
    value = em.values[op.value]
    cmp = em.values[op.cmp] if op.cmp is not None else None
    sem, _ = order_of(op)
    kind = op.kind.data
    # a narrow tile is held whole by every lane (rep): lane i % 32 does element i's atomic,
    # and its old value is shuffled to every lane
    replicated = value.layout.kind == "rep"
    several = em.threads > em.target.warp_size
    if replicated and several and op.result.uses:
        raise LoweringError("nvptx: the old values of an atomic_rmw of a narrow tile (held by every lane) in a "
                            "program of several warps are not supported on NVIDIA targets (the atomic itself is: "
                            "leave its result unused, or give it a tile of at least 32 columns)", op)
    # a fragment row or column statistic (a column sum of an mma_c value: mma_c_row) is held
    # by several lanes, and maybe by every warp row: its first holder does the atomic, and
    # the other lanes of its warp take the old value from that lane
    copied = not replicated and not value.layout.owned_once()
    if copied and em.warp is not None and any(value.layout.warp_copies()) and op.result.uses:
        raise LoweringError(f"nvptx: the old values of an atomic_rmw of a {value.layout.kind} value that several "
                            f"warps hold are not supported on NVIDIA targets (the atomic itself is: leave its "
                            f"result unused)", op)
    holder = warp_ops.first_holder(em.b, em.lane, value.layout, em.warp) if copied else None
    if cmp is not None and (not isinstance(cmp, Vec) or cmp.layout != value.layout):
        raise LoweringError("nvptx: atomic_rmw cmpxchg's cmp must take its value's layout", op)
    tile = em.values[op.tile]
    t = value.slots[0].type
    if isinstance(tile, Tile):
        places = warp_ops.positions(em.b, em.lane, tile, value.layout, em.warp)
        ptrs = [(inb, em.b.gep(tile.mem.ptr, [index], source_etype=t)) for inb, index in places]
    else:
        addresses, masks, _ = em._gathered(op, value.layout)
        ptrs = list(zip(masks, addresses))
    old = []
    for i, ((cond, ptr), v) in enumerate(zip(ptrs, value.slots)):
        c = cmp.slots[i] if cmp is not None else None
        owner = i % em.target.warp_size
        if replicated:
            cond = em.b.and_(cond, em.b.icmp_unsigned("==", em.lane, ir.Constant(I64, owner)))
            if several:         # every warp holds it: warp 0's lanes do the atomics
                cond = em.b.and_(cond, em.b.icmp_unsigned("==", em.warp, ir.Constant(I64, 0)))
        elif holder is not None:
            cond = em.b.and_(cond, holder)
        got = _guarded(em.b, cond, lambda ptr=ptr, v=v, c=c: one(em.b, kind, ptr, v, sem, op, c), t)
        if replicated:
            got = warp_ops.shuffle_idx(em.b, got, owner)
        elif holder is not None and op.result.uses:
            got = warp_ops.shuffle_idx(em.b, got, warp_ops.first_copy_lane(em.b, em.lane, value.layout))
        old.append(got)
    em.values[op.result] = Vec(value.layout, elem_of(op.result.type), old)


def scalar(em, op) -> None:
    """``xetile.atomic_rmw_scalar`` / ``atomic_cas_scalar``: once a program, by thread 0."""
    b = em.b
    sem, _ = order_of(op)
    mem = em.values[op.memref]
    t = llvm_type(mem.elem)
    sizes = mem.sizes or (mem.rows, mem.cols)
    strides = mem.strides or (mem.stride, ir.Constant(I64, 1))
    index, inside = None, b.icmp_unsigned("==", em.tid, ir.Constant(I64, 0))
    for i, n, s in zip(op.indices, sizes[-len(op.indices):], strides[-len(op.indices):]):
        v = em.values[i]
        inside = b.and_(inside, b.icmp_unsigned("<", v, n))
        index = b.mul(v, s) if index is None else b.add(index, b.mul(v, s))
    ptr = b.gep(mem.ptr, [index], source_etype=t)
    if op.name == "xetile.atomic_cas_scalar":
        cmp, v = em.values[op.cmp], em.values[op.value]
        old = _guarded(b, inside, lambda: one(b, "cmpxchg", ptr, v, sem, op, cmp), t)
    else:
        v = em.values[op.value]
        old = _guarded(b, inside, lambda: one(b, op.kind.data, ptr, v, sem, op), t)
    em.values[op.result] = _from_thread0(em, old)


def _from_thread0(em, v):
    """Thread 0's ``v`` in every thread of the program."""
    b = em.b
    if em.threads <= em.target.warp_size:
        return warp_ops.shuffle_idx(b, v, 0)
    slot = ir.GlobalVariable(em.module, ir.ArrayType(v.type, 1), em.module.get_unique_name("nv_atomic_old"),
                             addrspace=3)
    slot.linkage, slot.align = "internal", 8
    slot.initializer = ir.Constant(slot.value_type, ir.Undefined)
    where = b.gep(slot, [ir.Constant(I64, 0), ir.Constant(I64, 0)], inbounds=True)
    with b.if_then(b.icmp_unsigned("==", em.tid, ir.Constant(I64, 0))):
        b.store(v, where)
    warp_ops.bar_sync(b)
    got = b.load(where)
    warp_ops.bar_sync(b)       # (a later use of the slot, in a loop, waits for every read)
    return got


def fence(em, op) -> None:
    sem, _ = order_of(op)
    em.b.fence("acq_rel" if sem == "relaxed" else sem)

