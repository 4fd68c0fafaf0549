"""Modules loaded at first use, so that ``import xetile_dsl`` stays cheap.

The compiler (xDSL dialects, lowering, codegen, llvmlite) takes most of a second to
import and a program that only launches kernels from the disk cache never needs it.
Package ``__init__`` files name their lazy members with a PEP 562 ``__getattr__``
(:func:`package_getattr`); a module whose functions call into a heavy module holds a
:class:`LazyModule` at module level instead of importing inside those functions.  Either
is only for import time: a module that ``import xetile_dsl`` or a warm launch loads anyway
is imported plainly, and each stand-in says on its line what importing it would cost
(tests/structure/test_lazy_maps.py resolves every lazy name and checks that).
"""
from __future__ import annotations

import importlib


class LazyModule:
    """Stands for module ``name`` and imports it at the first attribute read (the import
    system's lock makes that safe from several threads).

    Given ``namespace`` (the ``globals()`` of the module holding it), the first read also
    rebinds every global there that holds this stand-in to the module itself, so that
    later reads on a launch path are plain module attribute reads."""

    __slots__ = ("_name", "_module", "_namespace")

    def __init__(self, name: str, namespace: dict | None = None):
        self._name = name
        self._module = None
        self._namespace = namespace

    def __getattr__(self, attr: str):
        module = self._module
        if module is None:
            module = self._module = importlib.import_module(self._name)
            namespace = self._namespace
            if namespace is not None:
                for key in [k for k, v in namespace.items() if v is self]:
                    namespace[key] = module
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
