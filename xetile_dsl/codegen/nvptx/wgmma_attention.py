"""The key loop of a flash attention on sm90 as warpgroup MMAs (decision 053).

A ``scf.for`` whose body holds two ``tile_mma`` -- S = Q K^T with Q a loop-invariant
``mma_a`` value and K^T a staged ``order = [0, 1]`` load, then O += P V with P an
``mma_c`` value (the scores' registers) and V a staged load -- over a program of
``BM / 16`` warps (whole warpgroups: BM a multiple of 64) takes this path instead of
``mma.sync`` with ldmatrix fragments (:mod:`.smem_pipeline`):

* both products are ``wgmma.mma_async``.  O += P V takes A from registers: a warp's 16
  rows of an m64 A block hold mma.m16n8k16's A fragment, which P's C registers
  (``warp_ops.c_as_a``) already are.  S = Q K^T takes Q from shared memory, copied there
  once before the loops (K-major, the swizzle) where Q is a load_tile only these loops
  read (:func:`plan_kernel`; 64 x D registers a warpgroup would leave too few at
  D = 128), else from Q's ``mma_a`` registers likewise.  The accumulators are ``mma_c``
  over the ``(BM / 16, 1)`` warp grid, wgmma's D layout (``wgmma.acc_position``), so the
  softmax between the products is the mma.sync path's code;
* K and V stream through a ring of ``S`` stages written by ``cp.async`` in the 128-byte
  swizzle (:mod:`.wgmma_gemm`'s copies): K as its rows (K-major B of S = Q K^T, N = BN
  keys), V as its rows (MN-major B of O += P V, ``trans-b = 1``, N = D); the whole tile
  inside the array takes unchecked copies, an edge tile clamped zero-filling ones.
  Where the launch found K's and V's arrays describable by tensor maps and each loop's
  tiles are views ``k[z, h]`` of them (:func:`_view`), TMA fills the stages instead
  (decision 056): one N-D map an array (the kernel's last two parameters), one mbarrier
  for the K and one for the V tile of each stage, thread 0 arming it and issuing one box
  of BN keys x 64 columns a 64-column block, the views' indices the map's outer
  coordinates; no copy addresses, no proxy fence;
* trip i waits for its stage (its copies and the async-proxy fence), syncs, refills the
  stage trip i - 2 read with the tiles of trip i + S - 2 (S >= 3).  TMA: it waits for its
  K tile, syncs, and thread 0 refills K's slot of trip i - 1 with K of trip i + S - 1 and
  V's slot of trip i - 2 with V of trip i + S - 2, each only where that trip runs; V's
  tile is waited for before O += P V.  S = Q K^T is fenced, issued
  (D / 16 k16 steps), committed and waited for -- which also waits for O += P V of trip
  i - 1, left in flight across the loop's back edge and the refill as Triton's kernel
  does; O's registers pass through that wait (and one after the loop) as tied operands,
  so nothing reads them while a product writes them.

    >>> stage_bytes(64, 128)
    32768
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, IntegerAttr, StringAttr
from xdsl.ir import Block

from ...dialects import _mixed
from . import smem_pipeline as sp
from ... import knobs
from . import tma, wgmma
from . import wgmma_gemm as wg
from .lane_values import F32, I32, I64, Tile, Vec, llvm_type
from .warp_ops import _pack, c_as_a

ATTR = "nv.wgmma"


def stage_bytes(bn: int, d: int) -> int:
    """One stage: the K and the V tile, BN rows of D 16-bit elements each, unpadded."""
    return 2 * bn * d * 2


@dataclass
class AttnPlan:
    """The wgmma key loop: its two products, their staged loads (K^T, V; with their
    indices among the loop's iter args) and the tile sizes; filled in at the loop."""

    loop: object
    mma_s: object
    mma_o: object
    k_load: object
    v_load: object
    k_index: int
    v_index: int
    #: the iter arg of O (the accumulator the loop carries from O += P V)
    acc_index: int
    bm: int
    bn: int
    d: int
    a_type: str
    stages: int = 0
    acc_arg: object = None
    #: Q in shared memory (the S product's A through a descriptor): its load, else None
    #: (Q's registers are A); the ring starts ``q_bytes`` into the program's shared memory
    q_load: object = None
    q_bytes: int = 0
    aligned: list | None = None
    copies: list | None = None
    read_stage: ir.Value | None = None
    #: this thread's warpgroup, warp-uniform to ptxas (:func:`_warpgroup`), before the loop
    group: ir.Value | None = None
    #: the TMA fill (decision 056): K's and V's arrays as (parameter name, the view's
    #: leading indices: SSA values or 0), whose tensor maps are the kernel's last two
    #: parameters; None: the cp.async ring
    views: tuple | None = None
    #: this loop's place among the kernel's key loops and their number (each loop its own
    #: mbarriers, after the ring), the loop's bounds, the mbarriers' base, the views'
    #: leading coordinates (i32, innermost first), this trip's phase parity
    loop_no: int = 0
    loops: int = 1
    bounds: tuple | None = None
    bars: ir.Value | None = None
    coords: list | None = None
    phase: ir.Value | None = None

    @property
    def stage_bytes(self) -> int:
        return stage_bytes(self.bn, self.d)

    @property
    def bar_bytes(self) -> int:
        """The mbarriers of every key loop of the kernel (TMA): K's and V's of each stage,
        8 bytes each."""
        return 16 * self.stages * self.loops if self.views is not None else 0


def _loop_load(body, args, yielded, value, delta):
    """(load, iter arg index) when ``value`` is a load_tile in ``body`` of a 16-bit tile
    the loop carries and moves by ``delta`` each trip; else None."""
    load = value.owner
    if getattr(load, "name", None) != "xetile.load_tile" or load.padding is not None or \
            load.parent_block() is not body or load.tile not in args or not sp._is16(load.value.type.element_type):
        return None
    index = args.index(load.tile)
    step = yielded[index].owner
    if getattr(step, "name", None) != "xetile.update_tile_offset" or step.tile is not load.tile or \
            step.indices is not None:
        return None
    if [sp._const_of(v) for v in _mixed.mixed(step, step.offset_values())] != list(delta):
        return None
    if len(list(load.value.uses)) != 1:
        return None
    return load, index


def _zero(value) -> bool:
    owner = value.owner
    if getattr(owner, "name", None) != "arith.constant" or not isinstance(owner.value, DenseIntOrFPElementsAttr):
        return False
    return set(owner.value.get_values()) == {0.0}


def plan_loop(em, op) -> AttnPlan | None:
    """The wgmma plan of loop ``op`` (the conditions of the module docstring), else None."""
    target = em.target
    if not target.wgmma or op.name != "scf.for":
        return None
    body = op.body.block
    mmas = [inner for inner in body.ops if inner.name == "xetile.tile_mma"]
    if len(mmas) != 2:
        return None
    mma_s, mma_o = mmas
    args, yielded = list(body.args[1:]), list(body.last_op.operands)
    (bm, d), (d2, bn) = mma_s.a.type.get_shape(), mma_s.b.type.get_shape()
    (bm2, bn2), (bn3, d3) = mma_o.a.type.get_shape(), mma_o.b.type.get_shape()
    if (d, bm, bn, bn, d) != (d2, bm2, bn2, bn3, d3) or tuple(mma_o.output.type.get_shape()) != (bm, d):
        return None
    if bm % 64 or d % 64 or d > 256 or bn % 64 or bn > 256:
        return None
    if mma_s.a.owner is not None and mma_s.a.owner.parent_block() is body or \
            getattr(mma_s.a, "owner", None) is None:
        return None
    if mma_s.c is not None and not _zero(mma_s.c):
        return None
    k = _loop_load(body, args, yielded, mma_s.b, (0, bn))
    v = _loop_load(body, args, yielded, mma_o.b, (bn, 0))
    if k is None or v is None or mma_o.c is None or mma_o.output not in yielded:
        return None
    acc_index = yielded.index(mma_o.output)
    order = {inner: i for i, inner in enumerate(body.ops)}
    # O's product is waited for at the next trip's S product: nothing reads O before it
    if any(order.get(use.operation, -1) <= order[mma_s] for use in args[acc_index].uses) or \
            len(list(mma_o.output.uses)) != 1:
        return None
    if mma_s.b.owner.tile.type.attr.order_list != (0, 1) or mma_o.b.owner.tile.type.attr.order_list != (1, 0):
        return None
    layouts = em.layouts
    if layouts.get(mma_s.a).kind != "mma_a" or layouts.get(mma_o.a).kind != "mma_c" or \
            layouts[mma_s.output].warps != (bm // 16, 1) or layouts[mma_o.output].warps != (bm // 16, 1):
        return None
    elem = mma_s.a.type.element_type
    if elem != mma_o.a.type.element_type or elem != mma_s.b.type.element_type or \
            elem != mma_o.b.type.element_type:
        return None
    a_type = "bf16" if elem.__class__.__name__ == "BFloat16Type" else "f16"
    if not any(s.a_type == a_type for s in target.wgmma):
        return None
    plan = AttnPlan(op, mma_s, mma_o, k[0], v[0], k[1], v[1], acc_index, bm, bn, d, a_type)
    stages = max(em.stages, 3)
    while stages > 3 and stages * plan.stage_bytes + wg.ALIGN_PAD > target.smem_per_block:
        stages -= 1
    if stages * plan.stage_bytes + wg.ALIGN_PAD > target.smem_per_block:
        return None
    plan.stages = stages
    return plan


def plan_kernel(em) -> dict:
    """loop op -> :class:`AttnPlan` for every loop of the kernel that takes this path.
    Where Q is a load_tile (outside the loops) whose value only these loops' S products
    read, Q is copied once into the shared memory before the rings and read from there
    (its BM x D registers would leave too few for D = 128)."""
    plans = {}
    for op in em.func.walk():
        if op.name == "scf.for":
            plan = plan_loop(em, op)
            if plan is not None:
                plans[op] = plan
    if not plans:
        return plans
    first = next(iter(plans.values()))
    q = first.mma_s.a.owner
    users = {use.operation for use in first.mma_s.a.uses}
    if getattr(q, "name", None) == "xetile.load_tile" and q.padding is None and \
            q.tile.type.attr.order_list == (1, 0) and all(p.mma_s.a is first.mma_s.a for p in plans.values()) and \
            users == {p.mma_s for p in plans.values()}:
        q_bytes = first.bm * first.d * 2
        if all(q_bytes + p.stages * p.stage_bytes + wg.ALIGN_PAD <= em.target.smem_per_block for p in plans.values()):
            for p in plans.values():
                p.q_load, p.q_bytes = q, q_bytes
            em.staged[q] = (_QStager, (first, q))
    _plan_tma(em, list(plans.values()))
    return plans


def _tile_init(value):
    """The init_tile a loop-carried tile starts from (through the results of earlier
    loops that carry it), else None."""
    for _ in range(64):
        owner = getattr(value, "owner", None)
        loop = owner.parent_op() if isinstance(owner, Block) else None
        if getattr(loop, "name", None) == "scf.for" and value.index >= 1:    # the loop body's iter arg
            value = loop.iter_args[value.index - 1]
        elif getattr(owner, "name", None) == "scf.for":                     # an earlier loop's result
            value = owner.iter_args[value.index]
        else:
            return owner if getattr(owner, "name", None) == "xetile.init_tile" else None
    return None


def _metadata_index(value, param):
    """``i`` where ``value`` is result ``i`` of an ``extract_strided_metadata`` of ``param``."""
    owner = getattr(value, "owner", None)
    if getattr(owner, "name", None) != "memref.extract_strided_metadata" or owner.operands[0] is not param:
        return None
    return value.index


def _view(em, source):
    """(parameter name, leading indices) of the 2-D array ``source`` when a tensor map of
    the kernel parameter it is can address it: the parameter itself (rank 2), or its
    ``memref.reinterpret_cast`` view ``x[i0, .., ik]`` of the last two dimensions whose
    offset is the sum of ``i_j * stride_j`` over the leading ones (each index an SSA
    value, a missing one 0); else None."""
    args = list(em.func.body.block.args)
    if source in args:
        return (source.name_hint or f"arg{source.index}", []) if len(source.type.get_shape()) == 2 else None
    cast = getattr(source, "owner", None)
    if getattr(cast, "name", None) != "memref.reinterpret_cast" or cast.source not in args:
        return None
    param = cast.source
    rank = len(param.type.get_shape())
    if rank < 3 or rank > em.target.tma_rank_max or list(cast.static_strides.get_values())[-1] != 1:
        return None
    sizes, strides = list(cast.sizes), list(cast.strides)
    if len(sizes) != 2 or len(strides) != 1 or \
            [_metadata_index(v, param) for v in sizes] != [2 + rank - 2, 2 + rank - 1] or \
            _metadata_index(strides[0], param) != 2 + 2 * rank - 2:
        return None
    name = param.name_hint or f"arg{param.index}"
    lead = [0] * (rank - 2)
    offsets = list(cast.offsets)
    if not offsets:
        return (name, lead) if list(cast.static_offsets.get_values()) == [0] else None
    seen = set()

    def terms(value) -> bool:
        op = getattr(value, "owner", None)
        name = getattr(op, "name", None)
        if name == "arith.addi":
            return terms(op.operands[0]) and terms(op.operands[1])
        if name != "arith.muli":
            return False
        for index, stride in (op.operands, op.operands[::-1]):
            j = _metadata_index(stride, param)
            if j is not None and 2 + rank <= j < 2 + 2 * rank - 2 and j not in seen:
                seen.add(j)
                lead[j - 2 - rank] = index
                return True
        return False
    return (name, lead) if terms(offsets[0]) else None


def _plan_tma(em, plans: list) -> None:
    """K and V by TMA (decision 056) where the launch found both arrays describable
    (``em.tma_arrays``), a tensor map addresses the views every key loop streams, and the
    shared memory holds the mbarriers too; only with ``XETILE_NV_TMA_ATTENTION=1``."""
    if not plans or not em.target.tma or not em.tma_arrays or not knobs.NV_TMA_ATTENTION.get():
        return
    views = []
    for p in plans:
        inits = [_tile_init(load.tile) for load in (p.k_load, p.v_load)]
        if None in inits:
            return
        found = tuple(_view(em, init.source) for init in inits)
        if None in found:
            return
        views.append(found)
    names = {(k[0], v[0]) for k, v in views}
    if len(names) != 1:
        return
    (k_name, v_name), = names
    if k_name == v_name or not {k_name, v_name} <= set(em.tma_arrays):
        return
    for p in plans:
        if p.bn > em.target.tma_box_max or 64 * 2 > em.target.tma_swizzle_bytes:
            return
        if p.q_bytes + p.stages * (p.stage_bytes + 16 * len(plans)) + wg.ALIGN_PAD > em.target.smem_per_block:
            return
    for no, (p, found) in enumerate(zip(plans, views)):
        p.views, p.loop_no, p.loops = found, no, len(plans)


def tensor_maps(plans: dict) -> list[tuple[str, int, int]]:
    """(array, box rows, box columns) of each tensor map the kernel takes, in order: K's
    and V's, boxes of BN keys x 64 columns."""
    first = next(iter(plans.values()), None)
    if first is None or first.views is None:
        return []
    return [(first.views[0][0], first.bn, 64), (first.views[1][0], first.bn, 64)]


class _QStager:
    """The emitter's stager of Q's load_tile: the copy into shared memory."""

    @staticmethod
    def read(em, plan: AttnPlan, load):
        fill_q(em, plan, em.values[load.tile])
        return load


def fill_q(em, plan: AttnPlan, tile: Tile) -> None:
    """Q's BM x D tile into the shared memory's first ``q_bytes`` (K-major, the swizzle),
    one commit group: the first loop's wait for its first stage waits for it too."""
    b = em.b
    em.smem_bytes = max(em.smem_bytes, plan.q_bytes + wg.ALIGN_PAD)
    bits = b.or_(b.and_(b.ptrtoint(tile.mem.ptr, I64), ir.Constant(I64, 15)),
                 b.and_(b.or_(tile.mem.stride, tile.col), ir.Constant(I64, 7)))
    aligned = b.icmp_unsigned("==", bits, ir.Constant(I64, 0))
    copies = wg.thread_copies(em, tile.mem, plan.bm, plan.d)
    t = llvm_type(plan.q_load.value.type.element_type)
    _fill(em, plan.bm, plan.d, copies, tile, wg._base(em), aligned, t)
    sp.commit(b)


def mark(plan: AttnPlan) -> None:
    plan.loop.attributes[sp.STAGES_ATTR] = IntegerAttr(plan.stages, 64)
    plan.k_load.attributes[sp.SMEM_ATTR] = StringAttr("swizzle128.k")
    plan.v_load.attributes[sp.SMEM_ATTR] = StringAttr("swizzle128.mn")
    plan.mma_s.attributes[ATTR] = StringAttr(f"m64n{plan.bn}k16")
    plan.mma_o.attributes[ATTR] = StringAttr(f"m64n{plan.d}k16")


def staged(plan: AttnPlan):
    """(op, entry) pairs for the emitter's staged map."""
    return [(plan.k_load, (plan, plan.k_load)), (plan.v_load, (plan, plan.v_load))]


def _array_view(tile: Tile, rows: int, cols: int) -> Tile:
    """K^T's ``order = [0, 1]`` tile as the array holds it (keys x D); V as it is."""
    if tile.transposed:
        return Tile(tile.mem, tile.col, tile.row, (rows, cols))
    return tile


def _tiles(plan: AttnPlan, carried: list) -> list:
    return [_array_view(carried[plan.k_index], plan.bn, plan.d), _array_view(carried[plan.v_index], plan.bn, plan.d)]


def prologue(em, plan: AttnPlan, inits: list) -> None:
    """Before the loop: alignment checks, each thread's copy offsets, the first ``S - 1``
    trips' copies."""
    b = em.b
    if em.smem_loops:
        sp.barrier(b)       # an earlier staged loop's warps may still read its ring
    em.smem_loops += 1
    em.smem_bytes = max(em.smem_bytes, plan.q_bytes + plan.stages * plan.stage_bytes + plan.bar_bytes + wg.ALIGN_PAD)
    tiles = _tiles(plan, inits)
    if plan.views is not None:
        plan.group = _warpgroup(em)
        _tma_prologue(em, plan, tiles)
        return
    plan.aligned = []
    for tile in tiles:
        bits = b.or_(b.and_(b.ptrtoint(tile.mem.ptr, I64), ir.Constant(I64, 15)),
                     b.and_(b.or_(tile.mem.stride, tile.col), ir.Constant(I64, 7)))
        plan.aligned.append(b.icmp_unsigned("==", bits, ir.Constant(I64, 0)))
    plan.copies = [wg.thread_copies(em, tile.mem, plan.bn, plan.d) for tile in tiles]
    plan.group = _warpgroup(em)
    for trip in range(plan.stages - 2):
        _fill_all(em, plan, tiles, trip, ir.Constant(I32, trip))
        sp.commit(b)


def _fill_all(em, plan: AttnPlan, tiles: list, ahead: int, stage: ir.Value) -> None:
    b = em.b
    for which, (tile, ok, copies) in enumerate(zip(tiles, plan.aligned, plan.copies)):
        if ahead:
            tile = Tile(tile.mem, b.add(tile.row, ir.Constant(I64, plan.bn * ahead)), tile.col, tile.shape)
        region = b.add(b.mul(stage, ir.Constant(I32, plan.stage_bytes)), ir.Constant(I32, plan.q_bytes))
        if which:
            region = b.add(region, ir.Constant(I32, plan.stage_bytes // 2))
        base = b.add(wg._base(em), region)
        load = plan.v_load if which else plan.k_load
        _fill(em, plan.bn, plan.d, copies, tile, base, ok, llvm_type(load.value.type.element_type))


def _fill(em, rows: int, cols: int, copies, tile: Tile, base, aligned, t) -> None:
    """The program's threads copy the ``rows x cols`` ``tile`` into the swizzle at
    ``base`` (64-column blocks of ``rows`` rows of 128 bytes): a tile inside its (16-byte
    aligned) array by unchecked copies, an edge tile by clamped ones (zero past the
    array), an unaligned array by guarded 16-bit loads."""
    b = em.b
    per_row, chunks, threads = cols // 8, rows * cols // 8, em.threads
    step_rows = threads // per_row
    if threads % per_row == 0 and step_rows % 8 == 0 and chunks % threads == 0:
        inside = b.and_(aligned, wg._inside(b, tile, rows, cols))
        with b.if_else(inside) as (interior, edge):
            with interior:
                wg._fill_interior(em, copies, tile, base, chunks // threads, step_rows)
            with edge:
                with b.if_else(aligned) as (fast, slow):
                    with fast:
                        wg._fill_loop(em, tile, base, rows, per_row, chunks, t, True)
                    with slow:
                        wg._fill_loop(em, tile, base, rows, per_row, chunks, t, False)
        return
    with b.if_else(aligned) as (fast, slow):
        with fast:
            wg._fill_loop(em, tile, base, rows, per_row, chunks, t, True)
        with slow:
            wg._fill_loop(em, tile, base, rows, per_row, chunks, t, False)


def begin_trip(em, plan: AttnPlan, iv, lower, step, tiles: list) -> None:
    """At the top of a trip: wait for this trip's copies, fence them for the async proxy,
    sync (every warpgroup has waited for its S product of trip i - 1, and with it for its
    O product of trip i - 2), refill the stage trip i - 2 read with trip i + S - 2's tiles.
    TMA: wait for this trip's K tile, sync, refill K's slot of trip i - 1 and V's of
    trip i - 2 (K runs a trip further ahead than V)."""
    b = em.b
    # the trip and the stages in 32 bits (a key loop runs fewer than 2^31 trips): a 64-bit
    # remainder is a dozen wide multiplies in the SASS, a 32-bit one a multiply-high
    trip = sp._i32(b, b.sdiv(b.sub(iv, lower), step))
    plan.read_stage = b.urem(trip, ir.Constant(I32, plan.stages))
    write = b.urem(b.add(trip, ir.Constant(I32, plan.stages - 2)), ir.Constant(I32, plan.stages))
    plan.acc_arg = plan.loop.body.block.args[1 + plan.acc_index]
    if plan.views is not None:
        # this trip's K filled (its mbarrier's phase (trip / S) & 1 complete; V's is waited
        # for before O += P V), then every warpgroup past trip i - 1's S product, which
        # waited for O of trip i - 2: K's slot of trip i - 1 and V's of trip i - 2 are free.
        # Thread 0 refills them with K of trip i + S - 1 and V of trip i + S - 2, each
        # only where that trip runs: K two trips ahead (S = 3), V one and a half
        plan.phase = b.and_(b.udiv(trip, ir.Constant(I32, plan.stages)), ir.Constant(I32, 1))
        tma.wait_parity(b, _bar(b, plan, plan.read_stage, 0), plan.phase)
        sp.barrier(b)
        _, upper, _ = plan.bounds
        leader = b.icmp_unsigned("==", em.tid, ir.Constant(I64, 0))
        for which, ahead in ((0, plan.stages - 1), (1, plan.stages - 2)):
            runs = b.icmp_signed("<", b.add(iv, b.mul(step, ir.Constant(I64, ahead))), upper)
            slot = b.urem(b.add(trip, ir.Constant(I32, ahead)), ir.Constant(I32, plan.stages))
            with b.if_then(b.and_(leader, runs)):
                _tma_fill(em, plan, _tiles(plan, tiles), ahead, slot, which)
        return
    sp.wait_group(b, plan.stages - 3)
    wgmma.proxy_fence(b)
    sp.barrier(b)
    _fill_all(em, plan, _tiles(plan, tiles), plan.stages - 2, write)
    sp.commit(b)


def finish(em, plan: AttnPlan = None) -> None:
    if plan is None or plan.views is None:      # TMA: no fill past the last trip
        sp.wait_group(em.b, 0)


# --- the TMA fill (decision 056) ---------------------------------------------------------------
def _bar(b, plan: AttnPlan, stage: ir.Value, which: int) -> ir.Value:
    """The mbarrier of K's (``which`` 0) or V's (1) tile in stage ``stage``."""
    return b.add(plan.bars, b.add(b.mul(stage, ir.Constant(I32, 16)), ir.Constant(I32, 8 * which)))


def _tma_prologue(em, plan: AttnPlan, tiles: list) -> None:
    """Before a TMA key loop: Q's copies (cp.async, once) waited for and fenced for the
    async proxy; thread 0 initialises this loop's mbarriers (K's and V's of each stage,
    after the ring and the earlier loops' ones), makes that visible to the async proxy and
    prefetches the maps; a barrier; then thread 0 fills K of the first ``S - 1`` trips and
    V of the first ``S - 2``, each only where its trip runs."""
    b = em.b
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    ring = plan.q_bytes + plan.stages * plan.stage_bytes
    plan.bars = b.add(wg._base(em), ir.Constant(I32, ring + 16 * plan.stages * plan.loop_no))
    plan.coords = [[sp._i32(b, em.values[x]) if not isinstance(x, int) else ir.Constant(I32, x)
                    for x in reversed(lead)] for _, lead in plan.views]
    if plan.q_load is not None and plan.loop_no == 0:
        sp.wait_group(b, 0)
        wgmma.proxy_fence(b)
    lower, upper, step = plan.bounds
    leader = b.icmp_unsigned("==", em.tid, c64(0))
    with b.if_then(leader):
        for s in range(plan.stages):
            for which in (0, 1):
                tma.init(b, _bar(b, plan, ir.Constant(I32, s), which), 1)
        tma.fence_init(b)
        if plan.loop_no == 0:
            for addr in em.maps:
                tma.prefetch_map(b, addr)
    sp.barrier(b)
    for trip in range(plan.stages - 1):
        runs = b.icmp_signed("<", b.add(lower, b.mul(step, c64(trip))), upper)
        with b.if_then(b.and_(leader, runs)):
            _tma_fill(em, plan, tiles, trip, ir.Constant(I32, trip), 0)
            if trip < plan.stages - 2:
                _tma_fill(em, plan, tiles, trip, ir.Constant(I32, trip), 1)


def _tma_fill(em, plan: AttnPlan, tiles: list, ahead: int, stage: ir.Value, which: int) -> None:
    """K's (``which`` 0) or V's (1) half of stage ``stage``, its mbarrier armed with its
    bytes, filled by TMA with the tile ``ahead`` trips past ``tiles[which]`` (keys x D as
    the array holds it): one box of BN keys x 64 columns a 64-column block, ``BN * 128``
    bytes apart, the layout :func:`_fill` writes and the descriptors of :func:`mma` read;
    parts past the array (keys past N) read as zeros."""
    b = em.b
    bar = _bar(b, plan, stage, which)
    tma.arrive_expect_tx(b, bar, plan.stage_bytes // 2)
    region = b.add(wg._base(em), b.add(b.mul(stage, ir.Constant(I32, plan.stage_bytes)),
                                       ir.Constant(I32, plan.q_bytes + which * plan.stage_bytes // 2)))
    tile, addr, lead = tiles[which], em.maps[which], plan.coords[which]
    row = sp._i32(b, b.add(tile.row, ir.Constant(I64, plan.bn * ahead)) if ahead else tile.row)
    col = sp._i32(b, tile.col)
    for j in range(plan.d // 64):
        dst = b.add(region, ir.Constant(I32, j * plan.bn * wg.ROW)) if j else region
        tma.load_nd(b, dst, addr, [b.add(col, ir.Constant(I32, 64 * j)) if j else col, row, *lead], bar)


def drain(em, plan: AttnPlan, value: Vec) -> Vec:
    """O after the loop: its last product waited for, the values tied to the wait."""
    return Vec(value.layout, value.elem, wgmma.wait_group(em.b, 0, list(value.slots)))


def read(em, plan: AttnPlan, load):
    """A staged operand: no registers; the product reads it through a descriptor."""
    return load


_RS = ("{{ .reg .pred p; setp.ne.b32 p, ${scale}, 0; wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{t}.{t} "
       "{{{d}}}, {{{a}}}, ${desc}, p, 1, 1, {trans}; }}")


def mma_rs(b, acc: list, a_regs: list, desc: ir.Value, n: int, a_type: str, scale_d: int, trans_b: int) -> list:
    """One ``wgmma.mma_async.m64n{n}k16`` with A from registers (4 x b32 a thread: the
    m16n8k16 A fragment of its warp's 16 rows), B through ``desc``; ``acc`` the
    ``n / 2`` f32 accumulators (ignored where ``scale_d`` is 0)."""
    count = n // 2
    text = _RS.format(n=n, t=a_type, d=", ".join(f"${i}" for i in range(count)),
                      a=", ".join(f"${count + i}" for i in range(4)), desc=count + 4, scale=count + 5, trans=trans_b)
    constraints = ",".join(["=f"] * count + ["r"] * 4 + ["l", "r"] + [str(i) for i in range(count)])
    ftype = ir.FunctionType(ir.LiteralStructType([F32] * count), [I32] * 4 + [I64, I32] + [F32] * count)
    out = b.asm(ftype, text, constraints + ",~{memory}", list(a_regs) + [desc, ir.Constant(I32, scale_d)] + list(acc),
                True)
    return [b.extract_value(out, i) for i in range(count)]


def _a_regs(b, a: Vec) -> list:
    """The packed A registers of each 16-column block of a warp's 16 rows (``mma_a``)."""
    slots = a.slots
    return [[_pack(b, slots[8 * j + 2 * i], slots[8 * j + 2 * i + 1], a.elem) for i in range(4)]
            for j in range(len(slots) // 8)]


def _warpgroup(em) -> ir.Value:
    """This thread's warpgroup (i32), read through ``shfl.sync.idx`` from lane 0: the same
    value, but one ptxas knows is uniform over the warp, so the Q descriptors built from
    it stay in uniform registers (no ``R2UR`` before each HGMMA)."""
    if em.warp is None:
        return ir.Constant(I32, 0)
    b = em.b
    group = sp._i32(b, b.lshr(em.warp, ir.Constant(I64, 2)))
    return b.asm(ir.FunctionType(I32, [I32]), "shfl.sync.idx.b32 $0, $1, 0, 31, -1;", "=r,r", [group], False)


def mma(em, plan: AttnPlan, op, a, c: Vec | None, layout) -> Vec:
    """``op`` (S = Q K^T or O += P V) as wgmma on the current stage, waited for."""
    b = em.b
    stage = b.add(wg._base(em), b.add(b.mul(plan.read_stage, ir.Constant(I32, plan.stage_bytes)),
                                      ir.Constant(I32, plan.q_bytes)))
    rows_bytes = plan.bn * wg.ROW                       # one 64-column block of a BN-row tile
    if op is plan.mma_s:
        desc = wgmma.descriptor(b, stage, stride_bytes=wg.ATOM)
        n, steps, trans = plan.bn, plan.d // 16, 0
        acc = [ir.Constant(F32, ir.Undefined)] * (n // 2)

        def offset(k):                                  # K-major: 32 bytes a k16 step in the row
            return (k // 4) * rows_bytes + 32 * (k % 4)
    else:
        if plan.views is not None:      # this trip's V (TMA): its mbarrier's phase
            tma.wait_parity(b, _bar(b, plan, plan.read_stage, 1), plan.phase)
        v_base = b.add(stage, ir.Constant(I32, plan.stage_bytes // 2))
        desc = wgmma.descriptor(b, v_base, stride_bytes=wg.ATOM, lead_bytes=rows_bytes)
        n, steps, trans = plan.d, plan.bn // 16, 1
        acc = list(c.slots)

        def offset(k):                                  # MN-major: 16 key rows a k16 step
            return k * 16 * wg.ROW
    q_desc = None
    if op is plan.mma_s and plan.q_load is not None:
        q_desc = wgmma.descriptor(b, b.add(wg._base(em), b.mul(plan.group, ir.Constant(I32, 64 * wg.ROW))),
                                  stride_bytes=wg.ATOM)
    else:
        regs = _a_regs(b, c_as_a(a) if a.layout.kind == "mma_c" else a)
    wgmma.fence(b)
    for k in range(steps):
        off = offset(k)
        d = b.add(desc, ir.Constant(I64, off >> 4)) if off else desc
        scale = 0 if op is plan.mma_s and k == 0 else 1
        if q_desc is not None:
            q_off = (k // 4) * plan.bm * wg.ROW + 32 * (k % 4)
            da = b.add(q_desc, ir.Constant(I64, q_off >> 4)) if q_off else q_desc
            acc = wgmma.mma_async(b, acc, da, d, n, plan.a_type, scale_d=scale, trans_b=trans)
        else:
            acc = mma_rs(b, acc, regs[k], d, n, plan.a_type, scale, trans)
    wgmma.commit_group(b)
    if op is plan.mma_o:    # in flight until the next trip's S product (or the loop's end) waits
        return Vec(layout, c.elem, acc)
    # S, and O += P V of the trip before, done; O's registers are read only after this
    o = em.values[plan.acc_arg]
    done = wgmma.wait_group(b, 0, acc + list(o.slots))
    em.values[plan.acc_arg] = Vec(o.layout, o.elem, done[len(acc):])
    return Vec(layout, c.elem if c is not None else None, done[:len(acc)])
