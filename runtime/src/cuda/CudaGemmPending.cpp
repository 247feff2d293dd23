//===- CudaGemmPending.cpp - GEMM steps until CudaGemm.cpp lands ----------===//
//
// Links the CUDA backend against CudaGemm.h's contract while cuBLASLt's
// GEMM calls are written elsewhere: a module with GEMM steps is refused at
// session creation with a status naming the step that is missing. The lead
// deletes this file when CudaGemm.cpp is merged.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cuda/CudaGemm.h"

namespace mixprec::runtime::cuda {

Status createGemmRunner(std::shared_ptr<const LoadedModule> module, const Driver &driver,
                        const CublasLt &lt, std::unique_ptr<GemmRunner> &out) {
  (void)driver;
  (void)lt;
  (void)out;
  return Status(MIXPREC_UNIMPLEMENTED,
                "GEMM steps on cuBLASLt are not in this build (CudaGemm.cpp); " +
                    module->gemms().front().name + " cannot run");
}

} // namespace mixprec::runtime::cuda
