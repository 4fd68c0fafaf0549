"""Array tables: one kernel argument standing for several 2-D arrays of one dtype.

``xd.array_table([a0, a1, ...])`` checks its entries on the host (no device is touched):
they must be numpy arrays of one dtype and rank 2, rows at least NARROW_ROW_BYTES wide
(the kernel reads entries with 2D block messages), and there must be at least one.

At a launch a table travels as its device table (:class:`TableMeta`), an ``i64`` array of
``[len(table), 4]`` rows ``(address of the first element, rows, columns, row stride in
elements)`` (docs/decisions/027-array-tables.md), passed like any i64 array argument.
Compiled launches (:func:`launch_with_tables`) stage each numpy entry into a 64-byte
aligned copy with a padded pitch, list its host address (the CPU device shares host
memory; a GPU is refused), and copy the copies back after the launch; the interpreter
lists the addresses of its own allocations (interpreter/launch.py).
"""
from __future__ import annotations

import numpy as np

from ..errors import LaunchError
from .._lazy import LazyModule
from .abi import ELEMENT_TYPES
from .arrays import describe, is_device_array_type, type_name

# the 2D block message facts, at the first table: ``import xetile_dsl`` loads no target module
launch_facts = LazyModule("xetile_dsl.targets.launch_facts", globals())  # import xetile_dsl (which exports array_table) loads no target module

#: the rank every entry of a table has
TABLE_RANK = 2

#: the i64 fields of one entry of the device table, in order
ENTRY_FIELDS = ("address", "rows", "cols", "row_stride")


class ArrayTable:
    """The arrays of one table, in order, with their common dtype (a numpy dtype).

    Example::

        import numpy as np
        import xetile_dsl as xd

        tab = xd.array_table([np.zeros((40, 32), np.float16), np.zeros((17, 64), np.float16)])
        assert len(tab) == 2 and tab.dtype == np.float16
        assert tab.shapes == ((40, 32), (17, 64))
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
    if is_device_array_type(type(value)) and describe(value, where) is not None:
        raise LaunchError(f"{where}: device arrays (dpnp/USM, torch XPU, pyopencl) in array tables are not "
                          "supported yet; pass numpy arrays (copied in and back like numpy arguments)")
    raise LaunchError(f"{where}: expected a numpy array of rank {TABLE_RANK}, got {type_name(value)}")


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
    if dtype.name not in {numpy_name for numpy_name, _ in ELEMENT_TYPES.values()}:
        raise LaunchError(f"array_table: arrays of dtype {dtype} are not supported; use one of "
                          f"{', '.join(sorted({n for n, _ in ELEMENT_TYPES.values()}))}")
    for i, (entry_dtype, shape) in enumerate(metas):
        if entry_dtype != dtype:
            raise LaunchError(f"array_table entry {i}: dtype {entry_dtype}, but entry 0 is {dtype}; every entry "
                              "of a table has one dtype (convert it, e.g. a.astype(...), or use two tables)")
        if len(shape) != TABLE_RANK:
            raise LaunchError(f"array_table entry {i}: rank {len(shape)} (shape {shape}); every entry of a "
                              f"table is a {TABLE_RANK}-D array (pass x.reshape(rows, cols) or a 2-D slice)")
        if 0 in shape:
            raise LaunchError(f"array_table entry {i}: the array is empty (shape {shape}); leave it out")
        if shape[1] * entry_dtype.itemsize < launch_facts.NARROW_ROW_BYTES:
            raise LaunchError(f"array_table entry {i}: rows of {shape[1] * entry_dtype.itemsize} bytes (shape "
                              f"{shape}); kernels read table entries with 2D block messages, which need rows of "
                              f"at least {launch_facts.NARROW_ROW_BYTES} bytes "
                              f"({launch_facts.NARROW_ROW_BYTES // entry_dtype.itemsize} "
                              "elements): pad the columns")
    return ArrayTable(entries, dtype, tuple(shape for _, shape in metas))


class TableMeta(np.ndarray):
    """The device table of an :class:`ArrayTable` (``[G, 4]`` int64, ENTRY_FIELDS), which
    keeps the table's dtype (``entry_dtype``) and the host arrays it lists (``entries``)."""

    entry_dtype = None
    entries = ()


def table_meta(table: ArrayTable, entries: list, addresses: list) -> TableMeta:
    """The device table listing ``entries`` (host arrays) at ``addresses``."""
    meta = np.zeros((len(entries), len(ENTRY_FIELDS)), np.int64).view(TableMeta)
    for i, (entry, address) in enumerate(zip(entries, addresses)):
        meta[i] = (address, entry.shape[0], entry.shape[1], entry.strides[0] // entry.itemsize)
    meta.entry_dtype, meta.entries = table.dtype, tuple(entries)
    return meta


def _staged(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` whose first element and row pitch are BASE_ALIGN_BYTES-aligned
    (what 2D block messages need of a surface)."""
    rows, cols = array.shape
    align = launch_facts.BASE_ALIGN_BYTES
    pitch = -(-cols * array.itemsize // align) * align // array.itemsize
    raw = np.zeros(rows * pitch + align // array.itemsize, array.dtype)
    skip = (-raw.ctypes.data % align) // array.itemsize
    staged = raw[skip:skip + rows * pitch].reshape(rows, pitch)[:, :cols]
    staged[...] = array
    return staged


def launch_with_tables(launch, device, args: tuple, kwargs: dict):
    """``launch(args, kwargs)`` with every :class:`ArrayTable` replaced by its device
    table of staged entries at their host addresses; the entries are copied back after."""
    if device.kind != "cpu":
        raise LaunchError("array tables of numpy arrays need a device that shares host memory (the OpenCL CPU "
                          f"device); {device.kind} devices are not supported yet")
    staged: list = []

    def meta_of(value):
        if value.__class__ is not ArrayTable:
            return value
        copies = [_staged(a) for a in value.arrays]
        staged.extend(zip(value.arrays, copies))
        return table_meta(value, copies, [c.ctypes.data for c in copies])

    result = launch(tuple(map(meta_of, args)), {k: meta_of(v) for k, v in kwargs.items()})
    for original, copy in staged:
        if original.flags.writeable:
            original[...] = copy
    return result


