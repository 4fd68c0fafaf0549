"""xegpu-split-accumulators measured with Intel's offline compiler: K loops whose
accumulators exceed the register budget run in several copies and stop spilling; the
same kernels with the split turned off (``parts=1``) spill, which is why the split is
there; loops that write memory are not split (the old warning stays); kernels that fit
are not touched.

The 3/4 budget (``Target.accumulator_register_share``): on dg2-g10 a 16x64 f32 piece
(4 KiB + one DPAS K block of A and B, 6.5 KiB = 81% of the 8 KiB file) spilled in one
loop with per-lane gathers (not since A's rows are block reads), a 32x32 piece (6 KiB =
75%) does not.
"""
from __future__ import annotations

import warnings

import pytest

import xetile_dsl as xd
from tests.split_kernels import SIG, forced_parts, gemm_copying_a_kernel, wg_tiles
from xetile_dsl.errors import AccumulatorSplitWarning, CompilationWarning, RegisterSpillWarning
from xetile_dsl.kernels.gemm_wg import gemm_wg_kernel
from xetile_dsl.tools import ocloc


def _wg(rows, cols, target, note: bool):
    """gemm_wg_kernel with rows x cols pieces; ``note``: whether the register budget says
    the loop will be split (an AccumulatorSplitWarning), else no warning at all."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = xd.compile(gemm_wg_kernel, SIG, wg_tiles(rows, cols), target=target)
    env = kernel.asm["zebin"].execution_env("gemm_wg_kernel")
    categories = [w.category for w in caught if issubclass(w.category, CompilationWarning)]
    spill = [RegisterSpillWarning] if env.get("spill_size", 0) else []   # the ISA's spill, warned at the def
    assert categories == ([AccumulatorSplitWarning] if note else []) + spill
    return kernel, env


def _dpas_per_loop(kernel) -> list[int]:
    return [ocloc.count(loop, ocloc.DPAS) for loop in ocloc.loops(kernel.asm["isa"])]


def test_64x64_pieces_pvc_two_copies_no_spills(ocloc_path):
    kernel, env = _wg(64, 64, "pvc", True)
    assert env["grf_count"] == 256 and env.get("spill_size", 0) == 0
    assert kernel.asm["xegpu"].count("scf.for") == 2
    assert _dpas_per_loop(kernel) == [32, 32]  # (32/8) x (64/16) x (32/16) per K step and copy


def test_64x64_pieces_pvc_spill_in_one_loop(ocloc_path, monkeypatch):
    forced_parts(monkeypatch, 1)
    kernel, env = _wg(64, 64, "pvc", False)  # a forced count: no note
    assert kernel.asm["xegpu"].count("scf.for") == 1
    assert env["grf_count"] == 256 and env.get("spill_size", 0) > 0  # 5504 bytes with IGC 2.x
    assert _dpas_per_loop(kernel) == [64]


def test_32x128_pieces_pvc_four_copies_no_spills(ocloc_path):
    """16 KiB of accumulator + 4 KiB of B per K block: 2 row groups still need 12.5 KiB."""
    kernel, env = _wg(32, 128, "pvc", True)
    assert env.get("spill_size", 0) == 0 and _dpas_per_loop(kernel) == [16] * 4


def test_fitting_pieces_are_not_split(ocloc_path):
    kernel, env = _wg(32, 64, "pvc", False)
    assert kernel.asm["xegpu"].count("scf.for") == 1 and env.get("spill_size", 0) == 0
    assert _dpas_per_loop(kernel) == [32]


def test_arc_budget_share_measured(ocloc_path, monkeypatch):
    """dg2-g10, one loop: 32x32 (75% of the file counted) fits; 16x64 (81%) spilled 192
    bytes while every operand element was a per-lane gather, and no longer does since
    A's rows are subgroup block reads; split (2 copies of 8x64) neither."""
    kernel, env = _wg(32, 32, "arc", False)
    assert kernel.asm["xegpu"].count("scf.for") == 1 and env.get("spill_size", 0) == 0
    kernel, env = _wg(16, 64, "arc", True)
    assert kernel.asm["xegpu"].count("scf.for") == 2 and env.get("spill_size", 0) == 0
    forced_parts(monkeypatch, 1)
    kernel, env = _wg(16, 64, "arc", False)
    assert kernel.asm["xegpu"].count("scf.for") == 1 and env.get("spill_size", 0) == 0  # 192 B with gathers


def test_loop_that_writes_memory_is_not_split_and_still_warns(ocloc_path):
    sig = {**SIG, "o": "f16[:,:]"}
    with pytest.warns(CompilationWarning, match="will spill registers on pvc.*cannot be run in several passes"):
        kernel = xd.compile(gemm_copying_a_kernel, sig, {"BM": 256, "BN": 256, "BK": 32}, target="pvc")
    env = kernel.asm["zebin"].execution_env("gemm_copying_a_kernel")
    assert kernel.asm["xegpu"].count("scf.for") == 1 and _dpas_per_loop(kernel) == [64]
    assert env.get("spill_size", 0) > 0  # 8704 bytes with IGC 2.x
