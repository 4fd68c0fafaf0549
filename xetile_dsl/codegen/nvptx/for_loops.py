"""``scf.for`` and ``scf.while`` in the NVPTX emitter: a header block with one phi per
LLVM value the loop carries (each slot of a tile value, a tile's row and column, each
scalar)."""
from __future__ import annotations

from ...errors import LoweringError
from . import smem_pipeline, wgmma_attention, wgmma_gemm
from .lane_values import Mem, Tile, Vec


def flatten(value) -> list:
    if isinstance(value, Vec):
        return list(value.slots)
    if isinstance(value, Tile):
        return [value.row, value.col]
    return [value]


def rebuild(like, flat: list):
    """A value shaped like ``like`` from the LLVM values ``flat`` (consumed from the front)."""
    if isinstance(like, Vec):
        n = len(like.slots)
        out, flat[:] = Vec(like.layout, like.elem, flat[:n]), flat[n:]
        return out
    if isinstance(like, Tile):
        out, flat[:] = Tile(like.mem, flat[0], flat[1], like.shape, like.transposed), flat[2:]
        return out
    out, flat[:] = flat[0], flat[1:]
    return out


def emit_for(em, op) -> None:
    """lower, upper, step are index (i64); the loop runs while iv < upper (signed).  A
    loop whose fragment loads qualify (:mod:`.smem_pipeline`) stages them through shared
    memory: copies for the first trips before the header, a refill at each trip's top."""
    b = em.b
    lower, upper, step = (em.values[v] for v in (op.lb, op.ub, op.step))
    inits = [em.values[v] for v in op.iter_args]
    if any(isinstance(v, Mem) for v in inits):
        raise LoweringError("nvptx: arrays carried by a loop are not supported on NVIDIA targets yet", op)
    stager = wgmma_gemm
    plan = wgmma_gemm.plan_loop(em, op)
    if plan is None and op in getattr(em, "attention_loops", {}):
        stager, plan = wgmma_attention, em.attention_loops[op]
        wgmma_attention.mark(plan)
    if plan is None:
        stager, plan = smem_pipeline, smem_pipeline.plan_loop(em, op)
    if plan is not None:
        if stager in (wgmma_gemm, wgmma_attention):
            plan.bounds = (lower, upper, step)
        stager.prologue(em, plan, inits)
        if stager in (wgmma_gemm, wgmma_attention):
            em.staged.update((load, (stager, entry)) for load, entry in stager.staged(plan))
        else:
            for s in plan.loads:
                em.staged[s.op] = (stager, (plan, s))
    flat_init = [v for init in inits for v in flatten(init)]
    header, body, exit_, (iv, *phis) = _loop_header(b, "for", [lower] + flat_init, "iv")
    b.cbranch(b.icmp_signed("<", iv, upper), body, exit_)
    b.position_at_end(body)
    block = op.body.block
    em.values[block.args[0]] = iv
    carried = list(phis)
    for arg, init in zip(block.args[1:], inits):
        em.values[arg] = rebuild(init, carried)
    if plan is not None:
        stager.begin_trip(em, plan, iv, lower, step, [em.values[a] for a in block.args[1:]])
    yielded = em.block(block)
    flat_next = [v for y in yielded for v in flatten(y)]
    latch = b.block
    iv.add_incoming(b.add(iv, step), latch)
    for phi, v in zip(phis, flat_next):
        phi.add_incoming(v, latch)
    b.branch(header)
    b.position_at_end(exit_)
    if plan is not None:
        stager.finish(em, plan)
    done = list(phis)
    for res, init in zip(op.results, inits):
        em.values[res] = rebuild(init, done)
    if stager is wgmma_attention:
        em.values[op.results[plan.acc_index]] = wgmma_attention.drain(em, plan, em.values[op.results[plan.acc_index]])
    if stager is wgmma_gemm and plan is not None:
        index = list(op.body.block.args[1:]).index(plan.mma.c)
        em.values[op.results[index]] = wgmma_gemm.drain(em, em.values[op.results[index]])


def _loop_header(b, kind: str, inits: list, first_name: str = ""):
    """A loop's header, body and exit blocks (``kind``.header, ...), the builder moved
    into the header, and one phi a value of ``inits`` there, fed from the block before
    (the first named ``first_name``: a for loop's induction variable)."""
    pre = b.block
    header, body, exit_ = (b.append_basic_block(f"{kind}.{part}") for part in ("header", "body", "exit"))
    b.branch(header)
    b.position_at_end(header)
    phis = [b.phi(v.type, first_name if i == 0 else "") for i, v in enumerate(inits)]
    for phi, v in zip(phis, inits):
        phi.add_incoming(v, pre)
    return header, body, exit_, phis


def emit_while(em, op) -> None:
    """``scf.while``: the header holds one phi per carried LLVM value and the before
    region (its ``scf.condition`` decides: to the body or out); the body is the after
    region, whose ``scf.yield`` feeds the phis.  The loop's results are the values the
    condition forwards (computed in the header, which dominates the exit)."""
    b = em.b
    inits = [em.values[v] for v in op.arguments]
    if any(isinstance(v, Mem) for v in inits):
        raise LoweringError("nvptx: arrays carried by a loop are not supported on NVIDIA targets yet", op)
    flat_init = [v for init in inits for v in flatten(init)]
    header, body, exit_, phis = _loop_header(b, "while", flat_init)
    before = op.before_region.block
    carried = list(phis)
    for arg, init in zip(before.args, inits):
        em.values[arg] = rebuild(init, carried)
    for inner in before.ops:
        if inner.name == "scf.condition":
            cond = em.values[inner.condition]
            forwarded = [em.values[v] for v in inner.args]
            break
        em.op(inner)
    if isinstance(cond, Vec):
        raise LoweringError("nvptx: a while loop on a vector condition is not supported (reduce it first)", op)
    b.cbranch(cond, body, exit_)
    b.position_at_end(body)
    after = op.after_region.block
    for arg, value in zip(after.args, forwarded):
        em.values[arg] = value
    yielded = em.block(after)
    flat_next = [v for y in yielded for v in flatten(y)]
    if len(flat_next) != len(phis):
        raise LoweringError("nvptx: a while loop whose carried values change shape is not supported", op)
    for phi, v in zip(phis, flat_next):
        phi.add_incoming(v, b.block)
    b.branch(header)
    b.position_at_end(exit_)
    for res, value in zip(op.results, forwarded):
        em.values[res] = value
