"""``CompiledKernel.asm``: each stage's output by stage name, the MLIR texts printed on
first read.

Printing the module after each lowering stage was ~12% of a compile, and most compiles
(every ``@jit`` launch) never read those texts.  So the pipeline hands over a snapshot
of the module per stage (a clone where later stages would change it; cloning is about a
third of printing) and the text is printed when someone reads ``asm["xegpu"]`` & co.
A read text is kept; ``"xegpu" in asm`` and iteration do not print anything.
"""
from __future__ import annotations

from collections.abc import Callable, MutableMapping

from .errors import MissingStageError


LOWERING_STAGES = ("xetile", "xegpu", "simt")   # the MLIR texts only xd.compile keeps
MACHINE_CODE_STAGES = ("isa", "zebin")          # made by ocloc, for a GPU target


#: why ocloc cannot be used ("" when it can); the compiler sets it (tools are a layer above)
_ocloc_missing: Callable[[], str] = lambda: ""


def explain_missing_machine_code(reason: Callable[[], str]) -> None:
    """Have ``asm["isa"]``'s error say ``reason()`` (why ocloc is missing) when not empty."""
    global _ocloc_missing
    _ocloc_missing = reason


class _Deferred:
    """A value not made yet: ``make()`` makes it."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]):
        self.make = make


class StageTexts(MutableMapping):
    """A dict of stage name -> text (or bytes), where :meth:`defer` stores a text that is
    made at its first read.  Keys keep the order they were added in."""

    def __init__(self, texts: dict | None = None):
        self._entries: dict = dict(texts or {})

    def defer(self, stage: str, make: Callable[[], object]) -> None:
        """``self[stage]`` is ``make()``, called at the first read (once)."""
        self._entries[stage] = _Deferred(make)

    def __getitem__(self, stage: str):
        try:
            value = self._entries[stage]
        except KeyError:
            raise MissingStageError(self._not_kept(stage)) from None
        if isinstance(value, _Deferred):
            value = self._entries[stage] = value.make()
        return value

    def _not_kept(self, stage) -> str:
        """Why ``stage`` is missing: the lowering stages' texts are kept only when asked for."""
        kept = ", ".join(repr(name) for name in self._entries) or "nothing"
        if stage in LOWERING_STAGES:
            return (f"asm[{stage!r}] was not kept: this kernel keeps {kept} (a @jit launch and a disk-cache "
                    f"entry keep no lowering texts); xd.compile(fn, signature=..., constants=..., target=...) "
                    f"keeps every stage")
        if stage in MACHINE_CODE_STAGES:
            reason = _ocloc_missing()
            if reason:
                return f"asm[{stage!r}] is the GPU machine code, which needs ocloc: {reason}"
            return (f"asm[{stage!r}] is the GPU machine code, made only for a GPU target (pvc, bmg, lnl, ptl, arc); "
                    f"this kernel holds {kept} (compiled for the CPU device or the interpreter)")
        return f"asm has no stage {stage!r}; it holds {kept}"

    def __setitem__(self, stage: str, value) -> None:
        self._entries[stage] = value

    def __delitem__(self, stage: str) -> None:
        del self._entries[stage]

    def __contains__(self, stage) -> bool:
        return stage in self._entries

    def __iter__(self):
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        shown = {k: "<not printed yet>" if isinstance(v, _Deferred) else v for k, v in self._entries.items()}
        return f"StageTexts({shown!r})"
