"""The pyopencl backend: ``cl.Buffer`` allocations and ``enqueue_nd_range_kernel``.

A backend is the only code that touches a device (the dpctl one is backend_dpctl.py;
both are registered in launchers.py).
"""
from __future__ import annotations

import threading
import warnings

import numpy as np

from .devices import Device
from .opencl_icd import setup_intel_cpu_icd
from .program_cache import RefusedBinary
from ..errors import BuildError, LaunchError
from ..targets.launch_facts import BASE_ALIGN_BYTES  # the 2D block base rule (no tables)


class PyOpenCLBackend:
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

