"""``@jit``: a kernel launched as ``kernel[grid](*args, **constexprs)``, compiled once per
signature and cached in memory and on disk.

The launch path (:meth:`JITFunction.run`) is built for repeated calls: arguments are bound
by precomputed parameter positions, and a per-kernel dictionary keyed on
``(type, dtype, ndim)`` of each runtime argument, the constexpr values, the target and the
launcher finds the loaded kernel without hashing any source.  Only a miss computes the
full cache key (:meth:`JITFunction.cache_key`) and goes to the disk cache or the compiler.

Launches are asynchronous when every array argument is a device array (dpnp/USM,
pyopencl): the kernel is enqueued on the arrays' own queue and the call returns the
runtime's event; :func:`xetile_dsl.synchronize` (or the queue's ``wait()``) waits.  With
numpy arrays among the arguments the call copies in, waits and copies results back.
"""
from __future__ import annotations

import inspect
import json
import os

import numpy as np

from .compiler import CompiledKernel, cached_kernel_problem, compile_kernel, compiler_version, resolve_target
from .errors import LaunchError
from .frontend.ast_to_xetile import ArgSpec
from .frontend.source import KernelSource
from .language.core import constexpr
from .runtime.arrays import describe, is_device_array_type
from .runtime.cache import KernelCache, default_directory
from .runtime.devices import get_device
from .runtime.launcher import arg_tokens, get_launcher, launcher_for_queue, same_args

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
        self._memory: dict[tuple, tuple[CompiledKernel, object]] = {}
        params = list(self.signature.parameters.values())
        self._nparams = len(params)
        self._index = {p.name: i for i, p in enumerate(params)}
        self._defaults = tuple(_MISSING if p.default is p.empty else p.default for p in params)
        self._const_pos = tuple(i for i, p in enumerate(params) if p.name in self.constexpr_params)
        self._runtime_pos = tuple(i for i, p in enumerate(params) if p.name not in self.constexpr_params)
        self._fast: dict[tuple, tuple] = {}
        self._last_call: tuple | None = None   # see run()

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
        """Hash of the kernel's source, the @jit functions and the constant globals it names.

        Computed once per process: a global edited after the first launch is not seen."""
        if self._source_hash is None:
            from .runtime.cache import key_for

            parts = [KernelSource.of(self.fn).text]
            for name in sorted(set(self.fn.__code__.co_names)):
                value = self.fn.__globals__.get(name)
                if isinstance(value, JITFunction) and value is not self:
                    parts += [name, value.source_hash()]
                elif isinstance(value, constexpr):
                    parts += [name, repr(value.value)]
                elif isinstance(value, (bool, int, float, str)):
                    parts += [name, repr(value)]
            self._source_hash = key_for(*parts)
        return self._source_hash

    def cache_key(self, specs: dict[str, ArgSpec], constants: dict, target: str, options: dict | None = None) -> str:
        """The one cache key: sha256 over length-prefixed parts — source hash (kernel,
        called @jit functions, constant globals), kernel name, argument types and
        specializations, constexpr values, target, options, compiler version."""
        from .runtime.cache import key_for

        sig = json.dumps({n: [s.kind, s.dtype, s.ndim, s.spec] for n, s in specs.items()}, sort_keys=True)
        consts = json.dumps({k: repr(v) for k, v in constants.items()}, sort_keys=True) + self._global_maps()
        opts = json.dumps(options or {}, sort_keys=True)
        from .frontend.source import dependencies

        return key_for(self.source_hash(), dependencies(self.fn), self.__name__, sig, consts, target, opts,
                       compiler_version())

    def _global_maps(self) -> str:
        """The wg_map globals the kernel names: editing one must change the cache key."""
        from .language.core import wg_map

        names = sorted(n for n in self.fn.__code__.co_names if isinstance(self.fn.__globals__.get(n), wg_map))
        return "".join(f";{n}={self.fn.__globals__[n]!r}" for n in names)

    def get_kernel(self, specs: dict, constants: dict, target: str, device, launcher=None):
        """The loaded kernel for this specialisation: memory, then disk, then compile."""
        launcher = launcher or get_launcher(device)
        key = self.cache_key(specs, constants, target)
        hit = self._memory.get((key, id(launcher)))
        if hit is not None:
            return hit
        compiled = self.load_or_compile(specs, constants, target, key)
        loaded = launcher.build(compiled.spirv, compiled.abi)
        self._memory[(key, id(launcher))] = (compiled, loaded)
        return compiled, loaded

    def load_or_compile(self, specs: dict, constants: dict, target: str, key: str | None = None) -> CompiledKernel:
        """The compiled kernel from the cache (memory or disk), else compiled and stored.

        An entry read from disk is used only if spirv-val accepts its SPIR-V (else it is
        rebuilt, with a warning); a kernel from the cache repeats its compile warnings."""
        key = key or self.cache_key(specs, constants, target)
        cache = _disk_cache()
        files = cache.get(key, check=cached_kernel_problem)
        if files is not None:      # checked when read from disk; put by this process otherwise
            compiled = CompiledKernel.from_files(files)
            compiled.replay_diagnostics()
            return compiled
        compiled = compile_kernel(self.fn, specs, constants, target)
        cache.stats.compiles += 1
        cache.put(key, compiled.to_files(), meta={"name": compiled.name, "target": target})
        return compiled

    # --- the launch path -----------------------------------------------------------------
    def run(self, grid, target: str | None, args: tuple, kwargs: dict):
        """Bind, find the loaded kernel (fast dictionary first) and launch.

        A call with the same grid, target, device arrays and scalar values as the previous
        asynchronous launch re-enqueues that launch's marshalled arguments directly: no
        binding, no key, no argument checks (they passed last time and nothing they
        depend on has changed)."""
        last = self._last_call
        if last is not None and _same_call(last, grid, target, args, kwargs):
            return last[4].launch_async(last[5])
        self._last_call = None
        loaded, grid3, runtime = self.resolve(grid, target, args, kwargs)
        event = loaded.launch(grid3, runtime)
        prepared = loaded.last_async
        if event is not None and prepared is not None and not callable(grid):
            tokens, kw = arg_tokens(args), _kwarg_tokens(kwargs)
            if tokens is not None and kw is not None:
                self._last_call = (grid, target, tokens, kw, loaded, prepared)
        return event

    def resolve(self, grid, target: str | None, args: tuple, kwargs: dict) -> tuple:
        """(loaded kernel, grid, runtime arguments) of a launch, without launching it."""
        if "num_subgroups" in kwargs and "num_subgroups" not in self._index:
            kwargs = dict(kwargs)
            _check_num_subgroups(kwargs.pop("num_subgroups"))
        values = self._bind_values(args, kwargs)
        runtime = [values[i] for i in self._runtime_pos]
        consts = tuple(_unwrap(values[i]) for i in self._const_pos)
        launcher = _launcher_for(runtime)
        key = (tuple(map(_type_key, runtime)), consts, target, id(launcher))
        try:
            hit = self._fast.get(key)
        except TypeError:                     # an unhashable constexpr value
            key = (key[0], repr(consts), target, id(launcher))
            hit = self._fast.get(key)
        if hit is None:
            hit = self._fast[key] = self._specialize(values, target, launcher)
        loaded, meta = hit
        if callable(grid):
            grid = grid({**meta, **{n: values[i] for n, i in self._index.items()}})
        return loaded, grid, runtime

    def _bind_values(self, args: tuple, kwargs: dict) -> list:
        """Argument values in parameter order (LaunchError naming the problem otherwise)."""
        n = len(args)
        if n > self._nparams:
            return self._bind_slow(args, kwargs)
        values = list(args)
        values.extend(self._defaults[n:])
        for name, value in kwargs.items():
            i = self._index.get(name, -1)
            if i < n:
                return self._bind_slow(args, kwargs)
            values[i] = value
        if n + len(kwargs) < self._nparams and any(v is _MISSING for v in values):
            return self._bind_slow(args, kwargs)
        return values

    def _bind_slow(self, args: tuple, kwargs: dict) -> list:
        self.bind(args, kwargs)    # raises the precise LaunchError
        raise AssertionError("unreachable: fast binding failed where inspect binding succeeded")

    def _specialize(self, values: list, target: str | None, launcher) -> tuple:
        """A miss of the fast dictionary: types, full cache key, load or compile."""
        names = list(self._index)
        specs = {names[i]: _arg_spec(names[i], values[i]) for i in self._runtime_pos}
        constants = {names[i]: _unwrap(values[i]) for i in self._const_pos}
        target = target or default_target(launcher.device)
        resolve_target(target)
        _, loaded = self.get_kernel(specs, constants, target, launcher.device, launcher)
        return loaded, constants


class _Target:
    def __init__(self, jit: JITFunction, target: str | None):
        self.jit, self.target = jit, target

    def __getitem__(self, grid):
        return _Launch(self.jit, grid, self.target)


class _Launch:
    def __init__(self, jit: JITFunction, grid, target: str | None):
        self.jit, self.grid, self.target = jit, grid, target

    def __call__(self, *args, **kwargs):
        """Launch; returns the event of an asynchronous launch (device arrays only), else None.

        With ``target="interpret"`` (or XETILE_INTERPRET=1 and no explicit target) the
        kernel's XeTile IR runs in the numpy interpreter instead; ``"interpret-subgroups"``
        runs each subgroup of a workgroup-level kernel (docs/interpreter.md)."""
        from .interpreter import interpret_requested, launch_jit

        if self.target == "interpret-subgroups":
            return launch_jit(self.jit, self.grid, args, kwargs, subgroups=True)
        if self.target == "interpret" or (self.target is None and interpret_requested()):
            return launch_jit(self.jit, self.grid, args, kwargs)
        return self.jit.run(self.grid, self.target, args, kwargs)


def default_target(device) -> str:
    """The compile target for ``device``: its GPU target, or the CPU running the flavour
    named by XETILE_CPU_FLAVOUR (pvc by default)."""
    name = device.target_name
    if name == "cpu":
        return "cpu-" + os.environ.get("XETILE_CPU_FLAVOUR", "pvc")
    return name


_MISSING = object()


def _unwrap(value):
    return value.value if isinstance(value, constexpr) else value


def _check_num_subgroups(n) -> None:
    """Workgroup shape option: one subgroup per workgroup is what the compiler lowers today."""
    if n != 1:
        raise LaunchError(f"num_subgroups={n!r}: only 1 subgroup per workgroup is supported until "
                          "workgroup-level (wg_map) kernels are lowered")


def _int_key(value) -> tuple:
    """Launch-path key of an integer: must separate every pair of ints whose ArgSpec differs."""
    # the ArgSpec of an int depends on its width and on its specialisation (value 1,
    # divisibility by 16), so both are part of the fast key
    return (value.__class__, -2**31 <= value < 2**31, value == 1, value % 16 == 0)


def _type_key(value) -> tuple:
    """What the fast launch dictionary knows of an argument: (type, dtype, ndim) for arrays."""
    cls = value.__class__
    if cls is int:
        return _int_key(value)
    if cls is float or cls is bool:
        return (cls,)
    if cls is np.ndarray or is_device_array_type(cls):
        if cls.__module__.startswith("torch"):
            return (cls, str(value.dtype), value.dim(), str(value.device))
        return (cls, value.dtype, value.ndim)
    if isinstance(value, (np.integer,)):
        return _int_key(int(value)) + (cls,)
    return (cls,)


_PLAIN = (int, float, bool, str)


def _kwarg_tokens(kwargs: dict) -> tuple | None:
    """Keyword arguments as (name, type, value) when all are plain scalars, else None."""
    tokens = tuple((k, v.__class__, v) for k, v in kwargs.items())
    return tokens if all(t[1] in _PLAIN for t in tokens) else None


def _same_call(last: tuple, grid, target, args: tuple, kwargs: dict) -> bool:
    """True when a launch repeats the remembered one (see :meth:`JITFunction.run`)."""
    prev = last[0]
    if grid is not prev and (grid.__class__ is not tuple or grid != prev
                             or not all(n.__class__ is int for n in grid)):
        return False
    if target != last[1] or not same_args(args, last[2]):
        return False
    kw = last[3]
    if len(kwargs) != len(kw):
        return False
    for (name, value), (k, cls, v) in zip(kwargs.items(), kw):
        if name != k or value.__class__ is not cls or value != v:
            return False
    return True


def _launcher_for(runtime: list):
    """The launcher of the first device array's queue, else the default device's."""
    for value in runtime:
        if is_device_array_type(value.__class__):
            queue = getattr(value, "sycl_queue", None)
            if queue is None:
                try:
                    desc = describe(value, "array")
                except LaunchError:           # reported with the argument's name by _arg_spec
                    continue
                queue = desc.queue if desc is not None else None
            if queue is not None:
                return _queue_launcher(queue)
    return get_launcher(get_device())


_LAST_QUEUE: list = [None, None]   # (queue, launcher): most launches reuse one queue


def _queue_launcher(queue):
    last = _LAST_QUEUE[0]
    if last is queue or (last is not None and last.__class__ is queue.__class__ and last == queue):
        return _LAST_QUEUE[1]
    launcher = launcher_for_queue(queue)
    _LAST_QUEUE[:] = [queue, launcher]
    return launcher


def _arg_spec(name: str, value) -> ArgSpec:
    if is_device_array_type(type(value)):
        desc = describe(value, f"argument {name!r}")
        if desc is not None:
            return _array_spec(name, desc.dtype, len(desc.shape))
    if isinstance(value, np.ndarray):
        return _array_spec(name, value.dtype, value.ndim)
    if isinstance(value, bool):
        raise LaunchError(f"argument {name!r}: bool scalars are not supported; pass an int")
    if isinstance(value, (int, np.integer)):
        v = int(value)  # specialise like Triton: on the value 1 and on divisibility by 16
        spec = "1" if v == 1 else "d16" if v % 16 == 0 else ""
        return ArgSpec("scalar", "i32" if -2**31 <= v < 2**31 else "i64", spec=spec)
    if isinstance(value, (float, np.floating)):
        return ArgSpec("scalar", "f32")
    raise LaunchError(f"argument {name!r}: expected a numpy array, a dpnp/USM array, a pyopencl array or a "
                      f"Python scalar, got {type(value).__name__}")


def _array_spec(name: str, dtype, ndim: int) -> ArgSpec:
    elem = _NUMPY_TO_ELEM.get(np.dtype(dtype).name)
    if elem is None:
        raise LaunchError(f"argument {name!r}: arrays of dtype {dtype} are not supported; use one of "
                          f"float16, bfloat16 (ml_dtypes), float32, int8, uint8, int32, int64")
    return ArgSpec("array", elem, ndim)


_CACHE = None


def _disk_cache():
    """The process's kernel cache, for the current XETILE_CACHE_DIR (a test or program that
    points the variable elsewhere gets a cache there)."""
    global _CACHE
    if _CACHE is None or _CACHE.directory != default_directory():
        _CACHE = KernelCache()
    return _CACHE


def jit(fn=None):
    """Decorator: ``@xetile_dsl.jit`` turns a function into a launchable kernel."""
    if fn is None:
        return jit
    return JITFunction(fn)
