"""OpenCL programs built and reloaded as device binaries, for dpctl queues on OpenCL devices.

dpctl builds SPIR-V (``create_program_from_spirv``) but has no way to load a built
program binary, so a new process would rebuild every kernel from SPIR-V (seconds for a
GEMM on the OpenCL CPU runtime). This module does what dpctl does for OpenCL itself --
``clCreateProgramWithIL`` + ``clBuildProgram`` in the queue's ``cl_context`` -- and also
``clGetProgramInfo(CL_PROGRAM_BINARIES)`` and ``clCreateProgramWithBinary``; the built
``cl_program`` becomes a dpctl ``SyclProgram`` through the SYCL runtime's own OpenCL
interop (``sycl::make_kernel_bundle``, the call dpctl makes after its own build) and
dpctl's C API ``SyclProgram_Make``.

Everything is reached through ctypes; :func:`native_builder` returns None when any piece
is missing (no OpenCL loader, a SYCL runtime without the symbol, a Level Zero queue), and
the caller then builds through dpctl as before.  Every OpenCL error is a
:class:`NativeBuildError`, which the caller answers by building through dpctl.
"""
from __future__ import annotations

import ctypes
import os

from ..errors import BuildError

_c_void_p, _c_size_t, _c_int, _c_uint = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint

CL_SUCCESS = 0
CL_CONTEXT_DEVICES = 0x1081
CL_PROGRAM_BINARY_SIZES = 0x1165
CL_PROGRAM_BINARIES = 0x1166
#: sycl::bundle_state::executable and sycl::backend::opencl (sycl/kernel_bundle_enums.hpp,
#: sycl/backend_types.hpp)
_SYCL_EXECUTABLE, _SYCL_OPENCL = 2, 1
_MAKE_KERNEL_BUNDLE = "_ZN4sycl3_V16detail18make_kernel_bundleEmRKNS0_7contextEbNS0_12bundle_stateENS0_7backendE"
_GET_NATIVE_CONTEXT = ("_ZN4sycl3_V110get_nativeILNS0_7backendE1ENS0_7contextEEENS0_14backend_traitsIXT_EE"
                       "11return_typeIT0_EERKS7_")
#: bytes of a ``sycl::kernel_bundle`` (one shared_ptr), which dpctl frees with ``delete``
_KERNEL_BUNDLE_BYTES = 16
#: The private layouts above were checked against these releases only (dpctl's minor
#: version, the SYCL runtime's soname); with any other the builder stands aside and dpctl
#: builds from SPIR-V, because a layout mismatch would crash the process, not raise.
_CHECKED_DPCTL = ("0.22.",)
_CHECKED_LIBSYCL = ("libsycl.so.9",)


class NativeBuildError(BuildError):
    """An OpenCL call failed; the caller builds through dpctl instead (never user-visible)."""


def _opencl() -> ctypes.CDLL:
    cl = ctypes.CDLL("libOpenCL.so.1")
    cl.clGetContextInfo.argtypes = [_c_void_p, _c_uint, _c_size_t, _c_void_p, ctypes.POINTER(_c_size_t)]
    cl.clCreateProgramWithIL.restype = _c_void_p
    cl.clCreateProgramWithIL.argtypes = [_c_void_p, ctypes.c_char_p, _c_size_t, ctypes.POINTER(_c_int)]
    cl.clCreateProgramWithBinary.restype = _c_void_p
    cl.clCreateProgramWithBinary.argtypes = [_c_void_p, _c_uint, _c_void_p, ctypes.POINTER(_c_size_t),
                                             ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_c_int),
                                             ctypes.POINTER(_c_int)]
    cl.clBuildProgram.argtypes = [_c_void_p, _c_uint, _c_void_p, ctypes.c_char_p, _c_void_p, _c_void_p]
    cl.clGetProgramInfo.argtypes = [_c_void_p, _c_uint, _c_size_t, _c_void_p, ctypes.POINTER(_c_size_t)]
    cl.clReleaseProgram.argtypes = [_c_void_p]
    return cl


def _capi(module, name: str):
    """A function of a Cython module's C API (``__pyx_capi__`` capsule) as a ctypes function."""
    capsule = module.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = _c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(capsule, get_name(capsule))


class NativeBuilder:
    """Builds programs in one dpctl queue's OpenCL context and wraps them for dpctl."""

    def __init__(self, queue, program_module, interface: ctypes.CDLL, libsycl: ctypes.CDLL):
        self.cl = _opencl()
        self.sycl_context = queue.sycl_context
        get_context = getattr(interface, _GET_NATIVE_CONTEXT)
        get_context.restype, get_context.argtypes = _c_void_p, [_c_void_p]
        self.context = get_context(self.sycl_context.addressof_ref())
        self.device = self._single_device()
        self._make_bundle = getattr(libsycl, _MAKE_KERNEL_BUNDLE)
        self._make_bundle.restype = _c_void_p
        self._make_bundle.argtypes = [_c_void_p, _c_size_t, _c_void_p, ctypes.c_bool, _c_int, _c_int]
        # dpctl's SyclProgram_Make takes ownership of the kernel bundle (``delete`` on dealloc)
        self._make_program = ctypes.PYFUNCTYPE(ctypes.py_object, _c_void_p)(
            _capi(program_module, "SyclProgram_Make"))
        self._malloc = ctypes.CDLL(None).malloc
        self._malloc.restype, self._malloc.argtypes = _c_void_p, [_c_size_t]

    def _single_device(self):
        size = _c_size_t()
        self._check(self.cl.clGetContextInfo(self.context, CL_CONTEXT_DEVICES, 0, None, ctypes.byref(size)),
                    "clGetContextInfo")
        if size.value != ctypes.sizeof(_c_void_p):
            raise NativeBuildError("the queue's context has more than one device")
        device = _c_void_p()
        self._check(self.cl.clGetContextInfo(self.context, CL_CONTEXT_DEVICES, size.value, ctypes.byref(device),
                                             None), "clGetContextInfo")
        return device

    @staticmethod
    def _check(code: int, call: str) -> None:
        if code != CL_SUCCESS:
            raise NativeBuildError(f"{call} returned {code}")

    def from_spirv(self, spirv: bytes, options: str) -> tuple[object, bytes]:
        """(dpctl SyclProgram, its device binary) built from SPIR-V."""
        err = _c_int()
        program = self.cl.clCreateProgramWithIL(self.context, spirv, len(spirv), ctypes.byref(err))
        self._check(err.value, "clCreateProgramWithIL")
        return self._finish(program, options, keep_binary=True)

    def from_binary(self, binary: bytes, options: str):
        """A dpctl SyclProgram from a device binary this device built before."""
        err, status = _c_int(), _c_int()
        lengths, binaries = (_c_size_t * 1)(len(binary)), (ctypes.c_char_p * 1)(binary)
        program = self.cl.clCreateProgramWithBinary(self.context, 1, ctypes.byref(self.device), lengths, binaries,
                                                    ctypes.byref(status), ctypes.byref(err))
        self._check(err.value, "clCreateProgramWithBinary")
        if status.value != CL_SUCCESS:
            self.cl.clReleaseProgram(program)
            raise NativeBuildError(f"clCreateProgramWithBinary: binary status {status.value}")
        return self._finish(program, options, keep_binary=False)[0]

    def _finish(self, program, options: str, keep_binary: bool) -> tuple[object, bytes | None]:
        """Build ``program``, read its binary if asked, wrap it; our reference is released
        (the SYCL kernel bundle retains the program)."""
        try:
            self._check(self.cl.clBuildProgram(program, 1, ctypes.byref(self.device), options.encode(), None, None),
                        "clBuildProgram")
            binary = self._binary(program) if keep_binary else None
            return self._wrap(program), binary
        finally:
            self.cl.clReleaseProgram(program)

    def _binary(self, program) -> bytes:
        size = _c_size_t()
        self._check(self.cl.clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, ctypes.sizeof(size),
                                             ctypes.byref(size), None), "clGetProgramInfo")
        if not size.value:
            raise NativeBuildError("the runtime returned an empty program binary")
        buffer = ctypes.create_string_buffer(size.value)
        pointers = (_c_void_p * 1)(ctypes.addressof(buffer))
        self._check(self.cl.clGetProgramInfo(program, CL_PROGRAM_BINARIES, ctypes.sizeof(pointers), pointers, None),
                    "clGetProgramInfo")
        return buffer.raw

    def _wrap(self, program):
        """A dpctl SyclProgram owning a SYCL kernel bundle made from the built ``program``."""
        bundle = self._malloc(_KERNEL_BUNDLE_BYTES)     # dpctl releases it with ``delete``
        if not bundle:
            raise MemoryError("kernel bundle")
        self._make_bundle(bundle, program, self.sycl_context.addressof_ref(), False, _SYCL_EXECUTABLE,
                          _SYCL_OPENCL)
        return self._make_program(bundle)


def native_builder(queue) -> NativeBuilder | None:
    """A :class:`NativeBuilder` for a dpctl queue on an OpenCL device, else None."""
    try:
        import dpctl
        import dpctl.program._program as program_module
    except ImportError:
        return None
    if queue.sycl_device.backend != dpctl.backend_type.opencl:
        return None
    if not dpctl.__version__.startswith(_CHECKED_DPCTL):
        return None
    root = os.path.dirname(dpctl.__file__)
    try:
        interface = ctypes.CDLL(os.path.join(root, "libDPCTLSyclInterface.so"))
        libsycl = _sycl_library()
        if libsycl is None or os.path.basename(libsycl._name) not in _CHECKED_LIBSYCL or not hasattr(libsycl, _MAKE_KERNEL_BUNDLE) or not hasattr(interface, _GET_NATIVE_CONTEXT):
            return None
        return NativeBuilder(queue, program_module, interface, libsycl)
    except (OSError, AttributeError, KeyError, NativeBuildError):
        return None


def _sycl_library() -> ctypes.CDLL | None:
    """The SYCL runtime library dpctl's interface library is linked against (already loaded)."""
    for line in open("/proc/self/maps", encoding="utf-8", errors="replace"):
        path = line.split()[-1] if line.strip() else ""
        if os.path.basename(path).startswith("libsycl.so"):
            return ctypes.CDLL(path)
    return None
