// RUN: mixprec-opt --split-input-file --mp-tie-transposed-weights %s | FileCheck %s

// A GEMM weight that is exactly the transpose of another constant is read
// through that constant with the transpose flag flipped; the copy goes.

// CHECK-LABEL: func.func @matmul_copy
// CHECK: %[[T:.*]] = mp.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT: mp.constant
// CHECK: mp.gather %[[T]]
// CHECK: %{{.*}} = mp.linear %{{.*}}, %[[T]] {acc_type = f32, transpose_weight = true} : (tensor<1x4x2xf32>, tensor<3x2xf32>) -> tensor<1x4x3xf32>
func.func @matmul_copy(%ids: tensor<1x4xi64>) -> tensor<1x4x3xf32> {
  %t = mp.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %h = mp.constant dense<[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]> : tensor<2x3xf32>
  %e = mp.gather %t, %ids {axis = 0 : i64} : (tensor<3x2xf32>, tensor<1x4xi64>) -> tensor<1x4x2xf32>
  %y = mp.matmul %e, %h {acc_type = f32} : (tensor<1x4x2xf32>, tensor<2x3xf32>) -> tensor<1x4x3xf32>
  return %y : tensor<1x4x3xf32>
}

// -----

// A linear that already reads its weight transposed reads the original
// plainly; a constant defined after the copy moves up to serve it.

// CHECK-LABEL: func.func @linear_copy
// CHECK: %[[T:.*]] = mp.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00], [5.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK: %[[Y:.*]] = mp.linear %arg0, %[[T]] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
// CHECK: mp.gather %[[T]]
func.func @linear_copy(%x: tensor<4x3xf32>, %ids: tensor<4xi64>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %h = mp.constant dense<[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]> : tensor<2x3xf32>
  %y = mp.linear %x, %h {transpose_weight = true} : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  %t = mp.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %e = mp.gather %t, %ids {axis = 0 : i64} : (tensor<3x2xf32>, tensor<4xi64>) -> tensor<4x2xf32>
  return %y, %e : tensor<4x2xf32>, tensor<4x2xf32>
}

// -----

// Not the transpose (one value differs), a copy with a non-GEMM reader, a
// 1-D left operand (no mp.linear form): nothing changes.

// CHECK-LABEL: func.func @untouched
// CHECK-COUNT-3: mp.constant
// CHECK: mp.matmul
// CHECK: mp.tanh
// CHECK: mp.matmul
func.func @untouched(%x: tensor<4x2xf32>, %v: tensor<2xf32>) -> (tensor<4x3xf32>, tensor<2x3xf32>, tensor<3xf32>) {
  %t = mp.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %almost = mp.constant dense<[[1.0, 3.0, 5.0], [2.0, 4.0, 7.0]]> : tensor<2x3xf32>
  %h = mp.constant dense<[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]> : tensor<2x3xf32>
  %y = mp.matmul %x, %almost : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %a = mp.tanh %h : tensor<2x3xf32>
  %z = mp.matmul %v, %h : (tensor<2xf32>, tensor<2x3xf32>) -> tensor<3xf32>
  return %y, %a, %z : tensor<4x3xf32>, tensor<2x3xf32>, tensor<3xf32>
}

// -----

// Empty weights have nothing to share (and no element to sample).

// CHECK-LABEL: func.func @empty
// CHECK-COUNT-2: mp.constant
// CHECK: mp.matmul
func.func @empty(%x: tensor<4x0xf32>) -> (tensor<4x3xf32>, tensor<3x0xf32>) {
  %w = mp.constant dense<> : tensor<0x3xf32>
  %t = mp.constant dense<> : tensor<3x0xf32>
  %y = mp.matmul %x, %w : (tensor<4x0xf32>, tensor<0x3xf32>) -> tensor<4x3xf32>
  return %y, %t : tensor<4x3xf32>, tensor<3x0xf32>
}
