"""ARC (dg2-g10) GEMM memory messages, read from Intel's offline compiler: operand rows
come from subgroup block reads (``load.ugm.d32x{8,16}t``, one message per row) instead
of one per-lane ``load.ugm.d16u32`` gather per element, C leaves through block writes,
and the per-lane fallback for blocks that leave the array is a run-time row loop (one
row's gathers in the machine code).  A plain A.B GEMM whose result is only stored reads
its operands with per-lane row loads instead (tests/isa/test_arc_lane_rows_isa.py); a
GEMM with an epilogue keeps the row reads.  Counts are static and deterministic under
the pinned IGC (tools-cache)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from kernels.fused import gemm_bias_relu
from xetile_dsl.kernels.gemm_wg import gemm_wg_configs, gemm_wg_kernel
from xetile_dsl.tools import ocloc
from xetile_dsl.tools.isa import instructions


def _kinds(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ins in instructions(text):
        key = f"{ins.kind}:{ins.message.split('.')[0]}" if ins.opcode.startswith("send") else ins.kind
        counts[key] = counts.get(key, 0) + 1
    return counts


def _k_loops(isa: str) -> list[str]:
    """The outermost loops that hold DPAS (the K loop and any copies of it)."""
    return [loop for loop in ocloc.loops(isa) if ocloc.count(loop, ocloc.DPAS)]


def test_arc_bias_relu_epilogue_does_not_spill(ocloc_path):
    """32x32 bf16 store after bias + ReLU: IGC used to compute every result block before
    the per-lane stores (928 bytes of spills with this IGC); block writes end each
    block's chain at its row writes."""
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "bf16[:,:]", "K": "i32"}
    kernel = xd.compile(gemm_bias_relu, sig, {"BM": 32, "BN": 32, "BK": 16}, target="arc")
    zebin, isa = kernel.asm["zebin"], kernel.asm["isa"]
    assert ocloc.check_isa(zebin, "gemm_bias_relu", expect_dpas=True, expect_simd=8) == []
    assert zebin.execution_env("gemm_bias_relu").get("spill_size", 0) == 0
    kinds = _kinds(isa)
    assert kinds.get("block1d:store", 0) == 32 * 4  # 32 rows x four 8-column bf16 blocks
    (loop,) = _k_loops(isa)
    assert _kinds(loop).get("block1d:load", 0) == 32 + 16


@pytest.mark.parametrize("config", range(2))
def test_arc_int8_configs_keep_one_k_loop_without_spills(config, ocloc_path):
    """The ARC autotuning list for int8 (``gemm_wg_configs("arc", "i8")``, BK = one 32-deep
    DPAS K block): 0 spill and one K loop (no copies re-reading B).  int8 rows stay
    per-lane loads (``Target.row_block_elem_bits``)."""
    cfg = gemm_wg_configs("arc", "i8")[config].kwargs
    sig = {"a": "i8[:,:]", "b": "i8[:,:]", "c": "i32[:,:]", "K": "i32"}
    kernel = xd.compile(gemm_wg_kernel, sig, {**cfg, "ACC": xt.int32}, target="arc")
    assert kernel.asm["zebin"].execution_env("gemm_wg_kernel").get("spill_size", 0) == 0
    (loop,) = _k_loops(kernel.asm["isa"])
    pieces = (cfg["BM"] // cfg["SM"] // 8) * (cfg["BN"] // cfg["SN"] // 8)  # 8x8 result blocks per subgroup
    assert ocloc.count(loop, ocloc.DPAS) >= pieces
