"""The interpreter's memory: numpy arrays as allocations in one flat byte address space.

Each array a kernel receives becomes an :class:`Allocation` that *views* the caller's
memory (so stores land in the caller's array in place) and gets a distinct, aligned
byte address, so that the i64-address forms of the IR (``memref.extract_aligned_pointer_as_index``,
``init_tile %addr[...] : i64``, scattered tiles) work as on the device.

Tiles read and write through :func:`load`, :func:`store`, :func:`atomic_rmw`: elements
outside the tile's base matrix read the padding value and are not written (XeTile's
out-of-bounds rules); an in-bounds element outside its allocation is a kernel bug and
raises :class:`~.values.InterpreterError`.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from .values import InterpreterError, TileValue, cast

_BASE_ADDRESS = 0x1000_0000
_ALIGN = 1 << 16


@dataclass
class Allocation:
    """One array's memory: ``data`` is a flat (1-D) view of the caller's array."""

    name: str
    address: int
    data: np.ndarray

    def view(self, dtype: np.dtype) -> np.ndarray:
        """The allocation's bytes as a flat array of ``dtype`` (a view)."""
        if dtype == self.data.dtype:
            return self.data
        raw = self.data.view(np.uint8)
        usable = raw.size - raw.size % dtype.itemsize
        return raw[:usable].view(dtype)

    @property
    def nbytes(self) -> int:
        return self.data.nbytes


@dataclass(frozen=True)
class ArrayRef:
    """A memref value: ``alloc`` seen as an array of ``sizes`` and ``strides`` (elements)
    starting ``offset`` elements into the allocation."""

    alloc: Allocation
    offset: int
    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return self.alloc.data.dtype


class Memory:
    """All allocations of one launch, addressable by byte address."""

    def __init__(self):
        self._allocs: list[Allocation] = []
        self._next = _BASE_ADDRESS

    def add_array(self, name: str, array: np.ndarray) -> ArrayRef:
        """Register a numpy array; returns the memref value that views it.

        A strided view (``big[1:5, 2:7]``: rows further apart than their width) is
        registered as the span of memory from its first element to its last, seen with
        the view's strides, so loads read the view and stores land in it (and in the
        array it views), as a compiled launch writes it back."""
        flat = _flat_span(name, array)
        alloc = Allocation(name, self._next, flat)
        self._allocs.append(alloc)
        self._next += -(-max(flat.nbytes, 1) // _ALIGN) * _ALIGN + _ALIGN
        strides = tuple(s // array.itemsize for s in array.strides)
        return ArrayRef(alloc, 0, tuple(array.shape), strides)

    def allocate(self, name: str, shape, dtype: np.dtype) -> ArrayRef:
        """A fresh zero-filled allocation (``memref.alloc``)."""
        return self.add_array(name, np.zeros(tuple(shape), dtype))

    def find(self, address: int) -> Allocation:
        """The allocation that holds byte ``address``."""
        starts = [a.address for a in self._allocs]
        i = bisect.bisect_right(starts, address) - 1
        if i < 0 or address >= self._allocs[i].address + max(self._allocs[i].nbytes, 1):
            raise InterpreterError(f"address {address:#x} is not inside any array of this launch")
        return self._allocs[i]

    def element_index(self, address: int, dtype: np.dtype) -> tuple[Allocation, int]:
        """(allocation, element index of ``dtype``) for a byte address."""
        alloc = self.find(address)
        delta = address - alloc.address
        if delta % dtype.itemsize:
            raise InterpreterError(f"address {address:#x} is not aligned to the {dtype.itemsize}-byte elements "
                                   f"of the tile")
        return alloc, delta // dtype.itemsize


def _flat_span(name: str, array: np.ndarray) -> np.ndarray:
    """A flat (1-D, unit-stride) view of the memory ``array`` spans: the array itself
    when C-contiguous, else from its first element to its last."""
    if array.flags.c_contiguous:
        return array.reshape(-1)
    item = array.itemsize
    if any(s < 0 or s % item for s in array.strides):
        raise InterpreterError(f"array {name!r}: strides {array.strides} are not non-negative multiples of its "
                               f"{item}-byte elements; pass numpy.ascontiguousarray(...)")
    span = 0 if array.size == 0 else 1 + sum((n - 1) * (s // item) for n, s in zip(array.shape, array.strides))
    try:
        return np.lib.stride_tricks.as_strided(array, (span,), (item,), writeable=array.flags.writeable)
    except TypeError:   # a dtype the array interface cannot name (ml_dtypes' fp8): through its bits
        bits = np.lib.stride_tricks.as_strided(array.view(f"u{item}"), (span,), (item,),
                                               writeable=array.flags.writeable)
        return bits.view(array.dtype)


def _checked(tile: TileValue, idx: np.ndarray, active: np.ndarray, what: str) -> np.ndarray:
    flat = tile.alloc.view(tile.dtype)
    bad = active & ((idx < 0) | (idx >= flat.size))
    if bad.any():
        where = tuple(int(v) for v in np.argwhere(bad)[0])
        raise InterpreterError(f"{what}: element {where} of the tile (element {int(idx[where])} of array "
                               f"{tile.alloc.name!r}, which has {flat.size}) lies outside the array; the tile's "
                               f"sizes/strides/offsets describe memory that does not exist")
    return flat


def load(tile: TileValue, padding, mask: np.ndarray | None = None) -> np.ndarray:
    """The tile's elements; out-of-bounds (or masked-off) elements read ``padding``."""
    idx, inside = tile.indices()
    active = inside if mask is None else inside & mask
    if tile.scattered:
        flat = tile.alloc.view(tile.dtype)
        active = active & (idx >= 0) & (idx < flat.size)  # gather: outside the array reads padding
    else:
        flat = _checked(tile, idx, active, "load_tile")
    out = np.full(tile.shape, cast(padding, tile.dtype), tile.dtype)
    out[active] = flat[idx[active]]
    return out


def store(tile: TileValue, value: np.ndarray, mask: np.ndarray | None = None, what: str = "store_tile") -> None:
    """Write ``value`` to the tile's in-bounds (and unmasked) elements; the rest is dropped."""
    idx, inside = tile.indices()
    active = inside if mask is None else inside & mask
    if tile.scattered:
        flat = tile.alloc.view(tile.dtype)
        active = active & (idx >= 0) & (idx < flat.size)  # scatter: lanes outside the array write nothing
    else:
        flat = _checked(tile, idx, active, what)
    # several elements may alias one address (a stride of 0, repeated scatter offsets):
    # the last one in row-major order wins, as numpy's fancy assignment guarantees
    flat[idx[active]] = np.asarray(value, tile.dtype)[active]


def atomic_rmw(tile: TileValue, value: np.ndarray, combine, mask: np.ndarray | None = None,
               cmp: np.ndarray | None = None) -> np.ndarray:
    """Apply ``memory = combine(memory, value)`` per element, one element at a time in
    row-major order (so aliasing elements see each other's updates); returns the values
    each element saw before its update (0 for out-of-bounds or masked-off elements, which
    are skipped).  With ``cmp`` (and ``combine`` None) it is a compare-and-swap: an element
    whose memory equals its ``cmp`` becomes its ``value``."""
    if cmp is not None:
        cmp = np.asarray(cmp, tile.dtype)
        pairs = np.stack([np.asarray(value, tile.dtype), cmp], axis=-1)  # (value, cmp) per element
        value = pairs
        combine = lambda old, vc: np.where(old == vc[..., 1], vc[..., 0], old)  # noqa: E731
    idx, inside = tile.indices()
    if mask is not None:
        inside = inside & mask
    if tile.scattered:
        flat = tile.alloc.view(tile.dtype)
        inside = inside & (idx >= 0) & (idx < flat.size)  # lanes outside the array touch nothing
    else:
        flat = _checked(tile, idx, inside, "atomic_rmw")
    old = np.zeros(tile.shape, tile.dtype)
    value = np.asarray(value, tile.dtype) if cmp is None else value
    targets = idx[inside]
    if np.unique(targets).size == targets.size:  # no aliasing: one vectorised update
        old[inside] = flat[targets]
        flat[targets] = cast(combine(old[inside], value[inside]), tile.dtype)
        return old
    for pos in zip(*np.nonzero(inside)):
        i = idx[pos]
        old[pos] = flat[i]
        flat[i] = cast(combine(flat[i], value[pos]), tile.dtype)
    return old
