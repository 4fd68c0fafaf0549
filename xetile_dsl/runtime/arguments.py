"""The checks and conversions of launch arguments: one handler per kernel parameter.

:func:`argument_handlers` makes them once per kernel from its :class:`~.abi.KernelABI`:
an :class:`ArrayHandler` checks an array (dtype, rank, extents, strides, alignment) and
lays out numpy arrays with a row pitch padded to ``abi.pitch_align_bytes``; a
:class:`ScalarHandler` range-checks a scalar and converts it to its ctypes type.  Each
array travels as ``pointer, ndim x i64 extents, ndim-1 x i64 outer strides (elements)``.
The compiled launch (loaded_kernel.py) and the interpreter run the same checks.
"""
from __future__ import annotations

import ctypes
import math

import numpy as np

from .abi import ELEMENT_TYPES, MAX_TILED_EXTENT, ArrayParam, KernelABI, ScalarParam
from .arrays import DeviceArray, describe, type_name
from .. import dtypes
from ..errors import LaunchError
from ..targets.launch_facts import BASE_ALIGN_BYTES, slices_aligned  # the 2D block base rule (no tables)


def numpy_dtype(elem: str) -> np.dtype:
    """The numpy dtype of an ABI element type name (bf16 is ``ml_dtypes.bfloat16``)."""
    if elem not in ELEMENT_TYPES:
        raise LaunchError(f"unknown element type {elem!r}; known: {', '.join(ELEMENT_TYPES)}")
    return dtypes.numpy_dtype(elem)


def _dtype_label(elem: str) -> str:
    return "bf16 (ml_dtypes.bfloat16)" if elem == "bf16" else f"{elem} (numpy.{ELEMENT_TYPES[elem][0]})"


# --- per-parameter handlers (built once per kernel) ------------------------------------

class ArrayHandler:
    """Checks one array argument: numpy arrays are laid out with a padded row pitch and
    copied; device arrays (USM, pyopencl) are checked for strides and alignment and used
    in place."""

    def __init__(self, position: int, param: ArrayParam, abi: KernelABI, native_int=None):
        self.position, self.param = position, param
        self._native_int = native_int or native_i64   # the backend's form of an extent or stride
        #: what the checks concluded for arrays of one dtype/shape/strides/alignment: the
        #: native extents and strides, and for numpy arrays the padded pitch and whether
        #: the array is copied as it is (see :meth:`checked`)
        self._packs: dict = {}
        self.dtype = numpy_dtype(param.dtype)
        self.itemsize = self.dtype.itemsize
        # the 2D-block limits apply only to arrays the kernel accesses with block messages
        uses_blocks = bool(getattr(param, "block2d", True))
        self.align = math.lcm(max(int(abi.pitch_align_bytes), 1) if uses_blocks else 1, self.itemsize)
        #: whether numpy N-D arrays are laid out with every 2-D slice (which the kernel
        #: tiles from base + leading offsets) BASE_ALIGN_BYTES-aligned (:meth:`layout`)
        self.aligned_slices = uses_blocks and param.ndim > 2
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
                if isinstance(value, np.ndarray):  # a numpy subclass (an array table's TableMeta)
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
            raise self._fail(f"expected {want}, got {type_name(value)}")
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
        if self.tiled and p.ndim >= 1:  # a 1-D array is one row
            if p.ndim >= 2:
                self._check_tiled_extent(f"{shape[-2]} rows", shape[-2])
            self._check_tiled_extent(f"rows of {shape[-1] * self.itemsize} bytes", shape[-1] * self.itemsize)
        if p.ndim >= 1 and shape[-1] * self.itemsize < self.min_width:
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
        if not self.block2d or desc.ndim < 1:
            return
        pitch = strides[-2] * self.itemsize if desc.ndim >= 2 else 0   # a 1-D array: one row, no pitch
        if desc.ndim >= 2 and desc.shape[-2] > 1 and pitch % self.align:
            raise self._fail(f"row pitch is {pitch} bytes (stride {strides[-2]} elements); this kernel's 2D "
                             f"block messages need a multiple of {self.align} bytes: allocate rows padded to "
                             f"{-(-pitch // self.align) * self.align // self.itemsize} elements and pass a view")
        if not slices_aligned(desc.shape, strides, self.itemsize):
            raise self._fail(f"strides {strides} (elements): the kernel tiles 2-D slices of this array from its "
                             f"first element plus the leading strides, which its 2D block messages need "
                             f"{BASE_ALIGN_BYTES}-byte aligned; make a contiguous copy with rows padded to a "
                             f"multiple of {BASE_ALIGN_BYTES} bytes")
        if desc.api == "usm" and desc.pointer % BASE_ALIGN_BYTES:
            raise self._fail(f"the first element is at address 0x{desc.pointer:x}, not {BASE_ALIGN_BYTES}-byte "
                             "aligned as this kernel's 2D block messages need (a view starting inside a row?); "
                             "copy the view into its own array")

    def layout(self, shape: tuple) -> tuple[int, tuple[int, ...]]:
        """Padded row pitch in elements and the outer strides in elements: rows padded to
        ``align``, and for an N-D array the kernel tiles, further until a 2-D slice (rows x
        pitch) is a multiple of BASE_ALIGN_BYTES, so that every slice starts aligned."""
        if len(shape) < 2:
            return (shape[-1] if shape else 1), ()
        row = shape[-1] * self.itemsize
        pitch_bytes = -(-row // self.align) * self.align
        if self.aligned_slices:   # ends: a pitch that is a multiple of BASE_ALIGN_BYTES qualifies
            while (shape[-2] * pitch_bytes) % BASE_ALIGN_BYTES:
                pitch_bytes += self.align
        pitch = pitch_bytes // self.itemsize
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
            raise self._fail(f"expected a Python int for {self.param.dtype}, got {type_name(value)}")
        info = np.iinfo(self.dtype)
        if not info.min <= int(value) <= info.max:
            raise self._fail(f"value {int(value)} is out of range for {self.param.dtype} [{info.min}, {info.max}]")
        return self.ctype(int(value))

    def _float(self, value):
        if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
            raise self._fail(f"expected a Python float for {self.param.dtype}, got {type_name(value)}")
        value = float(value)
        limit = float(np.finfo(self.dtype).max)
        if math.isfinite(value) and abs(value) > limit:
            raise self._fail(f"value {value!r} is out of range for {self.param.dtype} (max {limit:g})")
        if self.ctype is ctypes.c_uint16:
            return self.ctype(int(np.array(value, self.dtype).view(np.uint16)))
        return self.ctype(value)


def scalar_slots(handlers) -> tuple:
    """(scalar handler, index of its value among the native kernel arguments) pairs."""
    slots, index = [], 0
    for handler in handlers:
        if isinstance(handler, ScalarHandler):
            slots.append((handler, index))
        index += handler.nargs
    return tuple(slots)


def arg_dtypes(handlers) -> list:
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


_I64: dict = {}


def native_i64(n: int) -> ctypes.c_int64:
    """A shared ``c_int64`` for extents and strides (passed by value, never mutated)."""
    hit = _I64.get(n)
    if hit is None:
        if len(_I64) > 4096:
            _I64.clear()
        hit = _I64[n] = ctypes.c_int64(n)
    return hit
