// Snippets of the XeGPU RFC (op sections), corrected where docs/ir.md says so.
#tdesc_attr2 = #xegpu.block_tdesc_attr<memory_space=slm, boundary_check=false>
#scattered = #xegpu.scatter_tdesc_attr<>
#tdesc_attr = #xegpu.scatter_tdesc_attr< memory_space=slm, chunk_size=8>
func.func private @pair() -> (index, index)
func.func private @quad() -> (index, index, index, index)
func.func @block(%mem_addr: ui64, %mref: memref<1024x1024xbf16>, %mref4: memref<4x4x1024x1024xbf16>,
                 %offset: index, %mref1: memref<1024xbf16, 3>) {
  %offsets:2 = func.call @pair() : () -> (index, index)
  %base_shape:2 = func.call @pair() : () -> (index, index)
  %base_stride:2 = func.call @pair() : () -> (index, index)
  %offsets4:4 = func.call @quad() : () -> (index, index, index, index)
  %tdesc2 = xegpu.create_nd_tdesc %mem_addr, %offsets:2, %base_shape:2,%base_stride:2
		: ui64, index, index, index, index, index, index
     	into tensor_desc<8x16xbf16>
  %tdesc3 = xegpu.create_nd_tdesc %mem_addr, %offsets:2, %base_shape:2,%base_stride:2
		: ui64, index, index, index, index, index, index
     	into tensor_desc<8x16xbf16, #xegpu.block_tdesc_attr<array_length=2>>
  %tdesc4 = xegpu.create_nd_tdesc  %mref, %offsets:2
		: memref<1024x1024xbf16>, index, index
     	into tensor_desc<8x16xbf16>
  %tdesc5 = xegpu.create_nd_tdesc  %mref4, %offsets4:4 {mode =vc}
		: memref<4x4x1024x1024xbf16>, index, index
     	into tensor_desc<8x16xbf16>
  %tdesc6 = xegpu.create_nd_tdesc %mem_addr, %offset :
		ui64, index into tensor_desc<16xbf16, #tdesc_attr2>
  %tdesc7 = xegpu.create_nd_tdesc %mref1, %offset :
		memref<1024xbf16, 3>, index into tensor_desc<16xbf16, #tdesc_attr2>
  func.return
}
func.func @loads(%tdesc2: !xegpu.tensor_desc<8x16xbf16>, %tdesc_t: !xegpu.tensor_desc<16x8xf32>,
                 %tdesc_p: !xegpu.tensor_desc<16x16xbf16>, %tdesc1: !xegpu.tensor_desc<16x16xf16>,
                 %block_a: !xegpu.tensor_desc<32x16xf16>, %value: vector<8x16xbf16>, %value1: vector<16xbf16>,
                 %tdesc16: !xegpu.tensor_desc<16xbf16>, %tdesc: !xegpu.tensor_desc<8x16xbf16>,
                 %offset_x: index, %offset_y: index) {
  %result = xegpu.load_nd %tdesc2 {L1_hint = uncached, L3_hint = uncached} :
          tensor_desc<8x16xbf16> into vector<8x16xbf16>
  %at = xegpu.load_nd %tdesc_t {transpose = [1,0]} :
     tensor_desc<16x8xf32> into vector<8x16xf32>
  %bt = xegpu.load_nd %tdesc_p {packed} :
     tensor_desc<16x16xbf16> into vector<8x16x2xbf16>
  %at2 = xegpu.load_nd %tdesc1 {transpose = [1,0], transpose_bit_width = 32} :
     tensor_desc<16x16xf16> into vector<8x32xf16>
  %at3 = xegpu.load_nd %block_a {transpose = [1, 0], transpose_bit_width = 32} :
     tensor_desc<32x16xf16> into vector<8x64xf16>
  %bt3 = vector.shape_cast %at3 :  vector<8x64xf16> into vector<8x32x2xf16>
  xegpu.store_nd %value, %tdesc2:
          vector<8x16xbf16>, tensor_desc<8x16xbf16>
  xegpu.store_nd %value1, %tdesc16:
          vector<16xbf16>, tensor_desc<16xbf16>
  xegpu.prefetch_nd %tdesc2: tensor_desc<8x16xbf16>
  xegpu.prefetch_nd %tdesc16: tensor_desc<16xbf16>
  %tdesc_updated = xegpu.update_nd_offset %tdesc, %offset_x, %offset_y :
  	  tensor_desc<8x16xbf16>, index, index into tensor_desc<8x16xbf16>
  %offsets:2 = func.call @pair() : () -> (index, index)
  %tdesc_updated2 = xegpu.update_nd_offset %tdesc, %offsets:2 :
  	  tensor_desc<8x16xbf16>, index, index into tensor_desc<8x16xbf16>
  func.return
}
func.func @dpas(%vector_a: vector<8x16xbf16>, %vector_b: vector<16x16xbf16>, %vector_c: vector<8x16xf32>,
                %vnni_b: vector<8x16x2xbf16>, %vnni_a: vector<8x8x2xbf16>) {
  %c0 = xegpu.dpas %vector_a, %vector_b, %vector_c :
     vector<8x16xbf16>, vector<16x16xbf16>, vector<8x16xf32>
	   into vector<8x16xf32>
  %c1 = xegpu.dpas %vector_a, %vector_b :
     vector<8x16xbf16>, vector<16x16xbf16>
	   into vector<8x16xf32>
  %c2 = xegpu.dpas %vector_a, %vnni_b, %vector_c:
     vector<8x16xbf16>, vector<8x16x2xbf16>
	   into vector<8x16xf32>
  %c3 = xegpu.dpas %vnni_a, %vnni_b, %vector_c:
     vector<8x8x2xbf16>, vector<8x16x2xbf16>
	   into vector<8x16xf32>
  func.return
}
func.func @scatter(%mem_addr: i64, %offsets: vector<16xindex>, %base_addr: i64, %mask: vector<16xi1>,
                   %value: vector<16xui16>, %vbf: vector<16xbf16>) {
  %scatter_tdesc0 = xegpu.create_tdesc %mem_addr, %offsets :
     	i64, vector<16xindex>, into tensor_desc<16xui8, #scattered>
  %scatter_tdesc_chunk = xegpu.create_tdesc, %base_addr, %offsets :
		i64, vector<16xindex> into tensor_desc<16x8xui16, #tdesc_attr>
  %result0 = xegpu.load %scatter_tdesc0, %mask {L1_hint = cached, L2_hint = uncached} :
        	  tensor_desc<16xui8, #xegpu.scatter_tdesc_attr<>>, vector<16xi1> into vector<16xui8>
  %chunk_bf = xegpu.create_tdesc %base_addr, %offsets : i64, vector<16xindex> -> tensor_desc<16x8xbf16, #tdesc_attr>
  %result = xegpu.load %chunk_bf, %mask {L1 = cached, L2 = uncached, transpose} :
          tensor_desc<16x8xbf16, #tdesc_attr>, vector<16xi1> -> vector<8x16xbf16>
  %scatter_tdesc1 = xegpu.create_tdesc %mem_addr, %offsets : i64, vector<16xindex> -> tensor_desc<16xui16, #scattered>
  xegpu.store %value, %scatter_tdesc1, %mask :
     	 vector<16xui16>, tensor_desc<16xui16, #xegpu.scatter_tdesc_attr<>>, vector<16xi1>
  xegpu.prefetch %scatter_tdesc0 : tensor_desc<16xui8, #xegpu.scatter_tdesc_attr<>>
  %tdesc_updated = xegpu.update_offsets %scatter_tdesc1, %offsets :
  	tensor_desc<16xui16, #xegpu.scatter_tdesc_attr<>>, vector<16xindex>, into tensor_desc<16xui16, #xegpu.scatter_tdesc_attr<>>
  %scatter_Desc1 = xegpu.create_tdesc %mem_addr, %offsets : i64, vector<16xindex> -> tensor_desc<16xbf16, #scattered>
  %ret_value = xegpu.atomic_rmw "addf" %vbf, %scatter_Desc1, %mask :
          vector<16xbf16>, tensor_desc<16xbf16, #xegpu.scatter_tdesc_attr<>>, vector<16xi1> to vector<16xbf16>
  func.return
}
func.func @sync(%total_nbarrier_num: i8, %nbarrier_id: i8, %participant_thread_num: i8) {
  xegpu.alloc_nbarrier %total_nbarrier_num: i8
  %nbarrier = xegpu.init_nbarrier %nbarrier_id, %participant_thread_num : i8, i8 into nbarrier
  xegpu.nbarrier_arrive %nbarrier
  xegpu.nbarrier_wait %nbarrier
  xegpu.fence {scope = "gpu",  memory_kind = "global", }
  func.return
}
