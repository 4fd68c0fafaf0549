// Snippets of the XeGPU RFC, SIMT scattered loads with the earlier tdesc_attr spelling.
#sg_map_t = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>
#sg_map_t16 = #xegpu.sg_map<wi_layout = [16, 1], wi_data = [1, 1]>
#scatter_attr = #xegpu.tdesc_attr< memory_space=slm, scattered=true>
#scatter_attr4 = #xegpu.tdesc_attr< memory_space=slm, scattered=true, chunk_size=4>
func.func @simt_scatter(%src_addr: ui64, %offsets: vector<16xindex>, %mask: vector<1xi1>, %mask16: vector<16xi1>) {
  %scatter_tdesc = xegpu.create_tdesc, %src_addr, %offsets:
		ui64, vector<16xindex> into tensor_desc<16xf32, #scatter_attr, #sg_map_t>
  %result = xegpu.load %scatter_tdesc, %mask {L1 = cached, L2 = uncached} :
          tensor_desc<16xf32, #scatter_attr, #sg_map_t>, vector<1xi1> -> vector<1xf32>
  %scatter_tdesc_chunk = xegpu.create_tdesc, %src_addr, %offsets :
		ui64, vector<16xindex> into tensor_desc<16x4xf32, #scatter_attr4, #sg_map_t16>
  %result4 = xegpu.load %scatter_tdesc_chunk, %mask16 {L1 = cached, L2 = uncached, transpose=[1,0]} :
          tensor_desc<16x4xf32, #scatter_attr4, #sg_map_t16>, vector<16xi1> -> vector<4x1xf32>
  func.return
}
