"""TMA tensor maps made on the host for the sm90 GEMM's and attention's TMA fills
(decisions 051, 056): which arrays a map can describe, the fields of
``cuTensorMapEncodeTiled`` for a row-major array (rank 2, or more: ``[Z, H, N, D]``) and a
box, and the 128-byte maps themselves (cached: a map is a function of its
fields alone), through ``cuda-python``.

The limits are :class:`~xetile_dsl.targets.nvidia.NvTarget`'s (``tma_*``)::

    >>> from xetile_dsl.targets.nvidia import SM90
    >>> f = map_fields(0x7f0000000000, (1000, 1000), 2000, 2, (128, 64), SM90)
    >>> f.dims, f.strides, f.box
    ((1000, 1000), (2000,), (64, 128))
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

from ..errors import LaunchError
from .backend_cuda import _driver, check

#: the element types a map is made for here (16-bit GEMM operands): torch dtype -> the
#: driver's CUtensorMapDataType member
DATA_TYPES = {"f16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", "bf16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"}

_LOCK = threading.Lock()
_MAPS: dict[tuple, ctypes.Array] = {}
#: maps kept at most (a map is a pure function of its key: dropping one only costs a re-encode)
_MAX_MAPS = 4096


@dataclass(frozen=True)
class MapFields:
    """The arguments of ``cuTensorMapEncodeTiled`` for an array of rank 2 or more, innermost
    dimension first: extents (elements), the outer strides (bytes), the box (elements),
    the element strides, the swizzle (bytes of its span), the zero fill past the edges."""

    address: int
    dims: tuple
    strides: tuple
    box: tuple
    element_strides: tuple = (1, 1)
    swizzle: int = 128


def describable(address: int, shape: tuple, strides_bytes: tuple, elem_bytes: int, target) -> bool:
    """Whether an array of rank 2 to ``tma_rank_max`` (``strides_bytes`` per dimension) can
    be read through a tensor map on ``target``: TMA exists, 16-bit elements, unit inner
    stride, a non-empty array, the base and every outer stride multiples of
    ``tma_align_bytes``, each under ``tma_stride_limit``; above rank 2 the leading
    dimensions nest without overlap, outermost first (``[Z, H, N, D]`` views ``q[z, h]``)."""
    rank = len(shape)
    if not target.tma or not 2 <= rank <= target.tma_rank_max or elem_bytes != 2 or min(shape) < 1 or \
            max(shape) >= 1 << 32:
        return False
    inner = strides_bytes[-1]
    align = target.tma_align_bytes
    if not (inner == elem_bytes or shape[-1] == 1) or address % align:
        return False
    if not all(s % align == 0 and 0 < s < target.tma_stride_limit for s in strides_bytes[:-1]):
        return False
    return all(strides_bytes[i] >= shape[i + 1] * strides_bytes[i + 1] for i in range(rank - 2))


def map_fields(address: int, shape: tuple, row_stride_bytes, elem_bytes: int, box: tuple, target) -> MapFields:
    """The fields of the map of a ``shape`` array at ``address`` (rows, columns; or any
    rank, the last two the rows and columns) read in boxes of ``box`` (rows, columns; one
    element of each leading dimension) in the 128-byte swizzle; ``row_stride_bytes`` the
    row stride, or above rank 2 every stride but the inner one, outermost first.  A
    LaunchError names the limit a box breaks (at most ``tma_box_max`` a dimension, the
    inner extent at most the swizzle's span)."""
    box_rows, box_cols = box
    if not (0 < box_rows <= target.tma_box_max and 0 < box_cols <= target.tma_box_max):
        raise LaunchError(f"TMA box {box_rows}x{box_cols}: each extent must be 1 to {target.tma_box_max}")
    if box_cols * elem_bytes > target.tma_swizzle_bytes:
        raise LaunchError(f"TMA box of {box_cols} columns: at most {target.tma_swizzle_bytes} bytes a row in the "
                          f"{target.tma_swizzle_bytes}-byte swizzle")
    strides = (row_stride_bytes,) if isinstance(row_stride_bytes, int) else tuple(row_stride_bytes)
    if len(strides) != len(shape) - 1:
        raise LaunchError(f"TMA map of a rank-{len(shape)} array: {len(shape) - 1} outer strides, got {strides}")
    lead = len(shape) - 2
    return MapFields(address, tuple(reversed(shape)), tuple(reversed(strides)), (box_cols, box_rows) + (1,) * lead,
                     element_strides=(1,) * len(shape), swizzle=target.tma_swizzle_bytes)


def encode(fields: MapFields, dtype: str) -> ctypes.Array:
    """The 128-byte tensor map of ``fields`` (a ctypes array, the kernel parameter's
    bytes), from the cache or ``cuTensorMapEncodeTiled``."""
    key = (fields, dtype)
    with _LOCK:
        found = _MAPS.get(key)
    if found is not None:
        return found
    driver = _driver()
    swizzles = {128: "CU_TENSOR_MAP_SWIZZLE_128B", 64: "CU_TENSOR_MAP_SWIZZLE_64B", 32: "CU_TENSOR_MAP_SWIZZLE_32B"}
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    tmap = check(driver.cuTensorMapEncodeTiled(
        getattr(driver.CUtensorMapDataType, DATA_TYPES[dtype]), len(fields.dims), fields.address,
        [u64(d) for d in fields.dims], [u64(s) for s in fields.strides], [u32(b) for b in fields.box],
        [u32(e) for e in fields.element_strides], driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, swizzles[fields.swizzle]),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))
    data = (ctypes.c_uint8 * 128).from_buffer_copy(ctypes.string_at(tmap.getPtr(), 128))
    with _LOCK:
        if len(_MAPS) >= _MAX_MAPS:
            _MAPS.clear()
        _MAPS[key] = data
    return data
