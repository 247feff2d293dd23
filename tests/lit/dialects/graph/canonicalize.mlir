// RUN: mixprec-opt --split-input-file --canonicalize %s | FileCheck %s
// RUN: mixprec-opt --split-input-file --canonicalize --mlir-print-debuginfo %s | FileCheck %s --check-prefix=LOC

// The form exporters write for SiLU (PyTorch's F.silu exports as
// Mul(x, Sigmoid(x))) becomes one mp.silu that keeps the product's name.
// CHECK-LABEL: func.func @mul$sigmoid_to_silu
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[S:.*]] = mp.silu %[[X]] : tensor<4x8xf32>
// LOC: mp.silu {{.*}} loc(#[[ACT:.*]])
// LOC: #[[ACT]] = loc("act")
// CHECK-NEXT: return %[[S]]
func.func @mul$sigmoid_to_silu(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = mp.sigmoid %x : tensor<4x8xf32> loc("sig")
  %y = mp.mul %x, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("act")
  return %y : tensor<4x8xf32>
}

// -----

// Either operand order.
// CHECK-LABEL: func.func @mul$sigmoid_first
// CHECK-NEXT: mp.silu
// CHECK-NOT: mp.mul
func.func @mul$sigmoid_first(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %s = mp.sigmoid %x : tensor<4x8xbf16>
  %y = mp.mul %s, %x : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x8xbf16>
  return %y : tensor<4x8xbf16>
}

// -----

// The sigmoid of another value is a gated product (GLU), not SiLU.
// CHECK-LABEL: func.func @mul$sigmoid_of_other
// CHECK: mp.sigmoid
// CHECK: mp.mul
// CHECK-NOT: mp.silu
func.func @mul$sigmoid_of_other(%x: tensor<4x8xf32>, %g: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %s = mp.sigmoid %g : tensor<4x8xf32>
  %y = mp.mul %x, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A sigmoid with another use stays (SiLU would compute it twice).
// CHECK-LABEL: func.func @mul$sigmoid_used_twice
// CHECK: mp.sigmoid
// CHECK: mp.mul
// CHECK-NOT: mp.silu
func.func @mul$sigmoid_used_twice(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = mp.sigmoid %x : tensor<4x8xf32>
  %y = mp.mul %x, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %y, %s : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A cast to the input's type, and widening then narrowing back, are the
// identity.
// CHECK-LABEL: func.func @cast$identities
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[Y:.*]]: tensor<4xbf16>)
// CHECK-NOT: mp.cast
// CHECK: return %[[X]], %[[Y]]
func.func @cast$identities(%x: tensor<4xf32>, %y: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xbf16>) {
  %0 = mp.cast %x : tensor<4xf32> -> tensor<4xf32>
  %1 = mp.cast %y : tensor<4xbf16> -> tensor<4xf32>
  %2 = mp.cast %1 : tensor<4xf32> -> tensor<4xbf16>
  return %0, %2 : tensor<4xf32>, tensor<4xbf16>
}

// -----

// Narrowing then widening rounds: both casts stay. A cast after an exact
// widening casts the original (f16 -> f32 -> bf16 is f16 -> bf16).
// CHECK-LABEL: func.func @cast$rounding_pairs
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<4xf16>)
// CHECK: %[[N:.*]] = mp.cast %[[X]] : tensor<4xf32> -> tensor<4xbf16>
// CHECK: %[[W:.*]] = mp.cast %[[N]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: %[[B:.*]] = mp.cast %[[H]] : tensor<4xf16> -> tensor<4xbf16>
// CHECK-NOT: mp.cast
// CHECK: return %[[W]], %[[B]]
func.func @cast$rounding_pairs(%x: tensor<4xf32>, %h: tensor<4xf16>) -> (tensor<4xf32>, tensor<4xbf16>) {
  %0 = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %1 = mp.cast %0 : tensor<4xbf16> -> tensor<4xf32>
  %2 = mp.cast %h : tensor<4xf16> -> tensor<4xf32>
  %3 = mp.cast %2 : tensor<4xf32> -> tensor<4xbf16>
  return %1, %3 : tensor<4xf32>, tensor<4xbf16>
}

// -----

// A cast of a constant is the constant rounded as the run-time cast rounds
// (0.1 -> 0.10009765625 in bf16; FP8 saturates 1000 -> 448); the f32
// originals go.
// CHECK-LABEL: func.func @cast$constants
// CHECK-NOT: tensor<2xf32>
// CHECK-DAG: mp.constant dense<[1.000980e-01, -2.500000e-01]> : tensor<2xbf16>
// CHECK-DAG: mp.constant dense<[4.480000e+02, -3.125000e-01]> : tensor<2xf8E4M3FN>
// CHECK-NOT: mp.cast
func.func @cast$constants() -> (tensor<2xbf16>, tensor<2xf8E4M3FN>) {
  %0 = mp.constant dense<[0.1, -0.25]> : tensor<2xf32>
  %1 = mp.cast %0 : tensor<2xf32> -> tensor<2xbf16>
  %2 = mp.constant dense<[1000.0, -0.3]> : tensor<2xf32>
  %3 = mp.cast %2 : tensor<2xf32> -> tensor<2xf8E4M3FN>
  return %1, %3 : tensor<2xbf16>, tensor<2xf8E4M3FN>
}

// -----

// A second cast of one value to one type is the first.
// CHECK-LABEL: func.func @cast$duplicates
// CHECK: %[[C:.*]] = mp.cast
// CHECK-NOT: mp.cast
// CHECK: return %[[C]], %[[C]]
func.func @cast$duplicates(%x: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xbf16>) {
  %0 = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %1 = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
  return %0, %1 : tensor<4xbf16>, tensor<4xbf16>
}

// -----

// mp.amax and mp.quantize read the value before an exact widening; a
// widening from FP8 stays in front of mp.amax.
// CHECK-LABEL: func.func @cast$widening_into_scaling
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>, %[[S:.*]]: tensor<f32>, %[[Q:.*]]: tensor<4xf8E5M2>)
// CHECK: mp.amax %[[X]] : tensor<4xbf16>
// CHECK: mp.quantize %[[X]], %[[S]]
// CHECK: %[[W:.*]] = mp.cast %[[Q]] : tensor<4xf8E5M2> -> tensor<4xf32>
// CHECK: mp.amax %[[W]] : tensor<4xf32>
func.func @cast$widening_into_scaling(%x: tensor<4xbf16>, %s: tensor<f32>, %q: tensor<4xf8E5M2>) -> (tensor<f32>, tensor<4xf8E4M3FN>, tensor<f32>) {
  %0 = mp.cast %x : tensor<4xbf16> -> tensor<4xf32>
  %1 = mp.amax %0 : tensor<4xf32> -> tensor<f32>
  %2 = mp.quantize %0, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf8E4M3FN>
  %3 = mp.cast %q : tensor<4xf8E5M2> -> tensor<4xf32>
  %4 = mp.amax %3 : tensor<4xf32> -> tensor<f32>
  return %1, %2, %4 : tensor<f32>, tensor<4xf8E4M3FN>, tensor<f32>
}

// -----

// A reshape to its input's type, the identity transpose, a one-input concat
// and a slice of everything are their inputs.
// CHECK-LABEL: func.func @movement$identities
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]], %[[X]]
func.func @movement$identities(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = mp.reshape %x : tensor<2x3xf32> -> tensor<2x3xf32>
  %1 = mp.transpose %x {perm = array<i64: 0, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = mp.concat %x {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = mp.slice %x {starts = array<i64: 0, 0>, steps = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0, %1, %2, %3 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A reshape of a reshape reads the first one's input; back to the input's
// shape, both go.
// CHECK-LABEL: func.func @reshape$of_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[R:.*]] = mp.reshape %[[X]] : tensor<2x3xf32> -> tensor<6xf32>
// CHECK-NEXT: return %[[R]], %[[X]]
func.func @reshape$of_reshape(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<2x3xf32>) {
  %0 = mp.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = mp.reshape %0 : tensor<3x2xf32> -> tensor<6xf32>
  %2 = mp.reshape %0 : tensor<3x2xf32> -> tensor<2x3xf32>
  return %1, %2 : tensor<6xf32>, tensor<2x3xf32>
}

// -----

// An integer constant (a shape) reshapes at compile time; a float one (a
// weight) stays as stored.
// CHECK-LABEL: func.func @reshape$constants
// CHECK-DAG: %[[I:.*]] = mp.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi64>
// CHECK-DAG: %[[F:.*]] = mp.constant dense<{{.*}}> : tensor<4xf32>
// CHECK-DAG: %[[R:.*]] = mp.reshape %[[F]] : tensor<4xf32> -> tensor<2x2xf32>
// CHECK: return %[[I]], %[[R]]
func.func @reshape$constants() -> (tensor<2x2xi64>, tensor<2x2xf32>) {
  %i = mp.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %f = mp.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = mp.reshape %i : tensor<4xi64> -> tensor<2x2xi64>
  %1 = mp.reshape %f : tensor<4xf32> -> tensor<2x2xf32>
  return %0, %1 : tensor<2x2xi64>, tensor<2x2xf32>
}

// -----

// GELU (tanh form) as the legacy exporter writes Hugging Face's gelu_new:
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * pow(x, 3)))) is one
// mp.gelu approximate tanh with the product's name.
// CHECK-LABEL: func.func @gelu$tanh_pow
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[G:.*]] = mp.gelu %[[X]] approximate tanh : tensor<4x8xf32>
// LOC: mp.gelu {{.*}} loc(#[[ACT:.*]])
// LOC: #[[ACT]] = loc("act/Mul_3")
// CHECK-NEXT: return %[[G]]
func.func @gelu$tanh_pow(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = mp.constant dense<5.000000e-01> : tensor<f32>
  %three = mp.constant dense<3.000000e+00> : tensor<f32>
  %c = mp.constant dense<4.471500e-02> : tensor<f32>
  %k = mp.constant dense<0.797884583> : tensor<f32>
  %one = mp.constant dense<1.000000e+00> : tensor<f32>
  %0 = mp.mul %half, %x : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %1 = mp.pow %x, %three : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %2 = mp.mul %c, %1 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %3 = mp.add %x, %2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %4 = mp.mul %k, %3 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %5 = mp.tanh %4 : tensor<4x8xf32>
  %6 = mp.add %one, %5 : tensor<f32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %7 = mp.mul %0, %6 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("act/Mul_3")
  return %7 : tensor<4x8xf32>
}

// -----

// The cube as x * (x * x), the products grouped the other way.
// CHECK-LABEL: func.func @gelu$tanh_cube
// CHECK-NEXT: mp.gelu %{{.*}} approximate tanh
// CHECK-NEXT: return
func.func @gelu$tanh_cube(%x: tensor<16xbf16>) -> tensor<16xbf16> {
  %half = mp.constant dense<5.000000e-01> : tensor<bf16>
  %c = mp.constant dense<4.471500e-02> : tensor<bf16>
  %k = mp.constant dense<0.797884583> : tensor<bf16>
  %one = mp.constant dense<1.000000e+00> : tensor<bf16>
  %sq = mp.mul %x, %x : tensor<16xbf16>, tensor<16xbf16> -> tensor<16xbf16>
  %cube = mp.mul %x, %sq : tensor<16xbf16>, tensor<16xbf16> -> tensor<16xbf16>
  %2 = mp.mul %cube, %c : tensor<16xbf16>, tensor<bf16> -> tensor<16xbf16>
  %3 = mp.add %2, %x : tensor<16xbf16>, tensor<16xbf16> -> tensor<16xbf16>
  %4 = mp.mul %3, %k : tensor<16xbf16>, tensor<bf16> -> tensor<16xbf16>
  %5 = mp.tanh %4 : tensor<16xbf16>
  %6 = mp.add %5, %one : tensor<16xbf16>, tensor<bf16> -> tensor<16xbf16>
  %7 = mp.mul %x, %6 : tensor<16xbf16>, tensor<16xbf16> -> tensor<16xbf16>
  %8 = mp.mul %7, %half : tensor<16xbf16>, tensor<bf16> -> tensor<16xbf16>
  return %8 : tensor<16xbf16>
}

// -----

// GELU (erf form) as BERT's exports write it: x * 0.5 * (1 + erf(x / sqrt 2)).
// The product's calibration evidence stays with the GELU (static FP8
// scales for the GEMM that reads it).
// CHECK-LABEL: func.func @gelu$erf
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: %[[G:.*]] = mp.gelu %[[X]] {mp.calib_amax = 3.000000e+00 : f32, mp.calib_underflow = 0.000000e+00 : f32} : tensor<2x3xf32>
// CHECK-NEXT: return %[[G]]
func.func @gelu$erf(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %half = mp.constant dense<5.000000e-01> : tensor<f32>
  %sqrt2 = mp.constant dense<1.41421354> : tensor<f32>
  %one = mp.constant dense<1.000000e+00> : tensor<f32>
  %0 = mp.div %x, %sqrt2 : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %1 = mp.erf %0 : tensor<2x3xf32>
  %2 = mp.add %1, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %3 = mp.mul %x, %2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = mp.mul %3, %half {mp.calib_amax = 3.0 : f32, mp.calib_underflow = 0.0 : f32} : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  return %4 : tensor<2x3xf32>
}

// -----

// Not GELU: another constant (0.6), a value read elsewhere (the tanh), or
// the erf of another value stay as they are.
// CHECK-LABEL: func.func @gelu$not
// CHECK-NOT: mp.gelu
// CHECK: return
func.func @gelu$not(%x: tensor<2x3xf32>, %y: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %half = mp.constant dense<5.000000e-01> : tensor<f32>
  %other = mp.constant dense<6.000000e-01> : tensor<f32>
  %sqrt2 = mp.constant dense<1.41421354> : tensor<f32>
  %one = mp.constant dense<1.000000e+00> : tensor<f32>
  %0 = mp.div %x, %sqrt2 : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %1 = mp.erf %0 : tensor<2x3xf32>
  %2 = mp.add %1, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %3 = mp.mul %x, %2 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %4 = mp.mul %3, %other : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %10 = mp.div %y, %sqrt2 : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %11 = mp.erf %10 : tensor<2x3xf32>
  %12 = mp.add %11, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %13 = mp.mul %x, %12 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %14 = mp.mul %13, %half : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %20 = mp.div %x, %sqrt2 : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %21 = mp.erf %20 : tensor<2x3xf32>
  %22 = mp.add %21, %one : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %23 = mp.mul %x, %22 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %24 = mp.mul %23, %half : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %25 = mp.add %24, %21 : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  return %4, %14, %25 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}
