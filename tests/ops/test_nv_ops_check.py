"""benchmarks/nv_ops_check.py's own machinery, run on CPU tensors in the interpreter
(``NV_CHECK_DEVICE=cpu XETILE_INTERPRET=1``): each case's inputs come from a generator
seeded by its name (the same lines whatever ran before it), and a run restarted after a
case (what the script does when a case leaves the CUDA context unusable) goes on after
that case with the counts so far."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "benchmarks", "nv_ops_check.py")
DECODE = "decode_attention float32 2 seqs, 4/2 heads, blocks of 16"


def _run(only: str, **env) -> tuple[int, list[str]]:
    full = dict(os.environ, NV_CHECK_DEVICE="cpu", XETILE_INTERPRET="1", **env)
    done = subprocess.run([sys.executable, SCRIPT, only], capture_output=True, text=True, env=full, timeout=600)
    return done.returncode, [line for line in done.stdout.splitlines() if line.startswith(("check", "summary"))]


def test_cases_are_seeded_by_name():
    rc, alone = _run("decode_attention float32")
    assert rc == 0 and alone[-1] == "summary: 2 ok, 0 FAIL, 0 refused"
    _, after_others = _run("float32")            # the float32 cases before it draw numbers too
    decode_lines = [line for line in after_others if line.startswith("check decode_attention float32")]
    assert decode_lines == alone[:-1]


def test_a_restarted_run_goes_on_after_its_case():
    rc, lines = _run("decode_attention float32", NV_CHECK_AFTER=DECODE, NV_CHECK_COUNTS="3,1,2")
    assert lines == ["summary: 3 ok, 1 FAIL, 2 refused"] and rc == 1
    _, lines = _run("float32", NV_CHECK_AFTER="attention float32 causal, lse, backward (GQA 4/2, N=200, D=64)",
                    NV_CHECK_COUNTS="0,0,0")
    names = [re.match(r"check (\S+ \S+)", line).group(1) for line in lines if line.startswith("check")]
    assert names[0] == "matmul_wq float32" and "rope neox" not in names and names.count("decode_attention float32") == 2


def test_an_unusable_context_restarts_the_script(monkeypatch):
    """A failing case after which ``torch.cuda.synchronize`` raises: the script execs
    itself with the case's name and the counts (the failure counted)."""
    import torch
    monkeypatch.setattr(sys, "argv", [SCRIPT, "-k", "only this"])
    spec = importlib.util.spec_from_file_location("nv_ops_check_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    execs = []
    monkeypatch.setattr(mod, "DEV", "cuda")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: (_ for _ in ()).throw(RuntimeError("illegal address")))
    monkeypatch.setattr(os, "execve", lambda path, argv, env: execs.append((argv, env)))

    def boom(name):
        raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")
    mod.case("only this case")(boom)
    (argv, env), = execs
    assert argv[1:] == [SCRIPT, "-k", "only this"] and env["NV_CHECK_AFTER"] == "only this case"
    assert env["NV_CHECK_COUNTS"] == "0,1,0"
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    mod.case("only this one too")(boom)          # the context still works: no restart
    assert len(execs) == 1
