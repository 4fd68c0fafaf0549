"""Codegen of the register transpose (lowering/rewrites/register_transpose.py): ``xegpu.lane_transpose``
and the row slices that join blocks into ``L x L`` squares (also every other
``vector.extract_strided_slice`` / ``insert_strided_slice`` of SIMT fragments).

* ``vector.extract_strided_slice`` / ``vector.insert_strided_slice`` on SIMT fragments are
  lane-local: rows ``o .. o + n`` of a ``[rows, 1]`` fragment are its elements ``o .. o + n``.
* ``xegpu.lane_transpose`` of ``x`` (lane i holds column i of the block, ``x_i[r] = S[r][i]``):
  lane j must end with ``y_j[r] = S[j][r] = x_r[j]``. Diagonal schedule: at step m lane j
  receives ``x_s[j]`` from lane ``s = (j - m) mod L`` (one ``intel_sub_group_shuffle``; step
  0 is the lane's own element, no shuffle), so ``L - 1`` shuffles per square. The
  lane-dependent element choices before and after are whole-fragment rotations by the
  lane id: before, ``z_i[m] = x_i[(i + m) mod L]`` (lane i offers ``z_i[m]`` at step m, the
  element receiver ``i + m`` needs); after, ``y_j[r] = w_j[(j - r) mod L]`` (a rotation and a
  static reversal). A rotation is a barrel shifter: ``log2 L`` selects between the fragment
  and a static rotation of it. Measured with ocloc (docs/decisions/016-transposes.md): per-step dynamic
  ``insertelement`` costs IGC L predicated moves per step, dynamic ``extractelement``
  about 7 instructions each (address arithmetic + an indirect read); the barrel shifter
  is ``L log2 L`` ``sel`` per rotation. Elements narrower than 32 bits are widened for
  the 32-bit shuffle.
"""
from __future__ import annotations

from llvmlite import ir

from ...dialects import xegpu
from ...dialects._vector_ops import ExtractStridedSliceOp, InsertStridedSliceOp
from ..llvm_types import llvm_type
from . import EMITTERS, message_pieces

I32 = ir.IntType(32)


@EMITTERS.register(xegpu.LaneTransposeOp)
def emit_lane_transpose(gen, op: xegpu.LaneTransposeOp) -> None:
    gen.values[op.result] = _lane_transpose(gen, gen.v(op.source))


@EMITTERS.register(ExtractStridedSliceOp)
def emit_extract_strided_slice(gen, op: ExtractStridedSliceOp) -> None:
    """Units of a ``[units, per]`` fragment; of a coalesced load's fragment held in pieces
    (:mod:`.message_pieces`, known from the value, not the op) the pieces they are in."""
    if message_pieces.is_pieces_slice(gen, op):
        message_pieces.emit_slice(gen, op, llvm_type(op.result.type))
        return
    sizes = op.sizes.get_values()
    per = sizes[1] if len(sizes) > 1 else 1  # elements per unit of the [units, per] fragment
    first, count = op.offsets.get_values()[0] * per, sizes[0] * per
    gen.values[op.result] = _slice(gen, op, first, count)


@EMITTERS.register(InsertStridedSliceOp)
def emit_insert_strided_slice(gen, op: InsertStridedSliceOp) -> None:
    dest = _elements(gen.b, gen.v(op.dest))
    first = op.offsets.get_values()[0]
    part = _elements(gen.b, gen.v(op.source))
    dest[first:first + len(part)] = part
    gen.values[op.result] = _pack(gen.b, dest)


def _slice(gen, op: ExtractStridedSliceOp, first: int, count: int) -> ir.Value:
    """Elements ``first .. first + count`` of the fragment; a source carried packed in
    32-bit components (``llvm_type``: more elements than a SPIR-V vector) is sliced by
    whole components and the slice bitcast to its own type (element e is bits
    ``(e % pack) * E`` of component ``e // pack``, LLVM's little-endian bitcast order)."""
    source = gen.v(op.vector)
    elements = 1
    for d in op.vector.type.get_shape():
        elements *= d
    words = source.type.count if isinstance(source.type, ir.VectorType) else 1
    if words == elements:
        return _pack(gen.b, _elements(gen.b, source)[first:first + count])
    pack = elements // words
    part = _pack(gen.b, _elements(gen.b, source)[first // pack:(first + count) // pack])
    return gen.b.bitcast(part, llvm_type(op.result.type))


def _lane_transpose(gen, x: ir.Value) -> ir.Value:
    """Rotate by the lane id, shuffle element by element, rotate back."""
    b, lib = gen.b, gen.lib
    lanes, elem = x.type.count, x.type.element
    lane = lib.lane_id(b)
    rotated = _elements(b, _rotate_by_lane(b, _to_words(b, x), lane))  # z_i[m] = x_i[(i + m) mod L]
    mask = ir.Constant(I32, lanes - 1)
    moved = [rotated[0]] + [lib.shuffle_i32(b, rotated[m], b.and_(b.sub(lane, ir.Constant(I32, m)), mask))
                            for m in range(1, lanes)]  # w_j[m] = z_{j-m}[m] = x_{j-m}[j]
    back = _rotate_by_lane(b, _pack(b, moved), lane)  # v_j[m] = w_j[(j + m) mod L]
    result = b.shuffle_vector(back, back, ir.Constant(ir.VectorType(I32, lanes), [(-r) % lanes for r in range(lanes)]))
    return _from_words(b, result, elem)  # y_j[r] = v_j[-r] = w_j[(j - r) mod L] = x_r[j]


def _rotate_by_lane(b: ir.IRBuilder, words: ir.Value, lane: ir.Value) -> ir.Value:
    """``v[m] = words[(m + lane) mod L]``: a barrel shifter, one static rotation by ``2^k``
    selected per bit k of the lane id (``log2 L`` selects of the fragment)."""
    lanes = words.type.count
    step = 1
    while step < lanes:
        bit = b.icmp_unsigned("!=", b.and_(lane, ir.Constant(I32, step)), ir.Constant(I32, 0))
        order = ir.Constant(ir.VectorType(I32, lanes), [(m + step) % lanes for m in range(lanes)])
        words = b.select(bit, b.shuffle_vector(words, words, order), words)
        step *= 2
    return words


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
