// Snippets of the XeGPU RFC, sg_map and layout sections.
#sg_map_a = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>
#sg_map_a2 = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 2]>
#sg_map_b = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [2, 1]>
#sg_map_c = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>
#layout_a = #xegpu.layout<sg_layout = [4, 8], sg_data = [16, 16], inst_data= [8, 16], lane_layout=[1,16], lane_data = [1, 1], order = [1, 0]>
#layout_a2 = #xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout=[1,16], lane_data = [1, 1], order = [1, 0]>
#layout_d = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], inst_data=[8,16], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_b = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], inst_data=[16, 8], lane_layout=[16, 1], lane_data = [1, 1], order = [1, 0]>
#layout_ca = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 256], inst_data=[1, 256], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_r = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data=[1, 16], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_a_reduce = #xegpu.slice<#layout_r, 1>
func.func @simt(%mem_addr: i64, %o0: index, %o1: index, %s0: index, %s1: index, %st0: index, %st1: index,
                %tdesc_a: !xegpu.tensor_desc<8x16xbf16, #sg_map_a>, %tdesc_i8: !xegpu.tensor_desc<8x32xi8, #sg_map_a2>,
                %tdesc_12: !xegpu.tensor_desc<12x32xbf16, #sg_map_a>, %tdesc_12b: !xegpu.tensor_desc<12x32xbf16, #sg_map_a2>,
                %tdesc_b: !xegpu.tensor_desc<16x16xbf16, #sg_map_b>, %va: vector<8x1xbf16>, %vb: vector<8x2xbf16>) {
  %tdesc = xegpu.create_nd_tdesc %mem_addr[%o0, %o1], [%s0, %s1], [%st0, %st1]
		: i64 into tensor_desc<8x16xbf16, #sg_map_a>
  %vector_a = xegpu.load_nd %tdesc_a:
     tensor_desc<8x16xbf16, #sg_map_a> into vector<8x1xbf16>
  %vector_i8 = xegpu.load_nd %tdesc_i8:
     tensor_desc<8x32xi8, #sg_map_a2> into vector<8x2xi8>
  %v12 = xegpu.load_nd %tdesc_12:
     tensor_desc<12x32xbf16, #sg_map_a> into vector<24x1xbf16>
  %v12b = xegpu.load_nd %tdesc_12b:
     tensor_desc<12x32xbf16, #sg_map_a2> into vector<12x2xbf16>
  %vector_b = xegpu.load_nd %tdesc_b:
     tensor_desc<16x16xbf16, #sg_map_b> into vector<8x2xbf16>
  %vector_c = xegpu.dpas %va, %vb {#sg_map_c} :vector<8x1xbf16>, vector<8x2xbf16> into vector<8x1xf32>
  func.return
}
func.func @workgroup(%A: memref<1024x1024xbf16>, %Af: memref<1024x1024xf16>, %m: index, %c0: index,
                     %vector_a: vector<256x32xbf16>, %vector_b: vector<32x256xbf16>, %vector_c: vector<256x256xf32>,
                     %red: vector<256xf32>) {
  %wg_tdesc = xegpu.create_nd_tdesc %A[%m, %c0] : memref<1024x1024xbf16> -> tensor_desc<64x16xbf16, #layout_a>
  %wg_tdesc2 = xegpu.create_nd_tdesc %Af[%m, %c0] : memref<1024x1024xf16> -> tensor_desc<128x128xf16, #layout_a2>
  %vector_d = xegpu.dpas %vector_a, %vector_b, %vector_c {#layout_d}:
     vector<256x32xbf16>, vector<32x256xbf16>, vector<256x256xf32>
	   into vector<256x256xf32>
  %converted = xegpu.convert_layout %vector_c {#layout_ca #layout_b}: vector<256x256xf32> into vector<256x256xf32>
  %r = xegpu.convert_layout %red {#layout_a_reduce} : vector<256xf32> -> vector<256xf32>
  func.return
}
