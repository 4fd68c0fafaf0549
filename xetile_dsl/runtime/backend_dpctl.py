"""The dpctl backend: USM device allocations and ``SyclQueue.submit`` through dpctl.

A backend is the only code that touches a device: it builds programs, allocates and
copies buffers and submits kernels (the pyopencl one is backend_pyopencl.py; both are
registered in launchers.py).  On OpenCL devices it builds programs itself so that their
binaries can be kept (opencl_programs.py); launches are ordered after the work dpnp
submitted on the queue through dpctl's order manager (queue_order.py).
"""
from __future__ import annotations

import numpy as np

from . import queue_order
from .devices import Device
from .opencl_icd import setup_intel_cpu_icd
from .opencl_programs import NativeBuildError, native_builder
from .arguments import native_i64
from .program_cache import RefusedBinary
from ..errors import BuildError
from ..targets.launch_facts import BASE_ALIGN_BYTES  # the 2D block base rule (no tables)

_UNSET = object()


class DpctlBackend:
    """USM device allocations and ``SyclQueue.submit`` through dpctl."""

    reverse_ranges = True   # SYCL's range order is the reverse of OpenCL's dimension index
    api = "usm"
    ordered = False         # True when each launch waits for the queue's previous work (set below)
    native_scalar = None    # scalars and extents travel as ctypes values (see PyOpenCLBackend)

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
        return native_i64(n)

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


def _named_kernel(program, name: str):
    """Kernel ``name`` of a dpctl program (BuildError if it has none)."""
    if not program.has_sycl_kernel(name):
        raise BuildError(f"SPIR-V program has no kernel named {name!r}")
    return program.get_sycl_kernel(name)

