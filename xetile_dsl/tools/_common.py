"""Errors and process helpers shared by the external-tool wrappers."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

from ..errors import ToolError

#: Seconds any one external tool run may take before we give up.
TOOL_TIMEOUT = 600


class ToolNotFound(ToolError):
    """A tool is missing or unusable (for example too old); the message says why."""


def repo_root() -> Path:
    """The source checkout this package lives in (``xetile_dsl/..``)."""
    return Path(__file__).resolve().parents[2]


def run(argv: Sequence[str], *, input: bytes | None = None,
        cwd: str | Path | None = None) -> subprocess.CompletedProcess:
    """Run ``argv`` capturing stdout/stderr as bytes; never raises on a non-zero exit."""
    try:
        return subprocess.run(list(map(str, argv)), input=input, cwd=cwd, capture_output=True,
                              timeout=TOOL_TIMEOUT, check=False)
    except FileNotFoundError as exc:
        raise ToolNotFound(f"cannot run {argv[0]}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{argv[0]} timed out after {TOOL_TIMEOUT}s") from exc


def output_text(proc: subprocess.CompletedProcess) -> str:
    """stdout and stderr of a finished process, decoded and joined."""
    out = proc.stdout.decode("utf-8", "replace") if proc.stdout else ""
    err = proc.stderr.decode("utf-8", "replace") if proc.stderr else ""
    return (out + ("\n" if out and err else "") + err).strip()
