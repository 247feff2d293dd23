//===- CudaBackend.h - the CUDA backend's pieces ----------------*- C++ -*-===//
//
// A session on device 0 of the driver that CudaDriver.h loads (dlopen, never
// linked): its primary context, one stream, the module's CUDA program
// (Module.cuda: the CUBIN when it was built for this device's architecture,
// else the PTX, which the driver compiles), and device memory as the memory
// plan lays it out: one arena of the module's activations at the plan's
// offsets (as the CPU backend's host arena), and one block of every constant,
// copied once when the session is made.
//
// A run is one launch sequence on the stream: bound input buffers copied in,
// every step in the module's order (kernels with their `zeroed` tensors
// cleared first, GEMMs through GemmRunner, routines as their kernels when
// they have one (Routine.cuda), else on the host). An output bound to a buffer is written straight
// into it when it has its arena bytes to itself; one that shares them (an
// alias of another tensor, a reused buffer) is copied into it at the end. When no step runs
// on the host, the sequence is captured once into a CUDA graph and replayed
// by later runs with the same bindings; step by step otherwise, or when
// BackendOptions::cudaGraphs is off (MIXPREC_CUDA_GRAPHS=0 turns it off for
// every session).
//
// Host routine steps (routines without a kernel) copy their activation operands device -> host into
// a CpuBackend of the same module (its arena, same offsets), run the CPU routine there, and copy
// the output back: the results are the CPU backend's, bit for bit.
//
// Routine kernels that can fail at run time (an index out of range:
// CudaLaunchDesc::errorRecord) report into the session's error record
// (runtime/format/CudaErrorRecord.h), one small block of device memory
// passed to them after their tensors. Each run clears it first; it is read
// back before every host step (which must not consume what a failed kernel
// left) and by wait(), and a record that names a routine fails the run
// with the CPU backend's message for the same index (deviceErrorStatus).
// In such a module the states take their updates only in wait(), after
// the record reads clean, so a failed run leaves them as they were.
//
// The pieces:
//   CudaBackend.cpp         session creation, memory, buffers, reads
//   CudaLaunchSequence.cpp  the launch sequence, graph capture and replay
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_CUDABACKEND_H
#define MIXPREC_RUNTIME_CUDA_CUDABACKEND_H

#include "runtime/format/CudaErrorRecord.h"
#include "runtime/src/Backend.h"
#include "runtime/src/backends/cpu/CpuBackend.h"
#include "runtime/src/backends/cuda/CublasLt.h"
#include "runtime/src/backends/cuda/CudaDriver.h"
#include "runtime/src/backends/cuda/CudaGemm.h"

#include <map>

namespace mixprec::runtime::cuda {

/// `what` failed with `result`: "CUDA backend: <what>: CUDA_ERROR_X (text)".
Status cudaError(const Driver &driver, CUresult result, const std::string &what,
                 mixprec_status_code_t code = MIXPREC_EXECUTION_ERROR);

/// The routine steps of `module` (routine indices, in step order) that have
/// no kernel (Routine.cuda), which the CUDA backend runs on the host.
std::vector<size_t> hostRoutineSteps(const LoadedModule &module);

/// "3 routine steps (conv2d, max_pool2d) run on the host".
std::string describeHostSteps(const LoadedModule &module, const std::vector<size_t> &steps);

/// The run's failure that error record `record` (its tag set) reports: the
/// CPU backend's status for the same index of the same routine, word for
/// word; INTERNAL when the record names no routine that reports into it.
Status deviceErrorStatus(const LoadedModule &module, const MpErrorRecord &record);

/// Device 0's primary context, retained while a session or one of its
/// buffers lives (whichever the application releases last).
class Context {
public:
  Context(const Driver &driver, CUdevice device, CUcontext context)
      : driver(driver), device(device), context(context) {}
  ~Context() { driver.api.cuDevicePrimaryCtxRelease(device); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  /// Makes the context current on the calling thread (calls on a session
  /// may come from any thread, one at a time).
  Status makeCurrent() const;
  /// Allocates `bytes` (at least 1) of device memory; OUT_OF_MEMORY naming
  /// `what`, the bytes asked and the bytes free when the device has not
  /// enough.
  Status allocate(size_t bytes, const std::string &what, CUdeviceptr &out) const;

  const Driver &driver;
  const CUdevice device;
  const CUcontext context;
};

/// One kernel of the module, ready to launch.
struct Launch {
  std::string name; ///< "kernel #0 'softmax'", "routine #2 't' (transpose)"
  CUfunction function = nullptr;
  unsigned grid = 0, block = 0;
  std::vector<int32_t> tensors;   ///< Kernel.cuda params: the tensors passed
  /// Their addresses for the current bindings, then the error record's
  /// for a kernel that reports into it.
  std::vector<CUdeviceptr> params;
  std::vector<void *> args;        ///< &params[i]: what cuLaunchKernel reads
  std::vector<int32_t> zeroed;
};

class CudaBackend final : public Backend {
public:
  CudaBackend(std::shared_ptr<const LoadedModule> module, const Driver &driver,
              const BackendOptions &options)
      : module(std::move(module)), driver(driver), api(driver.api), options(options) {}
  ~CudaBackend() override;

  Status prepare();
  mixprec_backend_t kind() const override { return MIXPREC_BACKEND_CUDA; }
  Status setInput(uint32_t tensor, const void *data, size_t bytes) override;
  Status launch(const Bindings &bindings) override;
  Status wait() override;
  Status readTensor(uint32_t tensor, const void **data) override;
  Status allocate(size_t bytes, std::shared_ptr<DeviceBuffer> &out) override;
  void *stream() const override { return stream_; }
  std::string description() const override { return description_; }
  /// Its own (device buffers: NCCL on the stream) and the host steps'.
  void setCollective(const mixprec_collective_t *c) override {
    Backend::setCollective(c);
    if (host)
      host->setCollective(c);
  }

private:
  Status makeContext();
  Status loadProgram();
  Status makeLaunch(const CudaLaunchDesc &desc, const std::string &name, Launch &launch);
  Status prepareLaunches();
  Status allocateMemory();
  Status prepareHostSteps();
  void findExclusiveOutputs();
  CUdeviceptr tensorPointer(int32_t t) const { return t < 0 ? 0 : pointers[t]; }

  // CudaLaunchSequence.cpp
  Status enqueueSequence(const Bindings &bindings);
  Status enqueueKernel(const Launch &launch);
  Status enqueueGemm(size_t index);
  Status runHostStep(size_t index);
  Status enqueueAllReduce(size_t index);
  Status enqueueRankSlice(size_t index);
  Status enqueueAllGather(size_t index);
  Status runCollectiveStep(size_t index);
  Status readErrorRecord();
  Status commitStates();
  Status copyTensor(int32_t t, CUdeviceptr to, CUdeviceptr from, const char *what);
  void applyBindings(const Bindings &bindings);
  Status captureGraph(const Bindings &bindings);
  void dropGraph();

  std::shared_ptr<const LoadedModule> module;
  const Driver &driver;
  const DriverSymbols &api;
  BackendOptions options;
  std::shared_ptr<Context> context;
  CUstream stream_ = nullptr;
  CUmodule program = nullptr;
  /// Per kernel of the module, then per routine with a kernel.
  std::vector<Launch> launches;
  /// Per routine: the index of its launch in `launches`, or -1 (on the host).
  std::vector<int64_t> routineLaunches;
  CUdeviceptr arena = 0, constants = 0;
  /// The error record (an MpErrorRecord), when a routine kernel reports
  /// into it; 0 otherwise.
  CUdeviceptr errorRecord = 0;
  /// With an error record: a run launched, whose record wait() reads
  /// before it commits the states.
  bool commitPending = false;
  /// Per tensor: its device address as planned (arena + offset, or in the
  /// constants), and as the current bindings have it (`planned`, except
  /// outputs written straight into their bound buffers).
  std::vector<CUdeviceptr> planned, pointers;
  /// Per tensor: an output that no other tensor shares bytes with (no
  /// alias, no buffer reused), so it may live in a bound buffer instead.
  std::vector<bool> exclusive;
  /// The bindings of the last launch: keeps the buffers it writes alive.
  Bindings applied;
  std::unique_ptr<GemmRunner> gemms;
  /// The CPU backend that runs routine steps on the host; null when none.
  std::unique_ptr<CpuBackend> host;
  std::vector<size_t> hostSteps; ///< routine indices run on the host
  /// Outputs read back since the last launch, by tensor.
  std::map<uint32_t, AlignedBytes> readBack;
  bool useGraphs = false;
  CUgraphExec graph = nullptr;
  Bindings graphBindings; ///< what `graph` was captured with
  std::string description_;
};

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_CUDABACKEND_H
