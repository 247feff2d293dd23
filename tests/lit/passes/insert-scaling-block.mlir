// RUN: mixprec-opt --split-input-file --mp-insert-scaling=scaling=block %s | FileCheck %s
// RUN: mixprec-opt --split-input-file --mp-insert-scaling=scaling=mxfp8 %s | FileCheck %s --check-prefix=MX

// Block scaling of a linear layer with a constant weight: the activation
// gets 1x128 blocks at run time (200 columns: 2 blocks), the weight is
// quantized now with 128x128 blocks: amax 0.5 -> the largest power of two
// <= 448 / 0.5 = 896 is 512, so 0.5 -> 256. MXFP8: 1x32 blocks on both,
// 2^(8 - floor(log2 0.5)) = 512 too.

// CHECK-LABEL: func.func @linear_constant
// CHECK: %[[S:.*]] = mp.block_scale %[[X:.*]] {block = array<i64: 1, 128>, format = f8E4M3FN, recipe = "block"} : tensor<4x200xf32> -> tensor<4x2xf32>
// CHECK: %[[Q:.*]] = mp.block_quantize %[[X]], %[[S]] {block = array<i64: 1, 128>} : (tensor<4x200xf32>, tensor<4x2xf32>) -> tensor<4x200xf8E4M3FN>
// CHECK: %[[QW:.*]] = mp.constant dense<2.560000e+02> : tensor<3x200xf8E4M3FN>
// CHECK: %[[SW:.*]] = mp.constant dense<5.120000e+02> : tensor<1x2xf32>
// CHECK: mp.scaled_linear %[[Q]], %[[QW]], %[[S]], %[[SW]], %{{.*}} {acc_type = f32, input_block = array<i64: 1, 128>, mp.precision = f8E4M3FN, mp.reason = "policy:lowp", transpose_weight = true, weight_block = array<i64: 128, 128>}
// CHECK-NOT: mp.linear
// MX-LABEL: func.func @linear_constant
// MX: mp.block_scale %{{.*}} {block = array<i64: 1, 32>, format = f8E4M3FN, recipe = "mx"} : tensor<4x200xf32> -> tensor<4x7xf32>
// MX: mp.constant dense<2.560000e+02> : tensor<3x200xf8E4M3FN>
// MX: mp.constant dense<5.120000e+02> : tensor<3x7xf32>
// MX: mp.scaled_linear {{.*}}input_block = array<i64: 1, 32>{{.*}}weight_block = array<i64: 1, 32>
func.func @linear_constant(%x: tensor<4x200xf32>, %b: tensor<3xbf16>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<0.5> : tensor<3x200xf32>
  %0 = mp.linear %x, %w, %b {acc_type = f32, mp.precision = f8E4M3FN, mp.reason = "policy:lowp", transpose_weight = true} : (tensor<4x200xf32>, tensor<3x200xf32>, tensor<3xbf16>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// A weight that is state, read by two GEMMs as w ([k, n]: forward) and w^T
// (as in dX = dY W): one 128x128 copy, transposed with its scales for the
// second (the blocks are square). The activations get 1x128 blocks; a 3-D
// input keeps its leading dims in its scales. MXFP8 has 1-D blocks: the
// transposed read is a copy of its own, quantized along the other dim.

// CHECK-LABEL: func.func @state_weight
// CHECK-COUNT-1: mp.block_scale %arg2 {block = array<i64: 128, 128>
// CHECK-NOT: mp.block_scale %arg2
// CHECK: %[[QW:.*]] = mp.block_quantize %arg2, %[[SW:.*]] {block = array<i64: 128, 128>}
// CHECK: %[[QT:.*]] = mp.transpose %[[QW]] {perm = array<i64: 1, 0>} : tensor<64x40xf8E4M3FN> -> tensor<40x64xf8E4M3FN>
// CHECK: %[[ST:.*]] = mp.transpose %[[SW]] {perm = array<i64: 1, 0>} : tensor<1x1xf32> -> tensor<1x1xf32>
// CHECK: mp.scaled_linear %{{.*}}, %[[QT]], %{{.*}}, %[[ST]] {{.*}} : (tensor<2x4x64xf8E4M3FN>, tensor<40x64xf8E4M3FN>, tensor<2x4x1xf32>, tensor<1x1xf32>) -> tensor<2x4x40xbf16>
// CHECK: mp.scaled_linear %{{.*}}, %[[QW]], %{{.*}}, %[[SW]] {{.*}} : (tensor<2x4x40xf8E4M3FN>, tensor<64x40xf8E4M3FN>, tensor<2x4x1xf32>, tensor<1x1xf32>) -> tensor<2x4x64xbf16>
// MX-LABEL: func.func @state_weight
// MX: mp.block_scale %arg2 {block = array<i64: 1, 32>
// MX: %[[T:.*]] = mp.transpose %arg2 {perm = array<i64: 1, 0>} : tensor<64x40xf32> -> tensor<40x64xf32>
// MX: mp.block_scale %[[T]] {block = array<i64: 1, 32>
func.func @state_weight(%x: tensor<2x4x64xf32>, %y: tensor<2x4x40xf32>,
                        %w: tensor<64x40xf32> {mp.state = "w", mp.state_init = dense<1.0> : tensor<64x40xf32>})
    -> (tensor<2x4x40xbf16>, tensor<2x4x64xbf16>, tensor<64x40xf32> {mp.state_update = "w"}) {
  %0 = mp.matmul %x, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<2x4x64xf32>, tensor<64x40xf32>) -> tensor<2x4x40xbf16>
  %1 = mp.transpose %w {perm = array<i64: 1, 0>} : tensor<64x40xf32> -> tensor<40x64xf32>
  %2 = mp.matmul %y, %1 {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<2x4x40xf32>, tensor<40x64xf32>) -> tensor<2x4x64xbf16>
  return %0, %2, %w : tensor<2x4x40xbf16>, tensor<2x4x64xbf16>, tensor<64x40xf32>
}

// -----

// A batched matmul (rank-3 right operand: a training step's, which has an
// FP8 form through mp.grad_operands) has no block-scaled form: it
// keeps per-tensor current scaling.

// CHECK-LABEL: func.func @batched
// CHECK: mp.amax
// CHECK: mp.scaled_matmul
// CHECK-NOT: mp.block_scale
func.func @batched(%a: tensor<2x4x16xf32>, %b: tensor<2x16x16xf32>) -> tensor<2x4x16xbf16> {
  %0 = mp.matmul %a, %b {acc_type = f32, mp.grad_operands = array<i64: 0>, mp.precision = f8E4M3FN} : (tensor<2x4x16xf32>, tensor<2x16x16xf32>) -> tensor<2x4x16xbf16>
  return %0 : tensor<2x4x16xbf16>
}

// -----

// A vector input has no blocks over two dims: per-tensor current scaling.

// CHECK-LABEL: func.func @vector_input
// CHECK: mp.amax
// CHECK: mp.scaled_linear
// CHECK-NOT: mp.block_scale
func.func @vector_input(%x: tensor<64xf32>) -> tensor<32xbf16> {
  %w = mp.constant dense<0.5> : tensor<32x64xf32>
  %0 = mp.linear %x, %w {acc_type = f32, mp.precision = f8E4M3FN, transpose_weight = true} : (tensor<64xf32>, tensor<32x64xf32>) -> tensor<32xbf16>
  return %0 : tensor<32xbf16>
}
