// Workgroup layouts in the spelling of MLIR's XeGPU layout and wg-to-sg tests:
// layouts in tensor_desc types, layout_result_0 / layout_operand_N on ops, #xegpu.slice
// with dims = [..], convert_layout with srcMap / resMap, vector ops as the passes emit them.
gpu.module @layout_forms {
  gpu.func @descriptors(%m: memref<96x64xf32>) {
    %a = xegpu.create_nd_tdesc %m[0, 0] : memref<96x64xf32> -> !xegpu.tensor_desc<96x64xf32, #xegpu.layout<sg_layout = [3, 2], sg_data = [32, 32]>>
    %b = xegpu.create_nd_tdesc %m[0, 0] : memref<96x64xf32> -> !xegpu.tensor_desc<96x64xf32, #xegpu.layout<sg_layout = [3, 2], sg_data = [32, 32], inst_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]>>
    %c = xegpu.create_nd_tdesc %m[0, 0] : memref<96x64xf32> -> !xegpu.tensor_desc<48x32xf32, #xegpu.layout<sg_layout = [3, 2], sg_data = [16, 16], lane_layout = [1, 16], lane_data = [4, 1]>>
    %v = xegpu.load_nd %b : !xegpu.tensor_desc<96x64xf32, #xegpu.layout<sg_layout = [3, 2], sg_data = [32, 32], inst_data = [8, 16], lane_layout = [1, 16], lane_data = [1, 1]>> -> vector<96x64xf32>
    gpu.return
  }
  gpu.func @convert(%x: vector<64x32xf16>) {
    %s = xegpu.convert_layout %x {srcMap = #xegpu.layout<lane_layout = [1, 16], lane_data = [2, 1]>,
                                  resMap = #xegpu.layout<lane_layout = [1, 16], lane_data = [1, 1]>} : vector<64x32xf16>
    %w = xegpu.convert_layout %x {srcMap = #xegpu.layout<sg_layout = [4, 2], sg_data = [16, 16]>,
                                  resMap = #xegpu.layout<sg_layout = [2, 4], sg_data = [32, 8]>} : vector<64x32xf16>
    gpu.return
  }
  gpu.func @propagated(%m: memref<128x64xf32>, %a: vector<128x64xf16>, %b: vector<64x128xf16>) {
    %t = xegpu.create_nd_tdesc %m[0, 0] : memref<128x64xf32> -> !xegpu.tensor_desc<128x64xf32, #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16], lane_layout = [1, 16], lane_data = [1, 1]>>
    %v = xegpu.load_nd %t : !xegpu.tensor_desc<128x64xf32, #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16], lane_layout = [1, 16], lane_data = [1, 1]>> -> vector<128x64xf32>
    %e = math.exp %v {layout_result_0 = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16], lane_layout = [1, 16], lane_data = [1, 1]>} : vector<128x64xf32>
    %acc = arith.constant {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16]>, dims = [1]>} dense<0.0> : vector<128xf32>
    %r = vector.multi_reduction <add>, %e, %acc {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [4, 4], sg_data = [32, 16]>, dims = [1]>} [1] : vector<128x64xf32> to vector<128xf32>
    %col = vector.shape_cast %r {layout_result_0 = #xegpu.layout<sg_layout = [4, 1], sg_data = [32, 1]>} : vector<128xf32> to vector<128x1xf32>
    %bc = vector.broadcast %col {layout_result_0 = #xegpu.layout<sg_layout = [4, 1], sg_data = [32, 64]>} : vector<128x1xf32> to vector<128x64xf32>
    %tr = vector.transpose %bc, [1, 0] {layout_operand_0 = #xegpu.layout<sg_layout = [4, 1], sg_data = [32, 64], order = [1, 0]>, layout_result_0 = #xegpu.layout<sg_layout = [1, 4], sg_data = [64, 32], order = [0, 1]>} : vector<128x64xf32> to vector<64x128xf32>
    %d = xegpu.dpas %a, %b {layout_result_0 = #xegpu.layout<sg_layout = [4, 4], sg_data = [32, 32], lane_layout = [1, 16], lane_data = [1, 1]>} : vector<128x64xf16>, vector<64x128xf16> -> vector<128x128xf32>
    gpu.return
  }
  gpu.func @nested_slices() {
    %c3 = arith.constant {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [8, 2, 1], sg_data = [2, 16, 4]>, dims = [2]>} dense<3> : vector<16x32xindex>
    %c1 = arith.constant {layout_result_0 = #xegpu.slice<#xegpu.slice<#xegpu.layout<sg_layout = [8, 2, 1], sg_data = [2, 16, 4]>, dims = [2]>, dims = [0]>} dense<1> : vector<32xindex>
    gpu.return
  }
  gpu.func @normalize_rows(%x: vector<64x256xf32>) -> vector<64x256xf32> {
    %zero = arith.constant dense<0.0> : vector<64xf32>
    %e = math.exp %x {layout_result_0 = #xegpu.layout<sg_layout = [2, 8], sg_data = [32, 32]>} : vector<64x256xf32>
    %s = vector.multi_reduction <add>, %e, %zero {layout_result_0 = #xegpu.slice<#xegpu.layout<sg_layout = [2, 8], sg_data = [32, 32]>, dims = [1]>} [1] : vector<64x256xf32> to vector<64xf32>
    %sc = vector.shape_cast %s : vector<64xf32> to vector<64x1xf32>
    %b = vector.broadcast %sc {layout_result_0 = #xegpu.layout<sg_layout = [2, 8], sg_data = [32, 32]>} : vector<64x1xf32> to vector<64x256xf32>
    %n = arith.divf %e, %b {layout_result_0 = #xegpu.layout<sg_layout = [2, 8], sg_data = [32, 32]>} : vector<64x256xf32>
    gpu.return %n : vector<64x256xf32>
  }
}
