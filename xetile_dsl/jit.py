"""``@jit``: a kernel launched as ``kernel[grid](*args, **constexprs)``, compiled once per
signature and cached in memory and on disk.

The launch path (:meth:`JITFunction.run`) is built for repeated calls: arguments are bound
by precomputed parameter positions, and a per-kernel dictionary keyed on
``(type, dtype, ndim)`` of each runtime argument, the constexpr types and values, the
target and the launcher finds the loaded kernel without hashing any source.  Only a miss
computes the full cache key (:meth:`JITFunction.cache_key`) and goes to the disk cache or
the compiler.  Each launch first checks, by identity, that the globals the kernel read
when its key was made are still bound to the same objects; when one was rebound (a
notebook cell re-run, ``cfg.KSCALE = 2``) the dictionary is emptied and the next key is
made from the new values.

Launches are asynchronous when every array argument is a device array (dpnp/USM,
pyopencl): the kernel is enqueued on the arrays' own queue and the call returns the
runtime's event; :func:`xetile_dsl.synchronize` (or the queue's ``wait()``) waits.  With
numpy arrays among the arguments the call copies in, waits and copies results back.
"""
from __future__ import annotations

import inspect
import json
import os
import sys
import threading
import warnings
from operator import is_

import numpy as np

from . import environ, interpreter, knobs
from .dtypes import OF_NUMPY_NAME
from ._lazy import LazyModule
from .errors import LaunchError, PerLaneLayoutWarning, UsageError
from .frontend.argspec import NARROW, ArgSpec
from .frontend.source import check_kernel_function
from .language.core import constexpr
from .launch_options import NO_OPTIONS, LaunchOptions, check_for_target, launch_grid, split_options
from .runtime.array_tables import ArrayTable, TableMeta, launch_with_tables
from .runtime.arrays import DeviceArray, describe, is_device_array_type
from .runtime.memo import SAME, arg_tokens, compare_args, forgetter
from .runtime.replay import MISS

# the compiler loads at the first kernel that is not in the disk cache, the runtime (device
# discovery, the launcher, the disk cache) and the target facts at the first launch, so that
# ``import xetile_dsl`` stays cheap (xetile_dsl/_lazy.py); each name below becomes the
# module itself at its first use
compiler = LazyModule("xetile_dsl.compiler")  # ~11 ms on import; llvmlite and xDSL's metadata
launching = LazyModule("xetile_dsl.runtime.launchers", globals())  # ~30 ms on import: the whole runtime
devices = LazyModule("xetile_dsl.runtime.devices", globals())  # ~5 ms on import: device discovery
nv_launch = LazyModule("xetile_dsl.nv_launch")  # the NVIDIA launch path: only for CUDA arrays
nv_targets = LazyModule("xetile_dsl.targets.nvidia", globals())  # import loads no target module; read on a named launch
kernel_cache = LazyModule("xetile_dsl.runtime.cache", globals())  # ~7 ms on import: the disk cache, its locks
cache_keys = LazyModule("xetile_dsl.runtime.cache_key", globals())  # ~4 ms on import: hashlib (OpenSSL)
target_facts = LazyModule("xetile_dsl.targets.launch_facts", globals())  # import loads no target module
cpu_device = LazyModule("xetile_dsl.targets.cpu_device", globals())  # loads the target tables only when XETILE_CPU_FLAVOUR is set
target_catalog = LazyModule("xetile_dsl.targets.catalog", globals())  # ~11 ms (the target tables); a warm launch never needs it
kernel_dependencies = LazyModule("xetile_dsl.frontend.dependencies", globals())  # ~4 ms on import

#: numpy dtype name -> element type, for every element type the ABI knows
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
        self._deps: kernel_dependencies.Dependencies | None = None
        self._memory: dict[tuple, tuple["compiler.CompiledKernel", object]] = {}
        params = list(self.signature.parameters.values())
        self._nparams = len(params)
        self._index = {p.name: i for i, p in enumerate(params)}
        self._defaults = tuple(_MISSING if p.default is p.empty else p.default for p in params)
        self._const_pos = tuple(i for i, p in enumerate(params) if p.name in self.constexpr_params)
        self._runtime_pos = tuple(i for i, p in enumerate(params) if p.name not in self.constexpr_params)
        # how many parameters from the first are runtime ones: a launch whose positional
        # arguments are exactly those can be remembered (run()), its arguments in ABI order
        self._leading_runtime = next((k for k, i in enumerate(self._runtime_pos) if i != k), len(self._runtime_pos))
        self._fast: dict[tuple, tuple] = {}
        self._last_call: tuple | None = None   # see run()
        self._forget = forgetter(self, "_last_call", 2)   # empties it when one of its arrays dies
        self._last_signature: tuple | None = None   # see _same_signature()
        # launches from several threads: the memo dictionaries and _last_call are only
        # ever replaced whole (atomic under the GIL); a miss compiles under this lock so
        # two threads missing together compile and load a specialisation once
        self._miss_lock = threading.RLock()
        self._layout_notes: set[str] = set()   # the PerLaneLayoutWarnings said (_note_layout)

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

    def dependencies(self) -> kernel_dependencies.Dependencies:
        """The kernel's source, the ``@jit`` functions it reaches and the global values
        they read (frontend/dependencies.py), current: collected again, and the fast
        launch dictionary emptied, when a global it read has been rebound since."""
        deps = self._deps
        if deps is not None and deps.unchanged():
            return deps
        self._fast.clear()
        self._last_call = None
        self._last_signature = None
        self._deps = deps = kernel_dependencies.collect(self.fn)
        return deps

    def source_hash(self) -> str:
        """Hash of :meth:`dependencies`: the kernel's sources and the globals they read."""
        return cache_keys.key_for(self.dependencies().text)

    def cache_key(self, specs: dict[str, ArgSpec], constants: dict, target: str, options: dict | None = None) -> str:
        """The one cache key, composed by runtime/cache_key.py from each component's part:
        the dependencies (the source of the kernel and of the @jit functions it reaches,
        every global value they read, type-tagged), kernel name, argument types and
        specializations, constexpr types and values, target, options, compiler version
        (its sources and the xDSL, llvmlite, LLVM, numpy and Python versions) and the
        codegen knobs."""
        return cache_keys.kernel_key(
            source=self.dependencies().text, name=self.__name__, signature=signature_text(specs),
            constants=kernel_dependencies.encode_constants(self.__name__, constants),
            target=target_facts.target_key_part(target),
            options=json.dumps(options or {}, sort_keys=True), compiler=compiler.compiler_version(),
            knobs=knobs.codegen_tag())

    def get_kernel(self, specs: dict, constants: dict, target: str, device, launcher=None,
                   options: LaunchOptions = NO_OPTIONS):
        """The loaded kernel for this specialisation and launch options (launch_options.py):
        memory, then disk, then compile."""
        launcher = launcher or launching.get_launcher(device)
        key = self.cache_key(specs, constants, target, options.compile_options())
        hit = self._memory.get((key, id(launcher)))
        if hit is not None:
            return hit
        compiled = self.load_or_compile(specs, constants, target, key, launcher, options)
        loaded = launcher.build(compiled.spirv, compiled.abi)
        loaded.scalar_fits = _scalar_fits    # a replayed scalar must select this specialisation
        self._memory[(key, id(launcher))] = (compiled, loaded)
        return compiled, loaded

    def load_or_compile(self, specs: dict, constants: dict, target: str, key: str | None = None,
                        launcher=None, options: LaunchOptions = NO_OPTIONS) -> "compiler.CompiledKernel":
        """The compiled kernel from the cache (memory or disk), else compiled and stored.

        An entry read from disk is used only if spirv-val accepts its SPIR-V (else it is
        rebuilt, with a warning) -- unless ``launcher`` holds the program built from that
        very SPIR-V, which then never reaches the runtime; a kernel from the cache repeats
        its compile warnings."""
        key = key or self.cache_key(specs, constants, target, options.compile_options())
        cache = _disk_cache()
        files = cache.get(key, check=lambda entry: _entry_problem(entry, launcher))
        if files is not None:      # checked when read from disk; put by this process otherwise
            compiled = compiler.CompiledKernel.from_files(files)
            compiled.replay_diagnostics()
            return compiled
        compiled = compiler.compile_kernel(self.fn, specs, constants, target, options=options)
        cache.stats.compiles += 1
        cache.put(key, compiled.to_files(), meta={"name": compiled.name, "target": target})
        return compiled

    # --- the launch path -----------------------------------------------------------------
    def run(self, grid, target: str | None, args: tuple, kwargs: dict):
        """Bind, find the loaded kernel (fast dictionary first) and launch.

        A call with the same grid, target, device arrays and scalar values as the previous
        asynchronous launch re-enqueues that launch's marshalled arguments directly: no
        binding, no key, no argument checks (they passed last time and nothing they
        depend on has changed).  A call with numpy arrays in the places and scalars of
        the kind of the previous numpy launch, on the same default device, goes straight
        to the loaded kernel's plan (which checks the arrays' layouts; no binding, no key)."""
        last = self._last_call          # one read: another thread may replace it meanwhile
        if last is not None and _same_frame(last, grid, target, kwargs) and self._deps.unchanged():
            replay = last[5]
            if replay is None:                  # numpy arrays: (..., loaded, None, grid3, launcher)
                found = compare_args(args, last[2])
                if found and (found == SAME or self._scalars_fit(args, last[2])) and \
                        _default_launcher() is last[7] and last[4]._launch_planned(last[6], args):
                    return None
            else:
                event = replay(args)
                if event is not MISS:
                    return event
        return self.run_full(grid, target, args, kwargs)

    def run_full(self, grid, target: str | None, args: tuple, kwargs: dict):
        """:meth:`run` without the remembered call (which ``args`` are known not to fit).
        CUDA arrays, or an NVIDIA target, go to the NVIDIA backend (nv_launch.py); they
        are never remembered, so the Intel fast paths above never take them."""
        if _nv_target(target) or (target is None and _on_cuda(args, kwargs)):
            return nv_launch.run(self, grid, target, args, kwargs)
        self._last_call = None
        hit = self._same_signature(grid, target, args, kwargs)
        if hit is not None:
            loaded, grid3, described = hit
            runtime = args
        else:
            loaded, grid3, runtime, described = self._resolve(grid, target, args, kwargs)
            self._remember_signature(grid, target, args, kwargs, loaded, grid3, described)
        event, replay = loaded.launch_remembered(grid3, runtime, described, self._forget)
        if (event is None) is (replay is None) and not callable(grid):
            self._remember_call(grid, target, args, kwargs, loaded, replay, grid3)
        return event

    def _remember_call(self, grid, target, args: tuple, kwargs: dict, loaded, replay, grid3) -> None:
        """Remember a launch for :meth:`run` when its positional arguments are exactly the
        runtime ones and can be identified cheaply: device arrays with the loaded
        kernel's :class:`~.runtime.replay.Replay` of it (shared: a direct launch of the
        loaded kernel replays it too), or numpy arrays (no device arrays) with the grid
        and default launcher."""
        if not len(args) == self._leading_runtime == len(self._runtime_pos):
            return
        kw = _kwarg_tokens(kwargs)
        if kw is None:
            return
        if replay is not None:       # device arrays: (..., loaded, replay)
            self._last_call = (grid, target, replay.tokens, kw, loaded, replay)
            return
        tokens = arg_tokens(args, self._forget, numpy=True)
        if tokens is not None and all(tok[1] is None for tok in tokens if tok[0] is None):
            self._last_call = (grid, target, tokens, kw, loaded, None, grid3, _default_launcher())

    def _same_signature(self, grid, target, args: tuple, kwargs: dict) -> tuple | None:
        """(loaded kernel, grid, described arguments) when a call has the grid, target,
        keyword values, argument types (what the fast dictionary's key holds of each) and
        launcher of the last call that went the full way: that call's binding, key and
        dictionary lookup then hold for this one.  None otherwise."""
        sig = self._last_signature      # one read: another thread may replace it meanwhile
        if sig is None or len(args) != sig[2] or not _same_frame(sig, grid, target, kwargs):
            return None
        if not self._deps.unchanged():
            return None
        described = list(map(_described, args))
        if tuple(map(_type_key, described)) != sig[4] or _launcher_for(described) is not sig[5]:
            return None
        return sig[6], sig[7], described

    def _remember_signature(self, grid, target, args: tuple, kwargs: dict, loaded, grid3, described) -> None:
        """Remember a call for :meth:`_same_signature` when its positional arguments are
        exactly the runtime ones and its grid and keywords are plain values."""
        kw = _kwarg_tokens(kwargs)
        if kw is None or callable(grid) or not len(args) == self._leading_runtime == len(self._runtime_pos):
            return
        launcher = _launcher_for(described)
        self._last_signature = (grid, target, len(args), kw, tuple(map(_type_key, described)), launcher,
                                loaded, grid3)

    @staticmethod
    def _scalars_fit(args: tuple, tokens: tuple) -> bool:
        """True when each scalar of ``args`` selects the same specialisation as the
        remembered one (the fast dictionary's key of an int: width, 1, divisibility)."""
        for value, tok in zip(args, tokens):
            if tok[0] is not None and value != tok[1] and _type_key(value) != _type_key(tok[1]):
                return False
        return True

    def resolve(self, grid, target: str | None, args: tuple, kwargs: dict) -> tuple:
        """(loaded kernel, grid, runtime arguments) of a launch, without launching it."""
        return self._resolve(grid, target, args, kwargs)[:3]

    def _resolve(self, grid, target: str | None, args: tuple, kwargs: dict) -> tuple:
        """:meth:`resolve`, plus the runtime arguments with each device array described
        (runtime/arrays.py) -- once per launch: the fast key, the launcher and the
        launcher's checks all read that one description."""
        kwargs, options = split_options(kwargs, self._index)
        values = self._bind_values(args, kwargs)
        runtime = [values[i] for i in self._runtime_pos]
        described = list(map(_described, runtime))
        deps = self._deps
        if deps is None or not deps.unchanged():   # a global the kernel reads was rebound
            self.dependencies()
        consts = tuple(_const_key(_unwrap(values[i])) for i in self._const_pos)
        launcher = _launcher_for(described)
        key = (tuple(map(_type_key, described)), consts, target, id(launcher), options.key())
        try:
            hit = self._fast.get(key)
        except TypeError:                     # an unhashable constexpr value: no fast entry
            hit = self._specialize(values, target, launcher, options)
        else:
            if hit is None:
                hit = self._specialize_once(key, values, target, launcher, options)
        loaded, meta = hit
        if callable(grid):
            grid = launch_grid(self.__name__, grid, {n: values[i] for n, i in self._index.items()}, meta)
        return loaded, grid, runtime, described

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

    def _specialize_once(self, key: tuple, values: list, target: str | None, launcher,
                         options: LaunchOptions) -> tuple:
        """A miss of the fast dictionary, one thread at a time (the others then hit)."""
        with self._miss_lock:
            hit = self._fast.get(key)
            if hit is None:
                hit = self._fast[key] = self._specialize(values, target, launcher, options)
            return hit

    def _specialize(self, values: list, target: str | None, launcher, options: LaunchOptions = NO_OPTIONS) -> tuple:
        """A miss of the fast dictionary: types, full cache key, load or compile (the
        launch options checked against the target first: nothing is compiled or built for
        a workgroup the target cannot run)."""
        names = list(self._index)
        specs = {names[i]: _arg_spec(names[i], values[i]) for i in self._runtime_pos}
        constants = {names[i]: _unwrap(values[i]) for i in self._const_pos}
        target = target or default_target(launcher.device)
        _check_device_runs(target, launcher.device)
        if options.num_warps is not None:
            gpu = target_catalog.compile_target(target).gpu
            check_for_target(self.__name__, options, target, gpu.subgroup_size, gpu.max_workgroup_size)
        self._note_layouts(target, {names[i]: values[i] for i in self._runtime_pos if specs[names[i]].spec == NARROW})
        _, loaded = self.get_kernel(specs, constants, target, launcher.device, launcher, options)
        return loaded, constants


    def _note_layouts(self, target: str, per_lane: dict) -> None:
        """One :class:`PerLaneLayoutWarning` naming the device arrays of ``per_lane`` (name:
        value) that take the per-lane specialisation for their layout (not their row width):
        why, the cost and how to avoid it -- once per kernel and layouts; none for a target
        without 2D block IO (ARC), whose kernels read every array per lane or by rows."""
        notes: dict[str, list[str]] = {}
        for name, value in per_lane.items():
            note = _layout_note(name, value)
            if note is not None:
                notes.setdefault(note, []).append(repr(name))
        if not notes:
            return
        if not compiler.compile_target(target).gpu.has_2d_block_io:
            return
        text = "; ".join(f"{', '.join(names)}: {note}" for note, names in notes.items())
        if text in self._layout_notes:
            return
        self._layout_notes.add(text)
        warnings.warn(f"{self.__name__}: 2D block messages cannot address these device arrays, so they take "
                      f"the kernel's per-lane specialisation (a compile of its own, and one message per lane "
                      f"instead of one 2D block per tile, with no block prefetch: slower loads and stores of "
                      f"them) -- {text} to keep the 2D block kernel", PerLaneLayoutWarning,
                      stacklevel=_user_stacklevel())


def _entry_problem(files: dict, launcher) -> str | None:
    """Why a kernel cache entry read from disk cannot be used (compiler.cached_kernel_problem),
    or None; an entry whose program ``launcher`` already holds needs no SPIR-V validation."""
    if launcher is not None:
        try:
            kernel = compiler.CompiledKernel.from_files(files)
        except (KeyError, ValueError, TypeError) as exc:
            return f"{type(exc).__name__}: {exc}"
        if launcher.has_program(kernel.spirv, kernel.abi):
            return None
    return compiler.cached_kernel_problem(files)


class _Target:
    def __init__(self, jit: JITFunction, target: str | None):
        self.jit, self.target = jit, target

    def __getitem__(self, grid):
        return _Launch(self.jit, grid, self.target)


class _Launch:
    __slots__ = ("jit", "grid", "target")

    def __init__(self, jit: JITFunction, grid, target: str | None):
        self.jit, self.grid, self.target = jit, grid, target

    def __call__(self, *args, **kwargs):
        """Launch; returns the event of an asynchronous launch (device arrays only), else None.

        With ``target="interpret"`` (or XETILE_INTERPRET=1 and no explicit target) the
        kernel's XeTile IR runs in the numpy interpreter instead; ``"interpret-subgroups"``
        runs each subgroup of a workgroup-level kernel (docs/interpreter.md).

        The remembered device-array launch (:meth:`JITFunction.run`) is tried here first,
        when this grid and target are the very objects it was made with and each keyword
        value is the very object it had: one frame less on the path a loop of launches
        takes (anything else goes through ``run``, which compares by value)."""
        target = self.target
        if target is None:
            if not environ.unset(knobs.INTERPRET.name) and knobs.interpreting():   # (unset: one read)
                return interpreter.launch_jit(self.jit, self.grid, args, kwargs)
        elif target == "interpret-subgroups":
            return interpreter.launch_jit(self.jit, self.grid, args, kwargs, subgroups=True)
        elif target == "interpret":
            return interpreter.launch_jit(self.jit, self.grid, args, kwargs)
        jit = self.jit
        if ArrayTable in map(type, (*args, *kwargs.values())):     # (C-level: a launch's hot path)
            if _nv_target(target) or (target is None and _on_cuda(args, kwargs)):
                return jit.run(self.grid, target, args, kwargs)   # nv_launch: the table's CUDA device table
            return launch_with_tables(lambda a, k: jit.run(self.grid, target, a, k),
                                      devices.get_device, args, kwargs)
        last = jit._last_call          # one read: another thread may replace it meanwhile
        if last is None or last[0] is not self.grid or last[1] is not target or last[5] is None:
            return jit.run(self.grid, target, args, kwargs)
        names, values = last[3][2], last[3][4]
        if len(kwargs) != len(names) or (kwargs and not all(map(is_, map(kwargs.get, names), values))) \
                or not jit._deps.unchanged():
            return jit.run(self.grid, target, args, kwargs)
        event = last[5](args)
        if event is not MISS:
            return event
        return jit.run_full(self.grid, target, args, kwargs)


def _nv_target(target: str | None) -> bool:
    """Whether ``target`` names an NVIDIA target.  Their names start with ``sm`` and no
    Intel target's does (tests/targets/test_target_names.py), so a named Intel or CPU
    launch never imports the NVIDIA table, which imports the target tables a warm launch
    must not load."""
    return target is not None and target.startswith("sm") and target in nv_targets.NV_TARGETS


def _on_cuda(args: tuple, kwargs: dict) -> bool:
    """Whether a launch passes CUDA arrays (``__cuda_array_interface__``: torch CUDA
    tensors): it then runs on the NVIDIA backend."""
    return any(_has_cuda_interface(a) for a in (*args, *kwargs.values()))


def _has_cuda_interface(a) -> bool:
    if a.__class__ is ArrayTable:       # a table of torch CUDA tensors (runtime/array_tables.py)
        return a.on_cuda
    if getattr(a, "is_cuda", None) is True:     # a torch CUDA tensor: without building its interface
        return True
    try:
        return hasattr(a, "__cuda_array_interface__")
    except RuntimeError:    # a torch CUDA tensor that requires grad
        return True


def default_target(device) -> str:
    """The compile target for ``device``: its GPU target, or the CPU running the flavour
    named by XETILE_CPU_FLAVOUR (pvc by default)."""
    name = device.target_name
    if name == "cpu":
        return "cpu-" + cpu_device.flavour()
    return name


def _check_device_runs(target: str, device) -> None:
    """A GPU target's code needs a GPU: on the CPU device its builtins are undefined (the
    driver's build fails without a reason), so say what would run instead."""
    if not cpu_device.runs_on_cpu_device(target) and target not in interpreter.INTERPRETER_TARGETS and device.kind == "cpu":
        compiler.compile_target(target)   # an unknown name: the UsageError listing the targets
        flavours = " or ".join(f".on('cpu-{name}')" for name in target_catalog.cpu_flavours())
        raise LaunchError(f"target {target!r} is GPU machine code and the device is the CPU ({device.name}): "
                          f"launch with {flavours} (the GPU flavours on the CPU device), "
                          f"or read its ISA with xetile_dsl.compile(..., target={target!r})")


_MISSING = object()


def _unwrap(value):
    return value.value if isinstance(value, constexpr) else value


def _const_key(value) -> tuple:
    """Fast-dictionary key of a constexpr value: its type and value, so that values equal
    in Python (``1 == True == 1.0``, ``2**30 == 2.0**30``, ``0.0 == -0.0``) get their own
    kernels; the disk key (encode_constants) separates them the same way."""
    cls = value.__class__
    if cls is int or cls is str or cls is bool:
        return (cls, value)
    if cls is tuple or cls is list:
        return (cls, tuple(map(_const_key, value)))
    if isinstance(value, (float, np.floating)):
        return (cls, float(value).hex())
    return (cls, value)


def _int_key(value) -> tuple:
    """Launch-path key of an integer: must separate every pair of ints whose ArgSpec differs."""
    # the ArgSpec of an int depends on its width and on its specialisation (value 1,
    # divisibility by 16), so both are part of the fast key
    return (value.__class__, -2**31 <= value < 2**31, value == 1, value % 16 == 0)


def _scalar_fits(value, remembered) -> bool:
    """True when a new scalar value (of the remembered one's type) selects the remembered
    value's specialisation (the fast dictionary's key of an int: width, 1, divisibility)."""
    return value == remembered or _type_key(value) == _type_key(remembered)


def _type_key(value) -> tuple:
    """What the fast launch dictionary knows of an argument: (type, dtype, ndim) for arrays."""
    cls = value.__class__
    if cls is int:
        return _int_key(value)
    if cls is float or cls is bool:
        return (cls,)
    if cls is TableMeta:
        return (cls, value.entry_dtype)
    if cls is np.ndarray:
        return (cls, value.dtype, value.ndim, value.ndim > 0 and target_facts.rows_need_per_lane(value.shape[-1], value.itemsize))
    if cls is DeviceArray:
        return (value.owner.__class__, value.api, value.dtype, len(value.shape), _device_rows(value))
    if is_device_array_type(cls):
        if cls.__module__.startswith("torch"):
            return (cls, str(value.dtype), value.dim(), str(value.device), _narrow_rows(value.shape, value.element_size()))
        return (cls, value.dtype, value.ndim, _narrow_rows(value.shape, np.dtype(value.dtype).itemsize))
    if isinstance(value, (np.integer,)):
        return _int_key(int(value)) + (cls,)
    return (cls,)


_PLAIN = (int, float, bool, str)


def _kwarg_tokens(kwargs: dict) -> tuple | None:
    """Keyword arguments as (a copy of the dictionary, the values' types, the names in
    order, the exact bits of the float values or None, the values in order) when all are
    plain scalars, else None (floats by their bits: ``0.0 == -0.0`` select different
    kernels)."""
    types = list(map(type, kwargs.values()))
    if not all(t in _PLAIN for t in types):
        return None
    return dict(kwargs), types, list(kwargs), _float_bits(kwargs) if float in types else None, list(kwargs.values())


def _float_bits(kwargs: dict) -> tuple:
    return tuple((k, v.hex()) for k, v in kwargs.items() if v.__class__ is float)


#: the types of an all-int grid of 0..3 dimensions (``(True,) == (1,)``, but is not one)
_INT_TYPES = ((), (int,), (int, int), (int, int, int))


def _same_frame(last: tuple, grid, target, kwargs: dict) -> bool:
    """True when a launch has the remembered one's grid, target and keyword arguments
    (see :meth:`JITFunction.run`; its positional arguments are compared apart): equal
    keywords, each of the same type (in the same order), floats of the same bits."""
    prev = last[0]
    if grid is not prev and (grid.__class__ is not tuple or grid != prev
                             or tuple(map(type, grid)) != _INT_TYPES[len(grid)]):
        return False
    if target != last[1]:
        return False
    same, types, names, bits, values = last[3]
    if len(kwargs) == len(names) and all(map(is_, map(kwargs.get, names), values)):
        return True            # the very same objects by name (literals and constants are)
    if kwargs != same or list(map(type, kwargs.values())) != types or list(kwargs) != names:
        return False
    return bits is None or _float_bits(kwargs) == bits


def _described(value):
    """A device array as its :class:`DeviceArray`; anything else (and a device array that
    cannot be described: its error comes with its name from the checks) as it is."""
    if value.__class__ is int or value.__class__ is np.ndarray or not is_device_array_type(value.__class__):
        return value
    try:
        desc = describe(value, "array")
    except LaunchError:
        return value
    return value if desc is None else desc


def _launcher_for(described: list):
    """The launcher of the first device array's queue, else the default device's
    (``described``: the runtime arguments, device arrays as :class:`DeviceArray`; one that
    could not be described is reported with its name by the checks)."""
    for value in described:
        if value.__class__ is DeviceArray or (value.__class__ is TableMeta and value.queue is not None):
            return _queue_launcher(value.queue)   # a table of device arrays: theirs (runtime/array_tables.py)
    return _default_launcher()


def _default_launcher():
    """The launcher of the default device (XETILE_DEVICE, XETILE_BACKEND)."""
    return launching.get_launcher(devices.get_device())


#: (queue, its launcher): most launches reuse one queue.  One tuple, read and replaced
#: whole, so a thread never pairs one thread's queue with another's launcher.
_LAST_QUEUE: tuple = (None, None)


def _queue_launcher(queue):
    global _LAST_QUEUE
    last, launcher = _LAST_QUEUE
    if last is queue or (last is not None and last.__class__ is queue.__class__ and last == queue):
        return launcher
    launcher = launching.launcher_for_queue(queue)
    _LAST_QUEUE = (queue, launcher)
    return launcher


def _arg_spec(name: str, value) -> ArgSpec:
    if value.__class__ is ArrayTable or value.__class__ is TableMeta:   # runtime/array_tables.py
        dtype = value.dtype if value.__class__ is ArrayTable else value.entry_dtype
        return ArgSpec("table", OF_NUMPY_NAME[np.dtype(dtype).name].name, 2)
    if is_device_array_type(type(value)):
        desc = describe(value, f"argument {name!r}")
        if desc is not None:
            return _array_spec(name, desc.dtype, desc.shape, _device_per_lane(desc))
    if isinstance(value, np.ndarray):
        return _array_spec(name, value.dtype, value.shape)
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


def _array_spec(name: str, dtype, shape: tuple, per_lane: bool | None = None) -> ArgSpec:
    """An array's ArgSpec: element type, rank and NARROW when 2D block messages cannot
    address it (the kernel is then specialised to access it per lane): its rows are too
    narrow, or (``per_lane``, for a device array) its layout does not suit them."""
    known = OF_NUMPY_NAME.get(np.dtype(dtype).name)
    if known is None:
        raise LaunchError(f"argument {name!r}: arrays of dtype {dtype} are not supported; use one of "
                          f"{', '.join(OF_NUMPY_NAME)} (bfloat16 from ml_dtypes)")
    narrow = _narrow_rows(tuple(shape), np.dtype(dtype).itemsize) if per_lane is None else per_lane
    return ArgSpec("array", known.name, len(shape), spec=NARROW if narrow else "")


def _narrow_rows(shape, itemsize: int) -> bool:
    """Whether rows of this shape (a 1-D array is one row) cannot be a 2D block surface's
    width on some target."""
    return len(shape) > 0 and target_facts.rows_need_per_lane(int(shape[-1]), itemsize)


def _device_rows(desc: DeviceArray) -> int:
    """How a device array's rows are accessed (used in place: never copied into a padded
    buffer as numpy arrays are): 0 with 2D block messages, 1 per lane as they are too narrow
    for them, 2 per lane as its row pitch or first element does not suit them (so that any
    device array runs; the fast launch key keeps 1 and 2 apart for the warning of 2)."""
    shape = desc.shape
    if not shape:
        return 0
    itemsize = desc.dtype.itemsize
    if target_facts.rows_need_per_lane(int(shape[-1]), itemsize):
        return 1
    return 2 if target_facts.device_layout_needs_per_lane(
        shape, desc.strides, itemsize, desc.pointer if desc.api == "usm" else None) else 0


def _device_per_lane(desc: DeviceArray) -> bool:
    """Whether a device array takes the per-lane specialisation (:func:`_device_rows`)."""
    return _device_rows(desc) != 0


def _layout_note(name: str, value) -> str | None:
    """Why a device array whose rows 2D block messages could address takes the per-lane
    specialisation (its pitch or first element) and how to avoid it; None when it does not
    (or takes it for its narrow rows, which no layout avoids)."""
    if not is_device_array_type(type(value)):
        return None
    try:
        desc = describe(value, f"argument {name!r}")
    except LaunchError:
        return None
    if desc is None or _device_rows(desc) != 2:
        return None
    itemsize = desc.dtype.itemsize
    pitch = desc.strides[-2] * itemsize if len(desc.shape) > 1 else 0   # a 1-D array is one row
    align = target_facts.PITCH_ALIGN_BYTES
    if len(desc.shape) > 1 and desc.shape[-2] > 1 and pitch % align:
        return (f"row pitch {pitch} bytes ({desc.strides[-2]} x {desc.dtype}), not a multiple of {align}: allocate "
                f"rows padded to {-(-pitch // align) * align // itemsize} elements and pass the view "
                f"[..., :{desc.shape[-1]}]")
    if not target_facts.slices_aligned(desc.shape, desc.strides, itemsize):
        return (f"strides {desc.strides} (elements): its 2-D slices x[z, ...] start {target_facts.BASE_ALIGN_BYTES}"
                f"-byte aligned only when the leading strides are multiples of {target_facts.BASE_ALIGN_BYTES} "
                "bytes: copy it into an array with such strides")
    return (f"first element at 0x{desc.pointer:x}, not {target_facts.BASE_ALIGN_BYTES}-byte aligned (a view "
            "starting inside a row or a vector?): copy it into its own array")


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside the xetile_dsl package (the launch)."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def signature_text(specs: dict[str, ArgSpec]) -> str:
    """The cache key's part for the runtime arguments: each one's kind, element type, rank
    and specialisation, by name (runtime/cache_key.py)."""
    return json.dumps({n: [s.kind, s.dtype, s.ndim, s.spec] for n, s in specs.items()}, sort_keys=True)


#: the process's kernel cache (runtime/cache.py), shared with the launcher's built programs
def _disk_cache():
    return kernel_cache.shared_cache()


def jit(fn=None):
    """Decorator: ``@xetile_dsl.jit`` turns a function into a launchable kernel, launched as
    ``kernel[grid](*args, **constexprs, num_warps=n, num_stages=s)``.

    ``num_warps=n`` (launch_options.py) is the workgroup's subgroup count.  A kernel with
    wg_maps runs the count they describe; on a kernel without any wg_map the compiler
    chooses them (pass ``xetile-choose-wg-map``, docs/decisions/048): one ``sg_layout
    [a, b]`` with ``a * b = n`` -- for a ``tile_mma`` kernel over C, each subgroup a
    ``M/a x N/b`` piece of whole DPAS blocks (the squarest such piece), A split by rows
    and B by columns; otherwise ``[n, 1]``, rows split (``[1, n]`` when the stored tiles'
    rows do not split).  A kernel it cannot split (barriers, SLM, atomics, masked or
    element stores, an array read through one tile and written through another, shapes no
    layout divides) runs in subgroup 0 of ``n``, with a warning saying why::

        @xd.jit
        def gemm(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
            ...                                   # init_tile / load_tile / tile_mma, no wg_map
        gemm[(M // 32, N // 32)](a, b, c, K, BM=32, BN=32, BK=32, num_warps=4)
        # -> sg_layout [2, 2]: each subgroup computes a 16x16 quarter of each 32x32 C tile
    """
    if fn is None:
        return jit
    check_kernel_function(fn)  # a lambda or *args: a located error now, not at the first launch
    return JITFunction(fn)
