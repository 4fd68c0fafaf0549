"""Rules for user-allocated SLM tiles (RFC Appendix 2.4, ``xt.slm_alloc``), through the
opt tool: a ``memref.alloc`` in memory space 3 stays one buffer; workgroup tiles over it
(``memory_space = 3`` with a wg_map) are distributed like global tiles, keep their memory
space on every piece and move with ``update_tile_offset`` (by a runtime delta: a ring
that wraps around); XeGPU descriptors over it are ``memory_space = slm``; the buffers'
total is checked against the target's SLM. The same kernel runs compiled on the CPU
device (both flavours) and in both interpreter modes, and all agree with numpy."""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.lowering.test_lowering_rules import opt, wg
from tests.lowering.test_rules_agree import _three_ways

COP = wg((16, 1), (4, 64))   # cooperative map: 16 subgroups, 4 whole rows each
MMA = wg((4, 4), (16, 16))   # the readers' map


def _tile(layout: str, slm: bool) -> str:
    space = ", memory_space = 3" if slm else ""
    return f"!xetile.tile<64x64xf16, #xetile.tile_attr<wg_map = {layout}{space}>>"


def ring_kernel(ring_cols: int = 128, elem_bytes_check: str = "f16") -> str:
    """Four 64x64 K slices of ``%a`` go through a ring of ``ring_cols / 64`` slots of a
    64 x ring_cols SLM buffer (stored with the cooperative map, read back with the other
    map after a barrier) into ``%o`` (64x256)."""
    g, ss, sl, to = _tile(COP, False), _tile(COP, True), _tile(MMA, True), _tile(MMA, False)
    slm = f"memref<64x{ring_cols}x{elem_bytes_check}, 3 : i64>"
    return f"""
func.func @k(%a: memref<1024x1024xf16>, %o: memref<64x256xf16>) {{
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %cring = arith.constant {ring_cols} : index
  %c256 = arith.constant 256 : index
  %s = memref.alloc() : {slm}
  %g = xetile.init_tile %a[%c0, %c0] : memref<1024x1024xf16> -> {g}
  %ss = xetile.init_tile %s[%c0, %c0] : {slm} -> {ss}
  %sl = xetile.init_tile %s[%c0, %c0] : {slm} -> {sl}
  %r:3 = scf.for %k = %c0 to %c256 step %c64 iter_args(%pg = %g, %ps = %ss, %pl = %sl) -> ({g}, {ss}, {sl}) {{
    %v = xetile.load_tile %pg : {g} -> vector<64x64xf16>
    "gpu.barrier"() : () -> ()
    xetile.store_tile %v, %ps : vector<64x64xf16>, {ss}
    "gpu.barrier"() : () -> ()
    %w = xetile.load_tile %pl : {sl} -> vector<64x64xf16>
    %to = xetile.init_tile %o[%c0, %k] : memref<64x256xf16> -> {to}
    xetile.store_tile %w, %to : vector<64x64xf16>, {to}
    %off = arith.remsi %k, %cring : index
    %k1 = arith.addi %k, %c64 : index
    %nxt = arith.remsi %k1, %cring : index
    %d = arith.subi %nxt, %off : index
    %ng = xetile.update_tile_offset %pg, %c0, %c64 : {g}
    %ns = xetile.update_tile_offset %ps, %c0, %d : {ss}
    %nl = xetile.update_tile_offset %pl, %c0, %d : {sl}
    scf.yield %ng, %ns, %nl : {g}, {ss}, {sl}
  }}
  func.return
}}"""


def test_slm_tiles_are_distributed_like_global_tiles(tmp_path):
    """One buffer; the cooperative pieces are 4x64, the readers' 16x16, both in space 3;
    the ring's runtime delta moves every SLM piece; the user's barriers stay."""
    out = opt(tmp_path, ring_kernel(), "xetile-wg-to-sg")
    assert out.count("memref.alloc() : memref<64x128xf16, 3 : i64>") == 1
    assert "xetile.num_subgroups = 16" in out and out.count("gpu.barrier") == 2
    assert re.search(r"xetile.init_tile %s\[%\w+, %\w+\] : memref<64x128xf16, 3 : i64> -> "
                     r"!xetile.tile<4x64xf16, #xetile.tile_attr<memory_space = 3>>", out)
    assert re.search(r"xetile.init_tile %s\[%\w+, %\w+\] : memref<64x128xf16, 3 : i64> -> "
                     r"!xetile.tile<16x16xf16, #xetile.tile_attr<memory_space = 3>>", out)
    assert re.search(r"update_tile_offset %ps, %c0, %d : !xetile.tile<4x64xf16, #xetile.tile_attr<memory_space = 3>>",
                     out)
    assert re.search(r"update_tile_offset %pl, %c0, %d : !xetile.tile<16x16xf16, #xetile.tile_attr<memory_space = 3>>",
                     out)


def test_slm_tiles_become_slm_tensor_descriptors(tmp_path):
    """Blocked (4x64 -> four 4x16 blocks, 16x16 -> two 8x16), each an SLM descriptor that
    the ring delta moves; the global slice keeps plain descriptors."""
    out = opt(tmp_path, ring_kernel(), "xetile-wg-to-sg,xetile-blocking,convert-xetile-to-xegpu")
    slm4 = "!xegpu.tensor_desc<4x16xf16, #xegpu.block_tdesc_attr<memory_space = slm>>"
    slm8 = "!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<memory_space = slm>>"
    assert out.count(f"memref<64x128xf16, 3 : i64> -> {slm4}") == 4
    assert out.count(f"memref<64x128xf16, 3 : i64> -> {slm8}") == 2
    assert len(re.findall(rf"xegpu.store_nd %\w+, %\w+ : vector<4x16xf16>, {re.escape(slm4)}", out)) == 4
    assert len(re.findall(rf"xegpu.load_nd %\w+ : {re.escape(slm8)}", out)) == 2
    assert len(re.findall(rf"xegpu.update_nd_offset %\w+, %c0, %d : {re.escape(slm4)}", out)) == 4
    assert len(re.findall(r"xegpu.update_nd_offset %\w+, %c0, %c64 : !xegpu.tensor_desc<4x16xf16>\n", out)) == 4


def test_slm_buffers_larger_than_the_target_are_rejected(tmp_path):
    """A 64x1024 f16 ring (128 KiB) fits PVC's SLM, not ARC's 64 KiB: the error names
    the buffer, the bytes needed and available."""
    text = ring_kernel(1024)
    assert "memory_space = 3" in opt(tmp_path, text, "xetile-wg-to-sg{target=pvc}")
    err = opt(tmp_path, text, "xetile-wg-to-sg{target=arc}", expect_ok=False)
    assert ("the xt.slm_alloc buffers of this kernel need 131072 B of shared local memory "
            "(64x1024 f16 = 131072 B), but arc has 65536 B per workgroup") in err


def test_user_slm_counts_towards_exchange_budget(tmp_path):
    """A compiler exchange (tile_conv_layout) comes on top of the user's buffer: 64 KiB
    of SLM + a 64x64 f16 exchange (8 KiB) exceeds ARC's 64 KiB, and nothing is left for
    even one round of row chunks (lowering/passes/wg_to_sg/conv_rounds.py)."""
    text = ring_kernel(512).replace(
        "    %w = xetile.load_tile %pl",
        f"    %x = xetile.tile_conv_layout %v {{wg_map = {MMA}}} : vector<64x64xf16> -> vector<64x64xf16>\n"
        "    %w = xetile.load_tile %pl")
    assert "memref<64x64xf16, 3 : i64>" in opt(tmp_path, text, "xetile-wg-to-sg{target=pvc}")
    err = opt(tmp_path, text, "xetile-wg-to-sg{target=arc}", expect_ok=False)
    assert "in rounds of row chunks" in err
    assert "but arc has 65536 B per workgroup and 0 B are left in this kernel" in err


@pytest.mark.parametrize("target", ["cpu-pvc", "cpu-arc"])
def test_slm_ring_agrees_compiled_and_interpreted(target):
    """Compiled on the CPU device, whole-tile and per-subgroup interpreter: ``o`` is the
    four slices of ``a`` in order (a wrong ring offset or a missing barrier would mix
    them up)."""
    rng = np.random.default_rng(24)
    a = rng.standard_normal((1024, 1024)).astype(np.float16)
    o = np.full((64, 256), np.nan, np.float16)
    compiled, whole, per_sg = _three_ways(ring_kernel(), target, [a, o])
    for what, got in (("whole-tile", whole[1]), ("per-subgroup", per_sg[1]), (target, compiled[1])):
        np.testing.assert_array_equal(got, a[:64, :256], err_msg=what)
