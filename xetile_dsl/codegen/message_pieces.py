"""Codegen of coalesced 2D block loads (lowering/block_messages.py) whose per-lane fragment
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

from ..dialects._vector_ops import ExtractStridedSliceOp
from .builtins_block2d import SPIRV_VECTOR_SIZES

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


def only_sliced(value) -> bool:
    """Whether every use of a loaded ``value`` cuts a slice out of it (a coalesced load)."""
    return bool(value.uses) and all(isinstance(u.operation, ExtractStridedSliceOp) for u in value.uses)


def in_pieces(per_lane: int) -> bool:
    """Whether a fragment of ``per_lane`` elements splits into whole pieces."""
    return per_lane > PIECE and per_lane % PIECE == 0


def load(gen, fn: ir.Function, fields: list[ir.Value], per_lane: int, elem: ir.Type) -> Pieces:
    """Call the pieces wrapper ``fn`` into an entry-block array; read the pieces back."""
    int_elem = ir.IntType(elem.width if isinstance(elem, ir.IntType) else _FLOAT_BITS[type(elem)])
    array_t = ir.ArrayType(int_elem, per_lane)
    entry = gen.b.function.entry_basic_block
    at_entry = ir.IRBuilder(entry)
    at_entry.position_at_start(entry)
    buf = at_entry.alloca(array_t, name="message")
    gen.b.call(fn, fields + [buf])
    piece_t = ir.VectorType(int_elem, PIECE)
    parts = []
    for k in range(per_lane // PIECE):
        ptr = gen.b.gep(buf, [ir.Constant(I32, 0), ir.Constant(I32, k * PIECE)], source_etype=array_t)
        part = gen.b.load(ptr, typ=piece_t)
        parts.append(part if int_elem == elem else gen.b.bitcast(part, ir.VectorType(elem, PIECE)))
    return Pieces(tuple(parts))


def is_pieces_slice(gen, op) -> bool:
    """Whether ``op`` is a slice of a :class:`Pieces` value."""
    return isinstance(op, ExtractStridedSliceOp) and isinstance(gen.values.get(op.vector), Pieces)


def emit_slice(gen, op: ExtractStridedSliceOp, out: ir.Type) -> None:
    """Units ``[first, first + n)`` of a ``[units, per]`` fragment held as :class:`Pieces`."""
    sizes = op.sizes.get_values()
    per = sizes[1] if len(sizes) > 1 else 1
    gen.values[op.result] = gen.v(op.vector).take(gen.b, op.offsets.get_values()[0] * per, sizes[0] * per, out)
