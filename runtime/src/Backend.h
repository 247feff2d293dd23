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

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mixprec::runtime {

/// Memory a backend allocates for the application: device memory on CUDA,
/// host memory on the CPU backend. Reference counted, so a buffer bound to a
/// session stays valid while a run may use it, whatever the application
/// frees first; a buffer keeps what its backend's memory needs alive.
class DeviceBuffer {
public:
  virtual ~DeviceBuffer() = default;
  size_t size() const { return size_; }
  /// The CUdeviceptr on CUDA; the host address on the CPU backend.
  uint64_t address() const { return address_; }
  /// The backend instance that made it (a buffer binds to that session only).
  const void *owner() const { return owner_; }
  /// Synchronous copies; the C API has checked that the range fits.
  virtual Status copyFromHost(size_t offset, const void *data, size_t bytes) = 0;
  virtual Status copyToHost(size_t offset, void *data, size_t bytes) const = 0;

protected:
  size_t size_ = 0;
  uint64_t address_ = 0;
  const void *owner_ = nullptr;
};

/// Device buffers bound in place of staged host inputs and host-read outputs,
/// one entry per module input and output; null entries take the host path.
struct Bindings {
  std::vector<std::shared_ptr<DeviceBuffer>> inputs, outputs;
  bool operator==(const Bindings &other) const {
    return inputs == other.inputs && outputs == other.outputs;
  }
};

class Backend {
public:
  virtual ~Backend() = default;

  /// MIXPREC_BACKEND_CPU or MIXPREC_BACKEND_CUDA.
  virtual mixprec_backend_t kind() const = 0;

  /// Copies an input's bytes (in the tensor's dtype, exactly its size) to
  /// where the plan expects tensor `tensor`. Called before every run for
  /// the inputs that are not bound to a device buffer, and to set a state
  /// tensor (its initial value, a write, a checkpoint).
  virtual Status setInput(uint32_t tensor, const void *data, size_t bytes) = 0;

  /// Enqueues the module's steps in order: bound input buffers copied in
  /// first, bound output buffers filled last (sizes checked by the C API),
  /// then each state's update copied into the state, only once every step
  /// succeeded. The CPU backend runs them before returning.
  virtual Status launch(const Bindings &bindings) = 0;

  /// Waits for the last launch; its status (a failure inside the run).
  virtual Status wait() = 0;

  /// Host-readable bytes of `tensor` (an output after a run, or a state);
  /// valid until the next setInput or launch.
  virtual Status readTensor(uint32_t tensor, const void **data) = 0;

  /// Allocates `bytes` of this backend's memory for the application.
  virtual Status allocate(size_t bytes, std::shared_ptr<DeviceBuffer> &out) = 0;

  /// The CUstream runs are enqueued on; null on the CPU backend.
  virtual void *stream() const { return nullptr; }

  /// One line for mixprec_session_backend_reason: where the session runs
  /// ("CUDA backend on NVIDIA H200 (sm_90); ..."); "" when nothing to say.
  virtual std::string description() const { return ""; }

  /// The session's collective for the all_reduce steps (checked by the C
  /// API); null: none (a job of one rank).
  virtual void setCollective(const mixprec_collective_t *c) {
    hasCollective = c != nullptr;
    if (c)
      collective = *c;
  }

protected:
  /// Copies nothing: reduces `count` elements of `dtype` at `data` in place
  /// with the collective (the routine's reduction), or leaves them as they
  /// are without one or in a job of one rank. `stream` for device buffers.
  Status allReduceInPlace(const std::string &opName, void *data, size_t count,
                          mixprec_dtype_t dtype, int64_t reduction, void *stream) const;

  /// rank_slice: copies this rank's `count` elements of `world` x `count`
  /// (the routine's world, which must be the collective's; without one, 1).
  /// `copy` copies bytes (host memcpy, or the device's copy on the stream).
  Status rankSlice(const std::string &opName, int64_t world, size_t partBytes,
                   const std::function<Status(size_t offset)> &copy) const;
  /// all_gather: every rank's `count` elements of `dtype` at `send` into
  /// `recv` in rank order; without a collective (world 1) a copy by `copy`.
  Status allGather(const std::string &opName, int64_t world, const void *send, void *recv,
                   size_t count, mixprec_dtype_t dtype, void *stream,
                   const std::function<Status()> &copy) const;

  /// A collective callback's return `rc` as a status naming the step, the
  /// rank and the message it wrote into `error` (`size` bytes).
  Status collectiveResult(const std::string &opName, int rc, char *error, size_t size) const;

  mixprec_collective_t collective{};
  bool hasCollective = false;
};

struct BackendOptions {
  /// Limit on the arena plus the largest scratch buffer; 0: none.
  uint64_t maxMemoryBytes = 0;
  /// CUDA: capture the launch sequence into a CUDA graph and replay it
  /// (when every step can be captured); false: launch step by step.
  bool cudaGraphs = true;
  /// CPU: plan the GEMM steps and convolution routines on oneDNN and pack
  /// their weights (false for the CUDA backend's host half, which runs
  /// routine steps only, all on the reference kernels).
  bool cpuGemms = true;
  /// CPU: threads for the element-wise and reduction kernels, the caller's
  /// included; 0: ThreadPool::defaultThreads().
  int numThreads = 0;
};

/// The CPU backend: the plan's arena in host memory, kernels from their
/// expression programs, GEMMs on oneDNN or OpenBLAS, routine ops on the reference
/// kernels, with every rounding point of the plan.
Status createCpuBackend(std::shared_ptr<const LoadedModule> module, const BackendOptions &options,
                        std::unique_ptr<Backend> &out);

/// The CUDA backend (runtime/src/backends/cuda/CudaBackend.h): NO_DEVICE (with the
/// driver's reason) where no GPU is found, FAILED_PRECONDITION for a module
/// without CUDA code or with none for this device.
Status createCudaBackend(std::shared_ptr<const LoadedModule> module,
                         const BackendOptions &options, std::unique_ptr<Backend> &out);

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_BACKEND_H
