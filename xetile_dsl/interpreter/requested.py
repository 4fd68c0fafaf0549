"""Whether a launch runs in the interpreter: light, read by every ``@jit`` launch."""
from __future__ import annotations

from .. import knobs

INTERPRETER_TARGETS = ("interpret", "interpret-subgroups")


def interpret_requested() -> bool:
    """True when ``XETILE_INTERPRET`` asks every launch to run in the interpreter."""
    return knobs.interpreting()
