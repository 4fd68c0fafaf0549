"""Run the test suite as one pytest process per job on every core, longest jobs first.

A job is a stage folder of tests/ (codegen, isa, ...), except the end-to-end stage, which
is the longest by far and is cut into E2E_CHUNKS jobs of whole files (round robin over the
sorted names, so the GEMM files spread out). Separate processes keep what the LLVM SPIR-V
backend and the OpenCL CPU runtime accumulate per process apart, and a crash in one job
cannot hide the others' results; the disk cache (XETILE_CACHE_DIR, SPIR-V and built
programs) is what jobs share. Each job's output is printed whole when it ends, and again
as a one-line summary at the end. Extra arguments go to every pytest.

    python scripts/run_stages.py [-j N] [pytest args...]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
LONG_STAGE = "e2e"
E2E_CHUNKS = 3
#: stages started first (the rest follow in name order): the longest, measured on 2 cores
FIRST = ("ops", "isa", "lowering", "runtime", "suite")


def stage_dirs() -> list[Path]:
    return sorted(d for d in TESTS.iterdir() if d.is_dir() and any(d.glob("test_*.py")))


def jobs() -> list[tuple[str, list[str]]]:
    """(label, pytest targets), longest first."""
    found = {d.name: d for d in stage_dirs()}
    result = []
    if LONG_STAGE in found:
        files = sorted(found.pop(LONG_STAGE).glob("test_*.py"))
        for i in range(E2E_CHUNKS):
            chunk = [str(f.relative_to(ROOT)) for f in files[i::E2E_CHUNKS]]
            if chunk:
                result.append((f"{LONG_STAGE}[{i + 1}/{E2E_CHUNKS}]", chunk))
    for name in [n for n in FIRST if n in found] + sorted(n for n in found if n not in FIRST):
        result.append((name, [str(found[name].relative_to(ROOT))]))
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", type=int, default=os.cpu_count() or 1, help="jobs at once (default: the cores)")
    opts, pytest_args = parser.parse_known_args()
    lock = threading.Lock()
    results: dict[str, tuple[int, float, str]] = {}

    def run(job: tuple[str, list[str]]) -> None:
        label, targets = job
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider", *pytest_args],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        elapsed = time.monotonic() - start
        last = proc.stdout.strip().splitlines()[-1:] or [""]
        with lock:
            results[label] = (proc.returncode, elapsed, last[0])
            print(f"== {label} ({elapsed:.0f} s, exit {proc.returncode})\n{proc.stdout}", flush=True)

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, opts.j)) as pool:
        list(pool.map(run, jobs()))
    print(f"== summary ({time.monotonic() - start:.0f} s on {opts.j} jobs at once)")
    for label, (code, elapsed, last) in results.items():
        print(f"{label:14} {elapsed:6.0f} s  exit {code}  {last}")
    codes = [code for code, _, _ in results.values()]
    failed = [c for c in codes if c not in (0, 5)]   # 5: a job whose filter selected no test
    if failed:
        return failed[0]
    return 0 if 0 in codes else 5


if __name__ == "__main__":
    sys.exit(main())
