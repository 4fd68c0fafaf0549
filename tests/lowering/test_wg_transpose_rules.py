"""xetile-wg-to-sg rules for tile_transpose at workgroup level (lowering/passes/wg_to_sg/transpose.py)
and for row reductions across subgroups (lowering/passes/wg_to_sg/vectors.py): the SLM exchange
through a column-major view, the in-place form of RFC Appendix 2.3 (each subgroup loads
its own transposed piece), and tile_conv_layout + tile_reduce reducing before the exchange."""
from __future__ import annotations

import re

from tests.lowering.test_lowering_rules import opt, tile, wg


def _kernel(body: str, ins: str, elem: str = "f32", loop: bool = False) -> str:
    rows, cols = re.match(r"!xetile.tile<(\d+)x(\d+)x", ins).groups()
    load = f"%v = xetile.load_tile %t : {ins} -> vector<{rows}x{cols}x{elem}>"
    if loop:  # load and use inside a K loop that advances the tile
        return f"""
func.func @k(%a: memref<1024x1024x{elem}>, %o: memref<1024x1024x{elem}>) {{
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %t0 = xetile.init_tile %a[%c0, %c0] : memref<1024x1024x{elem}> -> {ins}
  %tn = scf.for %k = %c0 to %c128 step %c32 iter_args(%t = %t0) -> ({ins}) {{
    {load}
{body}
    %t2 = xetile.update_tile_offset %t, [%c0, %c32] : {ins}
    scf.yield %t2 : {ins}
  }}
  func.return
}}"""
    return f"""
func.func @k(%a: memref<1024x1024x{elem}>, %o: memref<1024x1024x{elem}>) {{
  %c0 = arith.constant 0 : index
  %t = xetile.init_tile %a[%c0, %c0] : memref<1024x1024x{elem}> -> {ins}
  {load}
{body}
  func.return
}}"""


def _transpose_and_store(src_shape, dst_map, elem="f32", computed=False) -> str:
    """Transpose the loaded ``%v`` (folded into the load) or, when ``computed``, ``%v + %v``
    (which a load cannot produce: registers or SLM), and store the result."""
    r, c = src_shape
    out = tile((c, r), elem, dst_map)
    src = "%v"
    add = ""
    if computed:
        src, add = "%w", f"  %w = arith.addf %v, %v : vector<{r}x{c}x{elem}>\n"
    return add + f"""  %r = xetile.tile_transpose {src} [1, 0] {{wg_map = {dst_map}}} : vector<{r}x{c}x{elem}> -> vector<{c}x{r}x{elem}>
  %to = xetile.init_tile %o[%c0, %c0] : memref<1024x1024x{elem}> -> {out}
  xetile.store_tile %r, %to : vector<{c}x{r}x{elem}>, {out}"""


def test_transpose_across_subgroups_goes_through_a_column_major_slm_view(tmp_path):
    """RFC 2.2's case in small: [2,2]x[32,16] -> [2,2]x[16,32] (the swapped maps): subgroup
    (0,1) holds rows 0-31, cols 16-31 of the computed source but needs cols 32-63 of the
    result, so the pieces go row-major into a 64x32 SLM buffer and come back through its
    [1, 32]-strided 32x64 view as order = [0, 1] tiles."""
    ins = tile((64, 32), "f32", wg((2, 2), (32, 16)))
    body = _transpose_and_store((64, 32), wg((2, 2), (16, 32)), computed=True)
    out = opt(tmp_path, _kernel(body, ins), "xetile-wg-to-sg")
    assert "memref.alloc() : memref<64x32xf32, 3 : i64>" in out
    assert re.search(r"xetile.store_tile %\w+, %\w+ : vector<32x16xf32>, !xetile.tile<32x16xf32, "
                     r"#xetile.tile_attr<memory_space = 3>>", out)
    assert "memref.reinterpret_cast %" in out and "to memref<32x64xf32, strided<[1, 32]>, 3 : i64>" in out
    assert re.search(r"xetile.load_tile %\w+ : !xetile.tile<16x32xf32, #xetile.tile_attr<order = \[0, 1\], "
                     r"memory_space = 3>> -> vector<16x32xf32>", out)
    store, barrier, view = (out.index(s) for s in ("memory_space = 3>>\n", "gpu.barrier", "reinterpret_cast"))
    assert store < barrier < view and out.count("gpu.barrier") == 1 and "tile_transpose" not in out


def test_transpose_inside_a_loop_waits_for_earlier_readers(tmp_path):
    ins = tile((64, 32), "f32", wg((2, 2), (32, 16)))
    out = opt(tmp_path, _kernel(_transpose_and_store((64, 32), wg((2, 2), (16, 32)), computed=True), ins,
                                loop=True), "xetile-wg-to-sg")
    assert out.count("gpu.barrier") == 2  # before the stores and between stores and loads


def test_transpose_of_a_loaded_tile_across_subgroups_is_folded_into_the_load(tmp_path):
    """The same maps with the loaded tile itself: the data is in global memory, so each
    subgroup loads its own result pieces through an order = [0, 1] view whichever
    subgroup the source map gave them to (no SLM, no barrier; before: the SLM exchange)."""
    ins = tile((64, 32), "f32", wg((2, 2), (32, 16)))
    out = opt(tmp_path, _kernel(_transpose_and_store((64, 32), wg((2, 2), (16, 32))), ins, loop=True),
              "xetile-wg-to-sg")
    assert "memref.alloc" not in out and "gpu.barrier" not in out and "tile_transpose" not in out
    view = "!xetile.tile<16x32xf32, #xetile.tile_attr<order = [0, 1]>>"
    assert re.search(r"xetile.load_tile %\w+ : " + re.escape(view) + r" -> vector<16x32xf32>", out)
    assert re.search(r"xetile.update_tile_offset %\w+, %c32, %c0 : " + re.escape(view), out)


def test_transpose_of_own_pieces_is_folded_into_the_load(tmp_path):
    """RFC 2.3's case in small: [4,1]x[16,32] -> [1,4]x[32,16]: subgroup s loads rows
    16s..16s+15 and needs result columns 16s..16s+15, its own data transposed. The load
    becomes an order = [0, 1] view of the same memory (no SLM, no barrier); the K-loop
    update of the view swaps its deltas."""
    ins = tile((64, 32), "f32", wg((4, 1), (16, 32)))
    out = opt(tmp_path, _kernel(_transpose_and_store((64, 32), wg((1, 4), (32, 16))), ins, loop=True),
              "xetile-wg-to-sg")
    assert "memref.alloc" not in out and "gpu.barrier" not in out and "tile_transpose" not in out
    view = "!xetile.tile<32x16xf32, #xetile.tile_attr<order = [0, 1]>>"
    assert "to memref<1024x1024xf32, strided<[1, 1024]>>" in out  # the static base, viewed column-major
    assert re.search(r"xetile.init_tile %\w+\[%\w+, %\w+\] : memref<1024x1024xf32, strided<\[1, 1024\]>> -> "
                     + re.escape(view), out)
    assert re.search(r"xetile.update_tile_offset %\w+, %c32, %c0 : " + re.escape(view), out)
    assert re.search(r"xetile.load_tile %\w+ : " + re.escape(view) + r" -> vector<32x16xf32>", out)


def test_transpose_source_map_is_derived_by_swapping(tmp_path):
    """Without a producer map, the RFC's derivation: sg_layout and sg_data swapped."""
    text = f"""
func.func @k(%o: memref<1024x1024xf32>) {{
  %c0 = arith.constant 0 : index
  %z = arith.constant dense<1.0> : vector<64x32xf32>
  %r = xetile.tile_transpose %z [1, 0] {{wg_map = {wg((4, 1), (8, 64))}}} : vector<64x32xf32> -> vector<32x64xf32>
  %to = xetile.init_tile %o[%c0, %c0] : memref<1024x1024xf32> -> {tile((32, 64), "f32", wg((4, 1), (8, 64)))}
  xetile.store_tile %r, %to : vector<32x64xf32>, {tile((32, 64), "f32", wg((4, 1), (8, 64)))}
  func.return
}}"""
    out = opt(tmp_path, text, "xetile-wg-to-sg")
    assert "arith.constant dense<1.000000e+00> : vector<64x8xf32>" in out  # source piece [64, 8] of [1, 4]


def test_transposed_slm_loads_in_xegpu(tmp_path):
    """The view's order = [0, 1] tiles become descriptors over the row-major SLM buffer,
    read with load_nd {transpose} (8x16 result blocks from 16x8 memory blocks)."""
    ins = tile((64, 32), "f16", wg((2, 2), (32, 16)))
    body = _transpose_and_store((64, 32), wg((2, 2), (16, 32)), "f16", computed=True)
    out = opt(tmp_path, _kernel(body, ins, "f16"), "xetile-wg-to-sg,xetile-blocking,convert-xetile-to-xegpu")
    assert re.search(r"xegpu.create_nd_tdesc %\w+\[%\w+, %\w+\] : memref<64x32xf16, 3 : i64> -> "
                     r"!xegpu.tensor_desc<\d+x\d+xf16, #xegpu.block_tdesc_attr<memory_space = slm>>", out)
    assert re.search(r"xegpu.load_nd %\w+ \{transpose = array<i64: 1, 0>\} : !xegpu.tensor_desc<16x8xf16, "
                     r"#xegpu.block_tdesc_attr<memory_space = slm>> -> vector<8x16xf16>", out)


def test_conv_layout_into_a_row_reduce_reduces_first(tmp_path):
    """RFC 2.2's epilogue in small: [2,2]x[32,32] -> conv [4,1]x[16,64] -> reduce [1]. Each
    subgroup reduces its 32x32 piece to 32 partial row sums; only those (a 64x2 tile, not
    the 64x64 one) pass through SLM, and each subgroup adds the 2 partials of its 16 rows."""
    ins = tile((64, 64), "f32", wg((2, 2), (32, 32)))
    body = f"""  %w = xetile.tile_conv_layout %v {{wg_map = {wg((4, 1), (16, 64))}}} : vector<64x64xf32> -> vector<64x64xf32>
  %r = xetile.tile_reduce <add> %w [1] : vector<64x64xf32> -> vector<64x1xf32>"""
    out = opt(tmp_path, _kernel(body, ins), "xetile-wg-to-sg")
    assert "memref.alloc() : memref<64x2xf32, 3 : i64>" in out and "memref<64x64xf32, 3" not in out
    assert re.search(r"tile_reduce <add> %\w+ \[1\] : vector<32x32xf32> -> vector<32x1xf32>", out)
    assert re.search(r"xetile.store_tile %\w+, %\w+ : vector<32x1xf32>", out)
    loads = re.findall(r"xetile.load_tile %\w+ : !xetile.tile<16x1xf32, #xetile.tile_attr<memory_space = 3>>", out)
    assert len(loads) == 2 and re.search(r"arith.addf %\w+, %\w+ : vector<16x1xf32>", out)


def test_row_reduce_split_across_subgroups_combines_partial_columns(tmp_path):
    """Reduce [1] of column bands [1,4]x[64,16]: partial sums 64x4 in SLM, each subgroup
    reads the 4 columns of its rows (the result is replicated over the 4 subgroups)."""
    ins = tile((64, 64), "f32", wg((1, 4), (64, 16)))
    body = "  %r = xetile.tile_reduce <add> %v [1] : vector<64x64xf32> -> vector<64x1xf32>"
    out = opt(tmp_path, _kernel(body, ins), "xetile-wg-to-sg")
    assert "memref.alloc() : memref<64x4xf32, 3 : i64>" in out and out.count("gpu.barrier") == 1
    assert len(re.findall(r"xetile.load_tile %\w+ : !xetile.tile<64x1xf32, #xetile.tile_attr<memory_space = 3>>",
                          out)) == 4
