"""The CUDA driver backend: PTX modules loaded with ``cuModuleLoadData`` (as cubins ptxas
assembled once, from the kernel cache, where a ptxas is found: runtime/cubins.py) and kernels
launched with ``cuLaunchKernel`` on the current torch stream, through ``cuda-python``
(``cuda.bindings.driver``, the optional extra ``[cuda]``).  Arrays are passed zero-copy:
torch CUDA tensors by their own accessors, other CUDA arrays (CuPy) by their
``__cuda_array_interface__``."""
from __future__ import annotations

import ctypes
import threading

from ..errors import LaunchError
from . import cubins

_LOCK = threading.Lock()
_DRIVER: list = [None]     # the driver module once a launch has imported it
_MODULES: dict[tuple[int, str], object] = {}


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as exc:   # the optional extra
        raise LaunchError("launching on an NVIDIA GPU needs cuda-python: pip install 'xetile_dsl[cuda]' "
                          f"({exc})") from None
    return driver


def check(result):
    """The values of a ``cuda.bindings.driver`` call; a LaunchError naming a failure."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err) != 0:
        driver = _driver()
        _, name = driver.cuGetErrorName(err)
        raise LaunchError(f"CUDA driver error {int(err)} ({name.decode() if name else '?'})")
    return rest[0] if len(rest) == 1 else rest


def _init():
    """The driver module, initialised; a LaunchError where no CUDA driver library loads."""
    driver = _driver()
    try:
        result = driver.cuInit(0)
    except Exception as exc:  # noqa: BLE001 - cuda.pathfinder's "driver library not found" and kin
        raise LaunchError(f"the CUDA driver could not start: {type(exc).__name__}: {exc}") from None
    check(result)
    return driver


def is_cuda_array(value) -> bool:
    if getattr(value, "is_cuda", None) is True:     # a torch CUDA tensor: without building its interface
        return True
    try:
        return hasattr(value, "__cuda_array_interface__")
    except RuntimeError:    # a torch CUDA tensor that requires grad (torch refuses its interface)
        return True


def is_torch_cuda(value) -> bool:
    """A torch CUDA tensor: read by its own accessors, never through its
    ``__cuda_array_interface__`` (torch builds none for fp8 or bool tensors: its typestr
    table raises KeyError)."""
    return getattr(value, "is_cuda", None) is True and all(hasattr(value, a) for a in ("data_ptr", "stride",
                                                                                       "element_size"))


def array_ndim(value) -> int:
    """The number of dimensions of a CUDA array."""
    if is_torch_cuda(value):
        return value.dim()
    return len(cuda_interface(value)["shape"])


def cuda_interface(value) -> dict:
    """``value.__cuda_array_interface__``; of ``value.detach()`` for a torch tensor that
    requires grad (a custom op's autograd inputs: the kernel reads the same memory)."""
    try:
        return value.__cuda_array_interface__
    except RuntimeError:
        return value.detach().__cuda_array_interface__


_CAPABILITY: dict[int, tuple[int, int]] = {}


def compute_capability(device: int = 0) -> tuple[int, int]:
    """(major, minor) of CUDA device ``device``, asked of the driver once (every launch
    on CUDA arrays without a target asks it)."""
    found = _CAPABILITY.get(device)
    if found is not None:
        return found
    driver = _init()
    dev = check(driver.cuDeviceGet(device))
    attr = driver.CUdevice_attribute
    major = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    _CAPABILITY[device] = (major, minor)
    return major, minor


def _make_current(device: int):
    driver = _init()
    dev = check(driver.cuDeviceGet(device))
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev))   # the context torch uses
    check(driver.cuCtxSetCurrent(ctx))
    return ctx


def load_function(ptx: str, name: str, device: int = 0, smem_bytes: int = 0):
    """Kernel ``name`` of ``ptx``, its module loaded once per device; a kernel that needs
    ``smem_bytes`` of dynamic shared memory has its limit raised to that (past 48 KB a
    block the driver asks for it)."""
    key = (device, ptx)
    with _LOCK:
        module = _MODULES.get(key)
        if module is None:
            _make_current(device)
            module = _MODULES[key] = _load_module(ptx, device)
    function = check(_driver().cuModuleGetFunction(module, name.encode()))
    if smem_bytes > 48 * 1024:
        driver = _driver()
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        check(driver.cuFuncSetAttribute(function, attr, smem_bytes))
    return function


def _load_module(ptx: str, device: int):
    """``ptx`` loaded as a module: its cubin from the kernel cache (assembled by ptxas
    once per ptxas release, driver version and architecture, runtime/cubins.py) where a
    ptxas is found, else the PTX; a cached cubin the driver refuses is discarded and the
    PTX loaded."""
    driver = _driver()
    ptxas = cubins.find_ptxas()
    if ptxas is None:
        return check(driver.cuModuleLoadData(ptx.encode() + b"\0"))
    capability = compute_capability(device)
    key = cubins.cubin_key(ptx, check(driver.cuDriverGetVersion()), capability, cubins.ptxas_release(ptxas))
    image, is_cubin = cubins.module_image(
        ptx, key, lambda text: cubins.assemble(text, cubins.ptxas_arch(text, capability), ptxas))
    try:
        return check(driver.cuModuleLoadData(image))
    except LaunchError as exc:
        if not is_cubin:
            raise
        cubins.discard(key, f"the driver refused the cached cubin ({exc})")
        return check(driver.cuModuleLoadData(ptx.encode() + b"\0"))


_CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "index": ctypes.c_int64, "f32": ctypes.c_float,
           "f64": ctypes.c_double}


def array_params(value, name: str) -> list[tuple[int, type]]:
    """(value, ctype) of an N-D CUDA array (N >= 1, unit stride in the last dimension):
    data pointer, its N extents, the strides (elements) of its first N - 1 dimensions; a
    2-D array is pointer, rows, columns, row stride; a 1-D array pointer and extent.  A torch tensor gives them by its own
    accessors (what its ``__cuda_array_interface__`` would say, without building it)."""
    if is_torch_cuda(value):     # (data_ptr of a tensor that requires grad is its memory too)
        shape, strides = tuple(value.shape), value.stride()
        if len(shape) >= 1 and (strides[-1] == 1 or shape[-1] <= 1):
            return ([(value.data_ptr(), ctypes.c_void_p)] + [(int(n), ctypes.c_int64) for n in shape] +
                    [(int(st), ctypes.c_int64) for st in strides[:-1]])
    ptr, shape, strides, itemsize = array_layout(value)
    if len(shape) < 1:
        raise LaunchError(f"argument {name!r}: NVIDIA targets take arrays of 1 or more dimensions, got a 0-D "
                          f"array; pass x.reshape(1)")
    if strides[-1] != itemsize and shape[-1] > 1 or any(s % itemsize for s in strides):
        raise LaunchError(f"argument {name!r}: its rows must be contiguous (strides {list(strides)} bytes)")
    return ([(ptr, ctypes.c_void_p)] + [(n, ctypes.c_int64) for n in shape] +
            [(s // itemsize, ctypes.c_int64) for s in strides[:-1]])


def array_layout(value) -> tuple[int, tuple, tuple, int]:
    """(data pointer, shape, strides in bytes, element bytes) of a CUDA array (one that
    requires grad: of its ``detach()``, the same memory)."""
    if is_torch_cuda(value):
        size = value.element_size()
        return value.data_ptr(), tuple(int(n) for n in value.shape), tuple(int(st) * size for st in value.stride()), size
    iface = cuda_interface(value)
    shape = tuple(int(n) for n in iface["shape"])
    itemsize = _itemsize(iface["typestr"], value)
    strides = iface.get("strides")
    if strides is None:
        strides, step = [], itemsize
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
    return int(iface["data"][0]), shape, tuple(int(s) for s in strides), itemsize


def _itemsize(typestr: str, value) -> int:
    return int(typestr[2:]) if typestr[2:].isdigit() else value.element_size()


def scalar_param(value, dtype: str, name: str) -> tuple:
    if dtype not in _CTYPES:
        raise LaunchError(f"argument {name!r}: scalars of type {dtype} are not supported on NVIDIA targets")
    return (value, _CTYPES[dtype])


def current_stream() -> int:
    """The current torch CUDA stream's handle (0: the legacy default stream): torch's own
    raw accessor of the current device's stream where it has one (what
    ``torch.cuda.current_stream().cuda_stream`` says, without making a Stream object, a
    few microseconds a launch), else that."""
    raw = _RAW_STREAM[0]
    if raw is None:
        raw = _RAW_STREAM[0] = _raw_stream()
    return raw()


def _raw_stream():
    try:
        import torch
    except ImportError:
        return lambda: 0
    get_raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if get_raw is not None:
        device = torch.cuda.current_device      # (initialises torch's CUDA state if need be)
        return lambda: get_raw(device())
    return lambda: torch.cuda.current_stream().cuda_stream


_RAW_STREAM: list = [None]
_STREAMS: dict[int, object] = {}


def _stream_handle(driver, stream: int):
    """``driver.CUstream(stream)``, made once a handle."""
    found = _STREAMS.get(stream)
    if found is None:
        found = _STREAMS[stream] = driver.CUstream(stream)
    return found


class Packed:
    """A launch's parameters as the driver takes them: one ctypes object a parameter (a
    ctypes value, or the object itself where its type is None: a tensor map's bytes) and
    the array of their addresses (``kernelParams``), kept alive together."""

    def __init__(self, params: list[tuple]):
        self.objects = [v if t is None else t(v) for v, t in params]
        self.pointers = (ctypes.c_void_p * max(len(self.objects), 1))(*[ctypes.addressof(o) for o in self.objects])
        self.address = ctypes.addressof(self.pointers)


def pack_params(params: list[tuple]) -> Packed:
    return Packed(params)


def launch_packed(function, grid: tuple[int, int, int], threads: int, packed: Packed, stream: int | None = None,
                  shared_bytes: int = 0):
    """:func:`launch` of parameters packed once (:func:`pack_params`): a launch repeated
    with the same arguments re-sends them as they are."""
    driver = _DRIVER[0] or _driver()
    _DRIVER[0] = driver
    stream = current_stream() if stream is None else stream
    err = driver.cuLaunchKernel(function, *grid, threads, 1, 1, shared_bytes, _stream_handle(driver, stream),
                                packed.address, 0)
    if int(err[0] if isinstance(err, tuple) else err) != 0:
        check(err)


def launch(function, grid: tuple[int, int, int], threads: int, params: list[tuple], stream: int | None = None,
           shared_bytes: int = 0):
    """One launch of ``function`` over ``grid`` blocks of ``threads`` threads, each with
    ``shared_bytes`` of dynamic shared memory.  A parameter whose type is None is a ctypes
    object passed by its bytes (a 128-byte TMA tensor map, :mod:`.tensor_maps`); then the
    parameter array is built here."""
    driver = _driver()
    stream = current_stream() if stream is None else stream
    if any(t is None for _, t in params):
        launch_packed(function, grid, threads, Packed(params), stream, shared_bytes)
        return
    values = tuple(v for v, _ in params)
    types = tuple(t for _, t in params)
    check(driver.cuLaunchKernel(function, *grid, threads, 1, 1, shared_bytes, _stream_handle(driver, stream),
                                (values, types), 0))
