"""``@jit``: a kernel launched as ``kernel[grid](*args, **constexprs)``, compiled once per
signature and cached in memory and on disk."""
from __future__ import annotations

import inspect
import json
import os

import numpy as np

from .compiler import CompiledKernel, compile_kernel, compiler_version, resolve_target
from .errors import LaunchError
from .frontend.ast_to_xetile import ArgSpec
from .frontend.source import KernelSource
from .language.core import constexpr

_NUMPY_TO_ELEM = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "uint8": "u8",
                  "int16": "i16", "int32": "i32", "uint32": "u32", "int64": "i64", "bfloat16": "bf16"}


class JITFunction:
    """A kernel: ``kernel[grid](*args, **constexprs)`` compiles (once per signature) and runs."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.signature = inspect.signature(fn)
        self.constexpr_params = {n for n, p in self.signature.parameters.items()
                                 if p.annotation is constexpr or p.annotation == "constexpr"
                                 or (isinstance(p.annotation, str) and p.annotation.endswith("constexpr"))}
        self._source_hash: str | None = None
        self._memory: dict[str, tuple[CompiledKernel, object]] = {}

    def __getitem__(self, grid):
        return _Launch(self, grid, target=None)

    def on(self, target: str | None = None) -> "_Target":
        """Launch for a given compile target, e.g. ``kernel.on("cpu-arc")[grid](...)``."""
        return _Target(self, target)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"launch a kernel with a grid: {self.__name__}[grid](*args)")

    # --- specialisation and caching ------------------------------------------------------
    def bind(self, args: tuple, kwargs: dict) -> tuple[list, dict[str, ArgSpec], dict]:
        """Split launch arguments into runtime values, their types, and constexprs."""
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise LaunchError(f"{self.__name__}: {exc}") from None
        bound.apply_defaults()
        runtime, specs, constants = [], {}, {}
        for name, value in bound.arguments.items():
            if name in self.constexpr_params:
                constants[name] = value.value if isinstance(value, constexpr) else value
            else:
                specs[name] = _arg_spec(name, value)
                runtime.append(value)
        return runtime, specs, constants

    def source_hash(self) -> str:
        if self._source_hash is None:
            import hashlib

            self._source_hash = hashlib.sha256(KernelSource.of(self.fn).text.encode()).hexdigest()
        return self._source_hash

    def cache_key(self, specs: dict[str, ArgSpec], constants: dict, target: str) -> str:
        from .runtime.cache import key_for

        sig = json.dumps({n: [s.kind, s.dtype, s.ndim] for n, s in specs.items()}, sort_keys=True)
        consts = json.dumps({k: repr(v) for k, v in constants.items()}, sort_keys=True)
        return key_for(self.source_hash(), self.__name__, sig, consts, target, compiler_version())

    def get_kernel(self, specs: dict, constants: dict, target: str, device):
        """The loaded kernel for this specialisation: memory, then disk, then compile."""
        key = self.cache_key(specs, constants, target)
        hit = self._memory.get(key)
        if hit is not None:
            return hit
        cache = _disk_cache()
        files = cache.get(key)
        compiled = None
        if files is not None:
            try:
                compiled = CompiledKernel.from_files(files)
            except (KeyError, ValueError, json.JSONDecodeError):
                compiled = None
        if compiled is None:
            compiled = compile_kernel(self.fn, specs, constants, target)
            cache.stats.compiles += 1
            cache.put(key, compiled.to_files())
        from .runtime.launcher import get_launcher

        loaded = get_launcher(device).build(compiled.spirv, compiled.abi)
        self._memory[key] = (compiled, loaded)
        return compiled, loaded


class _Target:
    def __init__(self, jit: JITFunction, target: str | None):
        self.jit, self.target = jit, target

    def __getitem__(self, grid):
        return _Launch(self.jit, grid, self.target)


class _Launch:
    def __init__(self, jit: JITFunction, grid, target: str | None):
        self.jit, self.grid, self.target = jit, grid, target

    def __call__(self, *args, **kwargs):
        from .interpreter import interpret_requested, launch_jit

        if self.target == "interpret" or (self.target is None and interpret_requested()):
            return launch_jit(self.jit, self.grid, args, kwargs)
        runtime, specs, constants = self.jit.bind(args, kwargs)
        from .runtime.devices import get_device

        device = get_device()
        target = self.target or default_target(device)
        resolve_target(target)
        _, loaded = self.jit.get_kernel(specs, constants, target, device)
        grid = self.grid(dict(constants)) if callable(self.grid) else self.grid
        loaded(grid, runtime)


def default_target(device) -> str:
    """The compile target for ``device``: its GPU target, or the CPU running the flavour
    named by XETILE_CPU_FLAVOUR (pvc by default)."""
    name = device.target_name
    if name == "cpu":
        return "cpu-" + os.environ.get("XETILE_CPU_FLAVOUR", "pvc")
    return name


def _arg_spec(name: str, value) -> ArgSpec:
    if isinstance(value, np.ndarray):
        elem = _NUMPY_TO_ELEM.get(value.dtype.name)
        if elem is None:
            raise LaunchError(f"argument {name!r}: arrays of dtype {value.dtype} are not supported; use one of "
                              f"float16, bfloat16 (ml_dtypes), float32, int8, uint8, int32, int64")
        return ArgSpec("array", elem, value.ndim)
    if isinstance(value, bool):
        raise LaunchError(f"argument {name!r}: bool scalars are not supported; pass an int")
    if isinstance(value, (int, np.integer)):
        return ArgSpec("scalar", "i32" if -2**31 <= int(value) < 2**31 else "i64")
    if isinstance(value, (float, np.floating)):
        return ArgSpec("scalar", "f32")
    raise LaunchError(f"argument {name!r}: expected a numpy array or a Python scalar, got {type(value).__name__}")


_CACHE = None


def _disk_cache():
    global _CACHE
    from .runtime.cache import KernelCache

    if _CACHE is None:
        _CACHE = KernelCache()
    return _CACHE


def jit(fn=None):
    """Decorator: ``@xetile_dsl.jit`` turns a function into a launchable kernel."""
    if fn is None:
        return jit
    return JITFunction(fn)
