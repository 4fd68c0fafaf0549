"""Lowering rules for the issue-5 gaps (load padding, stores to order=[0, 1] tiles, block
atomic old values, element-wise ops on tile_mma operands): small MLIR inputs through the
opt tool, checking the XeGPU each rule must produce."""
from __future__ import annotations

import re

import pytest

from .test_lowering_rules import opt

PAD_COPY = """
func.func @k(%x: memref<20x40xf32>, %y: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %x[%c0, %c0] : memref<20x40xf32> -> !xetile.tile<16x32xf32>
  %v = xetile.load_tile %t {padding = -7.5 : f32} : !xetile.tile<16x32xf32> -> vector<16x32xf32>
  %u = xetile.init_tile %y[%c0, %c0] : memref<32x64xf32> -> !xetile.tile<16x32xf32>
  xetile.store_tile %v, %u : vector<16x32xf32>, !xetile.tile<16x32xf32>
  func.return
}
"""


@pytest.mark.parametrize("target,blocks", [("pvc", 2 * 2), ("arc", 2 * 4)])
def test_padding_rides_on_every_block_load(tmp_path, target, blocks):
    """Each 8 x sg block load keeps the padding (codegen selects it for out-of-bounds
    elements after the zero-filling block read)."""
    out = opt(tmp_path, PAD_COPY, f"xetile-blocking{{target={target}}},convert-xetile-to-xegpu")
    sg = 16 if target == "pvc" else 8
    loads = re.findall(rf"xegpu.load_nd %\w+ \{{padding = -7\.5.*\}} : !xegpu.tensor_desc<8x{sg}xf32>", out)
    assert len(loads) == blocks == out.count("xegpu.load_nd")


STORE_T = """
func.func @k(%x: memref<64x64xf32>, %y: memref<?x?xf32, strided<[?, 1]>>, %h: index, %w: index, %p: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = xetile.init_tile %x[%c0, %c0] : memref<64x64xf32> -> !xetile.tile<8x32xf32>
  %v = xetile.load_tile %t : !xetile.tile<8x32xf32> -> vector<8x32xf32>
  %u = xetile.init_tile %y[%c0, %c0], [%w, %h], [%c1, %p] : memref<?x?xf32, strided<[?, 1]>> -> !xetile.tile<8x32xf32, #xetile.tile_attr<order = [0, 1]>>
  xetile.store_tile %v, %u : vector<8x32xf32>, !xetile.tile<8x32xf32, #xetile.tile_attr<order = [0, 1]>>
  func.return
}
"""


@pytest.mark.parametrize("target,sg", [("pvc", 16), ("arc", 8)])
def test_store_to_transposed_tile_is_a_masked_scattered_store_per_block_row(tmp_path, target, sg):
    out = opt(tmp_path, STORE_T, f"xetile-blocking{{target={target}}},convert-xetile-to-xegpu")
    blocks = 32 // sg
    assert "store_nd" not in out
    stores = re.findall(rf"xegpu.store %\w+, %\w+, %\w+ : vector<{sg}xf32>, !xegpu.tensor_desc<{sg}xf32, "
                        rf"#xegpu.scatter_tdesc_attr<.*>>, vector<{sg}xi1>", out)
    assert len(stores) == blocks * 8 == out.count("xegpu.create_tdesc")
    # lane n writes memory row y + n: the lane offsets are scaled by the pitch
    assert re.search(rf"arith.muli %\w+, %\w+ : vector<{sg}xindex>", out)
    simt = opt(tmp_path, STORE_T, f"xetile-blocking{{target={target}}},convert-xetile-to-xegpu,"
                                  f"xegpu-simt{{target={target}}}")
    assert len(re.findall(r"xegpu.store %\w+, %\w+, %\w+ : vector<1xf32>", simt)) == blocks * 8
    assert "gpu.lane_id" in simt and "create_nd_tdesc %y" not in simt


ATOMIC_OLD = """
func.func @k(%x: memref<64x64xi32>, %o: memref<64x64xi32>) {
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %x[%c0, %c0] : memref<64x64xi32> -> !xetile.tile<8x16xi32>
  %v = xetile.load_tile %t : !xetile.tile<8x16xi32> -> vector<8x16xi32>
  %old = xetile.atomic_rmw addi %v, %t : vector<8x16xi32>, !xetile.tile<8x16xi32> -> vector<8x16xi32>
  %u = xetile.init_tile %o[%c0, %c0] : memref<64x64xi32> -> !xetile.tile<8x16xi32>
  xetile.store_tile %old, %u : vector<8x16xi32>, !xetile.tile<8x16xi32>
  func.return
}
"""


def test_block_atomic_old_values_are_inserted_row_by_row(tmp_path):
    out = opt(tmp_path, ATOMIC_OLD, "xetile-blocking{target=pvc},convert-xetile-to-xegpu")
    assert len(re.findall(r"xegpu.atomic_rmw addi", out)) == 8
    inserts = re.findall(r"vector.insert %\w+, %\w+ \[(\d)\] : vector<16xi32> into vector<8x16xi32>", out)
    assert [int(r) for r in inserts] == list(range(8))
    simt = opt(tmp_path, ATOMIC_OLD, "xetile-blocking{target=pvc},convert-xetile-to-xegpu,xegpu-simt{target=pvc}")
    assert len(re.findall(r"vector.insert %\w+, %\w+ \[\d\] : vector<1xi32> into vector<8x1xi32>", simt)) == 8


EPILOGUE = """
func.func @k(%x: memref<64x64xf32>, %y: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %x[%c0, %c0] : memref<64x64xf32> -> !xetile.tile<32x32xf32>
  %v = xetile.load_tile %t : !xetile.tile<32x32xf32> -> vector<32x32xf32>
  %h = arith.constant dense<0.5> : vector<32x32xf32>
  %m = arith.mulf %v, %h : vector<32x32xf32>
  %e = math.erf %m : vector<32x32xf32>
  %r = arith.addf %e, %v : vector<32x32xf32>
  %u = xetile.init_tile %y[%c0, %c0] : memref<64x64xf32> -> !xetile.tile<32x32xf32>
  xetile.store_tile %r, %u : vector<32x32xf32>, !xetile.tile<32x32xf32>
  func.return
}
"""


def _op_sequence(text: str) -> list[str]:
    return re.findall(r"(arith\.mulf|math\.erf|arith\.addf|xegpu\.store_nd)", text)


def test_sink_to_uses_emits_each_block_chain_up_to_its_store(tmp_path):
    passes = "xetile-blocking{target=pvc},convert-xetile-to-xegpu"
    before = _op_sequence(opt(tmp_path, EPILOGUE, passes))
    after = _op_sequence(opt(tmp_path, EPILOGUE, passes + ",xegpu-sink-to-uses"))
    blocks = (32 // 8) * (32 // 16)
    # op by op (all mulf, all erf, all addf, all stores) -> block by block
    assert before == sum(([name] * blocks for name in ("arith.mulf", "math.erf", "arith.addf", "xegpu.store_nd")), [])
    assert after == ["arith.mulf", "math.erf", "arith.addf", "xegpu.store_nd"] * blocks


def _scaled_a_kernel(elem: str) -> str:
    """tile_mma(load(A) * 2, load(B)) on 16x32 x 32x16 tiles."""
    return f"""
func.func @k(%a: memref<64x64x{elem}>, %b: memref<64x64x{elem}>, %c: memref<64x64xf32>) {{
  %c0 = arith.constant 0 : index
  %ta = xetile.init_tile %a[%c0, %c0] : memref<64x64x{elem}> -> !xetile.tile<16x32x{elem}>
  %tb = xetile.init_tile %b[%c0, %c0] : memref<64x64x{elem}> -> !xetile.tile<32x16x{elem}>
  %va = xetile.load_tile %ta : !xetile.tile<16x32x{elem}> -> vector<16x32x{elem}>
  %vb = xetile.load_tile %tb : !xetile.tile<32x16x{elem}> -> vector<32x16x{elem}>
  %two = arith.constant dense<2.0> : vector<16x32x{elem}>
  %sa = arith.mulf %va, %two : vector<16x32x{elem}>
  %rb = arith.negf %vb : vector<32x16x{elem}>
  %z = arith.constant dense<0.0> : vector<16x16xf32>
  %d = xetile.tile_mma %sa, %rb, %z : vector<16x32x{elem}>, vector<32x16x{elem}>, vector<16x16xf32> -> vector<16x16xf32>
  %tc = xetile.init_tile %c[%c0, %c0] : memref<64x64xf32> -> !xetile.tile<16x16xf32>
  xetile.store_tile %d, %tc : vector<16x16xf32>, !xetile.tile<16x16xf32>
  func.return
}}
"""


@pytest.mark.parametrize("target,a_map,a_frag,b_frag", [
    ("pvc", "wi_layout = [1, 16], wi_data = [1, 1]", "8x1xf16", "16x1xf16"),
    ("arc", "wi_layout = [1, 8], wi_data = [1, 2]", "8x2xf16", "16x1xf16"),
])
def test_elementwise_chains_feed_dpas_operands(tmp_path, target, a_map, a_frag, b_frag):
    """Blocked like the operands (A 8x16, B 16 x N); B stays a plain (unpacked) load whose
    lane image is VNNI already; the A chain takes A's map back to its load."""
    passes = f"xetile-blocking{{target={target}}},convert-xetile-to-xegpu"
    out = opt(tmp_path, _scaled_a_kernel("f16"), passes)
    assert "packed" not in out
    assert out.count("arith.mulf") == 2 * 2 and re.search(r"arith.mulf %\w+, %\w+ : vector<8x16xf16>", out)
    simt = opt(tmp_path, _scaled_a_kernel("f16"), passes + f",xegpu-simt{{target={target}}}")
    assert re.search(rf"xegpu.load_nd %\w+ : !xegpu.tensor_desc<8x16xf16, #xegpu.sg_map<{re.escape(a_map)}>> "
                     rf"-> vector<{a_frag}>", simt)
    assert re.search(rf"arith.mulf %\w+, %\w+ : vector<{a_frag}>", simt)
    assert re.search(rf"arith.negf %\w+ : vector<{b_frag}>", simt)
    assert re.search(rf"xegpu.dpas %\w+, %\w+, %\w+ : vector<{a_frag}>, vector<{b_frag}>", simt)


@pytest.mark.parametrize("target,sg", [("pvc", 16), ("arc", 8)])
def test_several_row_scattered_tile_is_one_create_tdesc_per_row_segment(target, sg):
    import xetile_dsl as xd
    from tests.e2e.test_lowering_gaps import gather_rows

    sig = {"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]"}
    out = xd.compile(gather_rows, sig, {"R": 4, "C": 32}, target=target).asm["xegpu"]
    segments = 4 * (32 // sg)
    assert len(re.findall(rf"xegpu.create_tdesc %\w+, %\w+ : memref<.*>, vector<{sg}xindex> -> "
                          rf"!xegpu.tensor_desc<{sg}xf32", out)) == segments
    assert len(re.findall(rf"xegpu.load %\w+, %\w+ : .* vector<{sg}xi1> -> vector<{sg}xf32>", out)) == segments
    # the offsets are loaded, and the gathered rows stored, in the same 1 x sg rows
    assert len(re.findall(rf"xegpu.store_nd %\w+, %\w+ : vector<1x{sg}xf32>", out)) == segments


# --- padding on order=[0, 1] tiles and on load_gather -------------------------------------------
import xetile_dsl as xd  # noqa: E402
import xetile_dsl.language as xt  # noqa: E402


@xd.jit
def _pad_transposed(xs, y):
    v = xt.load_tile(xt.init_tile(xs, [0, 0], [16, 32], order=(0, 1)), padding=-7.5)
    xt.store_tile(v, xt.init_tile(y, [0, 0], [16, 32]))


@xd.jit
def _pad_gather(src, idx, out):
    i = xt.load_tile(xt.init_tile(idx, [0, 0], [2, 32]))
    xt.store_tile(xt.load_gather(xt.init_tile(src, i), i < 50, padding=-7.5), xt.init_tile(out, [0, 0], [2, 32]))


@pytest.mark.parametrize("target,sg", [("cpu-pvc", 16), ("cpu-arc", 8)])
def test_transposed_load_keeps_its_padding(target, sg):
    """Every transposed block load carries the padding (codegen selects it per element
    whose memory element lies outside the array)."""
    kernel = xd.compile(_pad_transposed, {"xs": "f32[:,:]", "y": "f32[:,:]"}, {}, target=target)
    loads = re.findall(rf"xegpu.load_nd %\w+ \{{(.*)\}} : !xegpu.tensor_desc<{sg}x8xf32>", kernel.asm["xegpu"])
    assert len(loads) == 16 // 8 * 32 // sg
    assert all("padding = -7.500000e+00 : f32" in p and "transpose = array<i64: 1, 0>" in p for p in loads)
    assert "__xetile_pad2d_transposed_32b" in kernel.asm["llvm"]


@pytest.mark.parametrize("target,sg", [("cpu-pvc", 16), ("cpu-arc", 8)])
def test_gather_padding_is_a_select_on_the_mask(target, sg):
    """Per 1 x sg block: xegpu.load (masked lanes read 0), then arith.select(mask, value,
    splat padding)."""
    kernel = xd.compile(_pad_gather, {"src": "f32[:,:]", "idx": "i32[:,:]", "out": "f32[:,:]"}, {},
                        target=target)
    xegpu_text = kernel.asm["xegpu"]
    blocks = 2 * 32 // sg
    assert len(re.findall(r"= xegpu.load %", xegpu_text)) == blocks
    pads = set(re.findall(rf"(%\w+) = arith.constant dense<-7.500000e\+00> : vector<1x{sg}xf32>", xegpu_text))
    selects = re.findall(rf"arith.select %\w+, %\w+, (%\w+) : vector<1x{sg}xi1>, vector<1x{sg}xf32>", xegpu_text)
    assert len(selects) == blocks and set(selects) <= pads
