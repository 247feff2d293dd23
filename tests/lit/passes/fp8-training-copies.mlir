// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd" %s | mixprec-opt --mp-precision-pipeline="precision=fp8 fp8-scaling=delayed" | FileCheck %s
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd" %s | mixprec-opt --mp-precision-pipeline="precision=fp8 fp8-scaling=delayed" | FileCheck %s --check-prefix=GEMM
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd" %s | mixprec-opt --mp-precision-pipeline="precision=fp8 fp8-scaling=delayed" | FileCheck %s --check-prefix=W1
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd" %s | mixprec-opt --mp-precision-pipeline="precision=fp8 fp8-scaling=delayed" | FileCheck %s --check-prefix=W2
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd" %s | mixprec-opt --mp-precision-pipeline="precision=fp8 fp8-scaling=delayed" | FileCheck %s --check-prefix=H

// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd" %s | mixprec-opt --mp-precision-pipeline="precision=fp8 fp8-scaling=block" | FileCheck %s --check-prefix=BLOCK
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd" %s | mixprec-opt --mp-precision-pipeline="precision=fp8 fp8-scaling=block" | FileCheck %s --check-prefix=BLOCKW

// One FP8 copy per value per step, as Transformer Engine keeps: the FP8
// training step of a two-layer MLP has 5 FP8 GEMMs (fc1 and fc2 forward,
// dH = dY W2^T, dW2 = H^T dY, dW1 = X^T dH) reading 10 operands, but only 6
// values: x, W1, W2 and H in f8E4M3FN, dY and dH in f8E5M2 (the hybrid
// format). Each is quantized once, with one delayed-scaling site (6 scale
// states); the GEMMs that read a transpose read the copy transposed in FP8.

// CHECK-LABEL: func.func @main
// CHECK-COUNT-6: mp.state = "fp8.{{[^"]*}}.scale"
// CHECK-NOT: mp.state = "fp8.{{[^"]*}}.scale"
// CHECK-COUNT-6: mp.quantize
// CHECK-NOT: mp.quantize
// GEMM-COUNT-5: mp.scaled_linear
// GEMM-NOT: mp.scaled_linear

// Block scaling (Float8BlockScaling): the weights keep one copy each
// (128x128 blocks serve both orientations: data and scales transposed), but
// an activation or gradient read transposed (x^T in dW1, H^T in dW2, dY and
// dH as [n, k] operands) is quantized along the other dim as a copy of its
// own, as Transformer Engine's rowwise and columnwise copies: 9 copies for
// the 6 values (x, H, dY twice; W1, W2, dH once).
// BLOCK-LABEL: func.func @main
// BLOCK-COUNT-9: mp.block_quantize
// BLOCK-NOT: mp.block_quantize
// BLOCKW-LABEL: func.func @main
// BLOCKW-SAME: %[[FIRST:arg[0-9]+]]: tensor<16x32xf32> {mp.name = "fc1.weight"
// BLOCKW-SAME: %[[SECOND:arg[0-9]+]]: tensor<32x16xf32> {mp.name = "fc2.weight"
// BLOCKW-COUNT-1: mp.block_quantize %[[SECOND]], %{{.*}} {block = array<i64: 128, 128>}
// BLOCKW-COUNT-1: mp.block_quantize %[[FIRST]], %{{.*}} {block = array<i64: 128, 128>}
// BLOCKW-NOT: mp.block_quantize %[[FIRST]],
// BLOCKW-NOT: mp.block_quantize %[[SECOND]],

// The weights (training state): one quantize each, right after nothing (a
// block argument's copy opens the step), read by every GEMM that uses them.
// W1-LABEL: func.func @main
// W1-SAME: %[[W1:arg[0-9]+]]: tensor<16x32xf32> {mp.name = "fc1.weight"
// W1: %[[Q:.*]] = mp.quantize %[[W1]], %{{.*}} -> tensor<16x32xf8E4M3FN>
// W1-NOT: mp.quantize %[[W1]],
// W1: mp.transpose %[[Q]] {perm = array<i64: 1, 0>} : tensor<16x32xf8E4M3FN> -> tensor<32x16xf8E4M3FN>

// W2-LABEL: func.func @main
// W2-SAME: %[[W2:arg[0-9]+]]: tensor<32x16xf32> {mp.name = "fc2.weight"
// W2: %[[Q:.*]] = mp.quantize %[[W2]], %{{.*}} -> tensor<32x16xf8E4M3FN>
// W2-NOT: mp.quantize %[[W2]],
// W2: mp.scaled_linear %{{.*}}, %[[Q]], {{.*}} -> tensor<32x32xbf16>
// W2-NOT: mp.quantize %[[W2]],

// The hidden activation relu(x W1) in bf16: the forward fc2 reads it
// widened, dW2 reads its transpose widened; one copy of the bf16 value.
// H-LABEL: func.func @main
// H: %[[H:.*]] = mp.relu %{{.*}} : tensor<32x32xbf16>
// H: %[[QH:.*]] = mp.quantize %[[H]], %{{.*}} : (tensor<32x32xbf16>, tensor<f32>) -> tensor<32x32xf8E4M3FN>
// H-NOT: mp.quantize %[[H]],
// H: mp.transpose %[[QH]]
// H-NOT: mp.quantize %[[H]],
func.func @main(%x: tensor<32x16xf32> {mp.name = "x"}) -> (tensor<32x16xf32> {mp.name = "y"}) {
  %w1 = mp.constant dense<0.0625> : tensor<16x32xf32> loc("fc1.weight")
  %w2 = mp.constant dense<-0.03125> : tensor<32x16xf32> loc("fc2.weight")
  %h = mp.matmul %x, %w1 : (tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<32x32xf32> loc("fc1")
  %r = mp.relu %h : tensor<32x32xf32> loc("relu")
  %y = mp.matmul %r, %w2 : (tensor<32x32xf32>, tensor<32x16xf32>) -> tensor<32x16xf32> loc("fc2")
  return %y : tensor<32x16xf32>
}
