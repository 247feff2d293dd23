// RUN: mixprec-translate --mpk-to-cuda %s | FileCheck %s
// A kernel that produces a tensor and its amax: the amax is accumulated per
// thread, reduced per block and combined with one atomicMax per block, so
// the launch zeroes that result first.
// CHECK-LABEL: // launch: grid 1, block 256, out1 zeroed first
// CHECK-NEXT: // mpk.kernel mp_producer_k0_act: ops [act], shape [4, 8], row_dims 0
// CHECK-NEXT: extern "C" __global__ void mp_producer_k0_act(const __nv_bfloat16 *in0, const float *in1, __nv_fp8_storage_t *out0, float *out1) {
// CHECK-NEXT: __shared__ float mp_smem[32];
// CHECK-NEXT: float amax1 = 0.0f;
// CHECK: const float v2 = mp_gelu_tanh(v0); // mpk.elementwise gelu_tanh
// CHECK-NEXT: const float v4 = mp_quantize_e4m3(v2, v1); // mp.quantize
// CHECK-NEXT: mp_store_e4m3(q0.v, u, v4); // result 0
// CHECK-NEXT: amax1 = mp_amax_update(amax1, v2); // mpk.amax
// CHECK-NEXT: }
// CHECK-NEXT: *reinterpret_cast<mp_pack<__nv_fp8_storage_t, 8> *>(out0 + x0 * 8LL + x1) = q0;
// CHECK-NEXT: }
// CHECK: amax1 = mp_block_amax(amax1, mp_smem);
// CHECK-NEXT: if (threadIdx.x == 0)
// CHECK-NEXT: atomicMax(reinterpret_cast<unsigned int *>(out1), __float_as_uint(amax1));
// CHECK-NEXT: }
func.func @producer(%x: tensor<4x8xbf16>, %s: tensor<f32>) -> (tensor<4x8xf8E4M3FN>, tensor<f32>) {
  %0:2 = mpk.kernel(%x, %s) {ops = ["act"], row_dims = 0 : i64, shape = array<i64: 4, 8>} : (tensor<4x8xbf16>, tensor<f32>) -> (tensor<4x8xf8E4M3FN>, tensor<f32>) {
  ^bb0(%a: tensor<4x8xbf16>, %b: tensor<f32>):
    %1 = mpk.elementwise gelu_tanh %a : (tensor<4x8xbf16>) -> tensor<4x8xf32>
    %2 = mpk.amax %1 : tensor<4x8xf32> -> tensor<f32>
    %3 = mp.quantize %1, %b : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf8E4M3FN>
    mpk.yield %3, %2 : tensor<4x8xf8E4M3FN>, tensor<f32>
  }
  return %0#0, %0#1 : tensor<4x8xf8E4M3FN>, tensor<f32>
}
