"""The one way an op is registered, in every stage that handles ops.

A stage keeps one :class:`OpRegistry` and registers a function per key with its
decorator::

    EMITTERS = OpRegistry("codegen")

    @EMITTERS.register(xegpu.LoadNdOp)
    def emit_load_nd(emitter, op): ...

The key of an IR op is its xDSL class (the interpreter, codegen); the key of a kernel
language function is the name it has in ``xetile_dsl.language`` (the frontend, which
builds IR from a Python call and has no op class yet).  :meth:`OpRegistry.lookup` finds
the function of an op (walking its class's bases, so a handler registered on a base
class serves its subclasses) or of a name; :meth:`OpRegistry.keys` lists what a stage
supports, which the tests compare across stages.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

Key = type | str


class OpRegistry:
    """Key (an op class or a language-function name) -> the function that handles it in
    one stage (``role``: "frontend", "codegen", "interpreter"...)."""

    def __init__(self, role: str):
        self.role = role
        self._table: dict[Key, Callable] = {}

    def register(self, *keys: Key) -> Callable[[Callable], Callable]:
        """Decorator: the function handles each of ``keys``.  Registering a key twice is
        a programming error and raises at import time."""
        if not keys:
            raise TypeError(f"{self.role}: register() needs at least one op class or name")

        def decorate(fn: Callable) -> Callable:
            for key in keys:
                if not isinstance(key, (type, str)):
                    raise TypeError(f"{self.role}: register() takes op classes or names, not {key!r}")
                if key in self._table and self._table[key] is not fn:
                    raise ValueError(f"{self.role}: {_name(key)} is already handled by "
                                     f"{self._table[key].__qualname__}")
                self._table[key] = fn
            return fn

        return decorate

    def lookup(self, key: Any) -> Callable | None:
        """The function for ``key``: an op instance (by its class and then its bases), an
        op class, or a name; None when this stage has none."""
        if isinstance(key, str):
            return self._table.get(key)
        cls = key if isinstance(key, type) else type(key)
        for base in cls.__mro__:
            fn = self._table.get(base)
            if fn is not None:
                return fn
        return None

    def __contains__(self, key: Any) -> bool:
        return self.lookup(key) is not None

    def keys(self) -> list[Key]:
        return list(self._table)

    def names(self) -> list[str]:
        """Every key as text: an op class by its IR name (``arith.addf``)."""
        return [_name(k) for k in self._table]

    def __iter__(self) -> Iterator[Key]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return f"<OpRegistry {self.role}: {len(self._table)} entries>"


def _name(key: Key) -> str:
    if isinstance(key, str):
        return key
    return getattr(key, "name", None) if isinstance(getattr(key, "name", None), str) else key.__name__
