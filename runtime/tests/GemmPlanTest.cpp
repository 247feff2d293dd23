//===- GemmPlanTest.cpp - Gemm steps as cuBLASLt plans --------------------===//
//
// planGemm on modules the verifier loaded: the row-major step becomes
// cuBLASLt's column-major problem with the operands swapped (A = b, B = a,
// M = n, N = m), per dtype, trans_b, batch and broadcast, epilogue and bias
// form, tf32; and every combination cuBLASLt cannot compute as the CPU
// backend does is refused naming the step.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cuda/GemmPlan.h"
#include "runtime/tests/GemmTestModules.h"

#include <gtest/gtest.h>

namespace {

using mixprec::runtime::LoadedModule;
using mixprec::runtime::Status;
using mixprec::schema::DType;
using mixprec::schema::Epilogue;
using mixprec::testing::GemmCase;
using namespace mixprec::runtime::cuda;

/// The plan of `c`'s one step; its status in `status`.
GemmPlan plan(const GemmCase &c, Status *status = nullptr) {
  std::shared_ptr<const LoadedModule> module;
  std::string error = mixprec::testing::loadGemmModule(c, module);
  EXPECT_EQ(error, "") << "the test's module does not load";
  GemmPlan p;
  if (!module)
    return p;
  Status s = planGemm(module->gemms()[0], module->tensors(), p);
  if (status)
    *status = s;
  else
    EXPECT_TRUE(s.ok()) << s.message();
  return p;
}

/// The message of `c`'s refused plan.
std::string refusal(const GemmCase &c) {
  Status s;
  plan(c, &s);
  EXPECT_EQ(s.code(), MIXPREC_UNIMPLEMENTED) << s.message();
  return s.message();
}

/// Checks one layout's shape: type, rows, cols, leading dim, batches.
void expectLayout(const GemmLayout &l, cudaDataType_t type, uint64_t rows, uint64_t cols,
                  int64_t ld, int32_t count = 1, int64_t stride = 0) {
  EXPECT_EQ(l.type, type);
  EXPECT_EQ(l.rows, rows);
  EXPECT_EQ(l.cols, cols);
  EXPECT_EQ(l.ld, ld);
  EXPECT_EQ(l.batchCount, count);
  EXPECT_EQ(l.batchStride, stride);
}

GemmCase shape(int64_t m, int64_t n, int64_t k) {
  GemmCase c;
  c.m = m;
  c.n = n;
  c.k = k;
  return c;
}

/// An E4M3 x E4M3 GEMM with scales and a bf16 output, b transposed (the TN
/// layout cuBLASLt's FP8 GEMMs take).
GemmCase fp8Shape(int64_t m, int64_t n, int64_t k) {
  GemmCase c = shape(m, n, k);
  c.a = c.b = DType::F8E4M3FN;
  c.out = DType::BF16;
  c.transB = true;
  c.scales = true;
  return c;
}

TEST(GemmPlan, F32RowMajorIsColumnMajorWithOperandsSwapped) {
  GemmPlan p = plan(shape(3, 5, 4));
  EXPECT_EQ(p.mode, GemmMode::Matmul);
  EXPECT_EQ(p.computeType, CUBLAS_COMPUTE_32F); // strict FP32, never TF32 unasked
  EXPECT_EQ(p.scaleType, CUDA_R_32F);
  EXPECT_EQ(p.transa, CUBLAS_OP_N);
  EXPECT_EQ(p.transb, CUBLAS_OP_N);
  expectLayout(p.a, CUDA_R_32F, 5, 4, 5); // b [k, n]: column-major n x k
  expectLayout(p.b, CUDA_R_32F, 4, 3, 4); // a [m, k]: column-major k x m
  expectLayout(p.c, CUDA_R_32F, 5, 3, 5);
  expectLayout(p.d, CUDA_R_32F, 5, 3, 5); // out [m, n]: column-major n x m
  EXPECT_EQ(p.epilogue, CUBLASLT_EPILOGUE_DEFAULT);
  EXPECT_EQ(p.bias, GemmBias::None);
  EXPECT_FALSE(p.fp8Scales);
  EXPECT_EQ(p.beta, 0.0f);
}

TEST(GemmPlan, TransBIsTransposedA) {
  GemmCase c = shape(3, 5, 4);
  c.transB = true;
  GemmPlan p = plan(c);
  EXPECT_EQ(p.transa, CUBLAS_OP_T);
  EXPECT_EQ(p.transb, CUBLAS_OP_N);
  expectLayout(p.a, CUDA_R_32F, 4, 5, 4); // b [n, k]: column-major k x n
  expectLayout(p.b, CUDA_R_32F, 4, 3, 4);
}

TEST(GemmPlan, Tf32OnlyForF32Operands) {
  GemmCase c = shape(8, 8, 8);
  c.tf32 = true;
  EXPECT_EQ(plan(c).computeType, CUBLAS_COMPUTE_32F_FAST_TF32);
  c.a = c.b = c.out = DType::BF16;
  EXPECT_EQ(plan(c).computeType, CUBLAS_COMPUTE_32F); // bf16 values are TF32 values
  c.tf32 = false;
  c.a = c.b = c.out = DType::F32;
  GemmPlan strict = plan(c);
  c.tf32 = true;
  EXPECT_FALSE(plan(c) == strict); // two algorithms, two cache entries
}

TEST(GemmPlan, SixteenBitOperandsAccumulateInF32) {
  for (DType t : {DType::BF16, DType::F16}) {
    cudaDataType_t type = t == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
    for (DType out : {t, DType::F32}) {
      GemmCase c = shape(16, 32, 64);
      c.a = c.b = t;
      c.out = out;
      GemmPlan p = plan(c);
      EXPECT_EQ(p.computeType, CUBLAS_COMPUTE_32F);
      EXPECT_EQ(p.scaleType, CUDA_R_32F);
      EXPECT_EQ(p.a.type, type);
      EXPECT_EQ(p.b.type, type);
      EXPECT_EQ(p.d.type, out == DType::F32 ? CUDA_R_32F : type);
      EXPECT_EQ(p.c.type, p.d.type);
    }
  }
}

TEST(GemmPlan, Fp8TransposedWeightsAreTheTnLayoutWithScales) {
  GemmCase c = fp8Shape(16, 32, 64);
  c.bias = DType::BF16;
  c.epilogue = Epilogue::BiasGelu;
  GemmPlan p = plan(c);
  EXPECT_EQ(p.transa, CUBLAS_OP_T);
  EXPECT_EQ(p.transb, CUBLAS_OP_N);
  EXPECT_EQ(p.computeType, CUBLAS_COMPUTE_32F);
  EXPECT_EQ(p.scaleType, CUDA_R_32F);
  EXPECT_TRUE(p.fp8Scales);
  expectLayout(p.a, CUDA_R_8F_E4M3, 64, 32, 64);
  expectLayout(p.b, CUDA_R_8F_E4M3, 64, 16, 64);
  expectLayout(p.d, CUDA_R_16BF, 32, 16, 32);
  EXPECT_EQ(p.epilogue, CUBLASLT_EPILOGUE_GELU_BIAS);
  EXPECT_EQ(p.biasType, CUDA_R_16BF);
}

TEST(GemmPlan, Fp8MixedFormatsFollowTheSwap) {
  GemmCase c = shape(16, 32, 64);
  c.a = DType::F8E4M3FN; // cuBLASLt's B
  c.b = DType::F8E5M2;   // cuBLASLt's A
  c.out = DType::F16;
  c.transB = true;
  c.scales = true;
  GemmPlan p = plan(c);
  EXPECT_EQ(p.a.type, CUDA_R_8F_E5M2);
  EXPECT_EQ(p.b.type, CUDA_R_8F_E4M3);
  EXPECT_EQ(p.d.type, CUDA_R_16F);
  c.out = DType::F32;
  EXPECT_EQ(plan(c).d.type, CUDA_R_32F);
  c.scales = false; // FP8 operands without scales: cuBLASLt's default scale 1
  EXPECT_FALSE(plan(c).fp8Scales);
}

TEST(GemmPlan, Fp8WithoutTransBIsRefused) {
  GemmCase c = fp8Shape(16, 32, 64);
  c.name = "fc1";
  c.transB = false;
  EXPECT_EQ(refusal(c),
            "CUDA backend: gemm #0 'fc1': an FP8 GEMM needs b stored transposed ([n, k], "
            "trans_b), the TN layout cuBLASLt requires on sm_89/sm_90; the compiler must give "
            "FP8 GEMMs transposed weights");
}

TEST(GemmPlan, Fp8WithUnalignedDimsIsRefused) {
  // cuBLASLt 13.1 on an H200 found no FP8 algorithm for n = 10.
  GemmCase c = fp8Shape(16, 10, 64);
  c.name = "head";
  EXPECT_EQ(refusal(c), "CUDA backend: gemm #0 'head': an FP8 GEMM needs k and n multiples of "
                        "16 (cuBLASLt's FP8 alignment); this one has k = 64, n = 10; compile "
                        "it in BF16");
  c.n = 32;
  c.k = 24;
  EXPECT_NE(refusal(c).find("k = 24, n = 32"), std::string::npos);
  c.k = 32;
  c.m = 3; // m is free: the rows of the output's column-major view
  EXPECT_TRUE(plan(c).fp8Scales);
}

TEST(GemmPlan, DtypeCombinationsCublasLtLacksAreRefused) {
  GemmCase c = shape(4, 4, 4);
  c.transB = true;
  c.a = DType::BF16;
  EXPECT_EQ(refusal(c), "CUDA backend: gemm #0 'g': a is bf16 and b f32: cuBLASLt needs both "
                        "operands in one dtype");
  c.a = DType::F8E4M3FN;
  c.b = DType::BF16;
  c.out = DType::BF16;
  EXPECT_NE(refusal(c).find("a is f8E4M3FN and b bf16: cuBLASLt multiplies FP8 only by FP8"),
            std::string::npos);
  c.a = c.b = DType::F8E5M2;
  EXPECT_NE(refusal(c).find("no E5M2 x E5M2 GEMM"), std::string::npos);
  c.a = c.b = DType::F8E4M3FN;
  c.out = DType::F8E4M3FN;
  EXPECT_NE(refusal(c).find("f8E4M3FN operands with a f8E4M3FN output"), std::string::npos);
  c.a = c.b = DType::F32;
  c.out = DType::BF16;
  EXPECT_NE(refusal(c).find("f32 operands with a bf16 output"), std::string::npos);
  c.a = c.b = DType::BF16;
  c.out = DType::F16;
  EXPECT_NE(refusal(c).find("bf16 operands with a f16 output"), std::string::npos);
  c.out = DType::BF16;
  c.scales = true;
  EXPECT_EQ(refusal(c), "CUDA backend: gemm #0 'g': dequantization scales on bf16 operands: "
                        "cuBLASLt applies A/B scales to FP8 operands only");
}

TEST(GemmPlan, BatchesKeepTheirStridesSwapped) {
  GemmCase c = shape(3, 5, 4);
  c.batch = 6;
  GemmPlan p = plan(c);
  expectLayout(p.a, CUDA_R_32F, 5, 4, 5, 6, 20); // b's stride k*n
  expectLayout(p.b, CUDA_R_32F, 4, 3, 4, 6, 12); // a's stride m*k
  expectLayout(p.c, CUDA_R_32F, 5, 3, 5, 6, 15);
  expectLayout(p.d, CUDA_R_32F, 5, 3, 5, 6, 15);
}

TEST(GemmPlan, BroadcastWeightsFoldIntoOneTallGemm) {
  GemmCase c = shape(3, 5, 4);
  c.batch = 6;
  c.strideB = 0; // one [k, n] weight for every batch: as x[6,3,4] @ w[4,5]
  GemmPlan p = plan(c);
  expectLayout(p.a, CUDA_R_32F, 5, 4, 5);
  expectLayout(p.b, CUDA_R_32F, 4, 18, 4); // N = batch * m
  expectLayout(p.d, CUDA_R_32F, 5, 18, 5);
}

TEST(GemmPlan, BroadcastOperandsWithoutDenseBatchesStayBatched) {
  GemmCase c = shape(3, 5, 4);
  c.batch = 2;
  c.strideB = 0;
  c.strideOut = 20; // a gap after each batch's 15 outputs
  GemmPlan p = plan(c);
  expectLayout(p.a, CUDA_R_32F, 5, 4, 5, 2, 0); // stride 0: broadcast
  expectLayout(p.b, CUDA_R_32F, 4, 3, 4, 2, 12);
  expectLayout(p.d, CUDA_R_32F, 5, 3, 5, 2, 20);
  c = shape(3, 5, 4);
  c.batch = 2;
  c.strideA = 0; // one a for every batch of b
  p = plan(c);
  expectLayout(p.a, CUDA_R_32F, 5, 4, 5, 2, 20);
  expectLayout(p.b, CUDA_R_32F, 4, 3, 4, 2, 0);
}

TEST(GemmPlan, Epilogues) {
  struct {
    Epilogue epilogue;
    cublasLtEpilogue_t expected;
  } cases[] = {{Epilogue::None, CUBLASLT_EPILOGUE_DEFAULT},
               {Epilogue::Bias, CUBLASLT_EPILOGUE_BIAS},
               {Epilogue::Relu, CUBLASLT_EPILOGUE_RELU},
               {Epilogue::BiasRelu, CUBLASLT_EPILOGUE_RELU_BIAS},
               {Epilogue::Gelu, CUBLASLT_EPILOGUE_GELU}, // tanh form, as the CPU's
               {Epilogue::BiasGelu, CUBLASLT_EPILOGUE_GELU_BIAS}};
  for (const auto &e : cases) {
    GemmCase c = shape(2, 3, 4);
    c.epilogue = e.epilogue;
    GemmPlan p = plan(c);
    EXPECT_EQ(p.epilogue, e.expected) << static_cast<int>(e.epilogue);
    const bool bias = e.epilogue == Epilogue::Bias || e.epilogue == Epilogue::BiasRelu ||
                      e.epilogue == Epilogue::BiasGelu;
    EXPECT_EQ(p.bias, bias ? GemmBias::Vector : GemmBias::None);
  }
}

TEST(GemmPlan, BiasForms) {
  GemmCase c = shape(2, 3, 4);
  c.batch = 5;
  c.strideB = 0;
  c.epilogue = Epilogue::BiasRelu;
  c.biasShape = {1, 1, 3}; // along the last dim of out [5, 2, 3]
  EXPECT_EQ(plan(c).bias, GemmBias::Vector);
  c.biasShape = {};
  c.scalarBias = true; // one value: expanded on the device, then as a vector
  GemmPlan p = plan(c);
  EXPECT_EQ(p.bias, GemmBias::Scalar);
  EXPECT_EQ(p.epilogue, CUBLASLT_EPILOGUE_RELU_BIAS);
  c.scalarBias = false;
  c.biasShape = {5, 2, 3}; // one per output element: matrix C, beta 1
  p = plan(c);
  EXPECT_EQ(p.bias, GemmBias::Matrix);
  EXPECT_EQ(p.epilogue, CUBLASLT_EPILOGUE_RELU);
  EXPECT_EQ(p.beta, 1.0f);
  EXPECT_EQ(p.c, p.d);
  c.bias = DType::BF16;
  EXPECT_EQ(refusal(c), "CUDA backend: gemm #0 'g': bias bias is bf16 but the f32 output needs "
                        "a f32 bias; cuBLASLt adds a bias of the output's dtype");
}

TEST(GemmPlan, Fp8ProductsInF32TakeABf16Bias) {
  GemmCase c;
  c.m = 16, c.n = 32, c.k = 64;
  c.a = c.b = DType::F8E4M3FN;
  c.out = c.bias = DType::F32;
  c.transB = c.scales = true;
  c.epilogue = Epilogue::Bias;
  EXPECT_EQ(refusal(c), "CUDA backend: gemm #0 'g': bias bias is f32 but the f32 output needs a "
                        "bf16 bias (cuBLASLt's FP8 GEMMs); cuBLASLt adds a bias of the output's "
                        "dtype");
  c.bias = DType::BF16;
  GemmPlan p = plan(c);
  EXPECT_EQ(p.bias, GemmBias::Vector);
  EXPECT_EQ(p.biasType, CUDA_R_16BF);
  EXPECT_EQ(p.d.type, CUDA_R_32F);
}

TEST(GemmPlan, BiasAlongRowsIsRefused) {
  GemmCase c = shape(3, 3, 4);
  c.epilogue = Epilogue::Bias;
  c.biasShape = {3, 1}; // n values, but one per row
  EXPECT_EQ(refusal(c), "CUDA backend: gemm #0 'g': bias bias [3,1] varies along the output's "
                        "rows [3,3]; cuBLASLt takes a bias of n values along the last dim, one "
                        "value, or one per output element");
  c = shape(2, 3, 4);
  c.batch = 2;
  c.epilogue = Epilogue::Bias;
  c.biasShape = {2, 1, 3}; // one vector per batch
  EXPECT_NE(refusal(c).find("varies along the output's rows [2,2,3]"), std::string::npos);
}

TEST(GemmPlan, VectorBiasOverAnOutputWhoseLastDimIsNotN) {
  // out [2, 6] holding a [4, 3] result: a bias [3] broadcasts to the flat
  // [4, 3] view (the verifier's biasTarget) and is a vector there.
  GemmCase c = shape(4, 3, 2);
  c.outShape = {2, 6};
  c.epilogue = Epilogue::Bias;
  EXPECT_EQ(plan(c).bias, GemmBias::Vector);
}

TEST(GemmPlan, EmptyAndZeroK) {
  GemmCase c = shape(0, 3, 4);
  EXPECT_EQ(plan(c).mode, GemmMode::Empty);
  c = shape(3, 5, 0);
  c.batch = 2;
  c.out = DType::BF16;
  c.a = c.b = DType::BF16;
  c.strideOut = 16;
  c.epilogue = Epilogue::Gelu; // gelu(0) = 0
  GemmPlan p = plan(c);
  EXPECT_EQ(p.mode, GemmMode::Zero);
  EXPECT_EQ(p.zeroBatches, 2);
  EXPECT_EQ(p.zeroBytes, 30);
  EXPECT_EQ(p.zeroStride, 32);
  c.strideOut = -1;
  c.epilogue = Epilogue::Bias;
  c.bias = DType::BF16;
  EXPECT_NE(refusal(c).find("k = 0 with a bias"), std::string::npos);
}

TEST(GemmPlan, EqualShapesGiveEqualPlans) {
  GemmCase c = shape(7, 9, 11);
  c.name = "first";
  GemmPlan first = plan(c);
  c.name = "second";
  EXPECT_TRUE(plan(c) == first);
  EXPECT_FALSE(plan(c) < first);
  c.k = 12;
  EXPECT_FALSE(plan(c) == first);
}

} // namespace
