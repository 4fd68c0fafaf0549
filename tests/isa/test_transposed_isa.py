"""Transposed-operand GEMMs compiled by Intel's offline compiler for pvc: B^T loads are
32-bit transposed 2D block reads (`d32t`), DPAS runs in the hot loop, nothing spills."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
import xetile_dsl.language as xt
from xetile_dsl.kernels.gemm_transposed import matmul_at_kernel, matmul_bt_kernel
from xetile_dsl.tools import ocloc
from tests.e2e.test_transposed_both import wg_gemm_at_bt


def _compile(kernel, dtype, target="pvc", tiles=(32, 32, 32)):
    names = ("at", "b") if kernel is matmul_at_kernel else ("a", "bt")
    sig = {names[0]: f"{dtype}[:,:]", names[1]: f"{dtype}[:,:]", "c": "f32[:,:]", "K": "i32"}
    BM, BN, BK = tiles
    return xd.compile(kernel, sig, {"BM": BM, "BN": BN, "BK": BK, "ACC": xt.float32}, target=target)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_bt_uses_transposed_block_reads(dtype, ocloc_path):
    # tf32 at BK=16: 32x32x32 spills on pvc in 128-GRF mode with or without a transpose
    # (the 8x8 A blocks), see docs/decisions/016-transposes.md
    bk = 32 if dtype == "f16" else 16
    kernel = _compile(matmul_bt_kernel, dtype, tiles=(32, 32, bk))
    name = "matmul_bt_kernel"
    zebin = kernel.asm["zebin"]
    assert ocloc.check_isa(zebin, name, expect_dpas=True, expect_block2d=True, expect_simd=16) == []
    loop = ocloc.hot_loop(kernel.asm["isa"])
    assert re.search(r"load_block2d\.ugm\.d32t\b", loop), "no transposed 32-bit block read in the hot loop"
    assert ocloc.count(loop, ocloc.DPAS) >= 4 * 2 * (bk // (16 if dtype == "f16" else 8))


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_at_compiles_with_dpas(target, ocloc_path):
    kernel = _compile(matmul_at_kernel, "f16", target, tiles=(32, 32, 32) if target == "pvc" else (16, 16, 32))
    simd = 16 if target == "pvc" else 8
    assert ocloc.check_isa(kernel.asm["zebin"], "matmul_at_kernel", expect_dpas=True,
                           expect_block2d=None if target == "pvc" else False, expect_simd=simd) == []


@pytest.mark.parametrize("target,which", [("pvc", "a"), ("pvc", "b"), ("arc", "b")])
def test_padded_transposed_operands(target, which, ocloc_path):
    """load_tile(order=(0, 1) tile, padding=1): on pvc B^T stays 4 `d32t` block reads per
    K step (the padding is a select per element after them); no spills anywhere."""
    from tests.e2e.test_padding_transposed_gather import pad_matmul_t

    tiles = (32, 32) if target == "pvc" else (16, 16)
    sig = {"x": "f16[:,:]", "y": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    kernel = xd.compile(pad_matmul_t, sig, {"BM": tiles[0], "BN": tiles[1], "BK": 32, "WHICH": which},
                        target=target)
    assert ocloc.check_isa(kernel.asm["zebin"], "pad_matmul_t", expect_dpas=True) == []
    loop = ocloc.hot_loop(kernel.asm["isa"])
    d32t = len(re.findall(r"load_block2d\.ugm\.d32t\b", loop))
    assert d32t == (4 if (target, which) == ("pvc", "b") else 0)
    assert ocloc.count(loop, ocloc.DPAS) >= tiles[0] // 8 * tiles[1] // (16 if target == "pvc" else 8) * 2


@xd.jit
def wg_gemm_at(at, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
               SN: xt.constexpr):
    """gemm_wg_kernel's loop with A given as ``at`` = A^T ([K, M] row-major) through an
    order=(0, 1) tile, each array prefetched 3 K steps ahead (benchmarks/gemm_isa.py, AtB)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    ta = xt.init_tile(at, [m, 0], [BM, BK], order=(0, 1), wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BK]))
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BK, BN // SN]))
    pa = xt.init_tile(at, [3 * BK, m], [BK, BM], wg_map=xt.wg_map(sg_layout=[4, 8], sg_data=[8, 32]))
    pb = xt.init_tile(b, [3 * BK, n], [BK, BN], wg_map=xt.wg_map(sg_layout=[4, 8], sg_data=[8, 32]))
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.load_tile(ta)
        vb = xt.load_tile(tb)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pb)
        acc = xt.tile_mma(va, vb, acc, wg_map=mp_c)
        ta = xt.update_tile_offset(ta, 0, BK)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, BK, 0)
        pb = xt.update_tile_offset(pb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


#: hot-loop instructions of :func:`wg_gemm_at` at 256x256 / [8, 4] (f16 and bf16 alike):
#: 130 on main before the payloads of the transposed reads were hoisted, 127 with them,
#: 120 with the loop ordered for IGC (codegen/latch_order.py)
BOUND_AT_WG = 120


def _hot(report):
    hot = report.hot
    print(f"hot loop: {hot.instructions} instructions, {hot.dpas} dpas, counts {dict(hot.counts)}")
    return hot


def test_at_operand_a_is_transposed_block_reads(ocloc_path):
    """A^T @ B (A stored K x M, 32x32x32): operand A is two 8-row DPAS blocks per 16x16
    32-bit transposed block read (lowering/rewrites/block_messages.py, choose_transposed); before,
    64 per-lane gathers and 1022 hot-loop instructions per K step, now 117."""
    report = _compile(matmul_at_kernel, "f16").report()
    hot = _hot(report)
    assert report.spill_bytes == 0
    assert hot.dpas == 16 and hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert hot.load2d_shapes.get("32b 16r8x1c transpose") == 4
    assert hot.instructions <= 117


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_at_workgroup_gemm_reads_a_transposed(dtype, ocloc_path):
    """The 256x256x32 workgroup A^T @ B compared with Triton-XPU (Triton-XPU: 259 with tl.trans): per
    subgroup and K step 4 transposed reads for A (32x32), 2 VNNI reads for B, no gathers;
    1061 hot-loop instructions before, 137 with the transposed reads (4 x 16 word movs
    de-interleave their halves into operand A's row layout; 129 with the prefetch
    payloads made before the loop), 127 once each transposed read also keeps an address
    payload made before the loop (codegen/emit/transposed_payloads.py: one mov per message
    instead of a payload copy and an add), 120 now that the loop is ordered for IGC
    (codegen/latch_order.py: prefetches through moved payload copies, so no dummy moves
    wait for them at the back edge; DPAS after the loads, fewer syncs)."""
    sig = {"at": f"{dtype}[:,:]", "b": f"{dtype}[:,:]", "c": "f32[:,:]", "K": "i32"}
    kernel = xd.compile(wg_gemm_at, sig, {"BM": 256, "BN": 256, "BK": 32, "SM": 8, "SN": 4}, target="pvc")
    report = kernel.report()
    hot = _hot(report)
    assert report.spill_bytes == 0 and report.slm_bytes == 0
    assert hot.dpas == 32 and hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert hot.load2d_shapes.get("32b 16r8x1c transpose") == 4
    llvm = kernel.asm["llvm"]
    assert "__builtin_IB_subgroup_block_read_ap_transpose_u32_m16k8v1" in llvm
    assert "__builtin_IB_subgroup_copyBlock2DAddressPayload" in llvm  # the ordered loop's prefetches
    assert "null<1>:ud" not in ocloc.hot_loop(kernel.asm["isa"])  # no dummy moves for them
    print(f"pvc A^T.B 256x256: {hot.instructions} hot-loop instructions")
    assert hot.instructions <= BOUND_AT_WG


@xd.jit
def wg_gemm_at_transpose(at, b, c, K, BM: xt.constexpr, BN: xt.constexpr, BK: xt.constexpr, SM: xt.constexpr,
                         SN: xt.constexpr):
    """:func:`wg_gemm_at` with A^T loaded row-major under the swapped map and
    ``tile_transpose``d to the A map (the "At.B via tile_transpose" comparison)."""
    m = xt.program_id(0) * BM
    n = xt.program_id(1) * BN
    tat = xt.init_tile(at, [0, m], [BK, BM], wg_map=xt.wg_map(sg_layout=[SN, SM], sg_data=[BK, BM // SM]))
    tb = xt.init_tile(b, [0, n], [BK, BN], wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BK, BN // SN]))
    pa = xt.init_tile(at, [3 * BK, m], [BK, BM], wg_map=xt.wg_map(sg_layout=[4, 8], sg_data=[8, 32]))
    pb = xt.init_tile(b, [3 * BK, n], [BK, BN], wg_map=xt.wg_map(sg_layout=[4, 8], sg_data=[8, 32]))
    mp_c = xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BN // SN])
    acc = xt.zeros([BM, BN], xt.float32)
    for k in range(0, K, BK):
        va = xt.tile_transpose(xt.load_tile(tat), wg_map=xt.wg_map(sg_layout=[SM, SN], sg_data=[BM // SM, BK]))
        vb = xt.load_tile(tb)
        xt.prefetch_tile(pa)
        xt.prefetch_tile(pb)
        acc = xt.tile_mma(va, vb, acc, wg_map=mp_c)
        tat = xt.update_tile_offset(tat, BK, 0)
        tb = xt.update_tile_offset(tb, BK, 0)
        pa = xt.update_tile_offset(pa, BK, 0)
        pb = xt.update_tile_offset(pb, BK, 0)
    xt.store_tile(acc, xt.init_tile(c, [m, n], [BM, BN], wg_map=mp_c))


def test_at_through_tile_transpose_is_transposed_block_reads(ocloc_path):
    """The tile_transpose of the loaded A^T becomes the transposed loads of
    :func:`test_at_workgroup_gemm_reads_a_transposed` (no SLM): 1070 hot-loop
    instructions with 64 per-lane SLM stores per K step before (709 with the A^T
    messages alone), 120 now (the same loop as the order=(0, 1) tile's)."""
    sig = {"at": "f16[:,:]", "b": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    consts = {"BM": 256, "BN": 256, "BK": 32, "SM": 8, "SN": 4}
    report = xd.compile(wg_gemm_at_transpose, sig, consts, target="pvc").report()
    hot = _hot(report)
    assert report.spill_bytes == 0 and report.slm_bytes == 0
    assert hot.dpas == 32 and hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert hot.load2d_shapes.get("32b 16r8x1c transpose") == 4
    print(f"pvc A^T.B 256x256: {hot.instructions} hot-loop instructions")
    assert hot.instructions <= BOUND_AT_WG


@pytest.mark.parametrize("dtype,acc,bk,bound", [("f16", "f32", 32, 120), ("i8", "i32", 64, 127)])
def test_both_transposed_reads_row_major_operands(dtype, acc, bk, bound, ocloc_path):
    """A^T-stored @ B^T-stored at 256x256 ([8, 4] subgroups of 32x64): the K loop
    accumulates C^T = B^T-stored @ A^T-stored (lowering/passes/wg_to_sg/operand_swap.py), so both operands
    are row-major 2D block reads (B^T as operand A, A^T as VNNI operand B) and no
    transposed message, gather or SLM access is left.  Before: f16 169 hot-loop
    instructions with 12 transposed reads, int8 8519 with 384 per-lane gathers (now int8
    is the A.B loop: one 8-bit block read per 8x32 A block, not coalesced)."""
    sig = {"at": f"{dtype}[:,:]", "bt": f"{dtype}[:,:]", "c": f"{acc}[:,:]", "K": "i32"}
    consts = {"BM": 256, "BN": 256, "BK": bk, "SM": 8, "SN": 4, "ACC": xt.float32 if acc == "f32" else xt.int32,
              "TB": True}
    report = xd.compile(wg_gemm_at_bt, sig, consts, target="pvc").report()
    hot = _hot(report)
    assert report.spill_bytes == 0 and report.slm_bytes == 0
    assert hot.dpas == 32 and hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert not any("transpose" in shape for shape in hot.load2d_shapes)
    assert hot.instructions <= bound


def test_int8_bt_is_transposed_block_reads(ocloc_path):
    """int8 A @ B^T-stored (32x32x64): B's VNNI operand is one 32-bit transposed read per
    16x32-byte block of B^T (codegen/builtins/transposed_loads.py), no per-lane gathers (before:
    gathers for every element of B)."""
    sig = {"a": "i8[:,:]", "bt": "i8[:,:]", "c": "i32[:,:]", "K": "i32"}
    report = xd.compile(matmul_bt_kernel, sig, {"BM": 32, "BN": 32, "BK": 64, "ACC": xt.int32}, target="pvc").report()
    hot = _hot(report)
    assert report.spill_bytes == 0
    assert hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert hot.load2d_shapes.get("32b 16r8x1c transpose", 0) >= 4


def test_at_eight_row_tile_is_transposed_block_reads(ocloc_path):
    """A^T-stored with an 8-row tile (8x32x32, the M = 1 GEMM's subgroup tile): each
    16-row transposed message keeps its first 8 rows (block_messages.choose_transposed);
    before, 16 per-lane gathers (237 hot-loop instructions in benchmarks/gemm_isa.py)."""
    report = _compile(matmul_at_kernel, "f16", tiles=(8, 32, 32)).report()
    hot = _hot(report)
    assert report.spill_bytes == 0
    assert hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert hot.load2d_shapes.get("32b 16r8x1c transpose") == 2
    assert hot.instructions <= 50


def test_int8_at_is_transposed_block_reads(ocloc_path):
    """int8 A^T-stored @ B (32x32x64): each 8x32 A block is two 32-bit transposed reads
    (even and odd K rows, codegen/builtins/transposed_loads.py _row_pairs) and a byte interleave
    on 16-bit words; no per-lane gathers (before: one per element of A)."""
    sig = {"at": "i8[:,:]", "b": "i8[:,:]", "c": "i32[:,:]", "K": "i32"}
    report = xd.compile(matmul_at_kernel, sig, {"BM": 32, "BN": 32, "BK": 64, "ACC": xt.int32}, target="pvc").report()
    hot = _hot(report)
    assert report.spill_bytes == 0
    assert hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert hot.load2d_shapes.get("32b 16r8x1c transpose") == 16
    assert hot.instructions <= 260


def test_at_b_with_narrow_n_is_swapped(ocloc_path):
    """A^T-stored @ B at 64x256 ([2, 16] subgroups of 32x16, the M = 64 GEMM): C^T =
    B^T . A^T-stored reads B (16 columns) transposed as operand A instead of A (32 rows):
    half the 16-bit unpacking (lowering/passes/wg_to_sg/operand_swap.py); before, 122 hot-loop instructions
    (with prefetches, benchmarks/gemm_isa.py) and 4 transposed reads per K step."""
    sig = {"at": "f16[:,:]", "bt": "f16[:,:]", "c": "f32[:,:]", "K": "i32"}
    consts = {"BM": 64, "BN": 256, "BK": 32, "SM": 2, "SN": 16, "ACC": xt.float32, "TB": False}
    report = xd.compile(wg_gemm_at_bt, sig, consts, target="pvc").report()
    hot = _hot(report)
    assert report.spill_bytes == 0 and report.slm_bytes == 0
    assert hot.dpas == 8 and hot.counts["gather"] == 0 and hot.counts["slm"] == 0
    assert hot.load2d_shapes.get("32b 16r8x1c transpose") == 2
    assert hot.instructions <= 60
