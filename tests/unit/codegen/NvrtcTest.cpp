//===- NvrtcTest.cpp - NVRTC and cuBLASLt linkage -------------------------===//
//
// These run without a GPU: NVRTC compiles for any supported architecture and
// cuBLASLt answers version queries. (The driver probe's test is the
// runtime's: runtime/tests/CudaDriverTest.cpp.)
//
//===----------------------------------------------------------------------===//
#include "codegen/NvrtcCompiler.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

namespace {

using mixprec::codegen::compileWithNvrtc;
using mixprec::codegen::NvrtcOptions;
using mixprec::codegen::NvrtcResult;

// A kernel of the kind the emitter will write: FP8 load, BF16 compute,
// saturating FP8 store, with the CUDA narrow-type headers.
constexpr const char *kScaleKernel = R"cuda(
#include <cuda_bf16.h>
#include <cuda_fp8.h>
extern "C" __global__ void mp_scale(const __nv_fp8_e4m3 *in, __nv_fp8_e4m3 *out,
                                    float scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    __nv_bfloat16 x = __float2bfloat16_rn(float(in[i]) * scale);
    out[i] = __nv_fp8_e4m3(__bfloat162float(x));
  }
}
)cuda";

TEST(Nvrtc, CompilesFp8KernelToPtxAndCubin) {
  NvrtcResult result;
  std::string error;
  ASSERT_TRUE(compileWithNvrtc("mp_scale.cu", kScaleKernel, NvrtcOptions{}, result, error))
      << error;
  EXPECT_NE(result.ptx.find(".entry mp_scale"), std::string::npos);
  EXPECT_NE(result.ptx.find(".target sm_90"), std::string::npos);
  ASSERT_GE(result.cubin.size(), 4u);
  EXPECT_EQ(std::string(result.cubin.begin(), result.cubin.begin() + 4), "\x7f" "ELF");
}

TEST(Nvrtc, PtxOnlyForComputeArchitecture) {
  NvrtcOptions options;
  options.smVersion = 80;
  options.cubin = false;
  NvrtcResult result;
  std::string error;
  ASSERT_TRUE(compileWithNvrtc("mp_scale.cu", kScaleKernel, options, result, error)) << error;
  EXPECT_NE(result.ptx.find(".target sm_80"), std::string::npos);
  EXPECT_TRUE(result.cubin.empty());
}

TEST(Nvrtc, ErrorNamesProgramAndLine) {
  NvrtcResult result;
  std::string error;
  EXPECT_FALSE(compileWithNvrtc("broken.cu", "__global__ void k() { undeclared = 1; }",
                                NvrtcOptions{}, result, error));
  EXPECT_NE(error.find("broken.cu"), std::string::npos) << error;
  EXPECT_NE(error.find("undeclared"), std::string::npos) << error;
}

TEST(Nvrtc, RejectsUnsupportedArchitecture) {
  NvrtcOptions options;
  options.smVersion = 70; // NVRTC 13 dropped Volta
  NvrtcResult result;
  std::string error;
  EXPECT_FALSE(compileWithNvrtc("mp_scale.cu", kScaleKernel, options, result, error));
  EXPECT_NE(error.find("mp_scale.cu"), std::string::npos) << error;
}

TEST(CublasLt, LinksAndReportsVersion) {
  // cuBLASLt 13.x encodes its version as major*10000 + minor*100 + patch.
  EXPECT_GE(cublasLtGetVersion(), 130000u);
}

} // namespace
