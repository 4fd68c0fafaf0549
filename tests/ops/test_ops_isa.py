"""The ops' machine code for pvc and bmg (Intel's offline compiler, report()): flash attention's
key loop (transposed: S^T = K Q^T, O^T = V^T P^T) has both products on DPAS, reads V^T
with transposed 2D block messages, stays within its measured instructions per DPAS, and
neither it (D = 32, 64, 128) nor softmax nor the layer norm backward spills; softmax
reads its chunks with 2D block loads (the chunk loop makes this hold at any width,
8K columns included).  On ARC (dg2-g10) attention's key loop also has both products on
DPAS, the second one's operand A re-laid out by lane shuffles, without spills."""
from __future__ import annotations

import re

import pytest

import xetile_dsl as xd
from xetile_dsl.ops import configs
from xetile_dsl.ops.attention import attention_kernel, attention_rows_kernel
from xetile_dsl.ops.matmul import XT_DTYPES, matmul_kernel
from xetile_dsl.tools import ocloc
from xetile_dsl.tools.isa import instructions
from xetile_dsl.ops.rows import softmax_kernel
from xetile_dsl.ops.rows_backward import norm_backward_kernel

F16 = XT_DTYPES["float16"]
ATTENTION_SIG = ROWS_SIG = {"q": "f16[:,:]", "k": "f16[:,:]", "v": "f16[:,:]", "o": "f16[:,:]", "lse": "f32[:,:]",
                            "N": "i32", "NP": "i32", "qk_scale": "f32", "with_lse": "i32"}
#: hot-loop instructions per DPAS measured with the pinned IGC (configs.attention_tiles,
#: causal, f16, the default positive scale) plus about 3%.  The loop's lazy rescale is a
#: branch a step skips unless some query's maximum grew by more than
#: attention.RESCALE_SLACK: the short path (branch skipped, the usual step) runs D = 64
#: (16 x 64) 12.25 per DPAS on pvc, 11.81 on bmg; D = 128 (16 x 32) 9.64 and 9.48; D = 32
#: (32 x 32) 16.03 and 15.72; all of the loop's instructions, 14.47 / 14.03, 12.42 / 12.27
#: and 20.72 / 20.34 (the softmax's per-score work is spread over half the DPAS of D = 64).  Before the lazy rescale
#: (every step rescales): D = 64 12.95 / 12.72 (at 16 x 32: 14.41 / 14.28), D = 128
#: 11.59 / 11.31; before the transposed form 51.7 (D = 64, 16 x 32) and 31.9 (D = 128,
#: 8 x 32).  The floor of this short path with BM = 16 (benchmarks/peer_attention_isa.py): 5.5
#: per 16 scores (max, fma, exp2, sum, f16 convert, half a VNNI move), 4 word moves per
#: DPAS splitting V^T, and the DPAS: 352 / D + 5 per DPAS (10.5 and 7.75)
MAX_SHORT_PATH_PER_DPAS = {32: 16.5, 64: 12.6, 128: 9.95}
MAX_INSTRUCTIONS_PER_DPAS = {32: 21.4, 64: 14.9, 128: 12.8}


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("d", [32, 64, 128])
def test_attention_isa(d, target, ocloc_path):
    """bmg: Xe2, the same 16-lane DPAS and 2D blocks."""
    BM, BN = configs.attention_tiles(target, d)
    consts = {"CAUSAL": True, "OUT": F16, "D": d, "BM": BM, "BN": BN, "SCALED": False}  # as launched, scale > 0
    report = xd.compile(attention_kernel, ATTENTION_SIG, consts, target=target).report()
    hot = report.hot
    # S^T = K Q^T: BN x BM x d and O^T = V^T P^T: d x BM x BN, in 8-row x 16-column x 16-deep DPAS
    assert hot.dpas == 2 * (BN // 8) * (BM // 16) * (d // 16) and hot.skippable_dpas == 0
    assert any("transpose" in shape for shape in hot.load2d_shapes), hot.load2d_shapes
    assert hot.load2d_shapes.get("16b 32r16x2c") == BN // 32 * d // 32  # K: [32 keys, 32] per message
    # V^T: transposed 32-bit messages of 16 keys x 8 (d pairs); Q^T: D x BM, re-read each step
    assert hot.load2d_shapes.get("32b 16r8x1c transpose") == (BN // 16 + BM // 16) * (d // 16)
    assert hot.counts.get("gather", 0) == 0 and hot.counts.get("slm", 0) == 0
    # the branch holds at least the O^T rescale: one multiply per 16 of its D x BM floats
    assert hot.skippable >= d * BM // 16
    print(f"{target} attention D={d}: {hot.short_path_instructions_per_dpas:.2f} instructions per DPAS "
          f"when the rescale is skipped, {hot.instructions_per_dpas:.2f} in all")
    assert hot.short_path_instructions_per_dpas <= MAX_SHORT_PATH_PER_DPAS[d]
    assert hot.instructions_per_dpas <= MAX_INSTRUCTIONS_PER_DPAS[d]
    assert report.spill_bytes == 0


@pytest.mark.parametrize("d", [32, 64])
def test_attention_arc_isa(d, ocloc_path):
    """D = 64: 8 queries x 16 keys (configs.attention_tiles; 13.1 KB of spill at 16 x 32,
    4.1 KB at 8 x 32); D = 32: 8 x 32; untransposed (configs.attention_form).  Before:
    ops.attention refused ARC."""
    BM, BN = configs.attention_tiles("arc", d)
    report = xd.compile(attention_rows_kernel, ROWS_SIG, {"CAUSAL": True, "OUT": F16, "D": d, "BM": BM, "BN": BN, "LSE": False},
                        target="arc").report()
    # ARC's DPAS is 8 rows x 8 columns x 16 deep (IGC may add one dummy dpas)
    assert report.hot.dpas >= 2 * (BM // 8) * (BN // 8) * (d // 16)
    assert report.hot.counts.get("slm", 0) == 0
    assert report.spill_bytes == 0


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_softmax_isa(target, ocloc_path):
    BM, BC = configs.row_tiles(target)
    report = xd.compile(softmax_kernel, {"x": "f16[:,:]", "y": "f16[:,:]", "N": "i32"},
                        {"OUT": F16, "BM": BM, "BC": BC}, target=target).report()
    assert report.spill_bytes == 0
    assert all(loop.counts.get("load2d", 0) > 0 and loop.counts.get("gather", 0) == 0 for loop in report.loops)


def _matmul_hot_loop(target, m):
    BM, BN, BK = configs.gemm_tiles(target, "float16", m)
    sig = {"a": "f16[:,:]", "b": "f16[:,:]", "bias": "f32[:,:]", "c": "f16[:,:]", "K": "i32"}
    consts = {"TA": False, "TB": False, "HAS_BIAS": False, "ACT": 0, "ACC": XT_DTYPES["float32"], "OUT": F16,
              "BM": BM, "BN": BN, "BK": BK}
    kernel = xd.compile(matmul_kernel, sig, consts, target=target)
    return kernel, ocloc.hot_loop(kernel.asm["isa"])


def test_matmul_m1_runs_one_row_dpas(ocloc_path):
    """M = 1 (a GEMV): every DPAS of the K loop has repeat count 1 (``dpas.8x1``: one row of
    A, where an 8-row tile would spend 7/8 of each DPAS on padding rows), with no more
    hot-loop instructions than the 8-row tile (M = 5) and no spill."""
    one, one_loop = _matmul_hot_loop("pvc", 1)
    eight, eight_loop = _matmul_hot_loop("pvc", 5)
    assert set(re.findall(r"dpas\.\d+x\d+", one_loop)) == {"dpas.8x1"}
    assert set(re.findall(r"dpas\.\d+x\d+", eight_loop)) == {"dpas.8x8"}
    assert ocloc.count(one_loop, ocloc.DPAS) == ocloc.count(eight_loop, ocloc.DPAS)
    # both loops run two K steps per trip (xegpu-rotate-loads): 25 and 24 instructions per
    # 8 dpas (13 and 14 per 4 dpas in one step); one more is the second step's load payload
    assert len(instructions(one_loop)) <= len(instructions(eight_loop)) + 1
    assert one.asm["zebin"].spill_size("matmul_kernel") == 0


NORM_BACKWARD_SIG = {"dy": "f16[:,:]", "x": "f16[:,:]", "w": "f32[:]", "mean": "f32[:]", "rstd": "f32[:]",
                     "dx": "f16[:,:]", "pw": "f32[:,:]", "pb": "f32[:,:]", "rows": "i32", "N": "i32"}


@pytest.mark.parametrize("target", ["pvc", "arc"])
def test_norm_backward_isa(target, ocloc_path):
    """The layer norm backward kernel (rows_backward.py) at configs.norm_backward_tiles does
    not spill (ARC's chunk is the one that does not: configs.NORM_BACKWARD_CHUNK); on PVC
    both chunk loops, the partial-sum read-modify-write included, are 2D block messages only."""
    BM, BC = configs.norm_backward_tiles(target)
    report = xd.compile(norm_backward_kernel, NORM_BACKWARD_SIG, {"RMS": False, "OUT": F16, "BM": BM, "BC": BC},
                        target=target).report()
    assert report.spill_bytes == 0
    if target == "pvc":
        assert len(report.loops) == 2
        assert all(loop.counts.get("load2d", 0) > 0 and loop.counts.get("gather", 0) == 0 and
                   loop.counts.get("scatter", 0) == 0 for loop in report.loops)


#: Triton-XPU's hot loop on bmg at D = 128 (benchmarks/peer_attention_isa.py: 128 x 64,
#: 16 warps, same ocloc, same counting): non-causal, causal (off-band loop)
PEER_BMG_D128 = {False: 8.28, True: 8.33}


@pytest.mark.parametrize("causal", [False, True])
def test_attention_vnni_bmg_d128_at_most_peer(causal, ocloc_path):
    """bmg D = 128 runs O = P V with V a VNNI operand B (configs.attention_vnni_tiles):
    the short path is at most Triton-XPU's loop, without spill (measured 8.05; the
    transposed form 9.47)."""
    from xetile_dsl.ops.attention import attention_vnni_kernel
    BM, BN = configs.attention_vnni_tiles("bmg", 128)
    consts = {"CAUSAL": causal, "OUT": F16, "D": 128, "BM": BM, "BN": BN, "SCALED": False}
    report = xd.compile(attention_vnni_kernel, ATTENTION_SIG, consts, target="bmg").report()
    hot = report.hot
    assert hot.dpas == 2 * (BN // 8) * (BM // 16) * (128 // 16)
    assert not any("transpose" in shape and "16r8x1c" in shape and shape.startswith("32b") and
                   hot.load2d_shapes[shape] > 128 // 16 for shape in hot.load2d_shapes), hot.load2d_shapes
    assert report.spill_bytes == 0
    assert hot.short_path_instructions_per_dpas <= PEER_BMG_D128[causal]
