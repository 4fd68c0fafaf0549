"""The pass registry: pass name -> ModulePass class, as ``python -m xetile_dsl opt -p``
looks passes up.

Register a pass with ``@register`` on its class (or add it to :data:`PASSES`).  Passes in
the modules of this package that are not registered explicitly are found by
:func:`available_passes` through their ``name``, so a new pass file works from the
command line without touching this file.
"""
from __future__ import annotations

import importlib
import pkgutil

from xdsl.passes import ModulePass

#: name -> pass class
PASSES: dict[str, type[ModulePass]] = {}


def register(cls: type[ModulePass]) -> type[ModulePass]:
    """Class decorator: make ``cls`` available under ``cls.name``."""
    PASSES[cls.name] = cls
    return cls


def _discover() -> dict[str, type[ModulePass]]:
    found: dict[str, type[ModulePass]] = {}
    package = importlib.import_module(__package__)
    for info in pkgutil.iter_modules(package.__path__):
        if info.name == "registry":
            continue
        try:
            module = importlib.import_module(f"{__package__}.{info.name}")
        except Exception:  # noqa: BLE001 -- a half-written pass must not break the others
            continue
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, ModulePass) and value is not ModulePass \
                    and value.__module__ == module.__name__ and isinstance(getattr(value, "name", None), str):
                found[value.name] = value
    return found


def available_passes() -> dict[str, type[ModulePass]]:
    """Every known pass: discovered ones, overridden by explicit registrations."""
    return {**_discover(), **PASSES}
