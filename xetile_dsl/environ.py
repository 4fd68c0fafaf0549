"""Environment variables read on the launch path, without ``os.environ.get``'s per-call work.

``os.environ.get`` encodes the name and decodes the value on every call (microseconds on
a busy machine), and a launch reads a few variables (``XETILE_INTERPRET``,
``XETILE_DEVICE``, ``XETILE_BACKEND``) each time.  On POSIX ``os.environ`` keeps the raw
bytes in its ``_data`` dictionary, which every change through ``os.environ`` (including
pytest's ``monkeypatch.setenv``) updates; :func:`get` looks the encoded name up there and
decodes only a value that is set.  Elsewhere it is ``os.environ.get``.
"""
from __future__ import annotations

import os

_ENCODED: dict[str, bytes] = {}


def get(name: str, default: str | None = None) -> str | None:
    """``os.environ.get(name, default)``."""
    data = getattr(os.environ, "_data", None)
    key = _ENCODED.get(name)
    if data is None or key is None:
        if data is None or os.name != "posix":
            return os.environ.get(name, default)
        key = _ENCODED[name] = os.fsencode(name)
    raw = data.get(key)
    return default if raw is None else os.fsdecode(raw)


def unset(name: str) -> bool:
    """True when ``name`` is unset or empty (what a knob reads as its default): one
    dictionary read once :func:`get` has seen the name."""
    try:                       # (attribute and subscript reads: cheaper than calls)
        return not os.environ._data.get(_ENCODED[name])
    except (AttributeError, KeyError):
        return not get(name)
