"""The shared-memory staged K loop of a GEMM on NVIDIA targets.

A ``load_tile`` in the body of an ``scf.for`` whose value is a tile_mma A or B fragment
(``mma_a``/``mma_b``), of a 16-bit element type, over a tile the loop carries and moves
by a constant offset each trip (``update_tile_offset(t, dr, dc)`` yielded for ``t``), is
*staged*: the program's threads (all its warps) copy the tile from global into a ring of
``S`` shared-memory stages with ``cp.async`` (16 bytes a thread a copy, zero-filled past
the array's edges), ``S - 1`` trips ahead of its use, and each warp reads its fragments
out of the stage with ``ldmatrix`` (``.trans`` for B, whose rows are K).  One barrier a
trip: trip ``i`` waits for its own copies (``cp.async.wait_group S - 2``), syncs, then
refills the stage trip ``i - 1`` read.  Rows of a stage are padded by 16 bytes, so the
row pitch is an odd multiple of 16 bytes and the 8 rows of an ``ldmatrix`` phase land in
8 different 16-byte bank groups.

When the array's base, row pitch and the tile's column are not 16-byte aligned (checked
once before the loop), the same ring is filled by guarded 16-bit loads and shared stores
instead.

A B operand read through an ``order = [0, 1]`` tile (a flash attention's K^T over the
row-major K) is staged as the array holds it, N rows of K elements, and read with plain
``ldmatrix`` (its 8 x 8 matrices' rows are B's columns: b0b1 of lane l at n = g, k = 2t).

    >>> pitch_bytes(32, 2)
    80
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import IntegerAttr, StringAttr

from ...dialects import _mixed

from .lane_values import F16, I16, I32, I64, Tile, Vec, llvm_type

SMEM = ir.PointerType(addrspace=3)
STAGES_ATTR, SMEM_ATTR = "nv.stages", "nv.smem"


def pitch_bytes(cols: int, elem_bytes: int) -> int:
    """Bytes of one row of a stage: the tile's row plus 16 bytes (an odd multiple of 16
    bytes whenever the row is a multiple of 32 bytes)."""
    row = cols * elem_bytes
    return row + 16 if (row // 16) % 2 == 0 else row


@dataclass
class Staged:
    """One staged load: its op, the loop-carried tile (index among the iter args), the
    fragment layout, the tile's per-trip move and its place in a stage."""

    op: object
    arg_index: int
    layout: object
    delta: tuple[int, int]
    shape: tuple[int, int]
    elem: object
    pitch: int = 0
    offset: int = 0
    #: an ``order = [0, 1]`` tile: ``shape`` and ``delta`` are the array's (rows, columns)
    transposed: bool = False

    @property
    def bytes(self) -> int:
        return self.shape[0] * self.pitch


@dataclass
class Plan:
    """The staged loads of one loop and the ring they share."""

    loads: list
    stages: int
    stage_bytes: int
    aligned: list | None = None
    read_stage: ir.Value | None = None


def _const_of(v) -> int | None:
    if isinstance(v, int):
        return v
    owner = getattr(v, "owner", None)
    if getattr(owner, "name", None) == "arith.constant" and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _is16(elem) -> bool:
    return elem.__class__.__name__ in ("Float16Type", "BFloat16Type")


def plan_loop(em, op) -> Plan | None:
    """The staging of loop ``op``'s fragment loads, or None where none qualifies."""
    body = op.body.block
    yielded = body.last_op.operands
    args = list(body.args[1:])
    loads = []
    for inner in body.ops:
        if inner.name != "xetile.load_tile" or inner.padding is not None:
            continue
        layout = em.layouts.get(inner.value)
        if layout is None or layout.kind not in ("mma_a", "mma_b") or not _is16(inner.value.type.element_type):
            continue
        if inner.tile not in args:
            continue
        index = args.index(inner.tile)
        step = yielded[index].owner
        if getattr(step, "name", None) != "xetile.update_tile_offset" or step.tile is not inner.tile \
                or step.indices is not None:
            continue
        delta = [_const_of(v) for v in _mixed.mixed(step, step.offset_values())]
        rows, cols = inner.value.type.get_shape()
        transposed = inner.tile.type.attr.order_list == (0, 1)
        if transposed and layout.kind != "mma_b":
            continue
        if transposed:      # the array's rows are the tile's columns
            rows, cols, delta = cols, rows, delta[::-1]
        if None in delta or cols % 8 or rows % (8 if transposed else 16):
            continue
        loads.append(Staged(inner, index, layout, tuple(delta), (rows, cols), inner.value.type.element_type,
                            pitch_bytes(cols, 2), transposed=transposed))
    if not loads or em.stages < 2:
        return None
    offset = 0
    for s in loads:
        s.offset, offset = offset, offset + s.bytes
    target = em.target
    stages = em.stages
    while stages > 2 and stages * offset > target.smem_per_block:
        stages -= 1
    if stages * offset > target.smem_per_block:
        return None
    op.attributes[STAGES_ATTR] = IntegerAttr(stages, 64)
    for s in loads:
        trans = s.layout.kind == "mma_b" and not s.transposed
        s.op.attributes[SMEM_ATTR] = StringAttr("ldmatrix.trans" if trans else "ldmatrix")
    return Plan(loads, stages, offset)


# --- PTX pieces ----------------------------------------------------------------------------
def _asm(b, text: str, constraints: str, args: list, ret: ir.Type = ir.VoidType()):
    ftype = ir.FunctionType(ret, [a.type for a in args])
    clobber = "~{memory}"
    constraints = f"{constraints},{clobber}" if constraints else clobber
    return b.asm(ftype, text, constraints, args, True)


def barrier(b) -> None:
    _asm(b, "bar.sync 0;", "", [])


def commit(b) -> None:
    _asm(b, "cp.async.commit_group;", "", [])


def wait_group(b, pending: int) -> None:
    _asm(b, f"cp.async.wait_group {pending};", "", [])


def smem_base(em) -> ir.Value:
    """The 32-bit shared address of the program's dynamic shared memory."""
    if em.smem is None:
        em.smem = ir.GlobalVariable(em.module, ir.ArrayType(ir.IntType(8), 0), "nv_smem", addrspace=3)
        em.smem.linkage = "external"
        em.smem.align = 16
    return em.b.ptrtoint(em.smem, I32)


def _i32(b, v):
    return b.trunc(v, I32) if v.type != I32 else v


# --- the loop ------------------------------------------------------------------------------
def prologue(em, plan: Plan, inits: list) -> None:
    """Before the loop: alignment checks, then the first ``S - 1`` trips' copies."""
    b = em.b
    if em.smem_loops:
        barrier(b)          # an earlier staged loop's warps may still read its ring
    em.smem_loops += 1
    em.smem_bytes = max(em.smem_bytes, plan.stages * plan.stage_bytes)
    plan.aligned = []
    for s in plan.loads:
        tile = _array_view(inits[s.arg_index], s)
        mem = tile.mem
        if s.delta[1] % 8:
            plan.aligned.append(ir.Constant(ir.IntType(1), 0))
            continue
        bits = b.or_(b.and_(b.ptrtoint(mem.ptr, I64), ir.Constant(I64, 15)),
                     b.and_(b.or_(mem.stride, tile.col), ir.Constant(I64, 7)))
        plan.aligned.append(b.icmp_unsigned("==", bits, ir.Constant(I64, 0)))
    for trip in range(plan.stages - 1):
        for s, ok in zip(plan.loads, plan.aligned):
            fill(em, plan, s, _moved(b, _array_view(inits[s.arg_index], s), s.delta, trip), ir.Constant(I64, trip),
                 ok)
        commit(b)


def begin_trip(em, plan: Plan, iv, lower, step, tiles: list) -> None:
    """At the top of a trip: wait for this trip's stage, sync, refill the previous one."""
    b = em.b
    s_count = plan.stages
    trip = b.sdiv(b.sub(iv, lower), step)
    plan.read_stage = b.urem(trip, ir.Constant(I64, s_count))
    write = b.urem(b.add(trip, ir.Constant(I64, s_count - 1)), ir.Constant(I64, s_count))
    wait_group(b, s_count - 2)
    barrier(b)
    for s, ok in zip(plan.loads, plan.aligned):
        fill(em, plan, s, _moved(b, _array_view(tiles[s.arg_index], s), s.delta, s_count - 1), write, ok)
    commit(b)


def finish(em, plan=None) -> None:
    wait_group(em.b, 0)


def _array_view(tile: Tile, s: Staged) -> Tile:
    """The tile as the array holds it: an ``order = [0, 1]`` tile's rows and columns swapped."""
    if not tile.transposed:
        return tile
    return Tile(tile.mem, tile.col, tile.row, s.shape)


def _moved(b, tile: Tile, delta: tuple[int, int], trips: int) -> Tile:
    if not trips:
        return tile
    return Tile(tile.mem, b.add(tile.row, ir.Constant(I64, delta[0] * trips)),
                b.add(tile.col, ir.Constant(I64, delta[1] * trips)), tile.shape)


def fill(em, plan: Plan, s: Staged, tile: Tile, stage: ir.Value, aligned) -> None:
    """The program's threads copy ``tile`` into stage ``stage``: 16-byte chunks, chunk
    ``c`` (row ``c // (cols / 8)``) by thread ``c mod threads``."""
    b = em.b
    rows, cols = s.shape
    per_row = cols // 8
    chunks, threads = rows * per_row, em.threads
    base = b.add(smem_base(em), _i32(b, b.add(b.mul(stage, ir.Constant(I64, plan.stage_bytes)),
                                               ir.Constant(I64, s.offset))))
    mem = tile.mem
    t = llvm_type(s.elem)
    with b.if_else(aligned) as (fast, slow):
        for path in (fast, slow):
            with path:
                for j in range(-(-chunks // threads)):
                    c = b.add(em.tid, ir.Constant(I64, j * threads))
                    if (j + 1) * threads > chunks:
                        with b.if_then(b.icmp_unsigned("<", c, ir.Constant(I64, chunks))):
                            _chunk(em, s, tile, base, c, per_row, mem, t, path is fast)
                    else:
                        _chunk(em, s, tile, base, c, per_row, mem, t, path is fast)


def _chunk(em, s: Staged, tile: Tile, base, c, per_row: int, mem, t, async_copy: bool) -> None:
    b = em.b
    row = b.udiv(c, ir.Constant(I64, per_row))
    cc = b.urem(c, ir.Constant(I64, per_row))
    dst = b.add(base, _i32(b, b.add(b.mul(row, ir.Constant(I64, s.pitch)), b.mul(cc, ir.Constant(I64, 16)))))
    copy_chunk(em, tile, dst, row, cc, mem, t, async_copy)


def copy_chunk(em, tile: Tile, dst, row, cc, mem, t, async_copy: bool) -> None:
    """16 bytes of ``tile`` (its row ``row``, 8-element chunk ``cc``) to the shared address
    ``dst``: one ``cp.async`` zero-filled past the array's edges, or (``async_copy`` false)
    8 guarded 16-bit loads and shared stores."""
    b = em.b
    grow = b.add(tile.row, row)
    gcol = b.add(tile.col, b.mul(cc, ir.Constant(I64, 8)))
    row_in = b.icmp_unsigned("<", grow, mem.rows)
    if async_copy:
        left = b.mul(b.sub(mem.cols, gcol), ir.Constant(I64, 2))
        left = b.select(b.icmp_signed("<", left, ir.Constant(I64, 0)), ir.Constant(I64, 0), left)
        left = b.select(b.icmp_signed(">", left, ir.Constant(I64, 16)), ir.Constant(I64, 16), left)
        size = b.select(b.and_(row_in, b.icmp_signed(">=", gcol, ir.Constant(I64, 0))), left, ir.Constant(I64, 0))
        index = b.select(b.icmp_signed(">", size, ir.Constant(I64, 0)), b.add(b.mul(grow, mem.stride), gcol),
                         ir.Constant(I64, 0))
        src = b.gep(mem.ptr, [index], source_etype=t)
        _asm(b, "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r", [dst, src, _i32(b, size)])
        return
    for e in range(8):
        col = b.add(gcol, ir.Constant(I64, e))
        inb = b.and_(row_in, b.icmp_unsigned("<", col, mem.cols))
        ptr = b.gep(mem.ptr, [b.select(inb, b.add(b.mul(grow, mem.stride), col), ir.Constant(I64, 0))],
                    source_etype=t)
        value = b.select(inb, b.load(ptr, typ=t), ir.Constant(t, 0))
        b.store(value, b.inttoptr(b.add(dst, ir.Constant(I32, 2 * e)), SMEM))


# --- the fragments ---------------------------------------------------------------------------
_LDMATRIX = "ldmatrix.sync.aligned.m8n8.{n}{trans}.shared.b16 {regs}, [${addr}];"


def _ldmatrix(b, addr, count: int, trans: bool) -> list:
    regs = "{" + ",".join(f"${i}" for i in range(count)) + "}"
    text = _LDMATRIX.format(n=f"x{count}", trans=".trans" if trans else "", regs=regs, addr=count)
    out = _asm(b, text, ",".join(["=r"] * count + ["r"]), [addr], ir.LiteralStructType([I32] * count))
    return [b.extract_value(out, i) for i in range(count)]


def _b_fragments(b, sub_r: int, sub_c: int, trans: bool, address_of) -> list:
    """The B fragments (b0b1, b2b3 of each 8-column block n, K step by K step) of a
    ``sub_r`` x ``sub_c`` warp part: one ``ldmatrix.x4`` a pair of blocks n, n + 8 (x2 for
    an odd last block) at ``address_of(ki, ni)``, this lane's row address of the pair at
    K step ``ki``; ``trans`` where the stage holds B's rows as K."""
    nb = sub_c // 8
    by_block = {}
    for ki in range(sub_r // 16):
        for ni in range(0, nb, 2):
            count = 4 if ni + 1 < nb else 2
            regs = _ldmatrix(b, address_of(ki, ni), count, trans)
            by_block[(ki, ni)] = regs[:2]
            if count == 4:
                by_block[(ki, ni + 1)] = regs[2:]
    return [reg for ki in range(sub_r // 16) for ni in range(nb) for reg in by_block[(ki, ni)]]


def read(em, plan: Plan, s: Staged) -> Vec:
    """This warp's fragments of the staged tile out of the current stage (``ldmatrix``)."""
    b, lane, layout = em.b, em.lane, s.layout
    sub_r, sub_c = layout.sub
    zero = ir.Constant(I64, 0)
    r0, c0 = zero, zero
    step_r, step_c = layout.warp_steps()
    if em.warp is not None and step_r:
        r0 = b.mul(b.udiv(em.warp, ir.Constant(I64, layout.warps[1])), ir.Constant(I64, step_r))
    if em.warp is not None and step_c:
        c0 = b.mul(b.urem(em.warp, ir.Constant(I64, layout.warps[1])), ir.Constant(I64, step_c))
    base = b.add(smem_base(em), _i32(b, b.add(b.mul(plan.read_stage, ir.Constant(I64, plan.stage_bytes)),
                                               ir.Constant(I64, s.offset))))

    def at(row, col):
        return b.add(base, _i32(b, b.add(b.mul(row, ir.Constant(I64, s.pitch)), b.mul(col, ir.Constant(I64, 2)))))

    def c64(v):
        return ir.Constant(I64, v)

    pairs: list = []
    if layout.kind == "mma_a":
        # lanes 0-15 give rows 0-15 at column k, lanes 16-31 the same rows at k + 8:
        # matrices (rows 0-7, k), (8-15, k), (0-7, k + 8), (8-15, k + 8) = a0a1 .. a6a7
        lane_row = b.add(r0, b.and_(lane, c64(15)))
        lane_col = b.mul(b.lshr(lane, c64(4)), c64(8))
        for mi in range(sub_r // 16):
            for ki in range(sub_c // 16):
                pairs += _ldmatrix(b, at(b.add(lane_row, c64(16 * mi)), b.add(lane_col, c64(16 * ki))), 4, False)
    elif s.transposed:
        # the stage holds B's columns as rows (n, then k): lanes 0-7 give rows n..n+7 at
        # column k, 8-15 the same rows at k + 8, 16-31 rows n+8..n+15 likewise: matrices
        # b0b1, b2b3 of block n and of block n + 8
        lane_row = b.add(c0, b.add(b.and_(lane, c64(7)), b.mul(b.and_(b.lshr(lane, c64(4)), c64(1)), c64(8))))
        lane_col = b.mul(b.and_(b.lshr(lane, c64(3)), c64(1)), c64(8))
        pairs = _b_fragments(b, sub_r, sub_c, False, lambda ki, ni: at(b.add(lane_row, c64(8 * ni)),
                                                                         b.add(lane_col, c64(16 * ki))))
    else:
        # B's rows are K: lanes 0-7 give rows k..k+7, 8-15 rows k+8..k+15 at column n,
        # lanes 16-31 the same at n + 8; transposed, they are b0b1, b2b3 of n and of n + 8
        lane_row = b.add(b.and_(lane, c64(7)), b.mul(b.and_(b.lshr(lane, c64(3)), c64(1)), c64(8)))
        lane_col = b.add(c0, b.mul(b.lshr(lane, c64(4)), c64(8)))
        pairs = _b_fragments(b, sub_r, sub_c, True, lambda ki, ni: at(b.add(lane_row, c64(16 * ki)),
                                                                        b.add(lane_col, c64(8 * ni))))
    t = llvm_type(s.elem)
    slots = []
    for p in pairs:
        for half in (p, b.lshr(p, ir.Constant(I32, 16))):
            v = b.trunc(half, I16)
            slots.append(b.bitcast(v, F16) if t == F16 else v)
    return Vec(layout, s.elem, slots, pairs)

