// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
// GELU then a cast to FP16, fused: a grid-stride element-wise kernel with
// GELU as 0.5 x erfc(-x / sqrt 2) in FP32 (its argument's rounding
// corrected) and __float2half_rn at the cast.
// CHECK: __device__ __forceinline__ float mp_round_f16(float x) { return __half2float(__float2half_rn(x)); }
// CHECK: template <typename T, int V> struct alignas(sizeof(T) * V) mp_pack { T v[V]; };
// CHECK: __device__ __forceinline__ float mp_gelu_erf(float x) {
// CHECK-NEXT: const float z = -x * 0.70710678118654752440f;
// CHECK: const float e = fmaf(-1.12837916709551257390f * expf(-z * z), dz, erfcf(z));
// CHECK-NEXT: return 0.5f * x * e;

// Rows of 8 elements: each thread takes 4 consecutive ones (the widest
// access, f32, moves 16 bytes; the f16 store 8), one pack load and one
// pack store per access.
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.kernel mp_gelu_k0_act: ops [act, tohalf], shape [4, 8], row_dims 0
// CHECK-NEXT: extern "C" __global__ void mp_gelu_k0_act(const float *in0, __half *out0) {
// CHECK-NEXT: // 4 consecutive elements per thread
// CHECK:      for (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < 8LL; c += (long long)gridDim.x * blockDim.x) {
// CHECK-NEXT: long long t = c * 4LL;
// CHECK-NEXT: const long long x1 = t % 8LL; t /= 8LL;
// CHECK-NEXT: const long long x0 = t;
// CHECK-NEXT: (void)t;
// CHECK-NEXT: const mp_pack<float, 4> p0 = *reinterpret_cast<const mp_pack<float, 4> *>(in0 + x0 * 8LL + x1);
// CHECK-NEXT: mp_pack<__half, 4> q0;
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (int u = 0; u < 4; ++u) {
// CHECK-NEXT: const float v0 = mp_load_f32(p0.v, u); // input 0
// CHECK-NEXT: const float v1 = mp_gelu_erf(v0); // mp.gelu
// CHECK-NEXT: const float v2 = mp_round_f16(v1); // mp.cast
// CHECK-NEXT: mp_store_f16(q0.v, u, v2); // result 0
// CHECK-NEXT: }
// CHECK-NEXT: *reinterpret_cast<mp_pack<__half, 4> *>(out0 + x0 * 8LL + x1) = q0;
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  %0 = mp.gelu %x : tensor<4x8xf32> loc("act")
  %1 = mp.cast %0 : tensor<4x8xf32> -> tensor<4x8xf16> loc("tohalf")
  return %1 : tensor<4x8xf16>
}

// Rows of 6: no whole packs of 4, so one element per thread.
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.kernel mp_gelu_odd_k0_act: ops [act, tohalf], shape [4, 6], row_dims 0
// CHECK-NEXT: extern "C" __global__ void mp_gelu_odd_k0_act(const float *in0, __half *out0) {
// CHECK-NEXT: for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < 24LL; i += (long long)gridDim.x * blockDim.x) {
// CHECK-NEXT: long long t = i;
// CHECK-NEXT: const long long x1 = t % 6LL; t /= 6LL;
// CHECK-NEXT: const long long x0 = t;
// CHECK-NEXT: (void)t;
// CHECK-NEXT: const float v0 = mp_load_f32(in0, x0 * 6LL + x1); // input 0
// CHECK-NEXT: const float v1 = mp_gelu_erf(v0); // mp.gelu
// CHECK-NEXT: const float v2 = mp_round_f16(v1); // mp.cast
// CHECK-NEXT: mp_store_f16(out0, x0 * 6LL + x1, v2); // result 0
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @gelu_odd(%x: tensor<4x6xf32>) -> tensor<4x6xf16> {
  %0 = mp.gelu %x : tensor<4x6xf32> loc("act")
  %1 = mp.cast %0 : tensor<4x6xf32> -> tensor<4x6xf16> loc("tohalf")
  return %1 : tensor<4x6xf16>
}
