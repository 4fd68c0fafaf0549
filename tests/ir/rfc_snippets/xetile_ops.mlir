// Snippets of the XeTile RFC (op sections), corrected where docs/ir.md says so.
#tile_attr = #xetile.tile_attr<order = [0, 1]>
#blk = #xetile.tile_attr<inner_blocks = [16, 16]>
#blk8 = #xetile.tile_attr<inner_blocks = [8, 16]>
#scatter = #xetile.tile_attr<scattered = true>
func.func private @pair() -> (index, index)
func.func @init_forms(%base_memref: memref<128x128xbf16>, %dyn_memref: memref<?x?xbf16>, %base_addr: i64,
                      %cm_memref: memref<128x128xbf16, affine_map<(d0, d1) -> (d1, d0)>>) {
  %tile_offset:2 = func.call @pair() : () -> (index, index)
  %base_shape:2 = func.call @pair() : () -> (index, index)
  %base_strides:2 = func.call @pair() : () -> (index, index)
  %tile0 = xetile.init_tile %base_memref, [%tile_offset:2] :
     memref<128x128xbf16> into tile<8x16xbf16>
  %tile1 = xetile.init_tile %dyn_memref, [%tile_offset:2], [%base_shape:2], [%base_strides:2]:
     memref<?x?xbf16> into tile<8x16xbf16>
  %tile2 = xetile.init_tile %base_addr, [%tile_offset:2], [%base_shape:2], [%base_strides:2]:
     i64 into tile<8x16xbf16>
  %tile3 = xetile.init_tile %cm_memref, [%tile_offset:2]:
     memref<128x128xbf16, affine_map<(d0, d1) -> (d1, d0)>> into tile<64x32xbf16, #tile_attr>
  %tile4 = xetile.init_tile %base_memref, [%tile_offset:2]:
     memref<128x128xbf16> into tile<64x32xbf16, #blk>
  func.return
}
func.func @memory(%tile_a: !xetile.tile<64x64xbf16>, %tile_c: !xetile.tile<64x32xbf16, #tile_attr>,
                  %tile_b: !xetile.tile<64x32xbf16, #blk>, %coop_tile: !xetile.tile<8x32xbf16>,
                  %offset_x: index, %offset_y: index, %value: vector<8x16xbf16>, %tile: !xetile.tile<8x16xbf16>,
                  %tile64: !xetile.tile<64x64xbf16, #blk8>, %value4: vector<8x4x8x16xbf16>) {
  %vector_a = xetile.load_tile %tile_a :
     tile<64x64xbf16> into vector<64x64xbf16>
  %vector_p = xetile.load_tile %tile_a {padding = 1.0} :
     tile<64x64xbf16> into vector<64x64xbf16>
  %vector_c = xetile.load_tile %tile_c :
     tile<64x32xbf16, #tile_attr> into vector<64x32xbf16>
  xetile.store_tile %vector_a, %tile_a :
   vector<64x64xbf16> into tile<64x64xbf16>
  xetile.store_tile %vector_c, %tile_c :
     vector<64x32xbf16> to tile<64x32xbf16, #tile_attr>
  %vector_b = xetile.load_tile %tile_b :
     tile<64x32xbf16, #blk> into vector<4x2x16x16xbf16>
  xetile.store_tile %vector_b, %tile_b :
     vector<4x2x16x16xbf16> into tile<64x32xbf16, #blk>
  xetile.prefetch_tile %coop_tile locality<3>: tile<8x32xbf16>
  xetile.prefetch_tile %coop_tile: tile<8x32xbf16>
  %tile_updated = xetile.update_tile_offset %tile_a, %offset_x, %offset_y :
		tile<64x64xbf16>, index, index into tile <64x64xbf16>
  %ret_value = xetile.atomic_rmw <addf> %value, %tile:
          vector<8x16xbf16>, tile<8x16xbf16> to vector<8x16xbf16>
  %vector_4 = xetile.atomic_rmw_tile <addf> %value4, %tile64: vector<8x4x8x16xbf16>, tile<64x64xbf16, #blk8> to vector<8x4x8x16xbf16>
  func.return
}
func.func @vector_ops(%vector_a: vector<64x32xbf16>, %vector_b: vector<32x128xbf16>, %vector_c: vector<64x128xf32>,
                      %f: vector<64x32xf32>, %row: vector<1x32xf32>, %a4: vector<8x4x8x8xbf16>,
                      %b4: vector<4x8x8x16xbf16>, %c4: vector<8x8x8x16xf32>, %r4: vector<8x4x8x16xf32>,
                      %s4: vector<8x1x8x1xf32>, %blocked: vector<1x2x64x16xf32>) {
  %vc = xetile.tile_mma %vector_a, %vector_b, %vector_c:
     vector<64x32xbf16>, vector<32x128xbf16>, vector<64x128xf32>
	   into vector<64x128xf32>
  %vc2 = xetile.tile_mma %vector_a, %vector_b :
     vector<64x32xbf16>, vector<32x128xbf16>
	   into vector<64x128xf32>
  %t = xetile.tile_transpose [1, 0] %f: vector<64x32xf32> into vector<32x64xf32>
  %t2 = xetile.tile_transpose %f [1, 0]: vector<64x32xf32> into vector<32x64xf32>
  %r = xetile.tile_reduce <add> %f [1]: vector<64x32xf32> into vector<64x1xf32>
  %b = xetile.tile_broadcast %row [0]: vector<1x32xf32> into vector<64x32xf32>
  %vc4 = xetile.tile_mma %a4, %b4, %c4 :
     vector<8x4x8x8xbf16>, vector<4x8x8x16xbf16>, vector<8x8x8x16xf32>
	   into vector<8x8x8x16xf32>
  %r4r = xetile.tile_reduce <add> %r4 [1, 3]: vector<8x4x8x16xf32> into vector<8x1x8x1xf32>
  %r4b = xetile.tile_broadcast %s4 [1, 3]: vector<8x1x8x1xf32> into vector<8x4x8x16xf32>
  %0 = xetile.tile_pack %f {inner_blocks = array<i64: 16, 16>}
    : vector<64x32xf32> -> vector<4x2x16x16xf32>
  %1 = xetile.tile_unpack %blocked {inner_blocks = array<i64: 64, 16>}
    : vector<1x2x64x16xf32> -> vector<64x32xf32>
  func.return
}
func.func @scatter(%base_addr: i64, %tile_offsets: vector<1x256xindex>, %mask: vector<1x256xi1>) {
  %tile_0 = xetile.init_tile %base_addr, %tile_offsets:
     i64, vector<1x256xindex> into tile<1x256xbf16, #scatter>
  %vector_a = xetile.load_gather %tile_0, %mask, {padding = 1.0} :
     tile<1x256xbf16, #scatter> into vector<1x256xbf16>
  xetile.store_scatter %vector_a, %mask, %tile_0 :
     vector<1x256xbf16> into tile<1x256xbf16, #scatter>
  func.return
}
