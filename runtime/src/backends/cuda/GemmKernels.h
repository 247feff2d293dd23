//===- GemmKernels.h - the GEMM steps' helper kernels, as PTX ----*- C++ -*-===//
//
// Two jobs cuBLASLt does not do, written by hand in PTX (a few instructions
// each) so the runtime needs neither nvcc nor NVRTC for them; the driver
// JIT-compiles the text with cuModuleLoadData for the device at hand
// (sm_75 and newer). gemm_kernels_ptx runs ptxas on it in CI.
//  - mixprec_gemm_reciprocals(x, y, out): out[0] = 1/x[0], out[64] = 1/y[0]
//    in IEEE FP32 (rcp.rn, as the CPU's 1.0f / scale): cuBLASLt's A/B scale
//    pointers multiply, the module holds quantization scales q = x * scale.
//    The two results lie kGemmScaleStride (256) bytes apart: cuBLASLt 13.1
//    on an H200 refused (CUBLAS_STATUS_NOT_SUPPORTED, at cublasLtMatmul,
//    after its heuristic had chosen an algorithm) every FP8 GEMM whose B
//    scale pointer was the A scale's + 4 (2026-12-04).
//  - mixprec_gemm_fill_b16/_b32(src, dst, count): dst[i] = src[0], to expand
//    a one-element bias into the n-vector cuBLASLt's BIAS epilogue reads.
//    One thread per element, 1-D grid.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_GEMMKERNELS_H
#define MIXPREC_RUNTIME_CUDA_GEMMKERNELS_H

namespace mixprec::runtime::cuda {

inline constexpr const char *kGemmReciprocalsKernel = "mixprec_gemm_reciprocals";
inline constexpr const char *kGemmFill16Kernel = "mixprec_gemm_fill_b16";
inline constexpr const char *kGemmFill32Kernel = "mixprec_gemm_fill_b32";
/// Bytes between the reciprocals' two results (the PTX's [%rd3+256]).
inline constexpr unsigned kGemmScaleStride = 256;
/// Threads per block of the fill kernels.
inline constexpr unsigned kGemmFillBlock = 256;

inline constexpr const char kGemmKernelsPtx[] = R"PTX(.version 7.0
.target sm_75
.address_size 64

// out[0] = 1 / x[0], out[64] = 1 / y[0] (256 bytes on), IEEE round to nearest.
.visible .entry mixprec_gemm_reciprocals(.param .u64 x, .param .u64 y, .param .u64 out)
{
  .reg .b64 %rd<4>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u64 %rd3, [out];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  cvta.to.global.u64 %rd3, %rd3;
  ld.global.f32 %f1, [%rd1];
  ld.global.f32 %f2, [%rd2];
  rcp.rn.f32 %f1, %f1;
  rcp.rn.f32 %f2, %f2;
  st.global.f32 [%rd3], %f1;
  st.global.f32 [%rd3+256], %f2;
  ret;
}

// dst[i] = src[0] for i < count, 2-byte elements.
.visible .entry mixprec_gemm_fill_b16(.param .u64 src, .param .u64 dst, .param .u64 count)
{
  .reg .pred %p;
  .reg .b16 %h;
  .reg .b32 %r<4>;
  .reg .b64 %rd<7>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u64 %rd3, [count];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  cvt.u64.u32 %rd4, %r3;
  mad.wide.u32 %rd4, %r1, %r2, %rd4;
  setp.ge.u64 %p, %rd4, %rd3;
  @%p bra DONE16;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  ld.global.b16 %h, [%rd1];
  shl.b64 %rd5, %rd4, 1;
  add.s64 %rd6, %rd2, %rd5;
  st.global.b16 [%rd6], %h;
DONE16:
  ret;
}

// dst[i] = src[0] for i < count, 4-byte elements.
.visible .entry mixprec_gemm_fill_b32(.param .u64 src, .param .u64 dst, .param .u64 count)
{
  .reg .pred %p;
  .reg .b32 %r<5>;
  .reg .b64 %rd<7>;
  ld.param.u64 %rd1, [src];
  ld.param.u64 %rd2, [dst];
  ld.param.u64 %rd3, [count];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  cvt.u64.u32 %rd4, %r3;
  mad.wide.u32 %rd4, %r1, %r2, %rd4;
  setp.ge.u64 %p, %rd4, %rd3;
  @%p bra DONE32;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  ld.global.b32 %r4, [%rd1];
  shl.b64 %rd5, %rd4, 2;
  add.s64 %rd6, %rd2, %rd5;
  st.global.b32 [%rd6], %r4;
DONE32:
  ret;
}
)PTX";

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_GEMMKERNELS_H
