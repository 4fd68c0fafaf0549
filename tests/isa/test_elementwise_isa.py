"""Fused GEMM epilogues, softmax and reductions compiled for pvc, bmg, lnl and arc by
Intel's offline compiler: DPAS still in the loop, 2D-block messages on the 16-lane targets
(including the 16-bit bf16 store), the math functions resolved to native ``math`` instructions (no calls), no
spills."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from kernels.fused import gemm_bias_relu, gemm_gelu, row_softmax
from xetile_dsl.targets import get_target
from xetile_dsl.tools import ocloc, spirv_tools

EPILOGUE_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "bf16[:,:]", "K": "i32"}
GELU_SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
TARGETS = ["pvc", "bmg", "lnl", "arc"]


def _math_count(isa: str) -> int:
    return sum(1 for line in isa.splitlines() if line.strip().startswith("math."))


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_bias_relu_bf16_store(target, ocloc_path, spirv_val_path):
    gpu = get_target(target)
    tiles = {"BM": 32, "BN": 32, "BK": 16} if gpu.subgroup_size == 16 else {"BM": 16, "BN": 32, "BK": 16}
    kernel = xd.compile(gemm_bias_relu, EPILOGUE_SIG, tiles, target=target)
    spirv_tools.validate(kernel.spirv)
    zebin, isa = kernel.asm["zebin"], kernel.asm["isa"]
    assert ocloc.check_isa(zebin, "gemm_bias_relu", expect_dpas=True, expect_block2d=gpu.has_2d_block_io,
                           expect_simd=gpu.subgroup_size) == []
    if gpu.has_2d_block_io:
        assert ocloc.count(isa, ocloc.STORE_BLOCK2D) >= 1  # the bf16 result leaves as 2D-block writes


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("tanh", [0, 1], ids=["erf", "tanh"])
def test_gemm_gelu_math_is_native(target, tanh, ocloc_path):
    kernel = xd.compile(gemm_gelu, GELU_SIG, {"BM": 16, "BN": 32, "BK": 16, "TANH": tanh}, target=target)
    zebin, isa = kernel.asm["zebin"], kernel.asm["isa"]
    assert ocloc.check_isa(zebin, "gemm_gelu", expect_dpas=True, expect_simd=get_target(target).subgroup_size) == []
    if tanh:  # IGC evaluates tanh through math.exp; erf is a polynomial of mads (no math op)
        assert _math_count(isa) >= 1


@pytest.mark.parametrize("tanh", [0, 1], ids=["erf", "tanh"])
def test_gemm_gelu_32x32_does_not_spill_at_128_grfs(tanh, ocloc_path):
    """The epilogue is emitted block by block (xegpu-sink-to-uses): each 8x16 block's
    erf/tanh chain ends at its store, so only one block's temporaries are live next to the
    64-register accumulator.  Before that pass: 3904 (erf) / 4416 (tanh) bytes of spills."""
    kernel = xd.compile(gemm_gelu, GELU_SIG, {"BM": 32, "BN": 32, "BK": 16, "TANH": tanh}, target="pvc")
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, "gemm_gelu", expect_dpas=True, expect_simd=16) == []  # includes spill_size 0
    env = zebin.execution_env("gemm_gelu")
    assert env["grf_count"] == 128 and env.get("spill_size", 0) == 0
    assert ocloc.count(ocloc.hot_loop(kernel.asm["isa"]), ocloc.DPAS) >= 8  # (32/8) x (32/16) per K step


@pytest.mark.parametrize("target", TARGETS)
def test_softmax_has_exp_and_no_calls(target, ocloc_path):
    kernel = xd.compile(row_softmax, {"x": "f32[:,:]", "y": "f32[:,:]"}, {"BM": 16, "BN": 32}, target=target)
    zebin, isa = kernel.asm["zebin"], kernel.asm["isa"]
    assert ocloc.check_isa(zebin, "row_softmax", expect_dpas=False, expect_simd=get_target(target).subgroup_size) == []
    assert any(line.strip().startswith("math.exp") for line in isa.splitlines())
