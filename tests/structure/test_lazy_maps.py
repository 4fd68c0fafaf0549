"""Every lazy name resolves: each entry of each ``package_getattr`` map and each
``LazyModule`` stand-in, with every attribute its module reads through it
(xetile_dsl/_lazy.py).  The lazy names are found by reading the source
(tests/structure/import_graph.py), so a new map or stand-in is covered without being
listed here; a lazy import that is not needed for import time should be a plain import,
and each one kept says why on its line (or the line above)."""
from __future__ import annotations

import ast
import importlib

import pytest

import import_graph as graph

MAPS = graph.package_getattr_maps()
LAZY = graph.lazy_modules()


def test_the_source_has_lazy_names_to_check():
    assert MAPS and LAZY


@pytest.mark.parametrize("package", sorted(MAPS))
def test_every_package_getattr_entry_resolves(package):
    module = importlib.import_module(package)
    for name, where in MAPS[package].items():
        value = getattr(module, name)
        assert value is getattr(importlib.import_module(where), name), f"{package}.{name} is not {where}.{name}"
        assert name in getattr(module, "__all__", [name]), f"{package}.{name} is lazy but not in __all__"


def _attributes_read(module: str, bound: str) -> set[str]:
    """The attributes ``module`` reads through its global ``bound`` (``bound.attr``)."""
    tree = graph.parse(graph.package_modules()[module])
    return {node.attr for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == bound}


@pytest.mark.parametrize("holder, line, bound, target", LAZY, ids=[f"{h}.{b}" for h, _, b, _ in LAZY])
def test_every_lazy_module_resolves_with_each_attribute_read(holder, line, bound, target):
    module = importlib.import_module(holder)
    lazy = importlib.import_module(target)
    held = getattr(module, bound)
    assert held is lazy or repr(held).startswith(f"<lazy module {target!r}"), f"{holder}.{bound} is {held!r}"
    missing = sorted(attr for attr in _attributes_read(holder, bound) if not hasattr(lazy, attr))
    assert not missing, f"{holder}:{line} reads {bound}.{missing}, which {target} does not define"


@pytest.mark.parametrize("holder, line, bound, target", LAZY, ids=[f"{h}.{b}" for h, _, b, _ in LAZY])
def test_every_lazy_module_says_why_it_is_lazy(holder, line, bound, target):
    lines = graph.package_modules()[holder].read_text().splitlines()
    said = "#" in lines[line - 1].split(")", 1)[-1] or lines[line - 2].lstrip().startswith("#")
    assert said, (f"{holder}:{line}: say on the line (or the line above) why {target} is loaded lazily "
                  "(what importing it at module level would cost), or import it plainly")
