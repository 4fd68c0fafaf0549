"""xetile-wg-to-sg rules for workgroup-level vector ops (lowering/passes/wg_to_sg/vectors.py): the
RFC's derived maps for tile_reduce and tile_broadcast, element-wise ops distributed like
their operands, tile_conv_layout and cross-subgroup reductions through SLM + barrier."""
from __future__ import annotations

import re

from tests.lowering.test_lowering_rules import opt, tile, wg


def _kernel(body: str, ins: str) -> str:
    rows, cols = re.match(r"!xetile.tile<(\d+)x(\d+)x", ins).groups()
    return f"""
func.func @k(%a: memref<1024x1024xf32>) {{
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %a[%c0, %c0] : memref<1024x1024xf32> -> {ins}
  %v = xetile.load_tile %t : {ins} -> vector<{rows}x{cols}xf32>
{body}
  func.return
}}"""


# Rule inputs: (body, input tile); ``_kernel(body, ins)`` is the kernel.  The bodies'
# last values (%r, %d) are what tests/lowering/test_rules_agree.py stores and compares.
RFC_REDUCE = (f"  %r = xetile.tile_reduce <add> %v [1] {{wg_map = {wg((32, 1), (8, 1))}}} : vector<256x128xf32> -> "
              f"vector<256x1xf32>", tile((256, 128), "f32", wg((32, 1), (8, 128))))
BROADCAST = (f"""  %s = xetile.tile_reduce <maximumf> %v [1] : vector<256x256xf32> -> vector<256x1xf32>
  %b = xetile.tile_broadcast %s [1] {{wg_map = {wg((16, 1), (16, 256))}}} : vector<256x1xf32> -> vector<256x256xf32>
  %d = arith.subf %v, %b : vector<256x256xf32>""", tile((256, 256), "f32", wg((16, 1), (16, 256))))
CONV_LAYOUT = (f"  %r = xetile.tile_conv_layout %v {{wg_map = {wg((1, 4), (64, 16))}}} : vector<64x64xf32> -> "
               "vector<64x64xf32>", tile((64, 64), "f32", wg((4, 1), (16, 64))))
CROSS_REDUCE = ("  %r = xetile.tile_reduce <add> %v [0] : vector<64x64xf32> -> vector<1x64xf32>",
                tile((64, 64), "f32", wg((4, 1), (16, 64))))


def test_rfc_reduce_example_derives_the_source_map(tmp_path):
    """RFC: reduce [1] of 256x128 with wg_map [32,1]x[8,1]; the source map is derived as
    [32,1]x[8,128]; each subgroup reduces its 8 whole rows, no SLM."""
    out = opt(tmp_path, _kernel(*RFC_REDUCE), "xetile-wg-to-sg")
    assert re.search(r"xetile.tile_reduce <add> %\w+ \[1\] : vector<8x128xf32> -> vector<8x1xf32>", out)
    assert "xetile.num_subgroups = 32" in out and "memref.alloc" not in out and "gpu.barrier" not in out


def test_reduce_source_map_mismatch_is_reported(tmp_path):
    ins = tile((256, 128), "f32", wg((32, 1), (8, 128)))
    body = f"  %r = xetile.tile_reduce <add> %v [1] {{wg_map = {wg((16, 2), (16, 1))}}} : vector<256x128xf32> -> " \
           f"vector<256x1xf32>"
    err = opt(tmp_path, _kernel(body, ins), "xetile-wg-to-sg", expect_ok=False)
    assert "tile_reduce: the source is distributed as wg_map(sg_layout=[32, 1], sg_data=[8, 128])" in err


def test_rfc_broadcast_example_and_elementwise(tmp_path):
    """RFC: broadcast [1] of 256x1 with wg_map [16,1]x[16,256] (source [16,1]x[16,1]); the
    add that uses it is split like its operands: one 16x256 piece per subgroup."""
    out = opt(tmp_path, _kernel(*BROADCAST), "xetile-wg-to-sg")
    assert re.search(r"xetile.tile_broadcast %\w+ \[1\] : vector<16x1xf32> -> vector<16x256xf32>", out)
    assert re.search(r"arith.subf %\w+, %\w+ : vector<16x256xf32>", out)


def test_conv_layout_goes_through_slm_with_a_barrier(tmp_path):
    out = opt(tmp_path, _kernel(*CONV_LAYOUT), "xetile-wg-to-sg")
    assert "memref.alloc() : memref<64x64xf32, 3 : i64>" in out
    store, barrier, load = (out.index(s) for s in ("xetile.store_tile", "gpu.barrier", "xetile.load_tile %"))
    assert store < barrier < out.rindex("xetile.load_tile")
    assert "!xetile.tile<16x64xf32, #xetile.tile_attr<memory_space = 3>>" in out  # the source pieces
    assert "!xetile.tile<64x16xf32, #xetile.tile_attr<memory_space = 3>>" in out  # the target pieces


def test_cross_subgroup_reduce_combines_partials_through_slm(tmp_path):
    """Reduce [0] of row bands [4,1]x[16,64]: local 16x64 -> 1x64, partials 4x64 in SLM,
    every subgroup loads all 4 and reduces again."""
    out = opt(tmp_path, _kernel(*CROSS_REDUCE), "xetile-wg-to-sg")
    assert "memref.alloc() : memref<4x64xf32, 3 : i64>" in out and out.count("gpu.barrier") == 1
    assert re.search(r"tile_reduce <add> %\w+ \[0\] : vector<16x64xf32> -> vector<1x64xf32>", out)
    assert re.search(r"tile_reduce <add> %\w+ \[0\] : vector<4x64xf32> -> vector<1x64xf32>", out)


def test_elementwise_operands_must_agree(tmp_path):
    ins = tile((64, 64), "f32", wg((4, 1), (16, 64)))
    other = tile((64, 64), "f32", wg((1, 4), (64, 16)))
    body = f"""  %t2 = xetile.init_tile %a[%c0, %c0] : memref<1024x1024xf32> -> {other}
  %w = xetile.load_tile %t2 : {other} -> vector<64x64xf32>
  %d = arith.addf %v, %w : vector<64x64xf32>"""
    err = opt(tmp_path, _kernel(body, ins), "xetile-wg-to-sg", expect_ok=False)
    assert "distributed" in err and "tile_conv_layout" in err


def test_reduce_of_both_dimensions_of_a_workgroup_tile_says_how(tmp_path):
    """A workgroup tile reduced along [0, 1] at once (MLIR input; the frontend emits two
    reductions) is a located error naming the legal form, not an internal error."""
    ins = tile((64, 64), "f32", wg((2, 2), (32, 32)))
    body = "  %r = xetile.tile_reduce <add> %v [0, 1] : vector<64x64xf32> -> vector<1x1xf32>"
    err = opt(tmp_path, _kernel(body, ins), "xetile-wg-to-sg", expect_ok=False)
    assert "reduced along one dimension at a time (reduction_dims [0, 1]): reduce dimension 1, then dimension 0" \
        in err
    assert "internal" not in err


def test_a_reduce_across_subgroups_that_share_data_is_refused(tmp_path):
    """[8,1]x[16,64] over 64 rows wraps: subgroups 0 and 4 hold the same rows, so adding
    every subgroup's partial would count each row twice; refused, saying what would do."""
    body, _ = CROSS_REDUCE
    err = opt(tmp_path, _kernel(body, tile((64, 64), "f32", wg((8, 1), (16, 64)))), "xetile-wg-to-sg", expect_ok=False)
    assert "wraps around dimension 0" in err and "sg_layout * sg_data = 64" in err
