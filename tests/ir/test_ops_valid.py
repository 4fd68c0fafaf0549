"""Every op: at least one valid example that round-trips (custom and generic form)."""
from __future__ import annotations

import pytest

from .helpers import roundtrip, wrap

T = "!xetile.tile<8x16xf16>"
SC = "!xetile.tile<1x16xf32, #xetile.tile_attr<scattered = true>>"
TD = "!xegpu.tensor_desc<8x16xf16>"
ST = "!xegpu.tensor_desc<16x8xf32, #xegpu.scatter_tdesc_attr<chunk_size = 8>>"
S1 = "!xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<memory_space = slm>>"
ARGS = ("%m: memref<128x128xf16>, %dm: memref<?x?xf16>, %i: index, %j: index, %p: i64, %t: " + T +
        ", %v: vector<8x16xf16>, %b: vector<16x16xf16>, %c: vector<8x16xf32>, %f: vector<64x32xf32>, "
        "%sc: " + SC + ", %so: vector<1x16xindex>, %sm: vector<1x16xi1>, %sv: vector<1x16xf32>, "
        "%d: " + TD + ", %st: " + ST + ", %s1: " + S1 + ", %o: vector<16xindex>, %mk: vector<16xi1>, "
        "%w: vector<16xf32>, %w2: vector<8x16xf32>, %n: i8, %nb: !xegpu.nbarrier, %x: vector<8x8x2xf16>, "
        "%y: vector<8x16x2xf16>, %blk: vector<4x2x16x16xf32>, %i32m: memref<64x64xi8>, "
        "%cm3: memref<128x128xf16, affine_map<(d0, d1) -> (d1, d0)>, 3>")

VALID = {
    "init_tile static": f"%r = xetile.init_tile %m[%i, %j] : memref<128x128xf16> -> {T}",
    "init_tile dynamic": f"%r = xetile.init_tile %dm[%i, %j], [%i, %j], [%i, %j] : memref<?x?xf16> -> {T}",
    "init_tile address": f"%r = xetile.init_tile %p[%i, %j], [%i, %j], [%i, %j] : i64 -> {T}",
    "init_tile attrs": "%r = xetile.init_tile %cm3[%i, %j] : memref<128x128xf16, affine_map<(d0, d1) -> (d1, d0)>, 3>"
                       " -> !xetile.tile<64x32xf16, "
                       "#xetile.tile_attr<order = [0, 1], inner_blocks = [16, 16], wg_map = "
                       "#xetile.wg_map<sg_layout = [2, 2], sg_data = [32, 16]>, memory_space = 3>>",
    "init_tile scatter": f"%r = xetile.init_tile %p, %so : i64, vector<1x16xindex> -> {SC}",
    "load_tile": f"%r = xetile.load_tile %t {{padding = 0.0 : f32}} : {T} -> vector<8x16xf16>",
    "load_tile blocked": "%tt = xetile.init_tile %m[%i, %j] : memref<128x128xf16> -> !xetile.tile<64x32xf16, "
                         "#xetile.tile_attr<inner_blocks = [16, 16]>>\n%r = xetile.load_tile %tt : !xetile.tile<"
                         "64x32xf16, #xetile.tile_attr<inner_blocks = [16, 16]>> -> vector<4x2x16x16xf16>",
    "store_tile": f"xetile.store_tile %v, %t : vector<8x16xf16>, {T}",
    "prefetch_tile": f"xetile.prefetch_tile %t locality<3> : {T}",
    "prefetch_tile plain": f"xetile.prefetch_tile %t : {T}",
    "update_tile_offset": f"%r = xetile.update_tile_offset %t, %i, %j : {T}",
    "tile_mma": "%r = xetile.tile_mma %v, %b, %c : vector<8x16xf16>, vector<16x16xf16>, vector<8x16xf32> "
                "-> vector<8x16xf32>",
    "tile_mma no C": "%r = xetile.tile_mma %v, %b : vector<8x16xf16>, vector<16x16xf16> -> vector<8x16xf32>",
    "tile_mma wg_map": "%r = xetile.tile_mma %v, %b, %c {wg_map = #xetile.wg_map<sg_layout = [2, 2], "
                       "sg_data = [4, 8]>} : vector<8x16xf16>, vector<16x16xf16>, vector<8x16xf32> -> vector<8x16xf32>",
    "atomic_rmw": f"%r = xetile.atomic_rmw addf %v, %t : vector<8x16xf16>, {T} -> vector<8x16xf16>",
    "atomic_rmw masked": f"%r = xetile.atomic_rmw addf %sv, %sc, %sm : vector<1x16xf32>, {SC}, vector<1x16xi1> "
                         "-> vector<1x16xf32>",
    "tile_transpose": "%r = xetile.tile_transpose %f [1, 0] : vector<64x32xf32> -> vector<32x64xf32>",
    # RFC Appendix 2.3's maps in small: the source map need not be the swapped result map
    "tile_transpose 2.3 maps": "%r = xetile.tile_transpose %f [1, 0] {wg_map = #xetile.wg_map<sg_layout = [1, 4], "
                               "sg_data = [32, 16]>, wg_map_source = #xetile.wg_map<sg_layout = [4, 1], "
                               "sg_data = [16, 32]>} : vector<64x32xf32> -> vector<32x64xf32>",
    "tile_reduce": "%r = xetile.tile_reduce <add> %f [1] : vector<64x32xf32> -> vector<64x1xf32>",
    "tile_reduce maxnumf": "%r = xetile.tile_reduce <maxnumf> %f [0] : vector<64x32xf32> -> vector<1x32xf32>",
    "tile_reduce 4d": "%r = xetile.tile_reduce <mul> %blk [1, 3] : vector<4x2x16x16xf32> -> vector<4x1x16x1xf32>",
    "tile_broadcast": "%s = xetile.tile_reduce <add> %f [0] : vector<64x32xf32> -> vector<1x32xf32>\n"
                      "%r = xetile.tile_broadcast %s [0] : vector<1x32xf32> -> vector<64x32xf32>",
    "tile_pack": "%r = xetile.tile_pack %f {inner_blocks = array<i64: 16, 16>} : vector<64x32xf32> -> "
                 "vector<4x2x16x16xf32>",
    "tile_unpack": "%r = xetile.tile_unpack %blk {inner_blocks = array<i64: 16, 16>} : vector<4x2x16x16xf32> -> "
                   "vector<64x32xf32>",
    "load_gather": f"%r = xetile.load_gather %sc, %sm : {SC}, vector<1x16xi1> -> vector<1x16xf32>",
    "store_scatter": f"xetile.store_scatter %sv, %sc, %sm : vector<1x16xf32>, {SC}, vector<1x16xi1>",
    "tile_conv_layout": "%r = xetile.tile_conv_layout %f {wg_map = #xetile.wg_map<sg_layout = [4, 1], "
                        "sg_data = [16, 32]>, wg_map_source = #xetile.wg_map<sg_layout = [2, 2], sg_data = [32, 16]>} "
                        ": vector<64x32xf32> -> vector<64x32xf32>",
    "create_nd_tdesc": f"%r = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> {TD}",
    "create_nd_tdesc dynamic": f"%r = xegpu.create_nd_tdesc %dm[%i, %j], [%i, %j], [%i, %j] : memref<?x?xf16> -> {TD}",
    "create_nd_tdesc 1d": "%r = xegpu.create_nd_tdesc %p[%i] : i64 -> !xegpu.tensor_desc<16xf16, "
                          "#xegpu.block_tdesc_attr<memory_space = slm, boundary_check = false>>",
    "load_nd": f"%r = xegpu.load_nd %d {{l1_hint = cached, l3_hint = uncached}} : {TD} -> vector<8x16xf16>",
    "load_nd packed": "%dd = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> !xegpu.tensor_desc<16x16xf16>\n"
                      "%r = xegpu.load_nd %dd {packed} : !xegpu.tensor_desc<16x16xf16> -> vector<8x16x2xf16>",
    "load_nd transpose": "%dd = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> "
                         "!xegpu.tensor_desc<16x16xf16>\n%r = xegpu.load_nd %dd {transpose = array<i64: 1, 0>, "
                         "transpose_bit_width = 32} : !xegpu.tensor_desc<16x16xf16> -> vector<8x32xf16>",
    "store_nd": f"xegpu.store_nd %v, %d {{l1_hint = write_back}} : vector<8x16xf16>, {TD}",
    "prefetch_nd": f"xegpu.prefetch_nd %d {{l1_hint = cached, l2_hint = cached}} : {TD}",
    "update_nd_offset": f"%r = xegpu.update_nd_offset %d, %i, %j : {TD}",
    "dpas": "%r = xegpu.dpas %v, %b, %c : vector<8x16xf16>, vector<16x16xf16>, vector<8x16xf32> -> vector<8x16xf32>",
    "dpas vnni": "%r = xegpu.dpas %x, %y, %c : vector<8x8x2xf16>, vector<8x16x2xf16>, vector<8x16xf32> -> "
                 "vector<8x16xf32>",
    "dpas no acc": "%r = xegpu.dpas %v, %y : vector<8x16xf16>, vector<8x16x2xf16> -> vector<8x16xf32>",
    "create_tdesc": f"%r = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> {ST}",
    "load": f"%r = xegpu.load %st, %mk {{transpose, l1_hint = cached}} : {ST}, vector<16xi1> -> vector<8x16xf32>",
    "load 1d": f"%r = xegpu.load %s1, %mk : {S1}, vector<16xi1> -> vector<16xf32>",
    "store": f"xegpu.store %w2, %st, %mk {{l1_hint = write_back}} : vector<8x16xf32>, {ST}, vector<16xi1>",
    "prefetch": f"xegpu.prefetch %st {{l1_hint = cached}} : {ST}",
    "update_offset": f"%r = xegpu.update_offset %st, %o : {ST}, vector<16xindex>",
    "atomic_rmw xegpu": f"%r = xegpu.atomic_rmw addf %w, %s1, %mk : vector<16xf32>, {S1}, vector<16xi1> -> vector<16xf32>",
    "alloc_nbarrier": "xegpu.alloc_nbarrier %n : i8",
    "init_nbarrier": "%r = xegpu.init_nbarrier %n, %n : i8, i8 -> !xegpu.nbarrier",
    "nbarrier_arrive": "xegpu.nbarrier_arrive %nb : !xegpu.nbarrier",
    "nbarrier_wait": "xegpu.nbarrier_wait %nb : !xegpu.nbarrier",
    "fence": "xegpu.fence memory_kind = slm, fence_scope = gpu",
    "compile_hint": "xegpu.compile_hint {hint = \"schedule_barrier\"}",
    "convert_layout": "%r = xegpu.convert_layout %c {target_layout = #xegpu.layout<sg_layout = [1, 1], sg_data = "
                      "[8, 16], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>, input_layout = "
                      "#xegpu.layout<sg_layout = [1, 1], sg_data = [8, 16], lane_layout = [2, 8], lane_data = [1, 1]>} : "
                      "vector<8x16xf32> -> vector<8x16xf32>",
    "tensor_desc layout": "%r = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> !xegpu.tensor_desc<64x16xf16,"
                          " #xegpu.layout<sg_layout = [4, 8], sg_data = [16, 16], inst_data = [8, 16], lane_layout = "
                          "[1, 16], lane_data = [1, 1], order = [1, 0]>>",
    "tensor_desc sg_map": "%r = xegpu.create_nd_tdesc %m[%i, %j] : memref<128x128xf16> -> !xegpu.tensor_desc<8x16xf16, "
                          "#xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>>",
    "slice attr": "%r = xegpu.convert_layout %w {target_layout = #xegpu.slice<#xegpu.layout<sg_layout = [4, 1], "
                  "sg_data = [4, 16]>, dims = [1]>} : vector<16xf32> -> vector<16xf32>",
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_roundtrip(name: str) -> None:
    body = "\n".join("  " + line for line in VALID[name].split("\n"))
    roundtrip(wrap(ARGS, body))


# Spellings from the RFCs that parse into the canonical ops.
ALIASES = {
    "into arrow": ("%r = xetile.load_tile %t : tile<8x16xf16> into vector<8x16xf16>", "xetile.load_tile %t :"),
    "rfc init_tile comma": (f"%r = xetile.init_tile %m, [%i, %j] : memref<128x128xf16> into {T}",
                            "xetile.init_tile %m[%i, %j]"),
    "atomic_rmw_tile": (f"%r = xetile.atomic_rmw_tile <addf> %v, %t : vector<8x16xf16>, {T} to vector<8x16xf16>",
                        "xetile.atomic_rmw addf"),
    "transpose perm first": ("%r = xetile.tile_transpose [1, 0] %f : vector<64x32xf32> into vector<32x64xf32>",
                             "xetile.tile_transpose %f [1, 0]"),
    "mma unnamed wg_map": ("%r = xetile.tile_mma %v, %b {#xetile.wg_map<sg_layout = [2, 2], sg_data = [4, 8]>} : "
                           "vector<8x16xf16>, vector<16x16xf16> into vector<8x16xf32>", "{wg_map = #xetile.wg_map"),
    "load_gather xegpu": (f"%r = xegpu.load_gather %s1, %mk : {S1}, vector<16xi1> -> vector<16xf32>", "xegpu.load %s1"),
    "store_scatter xegpu": (f"xegpu.store_scatter %w, %s1, %mk : vector<16xf32>, {S1}, vector<16xi1>", "xegpu.store %w"),
    "store mask first": (f"xegpu.store %w, %s1, %mk : vector<16xf32>, {S1}, vector<16xi1>", "xegpu.store %w, %s1, %mk"),
    "update_offsets": (f"%r = xegpu.update_offsets %s1, %o : {S1}, vector<16xindex>", "xegpu.update_offset %s1"),
    "mfence": ('xegpu.mfence {memory_kind = "ugm", fence_op = "none", fence_scope = "local"}',
               "xegpu.fence memory_kind = global, fence_scope = workgroup"),
    "fence rfc": ("xegpu.fence {scope = gpu, memory_kind = global}", "fence_scope = gpu"),
    "L1 hints": (f"%r = xegpu.load_nd %d {{L1_hint = cached, L3 = uncached}} : {TD} -> vector<8x16xf16>",
                 "{l1_hint = cached, l3_hint = uncached}"),
    "cache_hint attr": (f"%r = xegpu.load_nd %d {{l1_hint = #xegpu.cache_hint<streaming>}} : {TD} -> vector<8x16xf16>",
                        "l1_hint = streaming"),
    "dpas into": ("%r = xegpu.dpas %v, %b, %c : vector<8x16xf16>, vector<16x16xf16>, vector<8x16xf32> into "
                  "vector<8x16xf32>", "xegpu.dpas %v, %b, %c"),
    "slice rfc": ("%r = xegpu.convert_layout %w {#xegpu.slice<#xegpu.layout<sg_layout = [4, 1], sg_data = [4, 16]>, 1>}"
                  " : vector<16xf32> -> vector<16xf32>", "dims = [1]"),
}


@pytest.mark.parametrize("name", sorted(ALIASES))
def test_rfc_spellings_parse_to_canonical(name: str) -> None:
    text, expect = ALIASES[name]
    _, printed = roundtrip(wrap(ARGS, "  " + text))
    assert expect in printed
