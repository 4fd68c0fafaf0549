"""RFC Appendix 2.5 (GEMM with two cache levels) compiled by Intel's offline compiler.

* The closest legal variant (256x256 workgroup tile, 32x64 f32 accumulator per subgroup)
  builds for pvc, bmg and lnl in the 256-GRF mode with 32 DPAS per K step in the hot loop, no spills,
  one workgroup barrier, L2 prefetches with L1 bypassed (``.uc.ca``, locality 2) and L1
  prefetches cached in both levels (``.ca.ca``, locality 3).
* The RFC's literal tiles (64x64 f32 = 16 KiB per subgroup = the whole 256-GRF file)
  run the K loop in two copies (xegpu-split-accumulators) and do not spill; in one loop
  they spill.  On dg2-g10 they run in eight copies, without spills.
* The ARC variant (128x128, 16x32 per subgroup) builds for dg2-g10 without spills.
"""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from tests.split_kernels import forced_parts
from xetile_dsl.errors import AccumulatorSplitWarning
from xetile_dsl.kernels.gemm_two_level import ARC_TILES, RFC_TILES, SMALL_TILES, gemm_two_level_kernel
from xetile_dsl.tools import isa as listing
from xetile_dsl.tools import ocloc

SIG = {"a": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
NAME = "gemm_two_level_kernel"


def _prefetches(isa: str, suffix: str) -> int:
    """2D block prefetches (no destination register) with the cache-control ``suffix``."""
    return sum(1 for ins in listing.instructions(isa)
               if ins.kind == "prefetch" and ins.message.endswith(f".a64{suffix}"))


@pytest.mark.parametrize("target", ["pvc", "bmg", "lnl"])
def test_variant_dpas_in_the_hot_loop_no_spills(ocloc_path, target):
    kernel = xd.compile(gemm_two_level_kernel, SIG, SMALL_TILES, target=target)
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    assert env["barrier_count"] == 1
    isa = kernel.asm["isa"]
    loop = ocloc.hot_loop(isa)
    assert ocloc.count(loop, ocloc.DPAS) == 32  # (32/8) x (64/16) x (32/16) per K step
    assert ocloc.count(loop, r"\bsync\.bar\b") == 1  # the barrier of the if, inside the K loop
    # L2 stream (locality 2): the 256x128 A and 128x256 B tiles are only prefetched, so
    # lowering/analysis/prefetch_plan.py deals them as one 32x32 message per subgroup (the user's
    # 8x128 slices were 16 one-block messages before, 4 coalesced ones after
    # lowering/rewrites/block_messages.py): A + B per prefetch, twice before the loop and once in
    # the if: 6, all bypassing L1
    assert _prefetches(isa, ".uc.ca") == 6
    # L1 stream (locality 3): one 8x32 message of A and one of B per K step, 4 before the loop + 1 in it
    assert _prefetches(isa, ".ca.ca") == 10
    assert _prefetches(loop, ".ca.ca") == 2 and _prefetches(loop, ".uc.ca") == 2


def test_rfc_tiles_pvc_run_in_two_passes_without_spills(ocloc_path):
    """xegpu-split-accumulators runs the K loop twice, over 32 accumulator rows each
    (16 KiB + one DPAS K block of A and B > 12 KiB budget; 8 + 1 + 2 KiB fit)."""
    with pytest.warns(AccumulatorSplitWarning, match="the K loop runs in 2 passes"):
        kernel = xd.compile(gemm_two_level_kernel, SIG, RFC_TILES, target="pvc")
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    loops = ocloc.loops(kernel.asm["isa"])
    assert [ocloc.count(loop, ocloc.DPAS) for loop in loops] == [32, 32]  # (32/8) x (64/16) x 2 per copy
    assert [ocloc.count(loop, r"\bsync\.bar\b") for loop in loops] == [1, 1]  # each copy runs the if's barrier


def test_rfc_tiles_pvc_spill_in_one_loop(ocloc_path, monkeypatch):
    """Without the split (parts=1) the 64x64 f32 accumulator spills: 11520 bytes with IGC 2.x."""
    forced_parts(monkeypatch, 1)
    kernel = xd.compile(gemm_two_level_kernel, SIG, RFC_TILES, target="pvc")
    env = kernel.asm["zebin"].execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) > 0
    assert ocloc.count(ocloc.hot_loop(kernel.asm["isa"]), ocloc.DPAS) >= 64  # (64/8) x (64/16) x 2


def test_rfc_tiles_dg2_run_in_eight_passes_without_spills(ocloc_path):
    """ARC's 8 KiB file (6 KiB budget): 8 copies over one 8-row block row each.  With row
    block reads of the operands this split spilled 1984 B; computed as C^T with per-lane
    row loads (docs/decisions/016-transposes.md) it does not."""
    with pytest.warns(AccumulatorSplitWarning, match="the K loop runs in 8 passes"):
        kernel = xd.compile(gemm_two_level_kernel, SIG, RFC_TILES, target="arc")
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=False, expect_simd=8) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    per_loop = [ocloc.count(loop, ocloc.DPAS) for loop in ocloc.loops(kernel.asm["isa"])]
    assert len(per_loop) == 8 and all(16 <= n <= 17 for n in per_loop)  # (8/8) x (64/8) x 2 (+ IGC's dummy)


def test_arc_variant_dg2_no_spills(ocloc_path):
    kernel = xd.compile(gemm_two_level_kernel, SIG, ARC_TILES, target="arc")
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, NAME, expect_dpas=True, expect_block2d=False, expect_simd=8) == []
    env = zebin.execution_env(NAME)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    # (16/8) x (32/8) x (32/16) = 16 DPAS per K step (IGC may add one dummy dpas)
    assert ocloc.count(ocloc.hot_loop(kernel.asm["isa"]), ocloc.DPAS) >= 16


@xd.jit
def _prefetch_kernel(a, L: xt.constexpr):
    xt.prefetch_tile(xt.init_tile(a, [0, 0], [8, 32]), locality=L)


@pytest.mark.parametrize("locality, suffix", [(3, ".ca.ca"), (2, ".uc.ca"), (1, ".uc.ca"), (0, ".uc.ca")])
def test_prefetch_locality_sets_the_lsc_cache_bits(ocloc_path, locality, suffix):
    """locality 3 = L1 and L3, 2/1 = L3 only; 0 (L1 and L3 uncached) would need two
    decorations on one pointer, which spirv-val rejects: it stays L1-uncached."""
    kernel = xd.compile(_prefetch_kernel, {"a": "f16[:,:]"}, {"L": locality}, target="pvc")
    assert _prefetches(kernel.asm["isa"], suffix) == 1  # two 8x16 blocks in one 8r16x2c message
