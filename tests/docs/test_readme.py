"""README.md's code runs as pasted: each ```python block is run on its own, as a script in
a fresh process (``sys.executable``, an empty temporary folder as the working directory,
the CPU device unless ``XETILE_DEVICE`` says otherwise), and a failure names the block's
line in README.md.  Blocks that need what a machine may lack are skipped like the other
tests: dpnp (a test extra; a failure under ``XETILE_REQUIRE_RUNTIMES=1``) and torch with
an XPU device.  The ``explain`` shell example runs too (it needs ocloc).
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest_tools import require_dpnp, require_ocloc, require_torch, require_torch_xpu

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
#: seconds one block may run (cold cache: each block compiles its kernels)
BLOCK_TIMEOUT = 300
FENCE = re.compile(r"^```(\w*)\s*$")


def fenced_blocks(text: str) -> list[tuple[str, int, str]]:
    """(language, line of the opening fence, code) of every fenced block, in order."""
    blocks, lang, start, body = [], None, 0, []
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if lang is None and match:
            lang, start, body = match.group(1), number, []
        elif lang is not None and line.strip() == "```":
            blocks.append((lang, start, "\n".join(body) + "\n"))
            lang = None
        elif lang is not None:
            body.append(line)
    return blocks


PYTHON_BLOCKS = [(line, code) for lang, line, code in fenced_blocks(README.read_text(encoding="utf-8"))
                 if lang == "python"]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("XETILE_DEVICE", "opencl:cpu")
    return env


def _run(args: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(args, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} ran over {BLOCK_TIMEOUT} s", pytrace=False)
    if proc.returncode != 0:
        pytest.fail(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}",
                    pytrace=False)
    return proc


def test_the_readme_has_python_blocks():
    assert len(PYTHON_BLOCKS) >= 6


@pytest.mark.parametrize("line,code", PYTHON_BLOCKS, ids=[f"README.md:{line}" for line, _ in PYTHON_BLOCKS])
def test_python_block_runs_as_pasted(line, code, tmp_path):
    if re.search(r"^import torch", code, re.M):
        require_torch_xpu() if 'device="xpu"' in code else require_torch()
    if re.search(r"^import dpnp", code, re.M):
        require_dpnp()
    script = tmp_path / f"readme_line_{line}.py"
    script.write_text(code, encoding="utf-8")
    _run([sys.executable, str(script)], tmp_path, f"the python block at README.md:{line}")


def _commands(code: str) -> list[str]:
    """The shell lines of a block, backslash continuations joined."""
    return [c.strip() for c in code.replace("\\\n", " ").splitlines() if c.strip()]


EXPLAIN = [(line, cmd) for lang, line, code in fenced_blocks(README.read_text(encoding="utf-8")) if lang == ""
           for cmd in _commands(code) if cmd.startswith("python -m xetile_dsl explain ")]


@pytest.mark.parametrize("line,command", EXPLAIN, ids=[f"README.md:{line}" for line, _ in EXPLAIN])
def test_explain_example_runs_from_anywhere(line, command, tmp_path, ocloc_path):
    """The kernel is named by module, so the example runs outside a checkout (from a wheel);
    the shipped kernel compiles without a warning of its own."""
    args = shlex.split(command)
    proc = _run([sys.executable, *args[1:]], tmp_path, f"the explain example at README.md:{line}")
    assert proc.stdout.startswith("ISA report: gemm_wg_kernel on pvc"), proc.stdout
    assert "Warning" not in proc.stderr, proc.stderr


def test_there_is_an_explain_example():
    assert EXPLAIN
