"""Emulated builtins' LLVM IR text, built once per process and key.

For the CPU device every GPU-only builtin is *defined* in the module (intel_builtins.py),
and those bodies are most of a module (README GEMM: 95 of 108 KB): building them with
llvmlite and printing them was 12-20% of a compile, the same bodies again in every
compile.  So the first build of a builtin keeps its definition's text, and a later
module gets a function that prints that text (:class:`_PrintedFunction`) plus the
declarations the body calls, added as the build would have added them.

The key is everything the body is made from: the builder's own key (the memo key of
:class:`~.intel_builtins.IntelBuiltins`, which lists every parameter of the builder),
the whole :class:`~xetile_dsl.targets.target.Target` (a frozen dataclass: every fact
compares) and the emulation flag; never the function's name alone (an earlier version
keyed by name gave an ARC row wrapper another lane mapping's body, docs/design.md).
A body is kept only when its build added nothing to the module but itself and
declarations (no other definitions, globals or metadata), so replaying those
declarations rebuilds the same module.  With ``XETILE_VERIFY_IR=1`` (the test suite)
every reuse is checked: the body is built again and must print the kept text.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable

from llvmlite import ir

from ..errors import InternalCompilerError
from ..knobs import VERIFY_IR


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
                                    f"build under the same key; its key misses a parameter (codegen/builtin_texts.py)",
                                    None)
