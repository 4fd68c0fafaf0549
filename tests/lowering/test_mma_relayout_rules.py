"""Chained tile_mma re-layout (lowering/rewrites/mma_relayout.py) through the opt tool: on arc the
chain from a tile_mma result to the next tile_mma's operand A keeps the 8x8 result
blocks, a tile_unpack / tile_pack pair before the consumer makes 8x16 A blocks, the XeGPU
conversion makes each A block one xegpu.a_from_c of two result blocks, and the SIMT pass
gives it lane columns in and A's packed-pair fragment out. On pvc (16-bit result blocks
are A blocks) nothing is inserted. The op prints, parses back and verifies its shapes.
A result feeding operand B is stacked into B blocks on both targets, lane-locally."""
from __future__ import annotations

import re

import pytest

from tests.lowering.test_lowering_rules import opt

TO_SIMT = "xetile-blocking{0},convert-xetile-to-xegpu{0},xegpu-simt{0}"
MEM = "memref<64x64xf16>"

# s = a[8x16] @ b[16x32]; o = f16(s) @ d[32x16]
CHAINED = f"""func.func @k(%a: {MEM}, %b: {MEM}, %d: {MEM}, %c: memref<64x64xf32>) {{
  %c0 = arith.constant 0 : index
  %ta = xetile.init_tile %a[%c0, %c0] : {MEM} -> !xetile.tile<8x16xf16>
  %tb = xetile.init_tile %b[%c0, %c0] : {MEM} -> !xetile.tile<16x32xf16>
  %td = xetile.init_tile %d[%c0, %c0] : {MEM} -> !xetile.tile<32x16xf16>
  %tc = xetile.init_tile %c[%c0, %c0] : memref<64x64xf32> -> !xetile.tile<8x16xf32>
  %va = xetile.load_tile %ta : !xetile.tile<8x16xf16> -> vector<8x16xf16>
  %vb = xetile.load_tile %tb : !xetile.tile<16x32xf16> -> vector<16x32xf16>
  %vd = xetile.load_tile %td : !xetile.tile<32x16xf16> -> vector<32x16xf16>
  %s = xetile.tile_mma %va, %vb : vector<8x16xf16>, vector<16x32xf16> -> vector<8x32xf32>
  %h = arith.truncf %s : vector<8x32xf32> to vector<8x32xf16>
  %o = xetile.tile_mma %h, %vd : vector<8x32xf16>, vector<32x16xf16> -> vector<8x16xf32>
  xetile.store_tile %o, %tc : vector<8x16xf32>, !xetile.tile<8x16xf32>
  func.return
}}"""


def test_blocking_keeps_result_blocks_and_packs_operand_a_on_arc(tmp_path):
    out = opt(tmp_path, CHAINED, "xetile-blocking{target=arc}")
    assert "%h = arith.truncf %s : vector<1x4x8x8xf32> to vector<1x4x8x8xf16>" in out
    assert re.search(r"(%\w+) = xetile.tile_unpack %h \{inner_blocks = array<i64: 8, 8>\} : vector<1x4x8x8xf16> -> "
                     r"vector<8x32xf16>\n\s*(%\w+) = xetile.tile_pack \1 \{inner_blocks = array<i64: 8, 16>\} : "
                     r"vector<8x32xf16> -> vector<1x2x8x16xf16>\n\s*%o = xetile.tile_mma \2, %vd", out)


def test_arc_joins_two_result_blocks_per_a_block_and_distributes_them(tmp_path):
    xegpu = opt(tmp_path, CHAINED, "xetile-blocking{target=arc},convert-xetile-to-xegpu{target=arc}")
    joins = re.findall(r"xegpu.a_from_c %\w+, %\w+ : vector<8x8xf16>, vector<8x8xf16> -> vector<8x16xf16>", xegpu)
    assert len(joins) == 2  # 8x32 operand A: two 8x16 blocks, each of two 8x8 result blocks
    simt = opt(tmp_path, CHAINED, TO_SIMT.format("{target=arc}"))
    joins = re.findall(r"(%\w+) = xegpu.a_from_c %\w+, %\w+ : vector<8x1xf16>, vector<8x1xf16> -> vector<8x2xf16>",
                       simt)
    assert len(joins) == 2
    for a in joins:
        assert len(re.findall(rf"xegpu.dpas {a}, %\w+(?:, %\w+)? : vector<8x2xf16>, vector<8x2xf16>"
                              rf"(?:, vector<8x1xf32>)? -> vector<8x1xf32>", simt)) == 2  # two 8-column results
    assert "xegpu.a_from_c" in opt(tmp_path, simt, "")  # printable and parseable


def test_pvc_result_blocks_are_a_blocks(tmp_path):
    out = opt(tmp_path, CHAINED, TO_SIMT.format(""))
    assert "a_from_c" not in out and "tile_pack" not in out
    assert "xegpu.dpas" in out


def test_a_from_c_checks_its_shapes(tmp_path):
    text = """func.func @k(%x: vector<8x1xf16>, %y: vector<8x1xf16>) {
  %a = xegpu.a_from_c %x, %y : vector<8x1xf16>, vector<8x1xf16> -> vector<8x4xf16>
  func.return
}"""
    assert "2 sources of vector<8x1xf16> join into vector<8x2xf16>" in opt(tmp_path, text, "", expect_ok=False)


# s = a[16x16] @ b[16x32]; o = e[8x16] @ f16(s): the result feeds operand B
INTO_B = f"""func.func @k(%a: {MEM}, %b: {MEM}, %e: {MEM}, %c: memref<64x64xf32>) {{
  %c0 = arith.constant 0 : index
  %ta = xetile.init_tile %a[%c0, %c0] : {MEM} -> !xetile.tile<16x16xf16>
  %tb = xetile.init_tile %b[%c0, %c0] : {MEM} -> !xetile.tile<16x32xf16>
  %te = xetile.init_tile %e[%c0, %c0] : {MEM} -> !xetile.tile<8x16xf16>
  %tc = xetile.init_tile %c[%c0, %c0] : memref<64x64xf32> -> !xetile.tile<8x32xf32>
  %va = xetile.load_tile %ta : !xetile.tile<16x16xf16> -> vector<16x16xf16>
  %vb = xetile.load_tile %tb : !xetile.tile<16x32xf16> -> vector<16x32xf16>
  %ve = xetile.load_tile %te : !xetile.tile<8x16xf16> -> vector<8x16xf16>
  %s = xetile.tile_mma %va, %vb : vector<16x16xf16>, vector<16x32xf16> -> vector<16x32xf32>
  %h = arith.truncf %s : vector<16x32xf32> to vector<16x32xf16>
  %o = xetile.tile_mma %ve, %h : vector<8x16xf16>, vector<16x32xf16> -> vector<8x32xf32>
  xetile.store_tile %o, %tc : vector<8x32xf32>, !xetile.tile<8x32xf32>
  func.return
}}"""


@pytest.mark.parametrize("target,lanes", [("pvc", 16), ("arc", 8)])
def test_operand_b_stacks_result_blocks_without_lane_moves(tmp_path, target, lanes):
    """The chain keeps 8 x L result blocks; a tile_unpack / tile_pack pair makes 16 x L B
    blocks, each the two result blocks above each other (vector.insert_strided_slice), which
    at SIMT concatenates each lane's two [8, 1] columns into its [16, 1] one: VNNI pairs of
    consecutive rows, no shuffle."""
    blocked = opt(tmp_path, INTO_B, f"xetile-blocking{{target={target}}}")
    n = 32 // lanes
    assert f"%h = arith.truncf %s : vector<2x{n}x8x{lanes}xf32> to vector<2x{n}x8x{lanes}xf16>" in blocked
    assert re.search(rf"(%\w+) = xetile.tile_unpack %h \{{inner_blocks = array<i64: 8, {lanes}>\}} : "
                     rf"vector<2x{n}x8x{lanes}xf16> -> vector<16x32xf16>\n\s*(%\w+) = xetile.tile_pack \1 "
                     rf"\{{inner_blocks = array<i64: 16, {lanes}>\}} : vector<16x32xf16> -> "
                     rf"vector<1x{n}x16x{lanes}xf16>\n\s*%o = xetile.tile_mma %\w+, \2", blocked)
    xegpu = opt(tmp_path, INTO_B, f"xetile-blocking{{target={target}}},convert-xetile-to-xegpu{{target={target}}}")
    assert len(re.findall(rf"vector.insert_strided_slice %\w+, %\w+ \{{offsets = \[8, 0\].*\}} : vector<8x{lanes}xf16> "
                          rf"into vector<16x{lanes}xf16>", xegpu)) == n
    simt = opt(tmp_path, INTO_B, TO_SIMT.format(f"{{target={target}}}"))
    assert len(re.findall(r"vector.insert_strided_slice %\w+, %\w+ \{offsets = \[8, 0\].*\} : vector<8x1xf16> "
                          r"into vector<16x1xf16>", simt)) == n
    assert "a_from_c" not in simt and "lane_transpose" not in simt
    # operand A: one column per lane on pvc, packed pairs on arc
    assert len(re.findall(r"xegpu.dpas %\w+, %\w+ : vector<8x[12]xf16>, vector<16x1xf16> -> vector<8x1xf32>",
                          simt)) == n
