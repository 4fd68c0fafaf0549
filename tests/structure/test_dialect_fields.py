"""Op definitions say each field once: fields several ops share (cache
hints, a scattered descriptor and its mask, constant offsets, wg_maps, a padded load's
value, ...) live in an undecorated base op class, whose fields xDSL collects after the
op's own, or come from ``like_fields``; no two op classes repeat a run of field lines.
"""
from __future__ import annotations

import ast
from collections import defaultdict

import import_graph as graph

#: this many identical field declarations in a row, in two classes, is a copy
RUN = 3


def _is_field(stmt: ast.stmt) -> bool:
    """``x = operand_def(..)``, ``a, b = like_fields(..)``, ``traits = traits_def(..)``."""
    value = getattr(stmt, "value", None)
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or not isinstance(value, ast.Call):
        return False
    callee = value.func.id if isinstance(value.func, ast.Name) else getattr(value.func, "attr", "")
    return callee.endswith("_def") or callee == "like_fields"


def field_runs(tree: ast.Module) -> dict[tuple[str, ...], list[str]]:
    """Each run of RUN consecutive field declarations (as source) -> the classes holding it."""
    runs: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        fields = [ast.unparse(s) for s in cls.body if _is_field(s)]
        for start in range(len(fields) - RUN + 1):
            runs[tuple(fields[start:start + RUN])].append(cls.name)
    return runs


def dialect_field_copies() -> list[str]:
    runs: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for module, path in graph.package_modules().items():
        if module.startswith(f"{graph.PACKAGE}.dialects."):
            for run, classes in field_runs(graph.parse(path)).items():
                runs[run] += [f"{module.rsplit('.', 1)[1]}.{c}" for c in classes]
    return [f"{', '.join(classes)}: {'; '.join(run)}" for run, classes in runs.items() if len(classes) > 1]


def test_no_two_ops_repeat_their_field_declarations():
    copies = dialect_field_copies()
    assert not copies, ("op classes that repeat the same field declarations (move them to a base op "
                        "class or like_fields):\n" + "\n".join(copies))


def test_the_check_sees_a_copy():
    """Two ops declaring the three cache hints each are reported."""
    hints = "    l1_hint = opt_prop_def(StringAttr)\n    l2_hint = opt_prop_def(StringAttr)\n" \
            "    l3_hint = opt_prop_def(StringAttr)\n"
    tree = ast.parse(f"class A:\n    name = 'a'\n{hints}\nclass B:\n{hints}")
    assert [classes for classes in field_runs(tree).values() if len(classes) > 1] == [["A", "B"]]
