"""One small MLIR input per lowering rule, run through ``python -m xetile_dsl opt FILE -p
<pass>``, checking the ops and types the rule must produce."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest


def opt(tmp_path, text: str, passes: str, expect_ok: bool = True) -> str:
    """stdout of the opt tool (stderr when the run is expected to fail)."""
    path = tmp_path / "in.mlir"
    path.write_text(text)
    proc = subprocess.run([sys.executable, "-m", "xetile_dsl", "opt", str(path), "-p", passes],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode == 0) == expect_ok, proc.stderr
    return proc.stdout if expect_ok else proc.stderr


def wg(layout, data) -> str:
    return f"#xetile.wg_map<sg_layout = {list(layout)}, sg_data = {list(data)}>"


def tile(shape, elem, wg_map=None) -> str:
    attr = f", #xetile.tile_attr<wg_map = {wg_map}>" if wg_map else ""
    return f"!xetile.tile<{shape[0]}x{shape[1]}x{elem}{attr}>"


def mma_kernel(m, n, k, elem, acc, maps=None, args="") -> str:
    """A K loop: C[m,n] += A[m,k] @ B[k,n] (with wg_maps ``maps`` = (a, b, c) or None)."""
    ma, mb, mc = maps or (None, None, None)
    ta, tb, tc = tile((m, k), elem, ma), tile((k, n), elem, mb), tile((m, n), acc, mc)
    mma_attr = f" {{wg_map = {mc}}}" if mc else ""
    zero = "0.0" if acc == "f32" else "0"
    return f"""
func.func @k(%a: memref<1024x1024x{elem}>, %b: memref<1024x1024x{elem}>, %c: memref<1024x1024x{acc}>{args}) {{
  %c0 = arith.constant 0 : index
  %step = arith.constant {k} : index
  %ub = arith.constant 1024 : index
  %ta = xetile.init_tile %a[%c0, %c0] : memref<1024x1024x{elem}> -> {ta}
  %tb = xetile.init_tile %b[%c0, %c0] : memref<1024x1024x{elem}> -> {tb}
  %z = arith.constant dense<{zero}> : vector<{m}x{n}x{acc}>
  %r:3 = scf.for %iv = %c0 to %ub step %step iter_args(%acc = %z, %xa = %ta, %xb = %tb) -> (vector<{m}x{n}x{acc}>, {ta}, {tb}) {{
    %va = xetile.load_tile %xa : {ta} -> vector<{m}x{k}x{elem}>
    %vb = xetile.load_tile %xb : {tb} -> vector<{k}x{n}x{elem}>
    %d = xetile.tile_mma %va, %vb, %acc{mma_attr} : vector<{m}x{k}x{elem}>, vector<{k}x{n}x{elem}>, vector<{m}x{n}x{acc}> -> vector<{m}x{n}x{acc}>
    %na = xetile.update_tile_offset %xa, %c0, %step : {ta}
    %nb = xetile.update_tile_offset %xb, %step, %c0 : {tb}
    scf.yield %d, %na, %nb : vector<{m}x{n}x{acc}>, {ta}, {tb}
  }}
  %tc = xetile.init_tile %c[%c0, %c0] : memref<1024x1024x{acc}> -> {tc}
  xetile.store_tile %r#0, %tc : vector<{m}x{n}x{acc}>, {tc}
  func.return
}}
"""


# --- xetile-wg-to-sg ------------------------------------------------------------------
RFC_TILE = tile((128, 128), "f16", wg((2, 2), (32, 128)))
#: the RFC's wg_map example as a kernel: load and store back a 128x128 tile at row %i
RFC_COPY = f"""
func.func @k(%a: memref<512x512xf16>, %i: index) {{
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %a[%i, %c0] : memref<512x512xf16> -> {RFC_TILE}
  %v = xetile.load_tile %t : {RFC_TILE} -> vector<128x128xf16>
  xetile.store_tile %v, %t : vector<128x128xf16>, {RFC_TILE}
  func.return
}}"""
#: (m, n, k, maps) of the workgroup GEMM rule inputs (``mma_kernel(m, n, k, "f16", "f32", maps)``)
APPENDIX_2_1 = (256, 256, 32, (wg((8, 4), (32, 32)), wg((8, 4), (32, 64)), wg((8, 4), (32, 64))))
ROUND_ROBIN = (128, 128, 32, (wg((2, 2), (32, 32)),) * 3)
MAP_MISMATCH = (256, 256, 32, (wg((8, 4), (16, 32)), wg((8, 4), (32, 64)), wg((8, 4), (32, 64))))
SPLIT_K = (256, 256, 32, (wg((8, 4), (32, 8)), wg((8, 4), (8, 64)), wg((8, 4), (32, 64))))


def test_wg_to_sg_rfc_example_round_robin_rows_wrap_around_columns(tmp_path):
    """The RFC's own example: 128x128, sg_layout [2, 2], sg_data [32, 128] -> each
    subgroup owns rows r*32 and r*32 + 64 (round-robin), all 128 columns (wrap-around,
    shared by the two subgroups of a row)."""
    out = opt(tmp_path, RFC_COPY, "xetile-wg-to-sg")
    assert "xetile.num_subgroups = 4" in out
    assert out.count('"gpu.subgroup_id"()') == 1
    assert out.count("-> !xetile.tile<32x128xf16>") == 2 and "wg_map" not in out
    assert out.count("xetile.load_tile") == 2 and out.count("xetile.store_tile") == 2
    # second row piece: + sg_layout[0] * sg_data[0] = 64; columns wrap: (c * 128) mod 128
    assert re.search(r"arith.constant 64 : index", out)
    assert re.search(r"arith.remsi %\d+, %\d+ : index", out)


def test_wg_to_sg_appendix_2_1_maps(tmp_path):
    """Appendix 2.1's maps: A 256x32 [8,4]x[32,32], B 32x256 [8,4]x[32,64], C [8,4]x[32,64]:
    one 32x32 A, one 32x64 B, one 32x64 accumulator per subgroup, 32 subgroups."""
    m, n, k, maps = APPENDIX_2_1
    out = opt(tmp_path, mma_kernel(m, n, k, "f16", "f32", maps), "xetile-wg-to-sg")
    assert "xetile.num_subgroups = 32" in out
    assert re.search(r"xetile.tile_mma %\w+, %\w+, %\w+ : vector<32x32xf16>, vector<32x64xf16>, "
                     r"vector<32x64xf32> -> vector<32x64xf32>", out)
    assert "dense<0.000000e+00> : vector<32x64xf32>" in out
    assert "wg_map" not in out


def test_wg_to_sg_round_robin_mma_gives_several_pieces(tmp_path):
    """C 128x128 with [2,2]x[32,32]: each subgroup owns 2x2 result pieces, A 2 pieces, B 2."""
    m, n, k, maps = ROUND_ROBIN
    out = opt(tmp_path, mma_kernel(m, n, k, "f16", "f32", maps), "xetile-wg-to-sg")
    assert out.count("xetile.tile_mma") == 4
    assert out.count("-> !xetile.tile<32x32xf32>") == 4  # the C store tile
    loop = re.search(r"scf.for .*? -> \((.*?)\) \{", out).group(1)
    assert loop.count("vector<32x32xf32>") == 4 and loop.count("!xetile.tile<32x32xf16>") == 4


def test_wg_to_sg_operand_map_mismatch_is_reported(tmp_path):
    m, n, k, maps = MAP_MISMATCH
    err = opt(tmp_path, mma_kernel(m, n, k, "f16", "f32", maps), "xetile-wg-to-sg", expect_ok=False)
    assert "operand A is distributed as wg_map(sg_layout=[8, 4], sg_data=[16, 32])" in err
    assert "needs wg_map(sg_layout=[8, 4], sg_data=[32, 32])" in err


def test_wg_to_sg_split_k_is_reported(tmp_path):
    m, n, k, maps = SPLIT_K
    err = opt(tmp_path, mma_kernel(m, n, k, "f16", "f32", maps), "xetile-wg-to-sg", expect_ok=False)
    assert "each subgroup must hold the whole K dimension (32)" in err


_T1, _T2 = tile((64, 64), "f16", wg((2, 2), (32, 32))), tile((64, 64), "f16", wg((4, 2), (16, 32)))
#: two wg_maps describing 4 and 8 subgroups in one kernel
COUNT_MISMATCH = f"""
func.func @k(%a: memref<512x512xf16>) {{
  %c0 = arith.constant 0 : index
  %t1 = xetile.init_tile %a[%c0, %c0] : memref<512x512xf16> -> {_T1}
  %t2 = xetile.init_tile %a[%c0, %c0] : memref<512x512xf16> -> {_T2}
  xetile.prefetch_tile %t1 : {_T1}
  xetile.prefetch_tile %t2 : {_T2}
  func.return
}}"""


def test_wg_to_sg_subgroup_counts_must_agree(tmp_path):
    err = opt(tmp_path, COUNT_MISMATCH, "xetile-wg-to-sg", expect_ok=False)
    assert "must describe the same number of subgroups" in err and "-> 4" in err and "-> 8" in err


def test_wg_to_sg_leaves_subgroup_kernels_alone(tmp_path):
    out = opt(tmp_path, mma_kernel(32, 32, 32, "f16", "f32"), "xetile-wg-to-sg")
    assert "gpu.subgroup_id" not in out and "num_subgroups" not in out


# --- xetile-blocking: DPAS shapes per element type and target ----------------------------
#: (target, elem, acc, A inner_blocks, B inner_blocks) of ``mma_kernel(32, 32, 64, elem, acc)``
BLOCKING_CASES = [
    ("pvc", "i8", "i32", "8, 32", "32, 16"), ("arc", "i8", "i32", "8, 32", "32, 8"),
    ("pvc", "ui8", "i32", "8, 32", "32, 16"), ("pvc", "f32", "f32", "8, 8", "8, 16"),
    ("pvc", "f16", "f32", "8, 16", "16, 16"), ("arc", "bf16", "f32", "8, 16", "16, 8"),
]


@pytest.mark.parametrize("target,elem,acc,a_blocks,b_blocks", BLOCKING_CASES)
def test_blocking_uses_the_targets_dpas_shape(tmp_path, target, elem, acc, a_blocks, b_blocks):
    out = opt(tmp_path, mma_kernel(32, 32, 64, elem, acc), f"xetile-blocking{{target={target}}}")
    assert f"!xetile.tile<32x64x{elem}, #xetile.tile_attr<inner_blocks = [{a_blocks}]>>" in out
    assert f"!xetile.tile<64x32x{elem}, #xetile.tile_attr<inner_blocks = [{b_blocks}]>>" in out


def test_blocking_rejects_tf32_on_arc(tmp_path):
    err = opt(tmp_path, mma_kernel(32, 32, 32, "f32", "f32"), "xetile-blocking{target=arc}", expect_ok=False)
    assert "cannot feed tile_mma on arc" in err


# --- convert-xetile-to-xegpu -------------------------------------------------------------
def _xegpu(tmp_path, elem, acc, target="pvc"):
    return opt(tmp_path, mma_kernel(32, 32, 64, elem, acc),
               f"xetile-blocking{{target={target}}},convert-xetile-to-xegpu")


def test_xegpu_int8_b_is_vnni_packed_in_fours(tmp_path):
    out = _xegpu(tmp_path, "i8", "i32")
    assert re.search(r"xegpu.load_nd %\w+ \{packed\} : !xegpu.tensor_desc<32x16xi8> -> vector<8x16x4xi8>", out)
    assert re.search(r"xegpu.load_nd %\w+ : !xegpu.tensor_desc<8x32xi8> -> vector<8x32xi8>", out)
    assert re.search(r"xegpu.dpas %\w+, %\w+, %\w+ : vector<8x32xi8>, vector<8x16x4xi8>, vector<8x16xi32> "
                     r"-> vector<8x16xi32>", out)
    assert out.count("xegpu.dpas") == 4 * 2 * 2  # (32/8) x (32/16) x (64/32)


def test_xegpu_tf32_b_is_not_packed(tmp_path):
    out = _xegpu(tmp_path, "f32", "f32")
    assert "packed" not in out
    assert re.search(r"xegpu.dpas %\w+, %\w+, %\w+ : vector<8x8xf32>, vector<8x16xf32>, vector<8x16xf32>", out)
    assert out.count("xegpu.dpas") == 4 * 2 * 8


# --- xegpu-simt: the RFC's sg_map tables ---------------------------------------------------
def _simt(tmp_path, elem, acc, target):
    return opt(tmp_path, mma_kernel(32, 32, 64, elem, acc),
               f"xetile-blocking{{target={target}}},convert-xetile-to-xegpu,xegpu-simt{{target={target}}}")


@pytest.mark.parametrize("target,elem,acc,a_map,b_map,a_frag,b_frag", [
    ("pvc", "i8", "i32", "[1, 16], wi_data = [1, 2]", "[1, 16], wi_data = [4, 1]", "8x2xi8", "8x4xi8"),
    ("arc", "i8", "i32", "[1, 8], wi_data = [1, 4]", "[1, 8], wi_data = [4, 1]", "8x4xi8", "8x4xi8"),
    ("pvc", "f32", "f32", "[2, 8], wi_data = [1, 1]", "[1, 16], wi_data = [1, 1]", "4x1xf32", "8x1xf32"),
    ("pvc", "f16", "f32", "[1, 16], wi_data = [1, 1]", "[1, 16], wi_data = [2, 1]", "8x1xf16", "8x2xf16"),
])
def test_simt_sg_maps_follow_the_rfc(tmp_path, target, elem, acc, a_map, b_map, a_frag, b_frag):
    out = _simt(tmp_path, elem, acc, target)
    assert f"#xegpu.sg_map<wi_layout = {a_map}>" in out
    assert f"#xegpu.sg_map<wi_layout = {b_map}>" in out
    assert re.search(rf"xegpu.dpas %\w+, %\w+, %\w+ : vector<{a_frag}>, vector<{b_frag}>, vector<8x1x{acc}>", out)
