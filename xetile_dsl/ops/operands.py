"""What an op's entry point does with its arrays: read their dtype and shape whatever
library made them (numpy, dpnp, ``usm_ndarray``, torch XPU tensors, pyopencl), allocate
outputs like the input, and make numpy arrays fit the 2D-block rules.

Device arrays are used in place (the kernel runs on their queue and writes the caller's
buffer); numpy arrays are copied in and out by the launcher, so an op may hand it a padded
copy instead.  Rows narrower than the 2D-block minimum (64 bytes) would make the launcher
pick the kernel's per-lane specialisation (docs/decisions/018-per-lane-specialisation.md: another compile,
gathers instead of block loads), so an op pads them where it can: numpy rows on the host,
dpnp / USM and torch rows into a zeroed array on the same queue (one device copy each way;
the kernels mask by the true extents).  pyopencl arrays, which have no strided slice
copy, are passed as they are and take the per-lane specialisation."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ..errors import UsageError
from ..targets.target import Block2DLimits

#: the narrowest row a 2D block message reads (bytes); the same on every target
MIN_ROW_BYTES = Block2DLimits().min_width_bytes

BF16 = np.dtype(ml_dtypes.bfloat16)
#: torch's OCP fp8 dtypes (by name) -> ml_dtypes' types, the same bytes
TORCH_FP8 = {"float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2)}
_TORCH_NAMES = {"float16": np.float16, "bfloat16": BF16, "float32": np.float32, "int8": np.int8,
                "uint8": np.uint8, "int32": np.int32, "int64": np.int64, "float64": np.float64, **TORCH_FP8}


def is_torch(x) -> bool:
    return (type(x).__module__ or "").startswith("torch")


def dtype_of(x) -> np.dtype:
    """numpy dtype of an array of any supported library (torch dtypes by name)."""
    if is_torch(x):
        name = str(x.dtype).removeprefix("torch.")
        if name not in _TORCH_NAMES:
            raise UsageError(f"torch dtype {x.dtype} is not supported; use float16, bfloat16, float32 or int8")
        return np.dtype(_TORCH_NAMES[name])
    return np.dtype(x.dtype)


def as_array(x, name: str):
    """``x`` if it is a numpy or device array, numpy's C-contiguous copy of other sequences."""
    if isinstance(x, np.ndarray):
        return x if x.flags.c_contiguous else np.ascontiguousarray(x)
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return x
    if isinstance(x, (list, tuple)):
        return np.ascontiguousarray(np.asarray(x))
    raise UsageError(f"{name}: expected a numpy array, a dpnp/USM array or a torch XPU tensor, "
                     f"got {type(x).__name__}")


def empty_like_input(x, shape: tuple, dtype) -> object:
    """An uninitialised array of ``shape`` and ``dtype`` made by ``x``'s library, on
    ``x``'s device and queue (numpy for numpy)."""
    dtype = np.dtype(dtype)
    if isinstance(x, np.ndarray):
        return np.empty(shape, dtype)
    module = type(x).__module__ or ""
    if module.startswith("torch"):
        return _torch_empty(x, shape, dtype)
    if module.startswith("dpnp"):
        import dpnp  # optional dependency
        return dpnp.empty(shape, dtype=_usm_dtype(dtype), sycl_queue=x.sycl_queue)
    if hasattr(x, "usm_data"):
        import dpctl.tensor  # optional dependency
        return dpctl.tensor.empty(shape, dtype=_usm_dtype(dtype), sycl_queue=x.sycl_queue)
    if module.startswith("pyopencl"):
        import pyopencl.array  # optional dependency
        return pyopencl.array.empty(x.queue, shape, dtype)
    raise UsageError(f"cannot allocate an output like a {type(x).__name__}; pass out=")


def host_like_input(host: np.ndarray, x):
    """``host`` itself for numpy ``x``, else a copy of it on ``x``'s device and queue (so a
    launch with device arrays stays asynchronous)."""
    if isinstance(x, np.ndarray):
        return host
    result = empty_like_input(x, host.shape, host.dtype)
    module = type(result).__module__ or ""
    if module.startswith("torch"):
        import torch  # optional dependency
        # torch.from_numpy takes no ml_dtypes bfloat16: its f32 widening is exact
        result.copy_(torch.from_numpy(host.astype(np.float32)) if host.dtype == BF16 else torch.from_numpy(host))
    elif module.startswith("pyopencl"):
        result.set(host)
    else:
        result[...] = host   # dpnp / usm_ndarray: host to device copy
    return result


def _usm_dtype(dtype: np.dtype) -> np.dtype:
    """dpnp and dpctl have no bfloat16: such outputs must be given with out= or numpy."""
    if dtype == BF16:
        raise UsageError("dpnp/dpctl arrays have no bfloat16 dtype: pass numpy arrays, or out= an array "
                         "the kernel may write as bfloat16 (e.g. a torch XPU tensor)")
    return dtype


def _torch_name_of() -> dict:
    """numpy dtype -> torch dtype name (built once)."""
    if not _TORCH_NAME_OF:
        _TORCH_NAME_OF.update({np.dtype(v): k for k, v in _TORCH_NAMES.items()})
    return _TORCH_NAME_OF


_TORCH_NAME_OF: dict = {}


def _torch_empty(x, shape: tuple, dtype: np.dtype):
    import torch  # optional dependency: only reached with a torch tensor in hand
    by_name = _torch_name_of()
    return torch.empty(shape, dtype=getattr(torch, by_name[dtype]), device=x.device)


def row_bytes(x) -> int:
    return int(x.shape[-1]) * dtype_of(x).itemsize


def fit_rows(x, name: str):
    """``x`` whose rows meet the 2D-block minimum width: as it is, or a copy zero-padded on
    the right made by ``x``'s library on ``x``'s queue (the kernels never read the padding
    as data; zeros keep 0 * padding finite).  pyopencl arrays stay as they are."""
    if row_bytes(x) >= MIN_ROW_BYTES or _is_pyopencl(x):
        return x
    padded = _zeros_like_input(x, x.shape[:-1] + (_padded_cols(dtype_of(x)),), dtype_of(x))
    padded[..., :x.shape[-1]] = x   # numpy, dpnp, usm_ndarray and torch each copy into a slice
    return padded


def _is_pyopencl(x) -> bool:
    return (type(x).__module__ or "").startswith("pyopencl")


def _padded_cols(dtype: np.dtype) -> int:
    return -(-MIN_ROW_BYTES // dtype.itemsize)


def _zeros_like_input(x, shape: tuple, dtype: np.dtype):
    """A zero array like ``x`` (see :func:`empty_like_input`) to pad narrow rows into."""
    if isinstance(x, np.ndarray):
        return np.zeros(shape, dtype)
    zeros = empty_like_input(x, shape, dtype)
    if is_torch(zeros):
        return zeros.zero_()
    zeros[...] = 0
    return zeros


def check_out(out, shape: tuple, dtype: np.dtype, name: str = "out"):
    """``out`` if it has ``shape`` and ``dtype``, else a UsageError saying what it needs."""
    if tuple(out.shape) != tuple(shape) or dtype_of(out) != dtype:
        raise UsageError(f"{name}: expected shape {tuple(shape)} and dtype {dtype}, got shape "
                         f"{tuple(out.shape)} and dtype {dtype_of(out)}")
    return out


def output_buffer(out, like, shape: tuple, dtype: np.dtype):
    """(the array the kernel writes, the array the op returns): ``out`` or a new array
    like ``like``; a result with narrow rows is written to a padded buffer of the same
    library first (:func:`copy_back` copies it into the result)."""
    result = check_out(out, shape, dtype) if out is not None else empty_like_input(like, shape, dtype)
    if shape[-1] * dtype.itemsize >= MIN_ROW_BYTES or _is_pyopencl(result):
        return result, result
    return _zeros_like_input(result, shape[:-1] + (_padded_cols(dtype),), dtype), result


def copy_back(buffer, result):
    """Copy a padded buffer into the caller's result (a no-op when they are one); device
    arrays are copied on their queue, after the kernel that wrote the buffer."""
    if buffer is result:
        return result
    if isinstance(result, np.ndarray):
        np.copyto(result, buffer[..., :result.shape[-1]])
    elif is_torch(result):
        result.copy_(buffer[..., :result.shape[-1]])
    else:
        result[...] = buffer[..., :result.shape[-1]]
    return result


def cast(x, dtype: np.dtype):
    """``x`` converted to ``dtype`` by its own library, on its queue (an element-wise
    copy, e.g. an f32 gradient to the f16 of a DPAS operand)."""
    dtype = np.dtype(dtype)
    if isinstance(x, np.ndarray):
        return x.astype(dtype)
    if is_torch(x):
        import torch  # optional dependency: only reached with a torch tensor in hand
        by_name = _torch_name_of()
        return x.to(getattr(torch, by_name[dtype]))
    if _is_pyopencl(x):
        return x.astype(dtype)
    return x.astype(_usm_dtype(dtype))   # dpnp / usm_ndarray
