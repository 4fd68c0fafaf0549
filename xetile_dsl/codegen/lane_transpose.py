"""Codegen of the register transpose (lowering/register_transpose.py): ``xegpu.lane_transpose``
and the row slices that join blocks into ``L x L`` squares.

* ``vector.extract_strided_slice`` / ``vector.insert_strided_slice`` on SIMT fragments are
  lane-local: rows ``o .. o + n`` of a ``[rows, 1]`` fragment are its elements ``o .. o + n``.
* ``xegpu.lane_transpose`` of ``x`` (lane i holds column i of the block, ``x_i[r] = S[r][i]``):
  lane j must end with ``y_j[r] = S[j][r] = x_r[j]``. Diagonal schedule, step k = 0 .. L-1:
  lane i offers its element ``(i - k) mod L``, lane j reads the offer of lane ``s = (j + k)
  mod L`` with one ``intel_sub_group_shuffle`` (step 0 is the lane's own element: no
  shuffle) and puts it at element s. So each step is one shuffle with a lane-dependent
  element choice before (dynamic extract) and after (dynamic insert); ``L - 1`` shuffles
  per square. Elements narrower than 32 bits are widened for the 32-bit shuffle.
  Measured with ocloc (docs/design.md): dynamic indexing compiles to IGC's indirect
  register moves and is cheaper than a select chain over the L elements.
"""
from __future__ import annotations

from llvmlite import ir
from xdsl.ir import Operation

from ..dialects import xegpu
from ..dialects._vector_ops import ExtractStridedSliceOp, InsertStridedSliceOp

I32 = ir.IntType(32)


def handles(op: Operation) -> bool:
    return isinstance(op, (xegpu.LaneTransposeOp, ExtractStridedSliceOp, InsertStridedSliceOp))


def emit(gen, op: Operation) -> None:
    """Lower ``op`` into ``gen`` (a ``simt_to_llvm._KernelGen``)."""
    if isinstance(op, xegpu.LaneTransposeOp):
        gen.values[op.result] = _lane_transpose(gen, gen.v(op.source))
    elif isinstance(op, ExtractStridedSliceOp):
        first, count = op.offsets.get_values()[0], op.sizes.get_values()[0]
        gen.values[op.result] = _pack(gen.b, _elements(gen.b, gen.v(op.vector))[first:first + count])
    else:
        dest = _elements(gen.b, gen.v(op.dest))
        first = op.offsets.get_values()[0]
        part = _elements(gen.b, gen.v(op.source))
        dest[first:first + len(part)] = part
        gen.values[op.result] = _pack(gen.b, dest)


def _lane_transpose(gen, x: ir.Value) -> ir.Value:
    b, lib = gen.b, gen.lib
    lanes = x.type.count
    elem = x.type.element
    words = _to_words(b, x)
    lane = lib.lane_id(b)
    mask = ir.Constant(I32, lanes - 1)
    out = ir.Constant(words.type, None)
    for k in range(lanes):
        offer = b.extract_element(words, b.and_(b.sub(lane, ir.Constant(I32, k)), mask))
        if k == 0:
            out = b.insert_element(out, offer, lane)
            continue
        source = b.and_(b.add(lane, ir.Constant(I32, k)), mask)
        out = b.insert_element(out, lib.shuffle_i32(b, offer, source), source)
    return _from_words(b, out, elem)


def _to_words(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """The fragment as ``<L x i32>`` (f32 bitcast, 16-bit widened)."""
    lanes, elem = x.type.count, x.type.element
    if isinstance(elem, ir.FloatType):
        return b.bitcast(x, ir.VectorType(I32, lanes))
    if isinstance(elem, ir.HalfType):
        x = b.bitcast(x, ir.VectorType(ir.IntType(16), lanes))
        elem = x.type.element
    if elem.width < 32:
        return b.zext(x, ir.VectorType(I32, lanes))
    return x


def _from_words(b: ir.IRBuilder, words: ir.Value, elem: ir.Type) -> ir.Value:
    lanes = words.type.count
    if isinstance(elem, ir.FloatType):
        return b.bitcast(words, ir.VectorType(elem, lanes))
    if isinstance(elem, ir.HalfType):
        return b.bitcast(b.trunc(words, ir.VectorType(ir.IntType(16), lanes)), ir.VectorType(elem, lanes))
    if elem.width < 32:
        return b.trunc(words, ir.VectorType(elem, lanes))
    return words


def _elements(b: ir.IRBuilder, x: ir.Value) -> list[ir.Value]:
    if not isinstance(x.type, ir.VectorType):
        return [x]
    return [b.extract_element(x, ir.Constant(I32, k)) for k in range(x.type.count)]


def _pack(b: ir.IRBuilder, parts: list[ir.Value]) -> ir.Value:
    if len(parts) == 1:
        return parts[0]
    out = ir.Constant(ir.VectorType(parts[0].type, len(parts)), None)
    for k, p in enumerate(parts):
        out = b.insert_element(out, p, ir.Constant(I32, k))
    return out
