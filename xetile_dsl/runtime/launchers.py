"""Build SPIR-V programs for a device: :class:`Launcher`, one shared per device or context.

``Launcher(device).build(spirv, abi)`` returns a :class:`~.loaded_kernel.LoadedKernel`;
:func:`get_launcher` and :func:`launcher_for_queue` hand out the shared launchers, and
:data:`BACKENDS` names the backend class of each runtime (backend_dpctl.py,
backend_pyopencl.py).  A built program binary is kept (program_cache.py) and loaded by
the next process instead of building from SPIR-V again.
"""
from __future__ import annotations

import threading

from . import program_cache
from .abi import KernelABI
from .backend_dpctl import DpctlBackend
from .backend_pyopencl import PyOpenCLBackend
from .devices import Device, device_of_queue, get_device
from .loaded_kernel import LoadedKernel
from .program_cache import RefusedBinary
from .. import progress
from ..errors import BuildError

#: the backend class of each runtime (``Device.backend``)
BACKENDS = {"dpctl": DpctlBackend, "pyopencl": PyOpenCLBackend}


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


class Launcher:
    """Builds SPIR-V programs for one device (or for the context of a given queue)."""

    def __init__(self, device: Device | None = None, build_options: str = "", queue=None):
        self.device = device or get_device()
        if self.device.backend not in BACKENDS:
            raise BuildError(f"unknown backend {self.device.backend!r}")
        self.backend = BACKENDS[self.device.backend](self.device, queue)
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
