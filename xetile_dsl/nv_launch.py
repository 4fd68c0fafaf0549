"""``kernel[grid](...)`` on CUDA arrays: bind the arguments, compile once per signature
(:func:`.nv_compiler.compile_nv`), load the PTX and launch on the current stream."""
from __future__ import annotations

import numpy as np

from .errors import LaunchError
from .frontend.argspec import ArgSpec
from .launch_options import split_options
from .runtime import backend_cuda
from .targets.nvidia import DEFAULT_NV_TARGET, for_compute_capability, nv_target
from .nv_compiler import compile_nv

_TORCH_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int8": "i8",
                "uint8": "u8", "int64": "i64", "float64": "f64", "int16": "i16", "bool": "i1"}
_KERNELS: dict[tuple, tuple] = {}


def _spec(name: str, value) -> ArgSpec:
    if backend_cuda.is_cuda_array(value):
        dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
        if dtype not in _TORCH_NAMES:
            dtype = np.dtype(backend_cuda.cuda_interface(value)["typestr"]).name
        if dtype not in _TORCH_NAMES:
            raise LaunchError(f"argument {name!r}: CUDA arrays of dtype {dtype} are not supported")
        return ArgSpec("array", _TORCH_NAMES[dtype], len(backend_cuda.cuda_interface(value)["shape"]))
    if isinstance(value, bool):
        raise LaunchError(f"argument {name!r}: bool scalars are not supported; pass an int")
    if isinstance(value, (int, np.integer)):
        return ArgSpec("scalar", "i32" if -2**31 <= int(value) < 2**31 else "i64")
    if isinstance(value, (float, np.floating)):
        return ArgSpec("scalar", "f32")
    raise LaunchError(f"argument {name!r}: NVIDIA targets take CUDA arrays (torch CUDA tensors) and Python "
                      f"scalars, got {type(value).__name__}")


def default_target(args: tuple) -> str:
    """The target of the GPU the arrays live on (sm90 on Hopper)."""
    try:
        return for_compute_capability(*backend_cuda.compute_capability()).name
    except LaunchError:
        return DEFAULT_NV_TARGET


def _grid3(grid) -> tuple[int, int, int]:
    grid = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    if not 1 <= len(grid) <= 3 or not all(isinstance(g, (int, np.integer)) and g >= 0 for g in grid):
        raise LaunchError(f"grid must be 1 to 3 non-negative ints, got {grid!r}")
    return tuple(int(g) for g in grid) + (1,) * (3 - len(grid))


def kernel_for(jit, target: str, args: tuple, kwargs: dict):
    """(NvKernel, CUDA function, runtime values) of this launch, compiled once."""
    runtime, specs, constants = [], {}, {}
    kwargs, options = split_options(kwargs, jit.signature.parameters)
    bound = jit.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    for name, value in bound.arguments.items():
        if name in jit.constexpr_params:
            constants[name] = getattr(value, "value", value)
        else:
            specs[name] = _spec(name, value)
            runtime.append((name, value))
    key = (jit.source_hash(), target, tuple(sorted(specs.items())), repr(sorted(constants.items(), key=str)),
           options.key())
    found = _KERNELS.get(key)
    if found is None:
        kernel = compile_nv(jit.fn, specs, constants, nv_target(target), options.num_warps, options.num_stages)
        found = _KERNELS[key] = (kernel, backend_cuda.load_function(kernel.ptx, kernel.name,
                                                                    smem_bytes=kernel.smem_bytes))
    return found[0], found[1], runtime, specs


def run(jit, grid, target: str | None, args: tuple, kwargs: dict):
    """Compile (once) and launch ``jit`` over ``grid`` on CUDA arrays."""
    target = target or default_target(args)
    kernel, function, runtime, specs = kernel_for(jit, target, args, kwargs)
    params = []
    for name, value in runtime:
        spec = specs[name]
        if spec.kind == "array":
            params += backend_cuda.array_params(value, name)
        else:
            params.append(backend_cuda.scalar_param(value, spec.dtype, name))
    grid3 = _grid3(grid(dict(constants_of(jit, args, split_options(kwargs, jit.signature.parameters)[0])))
                   if callable(grid) else grid)
    if all(grid3):
        backend_cuda.launch(function, grid3, kernel.threads, params, shared_bytes=kernel.smem_bytes)
    return kernel


def constants_of(jit, args: tuple, kwargs: dict) -> dict:
    bound = jit.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)
