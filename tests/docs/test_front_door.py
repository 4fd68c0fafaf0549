"""What a new user meets first, outside the README's code: the command line's name and
listings, the ISA text's end, the progress line of long work and the test runner's
stages."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest_tools import missing
import xetile_dsl as xd
from xetile_dsl import __main__ as cli
from xetile_dsl import progress
from xetile_dsl.cli import explain
from xetile_dsl.errors import DeviceError, MissingStageError, ToolError
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.tools.disasm import trim_padding

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import run_stages  # noqa: E402 - the runner is a script, not a package module


@pytest.mark.parametrize("argv0,name", [("/venv/bin/xetile-dsl", "xetile-dsl"),
                                        ("/repo/xetile_dsl/__main__.py", "python -m xetile_dsl")])
def test_help_names_the_program_as_invoked(monkeypatch, argv0, name):
    monkeypatch.setattr(sys, "argv", [argv0, "--help"])
    assert cli.build_parser().format_usage().startswith(f"usage: {name} ")


def test_devices_lists_each_device_once(capsys):
    try:
        code = cli.main(["devices"])
    except DeviceError as exc:
        missing(f"no device to list ({exc})")
    out = capsys.readouterr().out
    if code != 0 or "[target:" not in out:
        missing(f"no device found: {out}")
    listed = [ln for ln in out.splitlines() if "[target:" in ln]
    assert len(listed) == len(set(listed)) and out.count("[target:") == len(listed)
    selected = out.splitlines()[-1]
    assert selected.startswith("selected: ") and selected.split()[1] in {ln.split()[0] for ln in listed}


def test_explain_loads_a_kernel_by_module_name():
    kernel, names = explain.load_kernel("xetile_dsl.kernels.gemm_wg:gemm_wg_kernel")
    assert kernel.__name__ == "gemm_wg_kernel" and "gemm_wg" in names
    with pytest.raises(explain.ExplainError, match="no such file or module: no_such_module"):
        explain.load_kernel("no_such_module:k")
    with pytest.raises(explain.ExplainError, match="its kernels: .*gemm_wg_kernel"):
        explain.load_kernel("xetile_dsl.kernels.gemm_wg:nope")


def test_the_isa_text_ends_at_the_last_instruction():
    text = "L0:\n        add (16|M0)  r1  r2  r3\n        illegal                \n        illegal\n\n"
    assert trim_padding(text) == "L0:\n        add (16|M0)  r1  r2  r3\n"
    assert trim_padding("        illegal\n") == ""


def test_long_work_prints_one_progress_line(monkeypatch, capsys):
    monkeypatch.setattr(progress, "PROGRESS_AFTER", 0.05)
    with progress.reported("compiling 'k' for pvc", lambda: "stage xegpu-blocking"):
        time.sleep(0.4)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("xetile_dsl: compiling 'k' for pvc: stage xegpu-blocking, ")
    with progress.reported("quick", lambda: "-"):
        pass
    time.sleep(0.1)
    monkeypatch.setenv("XETILE_PROGRESS", "0")
    with progress.reported("silenced", lambda: "-"):
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_a_long_compile_says_where_it_is(tmp_path):
    """A compile over the threshold prints its kernel, target and stage (threshold 0 here)."""
    code = ("import xetile_dsl as xd, xetile_dsl.progress as p\n"
            "from xetile_dsl.kernels.matmul import matmul_kernel\n"
            "p.PROGRESS_AFTER = 0.0\n"
            "xd.compile(matmul_kernel, {'a': 'f16[:,:]', 'b': 'f16[:,:]', 'c': 'f32[:,:]', 'K': 'i32'},\n"
            "           {'BM': 8, 'BN': 16, 'BK': 16}, target='cpu')\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "xetile_dsl: compiling 'matmul_kernel' for cpu: " in proc.stderr


def test_a_progress_timer_never_outlives_its_work():
    """The timer thread is joined when the work ends: a launch takes dpctl's C submit only
    while the process runs one thread, so a lingering timer would slow every launch."""
    import threading

    from xetile_dsl import progress

    before = threading.active_count()
    for _ in range(20):
        with progress.reported("nothing", lambda: "here"):
            pass
    assert threading.active_count() == before


def test_every_stage_folder_is_a_timed_job():
    stages = {d.name for d in run_stages.stage_dirs()}
    assert "docs" in stages
    untimed = sorted(s for s in stages if s not in run_stages.COLD_SECONDS and s != run_stages.LONG_STAGE)
    # cheap stages may be missing (they start last); the expensive ones must be listed
    assert not set(untimed) & {"docs", "ops", "lowering", "isa", "runtime", "suite"}, untimed


def test_the_runner_reads_pytest_progress():
    assert run_stages.PERCENT.search("tests/e2e/test_gemm.py ..F.                    [ 42%]\n").group(1) == "42"
    assert run_stages.PERCENT.search("============ 3 passed in 1.0s ============\n") is None


def test_without_ocloc_the_machine_code_says_how_to_get_it(monkeypatch, tmp_path):
    """No bare KeyError, and no pointer to a script that only a checkout has."""
    monkeypatch.setenv("XETILE_TOOLS_DIR", str(tmp_path))
    monkeypatch.delenv("XETILE_OCLOC", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    k = xd.compile(matmul_kernel, {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"},
                   {"BM": 8, "BN": 16, "BK": 16}, target="pvc")
    with pytest.raises(MissingStageError) as info:
        k.asm["isa"]
    with pytest.raises(ToolError) as report:
        k.report()
    for message in (str(info.value), str(report.value)):
        assert "python -m xetile_dsl install-tools" in message and "scripts/" not in message
