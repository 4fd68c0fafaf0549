"""A kernel's Python source, parsed so that AST line numbers match the user's file."""
from __future__ import annotations

import ast
import inspect
import linecache
import os
import re
import sys
import textwrap
from dataclasses import dataclass
from functools import cached_property

from ..errors import CompilationError, LoweringError, UsageError


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
        """``fn``'s source, parsed once per function and version of its file: a compile
        asks for the kernel's and each inlined helper's, the launch cache key again, and
        reading, tokenizing and parsing them was 30-40% of the frontend.  The
        parse is shared (the frontend only reads the AST); it is made again when the file's
        size or modification time changes, as :func:`inspect.getsourcelines` would then
        read the new text."""
        check_kernel_function(fn)
        key = _parse_key(fn)
        parsed = _PARSED.get(key) if key is not None else None
        if parsed is None:
            parsed = KernelSource._parse(fn)
            if key is not None:
                if len(_PARSED) >= _PARSED_LIMIT:
                    _PARSED.pop(next(iter(_PARSED)))
                _PARSED[key] = parsed
        return parsed

    @staticmethod
    def _parse(fn) -> "KernelSource":
        found = _def_block(fn)
        if found is None:
            try:
                lines, first_line = inspect.getsourcelines(fn)
            except (OSError, TypeError) as exc:
                raise no_source_error(fn, exc) from None
            text = textwrap.dedent("".join(lines))
            module = ast.parse("\n" * (first_line - 1) + text)   # line numbers as in the file
        else:
            lines, first_line, text, module = found
        indent = len(lines[0]) - len(lines[0].lstrip())
        if indent:                        # a nested def: columns as in the file
            for node in ast.walk(module):
                if hasattr(node, "col_offset"):
                    node.col_offset += indent
        fdef = next(n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        filename = inspect.getsourcefile(fn) or "<unknown>"
        file_lines = _file_lines(filename, lines, first_line)
        return KernelSource(fn.__name__, filename, first_line, file_lines, fdef, text)

    def error(self, node: ast.AST | None, message: str, kind: type = CompilationError) -> CompilationError:
        """A CompilationError (or the subclass ``kind``) located at ``node``."""
        line = getattr(node, "lineno", self.first_line)
        col = getattr(node, "col_offset", 0)
        src = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return kind(message, self.filename, line, col, src)

    @cached_property
    def global_reads(self) -> tuple["GlobalRead", ...]:
        """Every read of a global (or builtin) name in the body, with the attribute chain
        read from it, in source order (see :func:`find_global_reads`)."""
        return find_global_reads(self.tree)

    @cached_property
    def global_read_positions(self) -> frozenset:
        """(name, line, column) of each global read: the frontend resolves a name through
        the module's globals only at these places, so the cache key and the compiled code
        see the same globals."""
        return frozenset((r.name, r.node.lineno, r.node.col_offset) for r in self.global_reads)


#: parsed sources by :func:`_parse_key` (oldest dropped first beyond the limit)
_PARSED: dict[tuple, KernelSource] = {}
_PARSED_LIMIT = 512


def at_user_line(src: KernelSource, exc: LoweringError) -> CompilationError:
    """``exc`` as a CompilationError at its op's source line: in the kernel ``src``, or in
    the file of the ``@jit`` helper the op was inlined from (its location names that file)."""
    loc = getattr(exc.op, "location", None)
    line = getattr(getattr(loc, "line", None), "data", 0)
    col = max(getattr(getattr(loc, "column", None), "data", 1) - 1, 0)
    filename = getattr(getattr(loc, "filename", None), "data", None)
    if line and filename and filename != src.filename:
        return CompilationError(exc.message, filename, line, col, linecache.getline(filename, line).rstrip("\n") or None)
    node = type("Loc", (), {"lineno": line or src.first_line, "col_offset": col})()
    return src.error(node, exc.message)


def _parse_key(fn) -> tuple | None:
    """What :meth:`KernelSource.of` reads, as a key: the code object of the function whose
    source ``inspect`` reads (``fn`` unwrapped, as :func:`inspect.getsourcelines` does:
    every ``functools.wraps`` wrapper of a decorator shares one code object), which names
    the file and first line, the function's name, and the file's size and modification
    time; None when the file cannot be read (source held only by linecache, e.g. typed
    into a shell)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return None
    try:
        st = os.stat(code.co_filename)
    except (OSError, ValueError):
        return None
    return code, fn.__name__, st.st_size, st.st_mtime_ns


@dataclass(frozen=True)
class GlobalRead:
    """One place where a function reads a global: ``name`` then ``attrs`` (``cfg.a.b`` is
    ("cfg", ("a", "b"))); ``node`` is the Name node, ``where`` the whole expression."""

    name: str
    attrs: tuple
    node: ast.Name
    where: ast.expr
    #: the value of a ``numpy_impl=`` keyword (``xt.extern``): a host function reference,
    #: never called on the device, keyed by its qualified name
    host_function: bool = False

    @property
    def text(self) -> str:
        return ".".join((self.name, *self.attrs))


def find_global_reads(fdef: ast.FunctionDef) -> tuple[GlobalRead, ...]:
    """The global reads of a function body, found without running it.

    A name is local from the end of the first statement that assigns it (textual order,
    which is the order the frontend binds names in); before that, and everywhere for
    names never assigned or passed as parameters, it is read from the module's globals.
    Annotations and default values are not read by the frontend and are skipped."""
    args = fdef.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    bound = _first_bindings(fdef.body)
    finder = _ReadFinder(params, bound)
    for stmt in fdef.body:
        finder.visit(stmt)
    return tuple(finder.reads)


def _position(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


def _first_bindings(body: list[ast.stmt]) -> dict[str, tuple[int, int]]:
    """name -> the position from which the name is a local (the end of its first binding)."""
    first: dict[str, tuple[int, int]] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                end = (node.value.end_lineno, node.value.end_col_offset)
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [n for t in targets for n in ast.walk(t) if _is_bound(n)]
            elif isinstance(node, (ast.For, ast.comprehension)):
                end = _position(node.target)
                names = [n for n in ast.walk(node.target) if _is_bound(n)]
            else:
                continue
            for name in names:
                if name.id not in first or end < first[name.id]:
                    first[name.id] = end
    return first


def _is_bound(node: ast.AST) -> bool:
    """A name a target binds (not the array or an index of ``x[i, j] = v``: those are read)."""
    return isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)


class _ReadFinder(ast.NodeVisitor):
    """Collects GlobalReads; an attribute chain on a global is one read, not several."""

    def __init__(self, params: set, bound: dict):
        self.params, self.bound, self.reads = params, bound, []
        self.host_function = False

    def visit_Call(self, node: ast.Call):
        """``xt.extern(..., numpy_impl=f)``: the reads of ``f`` are host function references."""
        func = node.func
        if not ((isinstance(func, ast.Attribute) and func.attr == "extern")
                or (isinstance(func, ast.Name) and func.id == "extern")):
            self.generic_visit(node)
            return
        self.visit(func)
        for arg in node.args:
            self.visit(arg)
        for keyword in node.keywords:
            outer, self.host_function = self.host_function, keyword.arg == "numpy_impl"
            self.visit(keyword.value)
            self.host_function = outer

    def _is_global(self, node: ast.Name) -> bool:
        if node.id in self.params:
            return False
        start = self.bound.get(node.id)
        return start is None or _position(node) < start

    def visit_Name(self, node: ast.Name):
        if isinstance(node.ctx, ast.Load) and self._is_global(node):
            self.reads.append(GlobalRead(node.id, (), node, node, self.host_function))

    def visit_AugAssign(self, node: ast.AugAssign):
        target = node.target
        if isinstance(target, ast.Name) and self._is_global(target):   # `x += 1` reads x first
            self.reads.append(GlobalRead(target.id, (), target, target))
        self.visit(node.value)
        if not isinstance(target, ast.Name):
            self.visit(target)

    def visit_Attribute(self, node: ast.Attribute):
        attrs, base = [], node
        while isinstance(base, ast.Attribute):
            attrs.append(base.attr)
            base = base.value
        if isinstance(node.ctx, ast.Load) and isinstance(base, ast.Name) and isinstance(base.ctx, ast.Load) \
                and self._is_global(base):
            self.reads.append(GlobalRead(base.id, tuple(reversed(attrs)), base, node, self.host_function))
        else:
            self.visit(base)


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


#: what to do when Python kept no source for a kernel, by the code's file name
_NO_SOURCE_HINTS = {
    "<string>": "code run from a string (`python -c`, exec()) keeps no source",
    "<stdin>": "code piped on stdin keeps no source",
}
_FIX = ("put the kernel in a file and run or import it (`python kernel.py`); IPython and Jupyter cells work, "
        "and so does the interactive shell of Python 3.13 or later")


def no_source_error(fn, exc: Exception) -> CompilationError:
    """The error for a kernel whose source Python did not keep: a kernel is parsed from its
    source, which exists only for code from a file, an IPython/Jupyter cell or the Python
    3.13+ shell (those two register what was typed with :mod:`linecache`)."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    filename = code.co_filename if code is not None else "<unknown>"
    line = code.co_firstlineno if code is not None else 0
    why = _NO_SOURCE_HINTS.get(filename, f"Python has no source for {filename} ({exc})")
    if filename == "<stdin>" and hasattr(sys, "ps1"):            # the interactive shell before 3.13
        why = f"the interactive shell of Python {sys.version_info[0]}.{sys.version_info[1]} keeps no source of what is typed"
    return CompilationError(f"cannot read the source of kernel {fn.__name__!r}, and a kernel is compiled from its "
                            f"source: {why}; {_FIX}", filename, line, 0, None)


def _def_line_error(code, message: str) -> CompilationError:
    """A CompilationError at the ``def`` (or ``lambda``) of ``code``, which comes after
    its decorator lines."""
    filename, first = code.co_filename, code.co_firstlineno
    keyword = "lambda" if code.co_name == "<lambda>" else "def "
    line = next((n for n in range(first, first + 64) if keyword in linecache.getline(filename, n)), first)
    text = linecache.getline(filename, line).rstrip("\n")
    col = max(text.find(keyword), 0)
    return CompilationError(message, filename, line, col, text or None)


_DEF_START = re.compile(r"\s*(@|def\s|async\s+def\s)")


def _def_block(fn) -> tuple[list[str], int, str, ast.Module] | None:
    """(lines, first line, dedented text, its AST with the file's line numbers) of ``fn``'s
    ``def`` with its decorators -- the lines ``inspect.getsourcelines`` returns -- found
    without Python's tokenizer, whose patterns cost a process's first kernel key ~3-5 ms
    to compile (a warm first launch).  The block runs from ``co_firstlineno``
    past the last line any of the function's bytecode comes from, on through the lines
    indented deeper than the ``def`` (trailing ``pass``, strings), and, as inspect does,
    through trailing comments indented like the body; the text must then parse as exactly
    that one function, ending on its last line of code.  None (the caller asks inspect)
    when anything is unusual: no file lines, tabs, a first line that is not a decorator
    or ``def``, a block that does not parse.  A ``functools.wraps`` wrapper reads as the
    function it wraps, as with inspect."""
    fn = inspect.unwrap(fn)
    code = fn.__code__
    linecache.checkcache(code.co_filename)               # as inspect does: an edited file is read again
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines) or not _DEF_START.match(lines[start]):
        return None
    base = _indent(lines[start])
    end = max(_last_code_line(code), start + 1)          # 1-based, inclusive
    comments = []                                         # (line, indentation) after ``end``
    for number in range(end, len(lines)):                 # 0-based index of the line after ``end``
        stripped = lines[number].strip()
        if stripped.startswith("#"):
            comments.append((number + 1, _indent(lines[number])))
        elif stripped:
            if _indent(lines[number]) <= base:
                break
            end, comments = number + 1, []
    if any("\t" in ln[:_indent(ln)] for ln in lines[start:end]):
        return None
    try:
        module = ast.parse("\n" * start + textwrap.dedent("".join(lines[start:end])))
    except SyntaxError:
        return None
    body = module.body
    if len(body) != 1 or not isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) \
            or body[0].name != code.co_name or body[0].end_lineno != end:
        return None
    first_statement = body[0].body[0].lineno
    if first_statement > body[0].lineno:                  # not a one-line def: its body's column
        body_col = _indent(lines[first_statement - 1])
        end = max([end] + [line for line, indent in comments if indent >= body_col])
    block = lines[start:end]
    return block, start + 1, textwrap.dedent("".join(block)), module


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _last_code_line(code) -> int:
    """The last line any instruction of ``code`` (or of a function, class or comprehension
    nested in it) comes from."""
    last = max((pos[1] or 0 for pos in code.co_positions()), default=0)
    for const in code.co_consts:
        if hasattr(const, "co_positions"):
            last = max(last, _last_code_line(const))
    return last


def _file_lines(filename: str, fn_lines: list[str], first_line: int) -> list[str]:
    try:
        with open(filename, encoding="utf-8") as fh:
            return fh.read().splitlines()
    except OSError:
        return [""] * (first_line - 1) + [ln.rstrip("\n") for ln in fn_lines]
