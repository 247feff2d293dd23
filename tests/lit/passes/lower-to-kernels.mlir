// RUN: mixprec-opt --split-input-file --mp-fuse --mp-lower-to-kernels %s | FileCheck %s

// A fusion becomes an mpk.kernel over its reduction's input shape, with the
// trailing dims the reduction covers as its row; a GEMM fusion becomes an
// mpk.gemm with bias and epilogue; a reshape is an alias; a transpose is a
// backend routine with its permutation; lone element-wise ops are kernels.

// CHECK-LABEL: func.func @lower$block
// CHECK: %[[LN:.*]] = mpk.kernel(%{{.*}}, %{{.*}}) {ops = ["ln"], row_dims = 1 : i64, shape = array<i64: 4, 8>}
// CHECK: mp.layer_norm
// CHECK: mpk.yield
// CHECK: %[[G:.*]] = mpk.gemm %[[LN]], %{{.*}} bias %{{.*}} {epilogue = "relu", ops = ["fc", "bias", "act"], tf32 = false, trans_b = true}
// CHECK-SAME: : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: %[[A:.*]] = mpk.alias %[[G]] : tensor<4x8xf32> -> tensor<4x2x4xf32>
// CHECK: %[[T:.*]] = mpk.call "transpose"(%[[A]]) {float_attrs = array<f32>, int_attrs = array<i64: 1, 0, 2>, ops = ["perm"]}
// CHECK: %[[E:.*]] = mpk.kernel(%[[T]]) {ops = ["exp"], row_dims = 0 : i64, shape = array<i64: 2, 4, 4>}
// CHECK: mp.exp
// CHECK: return %[[E]]
// CHECK-NOT: mp.fusion
func.func @lower$block(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4xf32> {
  %0 = mp.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("ln")
  %1 = mp.linear %0, %w {transpose_weight = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc")
  %2 = mp.add %1, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32> loc("bias")
  %3 = mp.relu %2 : tensor<4x8xf32> loc("act")
  %4 = mp.reshape %3 : tensor<4x8xf32> -> tensor<4x2x4xf32> loc("split")
  %5 = mp.transpose %4 {perm = array<i64: 1, 0, 2>} : tensor<4x2x4xf32> -> tensor<2x4x4xf32> loc("perm")
  %6 = mp.exp %5 : tensor<2x4x4xf32> loc("exp")
  return %6 : tensor<2x4x4xf32>
}

// -----

// Reductions over leading axes and softmax over a non-trailing axis are
// routines; FP8 scaled GEMMs keep their scales; TF32 is a GEMM flag.

// CHECK-LABEL: func.func @lower$routines_and_scales
// CHECK: mpk.call "reduce_sum"(%{{.*}}) {float_attrs = array<f32>, int_attrs = array<i64: 1, 0>
// CHECK: mpk.call "softmax"(%{{.*}}) {float_attrs = array<f32>, int_attrs = array<i64: 0>
// CHECK: mpk.gemm %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}}) {epilogue = "none", ops = ["scaled"], tf32 = false, trans_b = false}
// CHECK: mpk.gemm %{{.*}}, %{{.*}} {epilogue = "none", ops = ["tf32mm"], tf32 = true, trans_b = false}
func.func @lower$routines_and_scales(%x: tensor<4x8xf32>, %q: tensor<4x8xf8E4M3FN>, %qw: tensor<8x8xf8E4M3FN>, %s: tensor<f32>, %w: tensor<8x8xf32>) -> (tensor<1x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>) {
  %0 = mp.reduce_sum %x {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<1x8xf32> loc("colsum")
  %1 = mp.softmax %x {axis = 0 : i64} : tensor<4x8xf32> -> tensor<4x8xf32> loc("colsoftmax")
  %2 = mp.scaled_matmul %q, %qw, %s, %s : (tensor<4x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x8xbf16> loc("scaled")
  %3 = mp.matmul %x, %w {mp.precision = tf32} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("tf32mm")
  return %0, %1, %2, %3 : tensor<1x8xf32>, tensor<4x8xf32>, tensor<4x8xbf16>, tensor<4x8xf32>
}

// -----

// A matmul one GEMM step cannot express (a vector operand, batch dims that
// broadcast partially) becomes the numpy-semantics "matmul" routine.
// CHECK-LABEL: func.func @lower$matmul_routine
// CHECK: mpk.call "matmul"(%{{.*}}, %{{.*}}) {float_attrs = array<f32>, int_attrs = array<i64>, ops = ["bcast"]} : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
// CHECK: mpk.call "matmul"(%{{.*}}, %{{.*}}) {{.*}}ops = ["vec"]} : (tensor<2x1x4x8xf32>, tensor<8xf32>) -> tensor<2x1x4xf32>
// CHECK-NOT: mpk.gemm
func.func @lower$matmul_routine(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %v: tensor<8xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x1x4xf32>) {
  %0 = mp.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32> loc("bcast")
  %1 = mp.matmul %a, %v : (tensor<2x1x4x8xf32>, tensor<8xf32>) -> tensor<2x1x4xf32> loc("vec")
  return %0, %1 : tensor<2x3x4x5xf32>, tensor<2x1x4xf32>
}
