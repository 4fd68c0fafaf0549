"""Which GPU flavour the CPU device runs, read by every launch on it without the target
tables: ``XETILE_CPU_FLAVOUR`` unset is the default flavour; a value set is checked
against the targets' CPU flavours (:func:`.catalog.cpu_flavours`, loading the tables)."""
from __future__ import annotations

from .. import knobs
from .._lazy import LazyModule

catalog = LazyModule("xetile_dsl.targets.catalog", globals())  # the target tables (~11 ms), read only when XETILE_CPU_FLAVOUR is set

#: the CPU device's flavour when XETILE_CPU_FLAVOUR is unset (``knobs.CPU_FLAVOUR``)
DEFAULT_FLAVOUR = knobs.CPU_FLAVOUR.default


def flavour() -> str:
    """The GPU flavour the CPU device runs: XETILE_CPU_FLAVOUR, checked against the
    targets' CPU flavours (which loads the tables: only when the knob is set)."""
    name = knobs.CPU_FLAVOUR.get()
    if name != DEFAULT_FLAVOUR and name not in catalog.cpu_flavours():
        raise knobs.bad_value(knobs.CPU_FLAVOUR, name, catalog.cpu_flavours())
    return name


def runs_on_cpu_device(target: str) -> bool:
    """Whether compile target ``target`` is the CPU device running a GPU flavour (its
    builtins emulated): ``cpu`` and ``cpu-<flavour>``, the spellings the catalog's aliases
    give those targets (no table is read; an unknown name fails where it is compiled)."""
    return target == "cpu" or target.startswith("cpu-")
