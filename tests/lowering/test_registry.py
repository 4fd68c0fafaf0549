"""The pass registry lists every pass of xetile_dsl/lowering explicitly."""
from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

from xetile_dsl.errors import UsageError
from xetile_dsl.lowering import registry
from xetile_dsl.lowering.pipeline import pass_names
from xetile_dsl.cli.opt import run_opt

LOWERING = Path(registry.__file__).parent


def _pass_classes_in_sources() -> dict[str, str]:
    """class name -> module, for every class in lowering/ deriving from ModulePass (read
    from the source, not imported: a module that fails to import is still found)."""
    found = {}
    for path in sorted(LOWERING.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    getattr(b, "id", getattr(b, "attr", None)) == "ModulePass" for b in node.bases):
                found[node.name] = path.parent.name if path.stem == "__init__" else path.stem
    return found


def test_every_pass_defined_in_lowering_is_registered():
    defined = _pass_classes_in_sources()
    assert len(defined) >= 7
    registered = {cls.__name__: cls.__module__.rsplit(".", 1)[1] for cls in registry.PASSES.values()}
    assert registered == defined
    assert all(name == cls.name for name, cls in registry.PASSES.items())
    assert list(registry.PASSES) == pass_names("pvc") == pass_names("arc")   # listed in pipeline order


def test_passes_live_apart_from_their_helpers():
    """lowering/passes/ holds exactly the passes (one ModulePass each): a module per pass, or
    a package for a pass with parts of its own (the pass in its __init__.py); the analyses
    and the rewrites the passes share live elsewhere in lowering/."""
    pass_files = {cls.__module__.rsplit(".", 1)[1] for cls in registry.PASSES.values()}
    passes = LOWERING / "passes"
    modules = {p.stem for p in passes.glob("*.py") if p.stem != "__init__"}
    packages = {p.parent.name for p in passes.glob("*/__init__.py")}
    assert not modules & packages
    assert modules | packages == pass_files
    assert all(cls.__module__.startswith("xetile_dsl.lowering.passes.") for cls in registry.PASSES.values())


def test_unknown_pass_is_a_usage_error_listing_the_passes():
    assert registry.lookup("xetile-blocking").__name__ == "XeTileBlocking"
    with pytest.raises(UsageError, match="unknown pass 'xetile-blockng'; the passes are xetile-prefetch-stages, "
                                         "xetile-one-working-subgroup, xetile-wg-to-sg, "
                                         "xetile-sg-transpose, xetile-blocking, convert-xetile-to-xegpu, "
                                         "xegpu-split-accumulators, xegpu-sink-to-uses, xegpu-simt, "
                                         "xegpu-rotate-loads$"):
        registry.lookup("xetile-blockng")


def test_opt_names_the_known_passes():
    err = io.StringIO()
    assert run_opt("builtin.module {}", "m.mlir", passes="no-such-pass", out=io.StringIO(), err=err) == 1
    assert "known passes:" in err.getvalue()
    assert all(name in err.getvalue() for name in registry.PASSES)
