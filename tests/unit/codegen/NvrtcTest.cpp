//===- NvrtcTest.cpp - NVRTC and cuBLASLt linkage -------------------------===//
//
// These run without a GPU: NVRTC compiles for any supported architecture and
// cuBLASLt answers version queries. (The driver probe's test is the
// runtime's: runtime/tests/CudaDriverTest.cpp.)
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/NvrtcCompiler.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

namespace {

using mixprec::codegen::compileWithNvrtc;
using mixprec::codegen::NvrtcOptions;
using mixprec::codegen::NvrtcResult;
using mixprec::codegen::parseCudaArch;

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

// Generated programs hold many kernels and long lines: the error names the
// kernel the failing line is in and shows that line's text.
constexpr const char *kTwoKernels = R"cuda(extern "C" __global__ void mp_fused_0(float *x) {
  x[0] = 1.0f;
}
extern "C" __global__ void
mp_fused_1(float *x, int n) {
  float y = x[0];
  x[1] = y * undeclared_scale;
}
__device__ float helper(float v) { return v + missing_bias; }
)cuda";

TEST(Nvrtc, ErrorNamesKernelAndShowsSourceLine) {
  NvrtcResult result;
  std::string error;
  ASSERT_FALSE(compileWithNvrtc("model.cu", kTwoKernels, NvrtcOptions{}, result, error));
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_NE(error.find("model.cu"), std::string::npos) << error;
  EXPECT_NE(error.find("in kernel 'mp_fused_1'"), std::string::npos) << error;
  EXPECT_NE(error.find("line 7 is 'x[1] = y * undeclared_scale;'"), std::string::npos) << error;
}

TEST(Nvrtc, ErrorOutsideKernelsNamesNoKernel) {
  NvrtcResult result;
  std::string error;
  std::string source = "extern \"C\" __global__ void mp_fused_0(float *x) { x[0] = 1.0f; }\n"
                       "__device__ float helper(float v) { return v + missing_bias; }\n";
  ASSERT_FALSE(compileWithNvrtc("helper.cu", source, NvrtcOptions{}, result, error));
  EXPECT_EQ(error.find("in kernel"), std::string::npos) << error;
  EXPECT_NE(error.find("line 2 is '__device__ float helper(float v) { return v + missing_bias; }'"),
            std::string::npos)
      << error;
}

TEST(Nvrtc, RejectsUnsupportedArchitecture) {
  NvrtcOptions options;
  options.smVersion = 70; // NVRTC 13 dropped Volta
  NvrtcResult result;
  std::string error;
  EXPECT_FALSE(compileWithNvrtc("mp_scale.cu", kScaleKernel, options, result, error));
  EXPECT_NE(error.find("mp_scale.cu"), std::string::npos) << error;
  EXPECT_NE(error.find("does not know architecture sm_70 (it knows sm_75, sm_80"),
            std::string::npos)
      << error;
}

TEST(CudaArch, AcceptsSm80ToSm100) {
  for (const char *arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100"}) {
    int sm = 0;
    std::string error;
    EXPECT_TRUE(parseCudaArch(arch, sm, error)) << arch << ": " << error;
    EXPECT_EQ("sm_" + std::to_string(sm), arch);
  }
}

TEST(CudaArch, RejectsWhatNvrtcDoesNotKnow) {
  int sm = 0;
  std::string error;
  EXPECT_FALSE(parseCudaArch("sm_85", sm, error));
  EXPECT_EQ(error.rfind("--arch 'sm_85': NVRTC 13.", 0), 0u) << error;
  EXPECT_NE(error.find("does not know architecture sm_85 (it knows sm_75, sm_80, sm_86"),
            std::string::npos)
      << error;
  EXPECT_FALSE(parseCudaArch("sm_70", sm, error));
  EXPECT_NE(error.find("does not know architecture sm_70"), std::string::npos) << error;
  EXPECT_FALSE(parseCudaArch("sm_75", sm, error));
  EXPECT_EQ(error, "--arch 'sm_75': mixprec needs sm_80 or newer (BF16 arithmetic)");
  for (const char *bad : {"90", "sm90", "compute_90", "sm_", "sm_9x", "sm_1000000", ""}) {
    EXPECT_FALSE(parseCudaArch(bad, sm, error)) << bad;
    EXPECT_NE(error.find("expected sm_NN, e.g. sm_90"), std::string::npos) << error;
  }
  EXPECT_EQ(sm, 0); // never written on failure
}

TEST(CublasLt, LinksAndReportsVersion) {
  // cuBLASLt 13.x encodes its version as major*10000 + minor*100 + patch.
  EXPECT_GE(cublasLtGetVersion(), 130000u);
}

} // namespace
