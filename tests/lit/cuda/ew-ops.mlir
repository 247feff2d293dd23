// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
// Issue 10's element-wise ops in one kernel: the HF softmax guard
// where(is_nan(s), 0, s), a comparison of an f32 and a bf16 value as given
// (no cast), a bool store, and the parametric activations reading their
// FP32 parameters as constants (never rounded to the op's dtype).
// CHECK: __device__ __forceinline__ float mp_min(float a, float b) { return (a < b || a != a) ? a : b; }
// CHECK: __device__ __forceinline__ float mp_sign(float x) { return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x)); }
// CHECK: __device__ __forceinline__ float mp_softplus(float x) { return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)); }
// CHECK: __device__ __forceinline__ float mp_prelu(float x, float slope) { return x < 0.0f ? slope * x : x; }
// CHECK: __device__ __forceinline__ float mp_selu(float x, float alpha, float gamma) { return gamma * (x <= 0.0f ? alpha * expm1f(x) : x); }

// CHECK-LABEL: // mpk.kernel mp_guard_k0_isnan: ops [isnan, guard, lt, not, leaky, hsig, max, round], shape [4, 8], row_dims 0
// CHECK-NEXT: extern "C" __global__ void mp_guard_k0_isnan(const float *in0, const __nv_bfloat16 *in1, unsigned char *out0, float *out1) {
// CHECK:      const float v0 = mp_load_f32(p0.v, u); // input 0
// CHECK-NEXT: const float v1 = mp_load_bf16(p1.v, u); // input 1
// CHECK-NEXT: const float v2 = mp_round_bool(isnan(v0) ? 1.0f : 0.0f); // mp.is_nan
// CHECK-NEXT: const float v3 = 0.0f; // mp.constant
// CHECK-NEXT: const float v4 = v2 != 0.0f ? v3 : v0; // mp.where
// CHECK-NEXT: const float v5 = mp_round_bool(v4 < v1 ? 1.0f : 0.0f); // mp.less
// CHECK-NEXT: const float v6 = mp_round_bool(v5 == 0.0f ? 1.0f : 0.0f); // mp.not
// CHECK-NEXT: const float v7 = 0.00999999978f; // mp.constant
// CHECK-NEXT: const float v8 = mp_prelu(v4, v7); // mpk.elementwise prelu
// CHECK-NEXT: const float v9 = 0.200000003f; // mp.constant
// CHECK-NEXT: const float v10 = 0.5f; // mp.constant
// CHECK-NEXT: const float v11 = mp_hard_sigmoid(v8, v9, v10); // mpk.elementwise hard_sigmoid
// CHECK-NEXT: const float v12 = mp_max(v11, v4); // mp.max
// CHECK-NEXT: const float v13 = rintf(v12); // mp.round
// CHECK-NEXT: mp_store_bool(q0.v, u, v6); // result 0
// CHECK-NEXT: mp_store_f32(q1.v, u, v13); // result 1
func.func @guard(%s: tensor<4x8xf32>, %y: tensor<8xbf16>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  %nan = mp.is_nan %s : tensor<4x8xf32> -> tensor<4x8xi1> loc("isnan")
  %zero = mp.constant dense<0.0> : tensor<f32> loc("zero")
  %g = mp.where %nan, %zero, %s : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("guard")
  %lt = mp.less %g, %y : tensor<4x8xf32>, tensor<8xbf16> -> tensor<4x8xi1> loc("lt")
  %n = mp.not %lt : tensor<4x8xi1> loc("not")
  %l = mp.leaky_relu %g {alpha = 0.01 : f32} : tensor<4x8xf32> loc("leaky")
  %h = mp.hard_sigmoid %l {alpha = 0.2 : f32, beta = 0.5 : f32} : tensor<4x8xf32> loc("hsig")
  %m = mp.max %h, %g : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32> loc("max")
  %r = mp.round %m : tensor<4x8xf32> loc("round")
  return %r, %n : tensor<4x8xf32>, tensor<4x8xi1>
}

// In bf16, each function is computed in FP32 and rounded once.
// CHECK-LABEL: // mpk.kernel mp_math_k0_a: ops [a, b, c, d, e, f, g, h, i, j], shape [16], row_dims 0
// CHECK:      const float v1 = mp_round_bf16(sinf(v0)); // mp.sin
// CHECK-NEXT: const float v2 = mp_round_bf16(mp_softplus(v1)); // mp.softplus
// CHECK-NEXT: const float v3 = mp_round_bf16(mp_mish(v2)); // mp.mish
// CHECK-NEXT: const float v4 = mp_round_bf16(mp_hard_swish(v3)); // mp.hard_swish
// CHECK-NEXT: const float v5 = 1.5f; // mp.constant
// CHECK-NEXT: const float v6 = mp_round_bf16(mp_elu(v4, v5)); // mpk.elementwise elu
// CHECK-NEXT: const float v7 = 1.67326319f; // mp.constant
// CHECK-NEXT: const float v8 = 1.05070102f; // mp.constant
// CHECK-NEXT: const float v9 = mp_round_bf16(mp_selu(v6, v7, v8)); // mpk.elementwise selu
// CHECK-NEXT: const float v10 = mp_round_bf16(mp_sign(v9)); // mp.sign
// CHECK-NEXT: const float v11 = mp_round_bf16(fmodf(v10, v0)); // mp.fmod
// CHECK-NEXT: const float v12 = mp_round_bf16(mp_min(v11, v0)); // mp.min
// CHECK-NEXT: const float v13 = mp_round_bool(isinf(v12) && v12 < 0.0f ? 1.0f : 0.0f); // mp.is_inf
func.func @math(%x: tensor<16xbf16>) -> tensor<16xi1> {
  %a = mp.sin %x : tensor<16xbf16> loc("a")
  %b = mp.softplus %a : tensor<16xbf16> loc("b")
  %c = mp.mish %b : tensor<16xbf16> loc("c")
  %d = mp.hard_swish %c : tensor<16xbf16> loc("d")
  %e = mp.elu %d {alpha = 1.5 : f32} : tensor<16xbf16> loc("e")
  %f = mp.selu %e {alpha = 1.67326319217681884765625 : f32, gamma = 1.05070102214813232421875 : f32} : tensor<16xbf16> loc("f")
  %g = mp.sign %f : tensor<16xbf16> loc("g")
  %h = mp.fmod %g, %x : tensor<16xbf16>, tensor<16xbf16> -> tensor<16xbf16> loc("h")
  %i = mp.min %h, %x : tensor<16xbf16>, tensor<16xbf16> -> tensor<16xbf16> loc("i")
  %j = mp.is_inf %i {detect_positive = false} : tensor<16xbf16> -> tensor<16xi1> loc("j")
  return %j : tensor<16xi1>
}
