// RUN: mixprec-opt --mp-fuse --mp-lower-to-kernels %s | mixprec-translate --mpk-to-cuda | FileCheck %s
// A layer norm over two dims (one row is 4x16): two passes of FP32 sums
// (mean, then variance of x - mean), 1/64 and epsilon as exact literals,
// scale and bias broadcast along the row (stride 0 over the outer dim),
// one rounding to BF16 at the end.
// CHECK-LABEL: // launch: grid 2, block 64
// CHECK-NEXT: // mpk.kernel mp_ln_k0_ln: ops [ln], shape [2, 4, 16], row_dims 2
// CHECK-NEXT: extern "C" __global__ void mp_ln_k0_ln(const __nv_bfloat16 *in0, const __nv_bfloat16 *in1, const __nv_bfloat16 *in2, __nv_bfloat16 *out0) {
// CHECK: const long long x0 = row;
// CHECK: // Pass 1: row reductions over 64 values.
// CHECK: const float [[X:v[0-9]+]] = mp_load_bf16(in0, x0 * 64LL + x1 * 16LL + x2); // input 0
// CHECK: const float [[S1:v[0-9]+]] = mp_block_sum(
// CHECK: // Pass 2: row reductions over 64 values.
// CHECK: const float [[INV:v[0-9]+]] = 0.015625f; // mp.constant
// CHECK: const float [[MEAN:v[0-9]+]] = [[S1]] * [[INV]]; // mpk.elementwise mul
// CHECK: const float [[S2:v[0-9]+]] = mp_block_sum(
// CHECK: // The row's outputs.
// CHECK: mp_load_bf16(in1, x1 * 16LL + x2); // input 1
// CHECK: mp_load_bf16(in2, x1 * 16LL + x2); // input 2
// CHECK: const float {{v[0-9]+}} = 9.99999975e-06f; // mp.constant
// CHECK: = 1.0f / sqrtf({{v[0-9]+}}); // mpk.elementwise rsqrt
// CHECK: const float [[Y:v[0-9]+]] = mp_round_bf16({{v[0-9]+}}); // mpk.elementwise cast
// CHECK: mp_store_bf16(out0, x0 * 64LL + x1 * 16LL + x2, [[Y]]); // result 0
func.func @ln(%x: tensor<2x4x16xbf16>, %g: tensor<4x16xbf16>, %b: tensor<4x16xbf16>) -> tensor<2x4x16xbf16> {
  %0 = mp.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f32} : (tensor<2x4x16xbf16>, tensor<4x16xbf16>, tensor<4x16xbf16>) -> tensor<2x4x16xbf16> loc("ln")
  return %0 : tensor<2x4x16xbf16>
}
