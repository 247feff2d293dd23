// RUN: mixprec-opt --split-input-file --mp-autodiff=wrt=params,x %s | FileCheck %s

// A broadcast operand's adjoint is summed over the broadcast dims
// (sumToShape): reduce_sum then reshape to [3]. The bias, a named constant
// (params), becomes an argument of the gradient function; the results are
// the loss, then one gradient per wrt input in wrt's order.
// CHECK-LABEL: func.func @add$broadcast_grad
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32> {mp.name = "x"}, %[[B:.*]]: tensor<3xf32> {mp.name = "bias"})
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<3xf32> {mp.name = "grad:bias"}, tensor<2x3xf32> {mp.name = "grad:x"})
// CHECK: %[[ADD:.*]] = mp.add %[[X]], %[[B]]
// CHECK: %[[LOSS:.*]] = mp.reduce_sum %[[ADD]]
// CHECK: %[[DY:.*]] = mp.add %{{.*}}, %{{.*}} : tensor<1x1xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK: %[[DB:.*]] = mp.reduce_sum %[[DY]] {axes = array<i64: 0>} : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK: %[[DB3:.*]] = mp.reshape %[[DB]] : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: return %[[LOSS]], %[[DB3]], %[[DY]]
func.func @add$broadcast(%x: tensor<2x3xf32> {mp.name = "x"}) -> (tensor<f32> {mp.name = "loss"}) {
  %b = mp.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> loc("bias")
  %0 = mp.add %x, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32> loc("add")
  %1 = mp.reduce_sum %0 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3xf32> -> tensor<f32> loc("sum")
  return %1 : tensor<f32>
}

// -----

// matmul: dX = dY W^T and dW = X^T dY, two GEMMs; by a weight (a constant
// or an argument), each marks the operand that carries the gradient (FP8
// training quantizes it to f8E5M2).
// CHECK-LABEL: func.func @matmul_grad
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32> {mp.name = "x"}, %[[W:.*]]: tensor<3x4xf32> {mp.name = "fc.w"})
// CHECK: %[[DY:.*]] = mp.add %{{.*}} -> tensor<2x4xf32>
// CHECK: %[[WT:.*]] = mp.transpose %[[W]] {perm = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<4x3xf32>
// CHECK: %[[DX:.*]] = mp.matmul %[[DY]], %[[WT]] {mp.grad_operands = array<i64: 0>} : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK: %[[XT:.*]] = mp.transpose %[[X]] {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
// CHECK: %[[DW:.*]] = mp.matmul %[[XT]], %[[DY]] {mp.grad_operands = array<i64: 1>} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DX]]
func.func @matmul(%x: tensor<2x3xf32> {mp.name = "x"}) -> tensor<f32> {
  %w = mp.constant dense<0.5> : tensor<3x4xf32> loc("fc.w")
  %0 = mp.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32> loc("fc")
  %1 = mp.reduce_mean %0 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32> loc("mean")
  return %1 : tensor<f32>
}

// -----

// softmax: dx = y (dy - sum(dy y)) along the axis, the sum in FP32.
// CHECK-LABEL: func.func @softmax_grad
// CHECK-SAME: (%{{.*}}: tensor<2x4xf32> {mp.name = "x"}, %[[T:.*]]: tensor<2x4xf32> {mp.name = "t"})
// CHECK: %[[Y:.*]] = mp.softmax %{{.*}} {axis = 1 : i64}
// CHECK: mp.mul %[[Y]], %[[T]]
// CHECK: %[[DY:.*]] = mp.mul %{{.*}}, %[[T]] : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
// CHECK: %[[P:.*]] = mp.mul %[[DY]], %[[Y]]
// CHECK: %[[S:.*]] = mp.reduce_sum %[[P]] {axes = array<i64: 1>} : tensor<2x4xf32> -> tensor<2x1xf32>
// CHECK: %[[D:.*]] = mp.sub %[[DY]], %[[S]]
// CHECK: %[[DX:.*]] = mp.mul %[[Y]], %[[D]]
// CHECK: return %{{.*}}, %[[DX]]
func.func @softmax(%x: tensor<2x4xf32> {mp.name = "x"}, %t: tensor<2x4xf32> {mp.name = "t"}) -> tensor<f32> {
  %0 = mp.softmax %x {axis = 1 : i64} : tensor<2x4xf32> -> tensor<2x4xf32> loc("sm")
  %1 = mp.mul %0, %t : tensor<2x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32> loc("mul")
  %2 = mp.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x4xf32> -> tensor<f32> loc("sum")
  return %2 : tensor<f32>
}

// -----

// layer_norm on bf16: the backward widens x, dy and the scale to FP32,
// computes in FP32 (statistics, dx, dscale) and rounds each gradient once.
// CHECK-LABEL: func.func @layer_norm$bf16_grad
// CHECK-SAME: (%[[X:.*]]: tensor<2x8xbf16> {mp.name = "x"}, %[[G:.*]]: tensor<8xbf16> {mp.name = "ln.g"})
// CHECK: %[[XF:.*]] = mp.cast %[[X]] : tensor<2x8xbf16> -> tensor<2x8xf32>
// CHECK: mp.rsqrt %{{.*}} : tensor<2x1xf32>
// CHECK: %[[GF:.*]] = mp.cast %[[G]] : tensor<8xbf16> -> tensor<8xf32>
// CHECK: %[[DX:.*]] = mp.cast %{{.*}} : tensor<2x8xf32> -> tensor<2x8xbf16>
// CHECK: mp.reduce_sum %{{.*}} {axes = array<i64: 0>} : tensor<2x8xf32> -> tensor<1x8xf32>
// CHECK: %[[DG:.*]] = mp.cast %{{.*}} : tensor<8xf32> -> tensor<8xbf16>
// CHECK: return %{{.*}}, %[[DG]], %[[DX]] : tensor<f32>, tensor<8xbf16>, tensor<2x8xbf16>
func.func @layer_norm$bf16(%x: tensor<2x8xbf16> {mp.name = "x"}) -> tensor<f32> {
  %g = mp.constant dense<1.0> : tensor<8xbf16> loc("ln.g")
  %0 = mp.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16> loc("ln")
  %1 = mp.cast %0 : tensor<2x8xbf16> -> tensor<2x8xf32> loc("up")
  %2 = mp.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x8xf32> -> tensor<f32> loc("sum")
  return %2 : tensor<f32>
}

// -----

// relu's derivative is an indicator (x > 0). %x is read twice (by relu and
// by mul): its two bf16 adjoints are summed in FP32, then rounded once.
// CHECK-LABEL: func.func @relu$fan_out_bf16_grad
// CHECK-SAME: -> (tensor<1xbf16> {mp.name = "loss"}, tensor<4xbf16> {mp.name = "grad:x"})
// CHECK: %[[GT:.*]] = mp.greater %{{.*}}, %{{.*}} : tensor<4xbf16>, tensor<bf16> -> tensor<4xi1>
// CHECK: %[[IND:.*]] = mp.where %[[GT]]
// CHECK: %[[DR:.*]] = mp.mul %{{.*}}, %[[IND]]
// CHECK: %[[A:.*]] = mp.cast %{{.*}} : tensor<4xbf16> -> tensor<4xf32>
// CHECK: %[[B:.*]] = mp.cast %[[DR]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: %[[S:.*]] = mp.add %[[A]], %[[B]] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
// CHECK: %[[DX:.*]] = mp.cast %[[S]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK: return %{{.*}}, %[[DX]]
func.func @relu$fan_out_bf16(%x: tensor<4xbf16> {mp.name = "x"}) -> tensor<1xbf16> {
  %0 = mp.relu %x : tensor<4xbf16> loc("relu")
  %1 = mp.mul %0, %x : tensor<4xbf16>, tensor<4xbf16> -> tensor<4xbf16> loc("mul")
  %2 = mp.reduce_sum %1 {axes = array<i64: 0>, keepdims = true} : tensor<4xbf16> -> tensor<1xbf16> loc("sum")
  return %2 : tensor<1xbf16>
}

// -----

// An embedding lookup's adjoint is a scatter-add at the looked-up rows
// (repeated ids sum); the ids get no gradient.
// CHECK-LABEL: func.func @gather_grad
// CHECK-SAME: (%[[IDS:.*]]: tensor<3xi64> {mp.name = "ids"}, %[[X:.*]]: tensor<3x4xf32> {mp.name = "x"}, %[[E:.*]]: tensor<10x4xf32> {mp.name = "emb"})
// CHECK: %[[ROWS:.*]] = mp.reshape %[[IDS]] : tensor<3xi64> -> tensor<3x1xi64>
// CHECK: %[[Z:.*]] = mp.constant dense<0.000000e+00> : tensor<10x4xf32>
// CHECK: %[[DE:.*]] = mp.scatter_nd %[[Z]], %[[ROWS]], %{{.*}} {reduction = "add"} : (tensor<10x4xf32>, tensor<3x1xi64>, tensor<3x4xf32>) -> tensor<10x4xf32>
// CHECK: return %{{.*}}, %[[DE]], %{{.*}} : tensor<f32>, tensor<10x4xf32>, tensor<3x4xf32>
func.func @gather(%ids: tensor<3xi64> {mp.name = "ids"}, %x: tensor<3x4xf32> {mp.name = "x"}) -> tensor<f32> {
  %e = mp.constant dense<0.5> : tensor<10x4xf32> loc("emb")
  %0 = mp.gather %e, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32> loc("lookup")
  %1 = mp.mul %0, %x : tensor<3x4xf32>, tensor<3x4xf32> -> tensor<3x4xf32> loc("mul")
  %2 = mp.reduce_sum %1 {axes = array<i64: 0, 1>, keepdims = false} : tensor<3x4xf32> -> tensor<f32> loc("sum")
  return %2 : tensor<f32>
}

// -----

// The loss depends on %x only through an index (arg_max): no float path,
// so its gradient is zeros; the table still gets its scatter-add.
// CHECK-LABEL: func.func @arg_max$no_float_path_grad
// CHECK: %[[DT:.*]] = mp.scatter_nd
// CHECK: %[[Z:.*]] = mp.constant dense<0.000000e+00> : tensor<2x3xf32>
// CHECK: return %{{.*}}, %[[DT]], %[[Z]] : tensor<f32>, tensor<3xf32>, tensor<2x3xf32>
func.func @arg_max$no_float_path(%x: tensor<2x3xf32> {mp.name = "x"}) -> tensor<f32> {
  %table = mp.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> loc("table")
  %0 = mp.arg_max %x {axis = 1 : i64, keepdims = false} : tensor<2x3xf32> -> tensor<2xi64> loc("argmax")
  %1 = mp.gather %table, %0 {axis = 0 : i64} : (tensor<3xf32>, tensor<2xi64>) -> tensor<2xf32> loc("pick")
  %2 = mp.reduce_sum %1 {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32> loc("sum")
  return %2 : tensor<f32>
}
