//===- GemmPlan.h - a Gemm step as cuBLASLt sees it -------------*- C++ -*-===//
//
// A pure function (no GPU, no cuBLASLt call) from a verified Gemm step and
// its tensors to the values cuBLASLt's descriptors take, or a status naming
// the step when cuBLASLt cannot compute what the CPU backend computes.
//
// cuBLASLt is column-major and the module row-major: a row-major [r, c]
// matrix is a column-major c x r one with the same bytes. So
//   out = a @ op(b)   (row-major)   is   out^T = op(b)^T @ a^T   (column-major)
// and cuBLASLt's A is the step's b, its B the step's a, its D the step's out
// seen transposed: M = n, N = m, K = k. b stored [k, n] is cuBLASLt's A
// untransposed (N, ld n); b stored [n, k] (trans_b, as nn.Linear keeps its
// weight) is A transposed (T, ld k); a [m, k] is B untransposed (N, ld k).
// Hence FP8, which sm_89/sm_90 run only as TN, maps directly from trans_b
// GEMMs and from no others.
//
// The semantics matched are CpuGemmStep.cpp's: operands decoded to FP32
// (TF32 when `tf32`), an FP32 accumulator, FP8 dequantization by
// (1/a_scale)(1/b_scale), then the bias, then ReLU or tanh-GELU (the CPU's
// GELU is the tanh form, as cuBLASLt's epilogue is), one rounding to out.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_GEMMPLAN_H
#define MIXPREC_RUNTIME_CUDA_GEMMPLAN_H

#include "runtime/src/Module.h"
#include "runtime/src/Status.h"

#include <cublasLt.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace mixprec::runtime::cuda {

/// How a step's bias reaches cuBLASLt.
enum class GemmBias : uint8_t {
  None,
  /// n contiguous values along the output's last dim: the BIAS epilogue reads
  /// the tensor in place.
  Vector,
  /// One value for every element: the runner expands it to an n-vector on
  /// the device (GemmKernels.h), then as Vector.
  Scalar,
  /// One value per output element (the bias has the output's shape): matrix
  /// C with beta = 1, C's layout being D's.
  Matrix,
};

/// One cuBLASLt matrix layout (column-major, as cublasLtMatrixLayoutCreate
/// takes it, plus the strided-batch attributes).
struct GemmLayout {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batchCount = 1;
  int64_t batchStride = 0; ///< elements; 0 broadcasts one matrix to all batches

  auto tie() const { return std::tie(type, rows, cols, ld, batchCount, batchStride); }
  bool operator<(const GemmLayout &o) const { return tie() < o.tie(); }
  bool operator==(const GemmLayout &o) const { return tie() == o.tie(); }
};

/// What the step runs as.
enum class GemmMode : uint8_t {
  Matmul, ///< one cublasLtMatmul
  Empty,  ///< m*n == 0: nothing to write
  Zero,   ///< k == 0, no bias: every output element is 0 (also after ReLU/GELU)
};

/// A step's cuBLASLt plan: every value its descriptors, layouts and the
/// heuristic query depend on. Steps with equal plans share one algorithm.
struct GemmPlan {
  GemmMode mode = GemmMode::Matmul;
  cublasComputeType_t computeType = CUBLAS_COMPUTE_32F;
  cudaDataType_t scaleType = CUDA_R_32F;
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  GemmBias bias = GemmBias::None;
  cudaDataType_t biasType = CUDA_R_32F; ///< Vector and Scalar biases
  /// FP8: cuBLASLt's A and B scale pointers point at the device-computed
  /// reciprocals 1/b_scale and 1/a_scale (the step's b is cuBLASLt's A).
  bool fp8Scales = false;
  float beta = 0.0f; ///< 1 for a Matrix bias
  /// cuBLASLt's A (the step's b), B (the step's a), C and D (the step's out).
  GemmLayout a, b, c, d;

  // Zero mode: the output's batches of `zeroBytes` bytes, `zeroStride`
  // bytes apart.
  int64_t zeroBatches = 0, zeroBytes = 0, zeroStride = 0;

  auto tie() const {
    return std::tie(mode, computeType, scaleType, transa, transb, epilogue, bias, biasType,
                    fp8Scales, beta, a, b, c, d, zeroBatches, zeroBytes, zeroStride);
  }
  bool operator<(const GemmPlan &o) const { return tie() < o.tie(); }
  bool operator==(const GemmPlan &o) const { return tie() == o.tie(); }
};

/// cuBLASLt's data type for a module dtype; false for integer dtypes.
bool cudaDataTypeOf(schema::DType dtype, cudaDataType_t &out);

/// The plan of `gemm` (verified, as LoadedModule::gemms() holds it) over
/// `tensors`, or MIXPREC_UNIMPLEMENTED naming the step and what cuBLASLt
/// cannot do (operands of two dtypes, FP8 without trans_b, an FP8 output,
/// FP8 scales on non-FP8 operands, a bias that varies along rows, ...).
Status planGemm(const GemmDesc &gemm, const std::vector<TensorDesc> &tensors, GemmPlan &out);

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_GEMMPLAN_H
