"""``@xetile_dsl.autotune``: pick the fastest of several configurations of a ``@jit`` kernel.

    @xd.autotune(configs=[xd.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=1, num_stages=3), ...],
                 key=["M", "N", "K"])
    @xd.jit
    def kernel(a, b, c, M, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr): ...

    kernel[grid](a, b, c, M, N, K)        # tunes once per value of the key, then launches

For each new value of ``key`` (scalar arguments by value, arrays by shape and dtype) the
kernel first runs in the numpy interpreter (``.on("interpret")``, with the first
configuration the interpreter accepts) on copies of the array arguments: the arrays it
leaves are the reference, so no compiled configuration is trusted to judge another.
Every configuration left after ``prune_configs_by`` then runs once on the caller's
arguments (array contents restored before each run); a configuration whose output
differs from the reference by more than the tolerance (:func:`tolerance`, derived from
the dtypes) is dropped with a warning, and one that fails to compile, build or launch
(any :class:`~xetile_dsl.errors.XeTileError`) is skipped.  The survivors are timed:
``warmup`` launches, then ``rep`` launches timed with device events where the queue can
profile (dpctl), else with the wall clock around synchronous launches; the median wins.
The arrays are restored, and the call launches the winner.

The winner is remembered in memory and on disk, per kernel source, compiler version,
device, target, key value and configuration list: a JSON file under
``<cache directory>/.autotune/`` written atomically, so other processes reuse it.
A line per configuration is printed on stderr while tuning (``progress=False`` or
``XETILE_AUTOTUNE_QUIET=1`` silences it).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import compiler, knobs
from .dtypes import numpy_kind
from .errors import UsageError, XeTileError
from .interpreter.requested import INTERPRETER_TARGETS, interpret_requested
from .jit import _launcher_for
from .runtime import cache_key
from .runtime.arrays import describe, from_host, to_host
from .runtime.cache import default_directory
from .runtime.inflight import synchronize


@dataclass
class Config:
    """One candidate: constexpr values and the launch options it runs with (Triton's
    ``Config(kwargs, num_warps=, num_stages=)``; launch_options.py).  ``num_warps``
    states the kernel's subgroups per workgroup (its wg_maps decide them: a config that
    contradicts them is skipped like one that fails to compile); ``num_stages`` sets the
    K loops' prefetch depth.  ``num_subgroups`` is ``num_warps`` under this project's name."""

    kwargs: dict = field(default_factory=dict)
    num_subgroups: int | None = None
    num_warps: int | None = None
    num_stages: int | None = None

    def _options(self) -> dict:
        names = (("num_subgroups", self.num_subgroups), ("num_warps", self.num_warps),
                 ("num_stages", self.num_stages))
        return {name: value for name, value in names if value is not None}

    def all_kwargs(self) -> dict:
        """The keyword arguments a launch with this configuration passes."""
        return {**self.kwargs, **self._options()}

    def to_json(self) -> dict:
        return {"kwargs": self.kwargs, **{k: getattr(self, k) for k in ("num_subgroups", "num_warps", "num_stages")}}

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in {**self.kwargs, **self._options()}.items())
        return f"Config({inner})"


def autotune(configs, key, prune_configs_by=None, warmup: int = 3, rep: int = 10, progress: bool | None = None,
             rtol: float | None = None):
    """Decorator over a ``@jit`` kernel; see the module docstring.  ``rtol`` replaces the
    derived tolerance (:func:`tolerance`) by ``rtol`` times each output's largest magnitude."""
    def wrap(fn):
        return Autotuner(fn, list(configs), list(key), prune_configs_by, warmup, rep, progress, rtol)
    return wrap


class Autotuner:
    """A ``@jit`` kernel launched with the best of ``configs`` for each value of ``key``."""

    def __init__(self, fn, configs, key, prune_configs_by, warmup, rep, progress, rtol):
        if not configs:
            raise UsageError("autotune needs at least one Config")
        self.fn, self.configs, self.key = fn, configs, key
        self.prune = prune_configs_by
        self.warmup, self.rep, self.rtol = max(int(warmup), 0), max(int(rep), 1), rtol
        self.progress = progress
        self.best: dict = {}            # key value -> Config
        self.tuning_runs = 0            # searches done by this process
        self.timings: dict = {}         # key value -> [(seconds or None, Config, note)]
        self.__name__ = getattr(fn, "__name__", "kernel")

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, None, args, kwargs)

    def on(self, target: str | None):
        """Tune and launch for a compile target, like ``JITFunction.on``."""
        outer = self

        class _On:
            def __getitem__(self, grid):
                return lambda *args, **kwargs: outer.run(grid, target, args, kwargs)
        return _On()

    # --- the launch ------------------------------------------------------------------
    def run(self, grid, target, args, kwargs):
        """Launch with the remembered config for this key, tuning first if there is none."""
        if target in INTERPRETER_TARGETS or (target is None and interpret_requested()):
            return self._interpret(grid, target, args, kwargs)
        named = self._named(args, kwargs)
        key = tuple(_key_value(named, k) for k in self.key)
        config = self.best.get(key)
        if config is None:
            config = self.best[key] = self._load_or_tune(grid, target, args, kwargs, named, key)
        return self.fn.run(grid, target, args, {**kwargs, **config.all_kwargs()})

    def _interpret(self, grid, target, args, kwargs):
        """Under the interpreter there is nothing to time: the first configuration left
        after ``prune_configs_by`` runs, interpreted; nothing is tuned, remembered or cached."""
        config = self._candidates(self._named(args, kwargs))[0]
        return self.fn.on(target)[grid](*args, **{**kwargs, **self._kernel_kwargs(config)})

    def _kernel_kwargs(self, config) -> dict:
        """The config's keyword arguments for an interpreted run: the interpreter takes and
        checks the launch options as a compiled launch does (launch_options.py)."""
        return config.all_kwargs()

    def _named(self, args, kwargs) -> dict:
        try:
            return dict(self.fn.signature.bind_partial(*args, **kwargs).arguments)
        except TypeError as exc:
            raise XeTileError(f"{self.__name__}: {exc}") from None

    def _load_or_tune(self, grid, target, args, kwargs, named, key):
        path = self._memo_path(target, named, key)
        config = _read_memo(path, self.configs)
        if config is not None:
            return config
        config = self._tune(grid, target, args, kwargs, named, key)
        _write_memo(path, {"kernel": self.__name__, "key": repr(key), "config": config.to_json(),
                           "timings_us": [(None if t is None else t * 1e6, str(c), note)
                                          for t, c, note in self.timings[key]]})
        return config

    def _memo_path(self, target, named, key) -> Path:
        device = _launcher_for(list(named.values())).device    # the launch path's own device choice
        digest = cache_key.tuning_key(
            source=self.fn.source_hash(), compiler=compiler.compiler_version(), knobs=knobs.codegen_tag(),
            device=json.dumps([device.name, device.backend, device.platform]), target=target or "",
            tuning_key=repr(key), configs=json.dumps([c.to_json() for c in self.configs], sort_keys=True))
        return default_directory() / ".autotune" / f"{self.__name__}-{digest[:32]}.json"

    # --- the search ------------------------------------------------------------------
    def _candidates(self, named) -> list:
        prune = self.prune
        if prune is None:
            return list(self.configs)
        if isinstance(prune, dict):
            prune = prune.get("early_config_prune")
        pruned = list(prune(list(self.configs), named)) if prune else list(self.configs)
        if not pruned:
            raise XeTileError(f"{self.__name__}: prune_configs_by removed every configuration")
        return pruned

    def _tune(self, grid, target, args, kwargs, named, key) -> Config:
        self.tuning_runs += 1
        arrays = {n: v for n, v in named.items() if _is_array(v)}
        initial = {n: to_host(v) for n, v in arrays.items()}
        results = []
        candidates = self._candidates(named)
        reference = self._reference(grid, named, candidates, initial)
        for i, config in enumerate(candidates):
            t, note, reference = self._try(grid, target, args, kwargs, config, arrays, initial, reference)
            results.append((t, config, note))
            self._say(f"{i + 1}/{len(candidates)} {config}: "
                      + (f"{t * 1e6:.1f} us" if t is not None else note))
        for n, v in arrays.items():
            from_host(v, initial[n])
        self.timings[key] = results
        timed = [(t, i) for i, (t, _, _) in enumerate(results) if t is not None]
        if not timed:
            raise XeTileError(f"{self.__name__}: no configuration ran correctly: "
                              + "; ".join(f"{c}: {note}" for _, c, note in results))
        best = results[min(timed)[1]][1]
        self._say(f"best for {dict(zip(self.key, key))}: {best}")
        return best

    def _reference(self, grid, named, candidates, initial) -> dict | None:
        """The arrays after an interpreted run (numpy copies of the arguments), with the
        first candidate the interpreter accepts; None (with a warning) when none is:
        then the first compiled configuration that runs is the reference."""
        problems = []
        for config in candidates:
            copies = {n: (initial[n].copy() if n in initial else v) for n, v in named.items()}
            try:
                self.fn.on("interpret")[grid](**{**copies, **self._kernel_kwargs(config)})
            except XeTileError as exc:
                problems.append(f"{config}: {str(exc).splitlines()[0]}")
                continue
            return {n: copies[n] for n in initial}
        warnings.warn(f"autotune {self.__name__}: the interpreter cannot run this kernel ({'; '.join(problems)}); "
                      "checking the configurations against the first one that runs instead", RuntimeWarning,
                      stacklevel=5)
        return None

    def _try(self, grid, target, args, kwargs, config, arrays, initial, reference):
        """Run one config, check it against the reference, time it: (seconds, note, reference)."""
        for n, v in arrays.items():
            from_host(v, initial[n])
        call_kwargs = {**kwargs, **config.all_kwargs()}
        try:
            self.fn.run(grid, target, args, call_kwargs)
            _wait()
        except XeTileError as exc:
            return None, f"failed: {str(exc).splitlines()[0]}", reference
        outputs = {n: to_host(v) for n, v in arrays.items()}
        if reference is None:
            return self._time(grid, target, args, call_kwargs), "ok", outputs
        extent = max((max(a.shape, default=1) for a in initial.values()), default=1)
        wrong = [n for n in outputs if not _close(outputs[n], reference[n], self.rtol, extent)]
        if wrong:
            warnings.warn(f"autotune {self.__name__}: {config} disagrees with the reference (the interpreter) "
                          f"on {', '.join(wrong)}; not used", RuntimeWarning, stacklevel=4)
            return None, f"wrong result in {', '.join(wrong)}", reference
        return self._time(grid, target, args, call_kwargs), "ok", reference

    def _time(self, grid, target, args, kwargs) -> float:
        """Median seconds per launch: device events when the queue can profile, else wall clock."""
        loaded, grid, runtime = self.fn.resolve(grid, target, args, kwargs)
        prepared = loaded.prepare(grid, runtime)
        seconds = _event_times(loaded, prepared, self.warmup, self.rep)
        if seconds is None:
            seconds = _wall_times(prepared, self.warmup, self.rep)
        return statistics.median(seconds)

    def _say(self, text: str) -> None:
        quiet = knobs.AUTOTUNE_QUIET.get()
        if self.progress is False or (self.progress is None and quiet):
            return
        print(f"[xetile_dsl autotune] {self.__name__}: {text}", file=sys.stderr, flush=True)


# --- timing ----------------------------------------------------------------------------

_PROFILING_QUEUES: dict = {}


def _profiling_queue(loaded):
    """A profiling dpctl queue in the kernel's context (None for other runtimes)."""
    backend = loaded.backend
    if getattr(backend, "api", None) != "usm":
        return None
    key = id(backend)
    if key not in _PROFILING_QUEUES:
        import dpctl

        try:
            _PROFILING_QUEUES[key] = dpctl.SyclQueue(backend.context, backend.queue.sycl_device,
                                                     property="enable_profiling")
        except Exception:  # noqa: BLE001 - no profiling here: use the wall clock
            _PROFILING_QUEUES[key] = None
    return _PROFILING_QUEUES[key]


def _event_times(loaded, prepared, warmup: int, rep: int) -> list | None:
    queue = _profiling_queue(loaded)
    if queue is None:
        return None
    submit = lambda: queue.submit_async(loaded.native_kernel, prepared.native_args,  # noqa: E731
                                        prepared.global_size, prepared.local_size)
    try:
        for _ in range(warmup):
            submit()
        queue.wait()
        events = [submit() for _ in range(rep)]
        queue.wait()
        return [(e.profiling_info_end - e.profiling_info_start) * 1e-9 for e in events]
    except Exception:  # noqa: BLE001 - profiling info unsupported: wall clock instead
        return None


def _wall_times(prepared, warmup: int, rep: int) -> list:
    for _ in range(warmup):
        prepared.submit()
    out = []
    for _ in range(rep):
        t0 = time.perf_counter()
        prepared.submit()                     # synchronous
        out.append(time.perf_counter() - t0)
    return out


# --- helpers ---------------------------------------------------------------------------

def _wait() -> None:
    synchronize()


def _is_array(value) -> bool:
    if isinstance(value, np.ndarray):
        return True
    try:
        return describe(value, "array") is not None
    except XeTileError:
        return False


def _key_value(named: dict, name: str):
    if name not in named:
        raise XeTileError(f"autotune key {name!r} is not an argument of this launch "
                          f"(arguments: {', '.join(named)})")
    value = named[name]
    if _is_array(value):
        return (tuple(value.shape), str(value.dtype))
    return value


#: unit roundoff (half an ulp of 1) of each float dtype
_UNIT_ROUNDOFF = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24, "float64": 2.0**-53}


def tolerance(dtype, extent: int) -> float:
    """Largest relative difference (to the output's largest magnitude) between a compiled
    output of ``dtype`` and the interpreter's, for arrays whose longest side is ``extent``.

    Both compute the same exact values with different summation orders.  A sum of at
    most ``extent`` terms (no reduction in a tile kernel is longer than the longest array
    side) accumulated in f32 (f64 for f64 outputs) is within ``extent * u_acc * sum|terms|``
    of the exact sum (the recursive-summation bound, u = unit roundoff); each result is
    then rounded once into ``dtype`` (``u_out`` relative).  With ``sum|terms|`` taken as
    the output's largest magnitude (sums that cancel far below their terms need an
    explicit ``rtol``), the two results differ by at most ``2 u_out + 2 extent u_acc``
    times that magnitude.  Integer outputs must match exactly (tolerance 0)."""
    name = np.dtype(dtype).name
    if name not in _UNIT_ROUNDOFF:
        return 0.0
    accumulate = _UNIT_ROUNDOFF["float64" if name == "float64" else "float32"]
    return 2 * _UNIT_ROUNDOFF[name] + 2 * max(int(extent), 1) * accumulate


def _close(out: np.ndarray, ref: np.ndarray, rtol: float | None, extent: int) -> bool:
    """``out`` matches ``ref`` within ``rtol`` (derived by :func:`tolerance` when None)
    times ``ref``'s largest magnitude; NaNs must match."""
    if out.shape != ref.shape:
        return False
    if numpy_kind(out.dtype) in "iub" and numpy_kind(ref.dtype) in "iub":
        return bool(np.array_equal(out, ref))
    a, b = out.astype(np.float64), ref.astype(np.float64)
    rtol = tolerance(ref.dtype, extent) if rtol is None else rtol
    finite = np.isfinite(b)
    scale = float(np.max(np.abs(b[finite]))) if finite.any() else 1.0
    return bool(np.allclose(a, b, rtol=0.0, atol=rtol * max(scale, 1e-30), equal_nan=True))


def _read_memo(path: Path, configs: list) -> Config | None:
    try:
        data = json.loads(path.read_text())
        options = {k: data["config"].get(k) for k in ("num_subgroups", "num_warps", "num_stages")}
        chosen = Config(dict(data["config"]["kwargs"]),
                        **{k: None if v is None else int(v) for k, v in options.items()})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return chosen if any(c.to_json() == chosen.to_json() for c in configs) else None


def _write_memo(path: Path, data: dict) -> None:
    """Write ``data`` as JSON atomically (temporary file, then rename); warn if it cannot."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)
    except OSError as exc:
        warnings.warn(f"autotune: cannot remember the chosen config in {path} ({exc})", RuntimeWarning,
                      stacklevel=3)
