"""benchmarks/vs_onednn.py: its FLOP formula and the peak table against hand-computed
values, and the CPU-device smoke mode end to end (CSV written, times real)."""
from __future__ import annotations

import csv
import importlib.util
import pathlib

import pytest

from xetile_dsl.targets.peaks import PEAKS, peak_for
from conftest_tools import require_dpnp, require_torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("vs_onednn", ROOT / "benchmarks" / "vs_onednn.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def test_gemm_flops_by_hand():
    assert bench.gemm_flops(1, 1, 1) == 2
    assert bench.gemm_flops(4096, 4096, 4096) == 137_438_953_472        # 2 * 2^36
    assert bench.gemm_flops(1, 5120, 13824) == 141_557_760              # 2 * 5120 * 13824
    # 2 * 2^36 flops in 1 ms = 137.438953472 TFLOPS, which is 16.384 % of 838.8608
    assert bench.tflops(137_438_953_472, 1e-3) == pytest.approx(137.438953472)
    assert bench.percent_of_peak(137.438953472, 838.8608) == pytest.approx(16.384)
    assert bench.percent_of_peak(1.0, None) is None


@pytest.mark.parametrize("name,dtype,tflops", [
    ("Intel(R) Data Center GPU Max 1550", "f16", 838.8608),    # 128 cores * 4096 * 1.6 GHz
    ("Intel(R) Data Center GPU Max 1550", "int8", 1677.7216),  # 128 * 8192 * 1.6
    ("Intel(R) Data Center GPU Max 1550", "tf32", 419.4304),   # 128 * 2048 * 1.6
    ("Intel(R) Data Center GPU Max 1100", "bf16", 355.5328),   # 56 * 4096 * 1.55
    ("Intel(R) Arc(TM) A770 Graphics", "f16", 137.6256),       # 32 * 2048 * 2.1
    ("Intel(R) Arc(TM) A770 Graphics", "int8", 275.2512),      # 32 * 4096 * 2.1
    ("Intel(R) Arc(TM) A750 Graphics", "f16", 117.5552),       # 28 * 2048 * 2.05
    ("NVIDIA H200", "f16", 989.42976),                         # 132 * 4096 * 1.83
    ("NVIDIA H200", "bf16", 989.42976),
    ("NVIDIA H100 80GB HBM3", "f16", 989.42976),
    ("NVIDIA H100 80GB HBM3", "int8", 1978.85952),             # 132 * 8192 * 1.83
])
def test_peak_table_by_hand(name, dtype, tflops):
    assert peak_for(name).tflops(dtype) == pytest.approx(tflops)


def test_peak_table_has_no_tf32_on_arc_and_no_unknown_devices():
    assert peak_for("Intel(R) Arc(TM) A770 Graphics").tflops("tf32") is None
    assert peak_for("Intel(R) Xeon(R) Platinum") is None
    assert peak_for("NVIDIA H200 NVL") is None and peak_for("NVIDIA H100 PCIe") is None
    assert {p.target for p in PEAKS} <= {"pvc", "arc", "sm90"}


def test_cpu_smoke_writes_csv(tmp_path, capsys):
    """``--device cpu``: one small shape, event-timed on the CPU device, into the CSV."""
    require_dpnp()
    out = tmp_path / "bench.csv"
    assert bench.main(["--device", "cpu", "--cases", "nt", "--shapes", "37x40x40", "--reps", "10",
                       "--csv", str(out), "--plot", str(tmp_path / "bench.png")]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 1 and rows[0]["case"] == "nt" and rows[0]["M"] == "37"
    assert float(rows[0]["xetile_ms"]) > 0 and rows[0]["xetile_error"] == ""
    assert float(rows[0]["xetile_tflops"]) == pytest.approx(2 * 37 * 40 * 40 / float(rows[0]["xetile_ms"]) / 1e9)
    said = capsys.readouterr().out
    assert "wrote" in said and ("wrote " + str(tmp_path / "bench.png") in said or "matplotlib" in said)


def test_attention_flops_by_hand():
    # Z=4, H=32, N=1024, D=64: 4 * 4 * 32 * 2^20 * 64 = 34_359_738_368; causal half
    assert bench.attention_flops(4, 32, 1024, 64, False) == 34_359_738_368
    assert bench.attention_flops(4, 32, 1024, 64, True) == 17_179_869_184


def test_onednn_columns_are_timed_only_with_an_xpu():
    """With a torch that has no XPU device (CI's), the oneDNN timers say "not available"
    (None) instead of touching torch.xpu, so the sweep still runs; with one, they time."""
    torch = require_torch()
    timed = (bench.time_onednn("f16", (64, 64, 64), "nn", 10),
             bench.time_onednn_attention((1, 1, 64, 64), True, 10))
    if torch.xpu.is_available():
        assert all(t is not None and t > 0 for t in timed)
    else:
        assert timed == (None, None)


def test_backward_without_a_gpu_prints_each_backward_kernels_isa_report(capsys, ocloc_path):
    """``--backward OP`` with no Intel GPU: the op's backward kernels' ISA reports on pvc
    (layer_norm: the partial-sum kernel and the column sum), after matmul's own."""
    assert bench.main(["--cases", "nt", "--isa-targets", "pvc", "--backward", "layer_norm"]) == 0
    said = capsys.readouterr().out
    assert "no Intel GPU here" in said
    for name in ("norm_backward_kernel", "column_sum_kernel"):
        assert f"== layer_norm backward: {name} f16 on pvc\nISA report: {name} on pvc" in said


def test_backward_cpu_smoke_times_the_backward_op(tmp_path):
    """``--device cpu --backward softmax``: the op's backward host-timed on the CPU device
    into the CSV (no FLOP count for a row op; torch's columns empty without XPU)."""
    require_dpnp()
    out = tmp_path / "bench.csv"
    assert bench.main(["--device", "cpu", "--cases", "nt", "--shapes", "37x40x40", "--backward", "softmax",
                       "--csv", str(out), "--plot", str(tmp_path / "bench.png")]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["case"] for r in rows] == ["nt", "bwd-softmax"]
    assert float(rows[1]["xetile_ms"]) > 0 and rows[1]["xetile_tflops"] == "" and rows[1]["onednn_ms"] == ""
