"""codegen/latch_order.py on a hand-built loop latch: which calls move and which stay."""
from __future__ import annotations

from llvmlite import ir

from xetile_dsl.codegen import latch_order

I32 = ir.IntType(32)
PTR = ir.PointerType(addrspace=0)
V8 = ir.VectorType(ir.FloatType(), 8)


def _latch():
    """A kernel whose loop latch holds, in order: a DPAS, a prefetch, the next prefetch's
    offset, payload copy and offset add, its prefetch, a load, a DPAS chained on the
    first, a DPAS whose result an fadd uses, the fadd, and the branch back."""
    module = ir.Module()
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I32, V8]), "k")
    p0, p1, y, acc = fn.args
    decl = {name: ir.Function(module, ty, name) for name, ty in (
        ("_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_sDv8_iDv8_f", ir.FunctionType(V8, [V8])),
        ("__builtin_IB_subgroup_block_read_ap_prefetch_u16_m8k16v2", ir.FunctionType(ir.VoidType(), [PTR])),
        ("__builtin_IB_subgroup_copyBlock2DAddressPayload", ir.FunctionType(PTR, [PTR])),
        ("__builtin_IB_subgroup_addBlock2DAddressPayloadBlockY", ir.FunctionType(ir.VoidType(), [PTR, I32])))}
    dpas, prefetch, copy, add = decl.values()
    entry, header = fn.append_basic_block("entry"), fn.append_basic_block("for.header")
    body = fn.append_basic_block("for.body")
    ir.IRBuilder(entry).branch(header)
    ir.IRBuilder(header).branch(body)
    b = ir.IRBuilder(body)
    d0 = b.call(dpas, [acc], name="d0")
    first = b.call(copy, [p0], name="c0")
    b.call(prefetch, [first], name="")
    offset = b.sub(y, ir.Constant(I32, 1), name="dy")
    second = b.call(copy, [p1], name="c1")
    b.call(add, [second, offset])
    b.call(prefetch, [second])
    b.load(p0, typ=I32, name="loaded")
    b.call(dpas, [d0], name="d1")
    d2 = b.call(dpas, [acc], name="d2")
    b.fadd(d2, d2, name="used")
    b.branch(header)
    return fn, body


def _order(block) -> list[str]:
    """Each instruction by its name, or a void call by its callee's last word, a branch as "br"."""
    def label(inst):
        if isinstance(inst, ir.CallInstr) and isinstance(inst.callee.function_type.return_type, ir.VoidType):
            return inst.callee.name.split("_")[-1]
        return inst.opname if isinstance(inst, ir.Terminator) else inst.name
    return [label(i) for i in block.instructions]


def test_prefetches_follow_the_copies_and_chained_dpas_move_last():
    fn, body = _latch()
    latch_order.order_latches(fn)
    names = _order(body)
    # both copies and the offset before either prefetch; the loads before the moved DPAS;
    # d2 stays before the fadd that uses it; the branch stays last
    assert names == ["c0", "dy", "c1", "addBlock2DAddressPayloadBlockY", "m8k16v2", "m8k16v2", "loaded",
                     "d2", "used", "d0", "d1", "br"]


def test_latches_without_payload_copies_are_left_alone():
    fn, body = _latch()
    for inst in body.instructions:
        if isinstance(inst, ir.CallInstr) and "copyBlock2D" in inst.callee.name:
            inst.callee.name = "__xetile_other"
    before = _order(body)
    latch_order.order_latches(fn)
    assert _order(body) == before
