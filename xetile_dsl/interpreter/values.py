"""Runtime values of the XeTile interpreter: element types, scalars, vectors and tiles.

Every SSA value of the IR is held as one Python object:

* integers, floats and ``index`` scalars: numpy scalars of the exact element type
  (``index`` is ``int64``, ``i1`` is ``bool``), so that arithmetic wraps and rounds like
  the machine's;
* vectors: numpy arrays of the element type, shaped like the vector type;
* memrefs: :class:`~.memory.ArrayRef` (an allocation plus offset, sizes, strides);
* tiles: :class:`TileValue`, the descriptor ``init_tile`` creates (no data).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute

from .. import dtypes
from ..errors import XeTileError
from ..dialects.types import type_name


class InterpreterError(XeTileError):
    """The interpreted kernel did something undefined (or the IR holds an op we do not run).

    When the failing op carries a source location, the message starts with the user's
    ``file:line:col``."""


BF16 = np.dtype(ml_dtypes.bfloat16)


#: how the interpreter holds the element types no array holds: index as int64, i1 as bool
_HELD_AS = {"index": np.dtype(np.int64), "i1": np.dtype(np.bool_)}


def np_dtype(t: Attribute) -> np.dtype:
    """The numpy dtype holding elements of the xDSL scalar type ``t``."""
    try:
        name = type_name(t)
    except ValueError:
        raise InterpreterError(f"the interpreter has no numpy type for {t}") from None
    held = _HELD_AS.get(name)
    return held if held is not None else dtypes.numpy_dtype(name)


def element_type(t: Attribute) -> Attribute:
    """The element type of a vector/memref/tile type, or ``t`` for a scalar type."""
    return getattr(t, "element_type", t)


def unsigned_dtype(dt: np.dtype) -> np.dtype:
    """The unsigned integer dtype of the same width (for arith's ``*ui`` ops)."""
    if dt == np.bool_:
        return dt
    return np.dtype(f"uint{dt.itemsize * 8}")


def make(value, t: Attribute):
    """``value`` converted to the interpreter's representation of type ``t``."""
    dt = np_dtype(element_type(t))
    if isinstance(t, VectorType):
        arr = np.asarray(value)
        shape = tuple(t.get_shape())
        return np.broadcast_to(arr.astype(dt, copy=False), shape).copy() if arr.shape != shape else arr.astype(dt)
    return dt.type(value)


def cast(value, dt: np.dtype):
    """``value`` (scalar or array) converted to ``dt`` with C-like wrap-around for ints."""
    arr = np.asarray(value)
    with np.errstate(all="ignore"):
        out = arr.astype(dt)
    return out if arr.ndim else dt.type(out[()])


def round_tf32(x: np.ndarray) -> np.ndarray:
    """Round f32 values to tf32 (10 explicit mantissa bits), to nearest even.

    tf32 keeps f32's 8-bit exponent; infinities and NaNs pass unchanged."""
    x = np.asarray(x, np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    lsb = (bits >> 13) & 1
    rounded = ((bits + 0xFFF + lsb) & ~np.uint64(0x1FFF)).astype(np.uint32)
    finite = np.isfinite(x)
    return np.where(finite, rounded.view(np.float32), x)


@dataclass(frozen=True)
class TileValue:
    """A tile descriptor: where a 2-D block of a base matrix lives (``init_tile``).

    Element ``(i, j)`` of a block tile is at element index
    ``base + (offsets[0] + i) * strides[0] + (offsets[1] + j) * strides[1]`` of
    ``alloc`` and is in bounds when ``0 <= offsets[d] + idx_d < sizes[d]``.  A scattered
    tile instead holds per-element ``element_offsets`` from ``base``."""

    alloc: object
    base: int
    shape: tuple[int, int]
    dtype: np.dtype
    offsets: tuple[int, int] = (0, 0)
    sizes: tuple[int, int] = (0, 0)
    strides: tuple[int, int] = (0, 1)
    inner_blocks: tuple[int, ...] = ()
    element_offsets: np.ndarray | None = None

    @property
    def scattered(self) -> bool:
        return self.element_offsets is not None

    def moved(self, dx: int, dy: int) -> "TileValue":
        """``update_tile_offset``: the same tile moved by (dx rows, dy columns)."""
        return replace(self, offsets=(self.offsets[0] + int(dx), self.offsets[1] + int(dy)))

    def indices(self) -> tuple[np.ndarray, np.ndarray]:
        """(element indices into the allocation, in-bounds mask), both shaped like the tile."""
        if self.scattered:
            idx = self.base + self.element_offsets.astype(np.int64)
            return idx, np.ones(self.shape, bool)
        rows = self.offsets[0] + np.arange(self.shape[0], dtype=np.int64)[:, None]
        cols = self.offsets[1] + np.arange(self.shape[1], dtype=np.int64)[None, :]
        inside = (rows >= 0) & (rows < self.sizes[0]) & (cols >= 0) & (cols < self.sizes[1])
        idx = self.base + rows * self.strides[0] + cols * self.strides[1]
        return np.broadcast_to(idx, self.shape), inside


def pack(value: np.ndarray, blocks) -> np.ndarray:
    """2-D ``[M, N]`` -> 4-D ``[M/bm, N/bn, bm, bn]`` (``tile_pack``)."""
    (m, n), (bm, bn) = value.shape, blocks
    return value.reshape(m // bm, bm, n // bn, bn).transpose(0, 2, 1, 3).copy()


def unpack(value: np.ndarray) -> np.ndarray:
    """4-D ``[M/bm, N/bn, bm, bn]`` -> 2-D ``[M, N]`` (``tile_unpack``)."""
    a, b, bm, bn = value.shape
    return value.transpose(0, 2, 1, 3).reshape(a * bm, b * bn).copy()
