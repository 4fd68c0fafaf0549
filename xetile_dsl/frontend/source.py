"""A kernel's Python source, parsed so that AST line numbers match the user's file."""
from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from dataclasses import dataclass

from ..errors import CompilationError, UsageError


@dataclass
class KernelSource:
    """The parsed ``def`` of a kernel plus what error messages need to point into it."""

    name: str
    filename: str
    first_line: int
    lines: list[str]
    tree: ast.FunctionDef
    text: str

    @staticmethod
    def of(fn) -> "KernelSource":
        check_kernel_function(fn)
        try:
            lines, first_line = inspect.getsourcelines(fn)
        except (OSError, TypeError) as exc:
            raise CompilationError(f"cannot read the source of {fn.__name__!r}: {exc}") from None
        text = textwrap.dedent("".join(lines))
        module = ast.parse(text)
        ast.increment_lineno(module, first_line - 1)
        indent = len(lines[0]) - len(lines[0].lstrip())
        for node in ast.walk(module):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
        fdef = next(n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        filename = inspect.getsourcefile(fn) or "<unknown>"
        file_lines = _file_lines(filename, lines, first_line)
        return KernelSource(fn.__name__, filename, first_line, file_lines, fdef, text)

    def error(self, node: ast.AST | None, message: str) -> CompilationError:
        """A CompilationError located at ``node``."""
        line = getattr(node, "lineno", self.first_line)
        col = getattr(node, "col_offset", 0)
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return CompilationError(message, self.filename, line, col, src)


def check_kernel_function(fn) -> None:
    """Reject, at the ``def`` line, functions that cannot be kernels: a lambda (a kernel is
    parsed from its ``def`` statement) and ``*args``/``**kwargs`` parameters (each kernel
    parameter is one array, scalar or constexpr, typed at launch by its name)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise UsageError(f"@jit needs a Python function defined with `def`, got {type(fn).__name__}")
    if code.co_name == "<lambda>":
        raise _def_line_error(code, "a kernel must be a function defined with `def`; lambda kernels are not "
                                    "supported")
    for param in inspect.signature(fn).parameters.values():
        star = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}.get(param.kind)
        if star:
            raise _def_line_error(code, f"kernel parameter '{star}{param.name}' is not supported: name each array, "
                                        "scalar and constexpr parameter (positional, keyword-only and "
                                        "positional-only parameters are fine)")


def _def_line_error(code, message: str) -> CompilationError:
    """A CompilationError at the ``def`` (or ``lambda``) of ``code``, which comes after
    its decorator lines."""
    filename, first = code.co_filename, code.co_firstlineno
    keyword = "lambda" if code.co_name == "<lambda>" else "def "
    line = next((n for n in range(first, first + 64) if keyword in linecache.getline(filename, n)), first)
    text = linecache.getline(filename, line).rstrip("\n")
    col = max(text.find(keyword), 0)
    return CompilationError(message, filename, line, col, text or None)


def _file_lines(filename: str, fn_lines: list[str], first_line: int) -> list[str]:
    try:
        with open(filename, encoding="utf-8") as fh:
            return fh.read().splitlines()
    except OSError:
        return [""] * (first_line - 1) + [ln.rstrip("\n") for ln in fn_lines]


def dependencies(fn, _seen: set | None = None) -> str:
    """What else a kernel's binary depends on, as text for the cache key: the values of
    the constexpr (and plain number) globals it names and the source of the ``@jit``
    functions it calls, recursively."""
    from ..language.core import constexpr

    seen = _seen if _seen is not None else set()
    if fn in seen:
        return ""
    seen.add(fn)
    parts = []
    names = set(fn.__code__.co_names)
    for const in fn.__code__.co_consts:  # nested code objects (comprehensions)
        names.update(getattr(const, "co_names", ()))
    for name in sorted(names):
        value = fn.__globals__.get(name)
        if isinstance(value, constexpr):
            parts.append(f"{name}={value.value!r}")
        elif isinstance(value, (bool, int, float, str)):
            parts.append(f"{name}={value!r}")
        elif type(value).__name__ == "JITFunction" and hasattr(value, "fn"):
            parts.append(f"{name}:{KernelSource.of(value.fn).text}{dependencies(value.fn, seen)}")
    return ";".join(parts)
