"""Array tables: one kernel argument standing for several 2-D arrays of one dtype.

``xd.array_table([a0, a1, ...])`` checks its entries on the host (no kernel is launched):
they must be arrays of one dtype and rank 2, rows at least NARROW_ROW_BYTES wide (the
kernel reads entries with 2D block messages), at least one, and of one kind:

* **numpy arrays**, copied in and back like numpy arguments;
* **USM arrays** (dpnp, ``usm_ndarray``, anything with ``__sycl_usm_array_interface__``)
  and **torch XPU tensors** (``data_ptr()``, on their device's current stream's queue),
  used in place: all on one SYCL queue, each with a layout 2D block messages can tile
  (unit column stride, a row pitch that is a multiple of PITCH_ALIGN_BYTES, the first
  element BASE_ALIGN_BYTES-aligned; :func:`check_entry_layout`).
* **torch CUDA tensors**, used in place by the NVIDIA backend (unit column stride, rows
  that do not overlap; no 2D block rule: NVIDIA kernels read entries per lane).  At a
  launch their device table is an ``int64`` CUDA tensor (:func:`cuda_table_meta`) made on
  torch's current stream, the one the kernel runs on.

At a launch a table travels as its device table (:class:`TableMeta`), an ``i64`` array of
``[len(table), 4]`` rows ``(address of the first element, rows, columns, row stride in
elements)`` (docs/decisions/027-array-tables.md), passed like any i64 array argument.
Compiled launches (:func:`launch_with_tables`) list a USM table's own pointers and run on
its queue (docs/decisions/046-device-array-tables.md); they stage each numpy entry into a
64-byte aligned copy with a padded pitch, list its host address (the CPU device shares
host memory; a GPU is refused), and copy the copies back after the launch; the
interpreter lists the addresses of its own allocations (interpreter/launch.py), of host
copies of device entries, which it writes back.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .. import dtypes
from ..errors import ArrayTableError, LaunchError
from .._lazy import LazyModule
from .abi import ELEMENT_TYPES, MAX_TILED_EXTENT
from .arrays import DeviceArray, describe, from_host, is_device_array_type, is_pyopencl_array_type, \
    queue_label, same_queue, to_host, type_name

# the 2D block message facts, at the first table: ``import xetile_dsl`` loads no target module
launch_facts = LazyModule("xetile_dsl.targets.launch_facts", globals())  # import xetile_dsl (which exports array_table) loads no target module

#: the rank every entry of a table has
TABLE_RANK = 2

#: the i64 fields of one entry of the device table, in order
ENTRY_FIELDS = ("address", "rows", "cols", "row_stride")


class ArrayTable:
    """The arrays of one table, in order, with their common dtype (a numpy dtype); for a
    table of device arrays, each entry's :class:`~.arrays.DeviceArray` (``devices``) and
    their one SYCL queue (``queue``; None for numpy entries).

    Example::

        import numpy as np
        import xetile_dsl as xd

        tab = xd.array_table([np.zeros((40, 32), np.float16), np.zeros((17, 64), np.float16)])
        assert len(tab) == 2 and tab.dtype == np.float16
        assert tab.shapes == ((40, 32), (17, 64))
    """

    __slots__ = ("arrays", "dtype", "shapes", "devices", "queue")

    #: the queue of a table of torch CUDA tensors (they run on torch's current stream)
    CUDA = "cuda"

    def __init__(self, arrays: tuple, dtype: np.dtype, shapes: tuple, devices: tuple | None = None, queue=None):
        self.arrays, self.dtype, self.shapes = arrays, dtype, shapes
        self.devices, self.queue = devices, queue

    @property
    def ndim(self) -> int:
        """The rank of every entry."""
        return TABLE_RANK

    def __len__(self) -> int:
        return len(self.arrays)

    @property
    def on_cuda(self) -> bool:
        """Whether the entries are CUDA arrays (the table runs on the NVIDIA backend)."""
        return self.queue == ArrayTable.CUDA

    def __repr__(self) -> str:
        return f"ArrayTable({len(self)} x {self.dtype} rank {TABLE_RANK}, shapes {list(self.shapes)})"


def _entry(value, index: int) -> DeviceArray | np.ndarray:
    """Entry ``index`` as a numpy array or a :class:`~.arrays.DeviceArray` (USM pointer,
    strides in elements, queue); ArrayTableError for anything else."""
    where = f"array_table entry {index}"
    if isinstance(value, np.ndarray):
        return value
    cls = type(value)
    if (cls.__module__ or "").startswith("torch") and hasattr(value, "data_ptr"):
        if getattr(value.device, "type", None) == "cuda":
            return cuda_entry(value, where)
        return torch_xpu_entry(value, where)
    if is_pyopencl_array_type(cls):
        raise ArrayTableError(f"{where}: a pyopencl array is a buffer handle, not an address a table can list; "
                              "pass dpnp/USM arrays (used in place) or numpy arrays (copied in and back)")
    desc = describe(value, where) if is_device_array_type(cls) else None
    if desc is None or desc.api != "usm":
        raise ArrayTableError(f"{where}: expected a numpy array, a dpnp/USM array or a torch XPU tensor of rank "
                              f"{TABLE_RANK}, got {type_name(value)}")
    return desc


def torch_xpu_entry(t, where: str) -> DeviceArray:
    """A torch XPU tensor as a table entry: its ``data_ptr()`` (the first element, storage
    offset included), ``stride()`` in elements, on the queue of its device's current
    stream (:func:`torch_queue`).  ArrayTableError for a tensor on another device.

    Example (on a machine whose torch has XPU devices)::

        entry = torch_xpu_entry(torch.zeros((16, 64), dtype=torch.float16, device="xpu"), "entry 0")
        assert entry.strides == (64, 1) and entry.pointer % 64 == 0
    """
    device = t.device
    if getattr(device, "type", str(device)) != "xpu":
        raise ArrayTableError(f"{where}: a torch tensor on device {str(device)!r}; a table lists torch tensors in "
                              "place only on an Intel GPU ('xpu'): move it with .to('xpu'), or pass tensor.numpy() "
                              "to have it copied in and back")
    name = str(t.dtype).rsplit(".", 1)[-1]
    legal = sorted({n for n, _ in ELEMENT_TYPES.values()})
    if name not in legal:
        raise ArrayTableError(f"{where}: torch dtype {t.dtype} is not supported; use one of {', '.join(legal)}")
    dtype = np.dtype(name) if name != "bfloat16" else dtypes.numpy_dtype("bf16")
    return DeviceArray("usm", dtype, tuple(t.shape), tuple(t.stride()), int(t.data_ptr()), torch_queue(device, where),
                       None, 0, t, True)


def cuda_entry(t, where: str) -> DeviceArray:
    """A torch CUDA tensor as a table entry of the NVIDIA backend: its ``data_ptr()`` and
    ``stride()`` (elements); ArrayTableError for a dtype the backend does not take.

    Example (on a machine with a CUDA GPU)::

        entry = cuda_entry(torch.zeros((16, 48), dtype=torch.float16, device="cuda"), "entry 0")
        assert entry.strides == (48, 1) and entry.queue == "cuda"
    """
    name = str(t.dtype).rsplit(".", 1)[-1]
    legal = sorted({n for n, _ in ELEMENT_TYPES.values()})
    if name not in legal:
        raise ArrayTableError(f"{where}: torch dtype {t.dtype} is not supported; use one of {', '.join(legal)}")
    dtype = np.dtype(name) if name != "bfloat16" else dtypes.numpy_dtype("bf16")
    return DeviceArray("cuda", dtype, tuple(t.shape), tuple(t.stride()), int(t.data_ptr()), ArrayTable.CUDA,
                       None, 0, t, True)


def check_cuda_entry(desc: DeviceArray, index: int) -> int:
    """The row stride (elements) of CUDA entry ``index``; ArrayTableError unless its rows
    are contiguous (unit column stride) and do not overlap (NVIDIA kernels read and write
    an entry's elements per lane at ``address + row * stride + column``)."""
    where = f"array_table entry {index}"
    (rows, cols), (row_stride, col_stride) = desc.shape, desc.strides
    if col_stride != 1 and cols > 1:
        raise ArrayTableError(f"{where}: strides {desc.strides} (elements); a table's entries are tiled by rows, "
                              "which needs unit stride along a row: pass x.contiguous()")
    if rows > 1 and row_stride < cols:
        raise ArrayTableError(f"{where}: row stride {row_stride} for rows of {cols} elements; rows must not overlap "
                              "or run backwards: pass x.contiguous()")
    return row_stride if rows > 1 else cols


def cuda_table_meta(table: ArrayTable):
    """The device table of a table of torch CUDA tensors: an ``int64`` [G, 4] CUDA tensor
    (ENTRY_FIELDS: each entry's address, rows, columns, row stride) on the first entry's
    device, copied there on torch's current stream (the kernel's: the copy is ordered
    before it, and the caching allocator does not reuse the memory before the stream has
    passed the kernel).  A UsageError for a table of numpy arrays: the NVIDIA backend
    takes CUDA arrays."""
    import torch  # the entries are torch tensors

    return torch.tensor(cuda_table_rows(table), dtype=torch.int64).to(table.devices[0].owner.device)


def cuda_table_rows(table: ArrayTable) -> list[tuple[int, int, int, int]]:
    """The rows of a CUDA table's device table (ENTRY_FIELDS); ArrayTableError for a table
    of numpy arrays or of tensors on two GPUs."""
    if not table.on_cuda:
        raise ArrayTableError("array tables on NVIDIA targets list torch CUDA tensors (used in place); this table "
                              "holds numpy arrays: pass torch.from_numpy(a).cuda() entries")
    device = table.devices[0].owner.device
    for i, d in enumerate(table.devices):
        if d.owner.device != device:
            raise ArrayTableError(f"array_table entry {i}: on {d.owner.device}, but entry 0 is on {device}; a launch "
                                  "runs on one GPU: move it with .to(...)")
    return [(d.pointer, d.shape[0], d.shape[1], check_cuda_entry(d, i)) for i, d in enumerate(table.devices)]


def torch_queue(device, where: str):
    """The dpctl ``SyclQueue`` of torch's current stream on XPU ``device`` (the same SYCL
    queue, so a launch is ordered after the work torch queued there); ArrayTableError
    when this torch has no XPU device."""
    import torch

    xpu = getattr(torch, "xpu", None)
    if xpu is None or not xpu.is_available():
        raise ArrayTableError(f"{where}: a torch XPU tensor, but this torch ({torch.__version__}) sees no XPU "
                              "device (torch.xpu.is_available() is False); install a torch build with XPU "
                              "support, or pass numpy arrays (copied in and back) or dpnp arrays")
    return queue_at(xpu.current_stream(device).sycl_queue)


#: the capsule name dpctl takes a ``sycl::queue *`` in (kept alive for the capsules made)
_QUEUE_CAPSULE_NAME = ctypes.create_string_buffer(b"SyclQueueRef")


def queue_at(address: int):
    """A dpctl ``SyclQueue`` for the ``sycl::queue *`` at ``address`` (dpctl copies the
    queue, which shares the runtime queue: work on either is one queue's work).

    Example::

        q = dpctl.SyclQueue("opencl:cpu")
        assert queue_at(q.addressof_ref()) == q
    """
    import dpctl

    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    return dpctl.SyclQueue(new(address, ctypes.cast(_QUEUE_CAPSULE_NAME, ctypes.c_char_p), None))


def check_entry_layout(desc: DeviceArray, index: int) -> int:
    """The row stride (elements) the device table lists for device entry ``index``, used in
    place; ArrayTableError unless 2D block messages can tile it: unit column stride, rows
    that do not overlap, a row pitch that is a multiple of PITCH_ALIGN_BYTES (and at most
    MAX_TILED_EXTENT bytes), the first element BASE_ALIGN_BYTES-aligned.  A one-row entry
    has no pitch: it lists its row length rounded up to PITCH_ALIGN_BYTES."""
    where = f"array_table entry {index}"
    (rows, cols), (row_stride, col_stride), size = desc.shape, desc.strides, desc.dtype.itemsize
    if col_stride != 1:
        raise ArrayTableError(f"{where}: strides {desc.strides} (elements); a table's entries are tiled by rows, "
                              "which needs unit stride along a row (a transposed or column-strided view has not): "
                              "pass a contiguous copy (e.g. dpnp.ascontiguousarray(x))")
    align = launch_facts.PITCH_ALIGN_BYTES
    if rows == 1:
        return -(-cols * size // align) * align // size
    if row_stride < cols:
        raise ArrayTableError(f"{where}: row stride {row_stride} for rows of {cols} elements (strides "
                              f"{desc.strides}); rows must not overlap or run backwards: the row stride must be "
                              f"at least {cols}: pass a contiguous copy")
    pitch = row_stride * size
    if pitch % align or pitch > MAX_TILED_EXTENT:
        raise ArrayTableError(f"{where}: a row pitch of {pitch} bytes (stride {row_stride} elements); 2D block "
                              f"messages need a multiple of {align} bytes, at most {MAX_TILED_EXTENT}: allocate rows "
                              f"padded to {-(-pitch // align) * align // size} elements and pass the view "
                              f"x[:, :{cols}], or pass numpy arrays (copied into padded rows)")
    if desc.pointer % launch_facts.BASE_ALIGN_BYTES:
        raise ArrayTableError(f"{where}: the first element is at 0x{desc.pointer:x}, not "
                              f"{launch_facts.BASE_ALIGN_BYTES}-byte aligned as 2D block messages need (a view "
                              "starting inside a row, or at a row whose offset is no multiple of "
                              f"{launch_facts.BASE_ALIGN_BYTES} bytes?): copy the view into its own array")
    return row_stride


def array_table(arrays) -> ArrayTable:
    """A table of 2-D arrays of one dtype, passed to a kernel as one argument.

    Refused (ArrayTableError, a UsageError and a LaunchError, before anything is launched):
    an empty table, an entry that is not an array, entries of different dtypes, of numpy
    and device arrays mixed, or on different queues, an entry whose rank is not 2, a device
    entry 2D block messages cannot tile in place (:func:`check_entry_layout`).

    Example::

        import numpy as np
        import xetile_dsl as xd

        a = [np.ones((m, 32), np.float16) for m in (48, 20, 33)]
        tab = xd.array_table(a)
        assert len(tab) == 3 and tab.shapes[1] == (20, 32)
    """
    if isinstance(arrays, np.ndarray) or is_device_array_type(type(arrays)):
        raise ArrayTableError("array_table takes a list of arrays, got one array; write xd.array_table([a])")
    try:
        entries = tuple(arrays)
    except TypeError:
        raise ArrayTableError(f"array_table takes a list of arrays, got {type_name(arrays)}") from None
    if not entries:
        raise ArrayTableError("array_table: the table is empty; it needs at least one array "
                              "(skip the launch when there is nothing to compute)")
    read = [_entry(value, i) for i, value in enumerate(entries)]
    dtype = read[0].dtype
    if dtype.name not in {numpy_name for numpy_name, _ in ELEMENT_TYPES.values()}:
        raise ArrayTableError(f"array_table: arrays of dtype {dtype} are not supported; use one of "
                              f"{', '.join(sorted({n for n, _ in ELEMENT_TYPES.values()}))}")
    on_device = read[0].__class__ is DeviceArray
    for i, entry in enumerate(read):
        shape = tuple(entry.shape)
        if entry.dtype != dtype:
            raise ArrayTableError(f"array_table entry {i}: dtype {entry.dtype}, but entry 0 is {dtype}; every "
                                  "entry of a table has one dtype (convert it, e.g. a.astype(...), or use two tables)")
        if (entry.__class__ is DeviceArray) is not on_device:
            kinds = ("a device array", "a numpy array") if on_device else ("a numpy array", "a device array")
            raise ArrayTableError(f"array_table entry {i}: {kinds[1]}, but entry 0 is {kinds[0]}; a table's entries "
                                  "are all numpy arrays (copied) or all device arrays on one queue (used in place): "
                                  "convert it (numpy.asarray / dpnp.asarray(x, sycl_queue=...)) or use two tables")
        if len(shape) != TABLE_RANK:
            raise ArrayTableError(f"array_table entry {i}: rank {len(shape)} (shape {shape}); every entry of a "
                                  f"table is a {TABLE_RANK}-D array (pass x.reshape(rows, cols) or a 2-D slice)")
        if 0 in shape:
            raise ArrayTableError(f"array_table entry {i}: the array is empty (shape {shape}); leave it out")
        if on_device and read[0].api == "cuda":
            if entry.api != "cuda":
                raise ArrayTableError(f"array_table entry {i}: a {entry.api} array, but entry 0 is a torch CUDA "
                                      "tensor; a table's device arrays are all on one device")
            check_cuda_entry(entry, i)
            continue
        if shape[1] * dtype.itemsize < launch_facts.NARROW_ROW_BYTES:
            raise ArrayTableError(f"array_table entry {i}: rows of {shape[1] * dtype.itemsize} bytes (shape "
                                  f"{shape}); kernels read table entries with 2D block messages, which need rows "
                                  f"of at least {launch_facts.NARROW_ROW_BYTES} bytes "
                                  f"({launch_facts.NARROW_ROW_BYTES // dtype.itemsize} elements): pad the columns")
        if on_device:
            if not same_queue(entry.queue, read[0].queue):
                raise ArrayTableError(f"array_table entry {i}: on {queue_label(entry.queue)}, but entry 0 is on "
                                      f"{queue_label(read[0].queue)}; a table's device arrays share one SYCL queue "
                                      "(the launch runs there): copy it with dpnp.asarray(x, sycl_queue=...)")
            check_entry_layout(entry, i)
    shapes = tuple(tuple(e.shape) for e in read)
    if not on_device:
        return ArrayTable(entries, dtype, shapes)
    return ArrayTable(entries, dtype, shapes, tuple(read), read[0].queue)


class TableMeta(np.ndarray):
    """The device table of an :class:`ArrayTable` (``[G, 4]`` int64, ENTRY_FIELDS), which
    keeps the table's dtype (``entry_dtype``), the arrays it lists (``entries``: host
    arrays, or the caller's device arrays, kept alive by it) and their queue (``queue``:
    None for host arrays; a launch runs there)."""

    entry_dtype = None
    entries = ()
    queue = None


def table_meta(table: ArrayTable, entries: list, addresses: list) -> TableMeta:
    """The device table listing ``entries`` (host arrays) at ``addresses``."""
    meta = np.zeros((len(entries), len(ENTRY_FIELDS)), np.int64).view(TableMeta)
    for i, (entry, address) in enumerate(zip(entries, addresses)):
        meta[i] = (address, entry.shape[0], entry.shape[1], entry.strides[0] // entry.itemsize)
    meta.entry_dtype, meta.entries = table.dtype, tuple(entries)
    return meta


def device_table_meta(table: ArrayTable) -> TableMeta:
    """The device table of a table of device arrays: their own pointers and strides, on
    their queue (the entries are used in place)."""
    meta = np.zeros((len(table), len(ENTRY_FIELDS)), np.int64).view(TableMeta)
    for i, desc in enumerate(table.devices):
        meta[i] = (desc.pointer, desc.shape[0], desc.shape[1], check_entry_layout(desc, i))
    meta.entry_dtype, meta.entries, meta.queue = table.dtype, table.arrays, table.queue
    return meta


def host_entries(table: ArrayTable) -> list:
    """The entries as host arrays: numpy entries themselves, host copies of device entries
    (for the interpreter, which runs on host memory; :func:`write_back` returns them)."""
    return list(table.arrays) if table.queue is None else [to_host(a) for a in table.arrays]


def write_back(table: ArrayTable, hosts) -> None:
    """Copy the host copies of a device table's entries (:func:`host_entries`) back into
    the writable ones."""
    if table.queue is not None:
        for desc, host in zip(table.devices, hosts):
            if desc.writable:
                from_host(desc.owner, host)


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


def launch_with_tables(launch, default_device, args: tuple, kwargs: dict):
    """``launch(args, kwargs)`` with every :class:`ArrayTable` replaced by its device table.

    A table of device arrays lists their pointers, on their queue, which every other
    device array of the launch and every other such table must share (ArrayTableError
    otherwise). A table of numpy arrays lists staged copies at their host addresses, which
    are copied back after the launch: that needs a device sharing host memory (the queue's,
    else ``default_device()``, the OpenCL CPU device)."""
    tables = [(f"argument {k!r}" if k.__class__ is str else f"argument {k}", v)
              for k, v in (*enumerate(args), *kwargs.items()) if v.__class__ is ArrayTable]
    queue = _launch_queue(tables, args, kwargs)
    if any(table.queue is None for _, table in tables):
        kind = default_device().kind if queue is None else "cpu" if queue.sycl_device.is_cpu else "gpu"
        if kind != "cpu":
            raise LaunchError("array tables of numpy arrays need a device that shares host memory (the OpenCL CPU "
                              f"device); {kind} devices are not supported yet: pass dpnp/USM arrays (used in place)")
    staged: list = []

    def meta_of(value):
        if value.__class__ is not ArrayTable:
            return value
        if value.queue is not None:
            return device_table_meta(value)
        copies = [_staged(a) for a in value.arrays]
        staged.extend(zip(value.arrays, copies))
        return table_meta(value, copies, [c.ctypes.data for c in copies])

    result = launch(tuple(map(meta_of, args)), {k: meta_of(v) for k, v in kwargs.items()})
    for original, copy in staged:
        if original.flags.writeable:
            original[...] = copy
    return result


def _launch_queue(tables: list, args: tuple, kwargs: dict):
    """The one queue of the launch's device tables and device arrays, or None when no
    table lists device arrays; ArrayTableError when two differ, or a
    device array of another runtime (pyopencl) joins a device table."""
    queue, first = None, None
    for where, table in tables:
        if table.queue is None:
            continue
        if queue is None:
            queue, first = table.queue, f"the table of {where}"
        elif not same_queue(table.queue, queue):
            raise ArrayTableError(f"the array table of {where} is on {queue_label(table.queue)}, but {first} is on "
                                  f"{queue_label(queue)}; a launch runs on one queue: make every table's entries "
                                  "on one queue (dpnp.asarray(x, sycl_queue=...))")
    if queue is None:
        return None
    for key, value in (*enumerate(args), *kwargs.items()):
        if value.__class__ is ArrayTable or not is_device_array_type(value.__class__):
            continue
        where = f"argument {key!r}" if key.__class__ is str else f"argument {key}"
        desc = describe(value, where)
        if desc is None:
            continue
        if desc.api != "usm":
            raise ArrayTableError(f"{where}: a {desc.api} array, but {first} lists USM arrays; a launch with a "
                                  "table of device arrays runs on their SYCL queue: pass dpnp/USM arrays")
        if not same_queue(desc.queue, queue):
            raise ArrayTableError(f"{where} is on {queue_label(desc.queue)}, but {first} is on {queue_label(queue)}; "
                                  "a launch runs on one queue: copy it with dpnp.asarray(x, sycl_queue=...)")
    return queue
