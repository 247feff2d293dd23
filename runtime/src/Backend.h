//===- Backend.h - what a runtime backend implements ------------*- C++ -*-===//
//
// A session owns one backend instance bound to one verified module. The C
// API stages bound inputs in host memory and hands them to the backend
// before each run, so a backend never sees unchecked data: shapes and
// dtypes were checked against the module, and the module itself passed
// LoadedModule's verification.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_BACKEND_H
#define MIXPREC_RUNTIME_BACKEND_H

#include "runtime/src/Module.h"

#include <memory>

namespace mixprec::runtime {

class Backend {
public:
  virtual ~Backend() = default;

  /// MIXPREC_BACKEND_CPU or MIXPREC_BACKEND_CUDA.
  virtual mixprec_backend_t kind() const = 0;

  /// Copies an input's bytes (in the tensor's dtype, exactly its size) to
  /// where the plan expects tensor `tensor`. Called before every run.
  virtual Status setInput(uint32_t tensor, const void *data, size_t bytes) = 0;

  /// Executes the module's steps in order.
  virtual Status run() = 0;

  /// Host-readable bytes of `tensor` (an output) after a run; valid until the
  /// next setInput or run.
  virtual Status readTensor(uint32_t tensor, const void **data) = 0;
};

struct BackendOptions {
  /// Limit on the arena plus the largest scratch buffer; 0: none.
  uint64_t maxMemoryBytes = 0;
};

/// The CPU backend: the plan's arena in host memory, kernels from their
/// expression programs, GEMMs on OpenBLAS, opaque ops on the reference
/// kernels, with every rounding point of the plan.
Status createCpuBackend(std::shared_ptr<const LoadedModule> module, const BackendOptions &options,
                        std::unique_ptr<Backend> &out);

/// The CUDA backend: NO_DEVICE (with the driver's reason) where no GPU is
/// found; UNIMPLEMENTED otherwise, until it is written.
Status createCudaBackend(std::shared_ptr<const LoadedModule> module,
                         const BackendOptions &options, std::unique_ptr<Backend> &out);

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_BACKEND_H
