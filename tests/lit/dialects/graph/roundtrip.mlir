// RUN: mixprec-opt --split-input-file %s | FileCheck %s
// RUN: mixprec-opt --split-input-file %s | mixprec-opt --split-input-file | FileCheck %s
// RUN: mixprec-opt --split-input-file --mlir-print-op-generic %s | mixprec-opt --split-input-file | FileCheck %s

// Every mp op prints and parses back to itself.

// CHECK-LABEL: func.func @constant$dense
func.func @constant$dense() -> tensor<2x2xf32> {
  // CHECK: mp.constant dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
  %0 = mp.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @constant$int_and_bool
func.func @constant$int_and_bool() -> (tensor<3xi64>, tensor<2x2xi1>) {
  // CHECK: mp.constant dense<[0, 5, 2]> : tensor<3xi64>
  %0 = mp.constant dense<[0, 5, 2]> : tensor<3xi64>
  // CHECK: mp.constant dense<{{\[}}[true, false], [true, true]]> : tensor<2x2xi1>
  %1 = mp.constant dense<[[true, false], [true, true]]> : tensor<2x2xi1>
  return %0, %1 : tensor<3xi64>, tensor<2x2xi1>
}

// -----

// CHECK-LABEL: func.func @cast$all_dtypes
func.func @cast$all_dtypes(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: mp.cast %{{.*}} : tensor<4xf32> -> tensor<4xbf16>
  %0 = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
  // CHECK: mp.cast %{{.*}} : tensor<4xbf16> -> tensor<4xf16>
  %1 = mp.cast %0 : tensor<4xbf16> -> tensor<4xf16>
  // CHECK: mp.cast %{{.*}} : tensor<4xf16> -> tensor<4xf8E4M3FN>
  %2 = mp.cast %1 : tensor<4xf16> -> tensor<4xf8E4M3FN>
  // CHECK: mp.cast %{{.*}} : tensor<4xf8E4M3FN> -> tensor<4xf8E5M2>
  %3 = mp.cast %2 : tensor<4xf8E4M3FN> -> tensor<4xf8E5M2>
  // CHECK: mp.cast %{{.*}} : tensor<4xf8E5M2> -> tensor<4xi64>
  %4 = mp.cast %3 : tensor<4xf8E5M2> -> tensor<4xi64>
  // CHECK: mp.cast %{{.*}} : tensor<4xi64> -> tensor<4xf32>
  %5 = mp.cast %4 : tensor<4xi64> -> tensor<4xf32>
  return %5 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @matmul$batched_broadcast
func.func @matmul$batched_broadcast(%a: tensor<2x4x16x8xbf16>, %b: tensor<8x32xbf16>) -> tensor<2x4x16x32xf32> {
  // CHECK: mp.matmul %{{.*}}, %{{.*}} {acc_type = f32} : (tensor<2x4x16x8xbf16>, tensor<8x32xbf16>) -> tensor<2x4x16x32xf32>
  %0 = mp.matmul %a, %b {acc_type = f32} : (tensor<2x4x16x8xbf16>, tensor<8x32xbf16>) -> tensor<2x4x16x32xf32>
  return %0 : tensor<2x4x16x32xf32>
}

// -----

// CHECK-LABEL: func.func @matmul$vectors_and_fp8
func.func @matmul$vectors_and_fp8(%v: tensor<8xf32>, %m: tensor<3x8x5xf32>, %a: tensor<16x32xf8E4M3FN>, %b: tensor<32x8xf8E5M2>) -> (tensor<3x5xf32>, tensor<16x8xbf16>) {
  // CHECK: mp.matmul {{.*}} : (tensor<8xf32>, tensor<3x8x5xf32>) -> tensor<3x5xf32>
  %0 = mp.matmul %v, %m : (tensor<8xf32>, tensor<3x8x5xf32>) -> tensor<3x5xf32>
  // CHECK: mp.matmul {{.*}} : (tensor<16x32xf8E4M3FN>, tensor<32x8xf8E5M2>) -> tensor<16x8xbf16>
  %1 = mp.matmul %a, %b : (tensor<16x32xf8E4M3FN>, tensor<32x8xf8E5M2>) -> tensor<16x8xbf16>
  return %0, %1 : tensor<3x5xf32>, tensor<16x8xbf16>
}

// -----

// CHECK-LABEL: func.func @linear$bias_and_no_bias
func.func @linear$bias_and_no_bias(%x: tensor<2x8x64xf16>, %w: tensor<32x64xf16>, %b: tensor<32xf16>, %w2: tensor<64x16xf16>) -> (tensor<2x8x32xf16>, tensor<2x8x16xf16>) {
  // CHECK: mp.linear %{{.*}}, %{{.*}}, %{{.*}} {acc_type = f16, transpose_weight = true} : (tensor<2x8x64xf16>, tensor<32x64xf16>, tensor<32xf16>) -> tensor<2x8x32xf16>
  %0 = mp.linear %x, %w, %b {transpose_weight = true, acc_type = f16} : (tensor<2x8x64xf16>, tensor<32x64xf16>, tensor<32xf16>) -> tensor<2x8x32xf16>
  // CHECK: mp.linear %{{.*}}, %{{.*}} : (tensor<2x8x64xf16>, tensor<64x16xf16>) -> tensor<2x8x16xf16>
  %1 = mp.linear %x, %w2 : (tensor<2x8x64xf16>, tensor<64x16xf16>) -> tensor<2x8x16xf16>
  return %0, %1 : tensor<2x8x32xf16>, tensor<2x8x16xf16>
}

// -----

// CHECK-LABEL: func.func @conv2d$grouped_padded
func.func @conv2d$grouped_padded(%x: tensor<2x4x16x16xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x8x8xf32> {
  // CHECK: mp.conv2d %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, groups = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
  %0 = mp.conv2d %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 2 : i64} : (tensor<2x4x16x16xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<2x8x8x8xf32>
  return %0 : tensor<2x8x8x8xf32>
}

// -----

// CHECK-LABEL: func.func @binary$broadcast
func.func @binary$broadcast(%a: tensor<8x64xf32>, %b: tensor<64xf32>, %s: tensor<f32>) -> tensor<8x64xf32> {
  // CHECK: mp.add %{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  %0 = mp.add %a, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
  // CHECK: mp.sub {{.*}} : tensor<64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  %1 = mp.sub %b, %0 : tensor<64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  // CHECK: mp.mul {{.*}} : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32>
  %2 = mp.mul %1, %s : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32>
  // CHECK: mp.div
  %3 = mp.div %2, %a : tensor<8x64xf32>, tensor<8x64xf32> -> tensor<8x64xf32>
  // CHECK: mp.pow
  %4 = mp.pow %3, %s : tensor<8x64xf32>, tensor<f32> -> tensor<8x64xf32>
  return %4 : tensor<8x64xf32>
}

// -----

// CHECK-LABEL: func.func @unary$all
func.func @unary$all(%x: tensor<4x4xbf16>) -> tensor<4x4xbf16> {
  // CHECK: mp.neg %{{.*}} : tensor<4x4xbf16>
  %0 = mp.neg %x : tensor<4x4xbf16>
  // CHECK: mp.relu
  %1 = mp.relu %0 : tensor<4x4xbf16>
  // CHECK: mp.gelu %{{.*}} : tensor<4x4xbf16>
  %2 = mp.gelu %1 : tensor<4x4xbf16>
  // CHECK: mp.gelu %{{.*}} approximate tanh : tensor<4x4xbf16>
  %3 = mp.gelu %2 approximate tanh : tensor<4x4xbf16>
  // CHECK: mp.tanh
  %4 = mp.tanh %3 : tensor<4x4xbf16>
  // CHECK: mp.sigmoid
  %sg = mp.sigmoid %4 : tensor<4x4xbf16>
  // CHECK: mp.silu %{{.*}} : tensor<4x4xbf16>
  %5 = mp.silu %sg : tensor<4x4xbf16>
  // CHECK: mp.exp
  %6 = mp.exp %5 : tensor<4x4xbf16>
  // CHECK: mp.log
  %7 = mp.log %6 : tensor<4x4xbf16>
  // CHECK: mp.sqrt
  %8 = mp.sqrt %7 : tensor<4x4xbf16>
  // CHECK: mp.rsqrt
  %9 = mp.rsqrt %8 : tensor<4x4xbf16>
  // CHECK: mp.erf
  %10 = mp.erf %9 : tensor<4x4xbf16>
  // CHECK: mp.reciprocal
  %11 = mp.reciprocal %10 : tensor<4x4xbf16>
  return %11 : tensor<4x4xbf16>
}

// -----

// CHECK-LABEL: func.func @where$mask
func.func @where$mask(%m: tensor<16x16xi1>, %s: tensor<2x4x16x16xf32>, %fill: tensor<f32>) -> tensor<2x4x16x16xf32> {
  // CHECK: mp.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  %0 = mp.where %m, %s, %fill : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16x16xf32>
  return %0 : tensor<2x4x16x16xf32>
}

// -----

// CHECK-LABEL: func.func @softmax$f32_output
func.func @softmax$f32_output(%x: tensor<8x10xbf16>) -> (tensor<8x10xf32>, tensor<8x10xbf16>) {
  // CHECK: mp.softmax %{{.*}} {acc_type = f32, axis = 1 : i64} : tensor<8x10xbf16> -> tensor<8x10xf32>
  %0 = mp.softmax %x {axis = 1 : i64, acc_type = f32} : tensor<8x10xbf16> -> tensor<8x10xf32>
  // CHECK: mp.log_softmax %{{.*}} {axis = 0 : i64} : tensor<8x10xbf16> -> tensor<8x10xbf16>
  %1 = mp.log_softmax %x {axis = 0 : i64} : tensor<8x10xbf16> -> tensor<8x10xbf16>
  return %0, %1 : tensor<8x10xf32>, tensor<8x10xbf16>
}

// -----

// CHECK-LABEL: func.func @norms$all
func.func @norms$all(%x: tensor<2x16x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>, %g2: tensor<16x64xf32>,
                     %img: tensor<2x8x4x4xf32>, %c: tensor<8xf32>) -> (tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x8x4x4xf32>) {
  // CHECK: mp.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  %0 = mp.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x16x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: mp.layer_norm %{{.*}}, %{{.*}} {axis = 1 : i64
  %1 = mp.layer_norm %x, %g2 {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x16x64xf32>, tensor<16x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: mp.rms_norm %{{.*}}, %{{.*}} {axis = 2 : i64
  %2 = mp.rms_norm %x, %g {axis = 2 : i64, epsilon = 1.0e-06 : f32} : (tensor<2x16x64xf32>, tensor<64xf32>) -> tensor<2x16x64xf32>
  // CHECK: mp.rms_norm %{{.*}} {axis = 2 : i64
  %3 = mp.rms_norm %x {axis = 2 : i64, epsilon = 1.0e-06 : f32} : (tensor<2x16x64xf32>) -> tensor<2x16x64xf32>
  // CHECK: mp.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32}
  %4 = mp.batch_norm %img, %c, %c, %c, %c {epsilon = 1.0e-05 : f32} : (tensor<2x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8x4x4xf32>
  return %0, %1, %2, %3, %4 : tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x16x64xf32>, tensor<2x8x4x4xf32>
}

// -----

// CHECK-LABEL: func.func @reduce$keepdims_and_not
func.func @reduce$keepdims_and_not(%x: tensor<2x8x64xf32>) -> (tensor<2x8x1xf32>, tensor<8xf32>, tensor<1x1x1xf32>) {
  // CHECK: mp.reduce_sum %{{.*}} {axes = array<i64: 2>} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
  %0 = mp.reduce_sum %x {axes = array<i64: 2>} : tensor<2x8x64xf32> -> tensor<2x8x1xf32>
  // CHECK: mp.reduce_mean %{{.*}} {axes = array<i64: 0, 2>, keepdims = false} : tensor<2x8x64xf32> -> tensor<8xf32>
  %1 = mp.reduce_mean %x {axes = array<i64: 0, 2>, keepdims = false} : tensor<2x8x64xf32> -> tensor<8xf32>
  // CHECK: mp.reduce_max %{{.*}} {axes = array<i64: 0, 1, 2>} : tensor<2x8x64xf32> -> tensor<1x1x1xf32>
  %2 = mp.reduce_max %x {axes = array<i64: 0, 1, 2>, keepdims = true} : tensor<2x8x64xf32> -> tensor<1x1x1xf32>
  return %0, %1, %2 : tensor<2x8x1xf32>, tensor<8xf32>, tensor<1x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @movement$all
func.func @movement$all(%x: tensor<2x16x64xf32>, %y: tensor<2x16x32xf32>, %ids: tensor<3x5xi64>) -> (tensor<2x4x16x16xf32>, tensor<2x16x96xf32>, tensor<2x8x30xf32>, tensor<2x3x5x64xf32>) {
  // CHECK: mp.reshape %{{.*}} : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  %0 = mp.reshape %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  // CHECK: mp.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  %1 = mp.transpose %0 {perm = array<i64: 0, 2, 1, 3>} : tensor<2x16x4x16xf32> -> tensor<2x4x16x16xf32>
  // CHECK: mp.concat %{{.*}}, %{{.*}} {axis = 2 : i64} : (tensor<2x16x64xf32>, tensor<2x16x32xf32>) -> tensor<2x16x96xf32>
  %2 = mp.concat %x, %y {axis = 2 : i64} : (tensor<2x16x64xf32>, tensor<2x16x32xf32>) -> tensor<2x16x96xf32>
  // CHECK: mp.slice %{{.*}} {starts = array<i64: 0, 15, 63>, steps = array<i64: 1, -2, -2>} : tensor<2x16x64xf32> -> tensor<2x8x30xf32>
  %3 = mp.slice %x {starts = array<i64: 0, 15, 63>, steps = array<i64: 1, -2, -2>} : tensor<2x16x64xf32> -> tensor<2x8x30xf32>
  // CHECK: mp.gather %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x16x64xf32>, tensor<3x5xi64>) -> tensor<2x3x5x64xf32>
  %4 = mp.gather %x, %ids {axis = 1 : i64} : (tensor<2x16x64xf32>, tensor<3x5xi64>) -> tensor<2x3x5x64xf32>
  return %1, %2, %3, %4 : tensor<2x4x16x16xf32>, tensor<2x16x96xf32>, tensor<2x8x30xf32>, tensor<2x3x5x64xf32>
}

// -----

// CHECK-LABEL: func.func @pool$max_and_avg
func.func @pool$max_and_avg(%x: tensor<2x8x16x16xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x8x6x6xf32>) {
  // CHECK: mp.max_pool2d %{{.*}} {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : tensor<2x8x16x16xf32> -> tensor<2x8x8x8xf32>
  %0 = mp.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<2x8x16x16xf32> -> tensor<2x8x8x8xf32>
  // CHECK: mp.avg_pool2d %{{.*}} {ceil_mode = true, count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 3, 3>} : tensor<2x8x16x16xf32> -> tensor<2x8x6x6xf32>
  %1 = mp.avg_pool2d %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = true, count_include_pad = true} : tensor<2x8x16x16xf32> -> tensor<2x8x6x6xf32>
  return %0, %1 : tensor<2x8x8x8xf32>, tensor<2x8x6x6xf32>
}

// -----

// CHECK-LABEL: func.func @fp8$quantize_dequantize_amax
func.func @fp8$quantize_dequantize_amax(%x: tensor<8x64xbf16>) -> tensor<8x64xf32> {
  // CHECK: %[[AMAX:.*]] = mp.amax %{{.*}} : tensor<8x64xbf16> -> tensor<f32>
  %a = mp.amax %x : tensor<8x64xbf16> -> tensor<f32>
  // CHECK: %[[Q:.*]] = mp.quantize %{{.*}}, %[[AMAX]] : (tensor<8x64xbf16>, tensor<f32>) -> tensor<8x64xf8E4M3FN>
  %q = mp.quantize %x, %a : (tensor<8x64xbf16>, tensor<f32>) -> tensor<8x64xf8E4M3FN>
  // CHECK: mp.dequantize %[[Q]], %[[AMAX]] : (tensor<8x64xf8E4M3FN>, tensor<f32>) -> tensor<8x64xf32>
  %d = mp.dequantize %q, %a : (tensor<8x64xf8E4M3FN>, tensor<f32>) -> tensor<8x64xf32>
  return %d : tensor<8x64xf32>
}

// -----

// Names and reasons survive the round trip.
// CHECK-LABEL: func.func @attrs$name_and_reason
// CHECK-SAME: mp.name = "x"
func.func @attrs$name_and_reason(%x: tensor<4xf32> {mp.name = "x"}) -> (tensor<4xf32> {mp.name = "y"}) {
  // CHECK: mp.relu %{{.*}} {mp.reason = "follow:widest-input"} : tensor<4xf32>
  %0 = mp.relu %x {mp.reason = "follow:widest-input"} : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @fp8$scaled_gemms
func.func @fp8$scaled_gemms(%x: tensor<8x64xbf16>, %qw: tensor<32x64xf8E4M3FN>, %qv: tensor<64x16xf8E5M2>, %sw: tensor<f32>, %b: tensor<32xbf16>) -> (tensor<8x32xbf16>, tensor<8x16xf32>) {
  %a = mp.amax %x : tensor<8x64xbf16> -> tensor<f32>
  // CHECK: mp.fp8_scale %{{.*}} {format = f8E4M3FN, margin = 2 : i64} : tensor<f32> -> tensor<f32>
  %s = mp.fp8_scale %a {format = f8E4M3FN, margin = 2 : i64} : tensor<f32> -> tensor<f32>
  %q = mp.quantize %x, %s : (tensor<8x64xbf16>, tensor<f32>) -> tensor<8x64xf8E4M3FN>
  // CHECK: mp.scaled_linear %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {transpose_weight = true} : (tensor<8x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>) -> tensor<8x32xbf16>
  %0 = mp.scaled_linear %q, %qw, %s, %sw, %b {transpose_weight = true} : (tensor<8x64xf8E4M3FN>, tensor<32x64xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<32xbf16>) -> tensor<8x32xbf16>
  // CHECK: mp.scaled_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {acc_type = f32} : (tensor<8x64xf8E4M3FN>, tensor<64x16xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<8x16xf32>
  %1 = mp.scaled_matmul %q, %qv, %s, %sw {acc_type = f32} : (tensor<8x64xf8E4M3FN>, tensor<64x16xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<8x16xf32>
  return %0, %1 : tensor<8x32xbf16>, tensor<8x16xf32>
}

// -----

// Predicates, logic and the math ops of ONNX (issue 10).
// CHECK-LABEL: func.func @ew$predicates_and_math
func.func @ew$predicates_and_math(%x: tensor<4x8xf32>, %y: tensor<8xbf16>, %i: tensor<4x8xi64>, %j: tensor<i64>, %m: tensor<4x8xi1>) -> (tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) {
  // CHECK: mp.less_or_equal %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xbf16> -> tensor<4x8xi1>
  %0 = mp.less_or_equal %x, %y : tensor<4x8xf32>, tensor<8xbf16> -> tensor<4x8xi1>
  // CHECK: mp.equal %{{.*}}, %{{.*}} : tensor<4x8xi64>, tensor<i64> -> tensor<4x8xi1>
  %1 = mp.equal %i, %j : tensor<4x8xi64>, tensor<i64> -> tensor<4x8xi1>
  // CHECK: mp.xor %{{.*}}, %{{.*}} : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  %2 = mp.xor %0, %1 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  // CHECK: mp.not %{{.*}} : tensor<4x8xi1>
  %3 = mp.not %2 : tensor<4x8xi1>
  // CHECK: mp.is_inf %{{.*}} {detect_negative = false} : tensor<4x8xf32> -> tensor<4x8xi1>
  %4 = mp.is_inf %x {detect_negative = false} : tensor<4x8xf32> -> tensor<4x8xi1>
  // CHECK: mp.is_nan %{{.*}} : tensor<4x8xf32> -> tensor<4x8xi1>
  %5 = mp.is_nan %x : tensor<4x8xf32> -> tensor<4x8xi1>
  %6 = mp.or %4, %5 : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  %7 = mp.and %6, %m : tensor<4x8xi1>, tensor<4x8xi1> -> tensor<4x8xi1>
  // CHECK: mp.selu %{{.*}} {alpha = 1.500000e+00 : f32, gamma = 2.000000e+00 : f32} : tensor<4x8xf32>
  %8 = mp.selu %x {alpha = 1.5 : f32, gamma = 2.0 : f32} : tensor<4x8xf32>
  // CHECK: mp.leaky_relu %{{.*}} {alpha = 1.000000e-01 : f32} : tensor<4x8xf32>
  %9 = mp.leaky_relu %8 {alpha = 0.1 : f32} : tensor<4x8xf32>
  %10 = mp.sin %9 : tensor<4x8xf32>
  // CHECK: mp.prelu %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %s = mp.constant dense<0.25> : tensor<8xf32>
  %11 = mp.prelu %10, %s : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: mp.fmod %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %12 = mp.fmod %11, %s : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  // CHECK: mp.hard_sigmoid %{{.*}} {alpha = 2.000000e-01 : f32, beta = 5.000000e-01 : f32} : tensor<4x8xf32>
  %13 = mp.hard_sigmoid %12 {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<4x8xf32>
  return %3, %7, %11, %13 : tensor<4x8xi1>, tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Index-driven ops (issue 10).
// CHECK-LABEL: func.func @indexing$ops
func.func @indexing$ops(%x: tensor<4x5x6xf32>, %i: tensor<4x2x6xi64>, %t: tensor<3x2xi32>,
                        %n: tensor<2x7xi64>) {
  // CHECK: mp.gather_elements %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x5x6xf32>, tensor<4x2x6xi64>) -> tensor<4x2x6xf32>
  %0 = mp.gather_elements %x, %i {axis = 1 : i64} : (tensor<4x5x6xf32>, tensor<4x2x6xi64>) -> tensor<4x2x6xf32>
  // CHECK: mp.gather_nd %{{.*}}, %{{.*}} : (tensor<4x5x6xf32>, tensor<3x2xi32>) -> tensor<3x6xf32>
  %1 = mp.gather_nd %x, %t {batch_dims = 0 : i64} : (tensor<4x5x6xf32>, tensor<3x2xi32>) -> tensor<3x6xf32>
  // CHECK: mp.arg_max %{{.*}} {axis = 2 : i64, keepdims = false} : tensor<4x5x6xf32> -> tensor<4x5xi64>
  %2 = mp.arg_max %x {axis = 2 : i64, keepdims = false} : tensor<4x5x6xf32> -> tensor<4x5xi64>
  // CHECK: mp.arg_min %{{.*}} {axis = 0 : i64, select_last_index = true} : tensor<2x7xi64> -> tensor<1x7xi64>
  %3 = mp.arg_min %n {axis = 0 : i64, select_last_index = true} : tensor<2x7xi64> -> tensor<1x7xi64>
  // CHECK: mp.topk %{{.*}} {axis = 1 : i64, k = 3 : i64, largest = false} : tensor<4x5x6xf32> -> (tensor<4x3x6xf32>, tensor<4x3x6xi64>)
  %4:2 = mp.topk %x {axis = 1 : i64, k = 3 : i64, largest = false} : tensor<4x5x6xf32> -> (tensor<4x3x6xf32>, tensor<4x3x6xi64>)
  // CHECK: mp.cumsum %{{.*}} {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x7xi64> -> tensor<2x7xi64>
  %5 = mp.cumsum %n {axis = 1 : i64, exclusive = true, reverse = true} : tensor<2x7xi64> -> tensor<2x7xi64>
  // CHECK: mp.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "add"} : (tensor<4x5x6xf32>, tensor<3x2xi32>, tensor<3x6xf32>) -> tensor<4x5x6xf32>
  %6 = mp.scatter_nd %x, %t, %1 {reduction = "add"} : (tensor<4x5x6xf32>, tensor<3x2xi32>, tensor<3x6xf32>) -> tensor<4x5x6xf32>
  // CHECK: mp.reduce_prod %{{.*}} {axes = array<i64: 0, 2>, keepdims = false} : tensor<4x5x6xf32> -> tensor<5xf32>
  %7 = mp.reduce_prod %x {axes = array<i64: 0, 2>, keepdims = false} : tensor<4x5x6xf32> -> tensor<5xf32>
  return
}

// -----

// The N-D window ops: 3-D conv, 2-D transposed conv, 3-D pooling, indices.
// CHECK-LABEL: func.func @window$nd
func.func @window$nd(%x: tensor<1x2x8x8x8xf32>, %w: tensor<4x2x3x3x3xf32>, %y: tensor<1x1x3x3xf32>, %wt: tensor<1x2x3x3xf32>, %b: tensor<2xf32>) -> (tensor<1x4x8x8x8xf32>, tensor<1x2x9x6xf32>, tensor<1x2x4x4x4xf32>, tensor<1x2x3x3x3xf32>, tensor<1x2x4x4x4xi64>) {
  // CHECK: mp.conv %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1, 1>, pads = array<i64: 1, 1, 1, 1, 1, 1>, strides = array<i64: 1, 1, 1>} : (tensor<1x2x8x8x8xf32>, tensor<4x2x3x3x3xf32>) -> tensor<1x4x8x8x8xf32>
  %0 = mp.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 1, 1, 1, 1, 1, 1>, dilations = array<i64: 1, 1, 1>} : (tensor<1x2x8x8x8xf32>, tensor<4x2x3x3x3xf32>) -> tensor<1x4x8x8x8xf32>
  // CHECK: mp.conv_transpose %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, pads = array<i64: 1, 0, 0, 1>, strides = array<i64: 3, 2>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x9x6xf32>
  %1 = mp.conv_transpose %y, %wt, %b {strides = array<i64: 3, 2>, pads = array<i64: 1, 0, 0, 1>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>} : (tensor<1x1x3x3xf32>, tensor<1x2x3x3xf32>, tensor<2xf32>) -> tensor<1x2x9x6xf32>
  // CHECK: mp.max_pool %{{.*}} {dilations = array<i64: 1, 1, 1>, kernel_shape = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 2, 2, 2>} : tensor<1x2x8x8x8xf32> -> tensor<1x2x4x4x4xf32>
  %2 = mp.max_pool %x {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>} : tensor<1x2x8x8x8xf32> -> tensor<1x2x4x4x4xf32>
  // CHECK: mp.avg_pool %{{.*}} {ceil_mode = true, count_include_pad = true, dilations = array<i64: 2, 2, 2>, kernel_shape = array<i64: 2, 2, 2>, pads = array<i64: 1, 1, 1, 1, 1, 1>, strides = array<i64: 3, 3, 3>} : tensor<1x2x8x8x8xf32> -> tensor<1x2x3x3x3xf32>
  %3 = mp.avg_pool %x {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 3, 3, 3>, pads = array<i64: 1, 1, 1, 1, 1, 1>, dilations = array<i64: 2, 2, 2>, ceil_mode = true, count_include_pad = true} : tensor<1x2x8x8x8xf32> -> tensor<1x2x3x3x3xf32>
  // CHECK: mp.max_pool_indices %{{.*}} {dilations = array<i64: 1, 1, 1>, kernel_shape = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, storage_order = 1 : i64, strides = array<i64: 2, 2, 2>} : tensor<1x2x8x8x8xf32> -> tensor<1x2x4x4x4xi64>
  %4 = mp.max_pool_indices %x {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>, storage_order = 1 : i64} : tensor<1x2x8x8x8xf32> -> tensor<1x2x4x4x4xi64>
  return %0, %1, %2, %3, %4 : tensor<1x4x8x8x8xf32>, tensor<1x2x9x6xf32>, tensor<1x2x4x4x4xf32>, tensor<1x2x3x3x3xf32>, tensor<1x2x4x4x4xi64>
}

// -----

// Integer element-wise ops (issue 10: exact at run time), an integer power
// by a float exponent, the floor remainder on both kinds.
// CHECK-LABEL: func.func @integer_ops
// CHECK: mp.pow %arg0, %arg2 : tensor<4xi64>, tensor<4xf32> -> tensor<4xi64>
// CHECK: mp.mod %arg0, %arg1 : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
// CHECK: mp.mod %arg2, %arg2 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: mp.neg %{{.*}} : tensor<4xi32>
// CHECK: mp.where %{{.*}}, %arg0, %arg1 : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
func.func @integer_ops(%a: tensor<4xi64>, %b: tensor<4xi64>, %e: tensor<4xf32>, %c: tensor<4xi32>) -> (tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<4xi32>, tensor<4xi64>) {
  %0 = mp.pow %a, %e : tensor<4xi64>, tensor<4xf32> -> tensor<4xi64>
  %1 = mp.mod %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  %2 = mp.mod %e, %e : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %3 = mp.neg %c : tensor<4xi32>
  %m = mp.less %a, %b : tensor<4xi64>, tensor<4xi64> -> tensor<4xi1>
  %4 = mp.where %m, %a, %b : (tensor<4xi1>, tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1, %2, %3, %4 : tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<4xi32>, tensor<4xi64>
}
