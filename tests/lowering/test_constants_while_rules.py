"""Lowering rules for non-splat constants (``xt.arange``), ``scf.while`` with tile values
and integer reductions: small MLIR inputs through ``python -m xetile_dsl opt -p``."""
from __future__ import annotations

import re

import xetile_dsl as xd
from xetile_dsl.dialects import parse_module, print_module
from kernels.index_ops import argmax_rows_kernel, int_reductions_kernel

from .test_lowering_rules import opt, tile, wg

IOTA32 = "[" + ", ".join(map(str, range(32))) + "]"


def _iota_kernel(wg_map: str | None = None) -> str:
    """y = x + arange(0, 32) on a 16x32 i32 tile (workgroup level with ``wg_map``)."""
    t = tile((16, 32), "i32", wg_map)
    return f"""
func.func @k(%x: memref<64x64xi32>, %y: memref<64x64xi32>) {{
  %c0 = arith.constant 0 : index
  %tx = xetile.init_tile %x[%c0, %c0] : memref<64x64xi32> -> {t}
  %v = xetile.load_tile %tx : {t} -> vector<16x32xi32>
  %iota = arith.constant dense<[{IOTA32}]> : vector<1x32xi32>
  %rows = xetile.tile_broadcast %iota [0] : vector<1x32xi32> -> vector<16x32xi32>
  %s = arith.addi %v, %rows : vector<16x32xi32>
  %ty = xetile.init_tile %y[%c0, %c0] : memref<64x64xi32> -> {t}
  xetile.store_tile %s, %ty : vector<16x32xi32>, {t}
  func.return
}}"""


def test_blocking_reorders_a_non_splat_constant_into_its_blocks(tmp_path):
    out = opt(tmp_path, _iota_kernel(), "xetile-blocking{target=pvc}")
    # [1, 32] -> 1 x 16 blocks: grid [1, 2], block row j holds 16j .. 16j + 15
    const = re.search(r"arith.constant dense<(.*?)> : vector<1x2x1x16xi32>", out)
    assert const, out
    assert const.group(1).replace(" ", "") == "[[[[" + ",".join(map(str, range(16))) + "]],[[" + \
        ",".join(map(str, range(16, 32))) + "]]]]"


def test_xegpu_gives_each_block_its_own_constant(tmp_path):
    out = opt(tmp_path, _iota_kernel(), "xetile-blocking{target=pvc},convert-xetile-to-xegpu")
    consts = re.findall(r"arith.constant dense<\[\[(.*?)\]\]> : vector<1x16xi32>", out)
    assert [list(map(int, c.split(","))) for c in consts] == [list(range(16)), list(range(16, 32))]


def test_simt_reads_a_lane_table_with_the_lane_id(tmp_path):
    """Lane n of a 1 x 16 block holds column n: a 16-row table read at gpu.lane_id."""
    out = opt(tmp_path, _iota_kernel(), "xetile-blocking{target=pvc},convert-xetile-to-xegpu,xegpu-simt{target=pvc}")
    tables = re.findall(r"(%\d+) = arith.constant dense<.*?> : vector<16x1x1xi32>", out)
    assert len(tables) == 2
    for table in tables:
        assert re.search(rf"vector.extract {table}\[%\d+\] : vector<1x1xi32> from vector<16x1x1xi32>", out)
    assert out.count('"gpu.lane_id"()') == 2
    assert print_module(parse_module(out)).strip() == out.strip()  # the SIMT text parses back


def test_simt_lane_table_on_eight_lanes(tmp_path):
    out = opt(tmp_path, _iota_kernel(), "xetile-blocking{target=arc},convert-xetile-to-xegpu,xegpu-simt{target=arc}")
    assert len(re.findall(r"arith.constant dense<.*?> : vector<8x1x1xi32>", out)) == 4  # 32 columns / 8 lanes


def test_wg_to_sg_arange_is_a_local_constant_plus_the_subgroup_offset(tmp_path):
    """[2, 2] x [8, 16] subgroups over 16 x 32: the [1, 32] arange takes the map
    [2, 2] x [1, 16]; each subgroup adds (col * 16) to the piece-local 0 .. 15."""
    out = opt(tmp_path, _iota_kernel(wg((2, 2), (8, 16))), "xetile-wg-to-sg")
    local = "[[" + ", ".join(map(str, range(16))) + "]]"
    assert f"arith.constant dense<{local}> : vector<1x16xi32>" in out
    assert re.search(r"arith.index_cast %\d+ : index to i32", out)
    assert re.search(r"vector.broadcast %\d+ : i32 to vector<1x16xi32>", out)
    assert re.search(r"arith.addi %\d+, %\d+ : vector<1x16xi32>", out)
    assert IOTA32 not in out


def test_wg_to_sg_reports_a_non_affine_constant(tmp_path):
    text = _iota_kernel(wg((2, 2), (8, 16))).replace(f"dense<[{IOTA32}]>",
                                                          "dense<[[" + ", ".join(str(i * i) for i in range(32)) + "]]>")
    err = opt(tmp_path, text, "xetile-wg-to-sg", expect_ok=False)
    assert "must be affine in the row and column" in err


WHILE = f"""
func.func @k(%x: memref<64x64xf32>, %n: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = xetile.init_tile %x[%c0, %c0] : memref<64x64xf32> -> {tile((16, 32), "f32")}
  %v = xetile.load_tile %t : {tile((16, 32), "f32")} -> vector<16x32xf32>
  %half = arith.constant dense<5.000000e-01> : vector<16x32xf32>
  %r:2 = scf.while (%a = %v, %i = %c0) : (vector<16x32xf32>, index) -> (vector<16x32xf32>, index) {{
    %go = arith.cmpi slt, %i, %n : index
    scf.condition(%go) %a, %i : vector<16x32xf32>, index
  }} do {{
  ^bb0(%b: vector<16x32xf32>, %j: index):
    %h = arith.mulf %b, %half : vector<16x32xf32>
    %j1 = arith.addi %j, %c1 : index
    scf.yield %h, %j1 : vector<16x32xf32>, index
  }}
  xetile.store_tile %r#0, %t : vector<16x32xf32>, {tile((16, 32), "f32")}
  func.return
}}"""


def test_while_carries_a_blocked_tile_as_a_blocked_vector(tmp_path):
    out = opt(tmp_path, WHILE, "xetile-blocking{target=pvc}")
    assert re.search(r"scf.while .*: \(vector<2x2x8x16xf32>, index\) -> \(vector<2x2x8x16xf32>, index\)", out)


def test_while_carries_every_block_after_xegpu(tmp_path):
    """1:N: the 16x32 tile is four 8x16 blocks in the before/after arguments, the
    condition, the yield and the results."""
    out = opt(tmp_path, WHILE, "xetile-blocking{target=pvc},convert-xetile-to-xegpu")
    four = ", ".join(["vector<8x16xf32>"] * 4)
    assert re.search(rf"scf.while .*: \({four}, index\) -> \({four}, index\)", out)
    assert re.search(rf"scf.condition\(%\w+\) (%\w+, ){{4}}%\w+ : {four}, index", out)
    assert re.search(rf"scf.yield (%\w+, ){{4}}%\w+ : {four}, index", out)
    assert out.count("arith.mulf") == 4 and out.count("xegpu.store_nd") == 4


def test_while_after_simt_carries_lane_fragments(tmp_path):
    out = opt(tmp_path, WHILE, "xetile-blocking{target=pvc},convert-xetile-to-xegpu,xegpu-simt{target=pvc}")
    four = ", ".join(["vector<8x1xf32>"] * 4)
    assert re.search(rf"scf.while .*: \({four}, index\) -> \({four}, index\)", out)


def test_argmax_compiles_to_compare_select_and_an_i32_min_reduction():
    """argmax = max reduction, compare with it, select the column index (an arange
    lane table) or n, min reduction over i32."""
    k = xd.compile(argmax_rows_kernel, {"x": "f32[:,:]", "best": "i32[:,:]", "worst": "i32[:,:]"},
                   {"BM": 8, "BN": 32}, target="cpu-pvc")
    xetile = k.asm["xetile"]
    assert 'xetile.tile_reduce <maximumf>' in xetile and 'xetile.tile_reduce <minsi>' in xetile
    assert re.search(r"arith.constant dense<\[\[0, 1, 2, .*31\]\]> : vector<1x32xi32>", xetile)
    assert re.search(r"vector.extract %\d+\[%\d+\] : vector<1x1xi32> from vector<16x1x1xi32>", k.asm["simt"])
    # argmin over rows: the [8, 1] row index is replicated (the same constant in every lane)
    assert "arith.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7]]> : vector<8x1xi32>" in k.asm["simt"]
    assert "lane_table" not in k.asm["llvm"]  # affine: computed from the lane id, not loaded


def test_int8_reduction_blocks_element_wise_and_keeps_its_type():
    sig = {n: "i8[:,:]" for n in ("x", "rsum", "rmax", "cmin", "cprod")}
    k = xd.compile(int_reductions_kernel, sig, {"BM": 8, "BN": 64}, target="cpu-pvc")
    blocked = k.asm["xegpu"]
    # 8 x 16 blocks (the element-wise lane layout), not 8 x 32 as for other 8-bit tiles
    assert "!xegpu.tensor_desc<8x16xi8" in blocked and "tensor_desc<8x32xi8" not in blocked
    assert re.search(r'xetile.tile_reduce <add> %\w+ \[1\] : vector<8x16xi8> -> vector<8x1xi8>', blocked)
    assert re.search(r'xetile.tile_reduce <minsi> %\w+ \[0\] : vector<8x16xi8> -> vector<1x16xi8>', blocked)
    assert "_Z23intel_sub_group_shuffleij" in k.asm["llvm"]
