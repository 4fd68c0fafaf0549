"""The package's import graph read from its source (no module is imported).

An edge ``a -> b`` is any import of module ``b`` by module ``a``: at module level, inside
a function, through a ``LazyModule("xetile_dsl.b")`` stand-in or an entry ``"name": ".b"``
of a ``package_getattr`` map (xetile_dsl/_lazy.py), since a lazy import is still a
dependency.  Imports of third-party modules are not edges.  :func:`lazy_modules` and
:func:`package_getattr_maps` list the lazy names themselves (tests/structure/test_lazy_maps.py
resolves every one).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PACKAGE = "xetile_dsl"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE


@dataclass(frozen=True)
class Import:
    source: str        #: importing module (dotted)
    target: str        #: imported module (dotted, a module of the package)
    line: int
    in_function: bool  #: written inside a function body


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _origin(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The dotted module a ``from .. import`` statement reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(node: ast.AST, module: str, is_package: bool, modules: dict) -> list[str]:
    """The package modules an import statement names (``from pkg import sub`` names ``pkg.sub``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
        return [n for n in names if n in modules]
    origin = _origin(node, module, is_package)
    found = []
    for alias in node.names:
        sub = f"{origin}.{alias.name}"
        found.append(sub if sub in modules else origin)
    return [t for t in found if t in modules]


def _lazy_targets(node: ast.Call, module: str, modules: dict) -> list[str]:
    """The package modules a ``LazyModule("...")`` stand-in or a ``package_getattr`` map names."""
    members = getattr_map(node, module)
    if members is not None:
        return sorted({t for t in members.values() if t in modules})
    if _callee(node) != "LazyModule" or not node.args or not isinstance(node.args[0], ast.Constant):
        return []
    return [node.args[0].value] if node.args[0].value in modules else []


def _callee(node: ast.Call) -> str:
    callee = node.func
    return callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", "")


def getattr_map(node: ast.Call, module: str) -> dict[str, str] | None:
    """The ``{public name: dotted module}`` map of a ``package_getattr(__name__, {...})`` call
    in ``module`` (relative modules resolved against it, as the call resolves them), or None
    for any other call.  A map must be a dict literal, or a comprehension over a literal
    tuple of names with one module for all, so that it can be read without importing it."""
    if _callee(node) != "package_getattr" or len(node.args) != 2:
        return None
    members = node.args[1]
    if isinstance(members, ast.Dict):
        pairs = [(ast.literal_eval(k), ast.literal_eval(v)) for k, v in zip(members.keys, members.values)]
    elif isinstance(members, ast.DictComp) and len(members.generators) == 1:
        loop = members.generators[0]
        if not (isinstance(members.key, ast.Name) and isinstance(loop.target, ast.Name)
                and members.key.id == loop.target.id and not loop.ifs):
            raise AssertionError(f"{module}:{node.lineno}: a package_getattr map must map each name to a module literally")
        where = ast.literal_eval(members.value)
        pairs = [(name, where) for name in ast.literal_eval(loop.iter)]
    else:
        raise AssertionError(f"{module}:{node.lineno}: a package_getattr map must be written as a literal")
    return {name: _resolve(where, module) for name, where in pairs}


def _resolve(where: str, package: str) -> str:
    """``importlib.import_module(where, package)``'s module name, without importing it."""
    if not where.startswith("."):
        return where
    level = len(where) - len(where.lstrip("."))
    base = package.split(".")
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([where[level:]] if where[level:] else []))


@lru_cache(maxsize=None)
def _tree(path: Path, text: str) -> ast.Module:
    return ast.parse(text, str(path))


def parse(path: Path) -> ast.Module:
    """The module's AST (parsed once per text)."""
    return _tree(path, path.read_text())


def imports() -> list[Import]:
    modules = package_modules()
    found: list[Import] = []
    for module, path in modules.items():
        tree = parse(path)
        is_package = path.name == "__init__.py"
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inner = {id(sub) for f in functions for sub in ast.walk(f) if sub is not f}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _targets(node, module, is_package, modules)
            elif isinstance(node, ast.Call):
                targets = _lazy_targets(node, module, modules)
            else:
                continue
            found += [Import(module, t, node.lineno, id(node) in inner) for t in targets if t != module]
    return found


def lazy_modules() -> list[tuple[str, int, str, str]]:
    """(module, line, bound name, lazy module) of every ``name = LazyModule("...")`` in the
    package (third-party lazy modules too)."""
    found = []
    for module, path in package_modules().items():
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                    _callee(node.value) == "LazyModule" and len(node.targets) == 1:
                found.append((module, node.lineno, node.targets[0].id, ast.literal_eval(node.value.args[0])))
    return found


def package_getattr_maps() -> dict[str, dict[str, str]]:
    """Module -> its ``package_getattr`` map (public name -> dotted module), for every
    module of the package that has one."""
    found = {}
    for module, path in package_modules().items():
        for node in ast.walk(parse(path)):
            members = getattr_map(node, module) if isinstance(node, ast.Call) else None
            if members is not None:
                found[module] = members
    return found


def folder(module: str, modules: dict) -> str:
    """The package folder a module belongs to (a package's ``__init__`` belongs to it)."""
    return module if modules[module].name == "__init__.py" else module.rsplit(".", 1)[0]


def private_name_imports() -> list[tuple[str, int, str]]:
    """(module, line, ``origin.name``) of every ``from origin import _name`` in which
    ``origin`` is a module of another folder of the package: a private name used across
    a package boundary (siblings in one folder may share private helpers)."""
    modules = package_modules()
    found = []
    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(parse(path)):
            if not isinstance(node, ast.ImportFrom):
                continue
            origin = _origin(node, module, is_package)
            if origin not in modules or folder(origin, modules) == folder(module, modules):
                continue
            found += [(module, node.lineno, f"{origin}.{alias.name}") for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")
                      and f"{origin}.{alias.name}" not in modules]
    return found


def function_level_imports() -> list[tuple[str, int, str]]:
    """(module, line, imported name) of every import statement inside a function, of any module."""
    found = []
    for module, path in package_modules().items():
        tree = parse(path)
        for func in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for node in ast.walk(func):
                if isinstance(node, ast.Import):
                    found += [(module, node.lineno, alias.name) for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    found.append((module, node.lineno, "." * node.level + (node.module or "")))
    return sorted(set(found))


def cycles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(components)
