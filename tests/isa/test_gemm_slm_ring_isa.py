"""RFC Appendix 2.4 (kernels/gemm_slm_ring.py: cooperative loads through a 4-slice SLM
ring, the RFC's maps) compiled by Intel's offline compiler for pvc, bmg and lnl: DPAS in the hot loop,
no spills, 256-GRF mode, the whole 128 KiB of SLM, one barrier per K step; and the
2-slice ring for ARC (dg2-g10)."""
from __future__ import annotations

import re
import warnings

import pytest

import xetile_dsl as xd
from xetile_dsl.errors import CompilationWarning
from xetile_dsl.kernels.gemm_slm_ring import gemm_slm_ring_kernel
from xetile_dsl.tools import ocloc, spirv_tools

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
NAME = "gemm_slm_ring_kernel"


@pytest.mark.parametrize("target", ["pvc", "bmg", "lnl"])
def test_rfc_ring_isa(ocloc_path, spirv_val_path, target):
    """Per subgroup and K step: a 32x32 f32 accumulator += (32x32 A) @ (32x32 B) = 4 x 2
    x 2 = 16 DPAS; A/B come from SLM (per-lane SLM loads), the next global slice by 2D
    block loads (A 4x32, B 4x32 per subgroup); one barrier in the loop (plus the
    prologue's); A + B + accumulator staged in registers -> 256-GRF mode, no spills."""
    kernel = xd.compile(gemm_slm_ring_kernel, SIG, {"RING": 4}, target=target)
    spirv_tools.validate(kernel.spirv)
    zebin, isa = kernel.asm["zebin"], kernel.asm["isa"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env["slm_size"] == 4 * (256 * 32 + 32 * 256) * 2
    assert env["barrier_count"] == 1
    loop = ocloc.hot_loop(isa)
    assert ocloc.count(loop, ocloc.DPAS) == 16
    assert ocloc.count(loop, r"\bsync\.bar\b") == 1 and ocloc.count(isa, r"\bsync\.bar\b") == 2
    assert ocloc.count(loop, ocloc.LOAD_BLOCK2D) >= 2  # the cooperative global slices of A and B
    assert re.search(r"\bload\.slm\b", loop) and re.search(r"\bstore\.slm\b", loop)


def test_two_slice_ring_isa_arc(ocloc_path):
    """ARC (dg2-g10, 256-GRF mode always): 64 KiB ring, two barriers per K step. The
    32x32 f32 accumulator + a whole K step of A + B per 8-lane subgroup would fill the
    register file (the register budget still warns so), but with loads sunk to their DPAS
    (xegpu-sink-to-uses) only one K block of operands is live: no spill (was 5760 bytes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompilationWarning)  # the budget's conservative warning
        kernel = xd.compile(gemm_slm_ring_kernel, SIG, {"RING": 2}, target="arc")
    zebin = kernel.asm["zebin"]
    env = zebin.execution_env(NAME)
    assert env["slm_size"] == 2 * (256 * 32 + 32 * 256) * 2 and env["barrier_count"] == 1
    assert ocloc.count(ocloc.hot_loop(kernel.asm["isa"]), r"\bsync\.bar\b") == 2
    assert ocloc.count(ocloc.hot_loop(kernel.asm["isa"]), ocloc.DPAS) >= 32  # 4 x 4 x 2 (8-wide B)
    assert zebin.spill_size(NAME) == 0
