"""Codegen of ``xegpu.a_from_c`` (lowering/rewrites/mma_relayout.py): operand A of a dpas from
``r`` blocks in the result lane layout, with subgroup shuffles.

Per lane (L lanes, the Xe codegen reference §2.4): source block t holds its column n in
lane n, one element per row (a DPAS result: component m = ``C[m][n]``). Operand A joins
the r blocks side by side (``A[m][t*L + n] = C_t[m][n]``) and lane i holds the ``r``
consecutive columns ``r*i .. r*i + r - 1`` of every row (ARC, 16-bit: r = 2, the dword
``A[m][2i] | A[m][2i+1] << 16``). Column ``c`` lives in block ``c // L``, lane ``c mod L``.

So for row m and element j of lane i: column ``c = r*i + j`` comes from lane ``c mod L`` of
block ``c // L``, which depends on i. Sub-dword elements of the r blocks are first packed
into dwords (16-bit: the two blocks' row m in one dword, block 0 in the low half), so one
``intel_sub_group_shuffle`` per (row, element) fetches the column from every block at
once; the lane then keeps the half of block ``c // L`` (a lane-dependent shift). ARC 16-bit
A: 2 shuffles per row, 16 per 8x16 A block (ISA: tests/isa/test_chained_mma_isa.py).
"""
from __future__ import annotations

from llvmlite import ir

from ...dialects import xegpu
from . import EMITTERS

I32 = ir.IntType(32)


@EMITTERS.register(xegpu.AFromCOp)
def emit_a_from_c(gen, op: xegpu.AFromCOp) -> None:
    b, lanes = gen.b, gen.target.subgroup_size
    blocks = [_elements(b, gen.v(s)) for s in op.sources]  # blocks[t][m]: this lane's C_t[m][lane]
    rows, per = op.result.type.get_shape()
    elem = blocks[0][0].type
    bits = _bits(elem)
    group = 32 // bits if bits < 32 and len(blocks) % (32 // bits) == 0 else 1  # blocks per shuffled dword
    lane = gen.lib.lane_id(b)
    columns = [b.add(b.mul(lane, ir.Constant(I32, per)), ir.Constant(I32, j)) for j in range(per)]
    sources = [b.urem(c, ir.Constant(I32, lanes)) for c in columns]  # the lane holding column c
    owners = [b.udiv(c, ir.Constant(I32, lanes)) for c in columns]  # the block holding column c
    out = []
    for m in range(rows):
        words = [_dword(b, [blocks[t][m] for t in range(w, w + group)], bits)
                 for w in range(0, len(blocks), group)]
        for j in range(per):
            got = [gen.lib.shuffle_i32(b, w, sources[j]) for w in words]
            out.append(_pick(b, got, owners[j], group, bits, elem))
    gen.values[op.result] = _pack(b, out)


def _bits(t: ir.Type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32}.get(type(t)) or t.width


def _dword(b: ir.IRBuilder, elements: list[ir.Value], bits: int) -> ir.Value:
    """``elements`` packed into one i32, the first in the low bits."""
    word = None
    for k, e in enumerate(elements):
        x = b.bitcast(e, ir.IntType(bits)) if not isinstance(e.type, ir.IntType) else e
        x = b.zext(x, I32) if bits < 32 else x
        x = b.shl(x, ir.Constant(I32, k * bits)) if k else x
        word = x if word is None else b.or_(word, x)
    return word


def _pick(b: ir.IRBuilder, got: list[ir.Value], owner: ir.Value, group: int, bits: int, elem: ir.Type) -> ir.Value:
    """The element of block ``owner`` among the shuffled dwords ``got``."""
    word = got[0]
    for w in range(1, len(got)):  # dword w holds blocks w*group .. w*group + group - 1
        word = b.select(b.icmp_unsigned(">=", owner, ir.Constant(I32, w * group)), got[w], word)
    if group > 1:
        word = b.lshr(word, b.mul(b.urem(owner, ir.Constant(I32, group)), ir.Constant(I32, bits)))
    if bits < 32:
        word = b.trunc(word, ir.IntType(bits))
    return word if word.type == elem else b.bitcast(word, elem)


def _elements(b: ir.IRBuilder, x: ir.Value) -> list[ir.Value]:
    if not isinstance(x.type, ir.VectorType):
        return [x]
    return [b.extract_element(x, ir.Constant(I32, k)) for k in range(x.type.count)]


def _pack(b: ir.IRBuilder, parts: list[ir.Value]) -> ir.Value:
    out = ir.Constant(ir.VectorType(parts[0].type, len(parts)), None)
    for k, p in enumerate(parts):
        out = b.insert_element(out, p, ir.Constant(I32, k))
    return out
