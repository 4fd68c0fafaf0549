"""The compiled-kernel cache: a second launch compiles nothing; a new process loads from disk;
tampered SPIR-V is rebuilt, not built; compile warnings come back on a hit."""
from __future__ import annotations

import array
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from importlib import import_module
from pathlib import Path

import numpy as np
import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl import compiler
from xetile_dsl.compiler import cached_kernel_problem
from xetile_dsl.errors import AccumulatorSplitWarning
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.kernels.matmul import matmul
from xetile_dsl.runtime.abi import KernelABI
from xetile_dsl.runtime.cache import KernelCache
from xetile_dsl.tools import spirv_tools
from xetile_dsl.tools.spirv_tools import SpirvValidationError

REPO = Path(xd.__file__).resolve().parent.parent
jit_module = import_module("xetile_dsl.jit")   # the module (xetile_dsl.jit is the decorator)


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


# --- cached SPIR-V is validated before the OpenCL runtime sees it ---------------------------

#: Three specialisations of the small matmul (three cache entries), compiled only (argv[1]
#: "compile") or launched and checked.
_THREE_MATMULS = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    from xetile_dsl import compiler
    from xetile_dsl.kernels.matmul import matmul, matmul_kernel
    a = np.arange(32 * 32).reshape(32, 32).astype(np.float16) % 5
    b = np.ones((32, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for bm, bn in ((16, 16), (32, 16), (16, 32)):
            if sys.argv[1:] == ["compile"]:
                _, specs, constants = matmul_kernel.bind((a, b, c, 32), dict(BM=bm, BN=bn, BK=16))
                matmul_kernel.load_or_compile(specs, constants, "cpu-arc")
                continue
            c = matmul(a, b, BM=bm, BN=bn, BK=16, target="cpu-arc")
            assert (c == a.astype(np.float32) @ b.astype(np.float32)).all(), (bm, bn)
    print(json.dumps({"compiles": compiler.stats["compiles"],
                      "cache_warnings": [str(w.message) for w in caught if w.category.__name__ == "CacheWarning"]}))
""")


def _run_in(cache_dir, script, *argv):
    """Run ``script`` in a new process on ``cache_dir`` (a crash fails the test, not pytest)."""
    env = dict(os.environ, XETILE_CACHE_DIR=str(cache_dir))
    proc = subprocess.run([sys.executable, "-c", script, *argv], env=env, capture_output=True, text=True, timeout=900,
                          cwd=REPO)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _instruction_starts(words: array.array) -> list[int]:
    """Word index of each instruction after the 5-word header."""
    starts, i = [], 5
    while i < len(words):
        starts.append(i)
        i += max(words[i] >> 16, 1)
    return starts


def _tamper(spirv: bytes, how: str) -> bytes:
    words = array.array("I", spirv)
    if how == "flip opcodes":                     # every OpIAdd (128) becomes OpFAdd (129)
        flipped = [i for i in _instruction_starts(words) if words[i] & 0xFFFF == 128]
        assert flipped, "the kernel has no OpIAdd to flip"
        for i in flipped:
            words[i] += 1
    elif how == "truncate":                       # cut in the middle of the functions
        del words[len(words) * 2 // 3:]
    else:                                         # garbage words between two instructions
        starts = _instruction_starts(words)
        middle = starts[len(starts) // 2]
        words[middle:middle] = array.array("I", [0xDEADBEEF, 0xFFFFFFFF, 0x00040000, 7])
    return words.tobytes()


def test_tampered_spirv_with_recomputed_checksum_is_rebuilt(tmp_path):
    """Cached kernel.spv files altered three ways (opcodes flipped, truncated, garbage words
    inserted) with their checksums recomputed, so the entries check out: a new process
    refuses each (spirv-val), with one one-line warning each, rebuilds and rewrites them,
    gets right results and does not crash; the next process loads the rewritten entries."""
    assert _run_in(tmp_path, _THREE_MATMULS, "compile") == {"compiles": 3, "cache_warnings": []}
    entries = sorted(p.parent for p in tmp_path.glob("*/kernel.spv"))
    tampered = {}
    for entry, how in zip(entries, ["flip opcodes", "truncate", "garbage words"], strict=True):
        spirv = tampered[entry.name] = _tamper((entry / "kernel.spv").read_bytes(), how)
        with pytest.raises(SpirvValidationError):
            spirv_tools.validate(spirv)             # the tampering did make it invalid
        (entry / "kernel.spv").write_bytes(spirv)
        manifest = json.loads((entry / "manifest.json").read_text())
        manifest["files"]["kernel.spv"] = hashlib.sha256(spirv).hexdigest()
        (entry / "manifest.json").write_text(json.dumps(manifest))
    result = _run_in(tmp_path, _THREE_MATMULS)
    assert result["compiles"] == 3 and len(result["cache_warnings"]) == 3
    for warning in result["cache_warnings"]:
        assert "is invalid (SpirvValidationError: spirv-val rejected the module" in warning and "\n" not in warning
    cache = KernelCache(tmp_path)
    for key, spirv in tampered.items():
        files = cache.get(key, check=cached_kernel_problem)
        assert files is not None and files["kernel.spv"] != spirv     # rewritten, and valid
    assert cache.stats.corrupt == 0


def test_validator_failing_to_run_means_invalid(monkeypatch):
    """An exception while running spirv-val (here: it cannot be started) is no proof of
    validity: the entry is refused."""
    def broken(*args, **kwargs):
        raise OSError("spirv-val could not be started")

    monkeypatch.setattr(spirv_tools, "_run_on_module", broken)
    abi = json.dumps({"name": "k", "target": "cpu-arc", "abi": KernelABI("k").to_json()})
    kernel_files = {"abi.json": abi.encode(), "kernel.spv": b"\x03\x02\x23\x07" + bytes(16)}
    assert cached_kernel_problem(kernel_files) == "OSError: spirv-val could not be started"


# --- compile warnings are kept with the entry and repeated on a hit -------------------------

def _split_gemm_binding():
    """(runtime args, specs, constants) of gemm_wg with one subgroup holding a 16x64 f32
    accumulator: too much for ARC's register budget, so the K loop is split (a warning)."""
    args = (np.zeros((32, 64), np.float16), np.zeros((64, 64), np.float16), np.zeros((32, 64), np.float32), 64)
    return gemm_wg_kernel.bind(args, dict(BM=16, BN=64, BK=32, SM=1, SN=1, PF=2, ACC=xt.float32))


_LOAD_SPLIT_GEMM = textwrap.dedent("""
    import json, warnings
    from xetile_dsl.jit import _disk_cache
    from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
    from tests.e2e.test_cache import _split_gemm_binding
    _, specs, constants = _split_gemm_binding()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gemm_wg_kernel.load_or_compile(specs, constants, "cpu-arc")
    s = _disk_cache().stats
    print(json.dumps({"compiles": s.compiles, "hits_disk": s.hits_disk,
                      "warnings": [[w.category.__name__, str(w.message), w.filename, w.lineno] for w in caught
                                   if w.category.__module__.startswith("xetile_dsl")]}))
""")


def test_compile_warnings_are_replayed_from_memory_and_from_disk(tmp_path, monkeypatch):
    """A kernel whose K loop is split warns when compiled; another @jit object of the same
    function (an in-memory hit) and a new process (a disk hit) give the same warning:
    category, message with the user's line, location."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    _, specs, constants = _split_gemm_binding()
    seen = []
    for _ in range(2):
        with pytest.warns(AccumulatorSplitWarning, match="runs in 2 passes") as record:
            xd.jit(gemm_wg_kernel.fn).load_or_compile(specs, constants, "cpu-arc")
        seen.append([[w.category.__name__, str(w.message), w.filename, w.lineno] for w in record
                     if w.category.__module__.startswith("xetile_dsl")])
    assert len(seen[0]) == 1 and "gemm_wg.py:" in seen[0][0][1] and seen[1] == seen[0]
    stats = jit_module._disk_cache().stats
    assert stats.compiles == 1 and stats.hits_memory == 1 and stats.hits_disk == 0
    disk = _run_in(tmp_path, _LOAD_SPLIT_GEMM)
    assert disk == {"compiles": 0, "hits_disk": 1, "warnings": seen[0]}
