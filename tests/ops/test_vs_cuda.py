"""benchmarks/vs_cuda.py without a GPU: its GEMM shape list and FLOP counts by hand, the
time budget's section deadlines on a fake clock, the table's % of peak, and the plot
writer on synthetic rows (a PNG with matplotlib, the one-line refusal without it)."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

from conftest_tools import require_torch

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    require_torch()
    spec = importlib.util.spec_from_file_location("vs_cuda", ROOT / "benchmarks" / "vs_cuda.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gemm_shapes_and_flops_by_hand(bench):
    shapes = bench.gemm_shapes()
    assert [s[1:] for s in shapes if s[0] == "square"] == [(1024,) * 3, (2048,) * 3, (4096,) * 3, (8192,) * 3]
    # tokens x 4096 x 4096; 4096 tokens is the 4096 square, listed once
    assert [s[1] for s in shapes if s[0] == "tokens"] == [1, 16, 128, 512, 2048, 16384]
    assert {s[1:] for s in shapes if s[0] == "tokens"} <= {(t, 4096, 4096) for t in bench.LLM_TOKENS}
    assert [s[1:] for s in shapes if s[0] == "mlp"] == [(4096, 28672, 8192), (4096, 8192, 28672)]
    assert len({s[1:] for s in shapes}) == len(shapes) == 12
    assert bench.gemm_flops(4096, 28672, 8192) == 1_924_145_348_608       # 2 * 2^12 * 7 * 2^12 * 2^13
    assert bench.gemm_flops(1, 4096, 4096) == 33_554_432                  # 2 * 2^24
    # 2 * 2^30 flops in 2.5 ms: 858.99 TFLOP/s; a missing time stays nan
    assert bench.tflops(2 * 2 ** 30, 2.5e-3) == pytest.approx(858.9934592)
    assert bench.tflops(1.0, float("nan")) != bench.tflops(1.0, float("nan"))
    assert bench.reps_for(bench.gemm_flops(8192, 8192, 8192)) == bench.BIG_REPS
    assert bench.reps_for(bench.gemm_flops(4096, 4096, 4096)) == bench.REPS
    quick = bench.gemm_shapes(quick=True)
    assert set(quick) < set(shapes) and ("tokens", 1, 4096, 4096) in quick


def test_budget_shares_what_is_left(bench):
    now = [0.0]
    budget = bench.Budget(100.0, ["gemm", "attention", "rows", "cutile"], start=0.0, clock=lambda: now[0])
    assert budget.section("gemm") == pytest.approx(50.0)                  # 0.5 of 100
    now[0] = 50.0
    assert budget.section("attention") == pytest.approx(80.0)             # 50 + 50 * 0.3 / 0.5
    now[0] = 60.0                                                         # attention ended early
    assert budget.section("rows") == pytest.approx(90.0)                  # 60 + 40 * 0.15 / 0.2
    now[0] = 95.0
    assert budget.section("cutile") == pytest.approx(100.0)               # the rest
    now[0] = 120.0                                                        # past the end: no time
    late = bench.Budget(10.0, ["rows"], start=0.0, clock=lambda: now[0])
    assert late.section("rows") == pytest.approx(120.0)
    only = bench.Budget(60.0, ["attention", "cutile"], start=0.0, clock=lambda: 0.0)
    assert only.section("attention") == pytest.approx(60.0 * 0.3 / 0.35)


def _synthetic():
    gemm = [{"dtype": d, "kind": "square", "M": s, "N": s, "K": s, "shape": f"{s}x{s}x{s}", "ours": 480.0,
             "triton": 600.0, "cublas": 700.0, "ours_err": 1e-4, "triton_err": 2e-4, "triton_config": "128x256x64 w8 s3"}
            for d in ("f16", "bf16") for s in (1024, 2048)]
    gemm.append({"dtype": "f16", "kind": "mlp", "M": 4096, "N": 28672, "K": 8192, "shape": "4096x28672x8192",
                 "skipped": True})
    attention = [{"case": "Z4 H32 N4096 D128 causal", "ours": 300.0, "triton": 400.0, "sdpa": 500.0,
                  "triton_config": (128, 128, 8, 3)}, {"case": "Z1 H32 N16384 D64 full", "skipped": True}]
    rows = [{"op": op, "who": who, "copy_pct": pct, "gbs": 3000.0} for op in ("softmax", "layer_norm", "rms_norm")
            for who, pct in (("ops", 95.0), ("triton", 90.0), ("torch", 60.0))]
    return {"gemm": gemm, "attention": attention, "rows": rows, "title": "synthetic"}


def test_gemm_table_percent_of_peak(bench):
    lines = bench.gemm_lines(_synthetic()["gemm"], {"f16": 989.4, "bf16": None})
    f16 = next(line for line in lines if line.startswith("f16 1024x1024x1024"))
    assert "48.5%" in f16 and "60.6%" in f16 and "70.7%" in f16            # 480, 600, 700 of 989.4
    assert "0.800" in f16 and "0.686" in f16                               # ours / triton, ours / cublas
    bf16 = next(line for line in lines if line.startswith("bf16 1024x1024x1024"))
    assert "%" not in bf16                                                 # no peak: no percentages
    assert any(line.startswith("f16 4096x28672x8192") and "skipped" in line for line in lines)


def test_plot_writes_png_or_says_why(bench, tmp_path):
    path = tmp_path / "vs_cuda.png"
    said = bench.write_plot(_synthetic(), str(path), {"f16": 989.4, "bf16": 989.4})
    empty = bench.write_plot({"gemm": [], "attention": [{"case": "x", "skipped": True}]}, str(tmp_path / "e.png"))
    if importlib.util.find_spec("matplotlib") is None:
        assert said.startswith("plot: not written") and "matplotlib" in said and not path.exists()
    else:
        assert said == f"plot: wrote {path}"
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000
        assert empty == "plot: not written (no timed rows)"
    assert not (tmp_path / "e.png").exists()


def test_plot_without_matplotlib_is_one_line(bench, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)                   # import matplotlib raises
    said = bench.write_plot(_synthetic(), str(tmp_path / "x.png"))
    assert said.startswith("plot: not written") and "matplotlib" in said and "\n" not in said
    assert not (tmp_path / "x.png").exists()


def test_attention_rows_say_how_far_ours_is_from_sdpa(bench):
    """The attention table's last column: ours' output against SDPA's (relative norm); a
    row past two f16 roundings' worth (4 units each) is marked WRONG, so a timing of a
    kernel that computes something else cannot pass for a result."""
    import torch
    import vs_cuda_attention as va
    assert va.ATTENTION_TOL == pytest.approx(8 * 2.0 ** -11)
    ref = torch.ones(4, 8, dtype=torch.float16)
    assert va.output_error(ref, ref) == 0.0
    assert va.output_error(ref * 1.5, ref) == pytest.approx(0.5)
    assert va.output_error(None, ref) != va.output_error(None, ref)       # nan: it did not run
    rows = [{"case": "Z4 H32 N4096 D128 causal", "ours": 300.0, "triton": 400.0, "sdpa": 500.0,
             "triton_config": (128, 128, 8, 3), "err": 1.2e-3},
            {"case": "Z4 H32 N1024 D64 causal", "ours": 120.0, "triton": 160.0, "sdpa": 180.0,
             "triton_config": (64, 64, 4, 4), "err": 2.7e-1}]
    header, good, bad = va.attention_lines(rows)
    assert header.endswith("err vs sdpa")
    assert good.endswith("1.20e-03") and "WRONG" not in good and "0.750" in good
    assert bad.endswith("2.70e-01  WRONG")


def test_gemm_rows_past_two_roundings_are_marked_wrong(bench):
    rows = _synthetic()["gemm"][:2]
    rows = [dict(rows[0], ours_err=3e-3), dict(rows[1], ours_err=5e-3)]          # f16 1024, f16 2048
    good, bad = (line for line in bench.gemm_lines(rows, {"f16": 989.4}) if line.startswith("f16"))
    assert bench.GEMM_TOL["f16"] == pytest.approx(8 * 2.0 ** -11) and bench.GEMM_TOL["bf16"] == 8 * 2.0 ** -8
    assert not good.endswith("WRONG") and bad.endswith("  WRONG")
    assert not any(line.endswith("WRONG") for line in bench.gemm_lines(_synthetic()["gemm"], {}))
