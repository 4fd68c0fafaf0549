"""What a launch argument is: a numpy array, a device array, or a scalar.

Device arrays are used in place (no copies):

* **USM arrays** — anything with ``__sycl_usm_array_interface__`` (dpnp arrays,
  ``dpnp.tensor``/``dpctl.tensor`` ``usm_ndarray``, torch XPU tensors that expose it) —
  run on the array's own ``SyclQueue``;
* **torch XPU tensors** without that interface go through DLPack (``dpnp.from_dlpack``);
  a torch tensor on any other device is rejected with a message saying what to do;
* **pyopencl arrays** run on the array's own ``pyopencl.CommandQueue``.

:func:`describe` turns one argument into a :class:`DeviceArray` (shape, strides in
elements, dtype, pointer, queue) or returns None for a numpy array or a scalar. dpnp and
``usm_ndarray`` have fast readers (no interface dictionary is built per launch).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import LaunchError


@dataclass
class DeviceArray:
    """One device array as the launcher needs it."""

    api: str              # "usm" (dpctl queue) or "pyopencl"
    dtype: np.dtype
    shape: tuple
    strides: tuple        # in elements
    pointer: int          # address of the first element (USM) or byte offset (pyopencl)
    queue: object         # dpctl.SyclQueue / pyopencl.CommandQueue
    memory: object        # what the kernel argument is made from (USM memory or cl.Buffer)
    offset_bytes: int     # from ``memory``'s start to the first element
    owner: object         # the caller's array (kept alive while the kernel may run)
    writable: bool = True

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the kernel may touch, from the first element to one past the last."""
        if not self.shape or 0 in self.shape:
            return 0
        last = sum((n - 1) * s for n, s in zip(self.shape, self.strides))
        return (last + 1) * self.dtype.itemsize


def _from_usm_ndarray(arr, owner) -> DeviceArray:
    """A ``usm_ndarray`` (dpnp.tensor / dpctl.tensor) read through its attributes."""
    dtype = np.dtype(arr.dtype)
    offset = arr._element_offset * dtype.itemsize
    mem = arr.usm_data
    return DeviceArray("usm", dtype, arr.shape, arr.strides, mem._pointer + offset, arr.sycl_queue,
                       mem, offset, owner, bool(arr.flags.writable))


def _from_dpnp(arr) -> DeviceArray:
    return _from_usm_ndarray(arr.get_array(), arr)


def _from_suai(value) -> DeviceArray:
    """Any object with ``__sycl_usm_array_interface__`` (the generic, slower reader)."""
    suai = value.__sycl_usm_array_interface__
    dtype = np.dtype(suai["typestr"])
    shape = tuple(suai["shape"])
    strides = suai.get("strides")
    if strides is None:                       # C-contiguous
        strides, step = [], 1
        for n in reversed(shape):
            strides.append(step)
            step *= max(n, 1)
        strides = tuple(reversed(strides))
    ptr, read_only = suai["data"]
    offset = int(suai.get("offset", 0)) * dtype.itemsize
    queue = suai.get("syclobj")
    return DeviceArray("usm", dtype, shape, tuple(strides), ptr + offset, _as_queue(queue),
                       None, offset, value, not read_only)


def _as_queue(syclobj):
    """The SyclQueue named by an interface's ``syclobj`` (a queue, or a context with one device)."""
    import dpctl

    if isinstance(syclobj, dpctl.SyclQueue):
        return syclobj
    if isinstance(syclobj, dpctl.SyclContext):
        return dpctl.SyclQueue(syclobj, syclobj.get_devices()[0])
    return dpctl.SyclQueue(syclobj)


def _from_pyopencl(arr) -> DeviceArray:
    itemsize = arr.dtype.itemsize
    strides = tuple(s // itemsize if s % itemsize == 0 else s / itemsize for s in arr.strides)
    return DeviceArray("pyopencl", np.dtype(arr.dtype), tuple(arr.shape), strides, arr.offset, arr.queue,
                       arr.base_data, arr.offset, arr)


def _from_torch(t, where: str) -> DeviceArray:
    device = getattr(t.device, "type", str(t.device))
    if device != "xpu":
        raise LaunchError(f"{where}: torch tensor on device {str(t.device)!r}; xetile_dsl launches torch tensors "
                          f"without copies only when they live on an Intel GPU ('xpu'): move it with "
                          f".to('xpu'), or pass tensor.numpy() to have it copied in and out")
    if hasattr(t, "__sycl_usm_array_interface__"):
        return _from_suai(t)
    try:
        import dpnp
    except ImportError:
        raise LaunchError(f"{where}: torch XPU tensors are shared through DLPack with dpnp; "
                          "pip install dpnp") from None
    view = dpnp.from_dlpack(t)                # zero copy: same USM allocation
    desc = _from_dpnp(view)
    desc.owner = (t, view)
    return desc


def _reader(cls):
    """The reader for arrays of type ``cls`` (None for numpy arrays and scalars)."""
    module = cls.__module__ or ""
    if module.startswith("dpnp") and hasattr(cls, "get_array"):
        return _from_dpnp
    if hasattr(cls, "usm_data") and hasattr(cls, "_element_offset"):
        return lambda v: _from_usm_ndarray(v, v)
    if module.startswith("torch"):
        return None                           # decided per tensor (device)
    if hasattr(cls, "__sycl_usm_array_interface__"):
        return _from_suai
    if module.startswith("pyopencl") and cls.__name__ == "Array":
        return _from_pyopencl
    return None


_READERS: dict = {}


def describe(value, where: str) -> DeviceArray | None:
    """``value`` as a :class:`DeviceArray`, or None when it is not a device array.

    ``where`` names the argument in error messages (``"argument 0 ('a')"``)."""
    cls = type(value)
    reader = _READERS.get(cls, _READERS)
    if reader is _READERS:
        reader = _READERS[cls] = _reader(cls)
    if reader is None:
        if cls.__module__.startswith("torch") and hasattr(value, "device"):
            return _from_torch(value, where)
        return None
    return reader(value)


def is_device_array_type(cls) -> bool:
    """True for the types :func:`describe` reads as device arrays (torch: per tensor)."""
    reader = _READERS.get(cls, _READERS)
    if reader is _READERS:
        reader = _READERS[cls] = _reader(cls)
    return reader is not None or (cls.__module__ or "").startswith("torch")


def is_pyopencl_array_type(cls) -> bool:
    """True for ``pyopencl.array.Array`` (and subclasses)."""
    reader = _READERS.get(cls, _READERS)
    if reader is _READERS:
        reader = _READERS[cls] = _reader(cls)
    return reader is _from_pyopencl


def same_queue(a, b) -> bool:
    """True when two queues are the same (identity first, then the runtime's equality)."""
    return a is b or a == b


def queue_label(queue) -> str:
    """A short description of a queue for error messages."""
    dev = getattr(queue, "sycl_device", None) or getattr(queue, "device", None)
    name = getattr(dev, "name", None) or "?"
    return f"{type(queue).__module__.split('.')[0]} queue 0x{id(queue):x} on {name!r}"


# --- host copies, for the autotuner --------------------------------------------------

def to_host(value) -> np.ndarray:
    """A numpy copy of an array argument (numpy, USM or pyopencl)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    desc = describe(value, "array")
    if desc is None:
        raise TypeError(f"not an array: {type(value).__name__}")
    if desc.api == "pyopencl":
        return value.get()
    if hasattr(value, "cpu") and hasattr(value, "numpy"):   # torch
        return value.cpu().numpy()
    import dpnp

    return dpnp.asnumpy(value)


def from_host(value, host: np.ndarray) -> None:
    """Write ``host`` back into the array argument ``value`` (inverse of :func:`to_host`)."""
    if isinstance(value, np.ndarray):
        np.copyto(value, host)
        return
    desc = describe(value, "array")
    if desc.api == "pyopencl":
        value.set(host)
    elif hasattr(value, "copy_") and hasattr(value, "cpu"):   # torch
        import torch

        value.copy_(torch.from_numpy(host))
    else:
        import dpnp

        value[...] = dpnp.asarray(host, sycl_queue=desc.queue)


def type_name(value) -> str:
    """How launch errors name the type of ``value`` (a described device array: its owner's)."""
    if value.__class__ is DeviceArray:           # described already: name the caller's array
        owner = value.owner
        return type(owner[0] if owner.__class__ is tuple else owner).__name__
    if isinstance(value, np.ndarray):
        return f"numpy array of {value.dtype} with shape {value.shape}"
    return type(value).__name__
