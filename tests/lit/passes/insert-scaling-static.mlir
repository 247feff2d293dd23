// RUN: mixprec-opt --split-input-file --mp-insert-scaling=scaling=static %s | FileCheck %s

// Static scaling takes the calibrated amax where quantize reads it: past an
// exact widening (a cast the precision passes put after calibration, as in
// GPT-2's c_proj, whose FP8 input is cast(bf16 reshape)) and a 2-D
// transpose. amax 8 -> scale 448 / 8 = 56; no mp.amax at run time.

// CHECK-LABEL: func.func @fp8$static_past_widening
// CHECK-NOT: mp.amax
// CHECK: %[[R:.*]] = mp.relu
// CHECK: %[[S:.*]] = mp.constant dense<5.600000e+01> : tensor<f32>
// CHECK: mp.quantize %[[R]], %[[S]] : (tensor<4x2xbf16>, tensor<f32>) -> tensor<4x2xf8E4M3FN>
// CHECK-NOT: mp.amax
// CHECK: mp.scaled_linear
func.func @fp8$static_past_widening(%x: tensor<4x2xbf16>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r = mp.relu %x {mp.calib_amax = 8.0 : f32} : tensor<4x2xbf16>
  %c = mp.cast %r : tensor<4x2xbf16> -> tensor<4x2xf32>
  %0 = mp.matmul %c, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// CHECK-LABEL: func.func @fp8$static_past_transpose
// CHECK-NOT: mp.amax
// CHECK: mp.constant dense<5.600000e+01> : tensor<f32>
// CHECK-NOT: mp.amax
// CHECK: mp.scaled_linear
func.func @fp8$static_past_transpose(%x: tensor<2x4xf32>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r = mp.relu %x {mp.calib_amax = 8.0 : f32} : tensor<2x4xf32>
  %t = mp.transpose %r {perm = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
  %0 = mp.matmul %t, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// A calibrated value is quantized before the reshape between it and the
// GEMM (amax and quantize commute with a reshape): the quantize can then
// fuse into the value's producer; the FP8 copy is reshaped.
// CHECK-LABEL: func.func @fp8$static_before_reshape
// CHECK: %[[R:.*]] = mp.relu
// CHECK: %[[S:.*]] = mp.constant dense<5.600000e+01> : tensor<f32>
// CHECK: %[[Q:.*]] = mp.quantize %[[R]], %[[S]] : (tensor<1x4x2xbf16>, tensor<f32>) -> tensor<1x4x2xf8E4M3FN>
// CHECK: %[[QR:.*]] = mp.reshape %[[Q]] : tensor<1x4x2xf8E4M3FN> -> tensor<4x2xf8E4M3FN>
// CHECK: mp.scaled_linear %[[QR]]
func.func @fp8$static_before_reshape(%x: tensor<1x4x2xbf16>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r = mp.relu %x {mp.calib_amax = 8.0 : f32} : tensor<1x4x2xbf16>
  %s = mp.reshape %r : tensor<1x4x2xbf16> -> tensor<4x2xbf16>
  %c = mp.cast %s : tensor<4x2xbf16> -> tensor<4x2xf32>
  %0 = mp.matmul %c, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// A graph input read by an FP8 GEMM: its calibrated amax is an argument
// attribute (calibrate() puts it there).
// CHECK-LABEL: func.func @fp8$static_graph_input
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32> {mp.calib_amax = 8.000000e+00 : f32})
// CHECK-NOT: mp.amax
// CHECK: %[[S:.*]] = mp.constant dense<5.600000e+01> : tensor<f32>
// CHECK: mp.quantize %[[X]], %[[S]]
func.func @fp8$static_graph_input(%x: tensor<4x2xf32> {mp.calib_amax = 8.0 : f32}) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = mp.matmul %x, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}
