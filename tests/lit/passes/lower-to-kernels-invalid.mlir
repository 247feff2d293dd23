// RUN: mixprec-opt --split-input-file --verify-diagnostics --mp-lower-to-kernels %s

// An op the lowering cannot express is an error at its location, never a
// kernel that computes something else. A softmax over a leading axis has no
// row in a kernel (alone, it is a routine: lower-to-kernels.mlir); fused
// by hand, it used to become a kernel whose "rows" were single points.
func.func @invalid$softmax_leading_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = mp.fusion reduction(%x) {ops = ["sm", "neg"]} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @+1 {{failed to legalize operation 'mp.softmax' that was explicitly marked illegal}}
    %0 = mp.softmax %a {axis = 0 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
    %1 = mp.neg %0 : tensor<4x8xf32>
    mp.yield %1 : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

// Two row reductions over different rows cannot share one kernel: the
// kernel's row is the first one's.
func.func @invalid$two_rows(%x: tensor<4x8xf32>) -> tensor<4x1x1xf32> {
  %y = mp.fusion reduction(%x) {ops = ["sm", "sum"]} : (tensor<4x8xf32>) -> tensor<4x1x1xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %0 = mp.softmax %a {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
    %1 = mp.reshape %0 : tensor<4x8xf32> -> tensor<4x2x4xf32>
    // expected-error @+1 {{failed to legalize operation 'mp.reduce_sum' that was explicitly marked illegal}}
    %2 = mp.reduce_sum %1 {axes = array<i64: 1, 2>} : tensor<4x2x4xf32> -> tensor<4x1x1xf32>
    mp.yield %2 : tensor<4x1x1xf32>
  }
  return %y : tensor<4x1x1xf32>
}

// -----

// A data-movement op has no expression-program instruction.
func.func @invalid$transpose_in_kernel(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %y = mp.fusion elementwise(%x) {ops = ["relu", "t"]} : (tensor<4x8xf32>) -> tensor<8x4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %0 = mp.relu %a : tensor<4x8xf32>
    // expected-error @+1 {{failed to legalize operation 'mp.transpose' that was explicitly marked illegal}}
    %1 = mp.transpose %0 {perm = array<i64: 1, 0>} : tensor<4x8xf32> -> tensor<8x4xf32>
    mp.yield %1 : tensor<8x4xf32>
  }
  return %y : tensor<8x4xf32>
}

// -----

// A reduction without keepdims gives fewer dims than its row value; only
// the kernel's store may read it.
func.func @invalid$dropped_row_value_read(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %y = mp.fusion reduction(%x) {ops = ["sum", "neg"]} : (tensor<4x8xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    // expected-error @+1 {{failed to legalize operation 'mp.reduce_sum' that was explicitly marked illegal}}
    %0 = mp.reduce_sum %a {axes = array<i64: 1>, keepdims = false} : tensor<4x8xf32> -> tensor<4xf32>
    %1 = mp.neg %0 : tensor<4xf32>
    mp.yield %1 : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}

// -----

// A GEMM fusion holds a GEMM.
func.func @invalid$gemm_fusion_without_gemm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{failed to legalize operation 'mp.fusion'}}
  %y = mp.fusion gemm(%x) {ops = ["relu"]} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %0 = mp.relu %a : tensor<4x8xf32>
    mp.yield %0 : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}

// -----

// This one is valid: the same softmax over the last axis is a row kernel.
func.func @valid$softmax_last_axis(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %y = mp.fusion reduction(%x) {ops = ["sm", "neg"]} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a: tensor<4x8xf32>):
    %0 = mp.softmax %a {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32>
    %1 = mp.neg %0 : tensor<4x8xf32>
    mp.yield %1 : tensor<4x8xf32>
  }
  return %y : tensor<4x8xf32>
}
