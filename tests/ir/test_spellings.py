"""Spellings from the RFCs and from the original implementations' test suites (IMEX XeTile,
MLIR XeGPU) that mean the same as our canonical forms: each parses, verifies, prints
canonically, and round-trips through the custom and the generic form."""
from __future__ import annotations

from pathlib import Path

import pytest

from .helpers import roundtrip

PACKS = "%off:2 = func.call @pair() : () -> (index, index)\n  %shp:2 = func.call @pair() : () -> (index, index)\n" \
        "  %str:2 = func.call @pair() : () -> (index, index)\n"


def module(args: str, body: str) -> str:
    return ("func.func private @pair() -> (index, index)\n"
            f"func.func @f({args}) {{\n  {PACKS}  {body}\n  func.return\n}}\n")


SCT = "!xetile.tile<128xf16, #xetile.tile_attr<scattered = true>>"

CASES = {
    # --- value packs and operand list forms
    "init_tile bracketed packs": (
        "%a: memref<?x?xbf16>",
        "%t = xetile.init_tile %a, [%off:2], [%shp:2], [%str:2]: memref<?x?xbf16> into tile<8x16xbf16>",
        "xetile.init_tile %a[%off, %off_1], [%shp, %shp_1], [%str, %str_1] : memref<?x?xbf16>"),
    "init_tile address packs": (
        "%p: i64", "%t = xetile.init_tile %p, [%off:2], [%shp:2], [%str:2] : i64 -> !xetile.tile<8x16xbf16>",
        "xetile.init_tile %p[%off, %off_1], [%shp, %shp_1], [%str, %str_1] : i64"),
    "create_nd_tdesc flat form": (
        "%p: ui64",
        "%d = xegpu.create_nd_tdesc %p, %off:2, %shp:2,%str:2 : ui64, index, index, index, index, index, index "
        "into tensor_desc<8x16xbf16>",
        "xegpu.create_nd_tdesc %p[%off, %off_1], [%shp, %shp_1], [%str, %str_1] : ui64"),
    "create_nd_tdesc flat memref": (
        "%m: memref<1024x1024xbf16>",
        "%d = xegpu.create_nd_tdesc %m, %off:2 : memref<1024x1024xbf16>, index, index into tensor_desc<8x16xbf16>",
        "xegpu.create_nd_tdesc %m[%off, %off_1] : memref<1024x1024xbf16>"),
    "create_nd_tdesc flat 4-D memref": (
        "%m: memref<4x4x64x64xbf16>",
        "%d = xegpu.create_nd_tdesc %m, %off:2, %shp:2 {mode = vc} : memref<4x4x64x64xbf16>, index, index "
        "into tensor_desc<8x16xbf16>", "xegpu.create_nd_tdesc %m[%off, %off_1, %shp, %shp_1]"),
    "create_nd_tdesc flat 1-D": (
        "%p: ui64, %o: index",
        "%d = xegpu.create_nd_tdesc %p, %o : ui64, index into tensor_desc<16xbf16, "
        "#xegpu.block_tdesc_attr<memory_space = slm, boundary_check = false>>", "xegpu.create_nd_tdesc %p[%o]"),
    "update_nd_offset pack": (
        "%d: !xegpu.tensor_desc<8x16xbf16>",
        "%e = xegpu.update_nd_offset %d, %off:2 : tensor_desc<8x16xbf16>, index, index into tensor_desc<8x16xbf16>",
        "xegpu.update_nd_offset %d, %off, %off_1 :"),
    "update_tile_offset brackets": (
        "%t: !xetile.tile<32x32xf16>", "%u = xetile.update_tile_offset %t, [%off#0, %off#1] : !xetile.tile<32x32xf16>",
        "xetile.update_tile_offset %t, %off, %off_1 :"),
    # --- constant offsets (IMEX / MLIR tests)
    "init_tile constant offsets": (
        "%m: memref<1024x1024xf16>", "%t = xetile.init_tile %m[8, 16] : memref<1024x1024xf16> -> !xetile.tile<32x64xf16>",
        "xetile.init_tile %m[8, 16] :"),
    "init_tile mixed offsets": (
        "%m: memref<?x?xf16>",
        "%t = xetile.init_tile %m[%off#0, 64], [%shp#0, %shp#1], [%str#0, %str#1] : memref<?x?xf16> -> "
        "!xetile.tile<32x64xf16>", "xetile.init_tile %m[%off, 64], [%shp, %shp_1], [%str, %str_1]"),
    "create_nd_tdesc constant offsets": (
        "%m: memref<2x24x32xf32, 3>",
        "%d = xegpu.create_nd_tdesc %m[0, 0, 0] : memref<2x24x32xf32, 3> -> !xegpu.tensor_desc<16xf32, "
        "#xegpu.block_tdesc_attr<memory_space = slm>>", "xegpu.create_nd_tdesc %m[0, 0, 0] :"),
    "update_nd_offset constants": (
        "%d: !xegpu.tensor_desc<8x16xf32>", "%e = xegpu.update_nd_offset %d, [0, 16]: !xegpu.tensor_desc<8x16xf32>",
        "xegpu.update_nd_offset %d, [0, 16] :"),
    "update_tile_offset constants": (
        "%t: !xetile.tile<32x32xf16>", "%u = xetile.update_tile_offset %t, [%off#1, 96] : !xetile.tile<32x32xf16>",
        "xetile.update_tile_offset %t, [%off_1, 96] :"),
    # --- attribute spellings
    "tdesc_attr scattered": (
        "%p: ui64, %o: vector<16xindex>",
        "%d = xegpu.create_tdesc %p, %o : ui64, vector<16xindex> -> !xegpu.tensor_desc<16xf32, "
        "#xegpu.tdesc_attr<memory_space = slm, scattered = true>>", "#xegpu.scatter_tdesc_attr<memory_space = slm>"),
    "tdesc_attr scattered chunk": (
        "%p: ui64, %o: vector<16xindex>",
        "%d = xegpu.create_tdesc %p, %o : ui64, vector<16xindex> -> !xegpu.tensor_desc<16x4xf32, "
        "#xegpu.tdesc_attr<memory_scope = slm, scattered = true, chunk_size_per_lane = 4>>",
        "#xegpu.scatter_tdesc_attr<memory_space = slm, chunk_size = 4>"),
    "scattered_tdesc_attr": (
        "%p: i64, %o: vector<16xindex>",
        "%d = xegpu.create_tdesc %p, %o : i64, vector<16xindex> -> !xegpu.tensor_desc<16xf32, "
        "#xegpu.scattered_tdesc_attr<>>", "!xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<>>"),
    "tdesc_attr block": (
        "%p: i64, %o: index",
        "%d = xegpu.create_nd_tdesc %p[%o] : i64 -> !xegpu.tensor_desc<64xf32, #xegpu.tdesc_attr<memory_space = slm, "
        "boundary_check = false>>", "#xegpu.block_tdesc_attr<memory_space = slm, boundary_check = false>"),
    "typed integers in encodings": (
        "%m: memref<24x32xf32>",
        "%d = xegpu.create_nd_tdesc %m[0, 0] : memref<24x32xf32> -> !xegpu.tensor_desc<24x16xf32, "
        "#xegpu.block_tdesc_attr<array_length = 2 : i64>>", "#xegpu.block_tdesc_attr<array_length = 2>"),
    "tile_attr memory_space typed": (
        "%a: memref<1024x1024xf16, 3>",
        "%t = xetile.init_tile %a[8, 16] : memref<1024x1024xf16, 3> -> !xetile.tile<32x64xf16, "
        "#xetile.tile_attr<memory_space = 3 : i64>>", "#xetile.tile_attr<memory_space = 3>"),
    "property dictionary": (
        "%m: memref<8x16xf16>",
        "%d = xegpu.create_nd_tdesc %m[0, 0] : memref<8x16xf16> -> !xegpu.tensor_desc<8x16xf16>\n"
        "  %v = xegpu.load_nd %d <{packed, l1_hint = #xegpu.cache_hint<cached>, l2_hint = #xegpu.cache_hint<uncached>}>"
        " : !xegpu.tensor_desc<8x16xf16> -> vector<4x16x2xf16>", "{packed, l1_hint = cached, l2_hint = uncached}"),
    "prefetch property dictionary": (
        "%d: !xegpu.tensor_desc<8x16xf16>",
        "xegpu.prefetch_nd %d <{l1_hint = #xegpu.cache_hint<cached>}>: !xegpu.tensor_desc<8x16xf16>",
        "xegpu.prefetch_nd %d {l1_hint = cached}"),
    "alloc_nbarrier constant": ("", "xegpu.alloc_nbarrier 8", "xegpu.alloc_nbarrier 8"),
    "create_tdesc slm memref": (
        "%m: memref<?xf32, 3>, %o: vector<16xindex>",
        "%d = xegpu.create_tdesc %m, %o : memref<?xf32, 3>, vector<16xindex> -> !xegpu.tensor_desc<16x2xf32, "
        "#xegpu.scatter_tdesc_attr<memory_space = slm, chunk_size = 2>>", "xegpu.create_tdesc %m, %o"),
    "atomic_rmw tdesc first": (
        "%p: ui64, %o: vector<16xindex>, %mask: vector<16xi1>, %v: vector<16xf32>",
        "%d = xegpu.create_tdesc %p, %o : ui64, vector<16xindex> -> !xegpu.tensor_desc<16xf32, "
        "#xegpu.scatter_tdesc_attr<>>\n  %r = xegpu.atomic_rmw addf %d, %mask, %v : !xegpu.tensor_desc<16xf32, "
        "#xegpu.scatter_tdesc_attr<>>, vector<16xi1>, vector<16xf32> -> vector<16xf32>", "xegpu.atomic_rmw addf %v, %d"),
    # --- IMEX XeTile test spellings
    "scattered init_tile memref": (
        "%a: memref<1024xf16>, %idx: vector<128xindex>",
        f"%t = xetile.init_tile %a, %idx : memref<1024xf16>, vector<128xindex> -> {SCT}", "xetile.init_tile %a, %idx"),
    "scattered init_tile 0-D memref": (
        "%a: memref<f16>, %idx: vector<128x24xindex>",
        "%t = xetile.init_tile %a, %idx : memref<f16>, vector<128x24xindex> -> !xetile.tile<128x24xf16, "
        "#xetile.tile_attr<scattered = true>>", "memref<f16>, vector<128x24xindex>"),
    "xetile.load and store": (
        "%a: memref<1024xf16>, %idx: vector<128xindex>, %mask: vector<128xi1>, %v: vector<128xf16>",
        f"%t = xetile.init_tile %a, %idx : memref<1024xf16>, vector<128xindex> -> {SCT}\n"
        f"  %r = xetile.load %t, %mask : {SCT}, vector<128xi1> -> vector<128xf16>\n"
        f"  xetile.store %v, %t, %mask : vector<128xf16>, {SCT}, vector<128xi1>", "xetile.store_scatter %v, %t, %mask"),
    "scattered update_tile_offset": (
        "%a: memref<1024xf16>, %idx: vector<128xindex>, %step: vector<128xindex>",
        f"%t = xetile.init_tile %a, %idx : memref<1024xf16>, vector<128xindex> -> {SCT}\n"
        f"  %u = xetile.update_tile_offset %t, %step : {SCT}, vector<128xindex>",
        f"xetile.update_tile_offset %t, %step : {SCT}, vector<128xindex>"),
    "xetile.transpose": ("%v: vector<8x16xf16>", "%r = xetile.transpose %v, [1, 0] : vector<8x16xf16> -> vector<16x8xf16>",
                         "xetile.tile_transpose %v [1, 0]"),
    "xetile.reduction with maps": (
        "%v: vector<256x128xf16>",
        "%r = xetile.reduction <add>, %v [1] {map1 = #xetile.wg_map<sg_layout = [32, 1], sg_data = [8, 128]>, "
        "map2 = #xetile.wg_map<sg_layout = [32, 1], sg_data = [8, 1]>} : vector<256x128xf16> -> vector<256x1xf16>",
        "wg_map_source = #xetile.wg_map<sg_layout = [32, 1], sg_data = [8, 128]>, wg_map = "),
    "xetile.broadcast": ("%v: vector<1x16xf16>", "%r = xetile.broadcast %v [0] : vector<1x16xf16> -> vector<8x16xf16>",
                         "xetile.tile_broadcast %v [0]"),
    "xetile.convert_layout": (
        "%v: vector<256x256xf16>",
        "%r = xetile.convert_layout %v {wg_map_result = #xetile.wg_map<sg_layout = [32, 1], sg_data = [8, 256]>} : "
        "vector<256x256xf16>", "xetile.tile_conv_layout %v {wg_map = #xetile.wg_map<sg_layout = [32, 1]"),
    "tile_mma wg_map_c": (
        "%a: vector<256x256xf16>, %b: vector<256x256xf16>, %c: vector<256x256xf32>",
        "%r = xetile.tile_mma %a, %b, %c {wg_map_a = #xetile.wg_map<sg_layout = [8, 4], sg_data = [32, 32]>, "
        "wg_map_b = #xetile.wg_map<sg_layout = [8, 4], sg_data = [32, 64]>, wg_map_c = #xetile.wg_map<sg_layout = "
        "[8, 4], sg_data = [32, 64]>} : vector<256x256xf16>, vector<256x256xf16>, vector<256x256xf32> -> "
        "vector<256x256xf32>", "wg_map = #xetile.wg_map<sg_layout = [8, 4], sg_data = [32, 64]>"),
    "atomic_rmw quoted kind": (
        "%t: !xetile.tile<8x16xf16>, %v: vector<8x16xf16>",
        '%r = xetile.atomic_rmw "addf" %v, %t : vector<8x16xf16>, !xetile.tile<8x16xf16> -> vector<8x16xf16>',
        "xetile.atomic_rmw addf %v, %t"),
    "xetile.reduce": ("%v: vector<8x16xf16>", "%r = xetile.reduce <add>, %v [0] : vector<8x16xf16> -> vector<1x16xf16>",
                      "xetile.tile_reduce <add> %v [0]"),
    # --- MLIR's XeGPU tests: layouts on ops and the vector ops the layout passes produce
    "convert_layout srcMap resMap": (
        "%a: vector<32x64xf16>",
        "%r = xegpu.convert_layout %a {srcMap = #xegpu.layout<sg_layout = [2, 4], sg_data = [16, 16]>, "
        "resMap = #xegpu.layout<sg_layout = [4, 2], sg_data = [8, 32]>} : vector<32x64xf16>",
        "{target_layout = #xegpu.layout<sg_layout = [4, 2], sg_data = [8, 32]>, input_layout = "),
    "multi_reduction attr-dict before dims": (
        "%v: vector<256x128xf32>, %acc: vector<128xf32>",
        "%r = vector.multi_reduction <add>, %v, %acc {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [8, 4], "
        "sg_data = [32, 32]>, dims = [0]>} [0] : vector<256x128xf32> to vector<128xf32>",
        "vector.multi_reduction <add>, %v, %acc {layout_result_0 = #xegpu.slice<"),
    "broadcast stretching a unit dim": (
        "%v: vector<256x1xf32>",
        "%r = vector.broadcast %v {layout_result_0 = #xegpu.layout<sg_layout = [8, 1], sg_data = [32, 32], "
        "lane_layout = [8, 1], lane_data = [1, 1]>} : vector<256x1xf32> to vector<256x32xf32>",
        "vector.broadcast %v {layout_result_0 = "),
    "layout on arith.constant and math": (
        "%v: vector<128x64xf32>",
        "%c = arith.constant {layout_result_0 = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16]>} dense<1.0> : "
        "vector<128x64xf32>\n  %e = math.exp %v {layout_result_0 = #xegpu.layout<sg_layout = [4, 4], "
        "sg_data = [32, 16]>} : vector<128x64xf32>", "math.exp %v {layout_result_0 = "),
    "dpas layout_result_0 (MLIR's name for layout_cd)": (
        "%a: vector<128x128xf16>, %b: vector<128x128xf16>",
        "%r = xegpu.dpas %a, %b {layout_result_0 = #xegpu.layout<sg_layout = [8, 8], sg_data = [16, 16], "
        "lane_layout = [1, 16], lane_data = [1, 1]>} : vector<128x128xf16>, vector<128x128xf16> -> vector<128x128xf32>",
        "{layout_cd = #xegpu.layout<sg_layout = [8, 8]"),
    "dpas layout_operand_N": (
        "%a: vector<128x64xf16>, %b: vector<64x128xf16>",
        "%r = xegpu.dpas %a, %b {layout_operand_0 = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 64]>, "
        "layout_operand_1 = #xegpu.layout<sg_layout = [4, 4], sg_data = [64, 32]>, layout = #xegpu.layout<"
        "sg_layout = [4, 4], sg_data = [32, 32]>} : vector<128x64xf16>, vector<64x128xf16> -> vector<128x128xf32>",
        "{layout_a = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 64]>, layout_b = "),
    "transpose RFC permutation first": (
        "%v: vector<16x16xbf16>", "%r = vector.transpose [1, 0] %v : vector<16x16xbf16> into vector<16x16xbf16>",
        "vector.transpose %v, [1, 0] : vector<16x16xbf16> to vector<16x16xbf16>"),
    # --- the order rule, valid sides
    "order col-major affine map": (
        "%m: memref<1024x1024xf16, affine_map<(d0, d1) -> (d1, d0)>>",
        "%t = xetile.init_tile %m[0, 0] : memref<1024x1024xf16, affine_map<(d0, d1) -> (d1, d0)>> -> "
        "!xetile.tile<64x32xf16, #xetile.tile_attr<order = [0, 1]>>", "order = [0, 1]"),
    "order col-major linear map": (
        "%m: memref<64x64xf16, affine_map<(d0, d1) -> (d1 * 64 + d0)>>",
        "%t = xetile.init_tile %m[0, 0] : memref<64x64xf16, affine_map<(d0, d1) -> (d1 * 64 + d0)>> -> "
        "!xetile.tile<16x16xf16, #xetile.tile_attr<order = [0, 1]>>", "order = [0, 1]"),
    "order col-major strided": (
        "%m: memref<512x1024xf16, strided<[1, 512]>>",
        "%t = xetile.init_tile %m[0, 0] : memref<512x1024xf16, strided<[1, 512]>> -> "
        "!xetile.tile<32x64xf16, #xetile.tile_attr<order = [0, 1]>>", "strided<[1, 512]>"),
    "order col-major address": (
        "%p: i64",
        "%c1 = arith.constant 1 : index\n  %c512 = arith.constant 512 : index\n"
        "  %t = xetile.init_tile %p[%c1, %c1], [%c512, %c512], [%c1, %c512] : i64 -> "
        "!xetile.tile<32x64xf16, #xetile.tile_attr<order = [0, 1]>>", "order = [0, 1]"),
    "order row-major strided": (
        "%m: memref<512x1024xf16, strided<[2048, 1], offset: ?>>",
        "%t = xetile.init_tile %m[0, 0] : memref<512x1024xf16, strided<[2048, 1], offset: ?>> -> "
        "!xetile.tile<32x64xf16>", "xetile.init_tile %m[0, 0]"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_spelling_roundtrips(name: str) -> None:
    args, body, expect = CASES[name]
    _, printed = roundtrip(module(args, body))
    assert expect in printed, printed


GPU_MODULE = """gpu.module @test_kernels {
  gpu.func @load_2d(%src: memref<256x128xf32>, %n: index) kernel {
    %t = xegpu.create_nd_tdesc %src[0, 0] : memref<256x128xf32> -> !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1]>>
    %v = xegpu.load_nd %t : !xegpu.tensor_desc<256x128xf32, #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1]>> -> vector<256x128xf32>
    gpu.return
  }
  gpu.func @helper(%x: index) -> index attributes {note = "device function"} {
    gpu.return %x : index
  }
}
"""


def test_gpu_module_and_func_custom_syntax() -> None:
    """MLIR's XeGPU tests wrap every case in ``gpu.module`` / ``gpu.func``."""
    module, printed = roundtrip(GPU_MODULE)
    assert "gpu.module @test_kernels {" in printed
    assert "gpu.func @load_2d(%src: memref<256x128xf32>, %n: index) kernel {" in printed
    assert 'gpu.func @helper(%x: index) -> index attributes {note = "device function"} {' in printed
    assert "gpu.return %x : index" in printed


UPSTREAM_FORMS = sorted((Path(__file__).parent / "upstream_forms").glob("*.mlir"))


@pytest.mark.parametrize("path", UPSTREAM_FORMS, ids=lambda p: p.name)
def test_upstream_form_files_roundtrip(path: Path) -> None:
    """Whole modules written the way MLIR's XeGPU tests write them."""
    roundtrip(path.read_text())


def test_multi_reduction_in_mlir_generic_form() -> None:
    """MLIR prints the kind as ``#vector.kind<..>``; it parses, verifies and prints in our
    custom form (which then round-trips)."""
    text = module("%v: vector<4x8xf32>, %a: vector<4xf32>",
                  '%r = "vector.multi_reduction"(%v, %a) <{kind = #vector.kind<maximumf>, reduction_dims = '
                  'array<i64: 1>}> : (vector<4x8xf32>, vector<4xf32>) -> vector<4xf32>')
    from xetile_dsl.dialects import parse_module, print_module

    parsed = parse_module(text)
    parsed.verify()
    printed = print_module(parsed)
    assert "vector.multi_reduction <maximumf>, %v, %a [1] : vector<4x8xf32> to vector<4xf32>" in printed
    roundtrip(printed)
