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
