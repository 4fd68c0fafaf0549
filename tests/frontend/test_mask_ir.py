"""The IR of masked tiles: a masked load is the tile's load_tile (padding kept) and one
arith.select with ``other``; a masked store is a store_scatter over the tile's elements
(their linear offsets and bounds and'ed into the mask), with no read of the stored array.
Every module verifies and round-trips through the MLIR printer and parser (but for a dense
-inf constant: xDSL reads ``dense<0xFF800000>`` back as the integer's value, not its bits)."""
from __future__ import annotations

import re

from xetile_dsl.compiler import to_xetile
from xetile_dsl.dialects import parse_module, print_module

import xetile_dsl as xd
import xetile_dsl.language as xt
from kernels.masked import masked_copy, maybe_masked, softmax_rows

SIG = {"x": "f32[:,:]", "y": "f32[:,:]", "n_rows": "i32", "n_cols": "i32", "fill": "f32"}


def _ir(fn, sig, constants, round_trip=True) -> str:
    module = to_xetile(fn, sig, constants, "pvc")
    module.verify()
    text = print_module(module)
    assert not round_trip or print_module(parse_module(text)) == text
    return text


def test_masked_load_is_the_block_load_and_a_select():
    text = _ir(softmax_rows, {"x": "f32[:,:]", "y": "f32[:,:]", "N": "i32"}, {"BM": 4, "BN": 64}, round_trip=False)
    assert re.search(r"xetile.load_tile %\w+ : !xetile.tile<4x64xf32> -> vector<4x64xf32>", text), text
    assert re.search(r"arith.select %\w+, %\w+, %\w+ : vector<4x64xi1>, vector<4x64xf32>", text), text
    assert re.search(r"arith.constant dense<0xff800000> : vector<4x64xf32>", text), text  # other=-inf
    assert "load_gather" not in text and "store_scatter" not in text


def test_padding_stays_on_the_load_under_a_mask():
    text = _ir(masked_copy, SIG, dict(BM=8, BN=32, LOAD="cols", STORE="", OTHER="scalar", PAD=-3))
    assert re.search(r"xetile.load_tile %\w+ \{padding = -3\.0+e\+00 : f32\}", text), text
    assert re.search(r"vector.broadcast %fill : f32 to vector<8x32xf32>", text), text


def test_masked_store_is_a_predicated_scatter_without_a_read():
    text = _ir(masked_copy, SIG, dict(BM=8, BN=32, LOAD="", STORE="cols", OTHER=None, PAD=0))
    assert re.search(r"xetile.init_tile %y, %\w+ : memref<\?x\?xf32, strided<\[\?, 1\]>>, vector<8x32xindex> "
                     r"-> !xetile.tile<8x32xf32, #xetile.tile_attr<scattered = true>>", text), text
    assert re.search(r"xetile.store_scatter %\w+, %\w+, %\w+ : vector<8x32xf32>", text), text
    assert "xetile.store_tile" not in text
    assert len(re.findall(r"xetile.load_tile", text)) == 1  # x's load only: y is never read


def test_a_constexpr_none_mask_is_no_mask():
    sig = {"x": "f32[:,:]", "y": "f32[:,:]"}
    plain = _ir(maybe_masked, sig, dict(M=False, OTHER=None))
    assert "arith.select" not in plain and "store_scatter" not in plain and "xetile.store_tile" in plain
    masked = _ir(maybe_masked, sig, dict(M=True, OTHER=2.0))
    assert "arith.select" in masked and "store_scatter" in masked


def test_row_edge_store_mask_is_a_block_store_with_fewer_rows():
    """``rows + r0 < n_rows``: the row extent becomes min(extent, r0 + (n_rows - r0)), one row
    (the tile moved below it) when that keeps none; no scatter, no select of values."""
    text = _ir(masked_copy, SIG, dict(BM=8, BN=32, LOAD="", STORE="rows", OTHER=None, PAD=0))
    assert "store_scatter" not in text
    assert re.search(r"arith.minsi %8, %\w+ : index", text), text  # %8: y's row extent
    assert re.search(r"xetile.init_tile %y\[%\w+, %\w+\], \[%\w+, %9\], \[%10, %11\]", text), text
    assert re.search(r"xetile.store_tile %\w+, %\w+ : vector<8x32xf32>", text), text


def test_a_triton_row_mask_is_a_row_edge_mask_too():
    """``(r0 + xt.arange(0, BM))[:, None] < n_rows`` (a 1-D index made a column) shrinks the
    block store like ``rows + r0 < n_rows`` does: no scatter."""
    text = _ir(masked_copy, SIG, dict(BM=8, BN=32, LOAD="", STORE="rows_triton", OTHER=None, PAD=0))
    assert "store_scatter" not in text
    assert re.search(r"xetile.store_tile %\w+, %\w+ : vector<8x32xf32>", text), text


def test_column_edge_of_a_column_major_store_is_a_block_store_with_fewer_memory_rows():
    """On an ``order=(0, 1)`` tile the view's columns are the memory's rows: a column edge
    mask (``xt.arange(0, BN) < n``) shrinks the view's column extent (the memory's row
    extent, y's rows), not a scatter (what ops.attention's cu_seqlens stores rely on)."""
    text = _ir(transposed_store, {"x": "f16[:,:]", "y": "f16[:,:]", "n": "i32"}, {"BM": 16, "BN": 16},
               round_trip=False)
    assert "store_scatter" not in text
    init = re.findall(r"xetile.init_tile %y\[[^\]]*\], \[([^\]]*)\]", text)
    assert len(init) == 2 and init[0] != init[1], text            # the column extent replaced
    assert init[1].split(", ")[0] == init[0].split(", ")[0], text  # the row extent kept
    assert re.search(r"xetile.store_tile %\w+, %\w+ : vector<16x16xf16>", text), text


@xd.jit
def transposed_store(x, y, n, BM: xt.constexpr, BN: xt.constexpr):
    v = xt.load_tile(xt.init_tile(x, [0, 0], [BM, BN]))
    xt.store_tile(v, xt.init_tile(y, [0, 0], [BM, BN], order=(0, 1)), mask=xt.arange(0, BN) < n)
