// XeGPU ops in the spelling of MLIR's XeGPU dialect tests: gpu.module/gpu.func kernels,
// MLIR's printed property dictionaries <{...}>, typed integers in attributes, constant
// offsets, scattered descriptors narrower than a subgroup (structurally legal).
gpu.module @xegpu_forms {
  gpu.func @block_ops(%base: ui64, %w: index, %h: index, %row: index, %col: index, %m3: memref<4x64x32xf32>) {
    %one = arith.constant 1 : index
    %d = xegpu.create_nd_tdesc %base[%row, %col], [%h, %w], [%w, %one] : ui64 -> !xegpu.tensor_desc<8x16xf32>
    %d3 = xegpu.create_nd_tdesc %m3[1, 0, 0] : memref<4x64x32xf32> -> !xegpu.tensor_desc<8x16xf32>
    %a2 = xegpu.create_nd_tdesc %m3[0, 8, 0] : memref<4x64x32xf32> -> !xegpu.tensor_desc<16x8xf32, #xegpu.block_tdesc_attr<array_length = 2 : i64>>
    xegpu.prefetch_nd %d <{l1_hint = #xegpu.cache_hint<cached>, l2_hint = #xegpu.cache_hint<uncached>}> : !xegpu.tensor_desc<8x16xf32>
    %v = xegpu.load_nd %d3 <{l1_hint = #xegpu.cache_hint<cached>}> : !xegpu.tensor_desc<8x16xf32> -> vector<8x16xf32>
    %t = xegpu.load_nd %a2 <{l1_hint = #xegpu.cache_hint<cached>, l2_hint = #xegpu.cache_hint<uncached>}> : !xegpu.tensor_desc<16x8xf32, #xegpu.block_tdesc_attr<array_length = 2 : i64>> -> vector<2x16x8xf32>
    xegpu.store_nd %v, %d <{l1_hint = #xegpu.cache_hint<write_back>}> : vector<8x16xf32>, !xegpu.tensor_desc<8x16xf32>
    %n = xegpu.update_nd_offset %d, [0, 16] : !xegpu.tensor_desc<8x16xf32>
    gpu.return
  }
  gpu.func @vnni_and_transpose(%m: memref<32x32xf16>, %mf: memref<32x32xf32>) {
    %b = xegpu.create_nd_tdesc %m[0, 0] : memref<32x32xf16> -> !xegpu.tensor_desc<16x16xf16>
    %bp = xegpu.load_nd %b <{packed, l1_hint = #xegpu.cache_hint<cached>}> : !xegpu.tensor_desc<16x16xf16> -> vector<8x16x2xf16>
    %a = xegpu.create_nd_tdesc %m[16, 0] : memref<32x32xf16> -> !xegpu.tensor_desc<8x16xf16>
    %av = xegpu.load_nd %a : !xegpu.tensor_desc<8x16xf16> -> vector<8x16xf16>
    %c = xegpu.dpas %av, %bp : vector<8x16xf16>, vector<8x16x2xf16> -> vector<8x16xf32>
    %tt = xegpu.create_nd_tdesc %mf[0, 0] : memref<32x32xf32> -> !xegpu.tensor_desc<16x8xf32>
    %tv = xegpu.load_nd %tt <{transpose = array<i64: 1, 0>}> : !xegpu.tensor_desc<16x8xf32> -> vector<8x16xf32>
    gpu.return
  }
  gpu.func @scattered(%p: ui64, %vals: vector<4x2xf32>, %all: vector<16xf32>, %mask16: vector<16xi1>) {
    %offs = arith.constant dense<[0, 16, 32, 48]> : vector<4xindex>
    %mask = arith.constant dense<1> : vector<4xi1>
    %d = xegpu.create_tdesc %p, %offs : ui64, vector<4xindex> -> !xegpu.tensor_desc<4x2xf32, #xegpu.scatter_tdesc_attr<chunk_size = 2 : i64>>
    xegpu.prefetch %d <{l1_hint = #xegpu.cache_hint<cached>}> : !xegpu.tensor_desc<4x2xf32, #xegpu.scatter_tdesc_attr<chunk_size = 2 : i64>>
    %step = arith.constant dense<64> : vector<4xindex>
    %e = xegpu.update_offset %d, %step : !xegpu.tensor_desc<4x2xf32, #xegpu.scatter_tdesc_attr<chunk_size = 2 : i64>>, vector<4xindex>
    %lanes = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : vector<16xindex>
    %s = xegpu.create_tdesc %p, %lanes : ui64, vector<16xindex> -> !xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<>>
    %old = xegpu.atomic_rmw addf %s, %mask16, %all : !xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<>>, vector<16xi1>, vector<16xf32> -> vector<16xf32>
    xegpu.store %all, %s, %mask16 <{l1_hint = #xegpu.cache_hint<write_back>, l2_hint = #xegpu.cache_hint<uncached>}> : vector<16xf32>, !xegpu.tensor_desc<16xf32, #xegpu.scatter_tdesc_attr<>>, vector<16xi1>
    gpu.return
  }
  gpu.func @barriers() {
    xegpu.alloc_nbarrier 4
    %id = arith.constant 2 : i8
    %count = arith.constant 32 : i8
    %nb = xegpu.init_nbarrier %id, %count : i8, i8 -> !xegpu.nbarrier
    xegpu.nbarrier_arrive %nb : !xegpu.nbarrier
    xegpu.nbarrier_wait %nb : !xegpu.nbarrier
    xegpu.fence memory_kind = global, fence_scope = workgroup
    gpu.return
  }
}
