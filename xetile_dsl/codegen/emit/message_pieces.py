"""Codegen of coalesced 2D block loads (lowering/rewrites/block_messages.py) whose per-lane fragment
is larger than one SPIR-V vector (16 components): a 32-row, two-block f16 read gives each
lane 64 elements.

The builtin writes the fragment into a private array in the kernel's entry block (IGC
keeps it in registers, as it does the array of every 2D block read); the load's value is
a :class:`Pieces`: the fragment as 16-element vectors read back from that array.  The
only users are the slices cutting DPAS blocks out (``vector.extract_strided_slice`` on
``[units, per]`` fragments): a slice that is one piece is that piece, one inside a piece
a shuffle of it.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from xdsl.dialects import scf

from ...dialects._vector_ops import ExtractStridedSliceOp
from ..builtins.block2d import SPIRV_VECTOR_SIZES

I32 = ir.IntType(32)
PIECE = max(SPIRV_VECTOR_SIZES)
_FLOAT_BITS = {ir.HalfType: 16, ir.FloatType: 32}


@dataclass(frozen=True)
class Pieces:
    """A lane's fragment as consecutive ``<PIECE x E>`` vectors."""

    parts: tuple[ir.Value, ...]

    def take(self, b: ir.IRBuilder, start: int, n: int, out: ir.Type) -> ir.Value:
        """Elements ``[start, start + n)`` as ``out`` (same bits)."""
        k, first = divmod(start, PIECE)
        if first + n <= PIECE:
            part = self.parts[k]
            if n == PIECE:
                value = part
            else:
                value = b.shuffle_vector(part, part, ir.Constant(ir.VectorType(I32, n), list(range(first, first + n))))
        else:
            elems = [b.extract_element(self.parts[(start + i) // PIECE], ir.Constant(I32, (start + i) % PIECE))
                     for i in range(n)]
            value = ir.Constant(ir.VectorType(elems[0].type, n), None)
            for i, e in enumerate(elems):
                value = b.insert_element(value, e, ir.Constant(I32, i))
        return value if value.type == out else b.bitcast(value, out)


def only_sliced(value, seen: frozenset = frozenset()) -> bool:
    """Whether every use of a loaded ``value`` cuts a slice out of it (a coalesced load),
    also through an ``scf.for`` that carries it (xegpu-rotate-loads: the load before the
    loop is its initial value, the next tile's load is yielded): then the loop's
    argument and result must be only sliced (or unused) too."""
    if value in seen:
        return True
    seen = seen | {value}
    return bool(value.uses) and all(_sliced_use(u, seen) for u in value.uses)


def _sliced_use(use, seen: frozenset) -> bool:
    op = use.operation
    if isinstance(op, ExtractStridedSliceOp):
        return True
    if isinstance(op, scf.ForOp) and use.index >= 3:              # lb, ub, step, then the initial values
        loop, position = op, use.index - 3
    elif isinstance(op, scf.YieldOp) and isinstance(op.parent_op(), scf.ForOp):
        loop, position = op.parent_op(), use.index
    else:
        return False
    arg, result = loop.body.block.args[position + 1], loop.results[position]
    return only_sliced(arg, seen) and (not result.uses or only_sliced(result, seen))


def in_pieces(per_lane: int) -> bool:
    """Whether a fragment of ``per_lane`` elements splits into whole pieces."""
    return per_lane > PIECE and per_lane % PIECE == 0


def load(gen, fn: ir.Function, fields: list[ir.Value], per_lane: int, elem: ir.Type,
         buffer: int | None = None) -> Pieces | BufferPieces:
    """Call the pieces wrapper ``fn`` into an entry-block array; read the pieces back.

    A load xegpu-rotate-loads marked with ``buffer`` (dialects/attributes.ROTATION_BUFFER_ATTR) writes
    the array of that number, shared with the other loads of the number, and its value
    stays there (:class:`BufferPieces`): the loop then carries no vectors, so IGC keeps
    each of the two tiles in flight in one place instead of copying the next one into
    the carried registers at every back edge."""
    int_elem = ir.IntType(elem.width if isinstance(elem, ir.IntType) else _FLOAT_BITS[type(elem)])
    array_t = ir.ArrayType(int_elem, per_lane)
    buf = gen.rotation_buffers.get(buffer) if buffer is not None else None
    if buf is None:
        buf = _entry_array(gen, array_t)
        if buffer is not None:
            gen.rotation_buffers[buffer] = buf
    gen.b.call(fn, fields + [buf])
    pieces = BufferPieces(buf, array_t, elem)
    return pieces if buffer is not None else pieces.read(gen.b, range(per_lane // PIECE))


def _entry_array(gen, array_t: ir.ArrayType) -> ir.Value:
    entry = gen.b.function.entry_basic_block
    at_entry = ir.IRBuilder(entry)
    at_entry.position_at_start(entry)
    buf = at_entry.alloca(array_t, name="message")
    if gen.b.block is entry:   # llvmlite keeps the position as an index: step over the alloca
        gen.b.position_at_end(entry)
    return buf


@dataclass(frozen=True)
class BufferPieces:
    """A fragment left in its private array, read piece by piece where it is used."""

    buf: ir.Value
    array_t: ir.ArrayType
    elem: ir.Type

    def read(self, b: ir.IRBuilder, indices) -> Pieces:
        """The pieces ``indices`` read from the array (the others None)."""
        int_elem = self.array_t.element
        piece_t = ir.VectorType(int_elem, PIECE)
        parts = [None] * (self.array_t.count // PIECE)
        for k in indices:
            ptr = b.gep(self.buf, [ir.Constant(I32, 0), ir.Constant(I32, k * PIECE)], source_etype=self.array_t)
            part = b.load(ptr, typ=piece_t)
            parts[k] = part if int_elem == self.elem else b.bitcast(part, ir.VectorType(self.elem, PIECE))
        return Pieces(tuple(parts))

    def take(self, b: ir.IRBuilder, start: int, n: int, out: ir.Type) -> ir.Value:
        return self.read(b, range(start // PIECE, (start + n - 1) // PIECE + 1)).take(b, start, n, out)


def is_pieces_slice(gen, op) -> bool:
    """Whether ``op`` is a slice of a :class:`Pieces` or :class:`BufferPieces` value."""
    return isinstance(op, ExtractStridedSliceOp) and isinstance(gen.values.get(op.vector), (Pieces, BufferPieces))


def emit_slice(gen, op: ExtractStridedSliceOp, out: ir.Type) -> None:
    """Units ``[first, first + n)`` of a ``[units, per]`` fragment held as :class:`Pieces`."""
    sizes = op.sizes.get_values()
    per = sizes[1] if len(sizes) > 1 else 1
    gen.values[op.result] = gen.v(op.vector).take(gen.b, op.offsets.get_values()[0] * per, sizes[0] * per, out)
