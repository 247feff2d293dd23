// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd momentum=0.9 lr=0.1" %s | FileCheck %s
// RUN: mixprec-opt --mp-build-training-step="loss=ce optimizer=adamw loss-scale=none frozen=b" %s | FileCheck %s --check-prefix=ADAMW
// RUN: not mixprec-opt --mp-build-training-step="optimizer=rmsprop" %s 2>&1 | FileCheck %s --check-prefix=BADOPT
// RUN: not mixprec-opt --mp-build-training-step="momentum=1.5" %s 2>&1 | FileCheck %s --check-prefix=BADMOM
// RUN: not mixprec-opt --mp-build-training-step="frozen=*" %s 2>&1 | FileCheck %s --check-prefix=NOPARAM
// RUN: mixprec-opt --mp-build-training-step="loss=ce accumulate=2" %s | FileCheck %s --check-prefix=ACC
// RUN: not mixprec-opt --mp-build-training-step="accumulate=0" %s 2>&1 | FileCheck %s --check-prefix=BADACC
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd lr=0.1 data-parallel=true" %s | FileCheck %s --check-prefix=DP
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd lr=0.1 data-parallel=true bucket-mb=0.00001 allreduce-dtype=bf16" --mp-precision-pipeline="precision=bf16" %s | FileCheck %s --check-prefix=DPBF16
// RUN: not mixprec-opt --mp-build-training-step="data-parallel=true allreduce-dtype=fp8" %s 2>&1 | FileCheck %s --check-prefix=BADWIRE
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=sgd lr=0.1 loss-scale=none" --mp-precision-pipeline="precision=bf16" %s | FileCheck %s --check-prefix=FP32UPD
// RUN: mixprec-opt --mp-build-training-step="loss=mse optimizer=adamw lr=0.1 data-parallel=true shard-optimizer=true world=4" %s | FileCheck %s --check-prefix=ZERO
// RUN: not mixprec-opt --mp-build-training-step="shard-optimizer=true world=2" %s 2>&1 | FileCheck %s --check-prefix=ZERONODP

// Data parallelism: the scaled gradients flattened into one bucket (6 + 2
// elements), averaged across the ranks, sliced back; the loss averaged; the
// overflow flag max-reduced before the decision.
// DP: %[[BUCKET:.*]] = mp.concat %{{.*}}, %{{.*}} {axis = 0 : i64, mp.pinned_precision = f32} : (tensor<6xf32>, tensor<2xf32>) -> tensor<8xf32>
// DP: %[[MEAN:.*]] = mp.all_reduce %[[BUCKET]] {mp.pinned_precision = f32, reduction = "mean"} : tensor<8xf32> -> tensor<8xf32>
// DP: mp.slice %[[MEAN]] {mp.pinned_precision = f32, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<8xf32> -> tensor<6xf32>
// DP: mp.slice %[[MEAN]] {mp.pinned_precision = f32, starts = array<i64: 6>, steps = array<i64: 1>} : tensor<8xf32> -> tensor<2xf32>
// DP: mp.all_reduce %{{.*}} {mp.pinned_precision = f32, reduction = "mean"} : tensor<f32> -> tensor<f32>
// DP: mp.all_reduce %{{.*}} {mp.pinned_precision = f32, reduction = "max"} : tensor<f32> -> tensor<f32>
// DP-NOT: mp.all_reduce

// Buckets of at most 10 bytes: one per gradient; each travels in BF16 (the
// precision passes cast it there and back) while the weight gradient's
// GEMM writes FP32.
// DPBF16: mp.matmul {{.*}}mp.fp32_output{{.*}} -> tensor<3x2xf32>
// DPBF16: %[[W:.*]] = mp.cast %{{.*}} : tensor<6xf32> -> tensor<6xbf16>
// DPBF16: %[[WR:.*]] = mp.all_reduce %[[W]] {mp.pinned_precision = bf16, mp.precision = bf16, mp.reason = "pinned", reduction = "mean"} : tensor<6xbf16> -> tensor<6xbf16>
// DPBF16: mp.cast %[[WR]] : tensor<6xbf16> -> tensor<6xf32>
// DPBF16: mp.all_reduce %{{.*}} {mp.pinned_precision = bf16, mp.precision = bf16, mp.reason = "pinned", reduction = "mean"} : tensor<2xbf16> -> tensor<2xbf16>
// BADWIRE: error: the all-reduce dtype must be fp32, bf16 or fp16, got 'fp8'

// At bf16 without loss scaling: the weight gradient's GEMM takes BF16
// operands and writes FP32, and the update (the norm's squares, lr * g)
// computes in FP32 whatever the precision.
// FP32UPD: mp.matmul %{{.*}}, %{{.*}} {acc_type = f32, mp.fp32_output, mp.grad_operands = array<i64: 1>, mp.precision = bf16, mp.reason = "policy:lowp"} : (tensor<3x2xbf16>, tensor<2x2xbf16>) -> tensor<3x2xf32>
// FP32UPD: mp.mul %{{.*}}, %{{.*}} {mp.pinned_precision = f32, mp.precision = f32, mp.reason = "pinned"} : tensor<3x2xf32>, tensor<3x2xf32> -> tensor<3x2xf32>
// FP32UPD-NOT: mp.mul {{.*}}bf16{{.*}}pinned

// Optimizer-state sharding over 4 ranks: each moment is this rank's slice
// of its parameter flattened and padded to 4 slices (w: 6 -> 8, 2 each; b:
// 2 -> 4, 1 each); the reduced gradient and the master are sliced the same
// way, updated, and the new slices of both masters all-gathered in one
// bucket [4 ranks x (2 + 1)], whose columns are each master's slices.
// ZERO: {mp.name = "w.exp_avg", mp.state = "w.exp_avg", mp.state_init = dense<0.000000e+00> : tensor<2xf32>}
// ZERO-SAME: {mp.name = "w.exp_avg_sq", mp.state = "w.exp_avg_sq", mp.state_init = dense<0.000000e+00> : tensor<2xf32>}
// ZERO-SAME: {mp.name = "b.exp_avg", mp.state = "b.exp_avg", mp.state_init = dense<0.000000e+00> : tensor<1xf32>}
// ZERO: mp.all_reduce
// ZERO: %[[WP:.*]] = mp.concat %{{.*}}, %{{.*}} {axis = 0 : i64, mp.pinned_precision = f32} : (tensor<6xf32>, tensor<2xf32>) -> tensor<8xf32>
// ZERO: mp.rank_slice %[[WP]] {mp.pinned_precision = f32, world = 4 : i64} : tensor<8xf32> -> tensor<2xf32>
// ZERO: mp.rank_slice %{{.*}} {mp.pinned_precision = f32, world = 4 : i64} : tensor<8xf32> -> tensor<2xf32>
// ZERO: mp.rank_slice %{{.*}} {mp.pinned_precision = f32, world = 4 : i64} : tensor<4xf32> -> tensor<1xf32>
// ZERO: %[[MINE:.*]] = mp.concat %{{.*}}, %{{.*}} {axis = 0 : i64, mp.pinned_precision = f32} : (tensor<2xf32>, tensor<1xf32>) -> tensor<3xf32>
// ZERO: %[[ALL:.*]] = mp.all_gather %[[MINE]] {mp.pinned_precision = f32, world = 4 : i64} : tensor<3xf32> -> tensor<12xf32>
// ZERO: %[[BYRANK:.*]] = mp.reshape %[[ALL]] {{.*}} : tensor<12xf32> -> tensor<4x3xf32>
// ZERO: mp.slice %[[BYRANK]] {mp.pinned_precision = f32, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<4x2xf32>
// ZERO: mp.slice %[[BYRANK]] {mp.pinned_precision = f32, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<4x1xf32>
// ZERO-NOT: mp.all_gather
// ZERONODP: error: sharding the optimizer state needs data parallelism (data-parallel=true)

// Gradient accumulation: the data and labels hold 2 micro-batches (dim 0
// doubled); each runs forward and backward on its rows, the scaled losses
// and gradients are summed and halved before the one update.
// ACC: func.func @main(%arg0: tensor<4x3xf32> {mp.name = "x"}, %arg1: tensor<4xi64> {mp.name = "labels"},
// ACC: mp.slice %arg0 {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<2x3xf32>
// ACC: mp.slice %arg1 {starts = array<i64: 0>, steps = array<i64: 1>} : tensor<4xi64> -> tensor<2xi64>
// ACC: mp.slice %arg0 {starts = array<i64: 2, 0>, steps = array<i64: 1, 1>} : tensor<4x3xf32> -> tensor<2x3xf32>
// ACC: mp.slice %arg1 {starts = array<i64: 2>, steps = array<i64: 1>} : tensor<4xi64> -> tensor<2xi64>
// ACC: mp.constant dense<5.000000e-01> : tensor<f32>
// BADACC: the micro-batches to accumulate must be in [1, 4096], got 0

// The step replaces @main: the data, the labels, then the state (masters,
// optimizer state, step, loss-scale state), each with its initial value;
// results loss, skipped, grad_norm, loss_scale, then the state updates.
// CHECK-LABEL: func.func @main(%arg0: tensor<2x3xf32> {mp.name = "x"}, %arg1: tensor<2x2xf32> {mp.name = "targets"},
// CHECK-SAME: {mp.name = "w", mp.state = "w", mp.state_init = dense<{{\[\[}}5.000000e-01{{.*}}3.750000e-01]]> : tensor<3x2xf32>}
// CHECK-SAME: {mp.name = "b", mp.state = "b", mp.state_init = dense<[1.000000e-01, 2.000000e-01]> : tensor<2xf32>}
// CHECK-SAME: {mp.name = "w.momentum_buffer", mp.state = "w.momentum_buffer", mp.state_init = dense<0.000000e+00> : tensor<3x2xf32>}
// CHECK-SAME: {mp.name = "step", mp.state = "step", mp.state_init = dense<0.000000e+00> : tensor<f32>}
// CHECK-SAME: {mp.name = "loss_scale", mp.state = "loss_scale", mp.state_init = dense<6.553600e+04> : tensor<f32>}
// CHECK-SAME: {mp.name = "growth_tracker", mp.state = "growth_tracker", mp.state_init = dense<0.000000e+00> : tensor<f32>}
// CHECK-SAME: -> (tensor<f32> {mp.name = "loss"}, tensor<f32> {mp.name = "skipped"}, tensor<f32> {mp.name = "grad_norm"}, tensor<f32> {mp.name = "loss_scale"}, tensor<3x2xf32> {mp.state_update = "w"}
// The gradients are unscaled, checked for inf/NaN, and a skipped step
// selects the old values.
// CHECK: mp.reciprocal
// CHECK: mp.is_nan
// CHECK: mp.is_inf
// CHECK: mp.where
// CHECK-NOT: func.func @main_loss

// ADAMW: func.func @main(%arg0: tensor<2x3xf32> {mp.name = "x"}, %arg1: tensor<2xi64> {mp.name = "labels"},
// ADAMW-SAME: {mp.name = "w", mp.state = "w"
// ADAMW-SAME: {mp.name = "w.exp_avg", mp.state = "w.exp_avg"
// ADAMW-SAME: {mp.name = "w.exp_avg_sq", mp.state = "w.exp_avg_sq"
// ADAMW-SAME: {mp.name = "step", mp.state = "step"
// ADAMW-NOT: mp.state = "b"
// ADAMW-NOT: mp.state = "loss_scale"
// ADAMW: mp.log_softmax
// ADAMW: mp.gather_elements
// ADAMW: mp.pow

// BADOPT: error: --mp-build-training-step: unknown optimizer 'rmsprop'
// BADMOM: error: momentum must be in [0, 1), got 1.5
// NOPARAM: error: nothing to train: no named float constant of rank >= 1 that no --frozen glob matches in @main

func.func @main(%x: tensor<2x3xf32> {mp.name = "x"}) -> (tensor<2x2xf32> {mp.name = "y"}) {
  %w = mp.constant dense<[[0.5, -0.25], [0.125, 1.0], [-0.75, 0.375]]> : tensor<3x2xf32> loc("w")
  %b = mp.constant dense<[0.1, 0.2]> : tensor<2xf32> loc("b")
  %y = mp.matmul %x, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("fc")
  %z = mp.add %y, %b : tensor<2x2xf32>, tensor<2xf32> -> tensor<2x2xf32> loc("bias")
  return %z : tensor<2x2xf32>
}
