// RUN: mixprec-opt --split-input-file --mp-insert-scaling %s | FileCheck %s
// RUN: mixprec-opt --split-input-file --mp-insert-scaling=scaling=current %s | FileCheck %s --check-prefix=CURRENT
// RUN: mixprec-opt --split-input-file --mp-insert-scaling="scaling=auto margin=1" %s | FileCheck %s --check-prefix=MARGIN

// Current scaling: the activation gets amax -> scale -> quantize; the
// constant weight is quantized at compile time with its own scale
// (amax 2 -> 448 / 2 = 224, so 2 -> 448 and -1 -> -224); the GEMM becomes
// scaled_linear with both scales and keeps its bias, attributes and type.

// CHECK-LABEL: func.func @fp8$linear_current
// CHECK-SAME: (%[[X:.*]]: tensor<4x2xf32>, %[[B:.*]]: tensor<3xbf16>)
// CHECK-NOT: tensor<3x2xf32>
// CHECK: %[[A:.*]] = mp.amax %[[X]] : tensor<4x2xf32> -> tensor<f32>
// CHECK: %[[S:.*]] = mp.fp8_scale %[[A]] {format = f8E4M3FN} : tensor<f32> -> tensor<f32>
// CHECK: %[[Q:.*]] = mp.quantize %[[X]], %[[S]] : (tensor<4x2xf32>, tensor<f32>) -> tensor<4x2xf8E4M3FN>
// CHECK: %[[QW:.*]] = mp.constant dense<{{\[}}[4.480000e+02, -2.240000e+02], [1.120000e+02, 5.600000e+01], [2.240000e+02, 2.240000e+02]]> : tensor<3x2xf8E4M3FN>
// CHECK: %[[SW:.*]] = mp.constant dense<2.240000e+02> : tensor<f32>
// CHECK: %[[Y:.*]] = mp.scaled_linear %[[Q]], %[[QW]], %[[S]], %[[SW]], %[[B]] {acc_type = f32, mp.precision = f8E4M3FN, mp.reason = "policy:lowp", transpose_weight = true}
// CHECK-SAME: -> tensor<4x3xbf16>
// CHECK-NOT: mp.linear
// CHECK: return %[[Y]]
// MARGIN-LABEL: func.func @fp8$linear_current
// MARGIN: mp.fp8_scale %{{.*}} {format = f8E4M3FN, margin = 1 : i64}
// MARGIN: mp.constant dense<1.120000e+02> : tensor<f32>
func.func @fp8$linear_current(%x: tensor<4x2xf32>, %b: tensor<3xbf16>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[2.0, -1.0], [0.5, 0.25], [1.0, 1.0]]> : tensor<3x2xf32>
  %0 = mp.linear %x, %w, %b {acc_type = f32, mp.precision = f8E4M3FN, mp.reason = "policy:lowp", transpose_weight = true} : (tensor<4x2xf32>, tensor<3x2xf32>, tensor<3xbf16>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// Static scaling from calibration: the producer's amax (8) gives the
// constant scale 448 / 8 = 56, with no amax op; scaling=current ignores it.
// The [k, n] = [2, 3] weight is quantized now and stored transposed,
// [n, k] = [3, 2], in an mp.scaled_linear with transpose_weight: the TN
// layout cuBLASLt needs for FP8 on sm_89/sm_90.

// CHECK-LABEL: func.func @fp8$matmul_static
// CHECK: %[[R:.*]] = mp.relu
// CHECK-NOT: mp.amax
// CHECK-DAG: %[[S:.*]] = mp.constant dense<5.600000e+01> : tensor<f32>
// CHECK: %[[Q:.*]] = mp.quantize %[[R]], %[[S]]
// CHECK: %[[W:.*]] = mp.constant dense<{{.*}}> : tensor<3x2xf8E4M3FN>
// CHECK: mp.scaled_linear %[[Q]], %[[W]], %[[S]], %{{.*}} {acc_type = f32, mp.precision = f8E4M3FN, transpose_weight = true} : (tensor<4x2xf8E4M3FN>, tensor<3x2xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x3xbf16>
// CHECK-NOT: mp.scaled_matmul
// CURRENT-LABEL: func.func @fp8$matmul_static
// CURRENT: mp.amax
func.func @fp8$matmul_static(%x: tensor<4x2xf32>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %r = mp.relu %x {mp.calib_amax = 8.0 : f32} : tensor<4x2xf32>
  %0 = mp.matmul %r, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// The transposed weight holds the same quantized values: with amax 6 the
// scale is 448 / 6, so [[1, 2, 3], [4, 5, 6]] quantizes to
// [[72, 144, 224], [288, 384, 448]], stored as its transpose.
// CHECK-LABEL: func.func @fp8$weight_transposed
// CHECK: mp.constant dense<{{\[\[}}7.200000e+01, 2.880000e+02], [1.440000e+02, 3.840000e+02], [2.240000e+02, 4.480000e+02]]> : tensor<3x2xf8E4M3FN>
func.func @fp8$weight_transposed(%x: tensor<4x2xf32>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %0 = mp.matmul %x, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// Ops not assigned FP8 are left alone.
// CHECK-LABEL: func.func @fp8$untouched
// CHECK-NOT: mp.quantize
// CHECK: mp.matmul
func.func @fp8$untouched(%x: tensor<4x2xbf16>, %w: tensor<2x2xbf16>) -> tensor<4x2xbf16> {
  %0 = mp.matmul %x, %w {mp.precision = bf16} : (tensor<4x2xbf16>, tensor<2x2xbf16>) -> tensor<4x2xbf16>
  return %0 : tensor<4x2xbf16>
}

// -----

// A weight holding an inf: its scale is NaN and so is every quantized
// weight, which keeps the inf visible in the GEMM's output (before, the
// scale was 1 and the inf became 448, the others unscaled).

// CHECK-LABEL: func.func @fp8$linear_inf_weight
// CHECK: %[[QW:.*]] = mp.constant dense<0x7F> : tensor<3x2xf8E4M3FN>
// CHECK: %[[SW:.*]] = mp.constant dense<0x7FC00000> : tensor<f32>
// CHECK: mp.scaled_linear %{{.*}}, %[[QW]], %{{.*}}, %[[SW]]
func.func @fp8$linear_inf_weight(%x: tensor<4x2xf32>) -> tensor<4x3xbf16> {
  %w = mp.constant dense<[[2.0, 0x7F800000], [0.5, 0.25], [1.0, 1.0]]> : tensor<3x2xf32>
  %0 = mp.linear %x, %w {acc_type = f32, mp.precision = f8E4M3FN, mp.reason = "policy:lowp", transpose_weight = true} : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x3xbf16>
  return %0 : tensor<4x3xbf16>
}

// -----

// A b that is not a constant (a weight that is training state): the GEMM
// reads it as [n, k] for cuBLASLt's FP8 TN layout. The weight has one FP8
// copy, made where the weight is defined, with one amax and one scale
// (Transformer Engine's one copy per weight): x W reads it transposed in
// FP8, and the gradient rule's dX = dY W^T (mp.matmul %dy, transpose(%w))
// reads the copy itself, W^T given as [n, k] being W.

// CHECK-LABEL: func.func @fp8$state_weight
// CHECK-SAME: %[[X:arg0]]: tensor<4x2xf32>, %[[W:arg1]]: tensor<2x3xf32> {mp.state = "w"{{.*}}, %[[DY:arg2]]: tensor<4x3xf32>
// CHECK-DAG: mp.amax %[[W]] : tensor<2x3xf32> -> tensor<f32>
// CHECK-DAG: %[[QW:.*]] = mp.quantize %[[W]], %{{.*}} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf8E4M3FN>
// CHECK-DAG: mp.quantize %[[X]], %{{.*}} -> tensor<4x2xf8E4M3FN>
// CHECK-DAG: mp.quantize %[[DY]], %{{.*}} -> tensor<4x3xf8E5M2>
// CHECK-NOT: mp.quantize
// CHECK: %[[TW:.*]] = mp.transpose %[[QW]] {perm = array<i64: 1, 0>} : tensor<2x3xf8E4M3FN> -> tensor<3x2xf8E4M3FN>
// CHECK: %[[Y:.*]] = mp.scaled_linear %{{.*}}, %[[TW]], {{.*}}transpose_weight = true{{.*}} -> tensor<4x3xbf16>
// CHECK-NOT: mp.transpose
// CHECK: %[[DX:.*]] = mp.scaled_linear %{{.*}}, %[[QW]], {{.*}}transpose_weight = true{{.*}} : (tensor<4x3xf8E5M2>, tensor<2x3xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<4x2xbf16>
// CHECK: return %[[Y]], %[[DX]], %[[W]]
func.func @fp8$state_weight(%x: tensor<4x2xf32>, %w: tensor<2x3xf32> {mp.state = "w", mp.state_init = dense<1.0> : tensor<2x3xf32>}, %dy: tensor<4x3xf32>) -> (tensor<4x3xbf16>, tensor<4x2xbf16>, tensor<2x3xf32> {mp.state_update = "w"}) {
  %y = mp.matmul %x, %w {acc_type = f32, mp.precision = f8E4M3FN} : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xbf16>
  %wt = mp.transpose %w {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %dx = mp.matmul %dy, %wt {acc_type = f32, mp.grad_operands = array<i64: 0>, mp.precision = f8E4M3FN} : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xbf16>
  return %y, %dx, %w : tensor<4x3xbf16>, tensor<4x2xbf16>, tensor<2x3xf32>
}
