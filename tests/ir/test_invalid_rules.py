"""Verifier rules exercised by the original implementations' invalid tests (IMEX XeTile,
MLIR XeGPU) that the RFCs also state, in our own cases; and located errors for malformed
attributes inside types."""
from __future__ import annotations

import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from xetile_dsl.dialects import parse_module

SC2 = "!xegpu.tensor_desc<16x2xf32, #xegpu.scatter_tdesc_attr<chunk_size = 2>>"
S1 = "!xegpu.tensor_desc<16xf16, #xegpu.scatter_tdesc_attr<>>"

INVALID = {
    # --- init_tile: order against the base layout (xetile-rfc "Correct/Incorrect lowering")
    "col-major order on row-major memref": (
        "%m: memref<1024x1024xf16>",
        "%t = xetile.init_tile %m[0, 0] : memref<1024x1024xf16> -> !xetile.tile<64x32xf16, "
        "#xetile.tile_attr<order = [0, 1]>>", "expects a column-major base"),
    "default order on transposed memref": (
        "%m: memref<1024x1024xf16, affine_map<(d0, d1) -> (d1, d0)>>",
        "%t = xetile.init_tile %m[0, 0] : memref<1024x1024xf16, affine_map<(d0, d1) -> (d1, d0)>> -> "
        "!xetile.tile<64x32xf16>", "expects a row-major base"),
    "row order on linear col-major map": (
        "%m: memref<64x64xf16, affine_map<(d0, d1) -> (d1 * 64 + d0)>>",
        "%t = xetile.init_tile %m[8, 16] : memref<64x64xf16, affine_map<(d0, d1) -> (d1 * 64 + d0)>> -> "
        "!xetile.tile<16x16xf16, #xetile.tile_attr<order = [1, 0]>>", "is column-major"),
    "row order on col-major strided": (
        "%m: memref<512x1024xf16, strided<[1, 512], offset: ?>>",
        "%t = xetile.init_tile %m[8, 16] : memref<512x1024xf16, strided<[1, 512], offset: ?>> -> "
        "!xetile.tile<32x64xf16>", "expects a row-major base"),
    "row order with column strides": (
        "%p: i64",
        "%c1 = arith.constant 1 : index\n  %c256 = arith.constant 256 : index\n"
        "  %t = xetile.init_tile %p[%c1, %c1], [%c256, %c256], [%c1, %c256] : i64 -> !xetile.tile<32x64xf16>",
        "strides [1, 256] is column-major"),
    "col order with row strides": (
        "%p: i64",
        "%c1 = arith.constant 1 : index\n  %c256 = arith.constant 256 : index\n"
        "  %t = xetile.init_tile %p[%c1, %c1], [%c256, %c256], [%c256, %c1] : i64 -> "
        "!xetile.tile<32x64xf16, #xetile.tile_attr<order = [0, 1]>>", "expects a column-major base"),
    "static memref with sizes": (
        "%m: memref<64x64xf32>, %h: index, %w: index",
        "%t = xetile.init_tile %m[0, 0], [%h, %w], [%w, %h] : memref<64x64xf32> -> !xetile.tile<16x16xf32>",
        "takes no sizes or strides"),
    "tile memory space differs": (
        "%m: memref<64x64xf16, 3>",
        "%t = xetile.init_tile %m[0, 0] : memref<64x64xf16, 3> -> !xetile.tile<16x16xf16>", "memory space 3"),
    "scattered tile on a non-address base": (
        "%m: f32, %i: vector<16xindex>",
        "%t = xetile.init_tile %m, %i : f32, vector<16xindex> -> !xetile.tile<16xf16, "
        "#xetile.tile_attr<scattered = true>>", "an i64 address or a memref base"),
    "update_tile_offset count": (
        "%t: !xetile.tile<16x16xf16>", "%u = xetile.update_tile_offset %t, [0, 1, 2] : !xetile.tile<16x16xf16>",
        "expected 2 offsets"),
    "tile_mma element types": (
        "%a: vector<8x8xf32>, %b: vector<8x8xf16>, %c: vector<8x8xf32>",
        "%r = xetile.tile_mma %a, %b, %c : vector<8x8xf32>, vector<8x8xf16>, vector<8x8xf32> -> vector<8x8xf32>",
        "same element type"),
    "tile_transpose identity": (
        "%v: vector<8x16xf16>", "%r = xetile.tile_transpose %v [0, 1] : vector<8x16xf16> -> vector<8x16xf16>",
        "[0, 1] would not transpose"),
    # --- XeGPU
    "create_nd offsets vs memref rank": (
        "%m: memref<2x24x32xf32>", "%d = xegpu.create_nd_tdesc %m[0, 0] : memref<2x24x32xf32> -> "
        "!xegpu.tensor_desc<8x16xf32>", "one offset per dimension"),
    "create_nd rank above source": (
        "%m: memref<24xf32>", "%d = xegpu.create_nd_tdesc %m[0] : memref<24xf32> -> !xegpu.tensor_desc<8x16xf32>",
        "needs at least 2 offsets"),
    "create_tdesc memory space": (
        "%m: memref<?xf32>, %o: vector<16xindex>",
        "%d = xegpu.create_tdesc %m, %o : memref<?xf32>, vector<16xindex> -> !xegpu.tensor_desc<16x2xf32, "
        "#xegpu.scatter_tdesc_attr<memory_space = slm, chunk_size = 2>>", "make them agree"),
    "prefetch_nd scattered": (f"%d: {S1}", f"xegpu.prefetch_nd %d : {S1}", "needs a block tensor_desc"),
    "store_nd scattered": (f"%d: {S1}, %v: vector<16xf16>", f"xegpu.store_nd %v, %d : vector<16xf16>, {S1}",
                           "needs a block tensor_desc"),
    "update_nd_offset scattered": (f"%d: {S1}", f"%e = xegpu.update_nd_offset %d, [0] : {S1}",
                                   "needs a block tensor_desc"),
    "atomic_rmw value shape": (
        f"%d: {SC2}, %m: vector<16xi1>, %v: vector<16x4xf32>",
        f"%r = xegpu.atomic_rmw addf %v, %d, %m : vector<16x4xf32>, {SC2}, vector<16xi1> -> vector<16x4xf32>",
        "must equal the descriptor shape [16, 2]"),
    "convert_layout same layouts": (
        "%v: vector<32x64xf16>",
        "%r = xegpu.convert_layout %v {target_layout = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>, "
        "input_layout = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>} : vector<32x64xf16> -> "
        "vector<32x64xf16>", "nothing to convert"),
    "convert_layout mixed levels": (
        "%v: vector<32x64xf16>",
        "%r = xegpu.convert_layout %v {target_layout = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>, "
        "input_layout = #xegpu.layout<sg_layout = [2, 4], sg_data = [16, 16], lane_layout = [1, 16], "
        "lane_data = [1, 1]>} : vector<32x64xf16> -> vector<32x64xf16>", "must both be workgroup layouts"),
    "alloc_nbarrier count": ("", "xegpu.alloc_nbarrier 0", "barrier count must be 1..32"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid(name: str) -> None:
    args, body, message = INVALID[name]
    text = f"func.func @f({args}) {{\n  {body}\n  func.return\n}}\n"
    with pytest.raises((VerifyException, ParseError)) as info:
        parse_module(text).verify()
    assert message in str(info.value), str(info.value)


# Malformed attributes and types: always a ParseError located at line:column.
MALFORMED = {
    "tile order rank": "!xetile.tile<8x16xf16, #xetile.tile_attr<order = [0, 1, 2]>>",
    "tile order word": "!xetile.tile<8x16xf16, #xetile.tile_attr<order = x>>",
    "tile blocks": "!xetile.tile<8x16xf16, #xetile.tile_attr<inner_blocks = [3, 16]>>",
    "tile wg_map not a map": "!xetile.tile<8x16xf16, #xetile.tile_attr<wg_map = 5>>",
    "tile wg_map ranks": "!xetile.tile<8x16xf16, #xetile.tile_attr<wg_map = #xetile.wg_map<sg_layout = [3], "
                         "sg_data = [1, 2]>>>",
    "tile encoding not tile_attr": "!xetile.tile<8x16xf16, 7>",
    "tile memory space": "!xetile.tile<8x16xf16, #xetile.tile_attr<memory_space = foo>>",
    "tile unterminated": "!xetile.tile<8x16xf16, #xetile.tile_attr<order = [1, 0]",
    "tile dynamic": "!xetile.tile<?x16xf16>",
    "array_length word": "!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<array_length = x>>",
    "array_length zero": "!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<array_length = 0>>",
    "block memory space": "!xegpu.tensor_desc<8x16xf16, #xegpu.block_tdesc_attr<memory_space = tmp>>",
    "chunk size": "!xegpu.tensor_desc<16x5xf16, #xegpu.scatter_tdesc_attr<chunk_size = 5>>",
    "sg_map ranks": "!xegpu.tensor_desc<8x16xf16, #xegpu.sg_map<wi_layout = [1], wi_data = [1, 1]>>",
    "layout ranks": "!xegpu.tensor_desc<8x16xf16, #xegpu.layout<lane_layout = [1, 16], lane_data = [1]>>",
    "layout field": "!xegpu.tensor_desc<8x16xf16, #xegpu.layout<foo = [1]>>",
    "layout without layout": "!xegpu.tensor_desc<8x16xf16, #xegpu.layout<sg_data = [8, 16], lane_data = [1, 1]>>",
    "layout order alone": "!xegpu.tensor_desc<8x16xf16, #xegpu.layout<inst_data = [8, 16], order = [0, 1]>>",
    "layout vs shape": "!xegpu.tensor_desc<4x8xf32, #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>>",
    "layout rank vs tensor": "!xegpu.tensor_desc<16xf32, #xegpu.layout<lane_layout = [2, 16], lane_data = [1, 1]>>",
    "slice parent": "!xegpu.tensor_desc<8x16xf16, #xegpu.slice<5, dims = [0]>>",
    "encoding int": "!xegpu.tensor_desc<8x16xf16, 5>",
    "tensor_desc rank": "!xegpu.tensor_desc<8x16x4x2xf16>",
    "scattered 2-D without chunk": "!xegpu.tensor_desc<16x4xf16, #xegpu.scatter_tdesc_attr<>>",
    "tdesc_attr mixed": "!xegpu.tensor_desc<8x16xf16, #xegpu.tdesc_attr<scattered = true, array_length = 2>>",
    "tdesc_attr scattered memory space": "!xegpu.tensor_desc<16x4xf32, #xegpu.tdesc_attr<memory_space = tmp, "
                                         "scattered = true, chunk_size = 4>>",
    "tdesc_attr block memory space": "!xegpu.tensor_desc<8x16xf32, #xegpu.tdesc_attr<memory_space = tmp>>",
    "sg_map zero": "!xegpu.tensor_desc<16x16xf32, #xegpu.sg_map<wi_layout = [1, 16], wi_data = [0, 1]>>",
    "tdesc_attr sg": "!xegpu.tensor_desc<8x16xf16, #xegpu.tdesc_attr<sg = 1>>",
    "cache hint word": "!xegpu.tensor_desc<8x16xf16, #xegpu.cache_hint<often>>",
    "nbarrier params": "!xegpu.nbarrier<3>",
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_type_is_located(name: str) -> None:
    text = f"func.func @f(%x: index,\n             %t: {MALFORMED[name]}) {{\n  func.return\n}}\n"
    with pytest.raises(ParseError) as info:
        parse_module(text)
    assert "<text>:2:" in str(info.value), str(info.value)
