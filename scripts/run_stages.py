"""Run the test suite as one pytest process per job on every core, longest jobs first.

A job is a stage folder of tests/ (codegen, isa, ...), except the end-to-end stage, which
is the longest by far and is cut into E2E_CHUNKS jobs of whole files of about equal cold
time (COLD_SECONDS: each file to the chunk with the least time so far, longest file first).
Jobs start longest first by the same table, so the cores stay busy to the end. Separate
processes keep what the LLVM SPIR-V backend and the OpenCL CPU runtime accumulate per
process apart, and a crash in one job cannot hide the others' results; the disk cache
(XETILE_CACHE_DIR, SPIR-V and built programs) is what jobs share. Each job prints a line
when it starts and its progress (pytest's percentage of the job's tests) at most every
PROGRESS_SECONDS while it runs; its output is printed whole when it ends, and again as a
one-line summary at the end. Extra arguments go to every pytest.

    python scripts/run_stages.py [-j N] [pytest args...]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
LONG_STAGE = "e2e"
#: seconds between two progress lines of one job
PROGRESS_SECONDS = 30
#: pytest's progress mark at the end of a line of test results, ``[ 42%]``
PERCENT = re.compile(r"\[\s*(\d+)%\]\s*$")
E2E_CHUNKS = 4
#: cold seconds (empty XETILE_CACHE_DIR) per stage folder (a 2-core run) and per e2e file
#: (its program builds, from ``pytest --build-log``, one job at a time on a shared
#: machine); only the order and ratios matter. An e2e file missing here counts as the
#: median e2e file, a stage missing here starts last.
COLD_SECONDS = {
    "lowering": 451, "ops": 281, "suite": 270, "isa": 224, "runtime": 122, "docs": 105, "codegen": 73, "fuzz": 80,
    "e2e/test_lowering_gaps.py": 350, "e2e/test_register_transpose.py": 303,
    "e2e/test_conv_rounds.py": 282, "e2e/test_gemm.py": 131, "e2e/test_chained_mma.py": 125,
    "e2e/test_moved_row_access.py": 100, "e2e/test_slm_scattered.py": 69, "e2e/test_gemm_wg.py": 66,
    "e2e/test_sg_transpose.py": 65, "e2e/test_padding_transposed_gather.py": 59,
    "e2e/test_index_ops.py": 58, "e2e/test_named_barriers.py": 49, "e2e/test_workgroup_slm.py": 48,
    "e2e/test_gemm_two_level.py": 43, "e2e/test_transposed.py": 39, "e2e/test_scattered.py": 37,
    "e2e/test_split_accumulators.py": 36, "e2e/test_broadcast_operands.py": 33,
    "e2e/test_narrow_tiles.py": 28, "e2e/test_half_math.py": 19, "e2e/test_gemm_bt_reduce.py": 17,
    "e2e/test_minmax_constants.py": 8, "e2e/test_scalar_widths.py": 7,
    "e2e/test_bool_to_float.py": 5, "e2e/test_scalar_ops.py": 3, "e2e/test_num_subgroups.py": 1,
}


def stage_dirs() -> list[Path]:
    return sorted(d for d in TESTS.iterdir() if d.is_dir() and any(d.glob("test_*.py")))


def _seconds(key: str) -> float:
    """Cold seconds of a stage or e2e file (``COLD_SECONDS``; unknown: see there)."""
    if key in COLD_SECONDS or not key.startswith(f"{LONG_STAGE}/"):
        return COLD_SECONDS.get(key, 0.0)
    files = sorted(v for k, v in COLD_SECONDS.items() if k.startswith(f"{LONG_STAGE}/"))
    return files[len(files) // 2] if files else 1.0


def _chunks(files: list[Path]) -> list[tuple[float, list[str]]]:
    """``files`` in E2E_CHUNKS groups of about equal cold time: longest file first, each
    to the group with the least time so far; (seconds, sorted paths) per non-empty group."""
    groups: list[tuple[float, list[str]]] = [(0.0, []) for _ in range(E2E_CHUNKS)]
    for f in sorted(files, key=lambda f: (-_seconds(f"{LONG_STAGE}/{f.name}"), f.name)):
        i = min(range(E2E_CHUNKS), key=lambda i: groups[i][0])
        groups[i] = (groups[i][0] + _seconds(f"{LONG_STAGE}/{f.name}"), groups[i][1] + [str(f.relative_to(ROOT))])
    return [(seconds, sorted(paths)) for seconds, paths in groups if paths]


def jobs() -> list[tuple[str, list[str]]]:
    """(label, pytest targets), longest first (by ``COLD_SECONDS``)."""
    found = {d.name: d for d in stage_dirs()}
    timed = []
    if LONG_STAGE in found:
        chunks = _chunks(sorted(found.pop(LONG_STAGE).glob("test_*.py")))
        for i, (seconds, paths) in enumerate(chunks):
            timed.append((seconds, f"{LONG_STAGE}[{i + 1}/{len(chunks)}]", paths))
    for name, folder in sorted(found.items()):
        timed.append((_seconds(name), name, [str(folder.relative_to(ROOT))]))
    timed.sort(key=lambda job: -job[0])
    return [(label, targets) for _, label, targets in timed]


def run_job(label: str, targets: list[str], pytest_args: list[str], lock: threading.Lock) -> tuple[int, str]:
    """Run one job's pytest; (exit code, its whole output).  pytest ends each test file's
    line of results with the job's percentage done; while the job runs that percentage
    (and the failures so far) is printed at most every PROGRESS_SECONDS, and at 100%."""
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *targets, "-p", "no:cacheprovider", *pytest_args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    start = last_shown = time.monotonic()
    lines, failed = [], 0
    for line in proc.stdout:
        lines.append(line)
        mark = PERCENT.search(line)
        if not mark:
            continue
        results = line[:mark.start()].split()
        failed += sum(word.count("F") + word.count("E") for word in results[1 if len(results) > 1 else 0:])
        now = time.monotonic()
        if now - last_shown >= PROGRESS_SECONDS or mark.group(1) == "100":
            last_shown = now
            with lock:
                print(f"-- {label}: {mark.group(1)}% after {now - start:.0f} s"
                      f"{f', {failed} failed so far' if failed else ''}", flush=True)
    return proc.wait(), "".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", type=int, default=os.cpu_count() or 1, help="jobs at once (default: the cores)")
    opts, pytest_args = parser.parse_known_args()
    lock = threading.Lock()
    results: dict[str, tuple[int, float, str]] = {}

    def run(job: tuple[str, list[str]]) -> None:
        label, targets = job
        start = time.monotonic()
        with lock:
            print(f"-- {label}: started", flush=True)
        code, output = run_job(label, targets, pytest_args, lock)
        elapsed = time.monotonic() - start
        last = [ln.strip("= ") for ln in output.strip().splitlines()[-1:]] or [""]
        with lock:
            results[label] = (code, elapsed, last[0])
            print(f"== {label} ({elapsed:.0f} s, exit {code})\n{output}", flush=True)

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
