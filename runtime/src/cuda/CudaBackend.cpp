//===- CudaBackend.cpp - the CUDA backend (placeholder) --------------------===//
//
// Sessions can already ask for CUDA: loading the driver (dlopen, never a link
// against libcuda) decides between NO_DEVICE and "not implemented yet", so
// applications get the error codes they will keep once the backend exists.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Backend.h"
#include "runtime/src/cuda/CudaDriver.h"

namespace mixprec::runtime {

Status createCudaBackend(std::shared_ptr<const LoadedModule> module,
                         const BackendOptions &options, std::unique_ptr<Backend> &out) {
  (void)module;
  (void)options;
  (void)out;
  const cuda::Driver *driver = nullptr;
  if (Status s = cuda::driver(&driver); !s.ok())
    return s.withContext("CUDA backend: ");
  return Status(MIXPREC_UNIMPLEMENTED,
                "CUDA backend: not implemented yet (found " + driver->summary() +
                    "); use the CPU backend");
}

} // namespace mixprec::runtime
