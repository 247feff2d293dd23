// RUN: mixprec-opt --split-input-file --mp-fold-constants %s | FileCheck %s
// RUN: mixprec-opt --split-input-file --mp-fold-constants=max-elements=3 %s | FileCheck %s --check-prefix=LIMIT

// Integers wrap as at run time (int64 two's complement; i32 keeps the low
// 32 bits).
// CHECK-LABEL: func.func @add$int_wrap
// CHECK-NEXT: %[[A:.*]] = mp.constant dense<-9223372036854775808> : tensor<i64>
// CHECK-NEXT: %[[B:.*]] = mp.constant dense<0> : tensor<i32>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @add$int_wrap() -> (tensor<i64>, tensor<i32>) {
  %max = mp.constant dense<9223372036854775807> : tensor<i64>
  %one = mp.constant dense<1> : tensor<i64>
  %0 = mp.add %max, %one : tensor<i64>, tensor<i64> -> tensor<i64>
  %big = mp.constant dense<65536> : tensor<i32>
  %1 = mp.mul %big, %big : tensor<i32>, tensor<i32> -> tensor<i32>
  return %0, %1 : tensor<i64>, tensor<i32>
}

// -----

// Floats are computed in FP32 (2^24 + 1 is 2^24 there, printed as
// 0x4B800000; not in double) and rounded to the result's dtype (1 + 2^-8
// ties to 1 in bf16).
// CHECK-LABEL: func.func @add$fp32_compute
// CHECK-NEXT: %[[A:.*]] = mp.constant dense<0x4B800000> : tensor<f32>
// CHECK-NEXT: %[[B:.*]] = mp.constant dense<1.000000e+00> : tensor<bf16>
// CHECK-NEXT: return %[[A]], %[[B]]
func.func @add$fp32_compute() -> (tensor<f32>, tensor<bf16>) {
  %a = mp.constant dense<16777216.0> : tensor<f32>
  %b = mp.constant dense<1.0> : tensor<f32>
  %0 = mp.add %a, %b : tensor<f32>, tensor<f32> -> tensor<f32>
  %c = mp.constant dense<1.0> : tensor<bf16>
  %d = mp.constant dense<0.00390625> : tensor<bf16>
  %1 = mp.add %c, %d : tensor<bf16>, tensor<bf16> -> tensor<bf16>
  return %0, %1 : tensor<f32>, tensor<bf16>
}

// -----

// Operands broadcast as numpy's; a comparison gives i1.
// CHECK-LABEL: func.func @mul$broadcast
// CHECK-NEXT: %[[M:.*]] = mp.constant dense<{{\[}}[2, 4, 6], [8, 10, 12]]> : tensor<2x3xi64>
// CHECK-NEXT: %[[E:.*]] = mp.constant dense<[false, true, false]> : tensor<3xi1>
// CHECK-NEXT: return %[[M]], %[[E]]
func.func @mul$broadcast() -> (tensor<2x3xi64>, tensor<3xi1>) {
  %a = mp.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %b = mp.constant dense<2> : tensor<i64>
  %0 = mp.mul %a, %b : tensor<2x3xi64>, tensor<i64> -> tensor<2x3xi64>
  %c = mp.constant dense<[1, 2, 3]> : tensor<3xi64>
  %1 = mp.equal %c, %b : tensor<3xi64>, tensor<i64> -> tensor<3xi1>
  return %0, %1 : tensor<2x3xi64>, tensor<3xi1>
}

// -----

// A shape computation folds in one pass, data movement of integers
// included; the constants it read go.
// CHECK-LABEL: func.func @concat$shape_chain
// CHECK-NEXT: %[[S:.*]] = mp.constant dense<[2, 3, 4]> : tensor<3xi64>
// CHECK-NEXT: return %[[S]]
func.func @concat$shape_chain() -> tensor<3xi64> {
  %shape = mp.constant dense<[2, 6, 8]> : tensor<3xi64>
  %idx = mp.constant dense<0> : tensor<1xi64>
  %n = mp.gather %shape, %idx {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %tail = mp.slice %shape {starts = array<i64: 1>, steps = array<i64: 1>} : tensor<3xi64> -> tensor<2xi64>
  %two = mp.constant dense<2> : tensor<i64>
  %half = mp.div %tail, %two : tensor<2xi64>, tensor<i64> -> tensor<2xi64>
  %h = mp.sub %half, %idx : tensor<2xi64>, tensor<1xi64> -> tensor<2xi64>
  %0 = mp.concat %n, %h {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %1 = mp.add %0, %idx : tensor<3xi64>, tensor<1xi64> -> tensor<3xi64>
  return %1 : tensor<3xi64>
}

// -----

// Casts of constants fold with the run time's rounding and truncation.
// CHECK-LABEL: func.func @cast$float_to_int
// CHECK-NEXT: %[[C:.*]] = mp.constant dense<[2, -2, 0]> : tensor<3xi64>
// CHECK-NEXT: return %[[C]]
func.func @cast$float_to_int() -> tensor<3xi64> {
  %f = mp.constant dense<[2.9, -2.9, 0.5]> : tensor<3xf32>
  %0 = mp.cast %f : tensor<3xf32> -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// Data movement of a float constant (a weight) stays: its layout is the
// compiler's. Float compute on constants folds.
// CHECK-LABEL: func.func @transpose$float_weight_stays
// CHECK: %[[W:.*]] = mp.constant dense<{{.*}}> : tensor<2x3xf32>
// CHECK: %[[T:.*]] = mp.transpose %[[W]]
// CHECK: %[[E:.*]] = mp.constant dense<{{.*}}> : tensor<2x3xf32>
// CHECK-NOT: mp.exp
// CHECK: return %[[T]], %[[E]]
func.func @transpose$float_weight_stays() -> (tensor<3x2xf32>, tensor<2x3xf32>) {
  %w = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = mp.transpose %w {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = mp.exp %w : tensor<2x3xf32>
  return %0, %1 : tensor<3x2xf32>, tensor<2x3xf32>
}

// -----

// An op that reads a run-time value stays; so does its constant operand.
// CHECK-LABEL: func.func @add$run_time_operand_stays
// CHECK: %[[C:.*]] = mp.constant dense<1> : tensor<i64>
// CHECK: %[[A:.*]] = mp.add %{{.*}}, %[[C]]
// CHECK: return %[[A]]
func.func @add$run_time_operand_stays(%x: tensor<4xi64>) -> tensor<4xi64> {
  %one = mp.constant dense<1> : tensor<i64>
  %0 = mp.add %x, %one : tensor<4xi64>, tensor<i64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A result over the element limit stays (max-elements=3 in the LIMIT run).
// CHECK-LABEL: func.func @add$limit
// CHECK-NOT: mp.add
// LIMIT-LABEL: func.func @add$limit
// LIMIT: mp.add
func.func @add$limit() -> tensor<4xi64> {
  %a = mp.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %0 = mp.add %a, %a : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
