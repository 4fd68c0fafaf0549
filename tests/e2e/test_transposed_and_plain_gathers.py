"""A transposed 16- or 8-bit load next to a plain load of an array whose rows are under
64 bytes, on ARC (no 2D block messages: both are per-lane gathers of 8x8 memory blocks).
The two wrappers are different functions of the same block shape and lane tag; they had
one name, so the second was "already defined in this module" -- a bare ValueError out of
codegen.  Run in a fresh process with an empty cache (nothing kept from an earlier
compile), exact small integers, against numpy and the interpreter."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import ml_dtypes  # noqa: F401 - the child imports it
import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.errors import CompilationError

_CHILD = textwrap.dedent('''
    import sys
    import numpy as np
    import xetile_dsl as xd
    import xetile_dsl.language as xt

    @xd.jit
    def add_transposed(x, y, z, R: xt.constexpr, C: xt.constexpr):
        xv = xt.load_tile(xt.init_tile(x, [0, 0], [R, C], order=(0, 1)))
        yv = xt.load_tile(xt.init_tile(y, [0, 0], [R, C]))
        xt.store_tile(xv + yv, xt.init_tile(z, [0, 0], [R, C]))

    dtype, R, C, WX = np.dtype(sys.argv[1]), *map(int, sys.argv[2:5])
    rng = np.random.default_rng(R + C + WX)
    x = rng.integers(-3, 4, (C, WX)).astype(dtype)    # the tile's transpose, rows WX wide
    y = rng.integers(-3, 4, (R, C)).astype(dtype)     # rows under 64 bytes
    ref = x[:, :R].T + y
    for target in ("cpu-arc", "interpret"):
        z = np.zeros((R, C), dtype)
        add_transposed.on(target)[(1,)](x, y, z, R=R, C=C)
        np.testing.assert_array_equal(z, ref)
    print("ok")
''')


@pytest.mark.parametrize("dtype,R,C,WX", [("float16", 16, 16, 16), ("float16", 8, 16, 64), ("int8", 16, 32, 64)])
def test_transposed_and_plain_gathers_in_a_fresh_process(tmp_path, dtype, R, C, WX):
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, XETILE_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(Path(xd.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(script), dtype, str(R), str(C), str(WX)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


@xd.jit
def _copy(x, y):
    xt.store_tile(xt.load_tile(xt.init_tile(x, [0, 0], [8, 16])), xt.init_tile(y, [0, 0], [8, 16]))


def test_a_codegen_failure_is_an_internal_error_at_the_kernel(monkeypatch):
    """Any exception out of codegen other than our own errors is reported as an internal
    compiler error at the user's line, never a bare exception."""
    from xetile_dsl.codegen import simt_to_llvm

    def broken(*args, **kwargs):
        raise ValueError("something is already defined")

    monkeypatch.setattr(simt_to_llvm, "generate", broken)
    monkeypatch.delenv("XETILE_DEBUG", raising=False)
    with pytest.raises(CompilationError) as info:
        xd.compile(_copy, {"x": "f32[:,:]", "y": "f32[:,:]"}, {}, target="cpu-arc")
    message = str(info.value)
    assert "internal compiler error in pass 'llvm codegen'" in message and "ValueError" in message
    assert "test_transposed_and_plain_gathers.py" in message
