"""Rules added for RFC Appendix 2.5 (GEMM with two cache levels), through the opt tool:
scf.if with workgroup tile results (1:N in xetile-wg-to-sg, blocked, one XeGPU tensor
descriptor per block, SIMT sg_maps), gpu.barrier kept in its branch, prefetch_tile
locality -> XeGPU cache hints."""
from __future__ import annotations

import re

import pytest

from tests.lowering.test_lowering_rules import opt, tile, wg

TO_XEGPU = "xetile-wg-to-sg,xetile-blocking,convert-xetile-to-xegpu"


def _if_kernel(ty: str, locality: int = 2) -> str:
    """A K loop whose ``if (k % 128 == 0)`` holds a barrier, prefetches the carried tile
    and moves it on (the if yields the tile; the else yields it unchanged)."""
    return f"""
func.func @k(%a: memref<1024x1024xf16>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %c32 = arith.constant 32 : index
  %t = xetile.init_tile %a[%c0, %c0] : memref<1024x1024xf16> -> {ty}
  %r = scf.for %k = %c0 to %n step %c32 iter_args(%p = %t) -> ({ty}) {{
    %m = arith.remsi %k, %c128 : index
    %z = arith.cmpi eq, %m, %c0 : index
    %q = scf.if %z -> ({ty}) {{
      "gpu.barrier"() : () -> ()
      xetile.prefetch_tile %p locality<{locality}> : {ty}
      %u = xetile.update_tile_offset %p, %c0, %c128 : {ty}
      scf.yield %u : {ty}
    }} else {{
      scf.yield %p : {ty}
    }}
    scf.yield %q : {ty}
  }}
  func.return
}}"""


ROUND_ROBIN = tile((128, 128), "f16", wg((4, 1), (16, 128)))  # two 16x128 pieces per subgroup


def test_if_with_tile_results_is_split_like_the_loop(tmp_path):
    out = opt(tmp_path, _if_kernel(ROUND_ROBIN), "xetile-wg-to-sg")
    piece = "!xetile.tile<16x128xf16>"
    assert re.search(rf"%\w+, %\w+ = scf.if %\w+ -> \({piece}, {piece}\) \{{", out)
    branch = out[out.index("scf.if"):out.index("} else {")]
    assert branch.count('"gpu.barrier"') == 1  # one barrier per workgroup-level barrier
    assert branch.count("xetile.prefetch_tile") == 2 and branch.count("locality<2>") == 2
    assert branch.count("xetile.update_tile_offset") == 2
    assert re.search(rf"}} else {{\s+scf.yield %p, %p_1 : {piece}, {piece}", out)


def test_if_results_become_one_tensor_descriptor_per_block(tmp_path):
    out = opt(tmp_path, _if_kernel(ROUND_ROBIN), TO_XEGPU)
    results = re.search(r"= scf.if %\w+ -> \((.*?)\) \{", out).group(1)
    # two 16x128 pieces, each 2 x 8 blocks of 8x16 (a prefetched tile: 8 x subgroup size)
    assert results.count("!xegpu.tensor_desc<8x16xf16>") == 32
    branch = out[out.index("scf.if"):out.index("} else {")]
    assert branch.count("xegpu.update_nd_offset") == 32 and branch.count('"gpu.barrier"') == 1


@pytest.mark.parametrize("locality, hints", [
    (3, "{l1_hint = cached, l3_hint = cached}"),
    (2, "{l1_hint = uncached, l3_hint = cached}"),
    (1, "{l1_hint = uncached, l3_hint = cached}"),
    (0, "{l1_hint = uncached, l3_hint = uncached}"),
])
def test_prefetch_locality_becomes_cache_hints(tmp_path, locality, hints):
    out = opt(tmp_path, _if_kernel(tile((128, 128), "f16", wg((8, 1), (16, 128))), locality), TO_XEGPU)
    prefetches = [ln for ln in out.splitlines() if "xegpu.prefetch_nd" in ln]
    assert len(prefetches) == 16 and all(hints in ln for ln in prefetches)


def test_if_results_get_the_sg_map_of_their_family(tmp_path):
    out = opt(tmp_path, _if_kernel(ROUND_ROBIN), TO_XEGPU + ",xegpu-simt")
    results = re.search(r"= scf.if %\w+ -> \((.*?)\) \{", out).group(1)
    assert results.count("#xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>") == 32


def test_subgroup_level_if_with_tile_results_is_blocked(tmp_path):
    """Without wg_map the same if goes straight to blocking: an 8x32 tile is 2 blocks."""
    out = opt(tmp_path, _if_kernel(tile((8, 32), "f16")), "xetile-blocking,convert-xetile-to-xegpu")
    results = re.search(r"= scf.if %\w+ -> \((.*?)\) \{", out).group(1)
    assert results.count("!xegpu.tensor_desc<8x16xf16>") == 2


# the register budget of tile_mma (error, warning, split note): test_split_accumulators_rules.py
