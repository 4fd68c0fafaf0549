"""The wgmma K loop of a GEMM on sm90 (Hopper's warpgroup MMA, decision 044).

A kernel whose one ``tile_mma`` sits in an ``scf.for`` with both operands staged loads
(:mod:`.smem_pipeline`'s conditions: 16-bit, loop-carried tiles moved by constants) and
its accumulator carried by the loop, over a C tile of ``BM`` in (64, 128) rows and ``BN``
a multiple of 64 up to 256, ``BK`` a multiple of 64, takes this path instead of mma.sync
ldmatrix fragments:

* the warps are ``BM / 16`` (``BM / 64`` warpgroups, warpgroup g holding rows
  64g..64g+63 of C): C's layout is ``mma_c`` over a ``(BM / 16, 1)`` warp grid, which is
  wgmma's accumulator layout (warp w of a warpgroup holds rows 16w.. as m16n8's C), so
  the epilogue, bias rows and stores are the mma.sync path's;
* the ring's stages are written by ``cp.async`` in the 128-byte swizzle: A K-major
  (blocks of 64 K columns, rows of 128 bytes), B MN-major (blocks of 64 N columns, K rows
  of 128 bytes; ``trans-b = 1``), atoms of 8 rows 1024-byte aligned;
* trip i waits for its stage, fences the async proxy, syncs, issues ``BK / 16``
  ``wgmma.mma_async m64nBNk16`` and commits them, refills the stage trip ``i - 2`` read
  (its wgmma finished: each warpgroup waited for it before this trip's barrier), then
  waits until only this trip's group is in flight (``wgmma.wait_group 1``).

Where the launch found both arrays describable by a tensor map (``tma_arrays``: 16-byte
aligned base and row pitch, decision 051), the stages are filled by TMA instead
(:mod:`.tma`): thread 0 arms the stage's mbarrier with the stage's bytes and issues one
``cp.async.bulk.tensor.2d`` a 64-element column block of A and of B (boxes 64 x BM and
64 x BK, written in the same 128-byte swizzle; the box parts past the array's edges read
as zeros); every thread waits on the stage's mbarrier at the phase of its trip.  No
``fence.proxy.async``, no copy addresses, no bounds check in the loop: the fill for trip
``i + S - 2`` is issued only where that trip runs, so no copy is in flight at the exit.

    >>> stage_bytes(128, 256, 64)
    49152
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import IntegerAttr, StringAttr

from ...dialects import _mixed
from . import smem_pipeline as sp
from . import tma, wgmma
from .lane_values import GLOBAL, I32, I64, Tile, Vec, llvm_type
from .warp_ops import lane_bases

WGMMA_ATTR = "nv.wgmma"
#: the swizzle row (bytes) and its atom (8 rows)
ROW, ATOM = 128, 1024
#: the dynamic shared memory is rounded up to the swizzle's atom inside the allocation
ALIGN_PAD = ATOM


def stage_bytes(bm: int, bn: int, bk: int) -> int:
    """One stage: A (bm x bk) and B (bk x bn), 16-bit elements, no padding."""
    return (bm + bn) * bk * 2


@dataclass
class WgPlan:
    """The wgmma GEMM of a kernel: its loop, its tile_mma, the staged loads (A, B) and the
    tile (BM, BN, BK); filled in at the loop (stages, stage base, trip)."""

    loop: object
    mma: object
    a: object
    b: object
    tile: tuple[int, int, int]
    a_type: str
    stages: int = 0
    loads: list | None = None
    aligned: list | None = None
    read_stage: ir.Value | None = None
    trip: ir.Value | None = None
    tiles: list | None = None
    threads_at: list | None = None
    #: the TMA fill (decision 051): the names of A's and B's arrays, whose tensor maps the
    #: kernel takes as its last two parameters (their addresses once bound), the loop's
    #: bounds, its induction variable and the stages' mbarriers; None: the cp.async fill
    tma_arrays: tuple[str, str] | None = None
    maps: list | None = None
    bounds: tuple | None = None
    bars: ir.Value | None = None
    iv: ir.Value | None = None
    #: the TMA store of C (16-bit, the loop's tile, after it): the store_tile op and C's
    #: array, whose tensor map follows A's and B's; None: the registers' own stores
    c_store: object = None
    c_array: str | None = None

    @property
    def grid(self) -> tuple[int, int]:
        return self.tile[0] // 16, 1

    @property
    def stage_bytes(self) -> int:
        return stage_bytes(*self.tile)

    def tensor_maps(self) -> list[tuple[str, int, int]]:
        """(array, box rows, box columns) of each tensor map the kernel takes, in order."""
        if self.tma_arrays is None:
            return []
        bm, _, bk = self.tile
        maps = [(self.tma_arrays[0], bm, 64), (self.tma_arrays[1], bk, 64)]
        return maps + [(self.c_array, bm, 64)] if self.c_array else maps


def _staged_operand(body, args, yielded, value, delta_ok):
    """The load_tile producing ``value`` when it is a staged load of the loop (else None)."""
    load = value.owner
    if getattr(load, "name", None) != "xetile.load_tile" or load.padding is not None or load.parent_block() is not body:
        return None
    if load.tile not in args or not sp._is16(load.value.type.element_type):
        return None
    step = yielded[args.index(load.tile)].owner
    if getattr(step, "name", None) != "xetile.update_tile_offset" or step.tile is not load.tile \
            or step.indices is not None:
        return None
    delta = [sp._const_of(v) for v in _mixed.mixed(step, step.offset_values())]
    return load if None not in delta and delta_ok(delta) else None


def _array_of(func, loop, args, load, target, rows: int):
    """The name of the kernel's array parameter ``load`` tiles when a tensor map can
    describe its box (a 2-D row-major parameter, the box's ``rows`` within TMA's limit),
    else None."""
    init = loop.iter_args[args.index(load.tile)].owner
    if getattr(init, "name", None) != "xetile.init_tile" or rows > target.tma_box_max:
        return None
    source = init.source
    if source not in func.body.block.args or len(source.type.get_shape()) != 2:
        return None
    if load.tile.type.attr.order_list != (1, 0) or 64 * 2 > target.tma_swizzle_bytes:
        return None
    return source.name_hint or f"arg{source.index}"


def plan_kernel(func, target, num_warps: int | None, num_stages: int | None,
                tma_arrays: tuple = ()) -> WgPlan | None:
    """The wgmma plan of ``func`` on ``target``, or None where the kernel does not take it
    (then the mma.sync path runs); ``tma_arrays`` names the arrays the launch found
    describable by tensor maps (the fill is TMA's where it holds both operands')."""
    if not target.wgmma or (num_stages or target.smem_stages) < 3:
        return None
    mmas = [op for op in func.walk() if op.name == "xetile.tile_mma"]
    if len(mmas) != 1:
        return None
    mma = mmas[0]
    loop = mma.parent_op()
    if getattr(loop, "name", None) != "scf.for" or mma.c is None:
        return None
    body = loop.body.block
    args, yielded = list(body.args[1:]), list(body.last_op.operands)
    if mma.c not in args or yielded[args.index(mma.c)] is not mma.output:
        return None
    if len(list(mma.c.uses)) != 1 or len(list(mma.output.uses)) != 1:
        return None
    (bm, bk), (bk2, bn) = mma.a.type.get_shape(), mma.b.type.get_shape()
    a = _staged_operand(body, args, yielded, mma.a, lambda d: d[0] == 0 and d[1] == bk)
    b = _staged_operand(body, args, yielded, mma.b, lambda d: d[0] == bk and d[1] == 0)
    if a is None or b is None or len(list(a.value.uses)) != 1 or len(list(b.value.uses)) != 1:
        return None
    elem_a, elem_b = a.value.type.element_type, b.value.type.element_type
    if elem_a != elem_b or bk != bk2 or bm not in (64, 128) or bk % 64 or bn % 64 or bn > 256:
        return None
    if elem_a.__class__.__name__ not in ("Float16Type", "BFloat16Type"):   # (fp8: mma.sync on f16 conversions)
        return None
    if num_warps not in (None, bm // 16):
        return None
    a_type = "bf16" if elem_a.__class__.__name__ == "BFloat16Type" else "f16"
    if not any(s.a_type == a_type for s in target.wgmma):
        return None
    plan = WgPlan(loop, mma, a, b, (bm, bn, bk), a_type)
    if target.tma and tma_arrays:
        names = (_array_of(func, loop, args, a, target, bm), _array_of(func, loop, args, b, target, bk))
        if None not in names and set(names) <= set(tma_arrays) and names[0] != names[1]:
            plan.tma_arrays = names
            plan.c_store, plan.c_array = _tma_store_of(func, loop, plan, target, tma_arrays)
    return plan


def _tma_store_of(func, loop, plan: WgPlan, target, tma_arrays: tuple):
    """(store_tile op, array name) of the kernel's one store where TMA can write it from
    the ring's memory: after the loop, a 16-bit [BM, BN] value to a ``[BM, BN]`` tile of a
    2-D row-major parameter the launch found describable (not A's or B's); else (None, None)."""
    stores = [op for op in func.walk() if op.name in ("xetile.store_tile", "xetile.store_scatter",
                                                      "xetile.atomic_rmw", "memref.store")]
    if len(stores) != 1 or stores[0].name != "xetile.store_tile":
        return None, None
    st = stores[0]
    parent = st.parent_op()
    while parent is not None and parent is not loop:
        parent = parent.parent_op()
    bm, bn, _ = plan.tile
    if parent is loop or list(st.value.type.get_shape()) != [bm, bn] or not sp._is16(st.value.type.element_type):
        return None, None
    init = st.tile.owner
    if getattr(init, "name", None) != "xetile.init_tile" or init.source not in func.body.block.args:
        return None, None
    source = init.source
    if len(source.type.get_shape()) != 2 or st.tile.type.attr.order_list != (1, 0) or bm > target.tma_box_max:
        return None, None
    name = source.name_hint or f"arg{source.index}"
    return (st, name) if name in tma_arrays and name not in plan.tma_arrays else (None, None)


# --- the loop -------------------------------------------------------------------------------
def plan_loop(em, op) -> WgPlan | None:
    plan = em.wgmma
    if plan is None or plan.loop is not op:
        return None
    stages = em.stages
    while stages > 3 and stages * (plan.stage_bytes + 8) + ALIGN_PAD > em.target.smem_per_block:
        stages -= 1
    plan.stages = stages
    args = list(op.body.block.args[1:])
    plan.loads = [(plan.a, args.index(plan.a.tile)), (plan.b, args.index(plan.b.tile))]
    op.attributes[sp.STAGES_ATTR] = IntegerAttr(stages, 64)
    plan.a.attributes[sp.SMEM_ATTR] = StringAttr("swizzle128.k")
    plan.b.attributes[sp.SMEM_ATTR] = StringAttr("swizzle128.mn")
    plan.mma.attributes[WGMMA_ATTR] = StringAttr(f"m64n{plan.tile[1]}k16")
    return plan


def staged(plan: WgPlan):
    """(op, entry) pairs for the emitter's staged map."""
    return [(load, (plan, load)) for load, _ in plan.loads]


def _base(em) -> ir.Value:
    """The ring's base: the dynamic shared memory rounded up to a swizzle atom."""
    b = em.b
    raw = sp.smem_base(em)
    return b.and_(b.add(raw, ir.Constant(I32, ATOM - 1)), ir.Constant(I32, -ATOM))


def prologue(em, plan: WgPlan, inits: list) -> None:
    b = em.b
    if em.smem_loops:
        sp.barrier(b)
    em.smem_loops += 1
    if plan.tma_arrays is not None:
        _tma_prologue(em, plan, inits)
        return
    em.smem_bytes = max(em.smem_bytes, plan.stages * plan.stage_bytes + ALIGN_PAD)
    plan.aligned = []
    for load, index in plan.loads:
        tile = inits[index]
        mem = tile.mem
        bits = b.or_(b.and_(b.ptrtoint(mem.ptr, I64), ir.Constant(I64, 15)),
                     b.and_(b.or_(mem.stride, tile.col), ir.Constant(I64, 7)))
        plan.aligned.append(b.icmp_unsigned("==", bits, ir.Constant(I64, 0)))
    bm, bn, bk = plan.tile
    plan.threads_at = [thread_copies(em, inits[plan.loads[0][1]].mem, bm, bk),
                       thread_copies(em, inits[plan.loads[1][1]].mem, bk, bn)]
    for trip in range(plan.stages - 2):
        _fill_all(em, plan, [inits[i] for _, i in plan.loads], trip, ir.Constant(I64, trip))
        sp.commit(b)


def _fill_all(em, plan: WgPlan, tiles: list, ahead: int, stage: ir.Value) -> None:
    b = em.b
    bm, bn, bk = plan.tile
    deltas = ((0, bk), (bk, 0))
    for (load, _), tile, ok, delta, is_b in zip(plan.loads, tiles, plan.aligned, deltas, (False, True)):
        moved = Tile(tile.mem, b.add(tile.row, ir.Constant(I64, delta[0] * ahead)),
                     b.add(tile.col, ir.Constant(I64, delta[1] * ahead)), tile.shape) if ahead else tile
        _fill(em, plan, load, moved, stage, ok, is_b)


def _fill(em, plan: WgPlan, load, tile: Tile, stage: ir.Value, aligned, is_b: bool) -> None:
    """The program's threads copy ``tile`` into its region of stage ``stage`` in the
    128-byte swizzle: chunk c (16 bytes) is row ``c // (cols / 8)``, chunk ``cc`` of it;
    it lands in column block ``cc // 8`` (64 elements), row ``row``, 16-byte slot
    ``(cc % 8) ^ (row % 8)``.  One bounds check a tile: a tile inside the array (and
    16-byte aligned) takes :func:`_fill_interior`, unchecked; an edge tile the clamped
    copies of :func:`_fill_rows`; an unaligned array the guarded loop of :func:`_fill_loop`."""
    b = em.b
    bm, bn, bk = plan.tile
    rows, cols = (bk, bn) if is_b else (bm, bk)
    per_row, chunks, threads = cols // 8, rows * cols // 8, em.threads
    region = stage_bytes(bm, 0, bk) if is_b else 0
    base = b.add(_base(em), sp._i32(b, b.add(b.mul(stage, ir.Constant(I64, plan.stage_bytes)),
                                             ir.Constant(I64, region))))
    t = llvm_type(load.value.type.element_type)
    step_rows = threads // per_row if threads % per_row == 0 else 0
    by_rows = step_rows and step_rows % 8 == 0 and chunks % threads == 0
    if by_rows:
        inside = b.and_(aligned, _inside(b, tile, rows, cols))
        with b.if_else(inside) as (interior, edge):
            with interior:
                _fill_interior(em, plan.threads_at[is_b], tile, base, chunks // threads, step_rows)
            with edge:
                with b.if_else(aligned) as (fast, slow):
                    with fast:
                        _fill_loop(em, tile, base, rows, per_row, chunks, t, True)
                    with slow:
                        _fill_loop(em, tile, base, rows, per_row, chunks, t, False)
        return
    with b.if_else(aligned) as (fast, slow):
        with fast:
            _fill_chunks(em, tile, base, rows, per_row, chunks, t, True)
        with slow:
            _fill_loop(em, tile, base, rows, per_row, chunks, t, False)


def _inside(b, tile: Tile, rows: int, cols: int) -> ir.Value:
    """Whether the whole ``rows x cols`` tile at (tile.row, tile.col) lies in its array
    (one check a tile: the interior copies need none a chunk)."""
    mem, c64 = tile.mem, lambda v: ir.Constant(I64, v)  # noqa: E731
    lo = b.icmp_signed(">=", b.or_(tile.row, tile.col), c64(0))
    rows_in = b.icmp_signed("<=", b.add(tile.row, c64(rows)), mem.rows)
    cols_in = b.icmp_signed("<=", b.add(tile.col, c64(cols)), mem.cols)
    return b.and_(lo, b.and_(rows_in, cols_in))


@dataclass
class ThreadCopies:
    """What one thread's interior copies of an operand share over the loop (computed once
    before it): the byte offset of its first chunk from the tile's first element, the
    bytes between its chunks in global memory, and its first chunk's offset in the
    operand's region of a stage (the swizzle's slot; the next chunks are ``step_rows``
    rows, whole atoms, further)."""

    src: ir.Value
    src_step: ir.Value
    dst: ir.Value


def thread_copies(em, mem, rows: int, cols: int) -> ThreadCopies:
    """The :class:`ThreadCopies` of this thread for an operand tile of ``rows x cols`` of
    the array ``mem``."""
    b = em.b
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    per_row = cols // 8
    step_rows = max(em.threads // per_row, 1)
    row0, cc = b.udiv(em.tid, c64(per_row)), b.urem(em.tid, c64(per_row))
    slot = b.xor(b.and_(cc, c64(7)), b.and_(row0, c64(7)))
    dst = b.add(b.mul(b.lshr(cc, c64(3)), c64(rows * ROW)), b.add(b.mul(row0, c64(ROW)), b.mul(slot, c64(16))))
    src = b.mul(b.add(b.mul(row0, mem.stride), b.mul(cc, c64(8))), c64(2))
    return ThreadCopies(src, b.mul(mem.stride, c64(2 * step_rows)), sp._i32(b, dst))


def _fill_interior(em, copies: ThreadCopies, tile: Tile, base, count: int, step_rows: int) -> None:
    """The copies of a tile inside its array: one 64-bit source address a tile, then
    ``count`` cp.async of 16 bytes, no source size (nothing to zero-fill), their global
    addresses ``src_step`` apart and their shared ones constants apart."""
    b, mem = em.b, tile.mem
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    first = b.mul(b.add(b.mul(tile.row, mem.stride), tile.col), c64(2))
    src0 = b.add(b.add(b.ptrtoint(mem.ptr, I64), first), copies.src)
    dst0 = b.add(base, copies.dst)
    src = src0
    for j in range(count):
        src = b.add(src, copies.src_step) if j else src0
        dst = b.add(dst0, ir.Constant(I32, j * step_rows * ROW)) if j else dst0
        sp._asm(b, "cp.async.cg.shared.global [$0], [$1], 16;", "r,l", [dst, b.inttoptr(src, GLOBAL)])


def _fill_chunks(em, tile, base, rows, per_row, chunks, t, async_copy) -> None:
    b, threads = em.b, em.threads
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    for j in range(-(-chunks // threads)):
        c = b.add(em.tid, c64(j * threads))
        row, cc = b.udiv(c, c64(per_row)), b.urem(c, c64(per_row))
        slot = b.xor(b.and_(cc, c64(7)), b.and_(row, c64(7)))
        off = b.add(b.mul(b.lshr(cc, c64(3)), c64(rows * ROW)), b.add(b.mul(row, c64(ROW)), b.mul(slot, c64(16))))
        dst = b.add(base, sp._i32(b, off))
        if (j + 1) * threads > chunks:
            with b.if_then(b.icmp_unsigned("<", c, c64(chunks))):
                sp.copy_chunk(em, tile, dst, row, cc, tile.mem, t, async_copy)
        else:
            sp.copy_chunk(em, tile, dst, row, cc, tile.mem, t, async_copy)


def _fill_loop(em, tile, base, rows, per_row, chunks, t, async_copy: bool) -> None:
    """The copies of an edge tile as a loop over this thread's chunks (neither LLVM nor
    ptxas unrolls it): one chunk's addresses and loads
    live at a time, not every chunk's beside the accumulators.  ``async_copy``: clamped
    cp.async zero-filled past the array's edges (aligned arrays), else guarded 16-bit
    loads and shared stores."""
    b, threads = em.b, em.threads
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    count = b.udiv(b.sub(c64(chunks + threads - 1), em.tid), c64(threads))
    # the count through an opaque move: where threads divide the chunks LLVM would know it
    # and unroll the loop, every chunk's addresses live at once again
    count = b.asm(ir.FunctionType(I64, [I64]), "mov.b64 $0, $1;", "=l,l", [count], False)
    pre = b.block
    header, body, done = (b.append_basic_block(n) for n in ("fill.header", "fill.body", "fill.exit"))
    b.branch(header)
    b.position_at_end(header)
    j = b.phi(I64)
    j.add_incoming(c64(0), pre)
    b.asm(ir.FunctionType(ir.VoidType(), []), '.pragma \\22nounroll\\22;', "", [], True)   # nor ptxas (\\22: a quote)
    b.cbranch(b.icmp_unsigned("<", j, count), body, done)
    b.position_at_end(body)
    c = b.add(em.tid, b.mul(j, c64(threads)))
    row, cc = b.udiv(c, c64(per_row)), b.urem(c, c64(per_row))
    slot = b.xor(b.and_(cc, c64(7)), b.and_(row, c64(7)))
    off = b.add(b.mul(b.lshr(cc, c64(3)), c64(rows * ROW)), b.add(b.mul(row, c64(ROW)), b.mul(slot, c64(16))))
    sp.copy_chunk(em, tile, b.add(base, sp._i32(b, off)), row, cc, tile.mem, t, async_copy)
    j.add_incoming(b.add(j, c64(1)), b.block)
    b.branch(header)
    b.position_at_end(done)


# --- the TMA fill (decision 051) ---------------------------------------------------------------
def _tma_prologue(em, plan: WgPlan, inits: list) -> None:
    """Thread 0 initialises two mbarriers a stage (after the stages, 8 bytes each): the
    stage's ``full`` barrier (one arrival, the copies' bytes) and its ``empty`` barrier
    (one arrival a thread: every thread past the wgmma that read the stage), makes that
    visible to the async proxy and prefetches the tensor maps; a barrier; then it fills
    the first ``S - 1`` stages, each only where its trip runs."""
    b = em.b
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    em.smem_bytes = max(em.smem_bytes, plan.stages * (plan.stage_bytes + 16) + ALIGN_PAD)
    plan.bars = b.add(_base(em), ir.Constant(I32, plan.stages * plan.stage_bytes))
    lower, upper, step = plan.bounds
    leader = b.icmp_unsigned("==", em.tid, c64(0))
    with b.if_then(leader):
        for s in range(plan.stages):
            tma.init(b, _bar(b, plan, ir.Constant(I32, s)), 1)
            tma.init(b, _empty_bar(b, plan, ir.Constant(I32, s)), em.threads)
        tma.fence_init(b)
        for addr in plan.maps:
            tma.prefetch_map(b, addr)
    sp.barrier(b)
    tiles = [inits[i] for _, i in plan.loads]
    for trip in range(plan.stages - 1):
        runs = b.icmp_signed("<", b.add(lower, b.mul(step, c64(trip))), upper)
        with b.if_then(b.and_(leader, runs)):
            _tma_fill(em, plan, tiles, trip, ir.Constant(I32, trip))


def _bar(b, plan: WgPlan, stage: ir.Value) -> ir.Value:
    """Stage ``stage``'s ``full`` mbarrier (its copies landed)."""
    return b.add(plan.bars, b.mul(stage, ir.Constant(I32, 8)))


def _empty_bar(b, plan: WgPlan, stage: ir.Value) -> ir.Value:
    """Stage ``stage``'s ``empty`` mbarrier (every thread's wgmma reading it done)."""
    return b.add(plan.bars, b.add(b.mul(stage, ir.Constant(I32, 8)), ir.Constant(I32, 8 * plan.stages)))


def _tma_fill(em, plan: WgPlan, tiles: list, ahead: int, stage: ir.Value) -> None:
    """Stage ``stage`` armed with its bytes and filled by TMA with the tiles ``ahead``
    trips past ``tiles``: A's 64-column blocks (box 64 x BM) ``bm * 128`` bytes apart,
    B's (box 64 x BK) ``bk * 128`` apart, the layout the descriptors of :func:`mma` read."""
    b = em.b
    bm, bn, bk = plan.tile
    i32 = lambda v: sp._i32(b, v)  # noqa: E731
    bar = _bar(b, plan, stage)
    tma.arrive_expect_tx(b, bar, plan.stage_bytes)
    base = b.add(_base(em), b.mul(stage, ir.Constant(I32, plan.stage_bytes)))
    ta, tb = tiles
    a_row, a_col = i32(ta.row), i32(b.add(ta.col, ir.Constant(I64, bk * ahead)))
    for kb in range(bk // 64):
        dst = b.add(base, ir.Constant(I32, kb * bm * ROW))
        tma.load_2d(b, dst, plan.maps[0], b.add(a_col, ir.Constant(I32, 64 * kb)), a_row, bar)
    b_row, b_col = i32(b.add(tb.row, ir.Constant(I64, bk * ahead))), i32(tb.col)
    b_base = b.add(base, ir.Constant(I32, stage_bytes(bm, 0, bk)))
    for nb in range(bn // 64):
        dst = b.add(b_base, ir.Constant(I32, nb * bk * ROW))
        tma.load_2d(b, dst, plan.maps[1], b.add(b_col, ir.Constant(I32, 64 * nb)), b_row, bar)


def begin_trip(em, plan: WgPlan, iv, lower, step, tiles: list) -> None:
    """At the top of a trip: wait for this trip's copies, fence them for the async proxy,
    sync (every warpgroup has then finished the wgmma of trip i - 2).  The fence is a
    ``MEMBAR.ALL.CTA`` in the SASS; Triton's cp.async ring has none (its omission for
    cp.async stages is untested on a GPU, decision 044)."""
    b = em.b
    plan.trip = b.sdiv(b.sub(iv, lower), step)
    plan.read_stage = b.urem(plan.trip, ir.Constant(I64, plan.stages))
    plan.tiles = [tiles[i] for _, i in plan.loads]
    if plan.tma_arrays is not None:
        # this trip's stage filled (its full mbarrier's phase (trip / S) & 1 complete); no
        # barrier: the empty mbarriers order the refills (:func:`mma`)
        phase = sp._i32(b, b.and_(b.udiv(plan.trip, ir.Constant(I64, plan.stages)), ir.Constant(I64, 1)))
        tma.wait_parity(b, _bar(b, plan, sp._i32(b, plan.read_stage)), phase)
        plan.iv = iv
        return
    sp.wait_group(b, plan.stages - 3)
    wgmma.proxy_fence(b)
    sp.barrier(b)


def read(em, plan: WgPlan, load):
    """A staged operand: no registers; the tile_mma reads it through descriptors."""
    return load


def mma(em, plan: WgPlan, c: Vec) -> Vec:
    """This trip's K steps as wgmma on the current stage, committed; the refill of the
    stage trip i - 2 read; then wait until only this trip's group is in flight."""
    b = em.b
    bm, bn, bk = plan.tile
    stage = b.add(_base(em), sp._i32(b, b.mul(plan.read_stage, ir.Constant(I64, plan.stage_bytes))))
    group = sp._i32(b, b.lshr(em.warp, ir.Constant(I64, 2))) if em.warp is not None else ir.Constant(I32, 0)
    a_addr = b.add(stage, b.mul(group, ir.Constant(I32, 64 * ROW)))
    b_addr = b.add(stage, ir.Constant(I32, stage_bytes(bm, 0, bk)))
    desc_a = wgmma.descriptor(b, a_addr, stride_bytes=ATOM)
    desc_b = wgmma.descriptor(b, b_addr, stride_bytes=ATOM, lead_bytes=bk * ROW)
    acc = list(c.slots)
    wgmma.fence(b)
    for k in range(bk // 16):
        a_off = (k // 4) * bm * ROW + 32 * (k % 4)       # K-major: 32 bytes a step in the row
        b_off = k * 16 * ROW                             # MN-major: 16 K rows a step
        da = b.add(desc_a, ir.Constant(I64, a_off >> 4)) if a_off else desc_a
        db = b.add(desc_b, ir.Constant(I64, b_off >> 4)) if b_off else desc_b
        acc = wgmma.mma_async(b, acc, da, db, bn, plan.a_type, scale_d=1, trans_b=1)
    wgmma.commit_group(b)
    if plan.tma_arrays is not None:
        acc = wgmma.wait_group(b, 1, acc)
        _tma_refill(em, plan)
        return Vec(c.layout, c.elem, acc)
    write = b.urem(b.add(plan.trip, ir.Constant(I64, plan.stages - 2)), ir.Constant(I64, plan.stages))
    _fill_all(em, plan, plan.tiles, plan.stages - 2, write)
    sp.commit(b)
    acc = wgmma.wait_group(b, 1, acc)
    return Vec(c.layout, c.elem, acc)


def _tma_refill(em, plan: WgPlan) -> None:
    """After this trip's ``wait_group 1`` (trip i - 1's wgmma done in this warpgroup):
    every thread arrives on the empty mbarrier of trip i - 1's stage; thread 0 waits for
    that phase (every warpgroup past it), then refills the stage with trip i + S - 1's
    tiles where that trip runs.  Trip 0 refills stage S - 1, which no trip has read yet."""
    b = em.b
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    S = plan.stages
    _, upper, step = plan.bounds
    prev = b.urem(b.add(plan.trip, c64(S - 1)), c64(S))           # (i - 1) mod S
    stage = sp._i32(b, prev)
    empty = _empty_bar(b, plan, stage)
    later = b.icmp_signed(">", plan.trip, c64(0))
    with b.if_then(later):
        tma.arrive(b, empty)
    runs = b.icmp_signed("<", b.add(plan.iv, b.mul(step, c64(S - 1))), upper)
    with b.if_then(b.and_(b.icmp_unsigned("==", em.tid, c64(0)), runs)):
        with b.if_then(later):
            phase = sp._i32(b, b.and_(b.udiv(b.sub(plan.trip, c64(1)), c64(S)), c64(1)))
            tma.wait_parity(b, empty, phase)
        _tma_fill(em, plan, plan.tiles, S - 1, stage)


def finish(em, plan: WgPlan = None) -> None:
    if em.wgmma is None or em.wgmma.tma_arrays is None:   # TMA: no fill past the last trip
        sp.wait_group(em.b, 0)


def store_c(em, plan: WgPlan, value: Vec, tile: Tile) -> bool:
    """C's 16-bit tile through shared memory and TMA (``plan.c_store``): a barrier (every
    warpgroup's last wgmma has read the ring), each thread's pairs into the ring's first
    ``BM x BN`` elements as ``BN / 64`` column blocks of ``BM`` rows of 128 bytes in the
    128-byte swizzle (A's layout; conflict-free: a warp's 8 rows land in 8 different 16-byte
    slots), the async proxy fenced, a barrier, then thread 0 stores each block with one
    ``cp.async.bulk.tensor`` (the map clips what lies past the array: no bounds checks)
    and waits until the copies have read shared memory.  False (nothing emitted) where
    the value is not in the accumulator's layout."""
    bm, bn, _ = plan.tile
    layout = value.layout
    if layout.kind != "mma_c" or tuple(layout.shape) != (bm, bn) or tuple(layout.warps) != plan.grid:
        return False
    b = em.b
    i32 = lambda v: ir.Constant(I32, v)  # noqa: E731
    sp.barrier(b)
    base = _base(em)
    r0, c0 = lane_bases(b, em.lane, layout, em.warp)
    r0, c0 = sp._i32(b, r0), sp._i32(b, c0)
    # row r0 + dr with dr a multiple of 8: its swizzle phase is r0 % 8; c0 + dc stays in
    # the 16-byte chunk (dc % 64) // 8 of its block
    phase = b.shl(b.and_(r0, i32(7)), i32(4))
    thread = b.add(base, b.add(b.mul(r0, i32(ROW)), b.shl(c0, i32(1))))
    slots = layout.slots()
    i = 0
    vals = value.slots
    half2 = ir.VectorType(vals[0].type, 2)
    while i < len(slots):
        (dr, dc) = slots[i]
        pair = i + 1 < len(slots) and slots[i + 1] == (dr, dc + 1) and dc % 2 == 0
        blk, chunk, within = dc // 64, (dc % 64) // 8, (dc % 8) * 2
        addr = b.add(thread, i32(blk * bm * ROW + dr * ROW + within))
        addr = b.add(addr, b.xor(phase, i32(chunk * 16)))
        if pair:
            vec = b.insert_element(b.insert_element(ir.Constant(half2, ir.Undefined), vals[i], i32(0)),
                                   vals[i + 1], i32(1))
            tma.st_shared_b32(b, addr, b.bitcast(vec, I32))
            i += 2
        else:
            tma.st_shared_b16(b, addr, b.bitcast(vals[i], ir.IntType(16)))
            i += 1
    tma.fence_proxy_async_shared(b)
    sp.barrier(b)
    row, col = sp._i32(b, tile.row), sp._i32(b, tile.col)
    with b.if_then(b.icmp_unsigned("==", em.tid, ir.Constant(I64, 0))):
        for blk in range(bn // 64):
            tma.store_2d(b, plan.maps[2], b.add(col, i32(64 * blk)), row, b.add(base, i32(blk * bm * ROW)))
        tma.store_commit_and_wait(b)
    return True


def drain(em, value: Vec) -> Vec:
    """After the loop: the last wgmma group done before C is read, then each accumulator
    through ``add.rn.f32 x, -0.0`` (exact: x + -0 is x for every x).  Without it, where
    the first reader of an accumulator is a conversion (a 16-bit C, no epilogue), ptxas
    serializes every wgmma of the loop (its warning C7514: "non wgmma instructions
    reading accumulator registers")."""
    b = em.b
    done = wgmma.wait_group(b, 0, list(value.slots))
    f32 = done[0].type
    done = [b.asm(ir.FunctionType(f32, [f32]), "add.rn.f32 $0, $1, 0f80000000;", "=f,f", [v], False) for v in done]
    return Vec(value.layout, value.elem, done)
