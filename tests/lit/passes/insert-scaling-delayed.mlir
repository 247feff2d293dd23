// RUN: mixprec-opt --mp-insert-scaling="scaling=delayed amax-history=4" %s | FileCheck %s
// RUN: mixprec-opt --mp-insert-scaling="scaling=delayed amax-history=1 amax-algo=most-recent" %s | FileCheck %s --check-prefix=RECENT
// RUN: mixprec-opt --mp-insert-scaling="scaling=current format=e4m3" %s | FileCheck %s --check-prefix=E4M3

// A weight-gradient GEMM of FP8 training: operand 1 carries the gradient
// (mp.grad_operands), so the hybrid format quantizes it to f8E5M2 and the
// activation to f8E4M3FN. Delayed scaling: each operand is quantized with a
// scale kept as module state (initially 1); the run's amax goes to the
// front of the state's amax history, and the next scale is fp8_scale of
// the history's max, or the old scale when that amax is 0 or not finite.

// CHECK-LABEL: func.func @wgrad
// CHECK-SAME: %[[H0:[^:]*]]: tensor<4xf32> {mp.name = "fp8.dw.lhs.amax_history", mp.state = "fp8.dw.lhs.amax_history", mp.state_init = dense<0.000000e+00> : tensor<4xf32>}
// CHECK-SAME: %[[S0:[^:]*]]: tensor<f32> {mp.name = "fp8.dw.lhs.scale", mp.state = "fp8.dw.lhs.scale", mp.state_init = dense<1.000000e+00> : tensor<f32>}
// CHECK-SAME: %[[H1:[^:]*]]: tensor<4xf32> {mp.name = "fp8.dw.rhs.amax_history"
// CHECK-SAME: %[[S1:[^:]*]]: tensor<f32> {mp.name = "fp8.dw.rhs.scale"
// CHECK-SAME: -> (tensor<3x4xbf16>, tensor<4xf32> {mp.state_update = "fp8.dw.lhs.amax_history"}, tensor<f32> {mp.state_update = "fp8.dw.lhs.scale"}, tensor<4xf32> {mp.state_update = "fp8.dw.rhs.amax_history"}, tensor<f32> {mp.state_update = "fp8.dw.rhs.scale"})
// CHECK: %[[A0:.*]] = mp.amax %{{.*}} : tensor<3x2xf32> -> tensor<f32>
// CHECK: %[[P0:.*]] = mp.reshape %[[A0]] {{.*}} -> tensor<1xf32>
// CHECK: %[[OLD0:.*]] = mp.slice %[[H0]]
// CHECK: %[[NEW0:.*]] = mp.concat %[[P0]], %[[OLD0]] {axis = 0 : i64} : (tensor<1xf32>, tensor<3xf32>) -> tensor<4xf32>
// CHECK: %[[M0:.*]] = mp.reduce_max %[[NEW0]]
// CHECK: %[[C0:.*]] = mp.fp8_scale %[[M0]] {format = f8E4M3FN}
// CHECK: %[[NEXT0:.*]] = mp.where %{{.*}}, %[[C0]], %[[S0]]
// CHECK: mp.quantize %{{.*}}, %[[S0]] : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf8E4M3FN>
// CHECK: mp.fp8_scale %{{.*}} {format = f8E5M2}
// CHECK: %[[Q1:.*]] = mp.quantize %{{.*}}, %[[S1]] : (tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf8E5M2>
// The TN layout of cuBLASLt's FP8 GEMMs: b, not a constant, is transposed
// in FP8 and the GEMM reads it as [n, k].
// CHECK: %[[T1:.*]] = mp.transpose %[[Q1]] {perm = array<i64: 1, 0>} : tensor<2x4xf8E5M2> -> tensor<4x2xf8E5M2>
// CHECK: %[[Y:.*]] = mp.scaled_linear %{{.*}}, %[[T1]], %[[S0]], %[[S1]] {{.*}}mp.grad_operands = array<i64: 1>{{.*}}transpose_weight = true{{.*}} : (tensor<3x2xf8E4M3FN>, tensor<4x2xf8E5M2>, tensor<f32>, tensor<f32>) -> tensor<3x4xbf16>
// CHECK: return %[[Y]], %[[NEW0]], %[[NEXT0]], %{{.*}}, %{{.*}} :

// RECENT-LABEL: func.func @wgrad
// RECENT: %[[A:.*]] = mp.amax
// RECENT: %[[H:.*]] = mp.reshape %[[A]] {{.*}} -> tensor<1xf32>
// RECENT-NOT: mp.concat
// RECENT-NOT: mp.reduce_max
// RECENT: mp.fp8_scale %[[A]] {format = f8E4M3FN}

// E4M3-LABEL: func.func @wgrad
// E4M3: mp.quantize {{.*}} -> tensor<3x2xf8E4M3FN>
// E4M3: mp.quantize {{.*}} -> tensor<2x4xf8E4M3FN>
// E4M3-NOT: f8E5M2
func.func @wgrad(%xt: tensor<3x2xf32>, %dy: tensor<2x4xf32>) -> tensor<3x4xbf16> {
  %0 = mp.matmul %xt, %dy {acc_type = f32, mp.precision = f8E4M3FN, mp.grad_operands = array<i64: 1>} : (tensor<3x2xf32>, tensor<2x4xf32>) -> tensor<3x4xbf16> loc("dw")
  return %0 : tensor<3x4xbf16>
}
