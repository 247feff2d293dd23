//===- Module.h - a loaded, verified .mpk module ----------------*- C++ -*-===//
//
// Loading reads the bytes into memory the module owns, runs the FlatBuffers
// verifier, checks the schema version and the content hash, loads and checks
// the side file, and then verifies every index and size the backends will
// use (Module.cpp lists the rules). Nothing else in the runtime reads a
// module that has not passed all of this, so backends index tensors, walk
// strides and call kernels without re-checking.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_MODULE_H
#define MIXPREC_RUNTIME_MODULE_H

#include "runtime/schema/module_generated.h"
#include "runtime/src/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mixprec::runtime {

/// The newest module schema version this runtime reads
/// (runtime/schema/module.fbs.in says what changed when): newer modules are
/// refused, as are modules older than kOldestSchemaVersion (recompile them).
constexpr uint32_t kSchemaVersion = 4;
/// Version 3 only added module state and version 4 routine kernels' error
/// record, so version 2 modules (without either) read as before.
constexpr uint32_t kOldestSchemaVersion = 2;
/// Largest rank a module may use (bounds per-dim loops and bit masks).
constexpr size_t kMaxRank = 32;
/// Largest element count of one tensor or iteration space (2^48): keeps
/// every byte size and offset product far from int64 overflow.
constexpr int64_t kMaxElements = int64_t(1) << 48;
/// Arena offsets are aligned to this (the memory plan's contract).
constexpr uint64_t kArenaAlignment = 256;

/// Owned bytes at a 64-byte aligned address (FlatBuffers' force_align: 64
/// on constants is relative to the buffer start, and backends read floats
/// and int64s in place).
class AlignedBytes {
public:
  AlignedBytes() = default;
  AlignedBytes(const AlignedBytes &) = delete;
  AlignedBytes &operator=(const AlignedBytes &) = delete;
  ~AlignedBytes();
  /// Allocates `size` bytes (contents undefined); false when out of memory.
  bool allocate(size_t size);
  uint8_t *data() { return data_; }
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

private:
  uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

/// The bytes per element of a dtype (the schema's enum).
size_t dtypeSize(schema::DType dtype);
/// "f32", "bf16", ... (the C API's names).
const char *dtypeName(schema::DType dtype);
/// Element count of a shape, or false when a dim is negative or the count
/// exceeds kMaxElements.
bool shapeElements(const std::vector<int64_t> &shape, int64_t &elements);
/// Whether the dtype holds floating-point values.
bool isFloatDType(schema::DType dtype);
/// "[2,3,4]".
std::string formatShape(const std::vector<int64_t> &shape);

/// A tensor as the backends see it after verification.
struct TensorDesc {
  std::string name;  ///< never empty: "tensor#<i>" when the module has none
  schema::DType dtype = schema::DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  uint64_t bytes = 0;
  /// Index into Module.constants, or -1 for an activation.
  int32_t constantIndex = -1;
  /// Constants: their bytes (inline or in the side file), aligned to the
  /// element size; null when `bytes` is 0.
  const uint8_t *constantData = nullptr;
  /// Activations: the byte offset in the arena.
  uint64_t offset = 0;

  bool isConstant() const { return constantIndex >= 0; }
};

/// A GEMM after verification, fields as in schema::Gemm (indices -1 when
/// absent) plus what the bias broadcast resolved to.
struct GemmDesc {
  std::string name; ///< for messages: "gemm #2 'fc1'"
  int32_t a = 0, b = 0, bias = -1, out = 0, aScale = -1, bScale = -1;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  int64_t strideA = 0, strideB = 0, strideOut = 0;
  bool transB = false, tf32 = false;
  /// Epilogue activations. Gelu is the tanh approximation: cuBLASLt's GELU
  /// epilogue, and the only GELU --mp-fuse puts into one.
  bool relu = false, gelu = false;
  /// The shape the bias broadcasts to (numpy rules): the output tensor's
  /// shape, or else its 2-D view [batch*m, n], as cpu::linear accepts.
  std::vector<int64_t> biasTarget;
};

/// How to launch one kernel of the module's CUDA program (Kernel.cuda)
/// after verification: a 1-D grid of 1-D blocks.
struct CudaLaunchDesc {
  /// The extern "C" __global__ function: a C identifier, unique in the
  /// module.
  std::string function;
  /// Blocks, in [0, 2^31-1]; 0: the iteration space is empty, launch nothing.
  int64_t gridSize = 0;
  /// Threads per block: a multiple of 32 in [32, 1024].
  int32_t blockSize = 256;
  /// One block per row (row reductions).
  bool rowKernel = false;
  /// The tensors passed, in parameter order, as device pointers of their
  /// dtypes: the tensor of each Load of the kernel's program in order, then
  /// that of each Store (the kernel's inputs, then its results).
  std::vector<int32_t> params;
  /// Tensors to set to 0.0f before the launch: F32 tensors the program
  /// stores an Amax into (accumulated with atomicMax).
  std::vector<int32_t> zeroed;
  /// Routine kernels only (v4): the kernel takes the session's error record
  /// (runtime/format/CudaErrorRecord.h) after `params`.
  bool errorRecord = false;
};

/// A state binding after verification (schema::StateBinding): the state
/// tensor the steps read, the tensor whose bytes become its next value
/// after a successful run (`update == tensor` for a state that never
/// changes), and its initial value.
struct StateDesc {
  std::string name; ///< non-empty, unique among the module's states
  uint32_t tensor = 0, update = 0;
  /// The initial value: exactly the state tensor's bytes (null when 0).
  const uint8_t *initial = nullptr;
};

struct RoutineOp;

struct LoadOptions {
  std::string sideFileDir;         ///< empty: see baseDir
  const void *sideFileData = nullptr;
  size_t sideFileSize = 0;
};

class LoadedModule {
public:
  /// Loads and verifies a module file; the side file is looked up next to it
  /// unless options say otherwise.
  static Status loadFile(const std::string &path, const LoadOptions &options,
                         std::shared_ptr<const LoadedModule> &out);
  /// Loads and verifies a module from memory (copied).
  static Status loadMemory(const void *data, size_t size, const LoadOptions &options,
                           std::shared_ptr<const LoadedModule> &out);

  const schema::Module &root() const { return *root_; }
  uint32_t version() const { return root_->version(); }
  const std::string &producer() const { return producer_; }
  const std::vector<TensorDesc> &tensors() const { return tensors_; }
  const std::vector<uint32_t> &inputs() const { return inputs_; }
  const std::vector<uint32_t> &outputs() const { return outputs_; }
  /// Bytes the arena must have: the end of the last activation, rounded up
  /// to kArenaAlignment (never more than the module's arena_bytes).
  uint64_t arenaBytesNeeded() const { return arenaBytesNeeded_; }
  const std::vector<GemmDesc> &gemms() const { return gemms_; }
  const std::vector<RoutineOp> &routines() const { return routines_; }
  /// The module's state (v3), in the module's order.
  const std::vector<StateDesc> &states() const { return states_; }
  /// "kernel #0 'softmax'": how messages name a kernel.
  std::string kernelName(size_t index) const;
  /// Module.cuda, or null when the module has no CUDA code (compiled
  /// without --arch). When set: sm_version > 0, PTX (NUL-terminated, as
  /// FlatBuffers strings are) or a CUBIN or both are present, and every
  /// kernel has its launch in cudaLaunches().
  const schema::CudaProgram *cudaProgram() const { return root_->cuda(); }
  /// One launch per kernel (by kernel index) when cudaProgram() is set;
  /// empty otherwise.
  const std::vector<CudaLaunchDesc> &cudaLaunches() const { return cudaLaunches_; }
  /// One entry per routine (by routine index) when cudaProgram() is set,
  /// empty otherwise: the routine's kernel (Routine.cuda; params are its
  /// inputs, absent ones left out, then its output, which overlaps none of
  /// them), or nullopt where the CUDA backend runs the routine on the host.
  const std::vector<std::optional<CudaLaunchDesc>> &routineCudaLaunches() const {
    return routineCudaLaunches_;
  }

  ~LoadedModule();

private:
  LoadedModule();
  static Status fromOwnedBytes(std::unique_ptr<LoadedModule> module,
                               const std::string &moduleDir, const LoadOptions &options,
                               std::shared_ptr<const LoadedModule> &out);
  Status loadSideFile(const std::string &moduleDir, const LoadOptions &options);
  Status verifySemantics();

  friend class ModuleVerifier;

  AlignedBytes buffer_;
  AlignedBytes sideFile_;
  const schema::Module *root_ = nullptr;
  std::string producer_;
  std::vector<TensorDesc> tensors_;
  std::vector<uint32_t> inputs_, outputs_;
  std::vector<GemmDesc> gemms_;
  std::vector<RoutineOp> routines_;
  std::vector<StateDesc> states_;
  std::vector<CudaLaunchDesc> cudaLaunches_;
  std::vector<std::optional<CudaLaunchDesc>> routineCudaLaunches_;
  uint64_t arenaBytesNeeded_ = 0;
};

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_MODULE_H
