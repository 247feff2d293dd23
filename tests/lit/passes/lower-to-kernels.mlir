// RUN: mixprec-opt --split-input-file --mp-fuse --mp-lower-to-kernels %s | FileCheck %s

// A fusion becomes an mpk.kernel over its reduction's input shape, with the
// trailing dims the reduction covers as its row (the layer norm, in its
// decomposed form: @decompose$layer_norm); a GEMM fusion becomes an
// mpk.gemm with bias and epilogue; a reshape is an alias; a transpose is a
// backend routine with its permutation; lone element-wise ops are kernels.

// CHECK-LABEL: func.func @lower$block
// CHECK: %[[LN:.*]] = mpk.kernel(%{{.*}}, %{{.*}}) {ops = ["ln"], row_dims = 1 : i64, shape = array<i64: 4, 8>}
// CHECK: mpk.row_reduce sum
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

// -----

// Inside kernel bodies only expression-program instructions stay: softmax
// is a row max, an FP32 subtract and exp, a row sum and one divide that
// rounds to the output dtype (the bf16 input is read as it is, no cast).
// CHECK-LABEL: func.func @decompose$softmax
// CHECK: mpk.kernel(%{{.*}}) {ops = ["sm"], row_dims = 1 : i64, shape = array<i64: 4, 8>} : (tensor<4x8xbf16>) -> tensor<4x8xbf16> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xbf16>):
// CHECK-NEXT: %[[M:.*]] = mpk.row_reduce max %[[X]] : tensor<4x8xbf16> -> tensor<4x1xf32>
// CHECK-NEXT: %[[D:.*]] = mpk.elementwise sub %[[X]], %[[M]] : (tensor<4x8xbf16>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[E:.*]] = mpk.elementwise exp %[[D]] : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = mpk.row_reduce sum %[[E]] : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT: %[[Y:.*]] = mpk.elementwise div %[[E]], %[[S]] : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xbf16>
// CHECK-NEXT: mpk.yield %[[Y]] : tensor<4x8xbf16>
// CHECK-NOT: mp.softmax
func.func @decompose$softmax(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = mp.softmax %x {axis = 1 : i64} : tensor<4x8xbf16> -> tensor<4x8xbf16> loc("sm")
  return %0 : tensor<4x8xbf16>
}

// -----

// log_softmax(x) = d - log(rowsum(exp(d))), d = x - rowmax(x); the fused
// consumer stays an mp op after it.
// CHECK-LABEL: func.func @decompose$log_softmax
// CHECK: ^bb0(%[[X:.*]]: tensor<2x10xf32>):
// CHECK-NEXT: %[[M:.*]] = mpk.row_reduce max %[[X]] : tensor<2x10xf32> -> tensor<2x1xf32>
// CHECK-NEXT: %[[D:.*]] = mpk.elementwise sub %[[X]], %[[M]]
// CHECK-NEXT: %[[E:.*]] = mpk.elementwise exp %[[D]]
// CHECK-NEXT: %[[S:.*]] = mpk.row_reduce sum %[[E]]
// CHECK-NEXT: %[[L:.*]] = mpk.elementwise log %[[S]] : (tensor<2x1xf32>) -> tensor<2x1xf32>
// CHECK-NEXT: %[[Y:.*]] = mpk.elementwise sub %[[D]], %[[L]] : (tensor<2x10xf32>, tensor<2x1xf32>) -> tensor<2x10xf32>
// CHECK-NEXT: %[[N:.*]] = mp.neg %[[Y]]
// CHECK-NEXT: mpk.yield %[[N]]
func.func @decompose$log_softmax(%x: tensor<2x10xf32>) -> tensor<2x10xf32> {
  %0 = mp.log_softmax %x {axis = 1 : i64} : tensor<2x10xf32> -> tensor<2x10xf32> loc("lsm")
  %1 = mp.neg %0 : tensor<2x10xf32> loc("neg")
  return %1 : tensor<2x10xf32>
}

// -----

// A layer norm over two dims: FP32 mean and variance with 1/rowSize
// (1/64) as an immediate, rsqrt(var + eps), scale and bias in FP32, one
// cast to the output dtype at the end.
// CHECK-LABEL: func.func @decompose$layer_norm
// CHECK: mpk.kernel(%{{.*}}, %{{.*}}, %{{.*}}) {ops = ["ln"], row_dims = 2 : i64, shape = array<i64: 2, 4, 16>}
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<2x4x16xbf16>, %[[G:.*]]: tensor<4x16xbf16>, %[[B:.*]]: tensor<4x16xbf16>):
// CHECK-NEXT: %[[INV:.*]] = mp.constant dense<1.562500e-02> : tensor<f32>
// CHECK-NEXT: %[[S1:.*]] = mpk.row_reduce sum %[[X]] : tensor<2x4x16xbf16> -> tensor<2x1x1xf32>
// CHECK-NEXT: %[[MEAN:.*]] = mpk.elementwise mul %[[S1]], %[[INV]] : (tensor<2x1x1xf32>, tensor<f32>) -> tensor<2x1x1xf32>
// CHECK-NEXT: %[[C:.*]] = mpk.elementwise sub %[[X]], %[[MEAN]] : (tensor<2x4x16xbf16>, tensor<2x1x1xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[SQ:.*]] = mpk.elementwise mul %[[C]], %[[C]]
// CHECK-NEXT: %[[S2:.*]] = mpk.row_reduce sum %[[SQ]]
// CHECK-NEXT: %[[VAR:.*]] = mpk.elementwise mul %[[S2]], %[[INV]]
// CHECK-NEXT: %[[EPS:.*]] = mp.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-NEXT: %[[VE:.*]] = mpk.elementwise add %[[VAR]], %[[EPS]]
// CHECK-NEXT: %[[R:.*]] = mpk.elementwise rsqrt %[[VE]]
// CHECK-NEXT: %[[N:.*]] = mpk.elementwise mul %[[C]], %[[R]]
// CHECK-NEXT: %[[NG:.*]] = mpk.elementwise mul %[[N]], %[[G]] : (tensor<2x4x16xf32>, tensor<4x16xbf16>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[NB:.*]] = mpk.elementwise add %[[NG]], %[[B]] : (tensor<2x4x16xf32>, tensor<4x16xbf16>) -> tensor<2x4x16xf32>
// CHECK-NEXT: %[[Y:.*]] = mpk.elementwise cast %[[NB]] : (tensor<2x4x16xf32>) -> tensor<2x4x16xbf16>
// CHECK-NEXT: mpk.yield %[[Y]]
func.func @decompose$layer_norm(%x: tensor<2x4x16xbf16>, %g: tensor<4x16xbf16>, %b: tensor<4x16xbf16>) -> tensor<2x4x16xbf16> {
  %0 = mp.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x4x16xbf16> loc("ln")
  return %0 : tensor<2x4x16xbf16>
}

// -----

// RMS norm: x * rsqrt(mean(x * x) + eps) * scale, cast once.
// CHECK-LABEL: func.func @decompose$rms_norm
// CHECK: ^bb0(%[[X:.*]]: tensor<4x8xf16>, %[[G:.*]]: tensor<8xf16>):
// CHECK-NEXT: %[[SQ:.*]] = mpk.elementwise mul %[[X]], %[[X]] : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = mpk.row_reduce sum %[[SQ]] : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK-NEXT: %[[INV:.*]] = mp.constant dense<1.250000e-01> : tensor<f32>
// CHECK-NEXT: %[[MS:.*]] = mpk.elementwise mul %[[S]], %[[INV]]
// CHECK-NEXT: %[[EPS:.*]] = mp.constant dense<9.99999997E-7> : tensor<f32>
// CHECK-NEXT: %[[ME:.*]] = mpk.elementwise add %[[MS]], %[[EPS]]
// CHECK-NEXT: %[[R:.*]] = mpk.elementwise rsqrt %[[ME]]
// CHECK-NEXT: %[[N:.*]] = mpk.elementwise mul %[[X]], %[[R]] : (tensor<4x8xf16>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[NG:.*]] = mpk.elementwise mul %[[N]], %[[G]]
// CHECK-NEXT: %[[Y:.*]] = mpk.elementwise cast %[[NG]] : (tensor<4x8xf32>) -> tensor<4x8xf16>
// CHECK-NEXT: mpk.yield %[[Y]]
func.func @decompose$rms_norm(%x: tensor<4x8xf16>, %g: tensor<8xf16>) -> tensor<4x8xf16> {
  %0 = mp.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-6 : f32} : (tensor<4x8xf16>, tensor<8xf16>) -> tensor<4x8xf16> loc("rms")
  return %0 : tensor<4x8xf16>
}

// -----

// Reductions over trailing dims: sum and max round the row reduction to
// the output dtype; a mean sums in FP32 and multiplies by 1/rowSize, 0 for
// an empty row. Without keepdims the kernel stores the row value without
// its row dims (the yield keeps them as 1).
// CHECK-LABEL: func.func @decompose$reductions
// CHECK: mpk.kernel(%{{.*}}) {ops = ["sum"], row_dims = 2 : i64, shape = array<i64: 3, 2, 6>} : (tensor<3x2x6xbf16>) -> tensor<3xbf16> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<3x2x6xbf16>):
// CHECK-NEXT: %[[S:.*]] = mpk.row_reduce sum %[[X]] : tensor<3x2x6xbf16> -> tensor<3x1x1xbf16>
// CHECK-NEXT: mpk.yield %[[S]] : tensor<3x1x1xbf16>
// CHECK: mpk.kernel(%{{.*}}) {ops = ["max"], row_dims = 1 : i64, shape = array<i64: 3, 2, 6>} : (tensor<3x2x6xbf16>) -> tensor<3x2x1xbf16> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<3x2x6xbf16>):
// CHECK-NEXT: %[[M:.*]] = mpk.row_reduce max %[[X]] : tensor<3x2x6xbf16> -> tensor<3x2x1xbf16>
// CHECK-NEXT: mpk.yield %[[M]] : tensor<3x2x1xbf16>
// CHECK: mpk.kernel(%{{.*}}) {ops = ["mean"], row_dims = 1 : i64, shape = array<i64: 3, 2, 6>} : (tensor<3x2x6xbf16>) -> tensor<3x2xbf16> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<3x2x6xbf16>):
// CHECK-NEXT: %[[S:.*]] = mpk.row_reduce sum %[[X]] : tensor<3x2x6xbf16> -> tensor<3x2x1xf32>
// CHECK-NEXT: %[[INV:.*]] = mp.constant dense<0.166666672> : tensor<f32>
// CHECK-NEXT: %[[Y:.*]] = mpk.elementwise mul %[[S]], %[[INV]] : (tensor<3x2x1xf32>, tensor<f32>) -> tensor<3x2x1xbf16>
// CHECK-NEXT: mpk.yield %[[Y]] : tensor<3x2x1xbf16>
// CHECK: mpk.kernel(%{{.*}}) {ops = ["empty_mean"], row_dims = 1 : i64, shape = array<i64: 3, 0>} : (tensor<3x0xf32>) -> tensor<3xf32> {
// CHECK: mp.constant dense<0.000000e+00> : tensor<f32>
func.func @decompose$reductions(%x: tensor<3x2x6xbf16>, %e: tensor<3x0xf32>) -> (tensor<3xbf16>, tensor<3x2x1xbf16>, tensor<3x2xbf16>, tensor<3xf32>) {
  %0 = mp.reduce_sum %x {axes = array<i64: 1, 2>, keepdims = false} : tensor<3x2x6xbf16> -> tensor<3xbf16> loc("sum")
  %1 = mp.reduce_max %x {axes = array<i64: 2>} : tensor<3x2x6xbf16> -> tensor<3x2x1xbf16> loc("max")
  %2 = mp.reduce_mean %x {axes = array<i64: 2>, keepdims = false} : tensor<3x2x6xbf16> -> tensor<3x2xbf16> loc("mean")
  %3 = mp.reduce_mean %e {axes = array<i64: 1>, keepdims = false} : tensor<3x0xf32> -> tensor<3xf32> loc("empty_mean")
  return %0, %1, %2, %3 : tensor<3xbf16>, tensor<3x2x1xbf16>, tensor<3x2xbf16>, tensor<3xf32>
}

// -----

// silu is two instructions: the sigmoid kept in FP32, then the mul that
// rounds once; an amax is the kernel's amax primitive over its input.
// CHECK-LABEL: func.func @decompose$silu_and_amax
// CHECK: mpk.kernel(%{{.*}}) {ops = ["silu", "scale"], row_dims = 0 : i64, shape = array<i64: 4, 8>}
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xbf16>):
// CHECK-NEXT: %[[SIG:.*]] = mpk.elementwise sigmoid %[[X]] : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = mpk.elementwise mul %[[X]], %[[SIG]] : (tensor<4x8xbf16>, tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK-NEXT: %[[C:.*]] = mp.constant dense<2.000000e+00> : tensor<bf16>
// CHECK-NEXT: %[[Y:.*]] = mp.mul %[[S]], %[[C]]
// CHECK-NEXT: mpk.yield %[[Y]]
// CHECK: mpk.kernel(%{{.*}}) {ops = ["amax"], row_dims = 0 : i64, shape = array<i64: 4, 8>} : (tensor<4x8xbf16>) -> tensor<f32>
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x8xbf16>):
// CHECK-NEXT: %[[A:.*]] = mpk.amax %[[X]] : tensor<4x8xbf16> -> tensor<f32>
// CHECK-NEXT: mpk.yield %[[A]] : tensor<f32>
// CHECK-NOT: mp.silu
// CHECK-NOT: mp.amax
func.func @decompose$silu_and_amax(%x: tensor<4x8xbf16>) -> (tensor<4x8xbf16>, tensor<f32>) {
  %c = mp.constant dense<2.0> : tensor<bf16>
  %0 = mp.silu %x : tensor<4x8xbf16> loc("silu")
  %1 = mp.mul %0, %c : tensor<4x8xbf16>, tensor<bf16> -> tensor<4x8xbf16> loc("scale")
  %2 = mp.amax %x : tensor<4x8xbf16> -> tensor<f32> loc("amax")
  return %1, %2 : tensor<4x8xbf16>, tensor<f32>
}
