"""Atomics on array elements and the memory fence, with a memory order.

Every atomic takes ``sem`` ("relaxed", "acquire", "release", "acq_rel"; default
"acq_rel") and ``scope`` ("workgroup", "device"; default "device"), as Triton's do.

Two forms:

* **Array form** -- an array and one index per dimension, ``xt.atomic_cas(lock, [i], 0, 1)``:
  the program does the atomic once and gets the old element as a scalar. It needs a
  program of one subgroup (a kernel without ``wg_map``). An index outside the array
  touches nothing and returns 0.
* **Tile form** -- the tile first, then the values, as with ``atomic_rmw``'s tile:
  ``xt.atomic_xchg(tile, values)``; every element of the tile is one atomic and the old
  values come back as a tile; ``xt.atomic_cas(tile, cmp, val)`` compares and swaps every
  element.
"""
from __future__ import annotations

from .core import builtin


@builtin
def atomic_cas(x, index, cmp=None, val=None, sem="acq_rel", scope="device", mask=None):
    """Compare-and-swap one element: ``old = x[index]; if old == cmp: x[index] = val``,
    atomically; returns ``old``. ``x`` is an int32/uint32/int64 array, ``index`` a list of
    one index per dimension. A spin lock::

        while xt.atomic_cas(lock, [0], 0, 1, sem="acquire") == 1:
            pass
        ...                                   # the critical section
        xt.atomic_xchg(lock, [0], 0, sem="release")

    Tile form ``xt.atomic_cas(tile, cmp, val, mask=None, sem=, scope=)``: every element of
    an int32/uint32/int64 tile is one compare-and-swap with its element of ``cmp`` and
    ``val`` (tiles of the tile's shape, or scalars); returns the old values as a tile.
    ``mask`` is for a scattered tile, as ``atomic_rmw``'s::

        t = xt.init_tile(flags, [0, 0], [8, 16])
        old = xt.atomic_cas(t, 0, 1)          # claim the free (0) slots; old == 0 where claimed
    """


@builtin
def atomic_xchg(x, index, val=None, mask=None, sem="acq_rel", scope="device"):
    """Exchange: ``old = x[index]; x[index] = val`` atomically; returns ``old``.

    Array form ``xt.atomic_xchg(count, [i], 1)``; tile form
    ``xt.atomic_xchg(tile, values, mask=None)`` (``atomic_rmw("assign", values, tile)``)."""


@builtin
def fence(sem="acq_rel", scope="device"):
    """A memory fence: this program's accesses before it are ordered before those after it
    (``sem`` "acquire", "release" or "acq_rel") among the programs of ``scope``.

    Example: ``xt.store_tile(v, t); xt.fence("release"); xt.atomic_xchg(flag, [0], 1, sem="relaxed")``"""
