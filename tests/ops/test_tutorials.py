"""The tutorials in examples/ run (in the interpreter: fast) and pass their own checks,
which compare against numpy within bounds derived in each file."""
from __future__ import annotations

import pathlib
import runpy
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
TUTORIALS = sorted(p.name for p in EXAMPLES.glob("tutorial_*.py"))


def test_the_five_tutorials_exist():
    topics = ("vector_add", "fused_softmax", "gemm_epilogue", "layer_norm", "flash_attention")
    assert all(any(topic in name for name in TUTORIALS) for topic in topics), TUTORIALS


@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial_runs(name, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [name, "--interpret"])
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert capsys.readouterr().out.strip()
