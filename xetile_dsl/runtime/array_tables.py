"""Array tables: one kernel argument standing for several 2-D arrays of one dtype.

``xd.array_table([a0, a1, ...])`` checks its entries on the host (no device is touched):
they must be numpy arrays or device arrays (dpnp/USM, torch XPU, pyopencl) of one dtype
and rank 2, and there must be at least one.  The device form of a table, an ``i64``
array of ``[len(table), 4]`` rows ``(address of the first element, rows, columns, row
stride in elements)``, is described in docs/decisions/027-array-tables.md.

Launching a kernel with a table is not supported yet: every flavour (compiled, CPU
device, interpreter) refuses such an argument with the same :class:`LaunchError`
(:func:`refuse_launch`) before anything is compiled.
"""
from __future__ import annotations

import numpy as np

from ..errors import LaunchError
from .arrays import describe, is_device_array_type, type_name

#: the rank every entry of a table has
TABLE_RANK = 2

#: the i64 fields of one entry of the device table, in order
ENTRY_FIELDS = ("address", "rows", "cols", "row_stride")


class ArrayTable:
    """The arrays of one table, in order, with their common dtype (a numpy dtype).

    Example::

        import numpy as np
        import xetile_dsl as xd

        tab = xd.array_table([np.zeros((40, 24), np.float16), np.zeros((17, 64), np.float16)])
        assert len(tab) == 2 and tab.dtype == np.float16
        assert tab.shapes == ((40, 24), (17, 64))
    """

    __slots__ = ("arrays", "dtype", "shapes")

    def __init__(self, arrays: tuple, dtype: np.dtype, shapes: tuple):
        self.arrays, self.dtype, self.shapes = arrays, dtype, shapes

    @property
    def ndim(self) -> int:
        """The rank of every entry."""
        return TABLE_RANK

    def __len__(self) -> int:
        return len(self.arrays)

    def __repr__(self) -> str:
        return f"ArrayTable({len(self)} x {self.dtype} rank {TABLE_RANK}, shapes {list(self.shapes)})"


def _entry_meta(value, index: int) -> tuple[np.dtype, tuple]:
    """(dtype, shape) of entry ``index``; LaunchError for anything but an array."""
    where = f"array_table entry {index}"
    if isinstance(value, np.ndarray):
        return value.dtype, tuple(value.shape)
    if is_device_array_type(type(value)):
        desc = describe(value, where)
        if desc is not None:
            return desc.dtype, tuple(desc.shape)
    raise LaunchError(f"{where}: expected a numpy array, a dpnp/USM array, a torch XPU tensor or a pyopencl "
                      f"array of rank {TABLE_RANK}, got {type_name(value)}")


def array_table(arrays) -> ArrayTable:
    """A table of 2-D arrays of one dtype, passed to a kernel as one argument.

    Refused (LaunchError, before any device is touched): an empty table, an entry that
    is not an array, entries of different dtypes, an entry whose rank is not 2.

    Example::

        import numpy as np
        import xetile_dsl as xd

        a = [np.ones((m, 32), np.float16) for m in (48, 20, 33)]
        tab = xd.array_table(a)
        assert len(tab) == 3 and tab.shapes[1] == (20, 32)
    """
    if isinstance(arrays, np.ndarray) or is_device_array_type(type(arrays)):
        raise LaunchError("array_table takes a list of arrays, got one array; write xd.array_table([a])")
    try:
        entries = tuple(arrays)
    except TypeError:
        raise LaunchError(f"array_table takes a list of arrays, got {type_name(arrays)}") from None
    if not entries:
        raise LaunchError("array_table: the table is empty; it needs at least one array "
                          "(skip the launch when there is nothing to compute)")
    metas = [_entry_meta(value, i) for i, value in enumerate(entries)]
    dtype = metas[0][0]
    for i, (entry_dtype, shape) in enumerate(metas):
        if entry_dtype != dtype:
            raise LaunchError(f"array_table entry {i}: dtype {entry_dtype}, but entry 0 is {dtype}; every entry "
                              "of a table has one dtype (convert it, e.g. a.astype(...), or use two tables)")
        if len(shape) != TABLE_RANK:
            raise LaunchError(f"array_table entry {i}: rank {len(shape)} (shape {shape}); every entry of a "
                              f"table is a {TABLE_RANK}-D array (pass x.reshape(rows, cols) or a 2-D slice)")
    return ArrayTable(entries, dtype, tuple(shape for _, shape in metas))


def refuse_launch(name: str, table: ArrayTable) -> LaunchError:
    """The error every flavour gives for a table passed to a kernel (not supported yet)."""
    return LaunchError(f"argument {name!r}: {table!r}: kernels cannot take array tables yet (the device "
                       "table is specified in docs/decisions/027-array-tables.md, the launch path and "
                       "tab[g] in kernels are not implemented); pass the arrays one per argument, or "
                       "stack them into one array with per-group offsets (tests/e2e/test_grouped_gemm.py)")
