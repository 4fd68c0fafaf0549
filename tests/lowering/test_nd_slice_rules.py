"""The 2-D slice of an N-D array (frontend/array_views.py: a ``memref.reinterpret_cast``
with a runtime offset, extents and row stride) is the base of its tiles' descriptors
through the lowering, plain and transposed: the transposed rewrite looks through SLM's
static column-major views only (lowering/rewrites/transposed_tiles.py)."""
from __future__ import annotations

from .test_lowering_rules import opt

SLICE = "memref<?x?xf16, strided<[?, 1], offset: ?>>"
KERNEL = f"""
func.func @k(%x: memref<?x?x?x?xf16, strided<[?, ?, ?, 1]>>, %off: index, %n: index, %d: index, %pitch: index) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %s = memref.reinterpret_cast %x to offset: [%off], sizes: [%n, %d], strides: [%pitch, 1] : memref<?x?x?x?xf16, strided<[?, ?, ?, 1]>> to {SLICE}
  %t = xetile.init_tile %s[%c0, %c0], [%d, %n], [%c1, %pitch] : {SLICE} -> !xetile.tile<16x16xf16, #xetile.tile_attr<order = [0, 1]>>
  %v = xetile.load_tile %t : !xetile.tile<16x16xf16, #xetile.tile_attr<order = [0, 1]>> -> vector<16x16xf16>
  %u = xetile.init_tile %s[%c0, %c0], [%n, %d], [%pitch, %c1] : {SLICE} -> !xetile.tile<16x16xf16>
  xetile.store_tile %v, %u : vector<16x16xf16>, !xetile.tile<16x16xf16>
  func.return
}}"""


def test_slice_is_the_descriptors_base(tmp_path):
    out = opt(tmp_path, KERNEL, "xetile-blocking,convert-xetile-to-xegpu")
    descs = [line for line in out.splitlines() if "xegpu.create_nd_tdesc" in line]
    # the transposed load's descriptors (over the row-major slice: its own extents and
    # pitch) and the store's, all on the slice %s, none on the 4-D array
    assert descs and all("create_nd_tdesc %s[" in line and f": {SLICE} ->" in line for line in descs), out
    assert any("[%n, %d], [%pitch, %c1]" in line for line in descs)
