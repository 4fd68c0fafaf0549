"""Codegen of control flow (``scf.for``, ``scf.if``, ``scf.while``, ``func.return``):
basic blocks and phis; the ops of a region go back through ``gen.op``; a value made of
several LLVM values (a tensor descriptor; a coalesced load's :class:`~.message_pieces.Pieces`,
which xegpu-rotate-loads carries across iterations) travels as one phi per field; a
fragment left in its array (``BufferPieces``) needs none."""
from __future__ import annotations

from llvmlite import ir
from xdsl.dialects import func, scf

from ..tdesc import TDesc
from . import EMITTERS, prefetch_payloads, transposed_payloads
from .message_pieces import BufferPieces, Pieces

I32, I64 = ir.IntType(32), ir.IntType(64)


# --- scf.for ------------------------------------------------------------------------------
@EMITTERS.register(scf.ForOp)
def emit_for(gen, op: scf.ForOp) -> None:
    b = gen.b
    pre = b.block
    header = b.append_basic_block("for.header")
    body = b.append_basic_block("for.body")
    exit_ = b.append_basic_block("for.exit")
    lb, ub, step = gen.v(op.lb), gen.v(op.ub), gen.v(op.step)
    narrow = _narrow_loop_bounds(b, lb, ub, step)
    if narrow is not None:
        lb, ub, step = narrow
    inits = [_flatten(gen.v(x)) for x in op.iter_args]
    copied = transposed_payloads.orders_latch(gen, op)
    gen.hoisted_prefetches.update(prefetch_payloads.hoist(gen, op, copied))
    gen.hoisted_reads.update(transposed_payloads.hoist(gen, op))
    b.branch(header)
    b.position_at_end(header)
    iv = b.phi(lb.type, "iv")
    iv.add_incoming(lb, pre)
    phis = [[b.phi(x.type) for x in flat] for flat in inits]
    for group, flat in zip(phis, inits):
        for phi, x in zip(group, flat):
            phi.add_incoming(x, pre)
    in_range = b.icmp_unsigned("<", iv, ub) if narrow is not None else b.icmp_signed("<", iv, ub)
    b.cbranch(in_range, body, exit_)
    b.position_at_end(body)
    block = op.body.block
    gen.values[block.args[0]] = b.zext(iv, I64) if narrow is not None else iv
    for barg, group, init in zip(block.args[1:], phis, op.iter_args):
        gen.values[barg] = _unflatten(gen.v(init), group)
    for inner in block.ops:
        if isinstance(inner, scf.YieldOp):
            latch = _feed_back(gen, phis, inner)
            iv.add_incoming(b.add(iv, step), latch)
            b.branch(header)
        else:
            gen.op(inner)
    b.position_at_end(exit_)
    for res, group, init in zip(op.results, phis, op.iter_args):
        gen.values[res] = _unflatten(gen.v(init), group)


# --- scf.if -------------------------------------------------------------------------------
@EMITTERS.register(scf.IfOp)
def emit_if(gen, op: scf.IfOp) -> None:
    """Two branch blocks and a merge block whose phis are the results (a tensor
    descriptor result is a phi per field)."""
    b = gen.b
    then_bb, else_bb, merge = (b.append_basic_block(n) for n in ("if.then", "if.else", "if.end"))
    b.cbranch(gen.v(op.cond), then_bb, else_bb)
    incoming = []
    for region, bb in zip(op.regions, (then_bb, else_bb)):
        b.position_at_end(bb)
        yielded = []
        for inner in (region.block.ops if region.blocks else ()):
            if isinstance(inner, scf.YieldOp):
                yielded = [gen.v(y) for y in inner.operands]
            else:
                gen.op(inner)
        incoming.append((b.block, yielded))
        b.branch(merge)
    b.position_at_end(merge)
    for i, res in enumerate(op.results):
        flats = [(bb, _flatten(vals[i])) for bb, vals in incoming]
        phis = [b.phi(x.type) for x in flats[0][1]]
        for bb, flat in flats:
            for phi, x in zip(phis, flat):
                phi.add_incoming(x, bb)
        gen.values[res] = _unflatten(incoming[0][1][i], phis)


# --- scf.while ----------------------------------------------------------------------------
@EMITTERS.register(scf.WhileOp)
def emit_while(gen, op: scf.WhileOp) -> None:
    """``before`` is the loop header (phis of the carried values, the condition),
    ``after`` the body; the condition's forwarded values are the body's arguments and,
    on exit, the loop's results (the header dominates both)."""
    b = gen.b
    pre = b.block
    header = b.append_basic_block("while.before")
    body = b.append_basic_block("while.after")
    exit_ = b.append_basic_block("while.exit")
    inits = [_flatten(gen.v(x)) for x in op.arguments]
    b.branch(header)
    b.position_at_end(header)
    phis = [[b.phi(x.type) for x in flat] for flat in inits]
    before = op.before_region.block
    for barg, group, flat, init in zip(before.args, phis, inits, op.arguments):
        for phi, x in zip(group, flat):
            phi.add_incoming(x, pre)
        gen.values[barg] = _unflatten(gen.v(init), group)
    for inner in before.ops:
        if isinstance(inner, scf.ConditionOp):
            b.cbranch(gen.v(inner.condition), body, exit_)
            forwarded = [gen.v(x) for x in inner.args]
        else:
            gen.op(inner)
    b.position_at_end(body)
    after = op.after_region.block
    for aarg, value in zip(after.args, forwarded):
        gen.values[aarg] = value
    for inner in after.ops:
        if isinstance(inner, scf.YieldOp):
            _feed_back(gen, phis, inner)
            b.branch(header)
        else:
            gen.op(inner)
    b.position_at_end(exit_)
    for res, value in zip(op.results, forwarded):
        gen.values[res] = value


def _feed_back(gen, phis, yield_op: scf.YieldOp):
    """The loop's yielded values become incoming values of the header ``phis`` from the
    current block (the latch), which is returned."""
    latch = gen.b.block
    for group, y in zip(phis, yield_op.operands):
        for phi, x in zip(group, _flatten(gen.v(y))):
            phi.add_incoming(x, latch)
    return latch


def _flatten(value) -> list[ir.Value]:
    if isinstance(value, BufferPieces):   # left in its array: nothing to carry
        return []
    if isinstance(value, Pieces):
        return list(value.parts)
    return value.fields() if isinstance(value, TDesc) else [value]


def _unflatten(like, values: list[ir.Value]):
    if isinstance(like, BufferPieces):
        return like
    if isinstance(like, Pieces):
        return Pieces(tuple(values))
    return TDesc(*values) if isinstance(like, TDesc) else values[0]


@EMITTERS.register(func.ReturnOp)
def emit_return(gen, op: func.ReturnOp) -> None:
    gen.b.ret_void()


def _narrow_loop_bounds(b: ir.IRBuilder, lb, ub, step):
    """32-bit (lb, ub, step) of an ``index`` loop that counts up from a constant ``lb >= 0``
    by a constant ``step`` to an upper bound that is 32-bit (a constant, or an i32 value
    such as ``K`` sign-extended), else None.  ``ub`` is clamped at 0 in the preheader and
    compared unsigned: the counter stays below 2**31 and ``iv + step`` below 2**32, so it
    never wraps, and the body sees it zero-extended (its value).  The 64-bit counter cost
    an emulated 64-bit add and three compares per iteration on Xe-HPC/Xe2 (docs/decisions/021-code-shaped-for-igc.md)."""
    if not (isinstance(lb, ir.Constant) and isinstance(step, ir.Constant)):
        return None
    if not (0 <= lb.constant < 2**31 and 0 < step.constant < 2**31):
        return None
    if isinstance(ub, ir.Constant) and -2**31 <= ub.constant < 2**31:
        ub32 = ir.Constant(I32, max(ub.constant, 0))
    elif isinstance(ub, ir.CastInstr) and ub.opname == "sext" and ub.operands[0].type == I32:
        wide = ub.operands[0]
        ub32 = b.select(b.icmp_signed("<", wide, ir.Constant(I32, 0)), ir.Constant(I32, 0), wide)
    else:
        return None
    return ir.Constant(I32, lb.constant), ub32, ir.Constant(I32, step.constant)
