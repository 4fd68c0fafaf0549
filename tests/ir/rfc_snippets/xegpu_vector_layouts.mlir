// Snippets of the XeGPU RFC, "The layout attribute propagates ..." (workgroup level):
// vector ops carrying #xegpu.layout / #xegpu.slice, written unnamed as in the RFC.
// Corrections (docs/ir.md): `float` -> `f32`; `%%vector_a` -> `%vector_a3`; the broadcast
// `vector.broadcast %vector_b [1]` (no MLIR form) -> shape_cast to 256x1, then broadcast.

// reduction: the result is a slice of the source layout over the reduced dim
#layout_r = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 128], inst_data=[1, 16], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_r_reduce = #xegpu.slice<#layout_r, 1>
// reduction from 3-D to 2-D
#layout_r3 = #xegpu.layout<sg_layout = [8, 1, 4], sg_data = [1, 32, 32], inst_data=[1, 1, 16], lane_layout=[1, 1, 16], lane_data = [1, 1, 1], order=[2, 1, 0]>
#layout_r3_reduce = #xegpu.slice<#layout_r3, 1>
// shape_cast, two examples
#layout_s = #xegpu.layout<sg_layout = [8, 1, 4], sg_data = [1, 32, 32], inst_data=[1, 1, 16], lane_layout=[1, 1, 16], lane_data = [1, 1, 1], order=[2, 1, 0] >
#layout_s_in = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], inst_data=[1, 16], lane_layout=[1, 16], lane_data = [1, 1], order=[1, 0]>
#layout_s2 = #xegpu.layout<sg_layout = [8, 1, 4], sg_data = [32, 1, 32], inst_data=[1, 1, 16], lane_layout=[1, 1, 16], lane_data = [1, 1, 1], order=[2, 1, 0] >
#layout_s2_reduce = #xegpu.slice<#layout_s2, 1>
// broadcast: the source's layout is the result's, sliced over the broadcast dim
#layout_b = #xegpu.layout<sg_layout = [16, 1], sg_data = [16, 256], inst_data=[1, 16], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_b_reduce = #xegpu.slice<#layout_b, 1>
#layout_b_col = #xegpu.layout<sg_layout = [16, 1], sg_data = [16, 1], lane_layout=[16, 1], lane_data = [1, 1], order=[1, 0]>
// transpose: every field swapped, order too
#layout_t = #xegpu.layout<sg_layout = [4, 8], sg_data = [32, 64], inst_data=[16, 16], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_t_in = #xegpu.layout<sg_layout = [8, 4], sg_data = [64, 32], inst_data=[16, 16], lane_layout=[16, 1], lane_data = [1, 1], order=[0, 1]>

func.func @propagation(%vector_b: vector<256x128xf32>, %cst_0: vector<256xf32>,
                       %vector_b3: vector<8x32x128xf32>, %cst_3: vector<8x128xf32>,
                       %vector_bb: vector<256xf32>, %vector_bt: vector<512x128xf32>) {
  %vector_a = vector.multi_reduction <add> %vector_b, %cst_0 [1] {#layout_r_reduce}: vector<256x128xf32> into vector<256xf32>
  %vector_a3 = vector.multi_reduction <add>, %vector_b3, %cst_3 [1] {#layout_r3_reduce}: vector<8x32x128xf32> to vector<8x128xf32>
  // the derived source layouts, named as MLIR's propagation attaches them
  %red = vector.multi_reduction <add>, %vector_b, %cst_0 {layout_operand_0 = #layout_r, layout_result_0 = #layout_r_reduce} [1] : vector<256x128xf32> to vector<256xf32>
  %vector_s = vector.shape_cast %vector_b {#layout_s} : vector<256x128xf32> to vector<8x32x128xf32>
  %vector_s_named = vector.shape_cast %vector_b {layout_operand_0 = #layout_s_in, layout_result_0 = #layout_s} : vector<256x128xf32> to vector<8x32x128xf32>
  %vector_s2 = vector.shape_cast %vector_b {#layout_s2} : vector<256x128xf32> to vector<256x1x128xf32>
  %vector_s2r = vector.shape_cast %vector_b {layout_operand_0 = #layout_s2_reduce, layout_result_0 = #layout_s2} : vector<256x128xf32> to vector<256x1x128xf32>
  %col = vector.shape_cast %vector_bb {#layout_b_reduce} : vector<256xf32> to vector<256x1xf32>
  %vector_bc = vector.broadcast %col {layout_operand_0 = #layout_b_col, layout_result_0 = #layout_b} : vector<256x1xf32> to vector<256x256xf32>
  %vector_t = vector.transpose %vector_bt {#layout_t}: vector<512x128xf32> into vector<128x512xf32>
  %vector_t_named = vector.transpose %vector_bt, [1, 0] {layout_operand_0 = #layout_t_in, layout_result_0 = #layout_t} : vector<512x128xf32> to vector<128x512xf32>
  func.return
}

// dpas: the RFC's result layout and the input layouts it derives from it (the propagation
// rule: same sg_layout and order, sg_data agreeing on M, N and K); corrections: the types
// `vector<256x32xfloat>, .., vector<256x256xbf16>` -> A bf16, B bf16, C f32.
#layout_dpas_d = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], inst_data=[8,16], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_dpas_a = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32], inst_data=[8,16], lane_layout=[1,16], lane_data = [1, 1], order=[1, 0]>
#layout_dpas_b = #xegpu.layout<sg_layout = [8, 4], sg_data = [32, 64], inst_data=[16,16], lane_layout=[1,16], lane_data = [2, 1], order=[1, 0]>
// workgroup load_nd (the RFC omits the `xegpu.` prefix)
#layout_ld = #xegpu.layout<sg_layout = [4, 8], sg_data = [16, 16], inst_data= [8, 16], lane_layout=[1,16], lane_data = [1, 1], order = [1, 0]>
func.func @dpas_propagation(%vector_a: vector<256x32xbf16>, %vector_b: vector<32x256xbf16>, %vector_c: vector<256x256xf32>,
                            %A: memref<1024x1024xbf16>, %m: index, %c0: index) {
  %vector_d = xegpu.dpas %vector_a, %vector_b, %vector_c {#layout_dpas_d}:
     vector<256x32xbf16>, vector<32x256xbf16>, vector<256x256xf32>
	   into vector<256x256xf32>
  %vector_d2 = xegpu.dpas %vector_a, %vector_b, %vector_c {#layout_dpas_a #layout_dpas_b #layout_dpas_d}:
     vector<256x32xbf16>, vector<32x256xbf16>, vector<256x256xf32> into vector<256x256xf32>
  %wg_tdesc = xegpu.create_nd_tdesc %A[%m, %c0] : memref<1024x1024xbf16> -> tensor_desc<64x16xbf16, #layout_ld>
  %wg_vec  = xegpu.load_nd %wg_tdesc : tensor_desc<64x16xbf16, #layout_ld> -> vector<64x16xbf16>
  func.return
}
