// RUN: mixprec-opt --split-input-file --mp-share-weights %s | FileCheck %s

// A tied embedding: the gather (FP32 only because its input is a
// constant) reads the BF16 copy the LM head's GEMM needs, and its result
// is widened back to FP32: the weight is stored once.

// CHECK-LABEL: func.func @tied
// CHECK: %[[W:.*]] = mp.constant dense<2.500000e-01> : tensor<50x16xf32>
// CHECK-NEXT: %[[WB:.*]] = mp.cast %[[W]] : tensor<50x16xf32> -> tensor<50x16xbf16>
// CHECK-NEXT: %[[G:.*]] = mp.gather %[[WB]], %{{.*}} {axis = 0 : i64, mp.precision = bf16, mp.reason = "follow:shared-weight"} : (tensor<50x16xbf16>, tensor<1x8xi64>) -> tensor<1x8x16xbf16>
// CHECK-NEXT: %[[E:.*]] = mp.cast %[[G]] : tensor<1x8x16xbf16> -> tensor<1x8x16xf32>
// CHECK-NEXT: %[[T:.*]] = mp.tanh %[[E]]
// CHECK-NOT: mp.cast %[[W]]
// CHECK: mp.linear %{{.*}}, %[[WB]]
func.func @tied(%ids: tensor<1x8xi64>) -> tensor<1x8x50xbf16> {
  %w = mp.constant dense<0.25> : tensor<50x16xf32>
  %e = mp.gather %w, %ids {axis = 0 : i64, mp.precision = f32, mp.reason = "follow:constant-inputs"} : (tensor<50x16xf32>, tensor<1x8xi64>) -> tensor<1x8x16xf32>
  %t = mp.tanh %e {mp.precision = f32, mp.reason = "follow:widest-input"} : tensor<1x8x16xf32>
  %tb = mp.cast %t : tensor<1x8x16xf32> -> tensor<1x8x16xbf16>
  %wb = mp.cast %w : tensor<50x16xf32> -> tensor<50x16xbf16>
  %y = mp.linear %tb, %wb {mp.precision = bf16, transpose_weight = true} : (tensor<1x8x16xbf16>, tensor<50x16xbf16>) -> tensor<1x8x50xbf16>
  return %y : tensor<1x8x50xbf16>
}

// -----

// A gather whose FP32 an override chose keeps it: both copies stay.

// CHECK-LABEL: func.func @kept
// CHECK: mp.gather %[[W:.*]], %{{.*}} {axis = 0 : i64, mp.precision = f32, mp.reason = "override:gather"} : (tensor<50x16xf32>
// CHECK: mp.cast %[[W]] : tensor<50x16xf32> -> tensor<50x16xbf16>
func.func @kept(%ids: tensor<1x8xi64>) -> (tensor<1x8x16xf32>, tensor<1x8x50xbf16>) {
  %w = mp.constant dense<0.25> : tensor<50x16xf32>
  %e = mp.gather %w, %ids {axis = 0 : i64, mp.precision = f32, mp.reason = "override:gather"} : (tensor<50x16xf32>, tensor<1x8xi64>) -> tensor<1x8x16xf32>
  %eb = mp.cast %e : tensor<1x8x16xf32> -> tensor<1x8x16xbf16>
  %wb = mp.cast %w : tensor<50x16xf32> -> tensor<50x16xbf16>
  %y = mp.linear %eb, %wb {mp.precision = bf16, transpose_weight = true} : (tensor<1x8x16xbf16>, tensor<50x16xbf16>) -> tensor<1x8x50xbf16>
  return %e, %y : tensor<1x8x16xf32>, tensor<1x8x50xbf16>
}

// -----

// An FP32 reader that is not data movement needs the FP32 weight: nothing
// to share.

// CHECK-LABEL: func.func @fp32_reader
// CHECK: mp.gather %[[W:.*]], %{{.*}} {{.*}}mp.reason = "follow:constant-inputs"
// CHECK: mp.add %[[W]]
func.func @fp32_reader(%ids: tensor<1x8xi64>, %x: tensor<50x16xf32>) -> (tensor<1x8x16xf32>, tensor<50x16xf32>, tensor<1x8x50xbf16>) {
  %w = mp.constant dense<0.25> : tensor<50x16xf32>
  %e = mp.gather %w, %ids {axis = 0 : i64, mp.precision = f32, mp.reason = "follow:constant-inputs"} : (tensor<50x16xf32>, tensor<1x8xi64>) -> tensor<1x8x16xf32>
  %s = mp.add %w, %x {mp.precision = f32} : tensor<50x16xf32>, tensor<50x16xf32> -> tensor<50x16xf32>
  %eb = mp.cast %e : tensor<1x8x16xf32> -> tensor<1x8x16xbf16>
  %wb = mp.cast %w : tensor<50x16xf32> -> tensor<50x16xbf16>
  %y = mp.linear %eb, %wb {mp.precision = bf16, transpose_weight = true} : (tensor<1x8x16xbf16>, tensor<50x16xbf16>) -> tensor<1x8x50xbf16>
  return %e, %s, %y : tensor<1x8x16xf32>, tensor<50x16xf32>, tensor<1x8x50xbf16>
}
