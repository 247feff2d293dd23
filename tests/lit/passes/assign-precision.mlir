// RUN: split-file %s %t
// RUN: mixprec-opt --split-input-file --mp-assign-precision=precision=bf16 %t/policy.mlir | FileCheck %s --check-prefix=BF16
// RUN: mixprec-opt --split-input-file --mp-assign-precision=precision=fp16 %t/policy.mlir | FileCheck %s --check-prefix=FP16
// RUN: mixprec-opt --split-input-file --mp-assign-precision="precision=fp8" %t/policy.mlir | FileCheck %s --check-prefix=FP8
// RUN: mixprec-opt --split-input-file --mp-assign-precision="precision=tf32" %t/policy.mlir | FileCheck %s --check-prefix=TF32
// RUN: mixprec-opt --split-input-file --mp-assign-precision="precision=bf16 keep-io-types=false" %t/policy.mlir | FileCheck %s --check-prefix=NOIO
// RUN: mixprec-opt --mp-assign-precision="precision=bf16 keep-fp32=matmul,relu_1 force=lin*:fp16" %t/overrides.mlir | FileCheck %s --check-prefix=OVR
// RUN: mixprec-opt --mp-assign-precision="policy=%S/Inputs/policy.json" %t/policy-file.mlir | FileCheck %s --check-prefix=POLICY

//--- policy.mlir
// Each op class: lowp GEMMs in the target dtype with an f32 accumulator,
// fp32 ops in f32, follow ops in their widest input's dtype.

// BF16-LABEL: func.func @classes$mlp
// BF16-SAME: attributes {mp.keep_io_types}
// BF16: mp.linear {{.*}}acc_type = f32, mp.precision = bf16, mp.reason = "policy:lowp"
// BF16: mp.relu {{.*}}mp.precision = bf16, mp.reason = "follow:widest-input"
// BF16: mp.matmul {{.*}}acc_type = f32, mp.precision = bf16, mp.reason = "policy:lowp"
// BF16: mp.add {{.*}}mp.precision = bf16, mp.reason = "follow:widest-input"
// BF16: mp.exp {{.*}}mp.precision = f32, mp.reason = "policy:fp32"
// BF16: mp.softmax {{.*}}acc_type = f32, {{.*}}mp.precision = f32, mp.reason = "policy:fp32"
// NOIO-LABEL: func.func @classes$mlp
// NOIO-NOT: mp.keep_io_types
// NOIO: mp.linear
func.func @classes$mlp(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = mp.constant dense<0.5> : tensor<8x8xf32>
  %b = mp.constant dense<0.25> : tensor<8xf32>
  %0 = mp.linear %x, %w, %b : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("linear_1")
  %1 = mp.relu %0 : tensor<4x8xf32> loc("relu_1")
  %2 = mp.matmul %1, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm_1")
  %3 = mp.add %2, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32> loc("bias_1")
  %4 = mp.exp %3 : tensor<4x8xf32> loc("exp_1")
  %5 = mp.softmax %4 {axis = 1 : i64} : tensor<4x8xf32> -> tensor<4x8xf32> loc("softmax_1")
  return %5 : tensor<4x8xf32>
}

// -----

// Follow takes the widest input: an f32 graph input (kept by
// keep-io-types) promotes the add; a constant adapts instead of promoting;
// ops fed only by constants keep f32, as parameters do under autocast;
// f16 with bf16 promotes to f32.

// BF16-LABEL: func.func @follow$widest_input
// BF16: mp.matmul {{.*}}mp.precision = bf16
// BF16: mp.add {{.*}}mp.precision = f32, mp.reason = "follow:widest-input"
// BF16: mp.mul {{.*}}mp.precision = bf16, mp.reason = "follow:widest-input"
// BF16: mp.transpose {{.*}}mp.precision = f32, mp.reason = "follow:constant-inputs"
// NOIO-LABEL: func.func @follow$widest_input
// NOIO: mp.add {{.*}}mp.precision = bf16, mp.reason = "follow:widest-input"
func.func @follow$widest_input(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>) {
  %w = mp.constant dense<0.5> : tensor<8x8xf32>
  %s = mp.constant dense<2.0> : tensor<f32>
  %0 = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = mp.add %0, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %2 = mp.mul %0, %s : tensor<4x8xf32>, tensor<f32> -> tensor<4x8xf32>
  %3 = mp.transpose %w {perm = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
  return %1, %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<8x8xf32>
}

// -----

// Range evidence only matters for fp16: overflow goes to the fallback
// (bf16), mostly-subnormal values to f32; followers then follow.

// FP16-LABEL: func.func @range$calibrated
// FP16: mp.matmul {{.*}}mp.precision = bf16, mp.reason = "range:amax=1.3e+05*2>fp16_max"
// FP16: mp.mul {{.*}}mp.precision = bf16, mp.reason = "follow:widest-input"
// FP16: mp.matmul {{.*}}mp.precision = f32, mp.reason = "range:underflow=80%<fp16_min_normal"
// FP16: mp.matmul {{.*}}mp.precision = f16, mp.reason = "policy:lowp"
// BF16-LABEL: func.func @range$calibrated
// BF16-COUNT-3: mp.reason = "policy:lowp"
func.func @range$calibrated(%q: tensor<2x4x4xf32>, %k: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %s = mp.constant dense<0.125> : tensor<f32>
  %0 = mp.matmul %q, %k {mp.calib_amax = 1.3e5 : f32, mp.calib_underflow = 0.0 : f32} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %1 = mp.mul %0, %s : tensor<2x4x4xf32>, tensor<f32> -> tensor<2x4x4xf32>
  %2 = mp.matmul %q, %k {mp.calib_amax = 1.0e-3 : f32, mp.calib_underflow = 0.8 : f32} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %3 = mp.matmul %q, %k {mp.calib_amax = 10.0 : f32, mp.calib_underflow = 0.1 : f32} : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %1, %2, %3 : tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
}

// -----

// fp8: linear layers and matmuls by a 2-D constant weight run in E4M3
// when k and n are multiples of 16 (cuBLASLt's FP8 alignment); the others,
// activation-by-activation matmuls and convolutions fall back to bf16.
// tf32 is a GEMM compute mode: elementwise ops stay f32.

// FP8-LABEL: func.func @fp8$eligible
// FP8: mp.linear {{.*}}mp.precision = f8E4M3FN, mp.reason = "policy:lowp"
// FP8: mp.matmul {{.*}}mp.precision = f8E4M3FN, mp.reason = "policy:lowp"
// FP8: mp.matmul {{.*}}mp.precision = bf16, mp.reason = "policy:lowp(no-fp8-gemm)"
// FP8: mp.relu {{.*}}mp.precision = bf16, mp.reason = "follow:widest-input"
// FP8: mp.conv2d {{.*}}mp.precision = bf16, mp.reason = "policy:lowp(no-fp8-gemm)"
// FP8: mp.linear {{.*}}mp.precision = bf16, mp.reason = "policy:lowp(fp8-unaligned)"
// FP8: mp.linear {{.*}}mp.precision = bf16, mp.reason = "policy:lowp(fp8-unaligned)"
// TF32-LABEL: func.func @fp8$eligible
// TF32: mp.linear {{.*}}mp.precision = tf32
// TF32: mp.relu {{.*}}mp.precision = f32
func.func @fp8$eligible(%x: tensor<4x16xf32>, %img: tensor<1x2x4x4xf32>) -> (tensor<4x4xf32>, tensor<4x16xf32>, tensor<1x2x4x4xf32>, tensor<4x10xf32>, tensor<4x16xf32>) {
  %w = mp.constant dense<0.5> : tensor<16x16xf32>
  %f = mp.constant dense<0.1> : tensor<2x2x1x1xf32>
  %0 = mp.linear %x, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mp.matmul %0, %w : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %t = mp.transpose %1 {perm = array<i64: 1, 0>} : tensor<4x16xf32> -> tensor<16x4xf32>
  %2 = mp.matmul %1, %t : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
  %3 = mp.relu %1 : tensor<4x16xf32>
  %4 = mp.conv2d %img, %f {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  // n = 10 (a classifier head) and k = 8.
  %wn = mp.constant dense<0.5> : tensor<16x10xf32>
  %5 = mp.linear %x, %wn : (tensor<4x16xf32>, tensor<16x10xf32>) -> tensor<4x10xf32>
  %s = mp.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, axes = array<i64: 0, 1>, steps = array<i64: 1, 1>} : tensor<4x16xf32> -> tensor<4x8xf32>
  %wk = mp.constant dense<0.5> : tensor<8x16xf32>
  %6 = mp.linear %s, %wk : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  return %2, %3, %4, %5, %6 : tensor<4x4xf32>, tensor<4x16xf32>, tensor<1x2x4x4xf32>, tensor<4x10xf32>, tensor<4x16xf32>
}

// -----

// Integer data movement has no precision; casts and scaling ops keep theirs.

// BF16-LABEL: func.func @skip$integer_and_typed
// BF16: mp.reshape %{{[^{]*}} : tensor<2x3xi64>
// BF16: mp.cast %{{[^{]*}} : tensor<6xf32> -> tensor<6xbf16>
func.func @skip$integer_and_typed(%i: tensor<2x3xi64>, %x: tensor<6xf32>) -> (tensor<6xi64>, tensor<6xbf16>) {
  %0 = mp.reshape %i : tensor<2x3xi64> -> tensor<6xi64>
  %1 = mp.cast %x : tensor<6xf32> -> tensor<6xbf16>
  return %0, %1 : tensor<6xi64>, tensor<6xbf16>
}

// -----

// A weight FP16 cannot hold moves its op out of FP16 without calibration.
// FP16-LABEL: func.func @range$huge_weight
// FP16: mp.linear {{.*}}mp.precision = bf16, mp.reason = "range:weight_amax=1e+05>fp16_max"
// FP16: mp.linear {{.*}}mp.precision = f16, mp.reason = "policy:lowp"
func.func @range$huge_weight(%x: tensor<4x2xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>) {
  %big = mp.constant dense<[[1.0e5, 1.0], [2.0, 3.0]]> : tensor<2x2xf32>
  %small = mp.constant dense<[[1.0e4, 1.0], [2.0, 3.0]]> : tensor<2x2xf32>
  %0 = mp.linear %x, %big : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  %1 = mp.linear %x, %small : (tensor<4x2xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
  return %0, %1 : tensor<4x2xf32>, tensor<4x2xf32>
}

//--- overrides.mlir
// OVR-LABEL: func.func @follow$mixed_half_types
// OVR: mp.linear {{.*}}mp.precision = f16, mp.reason = "override:force=lin*:fp16"
// OVR: mp.matmul {{.*}}mp.precision = f32, mp.reason = "override:keep-fp32=matmul"
// OVR: mp.linear {{.*}}mp.precision = bf16, mp.reason = "policy:lowp"
// OVR: mp.add {{.*}}mp.precision = f32, mp.reason = "follow:widest-input"
// OVR: mp.relu {{.*}}mp.precision = f32, mp.reason = "override:keep-fp32=relu_1"
func.func @follow$mixed_half_types(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = mp.constant dense<0.5> : tensor<8x8xf32>
  %0 = mp.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("linear_a")
  %1 = mp.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm_a")
  %2 = mp.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("other")
  %3 = mp.add %0, %2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("add_a")
  %4 = mp.relu %3 : tensor<4x8xf32> loc("relu_1")
  return %4 : tensor<4x8xf32>
}

//--- policy-file.mlir
// The policy file: fp16 target, gelu kept in fp32, proj* forced to bf16,
// and an fp16 margin of 4 (amax 20000 * 4 > 65504 leaves fp16).

// POLICY-LABEL: func.func @policy$file
// POLICY: mp.linear {{.*}}mp.precision = f16, mp.reason = "policy:lowp"
// POLICY: mp.gelu {{.*}}mp.precision = f32, mp.reason = "override:keep-fp32=gelu"
// POLICY: mp.linear {{.*}}mp.precision = bf16, mp.reason = "override:force=proj*:bf16"
// POLICY: mp.linear {{.*}}mp.precision = bf16, mp.reason = "range:amax=2e+04*4>fp16_max"
func.func @policy$file(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = mp.constant dense<0.5> : tensor<8x8xf32>
  %0 = mp.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc")
  %1 = mp.gelu %0 : tensor<4x8xf32> loc("act")
  %2 = mp.linear %1, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("proj_out")
  %3 = mp.linear %x, %w {mp.calib_amax = 2.0e4 : f32} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("big")
  return %2, %3 : tensor<4x8xf32>, tensor<4x8xf32>
}
