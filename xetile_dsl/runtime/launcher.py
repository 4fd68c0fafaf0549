"""Build SPIR-V programs and launch kernels on a :class:`~.devices.Device`.

The interface with the compiler is: SPIR-V bytes + :class:`~.abi.KernelABI` + a grid.

``Launcher(device).build(spirv, abi)`` returns a :class:`LoadedKernel`;
``kernel(grid, args)`` validates every argument against the ABI *before* anything reaches
the device (:class:`LaunchError` names the parameter and what was expected), copies numpy
arrays into device buffers whose row pitch is padded to ``abi.pitch_align_bytes``, passes
per array parameter ``pointer, ndim x i64 extents, ndim-1 x i64 outer strides (elements)``
and scalars as their ctypes type, launches ``global = (grid[0]*workgroup_size, grid[1],
grid[2])``, ``local = (workgroup_size, 1, 1)`` (``program_id(d)`` is ``get_group_id(d)``),
waits, and copies arrays whose ``ArrayParam.written`` is true back into the caller's arrays.

For benchmarks, ``kernel.prepare(grid, args)`` returns a :class:`PreparedLaunch` whose
``submit()`` is the bare device submit (no validation, no copies) and whose
``finish()`` copies results back; ``native_kernel``, ``queue``, ``native_args``,
``global_size``/``local_size`` (in the backend's own order) allow timing a raw
``queue.submit`` of the same program and arguments.
"""
from __future__ import annotations

import ctypes
import itertools
import math
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from .abi import ELEMENT_TYPES, MAX_TILED_EXTENT, ArrayParam, KernelABI, ScalarParam
from .arrays import DeviceArray, describe, queue_label, same_queue
from .memo import forgetter
from .devices import Device, device_of_queue, get_device
from . import program_cache, queue_order
from .replay import MISS, Replay
from .opencl_icd import setup_intel_cpu_icd
from .opencl_programs import NativeBuildError, native_builder

from ..targets.launch_facts import BASE_ALIGN_BYTES  # noqa: E402 - the 2D block base rule (no tables)
_UNSET = object()


from .. import dtypes  # noqa: E402
from ..errors import BuildError, LaunchError  # noqa: E402 - one error taxonomy for the package
from .. import progress  # noqa: E402 - the long-build line


# --- element types --------------------------------------------------------------------

def numpy_dtype(elem: str) -> np.dtype:
    """The numpy dtype of an ABI element type name (bf16 is ``ml_dtypes.bfloat16``)."""
    if elem not in ELEMENT_TYPES:
        raise LaunchError(f"unknown element type {elem!r}; known: {', '.join(ELEMENT_TYPES)}")
    return dtypes.numpy_dtype(elem)


def _dtype_label(elem: str) -> str:
    return "bf16 (ml_dtypes.bfloat16)" if elem == "bf16" else f"{elem} (numpy.{ELEMENT_TYPES[elem][0]})"


def _type_name(value) -> str:
    if value.__class__ is DeviceArray:           # described already: name the caller's array
        owner = value.owner
        return type(owner[0] if owner.__class__ is tuple else owner).__name__
    if isinstance(value, np.ndarray):
        return f"numpy array of {value.dtype} with shape {value.shape}"
    return type(value).__name__


# --- backends: the only code that touches a device -----------------------------------

class _DpctlBackend:
    """USM device allocations and ``SyclQueue.submit`` through dpctl."""

    reverse_ranges = True   # SYCL's range order is the reverse of OpenCL's dimension index
    api = "usm"
    ordered = False         # True when each launch waits for the queue's previous work (set below)
    native_scalar = None    # scalars and extents travel as ctypes values (see _PyOpenCLBackend)

    def __init__(self, device: Device, queue=None):
        setup_intel_cpu_icd()
        import dpctl
        import dpctl.memory

        self._mem = dpctl.memory
        self.queue = queue if queue is not None else dpctl.SyclQueue(device.native)
        self._order, self._launch_order = _order_manager(self.queue)
        self.ordered = self._order is not None
        self._manager_of = None if self._order is None else queue_order.manager_lookup(self._order)
        self.context = self.queue.sycl_context
        self._native = _UNSET      # the NativeBuilder (or None), made at the first build
        self._identity = None      # what identity() returns, read from the device with _native

    @staticmethod
    def native_int(n: int):
        return _i64(n)

    def orders(self, queue) -> bool:
        """True when each launch on ``queue`` ends after the launches before it (each
        waits for the queue's previous work through dpctl's order manager)."""
        return self.ordered

    @staticmethod
    def typed(kernel, dtypes: list) -> None:
        """Nothing to do: dpctl reads each argument's type from its ctypes value."""

    def identity(self) -> dict | None:
        """What a built program binary is valid for (None: binaries are not kept; only
        OpenCL devices, whose programs this backend builds itself, see opencl_programs.py)."""
        if self._native is _UNSET:           # once: the queue's device does not change
            self._native = native_builder(self.queue)
            device = self.queue.sycl_device
            self._identity = None if self._native is None else {
                "api": "dpctl-opencl", "device": device.name, "driver": device.driver_version,
                "platform": device.sycl_platform.name, "platform_version": device.sycl_platform.version}
        return None if self._identity is None else dict(self._identity)

    def build(self, spirv: bytes, name: str, options: str) -> tuple[object, bytes | None]:
        """(kernel, program binary or None) built from SPIR-V."""
        program, binary = None, None
        if self.identity() is not None:
            try:
                program, binary = self._native.from_spirv(spirv, options)
            except NativeBuildError:
                program = None                # dpctl builds it below and reports the error
        if program is None:
            import dpctl.program

            try:
                program = dpctl.program.create_program_from_spirv(self.queue, spirv, options)
            except Exception as exc:  # noqa: BLE001 - surface the runtime's error
                raise BuildError(f"dpctl could not build the SPIR-V program: {exc}") from exc
        return _named_kernel(program, name), binary

    def load(self, binary: bytes, name: str, options: str):
        """The kernel from a program binary built here before; RefusedBinary if it cannot be."""
        try:
            program = self._native.from_binary(binary, options)
        except NativeBuildError as exc:
            raise RefusedBinary(str(exc)) from None
        return _named_kernel(program, name)      # a wrong name is the caller's, not the binary's

    def alloc(self, nbytes: int):
        return self._mem.MemoryUSMDevice(max(nbytes, BASE_ALIGN_BYTES), alignment=BASE_ALIGN_BYTES, queue=self.queue)

    def write(self, buf, host: np.ndarray) -> None:
        buf.copy_from_host(_host_bytes(host))

    def read(self, buf, host: np.ndarray) -> None:
        flat = _host_bytes(host)
        if buf.nbytes == flat.nbytes:
            buf.copy_to_host(flat)
            return
        staged = np.empty(buf.nbytes, np.uint8)  # an array under BASE_ALIGN_BYTES has a padded buffer
        buf.copy_to_host(staged)
        flat[:] = staged[:flat.nbytes]

    def submit(self, kernel, args, gsize, lsize, queue=None) -> None:
        """Launch after the work dpnp has submitted on the queue and wait: the launch is
        over on return, so later work has nothing of it to wait for (the order manager is
        left as it is)."""
        queue = queue or self.queue
        waits = None if self._order is None else queue_order.waits(self._manager_of(queue), self._launch_order)
        queue.submit_async(kernel, args, gsize, lsize, waits).wait()

    def submit_async(self, kernel, args, gsize, lsize, queue=None):
        """Enqueue without waiting, after the work dpnp has submitted on the queue (queues are
        out of order); returns the event, which later dpnp work on that queue waits for
        (runtime/queue_order.py)."""
        queue = queue or self.queue
        if self._order is None:
            return queue.submit_async(kernel, args, gsize, lsize)
        manager = self._manager_of(queue)
        state = manager._state
        if state.__class__ is self._launch_order:
            return queue_order.submit(queue, manager, state, kernel, args, gsize, lsize)
        return queue_order.submit_first(queue, manager, self._launch_order, kernel, args, gsize, lsize)

    @staticmethod
    def done(event) -> bool:
        import dpctl

        return event.execution_status == dpctl.event_status_type.complete

    def same_context(self, queue) -> bool:
        return queue is self.queue or queue.sycl_context == self.context

    def arg(self, desc):
        """The kernel argument for a USM array: its memory object, or a view at its first element."""
        if desc.memory is not None and desc.offset_bytes == 0:
            return desc.memory
        return self._mem.as_usm_memory(_UsmSpan(desc))


def _host_bytes(host: np.ndarray):
    """The bytes of a C-contiguous host array, flat, as dpctl's copies take them: a byte
    view of its buffer (cheaper than a reshaped numpy view), or of the array for a dtype
    numpy does not export through the buffer protocol (bf16 from ml_dtypes)."""
    return host.data.cast("B") if host.dtype.isbuiltin == 1 else host.reshape(-1).view(np.uint8)


def _order_manager(queue):
    """dpctl's per-queue order manager (which dpnp submits through) and the LaunchOrder
    state class our launches install there (runtime/queue_order.py), or None for each
    when this dpctl has none / keeps its state differently."""
    try:
        from dpctl.utils import SequentialOrderManager as order
    except ImportError:
        return None, None
    try:
        from dpctl import SyclEvent
        from dpctl.utils._seq_order_keeper import _OrderManager
    except ImportError:
        return order, None
    state = getattr(order[queue], "_state", None)
    if not isinstance(state, _OrderManager):
        return order, None
    return order, queue_order.launch_order_class(_OrderManager, SyclEvent)


class _UsmSpan:
    """``__sycl_usm_array_interface__`` for the bytes of a USM array from its first element."""

    def __init__(self, desc):
        self.__sycl_usm_array_interface__ = {
            "data": (desc.pointer, False), "shape": (max(desc.nbytes, 1),), "strides": None,
            "typestr": "|u1", "version": 1, "syclobj": desc.queue, "offset": 0}
        self.owner = desc.owner


class _PyOpenCLBackend:
    """``cl.Buffer`` allocations and ``enqueue_nd_range_kernel`` through pyopencl."""

    reverse_ranges = False
    api = "pyopencl"
    ordered = False         # a pyopencl queue may be out of order: see orders()
    # scalars and extents travel as plain numbers: the kernel knows their types
    # (typed()), so pyopencl packs them directly -- several times faster per launch than
    # letting it inspect untyped (ctypes) arguments one by one
    native_int = int

    @staticmethod
    def native_scalar(value):
        return value.value

    @staticmethod
    def typed(kernel, dtypes: list) -> None:
        """Declare the kernel's scalar argument types (None for buffers) once."""
        kernel.set_scalar_arg_dtypes(dtypes)

    def __init__(self, device: Device, queue=None):
        setup_intel_cpu_icd()
        import pyopencl as cl

        self._cl = cl
        self.context = queue.context if queue is not None else cl.Context(devices=[device.native])
        self.queue = queue if queue is not None else cl.CommandQueue(self.context)
        # kernel arguments are state of the shared cl.Kernel: setting them and enqueueing
        # must not interleave with another thread's launch of the same kernel
        self._submit_lock = threading.Lock()

    def identity(self) -> dict | None:
        """What a built program binary is valid for (None with several devices in the context)."""
        devices = self.context.devices
        if len(devices) != 1:
            return None
        device = devices[0]
        return {"api": "pyopencl", "device": device.name, "driver": device.driver_version,
                "platform": device.platform.name, "platform_version": device.platform.version}

    def build(self, spirv: bytes, name: str, options: str) -> tuple[object, bytes | None]:
        """(kernel, program binary or None) built from SPIR-V."""
        cl = self._cl
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(self.context, spirv).build(options=options)
            kernel = cl.Kernel(program, name)
        except cl.Error as exc:
            raise BuildError(f"pyopencl could not build the SPIR-V program (kernel {name!r}): {exc}") from exc
        binaries = program.get_info(cl.program_info.BINARIES)
        return kernel, (bytes(binaries[0]) if len(binaries) == 1 and binaries[0] else None)

    def load(self, binary: bytes, name: str, options: str):
        """The kernel from a program binary built here before; RefusedBinary if it cannot be."""
        cl = self._cl
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", cl.CompilerWarning)
                program = cl.Program(self.context, self.context.devices, [binary]).build(options=options)
        except cl.Error as exc:
            raise RefusedBinary(str(exc)) from None
        try:
            return cl.Kernel(program, name)
        except cl.Error as exc:            # a wrong name is the caller's, not the binary's
            raise BuildError(f"pyopencl could not build the SPIR-V program (kernel {name!r}): {exc}") from exc

    def alloc(self, nbytes: int):
        return self._cl.Buffer(self.context, self._cl.mem_flags.READ_WRITE, max(nbytes, BASE_ALIGN_BYTES))

    def write(self, buf, host: np.ndarray) -> None:
        self._cl.enqueue_copy(self.queue, buf, host.reshape(-1).view(np.uint8), is_blocking=True)

    def read(self, buf, host: np.ndarray) -> None:
        self._cl.enqueue_copy(self.queue, host.reshape(-1).view(np.uint8), buf, is_blocking=True)

    def submit(self, kernel, args, gsize, lsize, queue=None) -> None:
        self.submit_async(kernel, args, gsize, lsize, queue).wait()

    def submit_async(self, kernel, args, gsize, lsize, queue=None):
        """Enqueue without waiting; returns the event."""
        lock = self._submit_lock          # (acquire/release: cheaper than a ``with`` block)
        lock.acquire()
        try:
            kernel.set_args(*args)
            return self._cl.enqueue_nd_range_kernel(queue or self.queue, kernel, gsize, lsize)
        finally:
            lock.release()

    def done(self, event) -> bool:
        return event.command_execution_status == self._cl.command_execution_status.COMPLETE

    def orders(self, queue) -> bool:
        """True for an in-order queue (pyopencl's default): a launch there ends after the
        commands enqueued before it."""
        flags = self._cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
        return not (queue or self.queue).properties & flags

    def same_context(self, queue) -> bool:
        return queue.context == self.context

    def arg(self, desc):
        """The kernel argument for a pyopencl array: its buffer, or a sub-buffer at its offset."""
        if desc.offset_bytes == 0:
            return desc.memory
        try:
            return desc.memory.get_sub_region(desc.offset_bytes, max(desc.nbytes, 1))
        except self._cl.Error as exc:
            raise LaunchError(f"pyopencl array at byte offset {desc.offset_bytes} cannot be passed: {exc}; "
                              "copy the view into its own array") from None


_BACKENDS = {"dpctl": _DpctlBackend, "pyopencl": _PyOpenCLBackend}


class RefusedBinary(BuildError):
    """The runtime would not load a stored program binary (caught where the binary is
    loaded: the program is rebuilt from SPIR-V)."""


def _named_kernel(program, name: str):
    """Kernel ``name`` of a dpctl program (BuildError if it has none)."""
    if not program.has_sycl_kernel(name):
        raise BuildError(f"SPIR-V program has no kernel named {name!r}")
    return program.get_sycl_kernel(name)


def build_program(backend, spirv: bytes, name: str, options: str):
    """Kernel ``name`` of ``spirv`` built by ``backend``: from the program binary this device
    and driver built before (runtime/program_cache.py) when there is one the runtime
    accepts, else from SPIR-V, keeping the binary for the next process."""
    identity = backend.identity() if program_cache.enabled() else None
    if identity is None:
        return backend.build(spirv, name, options)[0]
    pk = program_cache.program_key(identity, spirv, options)
    binary = program_cache.load(pk)
    if binary is not None:
        try:
            kernel = backend.load(binary, name, options)
            program_cache.stats["loaded"] += 1
            return kernel
        except RefusedBinary as exc:
            program_cache.reject(pk, str(exc))
    kernel, binary = backend.build(spirv, name, options)
    program_cache.stats["built"] += 1
    if binary:
        program_cache.store(pk, binary, name)
    return kernel


# --- per-parameter handlers (built once per kernel) ------------------------------------

class ArrayHandler:
    """Checks one array argument: numpy arrays are laid out with a padded row pitch and
    copied; device arrays (USM, pyopencl) are checked for strides and alignment and used
    in place."""

    def __init__(self, position: int, param: ArrayParam, abi: KernelABI, native_int=None):
        self.position, self.param = position, param
        self._native_int = native_int or _i64   # the backend's form of an extent or stride
        #: what the checks concluded for arrays of one dtype/shape/strides/alignment: the
        #: native extents and strides, and for numpy arrays the padded pitch and whether
        #: the array is copied as it is (see :meth:`checked`)
        self._packs: dict = {}
        self.dtype = numpy_dtype(param.dtype)
        self.itemsize = self.dtype.itemsize
        # the 2D-block limits apply only to arrays the kernel accesses with block messages
        uses_blocks = bool(getattr(param, "block2d", True))
        self.align = math.lcm(max(int(abi.pitch_align_bytes), 1) if uses_blocks else 1, self.itemsize)
        self.min_width = int(abi.min_width_bytes) if uses_blocks else 0
        self.block2d = uses_blocks and (self.min_width > 0 or int(abi.pitch_align_bytes) > 1)
        self.written = bool(param.written)
        self.tiled = bool(getattr(param, "tiled", True))
        self.nargs = 2 * param.ndim if param.ndim > 0 else 1
        self.where = f"argument {position} ({param.name!r})"

    def _fail(self, what: str) -> LaunchError:
        return LaunchError(f"{self.where}: {what}")

    def checked(self, value) -> tuple:
        """(the numpy array or :class:`DeviceArray` for ``value``, its pack): the pack is
        (native extents + outer strides, padded pitch, copied as it is) for a numpy array,
        (native extents + outer strides, None, None) for a device array.

        Every check depends on the array's dtype, shape, strides, the alignment of its
        first element and whether it is writable, so arrays that share those share one
        pack, made after the full checks passed once (LaunchError otherwise)."""
        cls = value.__class__
        if cls is np.ndarray:
            key = (value.dtype, value.shape, value.strides)
            writable = value.flags.writeable
        else:
            if cls is not DeviceArray:
                value = self.check(value)          # described (and checked) here
                if value.__class__ is np.ndarray:  # a numpy subclass
                    return value, self._pack(value)
            key = (value.api, value.dtype, value.shape, value.strides, value.pointer % BASE_ALIGN_BYTES)
            writable = value.writable
        if self.written and not writable:
            self.check(value)                      # raises: the kernel writes it
        pack = self._packs.get(key)
        if pack is None:
            self.check(value)
            if len(self._packs) > 256:
                self._packs.clear()
            pack = self._packs[key] = self._pack(value)
        return value, pack

    def _pack(self, value) -> tuple:
        native_int = self._native_int
        if value.__class__ is DeviceArray:
            return [*map(native_int, value.shape), *map(native_int, value.strides[:-1])], None, None
        pitch, strides = self.layout(value.shape)
        as_is = value.flags.c_contiguous and (value.ndim < 2 or pitch == value.shape[-1])
        return [*map(native_int, value.shape), *map(native_int, strides)], pitch, as_is

    def check(self, value):
        """The numpy array or :class:`DeviceArray` for ``value`` (which may be one already);
        LaunchError unless it fits."""
        p = self.param
        if value.__class__ is DeviceArray:
            self._check_common(value.dtype, value.shape, value.writable)
            self._check_device_layout(value)
            return value
        if isinstance(value, np.ndarray):
            self._check_common(value.dtype, value.shape, value.flags.writeable)
            inner = value.strides[-1] if value.ndim else self.itemsize
            if value.ndim and value.shape[-1] > 1 and inner != self.itemsize:
                raise self._fail("expected a C-contiguous array (or a view with unit stride in the last "
                                 f"dimension), got strides {value.strides}; pass numpy.ascontiguousarray(...)")
            return value
        desc = describe(value, self.where)
        if desc is None:
            want = (f"a numpy array, a dpnp/USM array or a pyopencl array of {_dtype_label(p.dtype)} "
                    f"with {p.ndim} dimension(s)")
            raise self._fail(f"expected {want}, got {_type_name(value)}")
        self._check_common(desc.dtype, desc.shape, desc.writable)
        self._check_device_layout(desc)
        return desc

    def _check_common(self, dtype, shape, writable: bool) -> None:
        p = self.param
        if dtype != self.dtype:
            raise self._fail(f"expected dtype {_dtype_label(p.dtype)}, got {dtype}")
        if len(shape) != p.ndim:
            raise self._fail(f"expected {p.ndim} dimension(s), got {len(shape)} (shape {tuple(shape)})")
        if 0 in tuple(shape):
            # a 2D block message needs a surface at least one row high and 64 bytes wide
            raise self._fail(f"the array is empty (shape {tuple(shape)}); every extent must be at least 1: "
                             "skip the launch when there is nothing to compute")
        if p.written and not writable:
            raise self._fail("the kernel writes this array but it is read-only")
        if self.tiled and p.ndim >= 2:
            self._check_tiled_extent(f"{shape[-2]} rows", shape[-2])
            self._check_tiled_extent(f"rows of {shape[-1] * self.itemsize} bytes", shape[-1] * self.itemsize)
        if p.ndim >= 2 and shape[-1] * self.itemsize < self.min_width:
            raise self._fail(f"rows are {shape[-1] * self.itemsize} bytes wide ({shape[-1]} x "
                             f"{p.dtype}); this kernel's 2D block messages need at least {self.min_width} bytes "
                             f"({-(-self.min_width // self.itemsize)} elements)")

    def _check_tiled_extent(self, what: str, extent: int) -> None:
        """Tiles address an array with 32-bit extents (codegen/coordinates.py)."""
        if extent > MAX_TILED_EXTENT:
            raise self._fail(f"{what}: the kernel reads or writes this array through tiles, which allow at most "
                             f"{MAX_TILED_EXTENT} (2**30) rows, row bytes and row pitch bytes; split the array "
                             "or address it with a scattered tile (xt.init_tile with offsets given as a tile)")

    def _check_device_layout(self, desc) -> None:
        """Device arrays are not copied: their strides and base address must suit the kernel."""
        strides = desc.strides
        if desc.ndim and desc.shape[-1] > 1 and strides[-1] != 1:
            raise self._fail(f"device arrays need unit stride in the last dimension, got strides {strides} "
                             "(elements); make a contiguous copy first")
        if any((not isinstance(s, int)) or s < 0 for s in strides):
            raise self._fail(f"strides {strides} (elements) must be non-negative whole elements")
        if self.tiled and desc.ndim >= 2:
            self._check_tiled_extent(f"a row pitch of {strides[-2] * self.itemsize} bytes", strides[-2] * self.itemsize)
        if not self.block2d or desc.ndim < 2:
            return
        pitch = strides[-2] * self.itemsize
        if desc.shape[-2] > 1 and pitch % self.align:
            raise self._fail(f"row pitch is {pitch} bytes (stride {strides[-2]} elements); this kernel's 2D "
                             f"block messages need a multiple of {self.align} bytes: allocate rows padded to "
                             f"{-(-pitch // self.align) * self.align // self.itemsize} elements and pass a view")
        if desc.api == "usm" and desc.pointer % BASE_ALIGN_BYTES:
            raise self._fail(f"the first element is at address 0x{desc.pointer:x}, not {BASE_ALIGN_BYTES}-byte "
                             "aligned as this kernel's 2D block messages need (a view starting inside a row?); "
                             "copy the view into its own array")

    def layout(self, shape: tuple) -> tuple[int, tuple[int, ...]]:
        """Padded row pitch in elements and the outer strides in elements."""
        if len(shape) < 2:
            return (shape[-1] if shape else 1), ()
        row = shape[-1] * self.itemsize
        pitch = -(-row // self.align) * self.align // self.itemsize
        strides = [pitch]
        for extent in reversed(shape[1:-1]):
            strides.append(strides[-1] * extent)
        return pitch, tuple(reversed(strides))

    def stage(self, value: np.ndarray, pitch: int) -> np.ndarray:
        """The host image of the device buffer (``value`` itself when no padding or copy is needed)."""
        if value.flags.c_contiguous and (value.ndim < 2 or pitch == value.shape[-1]):
            return value
        staged = np.zeros(value.shape[:-1] + (pitch,), self.dtype)
        staged[..., : value.shape[-1]] = value
        return staged


class ScalarHandler:
    """Checks one scalar argument and converts it to its ctypes type."""

    _CTYPES = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i8": ctypes.c_int8, "u8": ctypes.c_uint8,
               "i16": ctypes.c_int16, "i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64,
               "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16}   # half types travel as their bits

    def __init__(self, position: int, param: ScalarParam, native=None):
        self.position, self.param = position, param
        self.dtype = numpy_dtype(param.dtype)
        self.ctype = self._CTYPES[param.dtype]
        #: the numpy type the value travels as (half types: their bits)
        self.arg_dtype = np.dtype(np.uint16) if self.ctype is ctypes.c_uint16 else self.dtype
        self.is_float = dtypes.numpy_is_float(self.dtype)
        self.nargs = 1
        self._native = native      # the backend's form of the ctypes value (None: that value)
        self._memo: dict = {}

    def _fail(self, what: str) -> LaunchError:
        return LaunchError(f"argument {self.position} ({self.param.name!r}): {what}")

    def convert(self, value):
        """The ctypes value for ``value``; raises :class:`LaunchError` if it does not fit.

        Converted values are remembered (they are passed by value and never mutated);
        a float zero by its sign too (0.0 == -0.0 and they hash alike)."""
        cls = value.__class__
        key = (cls, value) if cls is not float or value else (cls, value, math.copysign(1.0, value))
        try:
            hit = self._memo.get(key)
        except TypeError:                     # unhashable: convert (and fail) below
            hit = self._convert(value)
            return hit if self._native is None else self._native(hit)
        if hit is None:
            if len(self._memo) > 1024:
                self._memo.clear()
            hit = self._convert(value)
            hit = self._memo[key] = hit if self._native is None else self._native(hit)
        return hit

    def _convert(self, value):
        if self.is_float:
            return self._float(value)
        if isinstance(value, (float, np.floating)) or not isinstance(value, (int, np.integer)):
            raise self._fail(f"expected a Python int for {self.param.dtype}, got {_type_name(value)}")
        info = np.iinfo(self.dtype)
        if not info.min <= int(value) <= info.max:
            raise self._fail(f"value {int(value)} is out of range for {self.param.dtype} [{info.min}, {info.max}]")
        return self.ctype(int(value))

    def _float(self, value):
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise self._fail(f"expected a Python float for {self.param.dtype}, got {_type_name(value)}")
        value = float(value)
        limit = float(np.finfo(self.dtype).max)
        if math.isfinite(value) and abs(value) > limit:
            raise self._fail(f"value {value!r} is out of range for {self.param.dtype} (max {limit:g})")
        if self.ctype is ctypes.c_uint16:
            return self.ctype(int(np.array(value, self.dtype).view(np.uint16)))
        return self.ctype(value)


# --- launches --------------------------------------------------------------------------

_GRIDS: dict = {}


def normalize_grid(grid) -> tuple[int, int, int]:
    """``grid`` (an int or a tuple of 1-3 positive ints) as a 3-tuple; LaunchError if bad."""
    if grid.__class__ is tuple and all(n.__class__ is int for n in grid):   # not (True,) == (1,)
        hit = _GRIDS.get(grid)
        if hit is not None:
            return hit
        if len(_GRIDS) > 4096:
            _GRIDS.clear()
        hit = _GRIDS[grid] = _normalize_grid(grid)
        return hit
    return _normalize_grid(grid)


#: The largest global range per dimension, and of all dimensions together, in work items:
#: the SYCL runtime under dpctl refuses larger ranges (its ids are ints), so launches stay
#: within it on every backend.
MAX_GLOBAL_RANGE = 2**31 - 1


def check_global_range(grid3: tuple[int, int, int], workgroup_size: int) -> None:
    """LaunchError unless the launch's global range (``grid[0] * workgroup_size``, ``grid[1]``,
    ``grid[2]`` work items) fits :data:`MAX_GLOBAL_RANGE` per dimension and in total."""
    limits = (MAX_GLOBAL_RANGE // workgroup_size, MAX_GLOBAL_RANGE, MAX_GLOBAL_RANGE)
    total = grid3[0] * workgroup_size * grid3[1] * grid3[2]
    if all(n <= m for n, m in zip(grid3, limits)) and total <= MAX_GLOBAL_RANGE:
        return
    raise LaunchError(f"grid {grid3} is too large: grid[0] may be 1..{limits[0]} (x {workgroup_size} work items "
                      f"per workgroup), grid[1] and grid[2] 1..{MAX_GLOBAL_RANGE}, and the product "
                      f"grid[0] * {workgroup_size} * grid[1] * grid[2] at most {MAX_GLOBAL_RANGE} work items "
                      "(the SYCL runtime's range limit)")


def _normalize_grid(grid) -> tuple[int, int, int]:
    if isinstance(grid, (int, np.integer)) and not isinstance(grid, bool):
        grid = (grid,)
    if not isinstance(grid, (tuple, list)):
        raise LaunchError(f"grid must be a tuple of 1 to 3 positive ints, got {_type_name(grid)}")
    if not 1 <= len(grid) <= 3:
        raise LaunchError(f"grid must have 1 to 3 dimensions, got {len(grid)}: {tuple(grid)!r}")
    for d, n in enumerate(grid):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise LaunchError(f"grid[{d}] must be a positive int, got {_type_name(n)} ({n!r})")
        if n <= 0:
            raise LaunchError(f"grid[{d}] must be a positive int, got {n}")
    return tuple(int(n) for n in grid) + (1,) * (3 - len(grid))


@dataclass
class PreparedLaunch:
    """Arguments already on the device: ``submit()`` is the bare launch."""

    kernel: "LoadedKernel"
    native_args: list
    global_size: tuple
    local_size: tuple
    copy_back: list          # (device buffer, staged host array, caller's array)
    queue: object = None     # the device arrays' queue; None: the kernel's own queue
    keep: tuple = ()         # the caller's device arrays, alive until the kernel is done
    copied_in: bool = False  # numpy arrays were copied to (reused) device buffers: launch synchronously
    #: what _track files this launch's events under: unique per prepare() (an id() could be
    #: reused by a later launch of other arrays while this one runs), and kept by the
    #: remembered copy and by a launch remade with new scalar values (the same arrays), so
    #: repeated launches keep one entry
    track_id: int = 0

    def submit(self) -> None:
        """Launch and wait; no validation, no copies."""
        self.kernel.backend.submit(self.kernel.native_kernel, self.native_args, self.global_size,
                                   self.local_size, self.queue)

    def submit_async(self):
        """Launch without waiting; returns the runtime's event."""
        return self.kernel.backend.submit_async(self.kernel.native_kernel, self.native_args, self.global_size,
                                                self.local_size, self.queue)

    def finish(self) -> None:
        """Copy written arrays back into the caller's arrays (un-padding)."""
        _copy_back(self.kernel.backend, self.copy_back)


def _copy_back(backend, copy_back: list) -> None:
    """Read each (device buffer, staged host array, caller's array) back, un-padding."""
    for buf, staged, target in copy_back:
        backend.read(buf, staged)
        if staged is not target:
            target[...] = staged[..., : target.shape[-1]]


def _scalar_slots(handlers) -> tuple:
    """(scalar handler, index of its value among the native kernel arguments) pairs."""
    slots, index = [], 0
    for handler in handlers:
        if isinstance(handler, ScalarHandler):
            slots.append((handler, index))
        index += handler.nargs
    return tuple(slots)


def _any_value(value, remembered) -> bool:
    """A loaded kernel's own scalar check: every value of the remembered type may be
    replayed (each new one is still checked and converted once)."""
    return True


def _arg_dtypes(handlers) -> list:
    """The numpy type of each native kernel argument (None for a buffer): scalars in their
    own type, extents and strides as int64."""
    dtypes = []
    for handler in handlers:
        if isinstance(handler, ScalarHandler):
            dtypes.append(handler.arg_dtype)
        else:
            dtypes += [None] + [np.dtype(np.int64)] * (handler.nargs - 1)
    return dtypes


def argument_handlers(abi: KernelABI, native_int=None, native_scalar=None) -> list:
    """One handler per kernel parameter, in order: the checks and conversions every launch
    of ``abi`` makes (the interpreter runs the same checks before interpreting)."""
    return [ArrayHandler(i, p, abi, native_int) if p.kind == "array" else ScalarHandler(i, p, native_scalar)
            for i, p in enumerate(abi.params)]


class LoadedKernel:
    """A kernel built for one device context, callable as ``kernel(grid, args)``."""

    def __init__(self, backend, native_kernel, abi: KernelABI):
        self.backend, self.native_kernel, self.abi = backend, native_kernel, abi
        self.queue = getattr(backend, "queue", None)
        # scalars, extents and strides in the form the backend passes fastest
        self._native_int = backend.native_int
        self.handlers = argument_handlers(abi, backend.native_int, backend.native_scalar)
        self.num_native_args = sum(h.nargs for h in self.handlers)
        _check_arg_count(native_kernel, self)            # before the types are declared
        backend.typed(native_kernel, _arg_dtypes(self.handlers))
        self._scalar_slots = _scalar_slots(self.handlers)
        self.workgroup_size = int(abi.workgroup_size)
        # device buffers reused for numpy arrays, one pool per thread: a launch owns its
        # buffers from copy-in to copy-back, so threads launching at once must not share them
        self._local = threading.local()
        self._range_memo: dict = {}
        self._grids: dict = {}          # grid as given -> checked 3-tuple
        self._queue_in_context = None   # the last queue seen to be in this kernel's context
        # (grid as given, checked grid, argument tokens, Replay) of the last device-array launch
        self._memo = None
        self._forget = forgetter(self, "_memo", 2)
        #: whether a new scalar value may be replayed in place of the remembered one
        #: (``fits(value, remembered)``): any value of the same type here; a ``@jit``
        #: kernel's loaded kernels only values of the same specialisation (jit.py)
        self.scalar_fits = _any_value

    def __call__(self, grid, args):
        """Validate and launch; see :meth:`launch`."""
        return self.launch(grid, args)

    def launch(self, grid, args):
        """Validate every argument, then launch.

        With numpy arrays among the arguments: copy in, launch on the device arrays' queue
        (if any), wait, copy back (returns None).  With device arrays only: enqueue on their queue and return the event
        without waiting (:func:`synchronize` or the queue's ``wait()`` waits).

        Device buffers for numpy arrays are reused between calls of the same sizes within
        one thread (each thread has its own), so threads may launch the same kernel at once.

        A launch with the grid and device arrays of the last asynchronous one goes
        through that launch's :class:`~.replay.Replay` (as a repeated ``@jit`` call does).
        """
        memo = self._memo
        if memo is not None and self._same_grid(grid, memo) and (args.__class__ is tuple or args.__class__ is list):
            event = memo[3](args if args.__class__ is tuple else tuple(args))
            if event is not MISS:
                return event
        return self.launch_remembered(grid, args)[0]

    def launch_remembered(self, grid, args, described=None, on_death=None) -> tuple:
        """:meth:`launch`, also returning the :class:`~.replay.Replay` a call with the same
        grid and device arrays re-enqueues, or None (numpy arrays, or arguments that
        cannot be identified cheaply).

        The replay is returned rather than read back from ``self`` afterwards: another
        thread may have replaced the remembered one in between.  ``described`` is ``args``
        with device arrays already described (runtime/arrays.py), if known;
        ``on_death(ref)`` is registered with a new replay (its caller remembers it too)."""
        if args.__class__ is not tuple and isinstance(args, list):
            args = tuple(args)          # the in-flight record keeps it: not a list the caller may change
        memo = self._memo
        if memo is not None and args.__class__ is tuple and self._same_grid(grid, memo):
            replay = memo[3]
            event = replay(args)
            if event is not MISS:
                if on_death is not None and on_death not in replay.on_death:
                    replay.on_death.append(on_death)
                return event, replay
        if self._launch_planned(grid, args):
            return None, None
        launch = self.prepare(grid, args if described is None else described, reuse_buffers=True)
        if launch.copied_in or not launch.keep:
            launch.submit()
            launch.finish()
            return None, None
        event = self.launch_async(launch)
        # the replay keeps no caller array alive: its tokens are weak, its native arguments
        # device memory only, and every owner forgets it when an array dies
        replay = Replay(self, launch, args, (_track, _INFLIGHT, _INFLIGHT_LOCK, _PRUNE_AT), self.scalar_fits,
                        self._forget)
        if replay.tokens is None:
            self._memo = None
            return event, None
        if on_death is not None:
            replay.on_death.append(on_death)
        self._memo = (grid, self._grid(grid), replay.tokens, replay)
        return event, replay

    def _same_grid(self, grid, memo: tuple) -> bool:
        """True when ``grid`` is the grid of the remembered launch ``memo``: the same object,
        or a tuple naming the same grid (``(2,)`` and ``(2, 1, 1)``; a bad one raises here
        as the full launch would)."""
        return grid is memo[0] or (grid.__class__ is tuple and normalize_grid(grid) == memo[1])

    def launch_async(self, launch: PreparedLaunch, keep=None):
        """Enqueue a prepared device-array launch again (no checks); returns the event.
        ``keep`` (default: the launch's own arrays) stays alive until the kernel is done."""
        event = self.backend.submit_async(self.native_kernel, launch.native_args, launch.global_size,
                                          launch.local_size, launch.queue)
        _track(self.backend, launch.queue, event, launch.keep if keep is None else keep,
               launch.track_id or id(launch))
        return event

    def check(self, grid, args) -> tuple[tuple[int, int, int], list]:
        """Validate grid and arguments without touching the device; returns (grid3, converted)."""
        grid3, converted, _ = self._checked(grid, args)
        return grid3, converted

    def _checked(self, grid, args) -> tuple:
        """:meth:`check`, plus each array's pack (:meth:`ArrayHandler.checked`; None for
        a scalar)."""
        grid3 = self._grid(grid)
        if args.__class__ is not list and not isinstance(args, (list, tuple)):
            raise LaunchError(f"args must be a list, got {_type_name(args)}")
        if len(args) != len(self.handlers):
            names = ", ".join(h.param.name for h in self.handlers)
            raise LaunchError(f"kernel {self.abi.kernel_name!r} takes {len(self.handlers)} argument(s) "
                              f"({names}), got {len(args)}")
        converted, packs, first = [], [], None
        for h, value in zip(self.handlers, args):
            if h.__class__ is ScalarHandler:
                converted.append(h.convert(value))
                packs.append(None)
                continue
            value, pack = h.checked(value)
            if value.__class__ is DeviceArray:
                first = self._check_queue(h, value, first)
            converted.append(value)
            packs.append(pack)
        return grid3, converted, packs

    def _grid(self, grid) -> tuple[int, int, int]:
        """``grid`` as a checked 3-tuple (a grid seen before: one dictionary read)."""
        hit = self._grids.get(grid) if grid.__class__ is tuple else None
        if hit is not None:
            return hit
        grid3 = normalize_grid(grid)
        check_global_range(grid3, self.workgroup_size)
        if grid.__class__ is tuple and all(n.__class__ is int for n in grid):   # not (True,) == (1,)
            if len(self._grids) > 256:
                self._grids.clear()
            self._grids[grid] = grid3
        return grid3

    def _check_queue(self, h: ArrayHandler, desc: DeviceArray, first):
        """All device arrays of a launch share one queue, in this kernel's context."""
        if first is None:
            if desc.api != self.backend.api:
                raise h._fail(f"a {desc.api} array cannot be launched through the {self.backend.api} runtime; "
                              "pass arrays of one runtime (dpnp/USM with dpctl, pyopencl arrays with pyopencl)")
            if desc.queue is not self._queue_in_context and not self.backend.same_context(desc.queue):
                raise h._fail(f"the array's queue ({queue_label(desc.queue)}) is not in the context this "
                              f"kernel was built for ({queue_label(self.queue)})")
            self._queue_in_context = desc.queue        # asking the runtime again costs microseconds
            return (h, desc)
        h0, d0 = first
        if not same_queue(desc.queue, d0.queue):
            raise h._fail(f"is on {queue_label(desc.queue)} but {h0.where} is on {queue_label(d0.queue)}; "
                          "all device arrays of one launch must share one queue (copy one with "
                          "dpnp.asarray(x, sycl_queue=...))")
        return first

    def prepare(self, grid, args, reuse_buffers: bool = False) -> PreparedLaunch:
        """Validate, then copy numpy arrays to the device; returns the ready launch.

        With ``reuse_buffers`` the device buffers of the previous call are reused when
        their sizes match (the launch then owns them only until the next call).
        """
        grid3, converted, packs = self._checked(grid, args)   # every check before the device is touched
        native, copy_back, keep, queue, copied, copies = [], [], [], None, False, []
        pool = self._thread_pool() if reuse_buffers else None
        for h, value, pack in zip(self.handlers, converted, packs):
            if pack is None:
                native.append(value)
            elif value.__class__ is DeviceArray:
                native.append(self.backend.arg(value))
                native += pack[0]
                keep.append(value.owner)
                queue = value.queue
            else:
                buf = self._put_array(h, value, pack, copy_back, pool)
                native.append(buf)
                native += pack[0]
                copies.append((h, pack, buf))
                copied = True
        gsize, lsize = self._ranges(grid3)
        if pool is not None:
            self._local.plan = self._plan(grid, converted, packs, native, copies, gsize, lsize) if not keep else None
        return PreparedLaunch(self, native, gsize, lsize, copy_back, queue, tuple(keep), copied, next(_LAUNCH_IDS))

    @staticmethod
    def _plan(grid, converted, packs, native, copies, gsize, lsize) -> tuple | None:
        """What a later launch with numpy arrays of the same dtypes, shapes and strides (and
        any scalar values) re-does, or None: the grid as given, each argument's expected
        (dtype, shape, strides) (None for a scalar), the native arguments (this thread's
        reused buffers), the arrays to copy in as (handler, pack, buffer), the ranges.  It
        holds no caller's array."""
        if grid.__class__ is not tuple:
            return None
        expected = []
        for value, pack in zip(converted, packs):
            if pack is not None and value.__class__ is not np.ndarray:   # a numpy subclass
                return None
            expected.append(None if pack is None else (value.dtype, value.shape, value.strides))
        return grid, tuple(expected), native, tuple(copies), gsize, lsize

    def _launch_planned(self, grid, args) -> bool:
        """Launch numpy-array arguments through this thread's plan (see :meth:`_plan`): the
        arrays' layouts passed every check when the plan was made, so only the scalars are
        converted (and checked), the arrays copied in, the kernel run and the written
        arrays copied back.  False (nothing done) when ``args`` do not fit the plan."""
        plan = getattr(self._local, "plan", None)
        if plan is None or grid.__class__ is not tuple or grid != plan[0] or \
                (args.__class__ is not tuple and args.__class__ is not list) or len(args) != len(plan[1]):
            return False
        for value, want in zip(args, plan[1]):
            if want is not None and (value.__class__ is not np.ndarray or value.shape != want[1]
                                     or value.strides != want[2] or value.dtype != want[0]):
                return False
        for h, _, _ in plan[3]:
            if h.written and not args[h.position].flags.writeable:
                return False                  # the full checks say why
        native = list(plan[2])
        for handler, slot in self._scalar_slots:
            native[slot] = handler.convert(args[handler.position])
        backend, copy_back = self.backend, []
        for h, pack, buf in plan[3]:
            value = args[h.position]
            staged = value if pack[2] else h.stage(value, pack[1])
            backend.write(buf, staged)        # arrays are never empty (checked)
            if h.written:
                copy_back.append((buf, staged, value))
        backend.submit(self.native_kernel, native, plan[4], plan[5], None)
        _copy_back(backend, copy_back)
        return True

    def _ranges(self, grid3: tuple) -> tuple:
        """(global, local) range of a grid in the backend's order (remembered per grid)."""
        hit = self._range_memo.get(grid3)
        if hit is None:
            gsize = (grid3[0] * self.workgroup_size, grid3[1], grid3[2])
            lsize = (self.workgroup_size, 1, 1)
            if self.backend.reverse_ranges:
                gsize, lsize = gsize[::-1], lsize[::-1]
            if len(self._range_memo) > 256:
                self._range_memo.clear()
            hit = self._range_memo[grid3] = (list(gsize), list(lsize))
        return hit

    def _thread_pool(self) -> dict:
        """This thread's reusable device buffers: param position -> (bytes, device buffer)."""
        try:
            return self._local.pool
        except AttributeError:
            pool = self._local.pool = {}
            return pool

    def _buffer(self, position: int, nbytes: int, pool: dict | None):
        """A device buffer of ``nbytes``: from the pool when one of that size is there."""
        if pool is None:
            return self.backend.alloc(nbytes)
        cached = pool.get(position)
        if cached is not None and cached[0] == nbytes:
            return cached[1]
        buf = self.backend.alloc(nbytes)
        pool[position] = (nbytes, buf)
        return buf

    def _put_array(self, h: ArrayHandler, value: np.ndarray, pack: tuple, copy_back: list, pool: dict | None):
        """The device buffer holding numpy array ``value`` (laid out as ``pack`` says)."""
        staged = value if pack[2] else h.stage(value, pack[1])
        buf = self._buffer(h.position, staged.nbytes, pool)
        if staged.nbytes:
            self.backend.write(buf, staged)
            if h.written:
                copy_back.append((buf, staged, value))
        return buf

    def bare_submit(self, prepared: PreparedLaunch) -> None:
        """Raw submit of ``prepared`` (same program and arguments) for timing."""
        prepared.submit()


_I64: dict = {}


def _i64(n: int) -> ctypes.c_int64:
    """A shared ``c_int64`` for extents and strides (passed by value, never mutated)."""
    hit = _I64.get(n)
    if hit is None:
        if len(_I64) > 4096:
            _I64.clear()
        hit = _I64[n] = ctypes.c_int64(n)
    return hit


# --- asynchronous launches -------------------------------------------------------------

#: id(queue) -> (backend, queue, {key: (event, kept arrays)}, the queue orders its
#: launches): launches that may still run.
_INFLIGHT: dict[int, tuple] = {}
_INFLIGHT_LOCK = threading.Lock()   # launches of several threads record and prune here
_LAUNCH_IDS = itertools.count(1)    # PreparedLaunch.track_id (next() is atomic under the GIL)
_PRUNE_AT = 256


def _track(backend, queue, event, keep, launch_id: int) -> None:
    """Remember an asynchronous launch (``keep`` stays alive until it is done).

    When the queue orders its launches (each ends after the one before: dpctl's order
    manager, an in-order OpenCL queue), a later launch ending implies the earlier ones
    ended, so only the newest event of each prepared launch is remembered: repeated
    launches cost one dictionary store, and the table stays small."""
    with _INFLIGHT_LOCK:
        entry = _INFLIGHT.get(id(queue))
        if entry is None:
            entry = _INFLIGHT[id(queue)] = (backend, queue, {}, backend.orders(queue))
        pending = entry[2]
        pending[launch_id if entry[3] else id(event)] = (event, keep)
        if len(pending) >= _PRUNE_AT:
            done = [k for k, (ev, _) in pending.items() if backend.done(ev)]
            for k in done:
                del pending[k]


def synchronize(queue=None) -> None:
    """Wait for every asynchronous launch (or those on ``queue``) to finish."""
    with _INFLIGHT_LOCK:
        entries = [(key, entry[1]) for key, entry in _INFLIGHT.items() if queue is None or same_queue(entry[1], queue)]
    for key, q in entries:
        (q.wait() if hasattr(q, "wait") else q.finish())
        with _INFLIGHT_LOCK:
            entry = _INFLIGHT.get(key)
            if entry is not None:   # keep launches another thread made after the wait
                backend, pending = entry[0], entry[2]
                for k in [k for k, (ev, _) in pending.items() if backend.done(ev)]:
                    del pending[k]
                if not pending:
                    del _INFLIGHT[key]


class Launcher:
    """Builds SPIR-V programs for one device (or for the context of a given queue)."""

    def __init__(self, device: Device | None = None, build_options: str = "", queue=None):
        self.device = device or get_device()
        if self.device.backend not in _BACKENDS:
            raise BuildError(f"unknown backend {self.device.backend!r}")
        self.backend = _BACKENDS[self.device.backend](self.device, queue)
        self.build_options = build_options

    def options_for(self, abi: KernelABI) -> str:
        """The program build options of a kernel: its own IGC options (e.g. the 256-GRF mode
        its tiles need) first, then the launcher's; on the CPU runtime only the launcher's
        (it rejects GPU-only IGC options)."""
        if self.device.kind == "cpu":
            return self.build_options
        return " ".join(o for o in (abi.extra.get("build_options", ""), self.build_options) if o)

    def has_program(self, spirv: bytes, abi: KernelABI) -> bool:
        """True when a built program for ``spirv`` is stored for this device (then the
        SPIR-V itself never reaches the runtime: :meth:`build` loads the binary)."""
        identity = self.backend.identity() if program_cache.enabled() else None
        if identity is None:
            return False
        return program_cache.load(program_cache.program_key(identity, bytes(spirv), self.options_for(abi))) is not None

    def build(self, spirv: bytes, abi: KernelABI) -> LoadedKernel:
        """Build ``spirv`` and bind kernel ``abi.kernel_name``; checks the parameter count."""
        if not isinstance(spirv, (bytes, bytearray)) or spirv[:4] not in (b"\x03\x02\x23\x07", b"\x07\x23\x02\x03"):
            raise BuildError("not a SPIR-V binary (bad magic number)")
        if not isinstance(abi.workgroup_size, int) or abi.workgroup_size <= 0:
            raise BuildError(f"bad workgroup_size {abi.workgroup_size!r} in the ABI of {abi.kernel_name!r}")
        limit = getattr(self.device.native, "max_work_group_size", None)
        if isinstance(limit, int) and abi.workgroup_size > limit:
            raise BuildError(f"kernel {abi.kernel_name!r} needs {abi.workgroup_size} work items per workgroup; "
                             f"{self.device.name} allows at most {limit}")
        with progress.reported(f"building {abi.kernel_name!r} for {self.device.selector}",
                               lambda: "the runtime's program build from SPIR-V"):
            native = build_program(self.backend, bytes(spirv), abi.kernel_name, self.options_for(abi))
        return LoadedKernel(self.backend, native, abi)     # checks the SPIR-V's argument count


def _check_arg_count(native, kernel: LoadedKernel) -> None:
    """The SPIR-V kernel must take exactly the arguments the ABI describes."""
    count = getattr(native, "num_args", None)
    if count is not None and count != kernel.num_native_args:
        raise BuildError(f"kernel {kernel.abi.kernel_name!r} takes {count} SPIR-V arguments but its ABI "
                         f"describes {kernel.num_native_args}")


_launchers: dict = {}
_LAUNCHERS_LOCK = threading.Lock()   # threads asking for a new device's launcher get one launcher


def get_launcher(device: Device | None = None) -> Launcher:
    """A shared :class:`Launcher` per device (one queue/context each)."""
    device = device or get_device()
    key = (device.backend, device.platform, device.kind, device.index)
    launcher = _launchers.get(key)
    if launcher is None:
        with _LAUNCHERS_LOCK:
            launcher = _launchers.get(key)
            if launcher is None:
                launcher = _launchers[key] = Launcher(device)
    return launcher


def launcher_for_queue(queue) -> Launcher:
    """A shared :class:`Launcher` for the context and device of a dpctl or pyopencl queue
    (the queue of the caller's device arrays); kernels built there run on any queue of
    that context."""
    device = device_of_queue(queue)
    key = (device.backend, _context_of(queue), device.native)
    launcher = _launchers.get(key)
    if launcher is None:
        with _LAUNCHERS_LOCK:
            launcher = _launchers.get(key)
            if launcher is None:
                launcher = _launchers[key] = Launcher(device, queue=queue)
    return launcher


def _context_of(queue):
    return queue.sycl_context if hasattr(queue, "sycl_context") else queue.context
