"""The package's layers point one way, read from its import graph (tests/structure/import_graph.py).

Bottom to top (docs/architecture.md, "Layers"): base utilities; the descriptions of hardware and
of the kernel language; the runtime (launching built programs knows no IR); the dialects;
the frontend; the lowering passes; the external-tool wrappers; codegen; the compiler
driver; the interpreter; the user API (``jit``, the autotuner, the package facade); the
library kernels and ops; the command line.  A module may import its own layer and the
layers below it, never one above, and the graph has no cycle at all (not even inside a
layer).  Lazy loading for import time goes through ``LazyModule`` or a ``package_getattr``
map (each still an edge here); an ``import`` inside a function is only for an optional
dependency.  What the
interpreter takes from the rooms beside its data flow (lowering, runtime, compiler) is
listed with the reason in INTERPRETER_FROM_BESIDE.

Downward is allowed, but an import from one compiler stage into an earlier one that is
not its input is a coupling to explain: every one codegen keeps is in
:data:`CODEGEN_READS` with its reason (a later stage reading what an earlier one left
on the IR, or the contract codegen shares with the launcher), and a new one fails.
"""
from __future__ import annotations

import pytest

import import_graph as graph

PACKAGE = graph.PACKAGE

#: bottom to top; a module belongs to the layer of its longest listed prefix
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("environ", "errors", "knobs", "_lazy", "launch_options", "op_registry", "progress", "stage_texts")),
    ("descriptions", ("dtypes", "targets", "language")),
    ("runtime", ("runtime",)),
    ("dialects", ("dialects",)),
    ("frontend", ("frontend",)),
    ("lowering", ("lowering",)),
    ("tools", ("tools",)),
    ("codegen", ("codegen",)),
    ("compiler", ("stage_log", "compiler", "nv_compiler")),
    ("interpreter", ("interpreter",)),
    ("api", ("", "jit", "autotuner", "nv_launch")),
    ("library", ("kernels", "ops")),
    ("command line", ("__main__", "cli")),
]

#: what the interpreter takes from the rooms beside the data flow (frontend -> IR ->
#: interpreter): the lowering, the runtime, the tools, codegen and the compiler driver.
#: Every other import of those rooms by the interpreter fails test_interpreter_reaches_down.
INTERPRETER_FROM_BESIDE = {
    # the compiler's tile_mma shape rule, so that interpreting refuses what compiling refuses
    "lowering.analysis.mma_shapes": "launch.check_tile_mma_shapes",
    # and the compiler's rule for the lanes of a scattered tile (C a multiple of the subgroup)
    "lowering.rewrites.scattered": "launch.check_tile_mma_shapes",
    # per-subgroup execution runs each subgroup on the program the compiler's own
    # xetile-wg-to-sg pass distributes the kernel into (so the interpreter checks the pass)
    "lowering.passes.wg_to_sg": "launch.subgroup_program",
    # a kernel without wg_map launched with num_warps runs the wg_maps the compiler's own
    # xetile-choose-wg-map pass chooses (or its fallback, with its reason), as compiled
    "lowering.passes.choose_wg_map": "launch._chosen",
    # one argument check for every flavour: the launcher's handlers (fed the ABI the
    # interpreter builds) and grid normalisation refuse bad arguments as a compiled launch does
    "runtime.arguments": "launch.launch_jit",
    "runtime.grids": "launch.launch_jit",
    "runtime.abi": "launch.build_module",
    # device arrays (dpnp, torch XPU, pyopencl) are copied to numpy and back as a launch sees them
    "runtime.arrays": "launch.launch_jit",
    # an array table's device table (its entries listed at the interpreter's own addresses)
    "runtime.array_tables": "launch._list_entries",
}

#: the modules of earlier stages codegen imports (beyond the IR itself), and why each arrow
#: is there; a new one fails test_codegen_reads_only_what_is_listed.  The marks lowering
#: leaves on ops for codegen are named in dialects/attributes.py, below both.
CODEGEN_READS = {
    "lowering.analysis.families": "the descriptor families (which memref a loop-carried descriptor "
                                  "reads), an analysis of the IR codegen runs on its own input",
    "runtime.abi": "the kernel ABI (parameters, MAX_TILED_EXTENT) is the contract between codegen, which "
                   "writes it, and the launcher, which reads it; it sits in runtime because the launcher "
                   "must import it without the compiler",
}

#: third-party modules a function may import (present only on some machines)
OPTIONAL_DEPENDENCIES = {"dpctl", "dpnp", "pyopencl", "torch", "ml_dtypes", "cmeel", "matplotlib", "cuda"}


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
        raise AssertionError(f"{module} is in no layer: add its folder to LAYERS (and to docs/architecture.md)")
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


def test_codegen_reads_only_what_is_listed(imports):
    stages = ("lowering", "runtime", "frontend")
    reads = {i.target[len(PACKAGE) + 1:] for i in imports if i.source.startswith(f"{PACKAGE}.codegen.")
             and i.target[len(PACKAGE) + 1:].split(".")[0] in stages}
    unexplained = sorted(reads - set(CODEGEN_READS))
    assert not unexplained, f"codegen imports from earlier stages not in CODEGEN_READS (say why): {unexplained}"


def test_no_import_cycles(imports):
    cycles = graph.cycles([(i.source, i.target) for i in imports])
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_interpreter_reaches_down(imports):
    """The interpreter executes the frontend's IR; what it uses of the lowering, runtime,
    tools, codegen or compiler (its location helper ``at_user_line`` lives in
    frontend/source.py) is listed in INTERPRETER_FROM_BESIDE with the reason."""
    beside = {"lowering", "runtime", "tools", "codegen", "compiler", "stage_log"}
    used = {i.target[len(PACKAGE) + 1:] for i in imports
            if i.source.startswith(f"{PACKAGE}.interpreter") and i.target.startswith(f"{PACKAGE}.")
            and i.target[len(PACKAGE) + 1:].split(".")[0] in beside}
    assert used == set(INTERPRETER_FROM_BESIDE), (
        f"the interpreter's imports from beside the data flow changed: new {sorted(used - set(INTERPRETER_FROM_BESIDE))}, "
        f"gone {sorted(set(INTERPRETER_FROM_BESIDE) - used)} (justify or drop them in INTERPRETER_FROM_BESIDE)")


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
