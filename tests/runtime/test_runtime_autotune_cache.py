"""Autotuning (checked candidates, remembered choices, a second process reuses them) and the
kernel cache under concurrent processes, plus ``python -m xetile_dsl cache list``."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.kernels.matmul import matmul_kernel

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def _env(cache_dir) -> dict:
    path = os.pathsep.join([str(ROOT), str(HERE), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, XETILE_CACHE_DIR=str(cache_dir), PYTHONPATH=path)


TUNE_SCRIPT = textwrap.dedent("""
    import numpy as np
    from tuned_kernels import tuned, grid
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (64, 64)).astype(np.float16)
    b = rng.integers(-2, 3, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    tuned[grid](a, b, c, 64)
    assert (c == a.astype(np.float32) @ b.astype(np.float32)).all()
    print(tuned.tuning_runs, sorted(next(iter(tuned.best.values())).kwargs.items()))
""")


def test_autotune_picks_a_config_and_a_second_process_reuses_it(tmp_path):
    run = lambda: subprocess.run([sys.executable, "-c", TUNE_SCRIPT], env=_env(tmp_path), capture_output=True,  # noqa: E731
                                 text=True, timeout=600)
    first = run()
    assert first.returncode == 0, first.stderr
    runs, chosen = first.stdout.split(" ", 1)
    assert runs == "1"
    assert first.stderr.count("[xetile_dsl autotune] matmul_kernel: ") == 4     # 3 configs + best
    memo, = (tmp_path / ".autotune").glob("matmul_kernel-*.json")
    data = json.loads(memo.read_text())
    assert [len(t) for t in data["timings_us"]] == [3, 3, 3]
    second = run()
    assert second.returncode == 0, second.stderr
    assert second.stdout.split(" ", 1) == ["0", chosen]                         # no re-tuning
    assert "autotune" not in second.stderr


def test_wrong_but_fast_config_is_not_trusted(tmp_path, monkeypatch):
    """The grid covers 64 rows only when BM = 32: BM = 16 computes half of C (fast and wrong)."""
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    configs = [xd.Config({"BM": 32, "BN": 32, "BK": 32}), xd.Config({"BM": 16, "BN": 32, "BK": 32})]
    tuned = xd.autotune(configs=configs, key=["K"], warmup=0, rep=2, progress=False)(matmul_kernel)
    rng = np.random.default_rng(1)
    a = rng.integers(-2, 3, (64, 64)).astype(np.float16)
    b = rng.integers(-2, 3, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    with pytest.warns(RuntimeWarning, match=r"Config\(BM=16, BN=32, BK=32\) disagrees with the "
                                            r"reference \(the interpreter\) on c; not used"):
        tuned[lambda meta: (2, 64 // meta["BN"])](a, b, c, 64)
    assert tuned.best[(64,)] is configs[0]
    assert [note for _, _, note in tuned.timings[(64,)]] == ["ok", "wrong result in c"]
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def test_autotune_pruning_and_key_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("XETILE_CACHE_DIR", str(tmp_path))
    configs = [xd.Config({"BM": 32, "BN": 32, "BK": 32}), xd.Config({"BM": 16, "BN": 16, "BK": 32})]
    seen = []

    def prune(cands, named):
        seen.append(sorted(named))
        return [c for c in cands if c.kwargs["BM"] == 16]

    tuned = xd.autotune(configs=configs, key=["K"], prune_configs_by={"early_config_prune": prune},
                        warmup=0, rep=1, progress=False)(matmul_kernel)
    a = np.ones((32, 32), np.float16)
    c = np.zeros((32, 32), np.float32)
    tuned[lambda m: (32 // m["BM"], 32 // m["BN"])](a, a, c, 32)
    assert tuned.best[(32,)] is configs[1] and seen == [["K", "a", "b", "c"]]
    assert (c == 32).all()
    bad = xd.autotune(configs=configs, key=["M"], progress=False)(matmul_kernel)
    with pytest.raises(xd.XeTileError, match=r"autotune key 'M' is not an argument of this launch \(arguments: "
                                            r"a, b, c, K\)"):
        bad[(1, 1)](a, a, c, 32)


WORKER = textwrap.dedent("""
    import sys, numpy as np
    import xetile_dsl as xd, xetile_dsl.language as xt
    from xetile_dsl import compiler

    @xd.jit
    def race(a, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr):
        pid_m = xt.program_id(0)
        pid_n = xt.program_id(1)
        ta = xt.init_tile(a, [pid_m * BM, 0], [BM, BK])
        tb = xt.init_tile(b, [0, pid_n * BN], [BK, BN])
        acc = xt.zeros([BM, BN], xt.float32)
        for k in range(0, K, BK):
            acc = xt.tile_mma(xt.load_tile(ta), xt.load_tile(tb), acc)
            ta = xt.update_tile_offset(ta, 0, BK)
            tb = xt.update_tile_offset(tb, BK, 0)
        xt.store_tile(acc, xt.init_tile(c, [pid_m * BM, pid_n * BN], [BM, BN]))

    seed = int(sys.argv[1])
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, (64, 64)).astype(np.float16)
    b = rng.integers(-2, 3, (64, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    race[(2, 2)](a, b, c, 64, BM=32, BN=32, BK=32)
    assert (c == a.astype(np.float32) @ b.astype(np.float32)).all(), "wrong result"
    print("ok")
""")


def test_four_processes_compile_the_same_kernel_at_once(tmp_path):
    script = tmp_path / "race_kernel.py"            # a file: the frontend reads the kernel's source
    script.write_text(WORKER)
    cache = tmp_path / "cache"
    procs = [subprocess.Popen([sys.executable, str(script), str(i)], env=_env(cache), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(4)]
    results = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0 and out.strip() == "ok", err
    entries = [e for e in cache.iterdir() if e.is_dir() and (e / "kernel.spv").exists()]
    assert len(entries) == 1
    programs = [e for e in cache.iterdir() if e.is_dir() and (e / "program.bin").exists()]
    assert len(programs) == 1                                 # the built program, stored once
    from xetile_dsl.runtime.cache import KernelCache

    files = KernelCache(cache).get(entries[0].name)          # verified: checksums match
    assert files is not None and files["kernel.spv"][:4] == b"\x03\x02\x23\x07"
    listing = subprocess.run([sys.executable, "-m", "xetile_dsl", "cache", "list"], env=_env(cache),
                             capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert lines[0].endswith(": 2 entries")                  # the kernel and its built program
    kernel_line = next(line for line in lines[1:] if "cpu-pvc" in line)
    name, target, size = kernel_line.split()[1:4]
    assert (name, target) == ("race", "cpu-pvc") and int(size) > 1000
