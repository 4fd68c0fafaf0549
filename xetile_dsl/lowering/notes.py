"""Where a pass's :class:`~xetile_dsl.errors.LoweringWarning`\\ s go: to the compile that
runs the pass, which issues each at the user's line (compiler.py), or, when no compile
collects them (a pass run on its own, ``compile_mlir``), to ``warnings.warn``.

Collecting them rather than recording every warning with ``warnings.catch_warnings``
matters to the user: entering ``catch_warnings`` resets Python's record of warnings
already shown, so a kernel compiled N times printed its notes N times instead of once
per kernel line."""
from __future__ import annotations

import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from ..errors import LoweringWarning

_COLLECTED: ContextVar[list | None] = ContextVar("xetile_lowering_notes", default=None)


def note(warning: LoweringWarning) -> None:
    """Hand ``warning`` to the compile collecting notes, else warn now."""
    collected = _COLLECTED.get()
    if collected is None:
        warnings.warn(warning, stacklevel=3)
    else:
        collected.append(warning)


@contextmanager
def collecting() -> Iterator[list[LoweringWarning]]:
    """The notes of the passes run in the ``with`` body, in order."""
    token = _COLLECTED.set([])
    try:
        yield _COLLECTED.get()
    finally:
        _COLLECTED.reset(token)
