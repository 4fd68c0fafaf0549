"""A 2-D tensor descriptor in codegen: the surface and the block position as LLVM values."""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir


@dataclass
class TDesc:
    """A 2-D tensor descriptor as plain values: the surface and the block position."""

    base: ir.Value
    width_bytes: ir.Value
    height: ir.Value
    pitch_bytes: ir.Value
    x: ir.Value
    y: ir.Value
    #: the true 64-bit position (x, y) in a kernel with wide offsets (x, y are then its
    #: saturation, see coordinates.py); None on the 32-bit path
    wide_x: ir.Value | None = None
    wide_y: ir.Value | None = None

    def fields(self) -> list[ir.Value]:
        """Every value the descriptor is made of (what loops and branches carry)."""
        wide = [self.wide_x, self.wide_y] if self.wide_x is not None else []
        return self.surface() + wide

    def surface(self) -> list[ir.Value]:
        """The arguments of a block message: the surface and the 32-bit position."""
        return [self.base, self.width_bytes, self.height, self.pitch_bytes, self.x, self.y]
