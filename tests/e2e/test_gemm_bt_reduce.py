"""XeTile RFC Appendix 2.2 and 2.3 (GEMM with transpose, broadcast and reduction at
workgroup level, the RFC's wg_map values) on the CPU device against numpy, at 512x512x512
(2x2 workgroups of 256x256), in the PVC flavour (16 lanes, 2D block IO) and the ARC
flavour (8 lanes, 256 work items per workgroup, per-lane loads), and in the XeTile
interpreter (the frontend's workgroup-level IR run with numpy)."""
from __future__ import annotations

import numpy as np
import pytest

import xetile_dsl as xd
from xetile_dsl.errors import CompilationWarning
from xetile_dsl.kernels import gemm_bt_reduce as G

SIG = {"a": "f16[:,:]", "bt": "f16[:,:]", "bcast": "f32[:,:]", "c": "f32[:,:]", "res": "f32[:,:]", "K": "i32"}


def _inputs(M, N, K, seed):
    """Small integers: every product and sum is exact in f16 x f16 -> f32."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, (M, K)).astype(np.float16)
    bt = rng.integers(-2, 3, (N, K)).astype(np.float16)
    bcast = rng.integers(-4, 5, (N,)).astype(np.float32)
    return a, bt, bcast


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc", "interpret"])
@pytest.mark.parametrize("appendix", ["2.2", "2.3"])
def test_gemm_transpose_broadcast_reduce_512_matches_numpy(appendix, target):
    M = N = K = 512
    a, bt, bcast = _inputs(M, N, K, 22 if appendix == "2.2" else 23)
    c, res = G.gemm_bt_bcast_reduce(a, bt, bcast, appendix=appendix, target=target)
    ref = a.astype(np.float32) @ bt.astype(np.float32).T + bcast[None, :]
    np.testing.assert_array_equal(c, ref)  # NaN-prefilled: every piece written
    np.testing.assert_array_equal(res, ref.reshape(M, N // 256, 256).sum(2))  # per workgroup column
    np.testing.assert_array_equal(res.sum(1), ref.sum(1))  # the RFC's Reduce


def test_both_appendices_transpose_in_the_load():
    """2.3 ([32, 1]) gives each subgroup its own BT piece; 2.2 ([4, 8] -> [8, 4]) does not,
    but BT is loaded from global memory, so each subgroup loads its result pieces already
    transposed (order = [0, 1]) too, instead of exchanging BT through SLM in the K loop;
    both reduce the 256x256 sum per subgroup first and exchange only 256x4 partials."""
    ir = {app: xd.compile(G.gemm_bt_bcast_reduce_kernel, SIG, {"MP_BT_LOAD": mp, "PF": 3}, target="cpu-pvc").asm
          for app, mp in (("2.2", G.MP_BT), ("2.3", G.MP_BT_23))}
    xetile = ir["2.2"]["xetile"]
    for m in ("sg_layout = [4, 8], sg_data = [64, 32]", "sg_layout = [8, 4], sg_data = [32, 64]",
              "sg_layout = [8, 4], sg_data = [1, 64]", "sg_layout = [32, 1], sg_data = [8, 256]",
              "sg_layout = [32, 1], sg_data = [8, 1]", "sg_layout = [32, 1], sg_data = [8, 32]"):
        assert m in xetile
    assert "sg_layout = [32, 1], sg_data = [64, 32]" in ir["2.3"]["xetile"]
    slm_22, slm_23 = ir["2.2"]["xegpu"], ir["2.3"]["xegpu"]
    for text in (slm_22, slm_23):
        assert "memref<256x32xf16, 3" not in text
        assert text.count("transpose_bit_width = #builtin.int<32>") == 8  # 2x4 16x16 B blocks per K step
    for text in (slm_22, slm_23):
        assert "memref.alloc() : memref<256x4xf32, 3 : i64>" in text and "memref<256x256xf32, 3" not in text


def test_arc_is_told_that_the_rfc_pieces_spill():
    """The RFC's 32x64 f32 accumulator piece is the whole register file of an 8-lane ARC
    subgroup: the program runs (above) and the compiler says, at the tile_mma, that the K
    loop runs in passes and which sg_data fits (lowering/analysis/register_budget.py)."""
    with pytest.warns(CompilationWarning) as record:
        xd.compile(G.gemm_bt_bcast_reduce_kernel, SIG, {"MP_BT_LOAD": G.MP_BT, "PF": 3}, target="cpu-arc")
    text = " ".join(str(w.message) for w in record)
    # since BT is read with transposed loads (no SLM in the K loop), the loop is split
    assert "32x64xf32 = 8192 bytes" in text and "the K loop runs in 4 passes" in text
    assert "sg_data of at most [16, 32]" in text
    assert "acc = xt.tile_mma(va, vb, acc, wg_map=MP_C)" in text
