//===- CudaGemm.h - a module's GEMM steps on cuBLASLt -----------*- C++ -*-===//
//
// The contract between the CUDA backend (CudaBackend.cpp, which owns the
// context, stream and device memory) and the GEMM calls (CudaGemm.cpp,
// which owns cuBLASLt's handle, descriptors, algorithm choice and
// workspace). A GemmRunner is made once per session; prepare() builds one
// plan per Gemm step of the module (descriptors, layouts, heuristic
// algorithm, chosen once per shape and kept), run() enqueues one step on a
// stream with no host synchronization, so the launch sequence can be
// captured into a CUDA graph.
//
// Numerics, as REFERENCE.md and the module format say: FP32 GEMMs compute
// in strict FP32 (CUBLAS_COMPUTE_32F, never TF32) unless the step's `tf32`
// is set (CUBLAS_COMPUTE_32F_FAST_TF32); FP16 and BF16 accumulate in FP32;
// FP8 steps (E4M3/E5M2 operands) pass the A/B dequantization scales as
// device pointers and use the TN layout sm_89/sm_90 require. Epilogues
// (bias, ReLU, GELU) are cuBLASLt's, applied in FP32 before the one rounding
// of the output.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_CUDAGEMM_H
#define MIXPREC_RUNTIME_CUDA_CUDAGEMM_H

#include "runtime/src/Module.h"
#include "runtime/src/Status.h"

#include <cuda.h>

#include <memory>
#include <vector>

namespace mixprec::runtime::cuda {

struct Driver;
struct CublasLt;

/// The device addresses of one Gemm step's tensors. Absent optional
/// operands (bias, FP8 scales) are 0.
struct GemmPointers {
  CUdeviceptr a = 0, b = 0, bias = 0, out = 0;
  CUdeviceptr aScale = 0, bScale = 0;
};

class GemmRunner {
public:
  virtual ~GemmRunner() = default;

  /// Builds the plan of every Gemm step of the module (index as in
  /// Module.gemms). Fails with a status naming the step (its name) when
  /// cuBLASLt cannot run it on this device (unsupported dtype combination,
  /// FP8 without the TN layout, no algorithm found).
  virtual Status prepare() = 0;

  /// Enqueues Gemm step `index` on `stream`. Never synchronizes.
  virtual Status run(size_t index, const GemmPointers &pointers, CUstream stream) = 0;
};

/// A runner for `module`'s Gemm steps on the current context's device.
/// `driver` and `lt` stay alive longer than the runner.
///
/// How the backend uses it (CudaGemm.cpp says why):
///  - create and prepare() with the context current; prepare() allocates a
///    32 MiB cuBLASLt workspace and a small scratch buffer (cuMemAlloc),
///    loads GemmKernels.h's PTX when a step has FP8 scales or a one-element
///    bias, and queries cuBLASLt's heuristic once per distinct plan;
///  - run() each step on one stream at a time (the steps share the
///    workspace and their descriptors), with the device addresses of the
///    step's tensors: a, b, out and bias 16-byte aligned (arena offsets are
///    256-aligned, the compiler aligns constants to 64), the scales 4-byte;
///    a misaligned or missing address is an INVALID_ARGUMENT status. For
///    FP8 steps it first launches one single-thread kernel (the reciprocals
///    of the scales), for a one-element bias one fill kernel, then
///    cublasLtMatmul (k = 0: cuMemsetD8Async): all capturable into a CUDA
///    graph;
///  - destroy the runner with the context current, before releasing it.
Status createGemmRunner(std::shared_ptr<const LoadedModule> module, const Driver &driver,
                        const CublasLt &lt, std::unique_ptr<GemmRunner> &out);

/// The same for Gemm steps and tensors given directly (tests that build
/// them without a module file); index as in `gemms`.
Status createGemmRunner(std::vector<GemmDesc> gemms, std::vector<TensorDesc> tensors,
                        const Driver &driver, const CublasLt &lt,
                        std::unique_ptr<GemmRunner> &out);

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_CUDAGEMM_H
