//===- GemmDescriptors.h - a GemmPlan's cuBLASLt descriptors ----*- C++ -*-===//
//
// The matmul descriptor and the four matrix layouts of one plan. Building
// them needs cuBLASLt but no GPU (cublasLtMatmulDescCreate and
// cublasLtMatrixLayoutCreate work without a driver), so CI builds them for
// every kind of plan and reads the attributes back.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_GEMMDESCRIPTORS_H
#define MIXPREC_RUNTIME_CUDA_GEMMDESCRIPTORS_H

#include "runtime/src/backends/cuda/CublasLt.h"
#include "runtime/src/backends/cuda/GemmPlan.h"

#include <string>

namespace mixprec::runtime::cuda {

/// The status of a failed cuBLASLt call: "<step>: <what>: <status name>".
Status cublasLtError(const CublasLt &lt, cublasStatus_t status, const std::string &step,
                     const std::string &what);

/// Owns one plan's descriptors; destroys them with itself.
class GemmDescriptors {
public:
  explicit GemmDescriptors(const CublasLt &lt) : lt_(&lt) {}
  GemmDescriptors(const GemmDescriptors &) = delete;
  GemmDescriptors &operator=(const GemmDescriptors &) = delete;
  ~GemmDescriptors();

  /// Creates the descriptor (compute and scale type, transa/transb,
  /// epilogue, bias type) and the layouts (types, sizes, leading dims,
  /// batch count and strides) of `plan`; `step` names the step in errors.
  /// Pointers (bias, FP8 scales) are the runner's to set.
  Status build(const GemmPlan &plan, const std::string &step);

  cublasLtMatmulDesc_t matmul = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;

private:
  Status buildLayout(const GemmLayout &layout, const std::string &step, const char *role,
                     cublasLtMatrixLayout_t &out);
  const CublasLt *lt_;
};

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_GEMMDESCRIPTORS_H
