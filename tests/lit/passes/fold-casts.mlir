// RUN: mixprec-opt --split-input-file --mp-fold-casts %s | FileCheck %s
// RUN: mixprec-opt --split-input-file --mp-fold-casts --mlir-print-debuginfo %s | FileCheck %s --check-prefix=LOC

// Widening then narrowing back is the identity: both casts go.
// CHECK-LABEL: func.func @fold$widen_then_narrow
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>)
// CHECK-NOT: mp.cast
// CHECK: return %[[X]]
func.func @fold$widen_then_narrow(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = mp.cast %x : tensor<4xbf16> -> tensor<4xf32>
  %1 = mp.cast %0 : tensor<4xf32> -> tensor<4xbf16>
  return %1 : tensor<4xbf16>
}

// -----

// Narrowing then widening rounds: the pair must stay.
// CHECK-LABEL: func.func @fold$narrow_then_widen_stays
// CHECK: %[[N:.*]] = mp.cast %{{.*}} : tensor<4xf32> -> tensor<4xbf16>
// CHECK: %[[W:.*]] = mp.cast %[[N]] : tensor<4xbf16> -> tensor<4xf32>
// CHECK: return %[[W]]
func.func @fold$narrow_then_widen_stays(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %1 = mp.cast %0 : tensor<4xbf16> -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// f16 -> f32 -> bf16 is exact then rounding: it becomes one f16 -> bf16
// cast (same value); f16 and bf16 never fold into each other.
// CHECK-LABEL: func.func @fold$widening_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4xf16>, %[[Y:.*]]: tensor<4xf8E4M3FN>)
// CHECK: %[[C:.*]] = mp.cast %[[X]] : tensor<4xf16> -> tensor<4xbf16>
// CHECK: %[[D:.*]] = mp.cast %[[Y]] : tensor<4xf8E4M3FN> -> tensor<4xf32>
// CHECK-NOT: mp.cast
// CHECK: return %[[C]], %[[D]]
func.func @fold$widening_chain(%x: tensor<4xf16>, %y: tensor<4xf8E4M3FN>) -> (tensor<4xbf16>, tensor<4xf32>) {
  %0 = mp.cast %x : tensor<4xf16> -> tensor<4xf32>
  %1 = mp.cast %0 : tensor<4xf32> -> tensor<4xbf16>
  %2 = mp.cast %y : tensor<4xf8E4M3FN> -> tensor<4xbf16>
  %3 = mp.cast %2 : tensor<4xbf16> -> tensor<4xf32>
  return %1, %3 : tensor<4xbf16>, tensor<4xf32>
}

// -----

// A cast to the same type disappears; duplicate casts of one value merge.
// CHECK-LABEL: func.func @fold$identity_and_duplicates
// CHECK-COUNT-1: mp.cast
// CHECK-NOT: mp.cast
func.func @fold$identity_and_duplicates(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>) {
  %0 = mp.cast %x : tensor<4xf32> -> tensor<4xf32>
  %1 = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
  %2 = mp.cast %x : tensor<4xf32> -> tensor<4xbf16>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>
}

// -----

// Casts of constants are hoisted to compile time: the weight is stored in
// bf16 (0.1 rounds to 0.10009765625), FP8 saturates (1000 -> 448), f16
// overflows to inf, and the f32 original disappears.
// CHECK-LABEL: func.func @fold$constants
// CHECK-NOT: tensor<2xf32>
// CHECK-DAG: mp.constant dense<[1.000980e-01, -2.500000e-01]> : tensor<2xbf16>
// CHECK-DAG: mp.constant dense<[4.480000e+02, -3.125000e-01]> : tensor<2xf8E4M3FN>
// CHECK-DAG: mp.constant dense<[0x7C00, 1.000000e+00]> : tensor<2xf16>
// CHECK-NOT: mp.cast
func.func @fold$constants() -> (tensor<2xbf16>, tensor<2xf8E4M3FN>, tensor<2xf16>) {
  %0 = mp.constant dense<[0.1, -0.25]> : tensor<2xf32>
  %1 = mp.cast %0 : tensor<2xf32> -> tensor<2xbf16>
  %2 = mp.constant dense<[1000.0, -0.3]> : tensor<2xf32>
  %3 = mp.cast %2 : tensor<2xf32> -> tensor<2xf8E4M3FN>
  %4 = mp.constant dense<[70000.0, 1.0]> : tensor<2xf32>
  %5 = mp.cast %4 : tensor<2xf32> -> tensor<2xf16>
  return %1, %3, %5 : tensor<2xbf16>, tensor<2xf8E4M3FN>, tensor<2xf16>
}

// -----

// Scaling ops read the value before an exact widening.
// CHECK-LABEL: func.func @fold$widening_into_quantize
// CHECK-SAME: (%[[X:.*]]: tensor<4xbf16>
// CHECK-NOT: mp.cast
// CHECK: mp.amax %[[X]]
// CHECK: mp.quantize %[[X]]
func.func @fold$widening_into_quantize(%x: tensor<4xbf16>, %s: tensor<f32>) -> (tensor<f32>, tensor<4xf8E4M3FN>) {
  %0 = mp.cast %x : tensor<4xbf16> -> tensor<4xf32>
  %1 = mp.amax %0 : tensor<4xf32> -> tensor<f32>
  %2 = mp.quantize %0, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf8E4M3FN>
  return %1, %2 : tensor<f32>, tensor<4xf8E4M3FN>
}

// -----

// A folded weight stays where its cast was and keeps its name, and two
// equal weights stay two (unlike --canonicalize, which hoists constants,
// merges equal ones and drops their names): validate names a weight that
// overflows, and the report counts every weight.
// CHECK-LABEL: func.func @fold$weights_keep_place_and_name
// CHECK: mp.add
// CHECK-NEXT: %[[W1:.*]] = mp.constant dense<[1.000980e-01, -2.500000e-01]> : tensor<2xbf16>
// CHECK-NEXT: mp.add %{{.*}}, %[[W1]]
// CHECK-NEXT: %[[W2:.*]] = mp.constant dense<[1.000980e-01, -2.500000e-01]> : tensor<2xbf16>
// CHECK-NEXT: mp.add %{{.*}}, %[[W2]]
// LOC-LABEL: func.func @fold$weights_keep_place_and_name
// LOC: mp.constant {{.*}} loc(#[[L1:loc[0-9]*]])
// LOC: mp.constant {{.*}} loc(#[[L2:loc[0-9]*]])
// LOC-DAG: #[[L1]] = loc("w1")
// LOC-DAG: #[[L2]] = loc("w2")
func.func @fold$weights_keep_place_and_name(%x: tensor<2xbf16>) -> (tensor<2xbf16>, tensor<2xbf16>) {
  %a = mp.add %x, %x : tensor<2xbf16>, tensor<2xbf16> -> tensor<2xbf16> loc("add0")
  %w1 = mp.constant dense<[0.1, -0.25]> : tensor<2xf32> loc("w1")
  %c1 = mp.cast %w1 : tensor<2xf32> -> tensor<2xbf16> loc("w1")
  %y1 = mp.add %a, %c1 : tensor<2xbf16>, tensor<2xbf16> -> tensor<2xbf16> loc("add1")
  %w2 = mp.constant dense<[0.1, -0.25]> : tensor<2xf32> loc("w2")
  %c2 = mp.cast %w2 : tensor<2xf32> -> tensor<2xbf16> loc("w2")
  %y2 = mp.add %a, %c2 : tensor<2xbf16>, tensor<2xbf16> -> tensor<2xbf16> loc("add2")
  return %y1, %y2 : tensor<2xbf16>, tensor<2xbf16>
}
