"""Register transposes (lane shuffles) compiled by Intel's offline compiler for pvc and
dg2-g10: no SLM message, no SLM allocation, no barrier, no spill; the shuffles are indirect
register reads and the lane rotations ``sel`` instructions. The SLM path, where it is still
chosen (operand A), keeps its SLM messages."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from kernels.computed_transposes import (matmul_at_computed_kernel, transpose_accumulate_kernel,
                                                   workgroup_transpose_computed_kernel)
from kernels.subgroup_transposes import matmul_bt_computed_kernel, transpose_computed_kernel
from xetile_dsl.tools import ocloc

SLM_ACCESS = r"\b(?:load|store)\.slm\b"
BARRIER = r"\bsync\.bar\b"
INDIRECT_READ = r"r\[a0\.\d+\]<1,0>"  # a per-lane indirect register read: a shuffle (or IGC's own moves)
SIMD = {"pvc": 16, "arc": 8}
#: [M, N] f32 sources per target: 2 squares on pvc (16 lanes), 8 on dg2-g10 (8 lanes)
SHAPE = {"pvc": (32, 16), "arc": (32, 16)}


def _no_slm(compiled, name: str, target: str, expect_dpas: bool) -> dict:
    isa, zebin = compiled.asm["isa"], compiled.asm["zebin"]
    assert ocloc.check_isa(zebin, name, expect_dpas=expect_dpas, expect_simd=SIMD[target]) == []  # no spill too
    env = zebin.execution_env(name)
    assert env.get("slm_size", 0) == 0
    assert ocloc.count(isa, SLM_ACCESS) == 0 and ocloc.count(isa, BARRIER) == 0
    return env


@pytest.mark.parametrize("target", ["pvc", "arc"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_computed_transpose_has_no_slm_and_no_spill(target, dtype, ocloc_path):
    M, N = SHAPE[target]
    compiled = xd.compile(transpose_computed_kernel, {"x": f"{dtype}[:,:]", "y": f"{dtype}[:,:]"},
                          {"M": M, "N": N}, target=target)
    env = _no_slm(compiled, "transpose_computed_kernel", target, expect_dpas=False)
    assert env["grf_count"] == (128 if target == "pvc" else 256)
    lanes = SIMD[target]
    squares = (M // lanes) * (N // lanes)
    word_squares = squares // 2 if dtype == "f16" else squares  # 16-bit squares go in packed pairs
    log2 = lanes.bit_length() - 1
    isa = compiled.asm["isa"]
    # per square of words: two rotations of log2(L) selects over L words, L - 1 shuffles.
    # IGC emits some of ARC's as predicated moves: 340 sel for the 384 written (the 470
    # counted before included the guard selects of the per-lane gathers that subgroup
    # block reads replaced), so ARC is held to one rotation's worth
    rotations = 2 if target == "pvc" else 1
    assert ocloc.count(isa, r"\bsel\b") >= word_squares * rotations * log2 * lanes
    assert ocloc.count(isa, INDIRECT_READ) >= word_squares * (lanes - 1)


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_transpose_in_a_loop_has_no_slm_and_no_spill(target, ocloc_path):
    M, N = (32, 32) if target == "pvc" else (16, 32)
    compiled = xd.compile(transpose_accumulate_kernel, {"x": "f32[:,:]", "y": "f32[:,:]", "STEPS": "i32"},
                          {"M": M, "N": N}, target=target)
    _no_slm(compiled, "transpose_accumulate_kernel", target, expect_dpas=False)
    assert ocloc.count(ocloc.hot_loop(compiled.asm["isa"]), INDIRECT_READ) > 0  # the shuffles are in the loop


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_gemm_with_a_computed_b_transpose_has_no_slm_and_no_spill(target, ocloc_path):
    tiles = (32, 32, 32) if target == "pvc" else (16, 16, 32)
    compiled = xd.compile(matmul_bt_computed_kernel, {"a": "f16[:,:]", "bt": "f16[:,:]", "c": "f32[:,:]",
                                                      "K": "i32"}, dict(zip(("BM", "BN", "BK"), tiles)),
                          target=target)
    env = _no_slm(compiled, "matmul_bt_computed_kernel", target, expect_dpas=True)
    loop = ocloc.hot_loop(compiled.asm["isa"])
    assert ocloc.count(loop, ocloc.DPAS) >= (16 if target == "pvc" else 8)  # pvc: 4x2 C blocks x 2 K blocks
    assert env["grf_count"] == (128 if target == "pvc" else 256)


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_workgroup_transpose_of_own_pieces_has_no_slm(target, ocloc_path):
    compiled = xd.compile(workgroup_transpose_computed_kernel, {"x": "f32[:,:]", "y": "f32[:,:]"}, {},
                          target=target)
    _no_slm(compiled, "workgroup_transpose_computed_kernel", target, expect_dpas=False)


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_operand_a_transpose_still_uses_slm(target, ocloc_path):
    tiles = (32, 32, 32) if target == "pvc" else (16, 16, 32)
    compiled = xd.compile(matmul_at_computed_kernel, {"at": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]",
                                                      "K": "i32"}, dict(zip(("BM", "BN", "BK"), tiles)),
                          target=target)
    loop = ocloc.hot_loop(compiled.asm["isa"])
    assert ocloc.count(loop, SLM_ACCESS) > 0 and ocloc.count(loop, BARRIER) > 0
