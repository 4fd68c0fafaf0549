"""The compiled-kernel cache: a second launch compiles nothing; a new process loads from disk."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np

from xetile_dsl import compiler
from xetile_dsl.kernels.matmul import matmul


def _args(seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(-2, 3, (64, 32)).astype(np.float16), rng.integers(-2, 3, (32, 64)).astype(np.float16)


def test_second_launch_compiles_nothing(tmp_path, monkeypatch):
    a, b = _args()
    before = compiler.stats["compiles"]
    matmul(a, b, BM=16, BN=32, BK=32, target="cpu-pvc")  # may compile (or hit another test's entry)
    mid = compiler.stats["compiles"]
    c = matmul(a, b, BM=16, BN=32, BK=32, target="cpu-pvc")
    assert compiler.stats["compiles"] == mid
    assert mid - before <= 1
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_fresh_process_loads_from_disk(tmp_path):
    script = textwrap.dedent("""
        import numpy as np
        from xetile_dsl import compiler
        from xetile_dsl.jit import _disk_cache
        from xetile_dsl.kernels.matmul import matmul
        rng = np.random.default_rng(0)
        a = rng.integers(-2, 3, (64, 32)).astype(np.float16)
        b = rng.integers(-2, 3, (32, 64)).astype(np.float16)
        c = matmul(a, b, BM=32, BN=16, BK=16, target="cpu-arc")
        assert (c == a.astype(np.float32) @ b.astype(np.float32)).all()
        s = _disk_cache().stats
        print(compiler.stats["compiles"], s.hits_disk)
    """)
    env = dict(os.environ, XETILE_CACHE_DIR=str(tmp_path))
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["1", "0"]
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["0", "1"]


def test_corrupt_entry_is_rebuilt(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, warnings
        from xetile_dsl import compiler
        from xetile_dsl.kernels.matmul import matmul
        a = np.ones((32, 32), np.float16); b = np.ones((32, 32), np.float16)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            c = matmul(a, b, BM=16, BN=16, BK=16, target="cpu-arc")
        assert (c == 32).all()
        print(compiler.stats["compiles"], sum(x.category.__name__ == "CacheWarning" for x in w))
    """)
    env = dict(os.environ, XETILE_CACHE_DIR=str(tmp_path))
    run = lambda: subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert run().stdout.split() == ["1", "0"]
    for spv in tmp_path.rglob("kernel.spv"):
        spv.write_bytes(b"\x03\x02\x23\x07garbage")
    again = run()
    assert again.returncode == 0, again.stderr
    compiles, warnings_seen = again.stdout.split()
    assert compiles == "1" and int(warnings_seen) >= 1
