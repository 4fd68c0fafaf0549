"""The register transpose (lowering/rewrites/register_transpose.py) through the opt tool: xetile-sg-transpose
keeps a computed transpose that fits, blocking keeps it 2-D between tile_unpack and tile_pack,
the XeGPU conversion joins blocks into lanes x lanes squares (vector.insert_strided_slice),
transposes each (vector.transpose; 16-bit squares in pairs packed into i32 words) and cuts the
result blocks out (vector.extract_strided_slice),
and the SIMT pass makes each square transpose an xegpu.lane_transpose of one column per lane.
Where registers do not fit (too large, operand A, pieces of other subgroups) the SLM path is
chosen; the new ops' verifiers and target legality."""
from __future__ import annotations

import re
import subprocess
import sys

from tests.lowering.test_lowering_rules import opt, tile, wg

TO_XEGPU = "xetile-sg-transpose{0},xetile-blocking{0},convert-xetile-to-xegpu"


def _passes(target: str = "pvc", simt: bool = False) -> str:
    opts = "" if target == "pvc" else f"{{target={target}}}"
    return TO_XEGPU.format(opts) + (f",xegpu-simt{opts}" if simt else "")


def _kernel(rows: int = 32, cols: int = 16, elem: str = "f32", extra: str = "") -> str:
    """%r = (%v + %v)^T of a loaded rows x cols tile, stored; ``extra`` after it."""
    mem = f"memref<1024x1024x{elem}>"
    src, dst = f"vector<{rows}x{cols}x{elem}>", f"vector<{cols}x{rows}x{elem}>"
    return f"""func.func @k(%a: {mem}, %o: {mem}) {{
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %a[%c0, %c0] : {mem} -> !xetile.tile<{rows}x{cols}x{elem}>
  %to = xetile.init_tile %o[%c0, %c0] : {mem} -> !xetile.tile<{cols}x{rows}x{elem}>
  %v = xetile.load_tile %t : !xetile.tile<{rows}x{cols}x{elem}> -> {src}
  %w = arith.addf %v, %v : {src}
  %r = xetile.tile_transpose %w [1, 0] : {src} -> {dst}
  xetile.store_tile %r, %to : {dst}, !xetile.tile<{cols}x{rows}x{elem}>
{extra}  func.return
}}"""


def test_sg_transpose_keeps_a_computed_transpose_that_fits(tmp_path):
    out = opt(tmp_path, _kernel(), "xetile-sg-transpose")
    assert "xetile.tile_transpose %w [1, 0] : vector<32x16xf32> -> vector<16x32xf32>" in out
    assert "memref.alloc" not in out and "gpu.barrier" not in out


def test_blocking_keeps_the_transpose_2d_between_unpack_and_pack(tmp_path):
    out = opt(tmp_path, _kernel(), "xetile-sg-transpose,xetile-blocking")
    assert re.search(r"(%\w+) = xetile.tile_unpack %w \{inner_blocks = array<i64: 8, 16>\} : vector<4x1x8x16xf32> "
                     r"-> vector<32x16xf32>\n\s*(%\w+) = xetile.tile_transpose \1 \[1, 0\] : vector<32x16xf32> -> "
                     r"vector<16x32xf32>\n\s*%r = xetile.tile_pack \2 \{inner_blocks = array<i64: 8, 16>\} : "
                     r"vector<16x32xf32> -> vector<2x2x8x16xf32>", out)


def test_xegpu_joins_blocks_into_squares_and_cuts_the_result_blocks(tmp_path):
    """32x16 f32 on pvc: 4 source blocks of 8x16 -> 2 squares of 16x16 -> 4 result blocks."""
    out = opt(tmp_path, _kernel(), _passes())
    zero = r"(%\w+) = arith.constant dense<0.000000e\+00> : vector<16x16xf32>"
    assert len(re.findall(zero, out)) == 2
    joins = re.findall(r"vector.insert_strided_slice %[\w]+, %\w+ \{offsets = \[(\d+), 0\], strides = \[1, 1\]\} : "
                       r"vector<8x16xf32> into vector<16x16xf32>", out)
    assert joins == ["0", "8", "0", "8"]
    squares = re.findall(r"(%\w+) = vector.transpose (%\w+), \[1, 0\] : vector<16x16xf32> to vector<16x16xf32>", out)
    assert len(squares) == 2
    cuts = re.findall(r"vector.extract_strided_slice (%\w+) \{offsets = \[(\d+), 0\], sizes = \[8, 16\], "
                      r"strides = \[1, 1\]\} : vector<16x16xf32> to vector<8x16xf32>", out)
    assert sorted(cuts) == sorted((sq, off) for sq, _ in squares for off in ("0", "8"))
    assert out.count("xegpu.store_nd") == 4 and "tile_transpose" not in out


def test_simt_makes_each_square_a_lane_transpose(tmp_path):
    out = opt(tmp_path, _kernel(), _passes(simt=True))
    assert len(re.findall(r"xegpu.lane_transpose %\w+ : vector<16x1xf32> -> vector<16x1xf32>", out)) == 2
    assert "vector.transpose" not in out
    assert len(re.findall(r"vector.insert_strided_slice %\w+, %\w+ \{offsets = \[\d+, 0\], strides = \[1, 1\]\} : "
                          r"vector<8x1xf32> into vector<16x1xf32>", out)) == 4
    assert len(re.findall(r"vector.extract_strided_slice %\w+ \{offsets = \[\d+, 0\], sizes = \[8, 1\], "
                          r"strides = \[1, 1\]\} : vector<16x1xf32> to vector<8x1xf32>", out)) == 4
    assert "arith.constant dense<0.000000e+00> : vector<16x1xf32>" in out


def test_on_arc_blocks_are_the_8x8_squares(tmp_path):
    """8 lanes: the 8x8 blocks are the squares themselves, no slices."""
    out = opt(tmp_path, _kernel(), _passes("arc"))
    assert len(re.findall(r"vector.transpose %\w+, \[1, 0\] : vector<8x8xf32> to vector<8x8xf32>", out)) == 8
    assert "strided_slice" not in out
    simt = opt(tmp_path, _kernel(), _passes("arc", simt=True))
    assert len(re.findall(r"xegpu.lane_transpose %\w+ : vector<8x1xf32> -> vector<8x1xf32>", simt)) == 8


def test_i32_squares_are_transposed_one_by_one(tmp_path):
    out = opt(tmp_path, _kernel(elem="i32").replace("arith.addf", "arith.addi"), _passes(simt=True))
    assert len(re.findall(r"xegpu.lane_transpose %\w+ : vector<16x1xi32>", out)) == 2


def test_16_bit_squares_go_in_pairs_packed_into_32_bit_words(tmp_path):
    """32x16 f16: its two squares are the low and high halves of one i32 square."""
    out = opt(tmp_path, _kernel(elem="f16"), _passes())
    a, b = re.findall(r"(%\w+) = arith.bitcast %\w+ : vector<16x16xf16> to vector<16x16xi16>", out)
    lo = re.search(rf"(%\w+) = arith.extui {a} : vector<16x16xi16> to vector<16x16xi32>", out).group(1)
    hi = re.search(rf"(%\w+) = arith.extui {b} : vector<16x16xi16> to vector<16x16xi32>", out).group(1)
    shifted = re.search(rf"(%\w+) = arith.shli {hi}, (%\w+) : vector<16x16xi32>", out).group(1)
    words = re.search(rf"(%\w+) = arith.ori {lo}, {shifted} : vector<16x16xi32>", out).group(1)
    moved = re.search(rf"(%\w+) = vector.transpose {words}, \[1, 0\] : vector<16x16xi32> to vector<16x16xi32>",
                      out).group(1)
    assert out.count("vector.transpose") == 1
    assert re.search(rf"arith.trunci {moved} : vector<16x16xi32> to vector<16x16xi16>", out)
    assert re.search(rf"arith.shrui {moved}, %\w+ : vector<16x16xi32>", out)
    simt = opt(tmp_path, _kernel(elem="f16"), _passes(simt=True))
    assert len(re.findall(r"xegpu.lane_transpose %\w+ : vector<16x1xi32> -> vector<16x1xi32>", simt)) == 1


XEGPU_INPUT = """func.func @k(%a: memref<1024x1024xf32>, %o: memref<1024x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %d0 = xegpu.create_nd_tdesc %a[%c0, %c0] : memref<1024x1024xf32> -> !xegpu.tensor_desc<8x16xf32>
  %d1 = xegpu.create_nd_tdesc %a[%c8, %c0] : memref<1024x1024xf32> -> !xegpu.tensor_desc<8x16xf32>
  %e0 = xegpu.create_nd_tdesc %o[%c0, %c0] : memref<1024x1024xf32> -> !xegpu.tensor_desc<8x16xf32>
  %e1 = xegpu.create_nd_tdesc %o[%c8, %c0] : memref<1024x1024xf32> -> !xegpu.tensor_desc<8x16xf32>
  %v0 = xegpu.load_nd %d0 : !xegpu.tensor_desc<8x16xf32> -> vector<8x16xf32>
  %v1 = xegpu.load_nd %d1 : !xegpu.tensor_desc<8x16xf32> -> vector<8x16xf32>
  %z = arith.constant dense<0.0> : vector<16x16xf32>
  %s0 = vector.insert_strided_slice %v0, %z {offsets = [0, 0], strides = [1, 1]} : vector<8x16xf32> into vector<16x16xf32>
  %s = vector.insert_strided_slice %v1, %s0 {offsets = [8, 0], strides = [1, 1]} : vector<8x16xf32> into vector<16x16xf32>
  %t = vector.transpose %s, [1, 0] : vector<16x16xf32> to vector<16x16xf32>
  %r0 = vector.extract_strided_slice %t {offsets = [0, 0], sizes = [8, 16], strides = [1, 1]} : vector<16x16xf32> to vector<8x16xf32>
  %r1 = vector.extract_strided_slice %t {offsets = [8, 0], sizes = [8, 16], strides = [1, 1]} : vector<16x16xf32> to vector<8x16xf32>
  xegpu.store_nd %r0, %e0 : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32>
  xegpu.store_nd %r1, %e1 : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32>
  func.return
}"""


def test_hand_written_xegpu_square_transpose_distributes_to_a_lane_transpose(tmp_path):
    out = opt(tmp_path, XEGPU_INPUT, "xegpu-simt")
    assert "%t = xegpu.lane_transpose %s : vector<16x1xf32> -> vector<16x1xf32>" in out
    assert ("%r1 = vector.extract_strided_slice %t {offsets = [8, 0], sizes = [8, 1], strides = [1, 1]} : "
            "vector<16x1xf32> to vector<8x1xf32>") in out
    assert ("%s = vector.insert_strided_slice %v1, %s0 {offsets = [8, 0], strides = [1, 1]} : vector<8x1xf32> "
            "into vector<16x1xf32>") in out


def test_the_simt_text_parses_back_and_a_16_lane_square_is_illegal_on_arc(tmp_path):
    simt = opt(tmp_path, XEGPU_INPUT, "xegpu-simt")
    assert "xegpu.lane_transpose %s" in opt(tmp_path, simt, "")  # printable and parseable
    path = tmp_path / "simt.mlir"
    path.write_text(simt)
    for target, ok in (("pvc", True), ("arc", False)):
        proc = subprocess.run([sys.executable, "-m", "xetile_dsl", "opt", str(path), "--target", target],
                              capture_output=True, text=True, timeout=120)
        assert (proc.returncode == 0) == ok, proc.stderr
    assert "a 16x16 block, but the arc subgroup has 8 lanes" in proc.stderr


# --- verifiers ---------------------------------------------------------------------------
def test_lane_transpose_needs_one_column_per_lane(tmp_path):
    text = """func.func @k(%v: vector<16x2xf32>) {
  %t = xegpu.lane_transpose %v : vector<16x2xf32> -> vector<16x2xf32>
  func.return
}"""
    err = opt(tmp_path, text, "", expect_ok=False)
    assert "vector<L x 1 x T>" in err


def test_strided_slices_must_stay_inside_the_vector(tmp_path):
    text = """func.func @k(%v: vector<16x16xf32>) {
  %e = vector.extract_strided_slice %v {offsets = [12, 0], sizes = [8, 16], strides = [1, 1]} : vector<16x16xf32> to vector<8x16xf32>
  func.return
}"""
    assert "dim 0: offset 12 + size 8 exceeds 16" in opt(tmp_path, text, "", expect_ok=False)


# --- where the SLM path is still chosen ---------------------------------------------------
def test_values_larger_than_half_the_register_file_go_through_slm(tmp_path):
    """pvc: 64x64 f32 is 16 KB of 32-bit words, over 4 KB; arc: 32x32 over 2 KB, 32x16 fits."""
    assert "memref.alloc() : memref<64x64xf32, 3 : i64>" in opt(tmp_path, _kernel(64, 64), "xetile-sg-transpose")
    assert "memref.alloc() : memref<32x32xf32, 3 : i64>" in opt(tmp_path, _kernel(32, 32),
                                                                 "xetile-sg-transpose{target=arc}")
    assert "memref.alloc" not in opt(tmp_path, _kernel(32, 16), "xetile-sg-transpose{target=arc}")


def test_operand_a_goes_through_slm(tmp_path):
    extra = "  %m = xetile.tile_mma %r, %v : vector<16x32xf32>, vector<32x16xf32> -> vector<16x16xf32>\n"
    out = opt(tmp_path, _kernel(extra=extra), "xetile-sg-transpose")
    assert "memref.alloc() : memref<32x16xf32, 3 : i64>" in out and "tile_transpose" not in out


def _wg_kernel(src_map: str, dst_map: str) -> str:
    ins, outs = tile((32, 32), "f32", src_map), tile((32, 32), "f32", dst_map)
    return f"""func.func @k(%a: memref<1024x1024xf32>, %o: memref<1024x1024xf32>) {{
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %a[%c0, %c0] : memref<1024x1024xf32> -> {ins}
  %v = xetile.load_tile %t : {ins} -> vector<32x32xf32>
  %w = arith.addf %v, %v : vector<32x32xf32>
  %r = xetile.tile_transpose %w [1, 0] {{wg_map = {dst_map}}} : vector<32x32xf32> -> vector<32x32xf32>
  %to = xetile.init_tile %o[%c0, %c0] : memref<1024x1024xf32> -> {outs}
  xetile.store_tile %r, %to : vector<32x32xf32>, {outs}
  func.return
}}"""


def test_workgroup_transpose_of_own_pieces_becomes_a_subgroup_transpose_per_piece(tmp_path):
    """[2, 1] x [16, 32] -> [1, 2] x [32, 16]: subgroup s transposes its own 16x32 piece."""
    out = opt(tmp_path, _wg_kernel(wg((2, 1), (16, 32)), wg((1, 2), (32, 16))), "xetile-wg-to-sg")
    (piece, result), = re.findall(r"(%\w+) = arith.addf %\w+, %\w+ : vector<16x32xf32>\n\s*(%\w+) = "
                                  r"xetile.tile_transpose (?:%\w+) \[1, 0\] : vector<16x32xf32> -> vector<32x16xf32>\n",
                                  out)  # one piece per subgroup, no wg_map: a subgroup-level transpose
    assert f"xetile.tile_transpose {piece} [1, 0]" in out
    assert re.search(rf"xetile.store_tile {result}, %\w+ : vector<32x16xf32>", out)
    assert "memref.alloc" not in out
    simt = opt(tmp_path, _wg_kernel(wg((2, 1), (16, 32)), wg((1, 2), (32, 16))),
               "xetile-wg-to-sg," + _passes(simt=True))
    assert len(re.findall(r"xegpu.lane_transpose %\w+ : vector<16x1xf32>", simt)) == 2


def test_workgroup_transpose_across_subgroups_still_goes_through_slm(tmp_path):
    out = opt(tmp_path, _wg_kernel(wg((2, 2), (16, 16)), wg((2, 2), (16, 16))), "xetile-wg-to-sg")
    assert "memref.alloc() : memref<32x32xf32, 3 : i64>" in out and "tile_transpose" not in out


def test_only_lanes_x_lanes_squares_are_distributed(tmp_path):
    """A 16x16 square is fine on pvc; on arc (8 lanes) xegpu-simt reports it at the op."""
    err = opt(tmp_path, XEGPU_INPUT, "xegpu-simt{target=arc}", expect_ok=False)
    assert ":13:3: error: LoweringError (after pass xegpu-simt): vector.transpose in registers transposes 8x8 " \
           "blocks on arc" in err
