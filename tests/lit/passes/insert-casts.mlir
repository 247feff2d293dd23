// RUN: mixprec-opt --split-input-file --mp-insert-casts %s | FileCheck %s

// A cast at every dtype boundary and nothing else: the graph input is
// cast once (shared by both consumers), results take their dtype, and the
// output is cast back because mp.keep_io_types is set.

// CHECK-LABEL: func.func @casts$keep_io
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-DAG: %[[XB:.*]] = mp.cast %[[X]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-DAG: %[[W:.*]] = mp.constant dense<5.000000e-01> : tensor<8x8xf32>
// CHECK-DAG: %[[WB:.*]] = mp.cast %[[W]] : tensor<8x8xf32> -> tensor<8x8xbf16>
// CHECK: %[[MM:.*]] = mp.matmul %[[XB]], %[[WB]] {{.*}} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[R:.*]] = mp.relu %[[XB]] {{.*}} : tensor<4x8xbf16>
// CHECK: %[[A:.*]] = mp.add %[[MM]], %[[R]] {{.*}} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
// CHECK: %[[AF:.*]] = mp.cast %[[A]] : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: %[[S:.*]] = mp.softmax %[[AF]] {{.*}} : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: return %[[S]] : tensor<4x8xf32>
func.func @casts$keep_io(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {mp.keep_io_types} {
  %w = mp.constant dense<0.5> : tensor<8x8xf32>
  %0 = mp.matmul %x, %w {mp.precision = bf16} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = mp.relu %x {mp.precision = bf16} : tensor<4x8xf32>
  %2 = mp.add %0, %1 {mp.precision = bf16} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = mp.softmax %2 {axis = 1 : i64, mp.precision = f32} : tensor<4x8xf32> -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// Without keep-io-types, inputs whose consumers agree take their dtype in
// the signature, and outputs keep the dtype they were computed in.

// CHECK-LABEL: func.func @casts$no_keep_io
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf16>, %[[Y:.*]]: tensor<4x8xf32>) -> (tensor<4x8xf16>, tensor<4x8xf32>)
// CHECK-NOT: mp.cast %[[X]]
// CHECK: %[[YH:.*]] = mp.cast %[[Y]] : tensor<4x8xf32> -> tensor<4x8xf16>
// CHECK-NOT: mp.cast %[[X]]
// CHECK: %[[A:.*]] = mp.relu %[[X]]
// CHECK: mp.add %[[A]], %[[YH]]
// CHECK: return %{{.*}}, %[[Y]] : tensor<4x8xf16>, tensor<4x8xf32>
func.func @casts$no_keep_io(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = mp.relu %x {mp.precision = f16} : tensor<4x8xf32>
  %1 = mp.add %0, %y {mp.precision = f16} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %1, %y : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Indices and masks are never cast; tf32 stores f32 (no cast at all).

// CHECK-LABEL: func.func @casts$non_float_and_tf32
// CHECK: %[[T:.*]] = mp.cast %{{.*}} : tensor<10x4xf32> -> tensor<10x4xbf16>
// CHECK: mp.gather %[[T]], %{{.*}} {{.*}} : (tensor<10x4xbf16>, tensor<3xi64>) -> tensor<3x4xbf16>
// CHECK: mp.where %{{.*}}, {{.*}} : (tensor<3x4xi1>, tensor<3x4xbf16>, tensor<3x4xbf16>) -> tensor<3x4xbf16>
// CHECK: mp.cast %{{.*}} : tensor<3x4xbf16> -> tensor<3x4xf32>
// CHECK-NOT: mp.cast
// CHECK: mp.linear {{.*}} : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
func.func @casts$non_float_and_tf32(%t: tensor<10x4xf32>, %i: tensor<3xi64>, %m: tensor<3x4xi1>, %z: tensor<3x4xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>) attributes {mp.keep_io_types} {
  %0 = mp.gather %t, %i {axis = 0 : i64, mp.precision = bf16} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %1 = mp.where %m, %0, %0 {mp.precision = bf16} : (tensor<3x4xi1>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %w = mp.constant dense<1.0> : tensor<4x4xf32>
  %2 = mp.linear %z, %w {mp.precision = tf32} : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %1, %2 : tensor<3x4xf32>, tensor<3x4xf32>
}

// -----

// FP8 GEMMs: operands meet in f32 for --mp-insert-scaling, the bias
// follows the bf16 output.

// CHECK-LABEL: func.func @casts$fp8_gemm
// CHECK: %[[B:.*]] = mp.cast %{{.*}} : tensor<8xf32> -> tensor<8xbf16>
// CHECK: %[[XF:.*]] = mp.cast %{{.*}} : tensor<4x8xbf16> -> tensor<4x8xf32>
// CHECK: mp.linear %[[XF]], %{{.*}}, %[[B]] {{.*}} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xbf16>) -> tensor<4x8xbf16>
func.func @casts$fp8_gemm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {mp.keep_io_types} {
  %w = mp.constant dense<0.5> : tensor<8x8xf32>
  %b = mp.constant dense<0.25> : tensor<8xf32>
  %0 = mp.relu %x {mp.precision = bf16} : tensor<4x8xf32>
  %1 = mp.linear %0, %w, %b {mp.precision = f8E4M3FN} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
