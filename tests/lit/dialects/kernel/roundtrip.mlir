// RUN: mixprec-opt --split-input-file %s | FileCheck %s
// RUN: mixprec-opt --split-input-file --mlir-print-op-generic %s | mixprec-opt --split-input-file | FileCheck %s

// Every mpk op prints as it parses, in the custom and the generic form.

// A softmax in its kernel form: row primitives and element-wise
// instructions whose operands may differ in dtype.
// CHECK-LABEL: func.func @kernel$row_reduction
// CHECK: %[[Y:.*]] = mpk.kernel(%{{.*}}) {ops = ["sm"], row_dims = 1 : i64, shape = array<i64: 8, 64>} : (tensor<8x64xbf16>) -> tensor<8x64xbf16> {
// CHECK: ^bb0(%[[A:.*]]: tensor<8x64xbf16>):
// CHECK:   %[[M:.*]] = mpk.row_reduce max %[[A]] : tensor<8x64xbf16> -> tensor<8x1xf32>
// CHECK:   %[[D:.*]] = mpk.elementwise sub %[[A]], %[[M]] : (tensor<8x64xbf16>, tensor<8x1xf32>) -> tensor<8x64xf32>
// CHECK:   %[[E:.*]] = mp.exp %[[D]] : tensor<8x64xf32>
// CHECK:   %[[S:.*]] = mpk.row_reduce sum %[[E]] : tensor<8x64xf32> -> tensor<8x1xf32>
// CHECK:   %[[P:.*]] = mpk.elementwise div %[[E]], %[[S]] : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x64xbf16>
// CHECK:   mpk.yield %[[P]] : tensor<8x64xbf16>
// CHECK: return %[[Y]]
func.func @kernel$row_reduction(%x: tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  %y = mpk.kernel(%x) {shape = array<i64: 8, 64>, row_dims = 1 : i64, ops = ["sm"]}
      : (tensor<8x64xbf16>) -> tensor<8x64xbf16> {
  ^bb0(%a: tensor<8x64xbf16>):
    %m = mpk.row_reduce max %a : tensor<8x64xbf16> -> tensor<8x1xf32>
    %d = mpk.elementwise sub %a, %m : (tensor<8x64xbf16>, tensor<8x1xf32>) -> tensor<8x64xf32>
    %e = mp.exp %d : tensor<8x64xf32>
    %s = mpk.row_reduce sum %e : tensor<8x64xf32> -> tensor<8x1xf32>
    %p = mpk.elementwise div %e, %s : (tensor<8x64xf32>, tensor<8x1xf32>) -> tensor<8x64xbf16>
    mpk.yield %p : tensor<8x64xbf16>
  }
  return %y : tensor<8x64xbf16>
}

// -----

// A kernel over a rank-0 space with no inputs (sqrt of a scalar constant).
// CHECK-LABEL: func.func @kernel$no_inputs
// CHECK: mpk.kernel() {ops = ["sq"], row_dims = 0 : i64, shape = array<i64>} : () -> tensor<f32>
func.func @kernel$no_inputs() -> tensor<f32> {
  %y = mpk.kernel() {shape = array<i64>, row_dims = 0 : i64, ops = ["sq"]} : () -> tensor<f32> {
    %c = mp.constant dense<4.0> : tensor<f32>
    %s = mp.sqrt %c : tensor<f32>
    mpk.yield %s : tensor<f32>
  }
  return %y : tensor<f32>
}

// -----

// A row sum stored without its row dims (a reduction without keepdims),
// and an amax kernel.
// CHECK-LABEL: func.func @kernel$row_store_and_amax
// CHECK: mpk.kernel(%{{.*}}) {ops = ["sum"], row_dims = 2 : i64, shape = array<i64: 2, 4, 8>} : (tensor<2x4x8xf32>) -> tensor<2xf32>
// CHECK:   %[[S:.*]] = mpk.row_reduce sum %{{.*}} : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
// CHECK:   mpk.yield %[[S]] : tensor<2x1x1xf32>
// CHECK: mpk.kernel(%{{.*}}) {ops = ["amax"], row_dims = 0 : i64, shape = array<i64: 2, 4, 8>} : (tensor<2x4x8xf32>) -> tensor<f32>
// CHECK:   %[[A:.*]] = mpk.amax %{{.*}} : tensor<2x4x8xf32> -> tensor<f32>
// CHECK:   mpk.yield %[[A]] : tensor<f32>
func.func @kernel$row_store_and_amax(%x: tensor<2x4x8xf32>) -> (tensor<2xf32>, tensor<f32>) {
  %y = mpk.kernel(%x) {shape = array<i64: 2, 4, 8>, row_dims = 2 : i64, ops = ["sum"]}
      : (tensor<2x4x8xf32>) -> tensor<2xf32> {
  ^bb0(%a: tensor<2x4x8xf32>):
    %s = mpk.row_reduce sum %a : tensor<2x4x8xf32> -> tensor<2x1x1xf32>
    mpk.yield %s : tensor<2x1x1xf32>
  }
  %m = mpk.kernel(%x) {shape = array<i64: 2, 4, 8>, row_dims = 0 : i64, ops = ["amax"]}
      : (tensor<2x4x8xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<2x4x8xf32>):
    %0 = mpk.amax %a : tensor<2x4x8xf32> -> tensor<f32>
    mpk.yield %0 : tensor<f32>
  }
  return %y, %m : tensor<2xf32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @gemm$bias_relu
// CHECK: mpk.gemm %{{.*}}, %{{.*}} bias %{{.*}} {epilogue = "relu", ops = ["fc"], tf32 = false, trans_b = true} : (tensor<8x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<8x32xbf16>
func.func @gemm$bias_relu(%x: tensor<8x64xbf16>, %w: tensor<32x64xbf16>, %b: tensor<32xbf16>) -> tensor<8x32xbf16> {
  %y = mpk.gemm %x, %w bias %b {trans_b = true, epilogue = "relu", tf32 = false, ops = ["fc"]}
      : (tensor<8x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// -----

// CHECK-LABEL: func.func @gemm$fp8_scales
// CHECK: mpk.gemm %{{.*}}, %{{.*}} scales(%{{.*}}, %{{.*}}) {epilogue = "none", ops = ["fc"], tf32 = false, trans_b = false}
func.func @gemm$fp8_scales(%x: tensor<8x64xf8E4M3FN>, %w: tensor<64x32xf8E4M3FN>, %sa: tensor<f32>, %sb: tensor<f32>) -> tensor<8x32xbf16> {
  %y = mpk.gemm %x, %w scales(%sa, %sb) {trans_b = false, epilogue = "none", tf32 = false, ops = ["fc"]}
      : (tensor<8x64xf8E4M3FN>, tensor<64x32xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<8x32xbf16>
  return %y : tensor<8x32xbf16>
}

// -----

// CHECK-LABEL: func.func @call$transpose
// CHECK: mpk.call transpose(%{{.*}}) #mpk.transpose<perm = [1, 0]> {ops = ["t"]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
func.func @call$transpose(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %y = mpk.call transpose(%x) #mpk.transpose<perm = [1, 0]> {ops = ["t"]}
      : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// A rank-0 transpose has an empty permutation.
// CHECK-LABEL: func.func @call$empty_list
// CHECK: mpk.call transpose(%{{.*}}) #mpk.transpose<perm = []> {ops = ["t"]} : (tensor<f32>) -> tensor<f32>
func.func @call$empty_list(%x: tensor<f32>) -> tensor<f32> {
  %y = mpk.call transpose(%x) #mpk.transpose<perm = []> {ops = ["t"]} : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// One call per options family; epsilons print so that they parse back to
// the same f32.
// CHECK-LABEL: func.func @call$every_family
// CHECK: mpk.call conv2d(%{{.*}}, %{{.*}}, %{{.*}}) #mpk.conv2d<strides = [2, 1], pads = [1, 0, 1, 0], dilations = [1, 2], groups = 2, tf32 = true> {ops = ["conv"]}
// CHECK: mpk.call max_pool2d(%{{.*}}) #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = true, count_include_pad = false> {ops = ["max"]}
// CHECK: mpk.call avg_pool2d(%{{.*}}) #mpk.pool2d<kernel = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], ceil_mode = false, count_include_pad = true> {ops = ["avg"]}
// CHECK: mpk.call slice(%{{.*}}) #mpk.slice<starts = [3, 0], steps = [-1, 2]> {ops = ["s"]}
// CHECK: mpk.call concat(%{{.*}}, %{{.*}}) #mpk.axis<axis = -1> {ops = ["c"]}
// CHECK: mpk.call gather(%{{.*}}, %{{.*}}) #mpk.axis<axis = 0> {ops = ["g"]}
// CHECK: mpk.call log_softmax(%{{.*}}) #mpk.axis<axis = 0> {ops = ["ls"]}
// CHECK: mpk.call layer_norm(%{{.*}}, %{{.*}}) #mpk.norm<axis = 1, epsilon = 9.99999974E-6> {ops = ["ln"]}
// CHECK: mpk.call rms_norm(%{{.*}}) #mpk.norm<axis = -1, epsilon = 1.000000e-01> {ops = ["rn"]}
// CHECK: mpk.call batch_norm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) #mpk.batch_norm<epsilon = 0.000000e+00> {ops = ["bn"]}
// CHECK: mpk.call reduce_mean(%{{.*}}) #mpk.reduce<axes = [0, 2], keepdims = false> {ops = ["m"]}
// CHECK: mpk.call fp8_scale(%{{.*}}) #mpk.fp8_scale<margin = 2, format = f8E4M3FN> {ops = ["fs"]}
// CHECK: mpk.call matmul(%{{.*}}, %{{.*}}) #mpk.matmul<tf32 = false> {ops = ["mm"]}
func.func @call$every_family(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<4xf32>,
                             %m: tensor<4x8xf32>, %ids: tensor<3xi32>, %p: tensor<4xf32>,
                             %r: tensor<2x3x4xf32>, %a: tensor<f32>, %v: tensor<8xf32>) {
  %0 = mpk.call conv2d(%x, %w, %b) #mpk.conv2d<strides = [2, 1], pads = [1, 0, 1, 0], dilations = [1, 2], groups = 2, tf32 = true> {ops = ["conv"]}
      : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
  %1 = mpk.call max_pool2d(%x) #mpk.pool2d<kernel = [2, 2], strides = [2, 2], pads = [0, 0, 0, 0], dilations = [1, 1], ceil_mode = true, count_include_pad = false> {ops = ["max"]}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %2 = mpk.call avg_pool2d(%x) #mpk.pool2d<kernel = [3, 3], strides = [1, 1], pads = [1, 1, 1, 1], dilations = [1, 1], ceil_mode = false, count_include_pad = true> {ops = ["avg"]}
      : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %3 = mpk.call slice(%m) #mpk.slice<starts = [3, 0], steps = [-1, 2]> {ops = ["s"]}
      : (tensor<4x8xf32>) -> tensor<4x4xf32>
  %4 = mpk.call concat(%m, %m) #mpk.axis<axis = -1> {ops = ["c"]}
      : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  %5 = mpk.call gather(%m, %ids) #mpk.axis<axis = 0> {ops = ["g"]}
      : (tensor<4x8xf32>, tensor<3xi32>) -> tensor<3x8xf32>
  %6 = mpk.call log_softmax(%m) #mpk.axis<axis = 0> {ops = ["ls"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = mpk.call layer_norm(%m, %v) #mpk.norm<axis = 1, epsilon = 1.0e-5> {ops = ["ln"]}
      : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %8 = mpk.call rms_norm(%m) #mpk.norm<axis = -1, epsilon = 0.1> {ops = ["rn"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %9 = mpk.call batch_norm(%x, %p, %p, %p, %p) #mpk.batch_norm<epsilon = 0.0> {ops = ["bn"]}
      : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %10 = mpk.call reduce_mean(%r) #mpk.reduce<axes = [0, 2], keepdims = false> {ops = ["m"]}
      : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %11 = mpk.call fp8_scale(%a) #mpk.fp8_scale<margin = 2, format = f8E4M3FN> {ops = ["fs"]}
      : (tensor<f32>) -> tensor<f32>
  %12 = mpk.call matmul(%m, %v) #mpk.matmul<tf32 = false> {ops = ["mm"]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// CHECK-LABEL: func.func @alias$reshape
// CHECK: mpk.alias %{{.*}} : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
func.func @alias$reshape(%x: tensor<2x16x64xf32>) -> tensor<2x16x4x16xf32> {
  %y = mpk.alias %x : tensor<2x16x64xf32> -> tensor<2x16x4x16xf32>
  return %y : tensor<2x16x4x16xf32>
}

// -----

// The index routines' options (issue 10).
// CHECK-LABEL: func.func @call$indexing
// CHECK: mpk.call gather_elements(%{{.*}}, %{{.*}}) #mpk.axis<axis = -1> {ops = ["ge"]}
// CHECK: mpk.call gather_nd(%{{.*}}, %{{.*}}) #mpk.gather_nd<batch_dims = 1> {ops = ["gn"]}
// CHECK: mpk.call arg_max(%{{.*}}) #mpk.arg_reduce<axis = 1, keepdims = false, select_last_index = true> {ops = ["am"]}
// CHECK: mpk.call arg_min(%{{.*}}) #mpk.arg_reduce<axis = 0, keepdims = true, select_last_index = false> {ops = ["an"]}
// CHECK: mpk.call topk(%{{.*}}) #mpk.topk<axis = 1, k = 2, largest = false, indices = true> {ops = ["tk"]}
// CHECK: mpk.call cumsum(%{{.*}}) #mpk.cumsum<axis = 1, exclusive = true, reverse = false> {ops = ["cs"]}
// CHECK: mpk.call scatter_nd(%{{.*}}, %{{.*}}, %{{.*}}) #mpk.scatter_nd<reduction = 2> {ops = ["sn"]}
// CHECK: mpk.call reduce_prod(%{{.*}}) #mpk.reduce<axes = [1], keepdims = false> {ops = ["rp"]}
func.func @call$indexing(%m: tensor<4x8xf32>, %i: tensor<4x2xi64>, %j: tensor<4x1xi32>) {
  %0 = mpk.call gather_elements(%m, %i) #mpk.axis<axis = -1> {ops = ["ge"]}
      : (tensor<4x8xf32>, tensor<4x2xi64>) -> tensor<4x2xf32>
  %1 = mpk.call gather_nd(%m, %j) #mpk.gather_nd<batch_dims = 1> {ops = ["gn"]}
      : (tensor<4x8xf32>, tensor<4x1xi32>) -> tensor<4xf32>
  %2 = mpk.call arg_max(%m) #mpk.arg_reduce<axis = 1, keepdims = false, select_last_index = true> {ops = ["am"]}
      : (tensor<4x8xf32>) -> tensor<4xi64>
  %3 = mpk.call arg_min(%m) #mpk.arg_reduce<axis = 0, keepdims = true, select_last_index = false> {ops = ["an"]}
      : (tensor<4x8xf32>) -> tensor<1x8xi64>
  %4 = mpk.call topk(%m) #mpk.topk<axis = 1, k = 2, largest = false, indices = true> {ops = ["tk"]}
      : (tensor<4x8xf32>) -> tensor<4x2xi64>
  %5 = mpk.call cumsum(%m) #mpk.cumsum<axis = 1, exclusive = true, reverse = false> {ops = ["cs"]}
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = mpk.call scatter_nd(%m, %j, %1) #mpk.scatter_nd<reduction = 2> {ops = ["sn"]}
      : (tensor<4x8xf32>, tensor<4x1xi32>, tensor<4xf32>) -> tensor<4x8xf32>
  %7 = mpk.call reduce_prod(%m) #mpk.reduce<axes = [1], keepdims = false> {ops = ["rp"]}
      : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}
