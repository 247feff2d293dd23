// RUN: mixprec-opt --split-input-file --mp-fuse %s | FileCheck %s

// An element-wise chain becomes one kernel; the scalar constant is cloned
// in as an immediate, the bias vector is an input.
// CHECK-LABEL: func.func @fuse$elementwise_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NOT: mp.constant
// CHECK: %[[F:.*]] = mp.fusion elementwise(%[[X]], %[[B]]) {ops = ["add", "mul", "tanh"]}
// CHECK: ^bb0(%[[A0:.*]]: tensor<4x8xf32>, %[[A1:.*]]: tensor<8xf32>):
// CHECK: %[[ADD:.*]] = mp.add %[[A0]], %[[A1]]
// CHECK: %[[S:.*]] = mp.constant dense<5.000000e-01> : tensor<f32>
// CHECK: %[[MUL:.*]] = mp.mul %[[ADD]], %[[S]]
// CHECK: %[[T:.*]] = mp.tanh %[[MUL]]
// CHECK: mp.yield %[[T]] : tensor<4x8xf32>
// CHECK: return %[[F]]
func.func @fuse$elementwise_chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = mp.constant dense<0.5> : tensor<f32>
  %0 = mp.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32> loc("add")
  %1 = mp.mul %0, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32> loc("mul")
  %2 = mp.tanh %1 : tensor<4x8xf32> loc("tanh")
  return %2 : tensor<4x8xf32>
}

// -----

// A reduction takes its element-wise producers and consumers (a scaled,
// masked softmax is one kernel); the GEMM that consumes it reads memory.
// CHECK-LABEL: func.func @fuse$softmax_feeds_gemm
// CHECK: %[[QK:.*]] = mp.matmul
// CHECK: %[[P:.*]] = mp.fusion reduction(%[[QK]], %{{.*}}) {ops = ["scale", "mask", "softmax", "to_bf16"]}
// CHECK: mp.softmax
// CHECK: mp.yield
// CHECK: mp.matmul %[[P]], %{{.*}}
func.func @fuse$softmax_feeds_gemm(%q: tensor<2x4x4xbf16>, %k: tensor<2x4x4xbf16>, %v: tensor<2x4x4xbf16>, %m: tensor<4x4xi1>) -> tensor<2x4x4xbf16> {
  %s = mp.constant dense<0.125> : tensor<bf16>
  %fill = mp.constant dense<-1.0e4> : tensor<bf16>
  %0 = mp.matmul %q, %k : (tensor<2x4x4xbf16>, tensor<2x4x4xbf16>) -> tensor<2x4x4xbf16> loc("qk")
  %1 = mp.mul %0, %s : tensor<2x4x4xbf16>, tensor<bf16> -> tensor<2x4x4xbf16> loc("scale")
  %2 = mp.where %m, %1, %fill : (tensor<4x4xi1>, tensor<2x4x4xbf16>, tensor<bf16>) -> tensor<2x4x4xbf16> loc("mask")
  %3 = mp.softmax %2 {axis = 2 : i64} : tensor<2x4x4xbf16> -> tensor<2x4x4xf32> loc("softmax")
  %4 = mp.cast %3 : tensor<2x4x4xf32> -> tensor<2x4x4xbf16> loc("to_bf16")
  %5 = mp.matmul %4, %v : (tensor<2x4x4xbf16>, tensor<2x4x4xbf16>) -> tensor<2x4x4xbf16> loc("pv")
  return %5 : tensor<2x4x4xbf16>
}

// -----

// A value needed by two kernels is stored once, as a fusion result: the
// residual sum feeds the layer norm's kernel and a later add.
// CHECK-LABEL: func.func @fuse$value_needed_twice
// CHECK: %[[F:.*]]:2 = mp.fusion reduction({{.*}}) {ops = ["residual", "ln"]}
// CHECK: mp.yield %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>
// CHECK: mp.linear %[[F]]#1
// CHECK: mp.add %[[F]]#0,
func.func @fuse$value_needed_twice(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %g: tensor<8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %0 = mp.add %x, %y : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("residual")
  %1 = mp.layer_norm %0, %g {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("ln")
  %2 = mp.linear %1, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc")
  %3 = mp.add %0, %2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("residual2")
  return %3 : tensor<4x8xf32>
}

// -----

// Bias and tanh-GELU after a GEMM are its cuBLASLt epilogue: the bias
// becomes the GEMM's own (the accumulator starts from it); exact (erf)
// GELU is not a cuBLASLt epilogue and runs as its own kernel.
// CHECK-LABEL: func.func @fuse$gemm_epilogues
// CHECK: %[[G:.*]] = mp.fusion gemm({{.*}}) {ops = ["fc1", "bias1", "gelu1"]}
// CHECK: ^bb0(%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>, %[[B:.*]]: tensor<8xf32>):
// CHECK-NEXT: %[[L:.*]] = mp.linear %[[X]], %[[W]], %[[B]] : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[A:.*]] = mp.gelu %[[L]] approximate tanh
// CHECK-NEXT: mp.yield %[[A]]
// CHECK: %[[G2:.*]] = mp.fusion gemm({{.*}}) {ops = ["fc2", "bias2"]}
// CHECK: mp.gelu %[[G2]] :
func.func @fuse$gemm_epilogues(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = mp.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc1")
  %1 = mp.add %0, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32> loc("bias1")
  %2 = mp.gelu %1 approximate tanh : tensor<4x8xf32> loc("gelu1")
  %3 = mp.linear %2, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc2")
  %4 = mp.add %3, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32> loc("bias2")
  %5 = mp.gelu %4 : tensor<4x8xf32> loc("gelu2")
  return %5 : tensor<4x8xf32>
}

// -----

// What must not fuse: a GEMM result used twice keeps no epilogue; a
// broadcast operand of another shape stays a separate kernel's output; a
// reduction over a leading axis runs on its own; two reductions never share
// a kernel.
// CHECK-LABEL: func.func @fuse$must_not_fuse
// CHECK: %[[MM:.*]] = mp.matmul
// CHECK-NOT: mp.fusion gemm
// CHECK: %[[R:.*]] = mp.relu %[[MM]]
// CHECK: mp.reduce_sum %{{.*}} {axes = array<i64: 0>}
// CHECK: mp.fusion reduction({{.*}}) {ops = ["sm1", "double"]}
// CHECK: mp.fusion reduction({{.*}}) {ops = ["sm2", "exp2"]}
func.func @fuse$must_not_fuse(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x8xf32>, tensor<4x8xf32>) {
  %0 = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm")
  %1 = mp.relu %0 : tensor<4x8xf32> loc("act")
  %2 = mp.reduce_sum %1 {axes = array<i64: 0>} : tensor<4x8xf32> -> tensor<1x8xf32> loc("colsum")
  %3 = mp.softmax %1 {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32> loc("sm1")
  %4 = mp.add %3, %3 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("double")
  %5 = mp.softmax %4 {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32> loc("sm2")
  %6 = mp.exp %5 : tensor<4x8xf32> loc("exp2")
  return %0, %6, %2, %1 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x8xf32>, tensor<4x8xf32>
}

// -----

// An outside op between two fusible ops that depends on the first and
// feeds the second would form a cycle: the ops stay in separate kernels.
// CHECK-LABEL: func.func @fuse$no_cycle
// CHECK: %[[A:.*]] = mp.exp
// CHECK: %[[T:.*]] = mp.transpose %[[A]]
// CHECK: mp.add %[[A]], %[[T]]
// CHECK-NOT: mp.fusion
func.func @fuse$no_cycle(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = mp.exp %x : tensor<4x4xf32>
  %1 = mp.transpose %0 {perm = array<i64: 1, 0>} : tensor<4x4xf32> -> tensor<4x4xf32>
  %2 = mp.add %0, %1 : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// At a narrow dtype the fusion states what cuBLASLt computes: the GEMM
// result, bias and activation stay f32 and one cast rounds the output (the
// unfused graph rounded the GEMM result to bf16 first).
// CHECK-LABEL: func.func @fuse$epilogue_numerics
// CHECK: mp.fusion gemm({{.*}}) {ops = ["mm", "bias", "act"]}
// CHECK: ^bb0(%[[X:.*]]: tensor<4x8xbf16>, %[[W:.*]]: tensor<8x8xbf16>, %[[B:.*]]: tensor<8xbf16>):
// CHECK-NEXT: %[[BF:.*]] = mp.cast %[[B]] : tensor<8xbf16> -> tensor<8xf32>
// CHECK-NEXT: %[[L:.*]] = mp.linear %[[X]], %[[W]], %[[BF]] {mp.precision = bf16} : (tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[R:.*]] = mp.relu %[[L]] : tensor<4x8xf32>
// CHECK-NEXT: %[[C:.*]] = mp.cast %[[R]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: mp.yield %[[C]] : tensor<4x8xbf16>
func.func @fuse$epilogue_numerics(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = mp.matmul %x, %w {mp.precision = bf16} : (tensor<4x8xbf16>, tensor<8x8xbf16>) -> tensor<4x8xbf16> loc("mm")
  %1 = mp.add %0, %b : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16> loc("bias")
  %2 = mp.relu %1 : tensor<4x8xbf16> loc("act")
  return %2 : tensor<4x8xbf16>
}

// -----

// Groups whose values nobody reads still store their last value, as an
// unfused dead op does (a fusion with no result had no yield to lower, and
// a GEMM fusion with none crashed the pass).
// CHECK-LABEL: func.func @fuse$dead_values
// CHECK: %[[G:.*]] = mp.fusion gemm({{.*}}) {ops = ["fc", "bias", "act"]}
// CHECK: mp.relu
// CHECK-NEXT: mp.yield %{{.*}} : tensor<4x8xf32>
// CHECK: %[[E:.*]] = mp.fusion elementwise(%{{.*}}) {ops = ["r", "t"]}
// CHECK: %[[T:.*]] = mp.tanh
// CHECK-NEXT: mp.yield %[[T]] : tensor<4x8xf32>
// CHECK: %[[X:.*]] = mp.exp
// CHECK: return %[[X]]
func.func @fuse$dead_values(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = mp.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc")
  %1 = mp.add %0, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32> loc("bias")
  %2 = mp.relu %1 : tensor<4x8xf32> loc("act")
  %3 = mp.relu %x : tensor<4x8xf32> loc("r")
  %4 = mp.tanh %3 : tensor<4x8xf32> loc("t")
  %5 = mp.exp %x : tensor<4x8xf32> loc("e")
  return %5 : tensor<4x8xf32>
}

// -----

// An FP8 matmul with a matrix weight takes a bias add as its own bias: it
// becomes an mp.scaled_linear (GemmOpInterface::buildWithBias), the bias
// widened to the f32 epilogue.
// CHECK-LABEL: func.func @fuse$scaled_gemm_bias
// CHECK: mp.fusion gemm({{.*}}) {ops = ["mm", "bias"]}
// CHECK: ^bb0(%[[X:.*]]: tensor<4x8xf8E4M3FN>, %[[W:.*]]: tensor<8x8xf8E4M3FN>, %[[SX:.*]]: tensor<f32>, %[[SW:.*]]: tensor<f32>, %[[B:.*]]: tensor<8xbf16>):
// CHECK-NEXT: %[[BF:.*]] = mp.cast %[[B]] : tensor<8xbf16> -> tensor<8xf32>
// CHECK-NEXT: %[[L:.*]] = mp.scaled_linear %[[X]], %[[W]], %[[SX]], %[[SW]], %[[BF]] : {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: %[[C:.*]] = mp.cast %[[L]] : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK-NEXT: mp.yield %[[C]]
// CHECK-NOT: mp.scaled_matmul
func.func @fuse$scaled_gemm_bias(%x: tensor<4x8xf8E4M3FN>, %w: tensor<8x8xf8E4M3FN>, %sx: tensor<f32>, %sw: tensor<f32>, %b: tensor<8xbf16>) -> tensor<4x8xbf16> {
  %0 = mp.scaled_matmul %x, %w, %sx, %sw : (tensor<4x8xf8E4M3FN>, tensor<8x8xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x8xbf16> loc("mm")
  %1 = mp.add %0, %b : tensor<4x8xbf16>, tensor<8xbf16> -> tensor<4x8xbf16> loc("bias")
  return %1 : tensor<4x8xbf16>
}

// -----

// A batched right operand has no bias epilogue: the add stays in the
// fusion after the matmul.
// CHECK-LABEL: func.func @fuse$batched_matmul_bias
// CHECK: mp.fusion gemm({{.*}}) {ops = ["bmm", "bias"]}
// CHECK: %[[M:.*]] = mp.matmul
// CHECK-NEXT: %[[A:.*]] = mp.add %[[M]], %{{.*}} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: mp.yield %[[A]]
func.func @fuse$batched_matmul_bias(%x: tensor<2x4x8xf32>, %w: tensor<2x8x8xf32>, %b: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %0 = mp.matmul %x, %w : (tensor<2x4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32> loc("bmm")
  %1 = mp.add %0, %b : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x4x8xf32> loc("bias")
  return %1 : tensor<2x4x8xf32>
}
