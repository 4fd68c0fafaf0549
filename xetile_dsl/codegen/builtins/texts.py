"""Emulated builtins' LLVM IR text, built once per process and key.

For the CPU device every GPU-only builtin is *defined* in the module (intel.py),
and those bodies are most of a module (README GEMM: 95 of 108 KB): building them with
llvmlite and printing them was 12-20% of a compile, the same bodies again in every
compile.  So the first build of a builtin keeps its definition's text, and a later
module gets a function that prints that text (:class:`_PrintedFunction`) plus the
declarations the body calls, added as the build would have added them.

The key is everything the body is made from: the builder's own key (the memo key of
:class:`~.intel.IntelBuiltins`, which lists every parameter of the builder),
the whole :class:`~xetile_dsl.targets.target.Target` (a frozen dataclass: every fact
compares) and the emulation flag; never the function's name alone (an earlier version
keyed by name gave an ARC row wrapper another lane mapping's body, docs/decisions/004-emulated-builtins-on-the-cpu-runtime.md).
A body is kept only when its build added nothing to the module but itself and
declarations (no other definitions, globals or metadata), so replaying those
declarations rebuilds the same module.  With ``XETILE_VERIFY_IR=1`` (the test suite)
every reuse is checked: the body is built again and must print the kept text.

The kept bodies are also what :mod:`..spirv.translate` emits to SPIR-V once per process and
links (:func:`split_for_linking`): the kernel's module is emitted with each kept body
replaced by a declaration, and each body as a module of its own (:mod:`..spirv.link`).
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from ...errors import InternalCompilerError
from ...knobs import VERIFY_IR


@dataclass(frozen=True)
class _Declaration:
    """A function the body calls, as the build left its declaration."""

    name: str
    fnty: ir.FunctionType
    calling_convention: str
    attributes: tuple[str, ...]


@dataclass(frozen=True)
class _Kept:
    """A built body: its definition's text and what a module needs around it."""

    name: str
    text: str
    fnty: ir.FunctionType
    linkage: str
    calling_convention: str
    attributes: tuple[str, ...]
    declarations: tuple[_Declaration, ...]


class _PrintedFunction(ir.Function):
    """A function whose whole definition is known as LLVM IR text: calls to it print as
    to any function (name, type, calling convention), the module prints ``text``."""

    def __init__(self, module: ir.Module, kept: _Kept):
        super().__init__(module, kept.fnty, kept.name)
        self.linkage, self.calling_convention = kept.linkage, kept.calling_convention
        for attribute in kept.attributes:
            self.attributes.add(attribute)
        self.text = kept.text

    def descr(self, buf) -> None:
        buf.append(self.text)


_KEPT: dict[tuple, _Kept] = {}
#: function name -> the kept bodies of that name (several targets may share a name)
_BY_NAME: dict[str, list[_Kept]] = {}
#: the prefix of a kept body's name in the modules that are linked: a declaration under
#: an Intel builtin's own name would be lowered to that builtin's GPU instruction
LINK_PREFIX = "xetile.linked."
_DEFINE = "\ndefine internal "
#: the target lines a builtin's own module copies from the kernel's
_TARGET_LINES = re.compile(r'^target (?:triple|datalayout) = "[^"]*"$', re.MULTILINE)
#: metadata references (``!0``, ``!{...}``): numbered per module, so such a body is not kept
_METADATA = re.compile(r"!\d|!\{")
#: a reference to a global value: ``@"name"`` or ``@name``
_GLOBAL_REFERENCE = re.compile(r'@"([^"]*)"|@([-\w.$]+)')
#: counters for tests: bodies built and kept, and reuses
stats = {"kept": 0, "reused": 0}


def build_once(bi, key: tuple, build: Callable[[], ir.Function]) -> ir.Function:
    """``build()`` (which defines a function in ``bi.module``), or the text that the
    build with the same key, target and emulation flag made before."""
    full_key = (key, bi.target, bi.emulate)
    kept = _KEPT.get(full_key)
    if kept is not None and not VERIFY_IR.get():
        stats["reused"] += 1
        return _replay(bi, kept)
    before = set(bi.module.globals)
    with _recording(bi) as declared:
        fn = build()
    fresh = _keepable(bi, fn, declared, before)
    if kept is not None:
        _check_same(kept, fresh)
        stats["reused"] += 1
    elif fresh is not None:
        _KEPT[full_key] = fresh
        same_name = _BY_NAME.setdefault(fresh.name, [])
        if fresh not in same_name:          # (an equal body under another key adds nothing)
            same_name.append(fresh)
        stats["kept"] += 1
    return fn


def _replay(bi, kept: _Kept) -> ir.Function:
    """The kept body in ``bi.module``: the function first, then each declaration it
    calls that the module does not have yet (the order the build declares them in)."""
    fn = _PrintedFunction(bi.module, kept)
    for decl in kept.declarations:
        existing = bi.module.globals.get(decl.name)
        if existing is None:
            existing = ir.Function(bi.module, decl.fnty, decl.name)
            existing.calling_convention = decl.calling_convention
        elif existing.function_type != decl.fnty:
            raise InternalCompilerError(f"builtin {kept.name}: {decl.name} is declared as {existing.function_type}, "
                                        f"its kept body calls it as {decl.fnty}", None)
        for attribute in decl.attributes:
            existing.attributes.add(attribute)
    return fn


@contextmanager
def _recording(bi):
    """The names ``bi.declare``/``bi.declare_intrinsic`` are asked for in the ``with``
    body, in call order (nested recordings each see every call)."""
    declared: list[str] = []
    bi.recorders.append(declared)
    try:
        yield declared
    finally:
        bi.recorders.remove(declared)


def _keepable(bi, fn: ir.Function, declared: list[str], before: set) -> _Kept | None:
    """What :func:`_replay` needs to rebuild ``fn``, or None when its build did more than
    define it and declare functions, or its text refers to a global it did not declare
    (e.g. a builtin another build defined) or to module metadata."""
    globals_ = bi.module.globals
    order = list(dict.fromkeys(n for n in declared if n != fn.name))
    if set(globals_) - before - {fn.name} - set(order) or isinstance(fn, _PrintedFunction) or fn.is_declaration:
        return None
    decls = [globals_[n] for n in order]
    if not all(isinstance(d, ir.Function) and d.is_declaration and not isinstance(d, _PrintedFunction) for d in decls):
        return None
    text = str(fn)
    referenced = {quoted or bare for quoted, bare in _GLOBAL_REFERENCE.findall(text)}
    if _METADATA.search(text) or not referenced <= {fn.name, *order}:
        return None
    return _Kept(fn.name, text, fn.function_type, fn.linkage, fn.calling_convention, tuple(sorted(fn.attributes)),
                 tuple(_Declaration(d.name, d.function_type, d.calling_convention, tuple(sorted(d.attributes)))
                       for d in decls))


def _check_same(kept: _Kept, fresh: _Kept | None) -> None:
    """A reuse checked against a fresh build (``XETILE_VERIFY_IR=1``)."""
    if fresh != kept:
        raise InternalCompilerError(f"builtin {kept.name}: a body kept from an earlier module differs from its fresh "
                                    f"build under the same key; its key misses a parameter (codegen/builtins/texts.py)",
                                    None)


@dataclass(frozen=True)
class LinkSplit:
    """An LLVM module split for linking: ``kernel`` is its text with each kept body
    declared (under ``LINK_PREFIX`` + its name) instead of defined; ``builtins`` the
    modules defining those bodies (exported), in the order the kernel text had them."""

    kernel: str
    builtins: tuple[str, ...]


def split_for_linking(llvm_text: str) -> LinkSplit | None:
    """``llvm_text`` split into the kernel and the kept bodies it defines, or None when it
    defines none.  A body is left in the kernel when it calls a function the kernel
    defines (its own module would declare that function)."""
    defines = list(_internal_definitions(llvm_text))
    found = [(start, kept) for start, kept in ((start, _kept_at(llvm_text, start, name)) for start, name in defines)
             if kept is not None]
    if not found:
        return None
    defined = {name for _, name in defines}
    found = [(start, kept) for start, kept in found if not any(d.name in defined for d in kept.declarations)]
    if not found:
        return None
    target = "\n".join(_TARGET_LINES.findall(llvm_text, 0, llvm_text.find("\ndefine ")))
    pieces, end = [], 0
    for start, kept in found:
        pieces += [llvm_text[end:start], _linked_parts(kept)[0]]
        end = start + len(kept.text)
    kernel = "".join(pieces) + llvm_text[end:]
    for _, kept in found:
        kernel = kernel.replace(f'@"{kept.name}"', f'@"{LINK_PREFIX}{kept.name}"')
    return LinkSplit(kernel, tuple(f"{target}\n\n{_linked_parts(kept)[1]}" for _, kept in found))


def _kept_at(llvm_text: str, start: int, name: str) -> _Kept | None:
    """The kept body whose text ``llvm_text`` has at ``start``, if any: one, even where
    bodies of several targets (or a body kept again after ``_KEPT`` was emptied) share
    the text; taking each would cut the kernel's text at one place twice."""
    for kept in _BY_NAME.get(name, ()):
        if llvm_text.startswith(kept.text, start):
            return kept
    return None


def _internal_definitions(llvm_text: str):
    """(offset, name) of each internal definition in ``llvm_text`` (llvmlite's printing:
    a line ``define internal <type...> @"name"(...``); str.find, faster than a regex."""
    at = llvm_text.find(_DEFINE)
    while at >= 0:
        start = at + 1
        name_at = llvm_text.index('@"', start) + 2
        yield start, llvm_text[name_at:llvm_text.index('"', name_at)]
        at = llvm_text.find(_DEFINE, name_at)


#: kept body -> :func:`_linked_parts`.  Keyed by the body itself, never by its ``id()``:
#: a body dropped from ``_KEPT`` (the tests empty it) frees its id for another body,
#: which then got the first one's module (the suite linked a GEMM to the wrong builtins)
_LINKED: dict[_Kept, tuple[str, str]] = {}


def _linked_parts(kept: _Kept) -> tuple[str, str]:
    """(the kernel's declaration of ``kept``, the rest of its own module: the functions
    it calls declared, then its definition, exported), made once per body."""
    parts = _LINKED.get(kept)
    if parts is None:
        scratch = ir.Module()
        declaration = ir.Function(scratch, kept.fnty, LINK_PREFIX + kept.name)
        declaration.calling_convention = kept.calling_convention
        for attribute in kept.attributes:
            declaration.attributes.add(attribute)
        callees = []
        for decl in kept.declarations:
            callee = ir.Function(scratch, decl.fnty, decl.name)
            callee.calling_convention = decl.calling_convention
            for attribute in decl.attributes:
                callee.attributes.add(attribute)
            callees.append(str(callee))
        if not kept.text.startswith("define internal "):
            raise InternalCompilerError(f"builtin {kept.name}: a kept body that is not internal", None)
        body = ("define " + kept.text[len("define internal "):]).replace(f'@"{kept.name}"',
                                                                         f'@"{LINK_PREFIX}{kept.name}"')
        parts = _LINKED[kept] = (str(declaration).strip(), "\n".join([*callees, body]))
    return parts
