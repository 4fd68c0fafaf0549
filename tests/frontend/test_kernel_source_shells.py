"""Kernels defined where there is no file: an IPython/Jupyter cell and the Python 3.13+
shell register what was typed with :mod:`linecache`, so such kernels compile; code run
with ``python -c``, piped on stdin or typed into the shell of Python 3.12 and older has no
source, and compiling it is an error at the ``def`` that says to put the kernel in a file."""
from __future__ import annotations

import linecache
import subprocess
import sys
from pathlib import Path

import pytest

import xetile_dsl as xd

REPO = Path(__file__).resolve().parents[2]

CELL = '''\
import numpy as np
import xetile_dsl as xd
import xetile_dsl.language as xt

@xd.jit
def add_one(x, BM: xt.constexpr):
    t = xt.init_tile(x, [xt.program_id(0) * BM, 0], [BM, BM])
    xt.store_tile(xt.load_tile(t) + 1.0, t)
'''
LAUNCH = '''
x = np.zeros((4, 4), np.float32)
add_one.on("interpret")[(1,)](x, BM=4)
print("sum", x.sum())
'''


def _run_cell(filename: str) -> dict:
    """Run CELL as a shell does: register its text under ``filename``, then exec it."""
    linecache.cache[filename] = (len(CELL), None, CELL.splitlines(True), filename)
    names: dict = {"__name__": "__main__"}
    try:
        exec(compile(CELL, filename, "exec"), names)
        kernel = xd.compile(names["add_one"], signature={"x": "f32[:,:]"}, constants={"BM": 4}, target="interpret")
    finally:
        linecache.cache.pop(filename, None)
    return kernel.asm


@pytest.mark.parametrize("filename", ["<ipython-input-1-0123456789ab>",          # IPython
                                      "/tmp/ipykernel_4242/1234567890.py",       # Jupyter (ipykernel)
                                      "<python-input-0>"])                       # the Python 3.13 shell
def test_a_kernel_typed_into_a_cell_compiles(filename):
    asm = _run_cell(filename)
    assert "xetile.init_tile" in asm["xetile"]


def _python(args: list[str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, cwd=REPO,
                          timeout=120)


@pytest.mark.parametrize("how", ["-c", "stdin"])
def test_a_kernel_without_source_says_to_use_a_file(how):
    code = CELL + LAUNCH
    proc = _python(["-c", code]) if how == "-c" else _python(["-"], stdin=code)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    where = "<string>" if how == "-c" else "<stdin>"
    assert f"{where}:5:1: error: cannot read the source of kernel 'add_one'" in last, proc.stderr
    assert "put the kernel in a file" in last and "IPython and Jupyter cells work" in last


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="the 3.13 shell keeps what is typed (on a terminal)")
def test_the_old_interactive_shell_is_named():
    proc = _python(["-i"], stdin=CELL + LAUNCH)
    assert f"the interactive shell of Python {sys.version_info[0]}.{sys.version_info[1]} keeps no source" \
        in proc.stderr, proc.stderr
    assert "put the kernel in a file" in proc.stderr
