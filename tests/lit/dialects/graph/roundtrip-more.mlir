// RUN: mixprec-opt %s | FileCheck %s
// RUN: mixprec-opt %s | mixprec-opt | FileCheck %s
// RUN: mixprec-opt --mlir-print-op-generic %s | mixprec-opt | FileCheck %s

// The mp ops roundtrip.mlir does not show print and parse back to
// themselves (bytecode-roundtrip.test round-trips both files as bytecode).

// CHECK-LABEL: func.func @unary$more
func.func @unary$more(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // CHECK: mp.abs %{{.*}} : tensor<4x8xf32>
  %0 = mp.abs %x : tensor<4x8xf32>
  // CHECK: mp.ceil
  %1 = mp.ceil %0 : tensor<4x8xf32>
  // CHECK: mp.floor
  %2 = mp.floor %1 : tensor<4x8xf32>
  // CHECK: mp.round
  %3 = mp.round %2 : tensor<4x8xf32>
  // CHECK: mp.sign
  %4 = mp.sign %3 : tensor<4x8xf32>
  // CHECK: mp.cos
  %5 = mp.cos %4 : tensor<4x8xf32>
  // CHECK: mp.tan %{{.*}} : tensor<4x8xf32>
  %tan = mp.tan %5 : tensor<4x8xf32>
  // CHECK: mp.atan %{{.*}} : tensor<4x8xf32>
  %atan = mp.atan %tan : tensor<4x8xf32>
  // CHECK: mp.softplus
  %6 = mp.softplus %atan : tensor<4x8xf32>
  // CHECK: mp.mish
  %7 = mp.mish %6 : tensor<4x8xf32>
  // CHECK: mp.hard_swish
  %8 = mp.hard_swish %7 : tensor<4x8xf32>
  // CHECK: mp.elu %{{.*}} {alpha = 5.000000e-01 : f32} : tensor<4x8xf32>
  %9 = mp.elu %8 {alpha = 0.5 : f32} : tensor<4x8xf32>
  return %9 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @binary$more
func.func @binary$more(%a: tensor<4x8xf32>, %b: tensor<8xf32>)
    -> (tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>) {
  // CHECK: mp.max %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %0 = mp.max %a, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: mp.min
  %1 = mp.min %0, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: mp.less %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  %2 = mp.less %1, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: mp.greater
  %3 = mp.greater %1, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  // CHECK: mp.greater_or_equal
  %4 = mp.greater_or_equal %1, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xi1>
  return %1, %2, %3, %4 : tensor<4x8xf32>, tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xi1>
}

// CHECK-LABEL: func.func @fusion$elementwise
func.func @fusion$elementwise(%x: tensor<8x64xbf16>, %b: tensor<64xbf16>) -> tensor<8x64xbf16> {
  // CHECK: mp.fusion elementwise(%{{.*}}, %{{.*}}) {ops = ["add1", "relu1"]} : (tensor<8x64xbf16>, tensor<64xbf16>) -> tensor<8x64xbf16> {
  // CHECK: mp.add
  // CHECK: mp.relu
  // CHECK: mp.yield %{{.*}} : tensor<8x64xbf16>
  %y = mp.fusion elementwise(%x, %b) {ops = ["add1", "relu1"]}
      : (tensor<8x64xbf16>, tensor<64xbf16>) -> tensor<8x64xbf16> {
  ^bb0(%a: tensor<8x64xbf16>, %c: tensor<64xbf16>):
    %0 = mp.add %a, %c : tensor<8x64xbf16>, tensor<64xbf16> -> tensor<8x64xbf16>
    %1 = mp.relu %0 : tensor<8x64xbf16>
    mp.yield %1 : tensor<8x64xbf16>
  }
  return %y : tensor<8x64xbf16>
}

// CHECK-LABEL: func.func @attention
func.func @attention(%q: tensor<2x4x16x64xbf16>, %k: tensor<2x4x24x64xbf16>,
                     %v: tensor<2x4x24x32xbf16>, %m: tensor<2x1x1x24xf32>)
    -> (tensor<2x4x16x32xbf16>, tensor<2x4x16xf32>) {
  // CHECK: mp.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 1.250000e-01 : f64}
  // CHECK-SAME: -> (tensor<2x4x16x32xbf16>, tensor<2x4x16xf32>)
  %o, %lse = mp.attention %q, %k, %v, %m {scale = 0.125 : f64, causal = true}
      : (tensor<2x4x16x64xbf16>, tensor<2x4x24x64xbf16>, tensor<2x4x24x32xbf16>,
         tensor<2x1x1x24xf32>) -> (tensor<2x4x16x32xbf16>, tensor<2x4x16xf32>)
  return %o, %lse : tensor<2x4x16x32xbf16>, tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @attention_grad
func.func @attention_grad(%q: tensor<1x2x8x16xbf16>, %k: tensor<1x2x8x16xbf16>,
                          %v: tensor<1x2x8x16xbf16>, %o: tensor<1x2x8x16xbf16>,
                          %lse: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xbf16>)
    -> (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>) {
  // CHECK: mp.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f64}
  %dq, %dk, %dv = mp.attention_grad %q, %k, %v, %o, %lse, %do {scale = 0.125 : f64}
      : (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>,
         tensor<1x2x8x16xbf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xbf16>)
      -> (tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>)
  return %dq, %dk, %dv : tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>, tensor<1x2x8x16xbf16>
}

// Block scaling (issue 25 part 2): 1x128 activation blocks (300 columns:
// 3 blocks, the last partial) against 128x128 weight blocks.
// CHECK-LABEL: func.func @block_scaled_linear
func.func @block_scaled_linear(%x: tensor<8x300xbf16>, %qw: tensor<40x300xf8E4M3FN>,
                               %sw: tensor<1x3xf32>) -> tensor<8x40xbf16> {
  // CHECK: %[[S:.*]] = mp.block_scale %{{.*}} {block = array<i64: 1, 128>, format = f8E4M3FN, recipe = "block"} : tensor<8x300xbf16> -> tensor<8x3xf32>
  %s = mp.block_scale %x {format = f8E4M3FN, block = array<i64: 1, 128>, recipe = "block"}
      : tensor<8x300xbf16> -> tensor<8x3xf32>
  // CHECK: %[[Q:.*]] = mp.block_quantize %{{.*}}, %[[S]] {block = array<i64: 1, 128>} : (tensor<8x300xbf16>, tensor<8x3xf32>) -> tensor<8x300xf8E4M3FN>
  %q = mp.block_quantize %x, %s {block = array<i64: 1, 128>}
      : (tensor<8x300xbf16>, tensor<8x3xf32>) -> tensor<8x300xf8E4M3FN>
  // CHECK: mp.scaled_linear %[[Q]], %{{.*}}, %[[S]], %{{.*}} {input_block = array<i64: 1, 128>, transpose_weight = true, weight_block = array<i64: 128, 128>}
  %y = mp.scaled_linear %q, %qw, %s, %sw
      {transpose_weight = true, input_block = array<i64: 1, 128>, weight_block = array<i64: 128, 128>}
      : (tensor<8x300xf8E4M3FN>, tensor<40x300xf8E4M3FN>, tensor<8x3xf32>, tensor<1x3xf32>)
      -> tensor<8x40xbf16>
  return %y : tensor<8x40xbf16>
}

// MXFP8: 1x32 blocks, E8M0 (power-of-two) scales, margin.
// CHECK-LABEL: func.func @mx_block_scale
func.func @mx_block_scale(%x: tensor<2x4x64xf32>) -> tensor<2x4x2xf32> {
  // CHECK: mp.block_scale %{{.*}} {block = array<i64: 1, 32>, format = f8E5M2, margin = 1 : i64, recipe = "mx"} : tensor<2x4x64xf32> -> tensor<2x4x2xf32>
  %s = mp.block_scale %x {format = f8E5M2, block = array<i64: 1, 32>, recipe = "mx", margin = 1}
      : tensor<2x4x64xf32> -> tensor<2x4x2xf32>
  return %s : tensor<2x4x2xf32>
}

// Data parallelism (issue 26): gradients and the loss reduced across ranks.
// CHECK-LABEL: func.func @all_reduce
func.func @all_reduce(%g: tensor<4096xf32>, %h: tensor<64xbf16>, %found: tensor<f32>)
    -> (tensor<4096xf32>, tensor<64xbf16>, tensor<f32>) {
  // CHECK: mp.all_reduce %{{.*}} {reduction = "mean"} : tensor<4096xf32> -> tensor<4096xf32>
  %0 = mp.all_reduce %g {reduction = "mean"} : tensor<4096xf32> -> tensor<4096xf32>
  // CHECK: mp.all_reduce %{{.*}} {reduction = "sum"} : tensor<64xbf16> -> tensor<64xbf16>
  %1 = mp.all_reduce %h {reduction = "sum"} : tensor<64xbf16> -> tensor<64xbf16>
  // CHECK: mp.all_reduce %{{.*}} {reduction = "max"} : tensor<f32> -> tensor<f32>
  %2 = mp.all_reduce %found {reduction = "max"} : tensor<f32> -> tensor<f32>
  return %0, %1, %2 : tensor<4096xf32>, tensor<64xbf16>, tensor<f32>
}

// Optimizer-state sharding: this rank's slice, and every rank's gathered.
// CHECK-LABEL: func.func @shard
func.func @shard(%g: tensor<4096xf32>, %w: tensor<64xbf16>) -> (tensor<2048xf32>, tensor<128xbf16>) {
  // CHECK: mp.rank_slice %{{.*}} {world = 2 : i64} : tensor<4096xf32> -> tensor<2048xf32>
  %0 = mp.rank_slice %g {world = 2} : tensor<4096xf32> -> tensor<2048xf32>
  // CHECK: mp.all_gather %{{.*}} {world = 2 : i64} : tensor<64xbf16> -> tensor<128xbf16>
  %1 = mp.all_gather %w {world = 2} : tensor<64xbf16> -> tensor<128xbf16>
  return %0, %1 : tensor<2048xf32>, tensor<128xbf16>
}
