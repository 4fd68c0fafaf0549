"""Element-wise GEMM epilogues with a broadcast bias row and a scale column do not spill
on ARC (dg2-g10) or PVC at any of the listed subgroup tiles, read from Intel's offline
compiler.  The ARC 16x64 piece splits its K loop in two (register
budget); the row broadcast used to be moved with the first copy's epilogue and its
per-lane column indices and masks stayed live through the second loop: 768 bytes of
spills (704 with the scale column).  Each kernel is compiled once per module."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from kernels.fused import gemm_epilogue
from xetile_dsl.tools import ocloc

SIG = {"a": "bf16[:,:]", "b": "bf16[:,:]", "bias": "f32[:,:]", "scale": "f32[:,:]", "c": "bf16[:,:]",
       "K": "i32"}
TILES = [(8, 16), (16, 16), (32, 32), (16, 64), (32, 64)]
EPILOGUES = {1: "plain", 2: "bias row + relu", 3: "scale column * acc + bias row + relu"}


def _spills(target: str, bm: int, bn: int) -> dict[str, int]:
    out = {}
    for epi, name in EPILOGUES.items():
        kernel = xd.compile(gemm_epilogue, SIG, {"BM": bm, "BN": bn, "BK": 16, "EPI": epi}, target=target)
        zebin = kernel.asm["zebin"]
        assert ocloc.check_isa(zebin, "gemm_epilogue", expect_dpas=True) == []
        out[name] = zebin.execution_env("gemm_epilogue").get("spill_size", 0)
    return out


@pytest.mark.parametrize("target", ["arc", "pvc"])
@pytest.mark.parametrize("tile", TILES, ids=lambda t: f"{t[0]}x{t[1]}")
def test_epilogues_spill_nothing_where_the_plain_gemm_does_not(target, tile, ocloc_path):
    spills = _spills(target, *tile)
    assert spills["plain"] == 0  # the premise: every listed tile fits as a plain GEMM
    assert spills == dict.fromkeys(EPILOGUES.values(), 0)
