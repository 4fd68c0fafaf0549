"""A small Itanium C++ name mangler for OpenCL builtin signatures.

Only what Intel's OpenCL builtins need: builtin scalar types, ext-vectors (``Dv8_s``),
pointers with an OpenCL address space (``PU3AS1v``) and const.  Back-references
(``S_``, ``S0_``, ...) are produced by the usual Itanium rule: every non-builtin type
(vector, qualified type, pointer) becomes a substitution candidate the first time it
is written, and a later identical type is written as a reference to it.

>>> mangle("intel_sub_group_i8_i8_matrix_mad_k32", [vec(8, "s"), vec(8, "i"), vec(8, "i")])
'_Z36intel_sub_group_i8_i8_matrix_mad_k32Dv8_sDv8_iS0_'
"""
from __future__ import annotations

from dataclasses import dataclass

#: Itanium codes of the builtin types we use (never substitution candidates).
BUILTIN_CODES = frozenset({"v", "c", "a", "h", "s", "t", "i", "j", "l", "m", "f", "d", "Dh", "DF16b"})


@dataclass(frozen=True)
class Vec:
    """An OpenCL vector ``<n x elem>``; ``elem`` is a builtin code."""

    n: int
    elem: str


@dataclass(frozen=True)
class Ptr:
    """A pointer to ``pointee`` in OpenCL address space ``addrspace`` (0 = private,
    written without a qualifier, as clang does)."""

    pointee: object
    addrspace: int = 0
    const: bool = False


def vec(n: int, elem: str):
    """A vector type, or the scalar itself when ``n == 1`` (OpenCL has no 1-vectors)."""
    return elem if n == 1 else Vec(n, elem)


def mangle(name: str, params: list) -> str:
    """The Itanium-mangled name of free function ``name`` taking ``params``."""
    subs: list[str] = []
    body = "".join(_mangle_type(p, subs) for p in params) or "v"
    return f"_Z{len(name)}{name}{body}"


def _seq_id(index: int) -> str:
    """Back-reference for the ``index``-th candidate: S_, S0_, S1_, ..., S9_, SA_, ..."""
    if index == 0:
        return "S_"
    n, digits = index - 1, ""
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    while True:
        n, r = divmod(n, 36)
        digits = alphabet[r] + digits
        if n == 0:
            break
    return f"S{digits}_"


def _substitutable(full: str, subs: list[str], write) -> str:
    """Return a back-reference if ``full`` was seen, else ``write()`` and record it."""
    if full in subs:
        return _seq_id(subs.index(full))
    text = write()
    subs.append(full)
    return text


def _plain(t) -> str:
    """The mangling of ``t`` without any substitutions (the identity of a candidate)."""
    if isinstance(t, str):
        return t
    if isinstance(t, Vec):
        return f"Dv{t.n}_{t.elem}"
    return "P" + _qualifiers(t) + _plain(t.pointee)


def _qualifiers(p: Ptr) -> str:
    q = f"U3AS{p.addrspace}" if p.addrspace else ""
    return q + ("K" if p.const else "")


def _mangle_type(t, subs: list[str]) -> str:
    if isinstance(t, str):
        if t not in BUILTIN_CODES:
            raise ValueError(f"unknown builtin type code {t!r}")
        return t
    if isinstance(t, Vec):
        return _substitutable(_plain(t), subs, lambda: _plain(t))
    if isinstance(t, Ptr):
        return _substitutable(_plain(t), subs, lambda: "P" + _mangle_pointee(t, subs))
    raise TypeError(f"cannot mangle {t!r}")


def _mangle_pointee(p: Ptr, subs: list[str]) -> str:
    """The qualified pointee; each qualified form is itself a candidate (clang order:
    the const-qualified type, then the address-space-qualified one)."""
    inner = _mangle_type(p.pointee, subs)
    if not (p.addrspace or p.const):
        return inner
    plain = _plain(p.pointee)
    if p.const:
        inner = _substitutable("K" + plain, subs, lambda: "K" + inner)
        plain = "K" + plain
    if p.addrspace:
        q = f"U3AS{p.addrspace}"
        inner = _substitutable(q + plain, subs, lambda: q + inner)
    return inner
