// RUN: mixprec-translate --mpk-to-cuda %s | FileCheck %s
// Routines with a CUDA form become kernels after the mpk.kernel ones,
// numbered among the function's routines (mp_<function>_r<index>): data
// movement copies raw elements (a bf16 is an unsigned short) over the
// output in a grid-stride loop; a gather whose indices are a constant in
// range reads them at run time, negative ones from the end; fp8_scale is
// one thread computing num::fp8Scale in double. A gather whose indices are
// computed at run time (r4), gather_elements (r7) and scatter_nd (r8) first
// check every index in a grid-stride loop of their own, reporting one out
// of range into the error record (their last parameter) under their
// routine's number plus one, and read or address no element with it.
// The routines without a CUDA form (r5, softmax) stay on the host: no
// kernel.
// CHECK: struct MpErrorRecord { unsigned tag; unsigned reserved; unsigned long long position; unsigned long long value; };
// CHECK: __device__ void mp_report_index(MpErrorRecord *record, unsigned tag, long long position, const void *indices, bool wide) {
// CHECK-SAME: atomicCAS(&record->tag, 0u, tag)
// CHECK-SAME: atomicMax(&record->position, ~(unsigned long long)position)
// CHECK-NOT: mp_r_r5
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.call mp_r_r0_t: transpose "t" perm [2, 0, 1], [2, 3, 4] -> [4, 2, 3]
// CHECK-NEXT: extern "C" __global__ void mp_r_r0_t(const unsigned short *in0, unsigned short *out0) {
// CHECK-NEXT:   for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < 24LL; i += (long long)gridDim.x * blockDim.x) {
// CHECK-NEXT:     long long t = i;
// CHECK-NEXT:     const long long x2 = t % 3LL; t /= 3LL;
// CHECK-NEXT:     const long long x1 = t % 2LL; t /= 2LL;
// CHECK-NEXT:     const long long x0 = t;
// CHECK-NEXT:     (void)t;
// CHECK-NEXT:     out0[i] = in0[0 + x0 * 1LL + x1 * 12LL + x2 * 4LL];
// CHECK-NEXT:   }
// CHECK-NEXT: }
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.call mp_r_r1_s: slice "s" starts [3, 1], steps [-1, 2], [4, 8] -> [2, 3]
// CHECK-NEXT: extern "C" __global__ void mp_r_r1_s(const unsigned int *in0, unsigned int *out0) {
// CHECK:     out0[i] = in0[25LL + x0 * -8LL + x1 * 2LL];
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.call mp_r_r2_c: concat "c" axis 1, 2 inputs -> [2, 5]
// CHECK-NEXT: extern "C" __global__ void mp_r_r2_c(const unsigned char *in0, const unsigned char *in1, unsigned char *out0) {
// CHECK:     const long long k = i % 1LL;
// CHECK-NEXT:     const long long a = i / 1LL % 5LL;
// CHECK-NEXT:     const long long o = i / 1LL / 5LL;
// CHECK-NEXT:     if (a < 2LL) out0[i] = in0[(o * 2LL + a - 0LL) * 1LL + k];
// CHECK-NEXT:     else if (a < 5LL) out0[i] = in1[(o * 3LL + a - 2LL) * 1LL + k];
// CHECK-LABEL: // launch: grid 1, block 256
// CHECK-NEXT: // mpk.call mp_r_r3_g: gather "g" axis 0, constant indices [3] into [5, 4]
// CHECK-NEXT: extern "C" __global__ void mp_r_r3_g(const unsigned short *in0, const unsigned long long *in1, unsigned short *out0) {
// CHECK-NOT: mp_report_index
// CHECK:     long long index = mp_index_at(in1, true, a);
// CHECK-NEXT:     if (index < 0) index += 5LL;
// CHECK:     if (index >= 0 && index < 5LL) out0[i] = in0[(o * 5LL + index) * 4LL + k];
// CHECK-LABEL: // launch: grid 1, block 256, the error record last
// CHECK-NEXT: // mpk.call mp_r_r4_h: gather "h" axis 0, indices [3] into [5, 4]
// CHECK-NEXT: extern "C" __global__ void mp_r_r4_h(const unsigned short *in0, const unsigned long long *in1, unsigned short *out0, MpErrorRecord *err) {
// CHECK-NEXT:   for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < 3LL; p += (long long)gridDim.x * blockDim.x) {
// CHECK-NEXT:     const long long v = mp_index_at(in1, true, p);
// CHECK-NEXT:     const long long size = 5LL;
// CHECK-NEXT:     if (v < -size || v >= size) mp_report_index(err, 5u, p, in1, true);
// CHECK-NEXT:   }
// CHECK:     if (index >= 0 && index < 5LL) out0[i] = in0[(o * 5LL + index) * 4LL + k];
// CHECK-LABEL: // launch: grid 1, block 32
// CHECK-NEXT: // mpk.call mp_r_r6_fs: fp8_scale "fs" format f8E4M3FN, margin 2
// CHECK-NEXT: extern "C" __global__ void mp_r_r6_fs(const unsigned int *in0, unsigned int *out0) {
// CHECK-NEXT:   if (blockIdx.x != 0 || threadIdx.x != 0) return;
// CHECK-NEXT:   const double amax = __uint_as_float(in0[0]);
// CHECK:   if (isnan(amax) || isinf(amax)) scale = MP_NAN;
// CHECK-NEXT:   else if (!(amax > 0.0)) scale = 1.0f;
// CHECK:     const double s = 448.0 / amax / ldexp(1.0, 2);
// CHECK-NEXT:     scale = (float)(s < 3.4028234663852886e38 ? s : 3.4028234663852886e38);
// CHECK:   out0[0] = __float_as_uint(scale);
// CHECK-LABEL: // launch: grid 1, block 256, the error record last
// CHECK-NEXT: // mpk.call mp_r_r7_ge: gather_elements "ge" axis 1, indices [5, 2] into [5, 4]
// CHECK-NEXT: extern "C" __global__ void mp_r_r7_ge(const unsigned short *in0, const unsigned int *in1, unsigned short *out0, MpErrorRecord *err) {
// CHECK:     if (v < -size || v >= size) mp_report_index(err, 8u, p, in1, false);
// CHECK:     long long index = mp_index_at(in1, false, i);
// CHECK-NEXT:     if (index < 0) index += 4LL;
// CHECK-NEXT:     if (index >= 0 && index < 4LL) out0[i] = in0[0 + x0 * 4LL + index * 1LL];
// CHECK-LABEL: // launch: grid 1, block 256, the error record last
// CHECK-NEXT: // mpk.call mp_r_r8_sn: scatter_nd "sn" add, indices [3, 2] into [5, 4]
// CHECK-NEXT: extern "C" __global__ void mp_r_r8_sn(const unsigned int *in0, const unsigned long long *in1, const unsigned int *in2, unsigned int *out0, MpErrorRecord *err) {
// CHECK-NEXT:   for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < 6LL; p += (long long)gridDim.x * blockDim.x) {
// CHECK-NEXT:     const long long v = mp_index_at(in1, true, p);
// CHECK-NEXT:     const long long j = p % 2LL;
// CHECK-NEXT:     const long long size = (j == 0 ? 5LL : 4LL);
// CHECK-NEXT:     if (v < -size || v >= size) mp_report_index(err, 9u, p, in1, true);
// CHECK:     const long long e = i % 1LL;
// CHECK-NEXT:     long long lead = i / 1LL;
// CHECK-NEXT:     const long long y1 = lead % 4LL; lead /= 4LL;
// CHECK-NEXT:     const long long y0 = lead % 5LL; lead /= 5LL;
// CHECK:     float a = mp_load_f32((const float *)in0, i);
// CHECK:     for (long long t = 0; t < 3LL; ++t) {
// CHECK-NEXT:       long long v;
// CHECK-NEXT:       v = mp_index_at(in1, true, t * 2LL + 0); if (v < 0) v += 5LL; if (v != y0) continue;
// CHECK-NEXT:       v = mp_index_at(in1, true, t * 2LL + 1); if (v < 0) v += 4LL; if (v != y1) continue;
// CHECK-NEXT:       a = __fadd_rn(a, mp_load_f32((const float *)in2, t * 1LL + e)); touched = true;
// CHECK-NEXT:     }
// CHECK-NEXT:     if (touched) mp_store_f32((float *)out0, i, a); else out0[i] = in0[i];
// CHECK-NOT: mp_r_r5
func.func @r(%x: tensor<2x3x4xbf16>, %y: tensor<4x8xf32>, %b0: tensor<2x2xi1>, %b1: tensor<2x3xi1>,
             %e: tensor<5x4xbf16>, %ids: tensor<3xi64>, %amax: tensor<f32>,
             %ei: tensor<5x2xi32>, %w: tensor<5x4xf32>, %tuples: tensor<3x2xi64>, %u: tensor<3xf32>)
    -> (tensor<4x2x3xbf16>, tensor<2x3xf32>, tensor<2x5xi1>, tensor<3x4xbf16>, tensor<3x4xbf16>,
        tensor<4x8xf32>, tensor<f32>, tensor<5x2xbf16>, tensor<5x4xf32>) {
  %i = mp.constant dense<[4, -1, 0]> : tensor<3xi64>
  %0 = mpk.call transpose(%x) #mpk.transpose<perm = [2, 0, 1]> {ops = ["t"]}
      : (tensor<2x3x4xbf16>) -> tensor<4x2x3xbf16>
  %1 = mpk.call slice(%y) #mpk.slice<starts = [3, 1], steps = [-1, 2]> {ops = ["s"]}
      : (tensor<4x8xf32>) -> tensor<2x3xf32>
  %2 = mpk.call concat(%b0, %b1) #mpk.axis<axis = -1> {ops = ["c"]}
      : (tensor<2x2xi1>, tensor<2x3xi1>) -> tensor<2x5xi1>
  %3 = mpk.call gather(%e, %i) #mpk.axis<axis = 0> {ops = ["g"]}
      : (tensor<5x4xbf16>, tensor<3xi64>) -> tensor<3x4xbf16>
  %4 = mpk.call gather(%e, %ids) #mpk.axis<axis = 0> {ops = ["h"]}
      : (tensor<5x4xbf16>, tensor<3xi64>) -> tensor<3x4xbf16>
  %5 = mpk.call softmax(%y) #mpk.axis<axis = 0> {ops = ["sm"]}
      : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = mpk.call fp8_scale(%amax) #mpk.fp8_scale<margin = 2, format = f8E4M3FN> {ops = ["fs"]}
      : (tensor<f32>) -> tensor<f32>
  %7 = mpk.call gather_elements(%e, %ei) #mpk.axis<axis = 1> {ops = ["ge"]}
      : (tensor<5x4xbf16>, tensor<5x2xi32>) -> tensor<5x2xbf16>
  %8 = mpk.call scatter_nd(%w, %tuples, %u) #mpk.scatter_nd<reduction = 1> {ops = ["sn"]}
      : (tensor<5x4xf32>, tensor<3x2xi64>, tensor<3xf32>) -> tensor<5x4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4x2x3xbf16>, tensor<2x3xf32>, tensor<2x5xi1>,
      tensor<3x4xbf16>, tensor<3x4xbf16>, tensor<4x8xf32>, tensor<f32>, tensor<5x2xbf16>,
      tensor<5x4xf32>
}
