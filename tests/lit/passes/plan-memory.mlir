// RUN: mixprec-opt --split-input-file --mp-plan-memory %s | FileCheck %s

// Buffers are 256-byte aligned and reused once their last reader has run:
// %a (4 KiB) dies after %b is computed, so %c takes its place; an alias
// shares its input's buffer and keeps it alive (%b's 4 KiB stay taken to
// the end); the input's buffer is reused by %d after its last reader %c.

// CHECK-LABEL: func.func @plan$reuse
// CHECK-SAME: (%{{.*}}: tensor<32x32xf32> {mpk.offset = 0 : i64})
// CHECK-SAME: attributes {mpk.arena_bytes = 12288 : i64, mpk.buffer_bytes = 20480 : i64}
// CHECK: mpk.kernel({{.*}}) {mpk.offsets = array<i64: 4096>
// CHECK: mpk.kernel({{.*}}) {mpk.offsets = array<i64: 8192>
// CHECK: mpk.alias {{.*}} {mpk.offsets = array<i64: 8192>}
// CHECK: mpk.kernel({{.*}}) {mpk.offsets = array<i64: 4096>
// CHECK: mpk.kernel({{.*}}) {mpk.offsets = array<i64: 0>
func.func @plan$reuse(%x: tensor<32x32xf32>) -> (tensor<1024xf32>, tensor<32x32xf32>) {
  %a = mpk.kernel(%x) {ops = ["a"], row_dims = 0 : i64, shape = array<i64: 32, 32>} : (tensor<32x32xf32>) -> tensor<32x32xf32> {
  ^bb0(%v: tensor<32x32xf32>):
    %r = mp.exp %v : tensor<32x32xf32>
    mpk.yield %r : tensor<32x32xf32>
  }
  %b = mpk.kernel(%a) {ops = ["b"], row_dims = 0 : i64, shape = array<i64: 32, 32>} : (tensor<32x32xf32>) -> tensor<32x32xf32> {
  ^bb0(%v: tensor<32x32xf32>):
    %r = mp.exp %v : tensor<32x32xf32>
    mpk.yield %r : tensor<32x32xf32>
  }
  %flat = mpk.alias %b : tensor<32x32xf32> -> tensor<1024xf32>
  %c = mpk.kernel(%x) {ops = ["c"], row_dims = 0 : i64, shape = array<i64: 32, 32>} : (tensor<32x32xf32>) -> tensor<32x32xf32> {
  ^bb0(%v: tensor<32x32xf32>):
    %r = mp.neg %v : tensor<32x32xf32>
    mpk.yield %r : tensor<32x32xf32>
  }
  %d = mpk.kernel(%c) {ops = ["d"], row_dims = 0 : i64, shape = array<i64: 32, 32>} : (tensor<32x32xf32>) -> tensor<32x32xf32> {
  ^bb0(%v: tensor<32x32xf32>):
    %r = mp.neg %v : tensor<32x32xf32>
    mpk.yield %r : tensor<32x32xf32>
  }
  return %flat, %d : tensor<1024xf32>, tensor<32x32xf32>
}

// -----

// Odd sizes round up to 256 bytes: 3 floats take 256, 100 bools take 256;
// the unread mask's buffer is free at once and the kernel reuses it.
// CHECK-LABEL: func.func @plan$alignment
// CHECK-SAME: %{{.*}}: tensor<100xi1> {mpk.offset = 256 : i64}
// CHECK-SAME: mpk.arena_bytes = 512 : i64, mpk.buffer_bytes = 768 : i64
// CHECK: mpk.kernel({{.*}}) {mpk.offsets = array<i64: 256>
func.func @plan$alignment(%x: tensor<3xf32>, %m: tensor<100xi1>) -> tensor<3xf32> {
  %a = mpk.kernel(%x) {ops = ["a"], row_dims = 0 : i64, shape = array<i64: 3>} : (tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%v: tensor<3xf32>):
    %r = mp.exp %v : tensor<3xf32>
    mpk.yield %r : tensor<3xf32>
  }
  return %a : tensor<3xf32>
}
