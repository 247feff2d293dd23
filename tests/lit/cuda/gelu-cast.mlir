// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
// GELU then a cast to FP16, fused: a grid-stride element-wise kernel with
// the CPU backend's erf GELU in FP32 and __float2half_rn at the cast.
// CHECK: __device__ __forceinline__ float mp_round_f16(float x) { return __half2float(__float2half_rn(x)); }
// CHECK: __device__ __forceinline__ float mp_gelu_erf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f)); }
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.kernel mp_gelu_k0_act: ops [act, tohalf], shape [4, 8], row_dims 0
// CHECK-NEXT: extern "C" __global__ void mp_gelu_k0_act(const float *in0, __half *out0) {
// CHECK-NEXT: for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < 32LL; i += (long long)gridDim.x * blockDim.x) {
// CHECK-NEXT: long long t = i;
// CHECK-NEXT: const long long x1 = t % 8LL; t /= 8LL;
// CHECK-NEXT: const long long x0 = t;
// CHECK-NEXT: (void)t;
// CHECK-NEXT: const float v0 = mp_load_f32(in0, x0 * 8LL + x1); // input 0
// CHECK-NEXT: const float v1 = mp_gelu_erf(v0); // mp.gelu
// CHECK-NEXT: const float v2 = mp_round_f16(v1); // mp.cast
// CHECK-NEXT: mp_store_f16(out0, x0 * 8LL + x1, v2); // result 0
// CHECK-NEXT: }
// CHECK-NEXT: }
func.func @gelu(%x: tensor<4x8xf32>) -> tensor<4x8xf16> {
  %0 = mp.gelu %x : tensor<4x8xf32> loc("act")
  %1 = mp.cast %0 : tensor<4x8xf32> -> tensor<4x8xf16> loc("tohalf")
  return %1 : tensor<4x8xf16>
}
