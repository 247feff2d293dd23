// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
// The pipeline keeps the amax and the quantize as kernels of their own:
// the amax kernel accumulates |x| (NaN propagating) and combines blocks
// with atomicMax on the result zeroed before launch; the quantize is
// satfinite E4M3 with NaN for a non-finite value or scale.
// CHECK: __device__ __forceinline__ float mp_quantize_e4m3(float x, float s) { return mp_finite(x) && mp_finite(s) ? mp_round_e4m3(x * s) : MP_NAN; }
// CHECK: __device__ __forceinline__ void mp_store_e4m3(__nv_fp8_storage_t *p, long long i, float x) { p[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
// CHECK-LABEL: // launch: grid 1, block 256, out0 zeroed first
// CHECK-NEXT: // mpk.kernel mp_q_k1_amax: ops [amax], shape [4, 8], row_dims 0
// CHECK-NEXT: extern "C" __global__ void mp_q_k1_amax(const __nv_bfloat16 *in0, float *out0) {
// CHECK: float amax0 = 0.0f;
// CHECK: const mp_pack<__nv_bfloat16, 8> p0 = *reinterpret_cast<const mp_pack<__nv_bfloat16, 8> *>(in0 + x0 * 8LL + x1);
// CHECK: amax0 = mp_amax_update(amax0, v0); // mpk.amax
// CHECK: amax0 = mp_block_amax(amax0, mp_smem);
// CHECK-NEXT: if (threadIdx.x == 0)
// CHECK-NEXT: atomicMax(reinterpret_cast<unsigned int *>(out0), __float_as_uint(amax0));
// The quantize takes 8 bf16 values (16 bytes) per thread and stores 8 FP8
// bytes; the scale is one value, loaded as a pack of one.
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.kernel mp_q_k2_q: ops [q], shape [4, 8], row_dims 0
// CHECK-NEXT: extern "C" __global__ void mp_q_k2_q(const __nv_bfloat16 *in0, const float *in1, __nv_fp8_storage_t *out0) {
// CHECK: const mp_pack<float, 1> p1 = *reinterpret_cast<const mp_pack<float, 1> *>(in1 + 0);
// CHECK-NEXT: mp_pack<__nv_fp8_storage_t, 8> q0;
// CHECK: const float v1 = mp_load_f32(p1.v, 0); // input 1
// CHECK-NEXT: const float v2 = mp_quantize_e4m3(v0, v1); // mp.quantize
// CHECK-NEXT: mp_store_e4m3(q0.v, u, v2); // result 0
// CHECK: *reinterpret_cast<mp_pack<__nv_fp8_storage_t, 8> *>(out0 + x0 * 8LL + x1) = q0;
func.func @q(%x: tensor<4x8xbf16>, %s: tensor<f32>) -> (tensor<4x8xf8E4M3FN>, tensor<f32>) {
  %0 = mp.cast %x : tensor<4x8xbf16> -> tensor<4x8xf32> loc("widen")
  %1 = mp.amax %0 : tensor<4x8xf32> -> tensor<f32> loc("amax")
  %2 = mp.quantize %0, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf8E4M3FN> loc("q")
  return %2, %1 : tensor<4x8xf8E4M3FN>, tensor<f32>
}
