"""The program-binary cache (runtime/program_cache.py): a built program is stored beside
the SPIR-V and loaded again instead of being rebuilt; a stored binary the runtime refuses,
or a damaged entry, is rebuilt with a warning, never trusted."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from spirv_kernels import AXPY2D, build_spirv
from xetile_dsl.runtime import program_cache
from xetile_dsl.runtime.abi import ArrayParam, KernelABI, ScalarParam
from xetile_dsl.runtime.cache import CacheWarning
from xetile_dsl.runtime.devices import get_device
from xetile_dsl.runtime.launchers import Launcher

AXPY_ABI = KernelABI("axpy2d", (ArrayParam("x", "f32", 2, written=False), ArrayParam("y", "f32", 2),
                                ScalarParam("alpha", "f32"), ScalarParam("beta", "i32")),
                     workgroup_size=8, pitch_align_bytes=16, min_width_bytes=16)


@pytest.fixture(params=["dpctl", "pyopencl"])
def launcher(request, tmp_path, monkeypatch):
    """A launcher whose programs go to a cache of its own (empty at the start)."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    return Launcher(get_device("opencl:cpu", request.param))


def _counts() -> dict:
    return dict(program_cache.stats)


def _delta(before: dict) -> dict:
    return {k: program_cache.stats[k] - before[k] for k in before}


def _check_axpy(kernel) -> None:
    """y = alpha * x + y + beta, against numpy (exact: one rounding of f32 fma-free math)."""
    x = np.arange(5 * 13, dtype=np.float32).reshape(5, 13) / 7
    y = np.full((5, 13), 0.5, np.float32)
    expected = np.float32(2.0) * x + y + np.float32(3)
    kernel((2, 5), [x, y, 2.0, 3])
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def _program_entries(directory) -> list:
    return [e for e in directory.iterdir() if (e / program_cache.BINARY_FILE).exists()]


def test_built_program_is_stored_and_loaded_from_disk(launcher, tmp_path):
    spirv = build_spirv(AXPY2D)
    before = _counts()
    _check_axpy(launcher.build(spirv, AXPY_ABI))
    assert _delta(before) == {"loaded": 0, "built": 1, "refused": 0}
    (entry,) = _program_entries(tmp_path)
    record = json.loads((entry / program_cache.RECORD_FILE).read_text())
    assert record["spirv_sha256"] == hashlib.sha256(spirv).hexdigest()
    assert record["device"]["driver"]               # keyed per driver version
    program_cache._cache().memory.clear()                   # as a new process would: from disk
    before = _counts()
    _check_axpy(launcher.build(spirv, AXPY_ABI))
    assert _delta(before) == {"loaded": 1, "built": 0, "refused": 0}


def _rewrite_binary(entry, data: bytes, fix_checksum: bool) -> None:
    (entry / program_cache.BINARY_FILE).write_bytes(data)
    if fix_checksum:       # the cache's own check passes: only the runtime can refuse it
        manifest = json.loads((entry / "manifest.json").read_text())
        manifest["files"][program_cache.BINARY_FILE] = hashlib.sha256(data).hexdigest()
        (entry / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("damage", ["truncated", "garbage", "checksum"])
def test_bad_binary_is_rebuilt_with_a_warning(launcher, tmp_path, damage):
    spirv = build_spirv(AXPY2D)
    launcher.build(spirv, AXPY_ABI)
    (entry,) = _program_entries(tmp_path)
    good = (entry / program_cache.BINARY_FILE).read_bytes()
    bad = {"truncated": good[: len(good) // 2], "garbage": bytes(range(256)) * 64,
           "checksum": good[:-1] + bytes([good[-1] ^ 1])}[damage]
    _rewrite_binary(entry, bad, fix_checksum=damage != "checksum")
    program_cache._cache().memory.clear()
    before = _counts()
    with pytest.warns(CacheWarning, match="rebuilt"):
        kernel = launcher.build(spirv, AXPY_ABI)
    _check_axpy(kernel)
    assert _delta(before)["built"] == 1 and _delta(before)["loaded"] == 0
    (entry,) = _program_entries(tmp_path)           # replaced by the rebuilt program
    assert (entry / program_cache.BINARY_FILE).read_bytes() != bad
    program_cache._cache().memory.clear()
    before = _counts()
    _check_axpy(launcher.build(spirv, AXPY_ABI))
    assert _delta(before) == {"loaded": 1, "built": 0, "refused": 0}


def test_record_of_another_program_is_not_loaded(launcher, tmp_path):
    """An entry whose record names other build options is a miss, never loaded."""
    spirv = build_spirv(AXPY2D)
    launcher.build(spirv, AXPY_ABI)
    (entry,) = _program_entries(tmp_path)
    record = json.loads((entry / program_cache.RECORD_FILE).read_text())
    record["options"] = "-cl-fast-relaxed-math"
    data = json.dumps(record, sort_keys=True).encode()
    (entry / program_cache.RECORD_FILE).write_bytes(data)
    manifest = json.loads((entry / "manifest.json").read_text())
    manifest["files"][program_cache.RECORD_FILE] = hashlib.sha256(data).hexdigest()
    (entry / "manifest.json").write_text(json.dumps(manifest))
    program_cache._cache().memory.clear()
    before = _counts()
    with pytest.warns(CacheWarning, match="another program"):
        _check_axpy(launcher.build(spirv, AXPY_ABI))
    assert _delta(before)["built"] == 1


def test_a_new_process_loads_the_program(tmp_path):
    """Two processes, one cache: the second loads the binary the first built."""
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from spirv_kernels import AXPY2D, build_spirv
        from test_program_cache import AXPY_ABI, _check_axpy
        from xetile_dsl.runtime import program_cache
        from xetile_dsl.runtime.devices import get_device
        from xetile_dsl.runtime.launchers import Launcher
        _check_axpy(Launcher(get_device("opencl:cpu", "dpctl")).build(build_spirv(AXPY2D), AXPY_ABI))
        print(program_cache.stats["loaded"], program_cache.stats["built"])
    """)
    here = str(Path(__file__).parent)
    env = dict(os.environ, XETILE_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script, here], capture_output=True, text=True, env=env)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    assert [run.stdout.split() for run in runs] == [["0", "1"], ["1", "0"]]
