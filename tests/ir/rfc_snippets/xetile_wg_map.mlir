// Snippets of the XeTile RFC, "Workgroup Level XeTile extension".
#wg_map_a = #xetile.wg_map<sg_layout = [2, 2], sg_data = [32, 128]>
#tile_attr = #xetile.tile_attr<wg = #wg_map_a, order = [0, 1], inner_blocks = array<i64: 32,16> >
#wg_map_d = #xetile.wg_map<sg_layout = [8, 4], sg_data = [32, 64]>
#wg_map_r = #xetile.wg_map<sg_layout = [32, 1], sg_data = [8, 1]>
#wg_map_bc = #xetile.wg_map<sg_layout = [16, 1], sg_data = [16, 256]>
#wg_map_t = #xetile.wg_map<sg_layout = [4, 8], sg_data = [32, 64]>
#wg_map_cb = #xetile.wg_map<sg_layout = [8, 4], sg_data = [32, 64]>
#wg_map_ca = #xetile.wg_map<sg_layout = [32, 1], sg_data = [8, 256]>
func.func @wg(%A: memref<1024x1024xf16, affine_map<(d0, d1) -> (d1, d0)>>, %m: index, %c0: index, %vector_a: vector<256x32xbf16>,
              %vector_b: vector<32x256xbf16>, %vector_c: vector<256x256xf32>, %v128: vector<256x128xf32>,
              %col: vector<256x1xf32>, %v512: vector<512x128xf32>) {
  %wg_tile = xetile.init_tile %A[%m, %c0] : memref<1024x1024xf16, affine_map<(d0, d1) -> (d1, d0)>> -> !xetile.tile<128x128xf16, #tile_attr>
  %vector_d = xetile.tile_mma %vector_a, %vector_b, %vector_c {#wg_map_d}:
     vector<256x32xbf16>, vector<32x256xbf16>, vector<256x256xf32>
	   into vector<256x256xf32>
  %r = xetile.tile_reduce <add> %v128 [1] {#wg_map_r}: vector<256x128xf32> into vector<256x1xf32>
  %b = xetile.tile_broadcast %col [1] {#wg_map_bc}: vector<256x1xf32> into vector<256x256xf32>
  %t = xetile.tile_transpose %v512 {#wg_map_t}: vector<512x128xf32> into vector<128x512xf32>
  %c1 = xetile.tile_conv_layout %vector_c {#wg_map_ca #wg_map_cb}: vector<256x256xf32> into vector<256x256xf32>
  %c2 = xetile.tile_conv_layout %vector_c {#wg_map_ca}: vector<256x256xf32> into vector<256x256xf32>
  func.return
}
