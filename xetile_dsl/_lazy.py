"""Modules loaded at first use, so that ``import xetile_dsl`` stays cheap.

The compiler (xDSL dialects, lowering, codegen, llvmlite) takes most of a second to
import and a program that only launches kernels from the disk cache never needs it.
Package ``__init__`` files name their lazy members with a PEP 562 ``__getattr__``
(:func:`package_getattr`); a module whose functions call into a heavy module holds a
:class:`LazyModule` at module level instead of importing inside those functions.
"""
from __future__ import annotations

import importlib


class LazyModule:
    """Stands for module ``name`` and imports it at the first attribute read (the import
    system's lock makes that safe from several threads)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name = name
        self._module = None

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self) -> str:
        return f"<lazy module {self._name!r}{'' if self._module is None else ' (loaded)'}>"


def package_getattr(package: str, members: dict[str, str]):
    """A PEP 562 ``__getattr__`` for ``package``: ``members`` maps a public name to the
    submodule (relative, e.g. ".compiler") that defines it, imported on first use."""

    def __getattr__(name: str):
        where = members.get(name)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where, package), name)
        globals_of_package = importlib.import_module(package).__dict__
        globals_of_package[name] = value          # later reads do not come here again
        return value

    return __getattr__
