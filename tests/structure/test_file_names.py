"""One name, one thing: no two modules of the package share a file
name unless they are listed here with what tells them apart.  A new pair fails: name the
module for what it holds (the interpreter's engine is ``interpreter/engine.py``, not a
second ``core.py`` next to ``language/core.py``)."""
from __future__ import annotations

from collections import defaultdict

import import_graph as graph

#: file name -> the folders holding one each, and why the pair is not one thing twice
KNOWN = {
    "matmul.py": ({"kernels", "ops"}, "a library subgroup GEMM kernel vs the ops.matmul entry point (its own kernel)"),
}


def shared_names() -> dict[str, set[str]]:
    folders: dict[str, set[str]] = defaultdict(set)
    for module, path in graph.package_modules().items():
        if path.name != "__init__.py":
            folders[path.name].add(module.split(".")[-2])
    return {name: where for name, where in folders.items() if len(where) > 1}


def test_no_new_file_name_twice():
    unexplained = {name: sorted(where) for name, where in shared_names().items()
                   if name not in KNOWN or where != KNOWN[name][0]}
    assert not unexplained, f"modules with one file name in several folders (rename one): {unexplained}"
