// Snippets of the XeGPU RFC, "The sg_map propagation process ...": the subgroup-level
// ("Before WI distribution") forms with their sg_maps, and the per-lane bitcast.
// Corrections (docs/ir.md): the before-forms are comments in the RFC; `vector.reduction [1]`
// (a reduction to a 1-D vector) is vector.multi_reduction with an accumulator; sg_maps on
// vector.extract / arith.addf are named (xDSL's generic attr-dict takes no unnamed entries).
#sg_map_a = #xegpu.sg_map<wi_layout = [16, 1], wi_data = [1, 2]>
#sg_map_b = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [2, 1]>
#sg_map_a2 = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 1]>
#sg_map_b2 = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 2]>
#sg_map_x = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [2, 1]>
#sg_map_c = #xegpu.sg_map<wi_layout = [1, 16], wi_data = [1, 2]>
func.func @sg_maps(%vector_t: vector<16x16xbf16>, %vector_i16: vector<8x16xi16>, %vector_lane: vector<8x1xi16>,
                   %vector_r: vector<16x16xbf16>, %acc: vector<16xbf16>, %vector_1d: vector<16xbf16>,
                   %vector_3d: vector<2x32x16xbf16>, %vector_x: vector<24x32xbf16>, %vector_y: vector<24x32xbf16>) {
  %vector_b = vector.transpose [1, 0] %vector_t {#sg_map_b} :vector<16x16xbf16> into vector<16x16xbf16>
  %vector_b_checked = vector.transpose %vector_t, [1, 0] {layout_operand_0 = #sg_map_a, layout_result_0 = #sg_map_b} : vector<16x16xbf16> to vector<16x16xbf16>
  %vector_i8 = vector.bitcast %vector_i16 {#sg_map_b2} :vector<8x16xi16> into vector<8x32xi8>
  %vector_lane_i8 = vector.bitcast %vector_lane :vector<8x1xi16> into vector<8x2xi8>
  %vector_red = vector.multi_reduction <add>, %vector_r, %acc [1] {#sg_map_a2} : vector<16x16xbf16> to vector<16xbf16>
  %vector_bc = vector.broadcast %vector_1d {#sg_map_a2} :vector<16xbf16> into vector<16x16xbf16>
  %vector_e = vector.extract %vector_3d[0] {layout_result_0 = #sg_map_x} : vector<32x16xbf16> from vector<2x32x16xbf16>
  %vector_c = arith.addf %vector_x, %vector_y {layout_result_0 = #sg_map_c} : vector<24x32xbf16>
  func.return
}
