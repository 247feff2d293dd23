// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
// A fused softmax is one block per row: the row max, then the sum of
// exp(x - max), each reduced with warp shuffles and shared memory in FP32,
// then the outputs: the division, a bf16 op, rounds once to BF16.
// CHECK: #include <cuda_fp16.h>
// CHECK: #include <cuda_bf16.h>
// CHECK: #include <cuda_fp8.h>
// CHECK: __shfl_xor_sync
// CHECK-LABEL: // launch: grid 4, block 32
// CHECK-NEXT: // mpk.kernel mp_sm_k0_sm: ops [sm], shape [4, 8], row_dims 1
// CHECK-NEXT: extern "C" __global__ void mp_sm_k0_sm(const __nv_bfloat16 *in0, __nv_bfloat16 *out0) {
// CHECK: for (long long row = blockIdx.x; row < 4LL; row += gridDim.x) {
// CHECK: float [[MAXACC:acc[0-9]+]] = MP_NEG_INF;
// CHECK: for (long long j = threadIdx.x; j < 8LL; j += blockDim.x) {
// CHECK: const float [[X:v[0-9]+]] = mp_load_bf16(in0, x0 * 8LL + x1); // input 0
// CHECK: [[MAXACC]] = mp_max([[MAXACC]], [[X]]);
// CHECK: const float [[MAX:v[0-9]+]] = mp_block_max([[MAXACC]], mp_smem); // mpk.row_reduce max
// CHECK: float [[SUMACC:acc[0-9]+]] = 0.0f;
// CHECK: const float [[D:v[0-9]+]] = [[X]] - [[MAX]]; // mpk.elementwise sub
// CHECK: const float [[E:v[0-9]+]] = expf([[D]]); // mpk.elementwise exp
// CHECK: [[SUMACC]] = [[SUMACC]] + [[E]];
// CHECK: const float [[SUM:v[0-9]+]] = mp_block_sum([[SUMACC]], mp_smem); // mpk.row_reduce sum
// CHECK: const float [[Q:v[0-9]+]] = mp_round_bf16([[E]] / [[SUM]]); // mpk.elementwise div
// CHECK: mp_store_bf16(out0, x0 * 8LL + x1, [[Q]]); // result 0
func.func @sm(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = mp.softmax %x {axis = 1 : i64} : tensor<4x8xbf16> -> tensor<4x8xbf16> loc("sm")
  return %0 : tensor<4x8xbf16>
}
