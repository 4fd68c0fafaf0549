"""The GEMM compiled for pvc, bmg, lnl and arc: valid SPIR-V, and real machine code from
Intel's offline compiler with DPAS in the hot loop, 2D-block messages on the 16-lane
targets (none on arc), no spills and no unresolved calls."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
from xetile_dsl.kernels.matmul import matmul_kernel
from xetile_dsl.tools import ocloc, spirv_tools

#: 8 lanes hold twice the registers per element of 16: a 32x32 f32 accumulator alone
#: would fill ARC's 128 GRFs, so ARC kernels use smaller tiles.
ARC_TILES = (16, 32, 16)
SIG = {"a": "{t}[:,:]", "b": "{t}[:,:]", "c": "f32[:,:]", "K": "i32"}


def _compile(target, dtype="f16", tiles=(32, 32, 16)):
    sig = {k: v.format(t=dtype) for k, v in SIG.items()}
    BM, BN, BK = tiles
    return xd.compile(matmul_kernel, sig, {"BM": BM, "BN": BN, "BK": BK}, target=target)


@pytest.mark.parametrize("target", ["pvc", "arc"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_spirv_validates(target, dtype, spirv_val_path):
    spirv_tools.validate(_compile(target, dtype).spirv)


@pytest.mark.parametrize("target", ["pvc", "bmg", "lnl"])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_isa_has_dpas_and_2d_blocks_in_the_loop(target, dtype, ocloc_path):
    kernel = _compile(target, dtype)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, "matmul_kernel", expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    isa = kernel.asm["isa"]
    loop = ocloc.hot_loop(isa)
    assert ocloc.count(loop, ocloc.DPAS) >= 8  # 4x2 blocks of 8x16 per K step
    assert ocloc.count(loop, ocloc.LOAD_BLOCK2D) >= 1
    assert ocloc.count(isa, ocloc.STORE_BLOCK2D) >= 1
    assert zebin.execution_env("matmul_kernel")["has_dpas"] is True


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_arc_isa_has_dpas_and_no_2d_blocks(dtype, ocloc_path):
    kernel = _compile("arc", dtype, tiles=ARC_TILES)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, "matmul_kernel", expect_dpas=True, expect_block2d=False, expect_simd=8) == []
    assert ocloc.count(ocloc.hot_loop(kernel.asm["isa"]), ocloc.DPAS) >= 1


def test_isa_absent_for_the_cpu_flavour():
    assert "isa" not in _compile("cpu-pvc").asm
