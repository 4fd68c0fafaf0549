"""Every ``XETILE_*`` environment variable xetile_dsl reads, in one typed table.

Each knob has a name, a type, a default and a one-line doc; :meth:`Knob.get` reads the
environment each time it is called (nothing is cached at import), so a test's
``monkeypatch.setenv`` takes effect at once; what it parsed is remembered per raw text, so
a launch that reads a knob set to the same text as before pays a dictionary lookup, not a
parse.  The package reads the environment only
through this module; ``tests/frontend/test_knobs.py`` checks that every ``XETILE_*`` name
in the sources is declared here and documented in README.md.

Booleans are ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off`` (any case);
an empty value means the default.  A value that does not parse is a
:class:`~xetile_dsl.errors.UsageError` naming the knob and what it accepts.
"""
from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import environ, errors

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_UNPARSED = object()


@dataclass(frozen=True)
class Knob:
    """One environment variable: ``kind`` is str, bool, float or Path; ``choices`` (str
    knobs) lists the legal values when they are few."""

    name: str
    kind: type
    default: object
    doc: str
    choices: tuple = ()
    #: str knobs without fixed choices: the value is read lower-case
    lower: bool = False
    #: raw text -> parsed value (values are immutable: str, bool, float, Path); a text
    #: that does not parse is not remembered, so it raises at every read
    _parsed: dict = field(default_factory=dict, compare=False, repr=False)

    def raw(self) -> str | None:
        """The variable's text, or None when unset or empty."""
        return environ.get(self.name) or None

    def is_set(self) -> bool:
        return self.raw() is not None

    def get(self):
        """The knob's current value, parsed as ``kind`` (``default`` when unset)."""
        text = environ.get(self.name)
        if not text:
            return self.default
        parsed = self._parsed
        value = parsed.get(text, _UNPARSED)
        if value is _UNPARSED:
            value = _PARSERS[self.kind](self, text.strip())
            if len(parsed) > 64:
                parsed.clear()
            parsed[text] = value
        return value


def _parse_bool(knob: Knob, text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise errors.UsageError(f"{knob.name}={text!r}: use 1 or 0 ({knob.doc})")


def _parse_float(knob: Knob, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise errors.UsageError(f"{knob.name}={text!r}: give a number, e.g. {knob.default} ({knob.doc})") from None


def _parse_str(knob: Knob, text: str) -> str:
    if knob.choices and text.lower() not in knob.choices:
        raise bad_value(knob, text, knob.choices)
    return text.lower() if knob.choices or knob.lower else text


def bad_value(knob: Knob, text: str, choices) -> errors.UsageError:
    """The UsageError for ``knob`` set to ``text``, naming the legal ``choices``."""
    return errors.UsageError(f"{knob.name}={text!r}: use one of {', '.join(choices)} ({knob.doc})")


_PARSERS = {bool: _parse_bool, float: _parse_float, str: _parse_str, Path: lambda knob, text: Path(text)}

DEVICE = Knob("XETILE_DEVICE", str, None, "device selector, e.g. opencl:cpu, level_zero:gpu")
BACKEND = Knob("XETILE_BACKEND", str, None, "runtime API: dpctl (default) or pyopencl")
TARGET = Knob("XETILE_TARGET", str, None,
              "pvc, bmg, lnl, ptl or arc: compile for this GPU target whatever GPU is detected")
#: its legal values are the targets' CPU flavours (targets/catalog.py), checked where the
#: flavour is read (``targets.cpu_device.flavour``)
CPU_FLAVOUR = Knob("XETILE_CPU_FLAVOUR", str, "pvc", "a target with a CPU flavour (targets/catalog.py): "
                   "which GPU kernel the CPU device runs", lower=True)
CACHE_DIR = Knob("XETILE_CACHE_DIR", Path, None, "kernel cache directory (default ~/.cache/xetile_dsl/kernels)")
CACHE_LOCK_TIMEOUT = Knob("XETILE_CACHE_LOCK_TIMEOUT", float, 10.0,
                          "seconds to wait for another process's cache-entry lock")
PROGRAM_CACHE = Knob("XETILE_PROGRAM_CACHE", bool, True,
                     "0: do not store or load built program binaries (rebuild from SPIR-V in every process)")
DPCTL_C_SUBMIT = Knob("XETILE_DPCTL_C_SUBMIT", bool, True,
                      "0: submit replayed dpctl launches through dpctl's Python submit_async, not its C DPCTLQueue_SubmitNDRange")
DEBUG = Knob("XETILE_DEBUG", bool, False, "1: show compiler-internal tracebacks behind kernel errors")
INTERPRET = Knob("XETILE_INTERPRET", str, "0",
                 "1: run launches without an explicit target in the numpy interpreter; subgroups: "
                 "the same, workgroup kernels subgroup by subgroup",
                 choices=("0", "1", "subgroups", *_TRUE[1:], *_FALSE[1:]))
DUMP_IR = Knob("XETILE_DUMP_IR", bool, False,
               "1: every compile prints the IR after each stage to stderr (like mlir-print-ir-after-all)")
VERIFY_IR = Knob("XETILE_VERIFY_IR", bool, False,
                  "1: verify the module after each lowering stage (the tests turn it on; off, a compile "
                  "skips it: 7-10% of its time)")
PROGRESS = Knob("XETILE_PROGRESS", bool, True,
                 "0: no progress line on stderr when a compile or a program build runs over 2 s")
AUTOTUNE_QUIET = Knob("XETILE_AUTOTUNE_QUIET", bool, False, "1: no autotuning progress lines on stderr")
OCLOC = Knob("XETILE_OCLOC", Path, None, "path of the ocloc to use (overrides the search)")
TOOLS_DIR = Knob("XETILE_TOOLS_DIR", Path, None,
                 "tools folder of `python -m xetile_dsl install-tools` (default <repo>/tools-cache/igc, "
                 "outside a checkout ~/.cache/xetile_dsl/tools)")
IGA64 = Knob("XETILE_IGA64", Path, None, "path of iga64 (default: iga64 on PATH)")
NV_TMA = Knob("XETILE_NV_TMA", bool, True,
              "0: the sm90 wgmma GEMM fills its ring with cp.async, never TMA "
              "(docs/decisions/051-tma-gemm.md)")
NV_TMA_ATTENTION = Knob("XETILE_NV_TMA_ATTENTION", bool, False,
                        "1: the sm90 attention key loops fill K and V by TMA "
                        "(docs/decisions/056-nvidia-attention-tma.md); off until that path passes the GPU checks")
SPIRV_TOOLS_BIN = Knob("XETILE_SPIRV_TOOLS_BIN", Path, None, "folder holding spirv-val and spirv-dis")
ROTATE_LOADS = Knob("XETILE_ROTATE_LOADS", str, "auto",
                    "K-loop load scheduling (xegpu-rotate-loads): auto (two K steps per trip, the second "
                    "step's loads before the first step's DPAS, where the register budget allows), off, force "
                    "(ignore the budget), carry (each tile loaded one trip ahead and carried; measurements)",
                    choices=("auto", "off", "force", "carry"))
REQUIRE_OCLOC = Knob("XETILE_REQUIRE_OCLOC", bool, False, "1: ISA tests fail instead of skipping without ocloc")
REQUIRE_RUNTIMES = Knob("XETILE_REQUIRE_RUNTIMES", bool, False,
                        "1: tests fail instead of skipping without dpctl, dpnp, pyopencl, spirv-val or the "
                        "OpenCL CPU device")
PTXAS = Knob("XETILE_PTXAS", Path, None,
             "the ptxas that assembles NVIDIA modules into cached cubins (default: PATH, the nvidia-cuda-nvcc "
             "wheel, Triton's); without one, modules load their PTX")
LIBDEVICE = Knob("XETILE_LIBDEVICE", Path, None,
                 "CUDA's math library bitcode (libdevice.10.bc) the NVIDIA backend links for the math functions "
                 "(default: the nvidia-cuda-nvcc wheel, $CUDA_HOME, /usr/local/cuda, Triton's)")
REQUIRE_PTXAS = Knob("XETILE_REQUIRE_PTXAS", bool, False,
                     "1: NVIDIA assembly tests fail instead of skipping without ptxas (PATH or the "
                     "nvidia-cuda-nvcc wheel of the [test] extra)")
REQUIRE_TORCH = Knob("XETILE_REQUIRE_TORCH", bool, False,
                     "1: torch tests fail instead of skipping without PyTorch >= 2.4 (tests needing an XPU "
                     "device still skip)")

#: name -> knob, in the order README.md lists them
KNOBS: dict[str, Knob] = {k.name: k for k in (
    DEVICE, BACKEND, TARGET, CPU_FLAVOUR, CACHE_DIR, CACHE_LOCK_TIMEOUT, PROGRAM_CACHE, DPCTL_C_SUBMIT, DEBUG, INTERPRET, DUMP_IR,
    VERIFY_IR, ROTATE_LOADS, PROGRESS, AUTOTUNE_QUIET, OCLOC, TOOLS_DIR, IGA64, SPIRV_TOOLS_BIN, REQUIRE_OCLOC, REQUIRE_RUNTIMES,
    PTXAS, LIBDEVICE, REQUIRE_PTXAS, REQUIRE_TORCH, NV_TMA, NV_TMA_ATTENTION)}


def installed_file(package: str, *parts: str, executable: bool = False) -> str | None:
    """``<package's folder>/<parts>`` where that file exists (and, with ``executable``, may
    be run), without importing the package: the default of a path knob found in a wheel
    (ptxas, libdevice); None where the package or the file is absent."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or ()) if spec else ():
        path = os.path.join(root, *parts)
        if os.access(path, os.X_OK) if executable else os.path.isfile(path):
            return path
    return None


def interpreting() -> bool:
    """``interpret_mode() != "0"``, read by every launch (unset: one dictionary read)."""
    return not environ.unset(INTERPRET.name) and INTERPRET.get() not in _FALSE


def interpret_mode() -> str:
    """``XETILE_INTERPRET`` normalised: "0" (off), "1" (interpret) or "subgroups"."""
    value = INTERPRET.get()
    if value in _TRUE:
        return "1"
    return "0" if value in _FALSE else value


def codegen_tag() -> str:
    """The knobs that change the code a kernel compiles to, as text for the cache key
    (empty at their defaults, so default keys do not change)."""
    mode = ROTATE_LOADS.get()
    return "" if mode == ROTATE_LOADS.default else f"rotate={mode}"


def debug_tracebacks() -> bool:
    """True when XETILE_DEBUG asks for compiler-internal tracebacks."""
    return DEBUG.get()
