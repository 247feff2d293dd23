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
// CHECK: %[[T:.*]] = mpk.call transpose(%[[A]]) #mpk.transpose<perm = [1, 0, 2]> {ops = ["perm"]}
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
// CHECK: mpk.call reduce_sum(%{{.*}}) #mpk.reduce<axes = [0], keepdims = true> {ops = ["colsum"]}
// CHECK: mpk.call softmax(%{{.*}}) #mpk.axis<axis = 0> {ops = ["colsoftmax"]}
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
// broadcast partially) becomes the numpy-semantics matmul routine, TF32
// when the plan says so.
// CHECK-LABEL: func.func @lower$matmul_routine
// CHECK: mpk.call matmul(%{{.*}}, %{{.*}}) #mpk.matmul<tf32 = false> {ops = ["bcast"]} : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
// CHECK: mpk.call matmul(%{{.*}}, %{{.*}}) #mpk.matmul<tf32 = true> {ops = ["vec"]} : (tensor<2x1x4x8xf32>, tensor<8xf32>) -> tensor<2x1x4xf32>
// CHECK-NOT: mpk.gemm
func.func @lower$matmul_routine(%a: tensor<2x1x4x8xf32>, %b: tensor<3x8x5xf32>, %v: tensor<8xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x1x4xf32>) {
  %0 = mp.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32> loc("bcast")
  %1 = mp.matmul %a, %v {mp.precision = tf32} : (tensor<2x1x4x8xf32>, tensor<8xf32>) -> tensor<2x1x4xf32> loc("vec")
  return %0, %1 : tensor<2x3x4x5xf32>, tensor<2x1x4xf32>
}

// -----

// Every other op is a routine with its family's typed options. A TF32
// convolution says so (the interpreter rounds its operands to TF32; the
// module used to compute it in FP32); max pooling's dilations default to 1.

// CHECK-LABEL: func.func @lower$routine_options
// CHECK: mpk.call conv2d(%{{.*}}, %{{.*}}) #mpk.conv2d<strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], groups = 1, tf32 = true> {ops = ["conv"]}
// CHECK: mpk.call batch_norm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) #mpk.batch_norm<epsilon = 9.99999974E-6> {ops = ["bn"]}
// CHECK: mpk.call max_pool2d(%{{.*}}) #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = false, count_include_pad = false> {ops = ["maxpool"]}
// CHECK: mpk.call avg_pool2d(%{{.*}}) #mpk.pool2d<kernel = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], ceil_mode = true, count_include_pad = true> {ops = ["avgpool"]}
// CHECK: mpk.call slice(%{{.*}}) #mpk.slice<starts = [0, 0, 3, 0], steps = [1, 1, -1, 2]> {ops = ["pick"]}
// CHECK: mpk.call concat(%{{.*}}, %{{.*}}) #mpk.axis<axis = 1> {ops = ["join"]}
// CHECK: mpk.call gather(%{{.*}}, %{{.*}}) #mpk.axis<axis = 0> {ops = ["embed"]}
// CHECK: mpk.call fp8_scale(%{{.*}}) #mpk.fp8_scale<margin = 1, format = f8E5M2> {ops = ["scale"]}
// CHECK-NOT: mp.conv2d
func.func @lower$routine_options(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x3x3xf32>, %c: tensor<2xf32>, %t: tensor<6x3xf32>, %ids: tensor<2xi64>, %amax: tensor<f32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>, tensor<1x4x4x2xf32>, tensor<2x3xf32>, tensor<f32>) {
  %0 = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64, mp.precision = tf32} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32> loc("conv")
  %1 = mp.batch_norm %0, %c, %c, %c, %c {epsilon = 1.0e-5 : f32} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32> loc("bn")
  %2 = mp.max_pool2d %1 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x2x4x4xf32> -> tensor<1x2x2x2xf32> loc("maxpool")
  %3 = mp.avg_pool2d %1 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true} : tensor<1x2x4x4xf32> -> tensor<1x2x4x4xf32> loc("avgpool")
  %4 = mp.slice %3 {starts = array<i64: 0, 0, 3, 0>, steps = array<i64: 1, 1, -1, 2>} : tensor<1x2x4x4xf32> -> tensor<1x2x4x2xf32> loc("pick")
  %5 = mp.concat %4, %4 {axis = 1 : i64} : (tensor<1x2x4x2xf32>, tensor<1x2x4x2xf32>) -> tensor<1x4x4x2xf32> loc("join")
  %6 = mp.gather %t, %ids {axis = 0 : i64} : (tensor<6x3xf32>, tensor<2xi64>) -> tensor<2x3xf32> loc("embed")
  %7 = mp.fp8_scale %amax {format = f8E5M2, margin = 1 : i64} : tensor<f32> -> tensor<f32> loc("scale")
  return %2, %3, %5, %6, %7 : tensor<1x2x2x2xf32>, tensor<1x2x4x4xf32>, tensor<1x4x4x2xf32>, tensor<2x3xf32>, tensor<f32>
}
