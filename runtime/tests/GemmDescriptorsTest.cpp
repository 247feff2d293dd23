//===- GemmDescriptorsTest.cpp - cuBLASLt descriptors without a GPU -------===//
//
// cublasLtMatmulDescCreate and cublasLtMatrixLayoutCreate need no driver:
// the descriptors of every kind of plan are built with the real cuBLASLt
// and their attributes read back, so the descriptor code is checked in CI.
// (Creating them validates nothing, not even a negative leading dimension:
// what cuBLASLt refuses shows at the heuristic query, on a GPU.)
// The embedded PTX of the helper kernels goes through ptxas for sm_80 and
// sm_90 where the toolkit has it.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cuda/GemmDescriptors.h"
#include "runtime/src/backends/cuda/GemmKernels.h"
#include "runtime/tests/GemmTestModules.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace {

using mixprec::runtime::LoadedModule;
using mixprec::runtime::Status;
using mixprec::schema::DType;
using mixprec::schema::Epilogue;
using mixprec::testing::GemmCase;
using namespace mixprec::runtime::cuda;

/// The toolkit's cuBLASLt, loaded once for the suite.
const CublasLt &lt() {
  static std::unique_ptr<CublasLt> loaded = [] {
    std::unique_ptr<CublasLt> out;
    Status s = loadCublasLt({"libcublasLt.so.13", "libcublasLt.so"}, out);
    EXPECT_TRUE(s.ok()) << s.message();
    return out;
  }();
  return *loaded;
}

/// One attribute of the matmul descriptor, as the int32 the plan holds.
template <typename T> T descAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t a) {
  T value{};
  size_t written = 0;
  EXPECT_EQ(lt().api.cublasLtMatmulDescGetAttribute(desc, a, &value, sizeof(value), &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof(value));
  return value;
}

template <typename T>
T layoutAttribute(cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t a) {
  T value{};
  size_t written = 0;
  EXPECT_EQ(lt().api.cublasLtMatrixLayoutGetAttribute(layout, a, &value, sizeof(value), &written),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(written, sizeof(value));
  return value;
}

/// A layout's attributes equal the plan's.
void expectLayout(cublasLtMatrixLayout_t layout, const GemmLayout &want, const char *role) {
  SCOPED_TRACE(role);
  ASSERT_NE(layout, nullptr);
  EXPECT_EQ(layoutAttribute<uint32_t>(layout, CUBLASLT_MATRIX_LAYOUT_TYPE),
            static_cast<uint32_t>(want.type));
  EXPECT_EQ(layoutAttribute<int32_t>(layout, CUBLASLT_MATRIX_LAYOUT_ORDER), CUBLASLT_ORDER_COL);
  EXPECT_EQ(layoutAttribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_ROWS), want.rows);
  EXPECT_EQ(layoutAttribute<uint64_t>(layout, CUBLASLT_MATRIX_LAYOUT_COLS), want.cols);
  EXPECT_EQ(layoutAttribute<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_LD), want.ld);
  EXPECT_EQ(layoutAttribute<int32_t>(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT),
            want.batchCount);
  EXPECT_EQ(layoutAttribute<int64_t>(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET),
            want.batchStride);
}

/// Builds `c`'s plan and descriptors and checks every attribute set.
void checkDescriptors(const GemmCase &c) {
  SCOPED_TRACE(c.name);
  std::shared_ptr<const LoadedModule> module;
  ASSERT_EQ(mixprec::testing::loadGemmModule(c, module), "");
  GemmPlan plan;
  Status s = planGemm(module->gemms()[0], module->tensors(), plan);
  ASSERT_TRUE(s.ok()) << s.message();
  GemmDescriptors d(lt());
  s = d.build(plan, module->gemms()[0].name);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(descAttribute<int32_t>(d.matmul, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE),
            plan.computeType);
  EXPECT_EQ(descAttribute<int32_t>(d.matmul, CUBLASLT_MATMUL_DESC_SCALE_TYPE), plan.scaleType);
  EXPECT_EQ(descAttribute<int32_t>(d.matmul, CUBLASLT_MATMUL_DESC_TRANSA), plan.transa);
  EXPECT_EQ(descAttribute<int32_t>(d.matmul, CUBLASLT_MATMUL_DESC_TRANSB), plan.transb);
  EXPECT_EQ(descAttribute<uint32_t>(d.matmul, CUBLASLT_MATMUL_DESC_EPILOGUE),
            static_cast<uint32_t>(plan.epilogue));
  if (plan.bias == GemmBias::Vector || plan.bias == GemmBias::Scalar) {
    EXPECT_EQ(descAttribute<int32_t>(d.matmul, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE),
              plan.biasType);
  }
  expectLayout(d.a, plan.a, "A");
  expectLayout(d.b, plan.b, "B");
  expectLayout(d.c, plan.c, "C");
  expectLayout(d.d, plan.d, "D");
}

TEST(GemmDescriptors, EveryKindOfPlanReadsBack) {
  std::vector<GemmCase> cases;
  GemmCase c;
  c.name = "f32";
  c.m = 3, c.n = 5, c.k = 4;
  cases.push_back(c);
  c.name = "tf32_trans_b_bias_relu";
  c.tf32 = c.transB = true;
  c.epilogue = Epilogue::BiasRelu;
  cases.push_back(c);
  c = GemmCase();
  c.name = "bf16_batched_gelu";
  c.a = c.b = c.out = DType::BF16;
  c.m = 8, c.n = 16, c.k = 32, c.batch = 4;
  c.epilogue = Epilogue::Gelu;
  cases.push_back(c);
  c.name = "bf16_broadcast_a";
  c.strideA = 0;
  cases.push_back(c);
  c.name = "f16_folded_scalar_bias";
  c.a = c.b = c.out = c.bias = DType::F16;
  c.strideA = -1;
  c.strideB = 0;
  c.scalarBias = true;
  c.epilogue = Epilogue::Bias;
  cases.push_back(c);
  c = GemmCase();
  c.name = "fp8_tn_scales_bias_gelu";
  c.a = DType::F8E4M3FN;
  c.b = DType::F8E5M2;
  c.out = c.bias = DType::BF16;
  c.m = 16, c.n = 32, c.k = 64;
  c.transB = c.scales = true;
  c.epilogue = Epilogue::BiasGelu;
  cases.push_back(c);
  c = GemmCase();
  c.name = "matrix_bias";
  c.m = 2, c.n = 3, c.k = 4;
  c.epilogue = Epilogue::BiasRelu;
  c.biasShape = {2, 3};
  cases.push_back(c);
  for (const GemmCase &each : cases)
    checkDescriptors(each);
}

TEST(GemmDescriptors, FailedCallsNameTheStepAndTheStatus) {
  Status s = cublasLtError(lt(), CUBLAS_STATUS_NOT_SUPPORTED, "gemm #3 'fc'",
                           "cublasLtMatmulAlgoGetHeuristic");
  EXPECT_EQ(s.code(), MIXPREC_UNIMPLEMENTED);
  EXPECT_EQ(s.message(), "CUDA backend: gemm #3 'fc': cublasLtMatmulAlgoGetHeuristic: "
                         "CUBLAS_STATUS_NOT_SUPPORTED");
}

#ifdef MIXPREC_PTXAS
TEST(GemmKernels, PtxAssemblesForSm80AndSm90) {
  const std::string path = ::testing::TempDir() + "mixprec_gemm_kernels.ptx";
  std::ofstream(path) << kGemmKernelsPtx;
  for (const char *arch : {"sm_80", "sm_90"}) {
    const std::string command = std::string(MIXPREC_PTXAS) + " -arch=" + arch + " " + path +
                                " -o " + path + "." + arch + ".cubin";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  std::remove(path.c_str());
}
#endif

} // namespace
