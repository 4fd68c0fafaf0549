"""One invalid example per verifier rule, with the message it must produce."""
from __future__ import annotations

import pytest
from xdsl.utils.exceptions import ParseError, VerifyException

from xetile_dsl.dialects import parse_module

from .test_ops_valid import ARGS, S1, SC, ST, T, TD
from .helpers import wrap

INVALID = {
    # --- XeTile
    "tile order": ("%r = xetile.init_tile %m[%i, %j] : memref<128x128xf16> -> !xetile.tile<8x16xf16, "
                   "#xetile.tile_attr<order = [1, 1]>>", "order must be [1, 0] (row-major) or [0, 1]"),
    "tile inner_blocks divide": ("%r = xetile.init_tile %m[%i, %j] : memref<128x128xf16> -> !xetile.tile<8x16xf16, "
                                 "#xetile.tile_attr<inner_blocks = [3, 16]>>", "inner_blocks [3, 16] must divide"),
    "wg_map divide": ("%r = xetile.init_tile %m[%i, %j] : memref<128x128xf16> -> !xetile.tile<128x128xf16, "
                      "#xetile.tile_attr<wg_map = #xetile.wg_map<sg_layout = [3, 2], sg_data = [32, 64]>>>",
                      "must divide one another (round-robin or wrap-around)"),
    "wg_map sg_data": ("%r = xetile.init_tile %m[%i, %j] : memref<128x128xf16> -> !xetile.tile<128x128xf16, "
                       "#xetile.tile_attr<wg_map = #xetile.wg_map<sg_layout = [1, 2], sg_data = [256, 64]>>>",
                       "sg_data 256 must divide the size 128"),
    "init_tile offsets": (f"%r = xetile.init_tile %m[%i] : memref<128x128xf16> -> {T}", "expects 2 index offsets"),
    "init_tile elem": (f"%r = xetile.init_tile %i32m[%i, %j] : memref<64x64xi8> -> {T}", "does not match the tile's"),
    "init_tile dynamic": (f"%r = xetile.init_tile %dm[%i, %j] : memref<?x?xf16> -> {T}", "needs 2 sizes and 2 strides"),
    "init_tile i64": (f"%r = xetile.init_tile %p[%i, %j] : i64 -> {T}", "i64 base address needs 2 sizes"),
    "init_tile scatter shape": ("%r = xetile.init_tile %p, %so : i64, vector<1x16xindex> -> !xetile.tile<1x32xf32, "
                                "#xetile.tile_attr<scattered = true>>", "offsets shape [1, 16] must equal"),
    "load_tile shape": (f"%r = xetile.load_tile %t : {T} -> vector<16x8xf16>", "does not match tile shape"),
    "store_tile elem": (f"xetile.store_tile %c, %t : vector<8x16xf32>, {T}", "differs from the tile's f16"),
    "prefetch locality": (f"xetile.prefetch_tile %t locality<7> : {T}", "locality must be 0 (none) to 3"),
    "tile_mma shapes": ("%r = xetile.tile_mma %v, %v : vector<8x16xf16>, vector<8x16xf16> -> vector<8x16xf32>",
                        "shapes do not multiply"),
    "tile_mma acc": ("%r = xetile.tile_mma %v, %b, %c : vector<8x16xf16>, vector<16x16xf16>, vector<8x16xf32> -> "
                     "vector<8x16xf16>", "accumulator type"),
    "tile_mma wg_map A": ("%r = xetile.tile_mma %v, %b {#xetile.wg_map<sg_layout = [1, 2], sg_data = [8, 8]>, "
                          "#xetile.wg_map<sg_layout = [1, 2], sg_data = [16, 8]>, #xetile.wg_map<sg_layout = [2, 2], "
                          "sg_data = [4, 8]>} : vector<8x16xf16>, vector<16x16xf16> -> vector<8x16xf32>",
                          "wg_map of A must have the result's sg_layout"),
    "tile_mma ranks": ("%r = xetile.tile_mma %blk, %b : vector<4x2x16x16xf32>, vector<16x16xf16> -> "
                       "vector<4x2x16x16xf32>", "must have the same rank"),
    "atomic mask shape": (f"%r = xetile.atomic_rmw addf %sv, %sc, %mk : vector<1x16xf32>, {SC}, vector<16xi1> "
                          "-> vector<1x16xf32>", "mask must be vector<1x16xi1>"),
    "atomic kind": (f"%r = xetile.atomic_rmw add %v, %t : vector<8x16xf16>, {T} -> vector<8x16xf16>",
                    "unknown kind 'add'; use one of addf"),
    "transpose 4d": ("%r = xetile.tile_transpose %blk [1, 0] : vector<4x2x16x16xf32> -> vector<2x4x16x16xf32>",
                     "transposes 2-D vectors only"),
    "transpose shape": ("%r = xetile.tile_transpose %f [1, 0] : vector<64x32xf32> -> vector<64x32xf32>",
                        "result must be [32, 64]"),
    "transpose wg_map source": ("%r = xetile.tile_transpose %f [1, 0] {wg_map = #xetile.wg_map<sg_layout = [4, 8], "
                                "sg_data = [8, 8]>, wg_map_source = #xetile.wg_map<sg_layout = [4, 8], sg_data = "
                                "[8, 24]>} : vector<64x32xf32> -> vector<32x64xf32>", "tile_transpose source"),
    "reduce shape": ("%r = xetile.tile_reduce <add> %f [1] : vector<64x32xf32> -> vector<64x32xf32>",
                     "reduced dims become 1"),
    "reduce kind": ("%r = xetile.tile_reduce <xor> %f [1] : vector<64x32xf32> -> vector<64x1xf32>",
                    "kind 'xor' is not defined for f32"),
    "broadcast dims": ("%r = xetile.tile_broadcast %f [0] : vector<64x32xf32> -> vector<64x32xf32>",
                       "broadcast dims must have source size 1"),
    "pack shape": ("%r = xetile.tile_pack %f {inner_blocks = array<i64: 16, 16>} : vector<64x32xf32> -> "
                   "vector<2x4x16x16xf32>", "the 4-D shape must be [4, 2, 16, 16]"),
    "pack divide": ("%r = xetile.tile_pack %f {inner_blocks = array<i64: 24, 16>} : vector<64x32xf32> -> "
                    "vector<2x2x24x16xf32>", "inner_blocks [24, 16] must divide"),
    "unpack shape": ("%r = xetile.tile_unpack %blk {inner_blocks = array<i64: 16, 16>} : vector<4x2x16x16xf32> -> "
                     "vector<32x64xf32>", "the 4-D shape must be [2, 4, 16, 16]"),
    "load_gather block tile": ("%r = xetile.load_gather %t, %v : " + T + ", vector<8x16xf16> -> vector<8x16xf16>",
                               "mask must be vector<8x16xi1>"),
    "conv_layout map": ("%r = xetile.tile_conv_layout %f {wg_map = #xetile.wg_map<sg_layout = [3, 1], sg_data = [16, 32]>}"
                        " : vector<64x32xf32> -> vector<64x32xf32>", "wg_map dim 0"),
    # --- XeGPU
    "packed+transpose": ("%r = xegpu.load_nd %d {packed, transpose = [1, 0]} : " + TD + " -> vector<8x16xf16>",
                         "packed (VNNI) and transpose cannot be combined"),
    "load_nd shape": (f"%r = xegpu.load_nd %d : {TD} -> vector<16x8xf16>", "result shape must be [8, 16]"),
    "load_nd hint": (f"%r = xegpu.load_nd %d {{l1_hint = write_back}} : {TD} -> vector<8x16xf16>",
                     "is not a load policy"),
    "store_nd shape": (f"xegpu.store_nd %b, %d : vector<16x16xf16>, {TD}", "must equal the descriptor shape"),
    "create_nd stride": ("%c2 = arith.constant 2 : index\n  %r = xegpu.create_nd_tdesc %p[%i, %j], [%i, %j], [%i, %c2]"
                         " : i64 -> " + TD, "the innermost stride must be 1"),
    "create_nd memref stride": ("%r = xegpu.create_nd_tdesc %sm2[%i, %j] : memref<64x64xf16, strided<[1, 64]>> -> " + TD,
                                "innermost stride of the source memref must be 1"),
    "create_nd space": ("%r = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> !xegpu.tensor_desc<8x16xf16, "
                        "#xegpu.block_tdesc_attr<memory_space = slm>>", "make them agree"),
    "create_nd 1d bounds": ("%r = xegpu.create_nd_tdesc %p[%i] : i64 -> !xegpu.tensor_desc<16xf16>",
                            "set boundary_check = false"),
    "dpas shapes": ("%r = xegpu.dpas %v, %v : vector<8x16xf16>, vector<8x16xf16> -> vector<8x16xf32>",
                    "shapes do not multiply"),
    "dpas vnni factor": ("%r = xegpu.dpas %x, %y : vector<8x8x2xf16>, vector<8x16x2xf16> -> vector<8x8xf32>",
                         "shapes do not multiply"),
    "sg_map divide": ("%r = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> !xegpu.tensor_desc<8x12xf16, "
                      "#xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>>", "does not divide tensor"),
    "sg_map contiguous": ("%r = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> !xegpu.tensor_desc<16x16xf16,"
                          " #xegpu.sg_map<wi_layout = [1, 16], wi_data = [2, 2]>>", "one contiguous dimension"),
    "layout order": ("%r = xegpu.convert_layout %c {target_layout = #xegpu.layout<lane_layout = [1, 16], lane_data = "
                     "[1, 1], order = [1, 1]>} : vector<8x16xf32> -> vector<8x16xf32>", "order must be [1, 0] or [0, 1]"),
    "layout inst divide": ("%r = xegpu.convert_layout %c {target_layout = #xegpu.layout<sg_layout = [1, 1], sg_data = "
                           "[8, 16], inst_data = [3, 16]>} : vector<8x16xf32> -> vector<8x16xf32>",
                           "inst_data [3, 16] must divide sg_data"),
    "layout lane divide": ("%r = xegpu.convert_layout %c {target_layout = #xegpu.layout<inst_data = [8, 8], lane_layout"
                           " = [1, 16], lane_data = [1, 1]>} : vector<8x16xf32> -> vector<8x16xf32>",
                           "must be divisible by lane_layout*lane_data"),
    "layout lane_data": ("%r = xegpu.convert_layout %c {target_layout = #xegpu.layout<lane_layout = [1, 4], lane_data "
                         "= [2, 2]>} : vector<8x16xf32> -> vector<8x16xf32>", "one dimension only"),
    "layout wg divide": ("%r = xegpu.convert_layout %c {target_layout = #xegpu.layout<sg_layout = [3, 1], sg_data = "
                         "[2, 16]>} : vector<8x16xf32> -> vector<8x16xf32>", "must be a multiple of sg_layout*sg_data"),
    "chunk value": ("%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16x5xf32, "
                    "#xegpu.scatter_tdesc_attr<chunk_size = 5>>", "chunk_size 5 is not one of"),
    "chunk 512": ("%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16x16xf32, "
                  "#xegpu.scatter_tdesc_attr<chunk_size = 16>>", "more than the 512-byte limit"),
    "chunk align": ("%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16x3xf16, "
                    "#xegpu.scatter_tdesc_attr<chunk_size = 3>>", "not 32-bit aligned"),
    "chunk shape": ("%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16x4xf32, "
                    "#xegpu.scatter_tdesc_attr<chunk_size = 8>>", "the shape must be [lanes, 8]"),
    "create_tdesc offsets": ("%r = xegpu.create_tdesc %p, %so : i64, vector<1x16xindex> -> " + ST,
                             "offsets must be vector<16xindex>"),
    "create_tdesc block": (f"%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16xf32>",
                           "needs a scattered tensor_desc"),
    "load chunk transpose": (f"%r = xegpu.load %st, %mk : {ST}, vector<16xi1> -> vector<16x8xf32>",
                             "add the 'transpose' attribute"),
    "load mask": (f"%r = xegpu.load %s1, %sm : {S1}, vector<1x16xi1> -> vector<16xf32>", "mask must be vector<16xi1>"),
    "store shape": (f"xegpu.store %w, %st, %mk : vector<16xf32>, {ST}, vector<16xi1>", "value shape must be [8, 16]"),
    "update_offset": (f"%r = xegpu.update_offset %s1, %so : {S1}, vector<1x16xindex>", "offsets must be vector<16xindex>"),
    "xegpu atomic kind": (f"%r = xegpu.atomic_rmw add %w, %s1, %mk : vector<16xf32>, {S1}, vector<16xi1> -> "
                          "vector<16xf32>", "unknown kind 'add'"),
    "init_nbarrier types": ("%r = xegpu.init_nbarrier %w, %n : vector<16xf32>, i8 -> !xegpu.nbarrier",
                            "operands must be integers"),
    # MLIR's invalid.mlir: a scattered layout gives each lane one row, 32 bits at a time
    "scatter lane_data rows": ("%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16x2xf32, "
                               "#xegpu.scatter_tdesc_attr<chunk_size = 2>, #xegpu.layout<lane_layout = [8, 1], "
                               "lane_data = [2, 1]>>", "cannot map over non-contiguous scattered rows"),
    "scatter lane_data unit": ("%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16xf32, "
                               "#xegpu.scatter_tdesc_attr<>, #xegpu.layout<lane_layout = [8], lane_data = [2]>>",
                               "lane_data[0] = 1 for f32"),
    "scatter lane_data f16 unit": ("%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16x8xf16, "
                                   "#xegpu.scatter_tdesc_attr<chunk_size = 8>, #xegpu.layout<lane_layout = [16, 1], "
                                   "lane_data = [1, 1]>>", "lane_data[1] = 2 for f16"),
    "convert_layout result type": ("%r = xegpu.convert_layout %c {target_layout = #xegpu.layout<lane_layout = [1, 16], "
                                   "lane_data = [1, 1]>} : vector<8x16xf32> -> vector<16x8xf32>",
                                   "the result type must be the source type"),
    "convert_layout same srcMap resMap": (
        "%r = xegpu.convert_layout %c {srcMap = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>, "
        "resMap = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>} : vector<8x16xf32>", "are the same"),
    # the RFC's dpas layout rule (A [M, K], B [K, N], result [M, N] share sg_layout and order)
    "dpas layout sg_layout": (
        "%r = xegpu.dpas %wa, %wb {#xegpu.layout<sg_layout = [4, 8], sg_data = [32, 32]>, #xegpu.layout<sg_layout = "
        "[8, 4], sg_data = [32, 64]>, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64]>} : vector<256x32xbf16>, "
        "vector<32x256xbf16> -> vector<256x256xf32>", "layout_a must have the result's sg_layout [8, 4]"),
    "dpas layout M": (
        "%r = xegpu.dpas %wa, %wb {#xegpu.layout<sg_layout = [8, 4], sg_data = [16, 32]>, #xegpu.layout<sg_layout = "
        "[8, 4], sg_data = [32, 64]>, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64]>} : vector<256x32xbf16>, "
        "vector<32x256xbf16> -> vector<256x256xf32>", "sg_data disagree on M (16 vs 32)"),
    "dpas layout K": (
        "%r = xegpu.dpas %wa, %wb {#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32]>, #xegpu.layout<sg_layout = "
        "[8, 4], sg_data = [16, 64]>, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64]>} : vector<256x32xbf16>, "
        "vector<32x256xbf16> -> vector<256x256xf32>", "sg_data disagree on K (32 vs 16)"),
    "dpas layout order": (
        "%r = xegpu.dpas %wa, %wb {#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], order = [0, 1]>, "
        "#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], order = [1, 0]>, #xegpu.layout<sg_layout = [8, 4], "
        "sg_data = [32, 64], order = [1, 0]>} : vector<256x32xbf16>, vector<32x256xbf16> -> vector<256x256xf32>",
        "layout_a must have the result's order"),
    "dpas layout_cd vs result": (
        "%r = xegpu.dpas %wa, %wb {#xegpu.layout<sg_layout = [8, 4], sg_data = [64, 64]>} : vector<256x32xbf16>, "
        "vector<32x256xbf16> -> vector<256x256xf32>", "must be a multiple of sg_layout*sg_data"),
    "update_nd count": (f"%r = xegpu.update_nd_offset %d, %i : {TD}", "needs one offset per descriptor dimension"),
}

ARGS_X = ARGS + ", %sm2: memref<64x64xf16, strided<[1, 64]>>, %wa: vector<256x32xbf16>, %wb: vector<32x256xbf16>"


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid(name: str) -> None:
    text, message = INVALID[name]
    with pytest.raises((VerifyException, ParseError)) as info:
        parse_module(wrap(ARGS_X, "  " + text)).verify()
    assert message in str(info.value), str(info.value)


PARSE_ERRORS = {
    "missing type": ("%r = xetile.load_tile %t", "3:"),
    "bad hint": (f"%r = xegpu.load_nd %d {{l1_hint = sometimes}} : {TD} -> vector<8x16xf16>", "cache hint must be"),
    "unknown tile_attr field": ("%r = xetile.init_tile %m[%i, %j] : memref<128x128xf16> -> !xetile.tile<8x16xf16, "
                                "#xetile.tile_attr<colour = [1]>>", "unknown tile_attr field"),
    "unnamed attrs count": ("%r = xetile.tile_mma %v, %b {#xetile.wg_map<sg_layout = [1, 1], sg_data = [8, 16]>, "
                            "#xetile.wg_map<sg_layout = [1, 1], sg_data = [8, 16]>} : vector<8x16xf16>, "
                            "vector<16x16xf16> -> vector<8x16xf32>", "unnamed attribute"),
}


@pytest.mark.parametrize("name", sorted(PARSE_ERRORS))
def test_parse_error_is_located(name: str) -> None:
    text, message = PARSE_ERRORS[name]
    with pytest.raises(ParseError) as info:
        parse_module(wrap(ARGS_X, "  " + text))
    assert message in str(info.value)
    assert "<text>:" in str(info.value)
