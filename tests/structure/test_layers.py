"""The package's layers point one way, read from its import graph (tests/structure/import_graph.py).

Bottom to top (docs/design.md, "Layers"): base utilities; the descriptions of hardware and
of the kernel language; the runtime (launching built programs knows no IR); the dialects;
the frontend; the lowering passes; the external-tool wrappers; codegen; the compiler
driver; the interpreter; the user API (``jit``, the autotuner, the package facade); the
library kernels and ops; the command line.  A module may import its own layer and the
layers below it, never one above, and the graph has no cycle at all (not even inside a
layer).  Lazy loading for import time goes through ``LazyModule`` or a ``package_getattr``
map (each still an edge here); an ``import`` inside a function is only for an optional
dependency.
"""
from __future__ import annotations

import pytest

import import_graph as graph

PACKAGE = graph.PACKAGE

#: bottom to top; a module belongs to the layer of its longest listed prefix
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("environ", "errors", "knobs", "_lazy", "launch_options", "op_registry", "stage_texts")),
    ("descriptions", ("dtypes", "targets", "language")),
    ("runtime", ("runtime",)),
    ("dialects", ("dialects",)),
    ("frontend", ("frontend",)),
    ("lowering", ("lowering",)),
    ("tools", ("tools",)),
    ("codegen", ("codegen",)),
    ("compiler", ("stage_log", "compiler")),
    ("interpreter", ("interpreter",)),
    ("api", ("", "jit", "autotuner")),
    ("library", ("kernels", "ops")),
    ("command line", ("__main__", "cli")),
]

#: third-party modules a function may import (present only on some machines)
OPTIONAL_DEPENDENCIES = {"dpctl", "dpnp", "pyopencl", "torch", "ml_dtypes", "cmeel", "matplotlib"}


def layer_of(module: str) -> int:
    """Index in LAYERS of ``module`` (dotted name inside the package)."""
    relative = module[len(PACKAGE) + 1:] if module != PACKAGE else ""
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = relative == prefix or (prefix and relative.startswith(prefix + "."))
            if matches and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best is None:
        raise AssertionError(f"{module} is in no layer: add its folder to LAYERS (and to docs/design.md)")
    return best


@pytest.fixture(scope="module")
def imports():
    return graph.imports()


def test_every_module_has_a_layer():
    for module in graph.package_modules():
        layer_of(module)


def test_imports_point_down(imports):
    upward = [f"{i.source}:{i.line} imports {i.target} ({LAYERS[layer_of(i.source)][0]} -> "
              f"{LAYERS[layer_of(i.target)][0]})"
              for i in imports if layer_of(i.target) > layer_of(i.source)]
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_no_import_cycles(imports):
    cycles = graph.cycles([(i.source, i.target) for i in imports])
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_function_level_imports_only_for_optional_dependencies():
    hidden = [f"{module}:{line} imports {name}" for module, line, name in graph.function_level_imports()
              if name.split(".")[0] not in OPTIONAL_DEPENDENCIES]
    assert not hidden, ("imports inside functions (move them to module level, or use a LazyModule for "
                        "import time):\n" + "\n".join(hidden))


def test_no_private_names_across_folders():
    """A folder's private names (``_ArrayHandler``) stay inside it; what another folder
    needs gets a public name (``runtime.arguments.argument_handlers``)."""
    private = [f"{module}:{line} imports {name}" for module, line, name in graph.private_name_imports()]
    assert not private, "private names imported from another folder:\n" + "\n".join(private)


def test_the_reader_sees_each_kind_of_edge(tmp_path, monkeypatch):
    """The graph reader itself: a module-level, a function-level and a lazy import (a
    ``LazyModule`` stand-in, an entry of a ``package_getattr`` map) are each an edge, and
    an upward one is reported (so the tests above can fail)."""
    package = tmp_path / PACKAGE
    (package / "lowering").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("")
    (package / "compiler.py").write_text("")
    (package / "jit.py").write_text("")
    (package / "lowering" / "__init__.py").write_text(
        "__getattr__ = package_getattr(__name__, {'run': '.passes', 'compile': '..compiler'})\n")
    (package / "lowering" / "passes.py").write_text(
        "from ..errors import X, _hidden\n"
        "def f():\n    from .. import compiler\n"
        "jit = LazyModule('xetile_dsl.jit')\n")
    monkeypatch.setattr(graph, "ROOT", package)
    edges = {(i.source, i.target, i.in_function) for i in graph.imports()}
    src = f"{PACKAGE}.lowering.passes"
    assert (src, f"{PACKAGE}.errors", False) in edges
    assert (src, f"{PACKAGE}.compiler", True) in edges
    assert (src, f"{PACKAGE}.jit", False) in edges
    assert {(f"{PACKAGE}.lowering", f"{PACKAGE}.lowering.passes", False),
            (f"{PACKAGE}.lowering", f"{PACKAGE}.compiler", False)} <= edges
    assert graph.package_getattr_maps() == {f"{PACKAGE}.lowering": {"run": src, "compile": f"{PACKAGE}.compiler"}}
    assert graph.lazy_modules() == [(src, 4, "jit", f"{PACKAGE}.jit")]
    assert [i for i in graph.imports() if layer_of(i.target) > layer_of(i.source)]
    assert graph.function_level_imports() == [(src, 3, "..")]
    assert graph.private_name_imports() == [(src, 1, f"{PACKAGE}.errors._hidden")]
    assert graph.cycles([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]) == [["a", "b", "c"]]
