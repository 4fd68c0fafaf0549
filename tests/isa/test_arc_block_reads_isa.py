"""ARC (dg2-g10) GEMM memory messages, read from Intel's offline compiler: operand rows
come from subgroup block reads (``load.ugm.d32x{8,16}t``, one message per row) instead
of one per-lane ``load.ugm.d16u32`` gather per element, C leaves through block writes,
and the per-lane fallback for blocks that leave the array is a run-time row loop (one
row's gathers in the machine code).  Counts are static and deterministic under the
pinned IGC (tools-cache)."""
from __future__ import annotations

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from kernels.fused import gemm_bias_relu
from xetile_dsl.kernels.gemm_wg import ARC_TILES, gemm_prefetch_kernel, gemm_wg_configs, gemm_wg_kernel
from xetile_dsl.tools import ocloc
from xetile_dsl.tools.isa import instructions

SIG = {"a": "{t}[:,:]", "b": "{t}[:,:]", "c": "f32[:,:]", "K": "i32"}


def _kinds(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ins in instructions(text):
        key = f"{ins.kind}:{ins.message.split('.')[0]}" if ins.opcode.startswith("send") else ins.kind
        counts[key] = counts.get(key, 0) + 1
    return counts


def _k_loops(isa: str) -> list[str]:
    """The outermost loops that hold DPAS (the K loop and any copies of it)."""
    return [loop for loop in ocloc.loops(isa) if ocloc.count(loop, ocloc.DPAS)]


@pytest.fixture(scope="module", params=["f16", "bf16"])
def arc_tiles_kernel(request):
    sig = {k: v.format(t=request.param) for k, v in SIG.items()}
    return xd.compile(gemm_wg_kernel, sig, {**ARC_TILES, "ACC": xt.float32}, target="arc")


def test_arc_tiles_gemm_reads_rows_with_block_messages(arc_tiles_kernel, ocloc_path):
    """Each subgroup's K step (BK 32, two DPAS K blocks): A 32x32 (32 rows of two dwords
    per lane) and B 32x32 (32 rows of four 16-bit units per lane), 32 DPAS.  Before the
    row reads: 128 ``d16u32`` gathers per 16 DPAS; with BK 16 (32-byte A rows): 48 block
    reads + 12 gathers per 16 DPAS (3 per DPAS on the in-bounds path)."""
    isa = arc_tiles_kernel.asm["isa"]
    env = arc_tiles_kernel.asm["zebin"].execution_env("gemm_wg_kernel")
    assert env.get("spill_size", 0) == 0 and env["grf_count"] == 256
    (loop,) = _k_loops(isa)  # one K loop: no copies re-reading B
    kinds = _kinds(loop)
    dpas = ocloc.count(loop, ocloc.DPAS)
    print(f"arc ARC_TILES {ARC_TILES}: {kinds.get('block1d:load', 0)} block reads + "
          f"{kinds.get('gather:load', 0)} edge gathers, {dpas} dpas (32 + IGC's)")
    assert ARC_TILES["BK"] == 32
    assert kinds.get("block1d:load", 0) == 32 + 32
    assert dpas >= 32  # (32/8) x (32/8) x (32/16), plus IGC's dummy dpas
    # block messages per DPAS on the in-bounds path: 64 / 32 = 2 (3 with BK 16)
    assert kinds["block1d:load"] / 32 == 2
    # the fallback row loops: one row's elements per block message, not the whole block
    assert kinds.get("gather:load", 0) <= 24


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


def test_rfc_2_1_literal_on_arc_reads_a_by_rows_without_spills(ocloc_path):
    """The 256x256 RFC 2.1 program on ARC still runs its K loop in 4 copies (the 32x64
    f32 accumulator is ARC's whole register file), each with single-unit B blocks read
    per element (row reads of 16x8 VNNI blocks spilled 15 KB); A's rows are block
    reads.  Before: 288 gathers per copy, now 260 gathers + 16 block reads, no spill."""
    sig = {k: v.format(t="f16") for k, v in SIG.items()}
    kernel = xd.compile(gemm_prefetch_kernel, sig, {"BM": 256, "BN": 256, "BK": 32, "PF": 3}, target="arc")
    isa = kernel.asm["isa"]
    assert kernel.asm["zebin"].execution_env("gemm_prefetch_kernel").get("spill_size", 0) == 0
    loops = _k_loops(isa)
    assert len(loops) == 4
    for loop in loops:
        kinds = _kinds(loop)
        assert kinds.get("block1d:load", 0) == 16
        assert kinds.get("gather:load", 0) <= 260


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
