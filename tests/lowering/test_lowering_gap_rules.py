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
