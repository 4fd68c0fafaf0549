"""``@xetile_dsl.autotune``: pick the fastest of several configurations of a ``@jit`` kernel.

    @xd.autotune(configs=[xd.Config({"BM": 32, "BN": 32, "BK": 32}, num_subgroups=1), ...],
                 key=["M", "N", "K"])
    @xd.jit
    def kernel(a, b, c, M, N, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr): ...

    kernel[grid](a, b, c, M, N, K)        # tunes once per value of the key, then launches

For each new value of ``key`` (scalar arguments by value, arrays by shape and dtype) every
configuration left after ``prune_configs_by`` runs once on the caller's arguments (array
contents restored before each run); its output is compared with the first configuration's
and a configuration that disagrees is dropped with a warning.  The survivors are timed:
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

from .errors import XeTileError
from .runtime.arrays import describe, from_host, to_host


@dataclass
class Config:
    """One candidate: constexpr values plus the workgroup shape (subgroups per workgroup)."""

    kwargs: dict = field(default_factory=dict)
    num_subgroups: int = 1

    def all_kwargs(self) -> dict:
        """The keyword arguments a launch with this configuration passes."""
        return {**self.kwargs, "num_subgroups": self.num_subgroups}

    def to_json(self) -> dict:
        return {"kwargs": self.kwargs, "num_subgroups": self.num_subgroups}

    def __str__(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.kwargs.items())
        return f"Config({inner}, num_subgroups={self.num_subgroups})"


def autotune(configs, key, prune_configs_by=None, warmup: int = 3, rep: int = 10, progress: bool | None = None,
             rtol: float = 1e-3):
    """Decorator over a ``@jit`` kernel; see the module docstring."""
    def wrap(fn):
        return Autotuner(fn, list(configs), list(key), prune_configs_by, warmup, rep, progress, rtol)
    return wrap


class Autotuner:
    """A ``@jit`` kernel launched with the best of ``configs`` for each value of ``key``."""

    def __init__(self, fn, configs, key, prune_configs_by, warmup, rep, progress, rtol):
        if not configs:
            raise ValueError("autotune needs at least one Config")
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
        named = self._named(args, kwargs)
        key = tuple(_key_value(named, k) for k in self.key)
        config = self.best.get(key)
        if config is None:
            config = self.best[key] = self._load_or_tune(grid, target, args, kwargs, named, key)
        return self.fn.run(grid, target, args, {**kwargs, **config.all_kwargs()})

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
        from .compiler import compiler_version
        from .jit import _launcher_for
        from .runtime.cache import default_directory, key_for

        device = _launcher_for(list(named.values())).device
        digest = key_for(self.fn.source_hash(), compiler_version(), device.name, device.backend, device.platform,
                         target or "", repr(key), json.dumps([c.to_json() for c in self.configs], sort_keys=True))
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
        baseline, results = None, []
        candidates = self._candidates(named)
        for i, config in enumerate(candidates):
            t, note, baseline = self._try(grid, target, args, kwargs, config, arrays, initial, baseline)
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

    def _try(self, grid, target, args, kwargs, config, arrays, initial, baseline):
        """Run one config, check it against the baseline, time it: (seconds, note, baseline)."""
        for n, v in arrays.items():
            from_host(v, initial[n])
        call_kwargs = {**kwargs, **config.all_kwargs()}
        try:
            self.fn.run(grid, target, args, call_kwargs)
            _wait()
        except XeTileError as exc:
            return None, f"failed: {str(exc).splitlines()[0]}", baseline
        outputs = {n: to_host(v) for n, v in arrays.items()}
        if baseline is None:
            baseline = outputs
        else:
            wrong = [n for n in outputs if not _close(outputs[n], baseline[n], self.rtol)]
            if wrong:
                warnings.warn(f"autotune {self.__name__}: {config} disagrees with the first configuration "
                              f"on {', '.join(wrong)}; not used", RuntimeWarning, stacklevel=4)
                return None, f"wrong result in {', '.join(wrong)}", baseline
        return self._time(grid, target, args, call_kwargs), "ok", baseline

    def _time(self, grid, target, args, kwargs) -> float:
        """Median seconds per launch: device events when the queue can profile, else wall clock."""
        loaded, grid, runtime = self.fn.resolve(grid, target, args, kwargs)
        prepared = loaded.prepare(grid, runtime)
        seconds = _event_times(loaded, prepared, self.warmup, self.rep)
        if seconds is None:
            seconds = _wall_times(prepared, self.warmup, self.rep)
        return statistics.median(seconds)

    def _say(self, text: str) -> None:
        quiet = os.environ.get("XETILE_AUTOTUNE_QUIET", "") not in ("", "0")
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
    from .runtime.launcher import synchronize

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


def _close(out: np.ndarray, ref: np.ndarray, rtol: float) -> bool:
    if out.shape != ref.shape:
        return False
    if out.dtype.kind in "iub" and ref.dtype.kind in "iub":
        return bool(np.array_equal(out, ref))
    a, b = out.astype(np.float64), ref.astype(np.float64)
    scale = float(np.nanmax(np.abs(b))) if b.size and np.isfinite(b).any() else 1.0
    return bool(np.allclose(a, b, rtol=rtol, atol=rtol * max(scale, 1e-30), equal_nan=True))


def _read_memo(path: Path, configs: list) -> Config | None:
    try:
        data = json.loads(path.read_text())
        chosen = Config(dict(data["config"]["kwargs"]), int(data["config"]["num_subgroups"]))
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
