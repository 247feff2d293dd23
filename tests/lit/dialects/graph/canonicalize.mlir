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
