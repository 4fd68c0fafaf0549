"""Invalid forms in the style of MLIR's XeGPU and IMEX's XeTile ``invalid.mlir`` tests:
each is rejected with a message that says what is wrong (the message is ours; the case is
theirs)."""
from __future__ import annotations

import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from xetile_dsl.dialects import parse_module

CST4 = "%o = arith.constant dense<[0, 8, 16, 24]> : vector<4xindex>\n  "
SC2 = "!xegpu.tensor_desc<4x2xf32, #xegpu.scatter_tdesc_attr<chunk_size = 2>>"

CASES = {
    # --- MLIR XeGPU
    "nd rank above source": ("%src: memref<24xf32>", "%1 = xegpu.create_nd_tdesc %src[0] : memref<24xf32> -> "
                             "!xegpu.tensor_desc<8x16xf32>", "needs at least 2 offsets"),
    "nd element type": ("%src: memref<24x32xf32>", "%1 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf32> -> "
                        "!xegpu.tensor_desc<8x16xf16>", "element type f32 of the source differs"),
    "nd memory space": ("%src: memref<2x24x32xf32, 3>", "%1 = xegpu.create_nd_tdesc %src[0, 0, 0] : "
                        "memref<2x24x32xf32, 3> -> !xegpu.tensor_desc<16xf32>", "make them agree"),
    "prefetch_nd write policy": ("%src: memref<24x32xf16>", "%1 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf16> "
                                 "-> !xegpu.tensor_desc<8x16xf16>\n  xegpu.prefetch_nd %1 <{l1_hint = "
                                 "#xegpu.cache_hint<write_back>}> : !xegpu.tensor_desc<8x16xf16>", "not a load policy"),
    "prefetch_nd scattered": ("%src: memref<24xf16>", "%0 = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : "
                              "vector<8xindex>\n  %1 = xegpu.create_tdesc %src, %0 : memref<24xf16>, vector<8xindex> -> "
                              "!xegpu.tensor_desc<8xf16, #xegpu.scatter_tdesc_attr<>>\n  xegpu.prefetch_nd %1 : "
                              "!xegpu.tensor_desc<8xf16, #xegpu.scatter_tdesc_attr<>>", "needs a block tensor_desc"),
    "load_nd write policy": ("%src: memref<8x16xf16>", "%1 = xegpu.create_nd_tdesc %src[0, 0] : memref<8x16xf16> -> "
                             "!xegpu.tensor_desc<8x16xf16>\n  %2 = xegpu.load_nd %1 <{l1_hint = "
                             "#xegpu.cache_hint<write_back>}> : !xegpu.tensor_desc<8x16xf16> -> vector<4x16x2xf16>",
                             "not a load policy"),
    "load_nd 1-D shape": ("%src: memref<24x32xf32>", "%1 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf32> -> "
                          "!xegpu.tensor_desc<16xf32>\n  %2 = xegpu.load_nd %1 : !xegpu.tensor_desc<16xf32> -> "
                          "vector<3xf32>", "result shape must be [16]"),
    "load_nd 2-D shape": ("%src: memref<24x32xf32>", "%1 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf32> -> "
                          "!xegpu.tensor_desc<8x16xf32>\n  %2 = xegpu.load_nd %1 : !xegpu.tensor_desc<8x16xf32> -> "
                          "vector<8x1xf32>", "result shape must be [8, 16]"),
    "store_nd array_length": ("%dst: memref<24x32xf16>, %v: vector<2x24x32xf16>", "%2 = xegpu.create_nd_tdesc "
                              "%dst[0, 0] : memref<24x32xf16> -> !xegpu.tensor_desc<24x32xf16, "
                              "#xegpu.block_tdesc_attr<array_length = 2>>\n  xegpu.store_nd %v, %2 : "
                              "vector<2x24x32xf16>, !xegpu.tensor_desc<24x32xf16, #xegpu.block_tdesc_attr<array_length "
                              "= 2>>", "array_length is for loads only"),
    "store_nd shape": ("%dst: memref<24x32xf32>, %data: vector<8x1xf32>", "%1 = xegpu.create_nd_tdesc %dst[0, 0] : "
                       "memref<24x32xf32> -> !xegpu.tensor_desc<8x16xf32>\n  xegpu.store_nd %data, %1 : "
                       "vector<8x1xf32>, !xegpu.tensor_desc<8x16xf32>", "must equal the descriptor shape"),
    "create_tdesc block": ("%src: ui64", "%0 = arith.constant dense<[0, 2, 4, 6, 8, 10, 12, 14]> : vector<8xindex>\n"
                           "  %1 = xegpu.create_tdesc %src, %0 : ui64, vector<8xindex> -> !xegpu.tensor_desc<8xf16>",
                           "needs a scattered tensor_desc"),
    "create_tdesc memory space": ("%src: memref<?xf32>", CST4 + "%1 = xegpu.create_tdesc %src, %o : memref<?xf32>, "
                                  "vector<4xindex> -> !xegpu.tensor_desc<4x2xf32, #xegpu.scatter_tdesc_attr<"
                                  "memory_space = slm, chunk_size = 2>>", "make them agree"),
    "create_tdesc chunk shape": ("%src: memref<?xf32>", CST4 + "%1 = xegpu.create_tdesc %src, %o : memref<?xf32>, "
                                 "vector<4xindex> -> !xegpu.tensor_desc<4x5xf32, #xegpu.scatter_tdesc_attr<"
                                 "chunk_size = 4>>", "the shape must be [lanes, 4]"),
    "create_tdesc packing": ("%src: memref<?xf16>", CST4 + "%1 = xegpu.create_tdesc %src, %o : memref<?xf16>, "
                             "vector<4xindex> -> !xegpu.tensor_desc<4x3xf16, #xegpu.scatter_tdesc_attr<chunk_size = 3>>",
                             "not 32-bit aligned"),
    "prefetch block": ("%src: memref<24x32xf16>", "%1 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf16> -> "
                       "!xegpu.tensor_desc<24x32xf16>\n  xegpu.prefetch %1 : !xegpu.tensor_desc<24x32xf16>",
                       "needs a scattered tensor_desc"),
    "scatter layout rank": ("%src: ui64", CST4 + "%1 = xegpu.create_tdesc %src, %o : ui64, vector<4xindex> -> "
                            "!xegpu.tensor_desc<4xf32, #xegpu.scatter_tdesc_attr<>, #xegpu.layout<lane_layout = [4, 1], "
                            "lane_data = [1, 1]>>", "layout rank 2 differs"),
    "scatter layout rows": ("%src: ui64", CST4 + "%1 = xegpu.create_tdesc %src, %o : ui64, vector<4xindex> -> "
                            "!xegpu.tensor_desc<4x2xf32, #xegpu.scatter_tdesc_attr<chunk_size = 2>, #xegpu.layout<"
                            "lane_layout = [1, 1], lane_data = [2, 1]>>", "non-contiguous scattered rows"),
    "scatter layout unit": ("%src: ui64, %offs: vector<16xindex>", "%1 = xegpu.create_tdesc %src, %offs : ui64, "
                            "vector<16xindex> -> !xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<>, "
                            "#xegpu.layout<lane_layout = [8], lane_data = [2]>>", "one 32-bit unit"),
    "load block descriptor": ("%src: memref<24x32xf16>, %m: vector<4xi1>", "%1 = xegpu.create_nd_tdesc %src[0, 0] : "
                              "memref<24x32xf16> -> !xegpu.tensor_desc<4x2xf16>\n  %2 = xegpu.load %1, %m : "
                              "!xegpu.tensor_desc<4x2xf16>, vector<4xi1> -> vector<4x2xf16>",
                              "needs a scattered tensor_desc"),
    "load write policy": ("%src: ui64, %m: vector<4xi1>", CST4 + "%1 = xegpu.create_tdesc %src, %o : ui64, "
                          f"vector<4xindex> -> {SC2}\n  %2 = xegpu.load %1, %m <{{transpose, l1_hint = "
                          f"#xegpu.cache_hint<write_back>}}> : {SC2}, vector<4xi1> -> vector<2x4xf32>",
                          "not a load policy"),
    "dpas K": ("%a: vector<8x8xf16>, %b: vector<8x16x2xf16>", "%1 = xegpu.dpas %a, %b : vector<8x8xf16>, "
               "vector<8x16x2xf16> -> vector<8x16xf32>", "shapes do not multiply"),
    "dpas M": ("%a: vector<16x16xf16>, %b: vector<8x16x2xf16>", "%1 = xegpu.dpas %a, %b : vector<16x16xf16>, "
               "vector<8x16x2xf16> -> vector<8x16xf32>", "shapes do not multiply"),
    "atomic_rmw shape": ("%src: ui64, %value: vector<16x4xf32>, %mask: vector<16xi1>",
                         "%0 = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : "
                         "vector<16xindex>\n  %1 = xegpu.create_tdesc %src, %0 : ui64, vector<16xindex> -> "
                         "!xegpu.tensor_desc<16x8xf32, #xegpu.scatter_tdesc_attr<chunk_size = 8>>\n  "
                         "%2 = xegpu.atomic_rmw addf %1, %mask, %value : !xegpu.tensor_desc<16x8xf32, "
                         "#xegpu.scatter_tdesc_attr<chunk_size = 8>>, vector<16xi1>, vector<16x4xf32> -> "
                         "vector<16x8xf32>", "must equal the value type"),
    "tensor_desc rank 3": ("%src: memref<24x32xf32>", "%0 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf32> -> "
                           "!xegpu.tensor_desc<16x2x2xf32>", "1-D or 2-D"),
    "layout distribution": ("%src: memref<24x32xf32>", "%0 = xegpu.create_nd_tdesc %src[0, 0] : memref<24x32xf32> -> "
                            "!xegpu.tensor_desc<4x8xf32, #xegpu.layout<lane_layout = [8, 2], lane_data = [1, 1]>>",
                            "must be a multiple of lane_layout*lane_data"),
    "convert_layout same maps": ("%a: vector<32x64xf16>", "%2 = xegpu.convert_layout %a {srcMap = #xegpu.layout<"
                                 "lane_layout = [1, 16], lane_data = [1, 1]>, resMap = #xegpu.layout<lane_layout = "
                                 "[1, 16], lane_data = [1, 1]>} : vector<32x64xf16>", "are the same"),
    "convert_layout wg and sg": ("%a: vector<32x64xf16>", "%2 = xegpu.convert_layout %a {srcMap = #xegpu.layout<"
                                 "sg_layout = [2, 4], sg_data = [16, 16], lane_layout = [1, 16], lane_data = [1, 1]>, "
                                 "resMap = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>} : "
                                 "vector<32x64xf16>", "both be workgroup layouts"),
    "layout field ranks": ("%src: ui64, %offs: vector<16xindex>", "%1 = xegpu.create_tdesc %src, %offs : ui64, "
                           "vector<16xindex> -> !xegpu.tensor_desc<16x2xf32, #xegpu.scatter_tdesc_attr<chunk_size = 2>, "
                           "#xegpu.layout<sg_layout = [1, 1, 1], sg_data = [16, 2, 1], lane_layout = [8, 1], "
                           "lane_data = [1, 2]>>", "same rank"),
    "layout order without layouts": ("%src: ui64, %offs: vector<16xindex>", "%1 = xegpu.create_tdesc %src, %offs : "
                                     "ui64, vector<16xindex> -> !xegpu.tensor_desc<16x2xf32, #xegpu.scatter_tdesc_attr<"
                                     "chunk_size = 2>, #xegpu.layout<inst_data = [16, 2], order = [0, 1]>>",
                                     "needs sg_layout or lane_layout"),
    # --- IMEX XeTile
    "init_tile 3 offsets": ("%source: memref<64x64xf32>, %offset: index", "%1 = xetile.init_tile "
                            "%source[%offset, %offset, %offset] : memref<64x64xf32> -> !xetile.tile<8x8xf32>",
                            "expects 2 index offsets"),
    "init_tile column-major tile on row-major memref": (
        "%src: memref<1024x1024xf16>", "%1 = xetile.init_tile %src[8, 16] : memref<1024x1024xf16> -> "
        "!xetile.tile<32x64xf16, #xetile.tile_attr<order = [0, 1]>>", "expects a column-major base"),
    "init_tile row-major tile on strided column-major memref": (
        "%a: memref<512x1024xf16, strided<[1, 256], offset: ?>>", "%1 = xetile.init_tile %a[8, 16] : "
        "memref<512x1024xf16, strided<[1, 256], offset: ?>> -> !xetile.tile<32x64xf16>", "expects a row-major base"),
    "init_tile sizes on static memref": ("%source: memref<1024x1024xf32>, %d0: index, %d1: index",
                                         "%1 = xetile.init_tile %source[0, 0], [%d0, %d1] : memref<1024x1024xf32> -> "
                                         "!xetile.tile<64x64xf32>", "takes no sizes or strides"),
    "init_tile dynamic memref sizes": ("%source: memref<?x?xf32>, %d0: index, %s0: index, %s1: index",
                                       "%1 = xetile.init_tile %source[0, 0], [%d0], [%s0, %s1] : memref<?x?xf32> -> "
                                       "!xetile.tile<64x64xf32>", "needs 2 sizes and 2 strides"),
    "init_tile address strides": ("%source: i64, %d0: index, %d1: index, %s0: index",
                                  "%1 = xetile.init_tile %source[0, 0], [%d0, %d1], [%s0] : i64 -> "
                                  "!xetile.tile<64x64xf32>", "needs 2 sizes and 2 strides"),
    "load_tile inner_blocks": ("%src: !xetile.tile<64x64xf16, #xetile.tile_attr<inner_blocks = [8, 16]>>",
                               "%1 = xetile.load_tile %src : !xetile.tile<64x64xf16, #xetile.tile_attr<inner_blocks = "
                               "[8, 16]>> -> vector<8x2x8x16xf16>", "does not match tile shape"),
    "tile_mma ranks": ("%a: vector<8x8x8x8xf32>, %b: vector<8x8xf32>, %c: vector<8x8x8x8xf32>",
                       "%r = xetile.tile_mma %a, %b, %c : vector<8x8x8x8xf32>, vector<8x8xf32>, vector<8x8x8x8xf32> -> "
                       "vector<8x8x8x8xf32>", "must have the same rank"),
    "tile_mma element types": ("%a: vector<8x8xf32>, %b: vector<8x8xf16>, %c: vector<8x8xf32>",
                               "%r = xetile.tile_mma %a, %b, %c : vector<8x8xf32>, vector<8x8xf16>, vector<8x8xf32> -> "
                               "vector<8x8xf32>", "same element type"),
    "tile_mma C type": ("%a: vector<8x8xf32>, %b: vector<8x8xf32>, %c: vector<8x8xf16>",
                        "%r = xetile.tile_mma %a, %b, %c : vector<8x8xf32>, vector<8x8xf32>, vector<8x8xf16> -> "
                        "vector<8x8xf32>", "accumulator type"),
    "tile_mma 4-D shapes": ("%a: vector<8x16x8x32xf16>, %b: vector<16x8x8x8xf16>, %c: vector<8x8x8x8xf32>",
                            "%r = xetile.tile_mma %a, %b, %c : vector<8x16x8x32xf16>, vector<16x8x8x8xf16>, "
                            "vector<8x8x8x8xf32> -> vector<8x8x8x8xf32>", "blocked shapes do not multiply"),
    "tile_pack element type": ("%in: vector<32x64xf16>", "%out = xetile.tile_pack %in { inner_blocks = [8, 16] } : "
                               "vector<32x64xf16> -> vector<4x4x8x16xf32>", "element types differ"),
    "tile_pack blocks": ("%in: vector<32x64xf16>", "%out = xetile.tile_pack %in {inner_blocks = [16, 16]} : "
                         "vector<32x64xf16> -> vector<4x4x8x16xf16>", "the 4-D shape must be [2, 4, 16, 16]"),
    "tile_unpack shape": ("%in: vector<4x4x16x16xf16>", "%out = xetile.tile_unpack %in {inner_blocks = [16, 16]} : "
                          "vector<4x4x16x16xf16> -> vector<32x64xf16>", "the 4-D shape must be"),
    "transpose identity": ("%source: vector<8x16xf16>", "%1 = xetile.transpose %source, [0, 1] : vector<8x16xf16> -> "
                           "vector<16x8xf16>", "would not transpose"),
    "reduce result size": ("%source: vector<8x16xf16>", "%1 = xetile.reduce <add>, %source [0] : vector<8x16xf16> -> "
                           "vector<2x16xf16>", "reduced dims become 1"),
    "broadcast source size": ("%source: vector<2x16xf16>", "%1 = xetile.broadcast %source [0] : vector<2x16xf16> -> "
                              "vector<8x16xf16>", "broadcast dims must have source size 1"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_upstream_invalid_case_is_rejected(name: str) -> None:
    args, body, message = CASES[name]
    text = f"func.func @f({args}) {{\n  {body}\n  return\n}}\n"
    with pytest.raises((VerifyException, ParseError)) as info:
        parse_module(text).verify()
    assert message in str(info.value), str(info.value)
