//===- GemmDescriptors.cpp - a GemmPlan's cuBLASLt descriptors ------------===//
#include "runtime/src/backends/cuda/GemmDescriptors.h"

namespace mixprec::runtime::cuda {

Status cublasLtError(const CublasLt &lt, cublasStatus_t status, const std::string &step,
                     const std::string &what) {
  const mixprec_status_code_t code =
      status == CUBLAS_STATUS_NOT_SUPPORTED ? MIXPREC_UNIMPLEMENTED
      : status == CUBLAS_STATUS_ALLOC_FAILED ? MIXPREC_OUT_OF_MEMORY
                                              : MIXPREC_EXECUTION_ERROR;
  return Status(code, "CUDA backend: " + step + ": " + what + ": " +
                          lt.api.cublasLtGetStatusName(status));
}

GemmDescriptors::~GemmDescriptors() {
  for (cublasLtMatrixLayout_t layout : {a, b, c, d})
    if (layout)
      lt_->api.cublasLtMatrixLayoutDestroy(layout);
  if (matmul)
    lt_->api.cublasLtMatmulDescDestroy(matmul);
}

Status GemmDescriptors::buildLayout(const GemmLayout &layout, const std::string &step,
                                    const char *role, cublasLtMatrixLayout_t &out) {
  const CublasLtSymbols &api = lt_->api;
  const std::string what = std::string("layout of cuBLASLt's ") + role;
  if (cublasStatus_t s = api.cublasLtMatrixLayoutCreate(&out, layout.type, layout.rows,
                                                        layout.cols, layout.ld);
      s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(*lt_, s, step, what);
  if (layout.batchCount == 1)
    return okStatus();
  if (cublasStatus_t s = api.cublasLtMatrixLayoutSetAttribute(
          out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &layout.batchCount, sizeof(layout.batchCount));
      s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(*lt_, s, step, what + " (batch count)");
  if (cublasStatus_t s = api.cublasLtMatrixLayoutSetAttribute(
          out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &layout.batchStride,
          sizeof(layout.batchStride));
      s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(*lt_, s, step, what + " (batch stride)");
  return okStatus();
}

Status GemmDescriptors::build(const GemmPlan &plan, const std::string &step) {
  const CublasLtSymbols &api = lt_->api;
  if (cublasStatus_t s = api.cublasLtMatmulDescCreate(&matmul, plan.computeType, plan.scaleType);
      s != CUBLAS_STATUS_SUCCESS)
    return cublasLtError(*lt_, s, step, "cublasLtMatmulDescCreate");
  // Sets one attribute of the matmul descriptor; the status names it.
  auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void *value, size_t size,
                 const char *name) -> Status {
    if (cublasStatus_t s = api.cublasLtMatmulDescSetAttribute(matmul, attribute, value, size);
        s != CUBLAS_STATUS_SUCCESS)
      return cublasLtError(*lt_, s, step, std::string("setting ") + name);
    return okStatus();
  };
  const int32_t transa = plan.transa, transb = plan.transb;
  const uint32_t epilogue = plan.epilogue;
  const int32_t biasType = plan.biasType;
  if (Status s = set(CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof(transa), "TRANSA"); !s.ok())
    return s;
  if (Status s = set(CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof(transb), "TRANSB"); !s.ok())
    return s;
  if (Status s = set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue), "EPILOGUE");
      !s.ok())
    return s;
  if (plan.bias == GemmBias::Vector || plan.bias == GemmBias::Scalar)
    if (Status s = set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType),
                       "BIAS_DATA_TYPE");
        !s.ok())
      return s;
  if (Status s = buildLayout(plan.a, step, "A", a); !s.ok())
    return s;
  if (Status s = buildLayout(plan.b, step, "B", b); !s.ok())
    return s;
  if (Status s = buildLayout(plan.c, step, "C", c); !s.ok())
    return s;
  return buildLayout(plan.d, step, "D", d);
}

} // namespace mixprec::runtime::cuda
