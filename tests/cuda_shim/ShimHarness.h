//===- ShimHarness.h - Compile CUDA C++ for the CPU and launch it -*- C++ -*-===//
//
// The test harness of the CUDA shim: it compiles a CUDA C++ source with the
// host compiler the build uses (`-x c++ -include CudaShim.h`, see
// CudaShim.h for the CUDA subset), links the fiber scheduler
// (ShimScheduler.cpp) into a shared library, loads it, and launches kernels
// by name on host buffers, as cuLaunchKernel launches them on device
// buffers. So the kernels mixprec emits are checked without a GPU, against
// the CPU backend, bit for bit.
//
// Compiling happens when a test runs, not when mixprec is built: the
// sources to check are emitted by the compiler at test time. The compiler
// path, flags and the scheduler library are fixed at configure time; in a
// sanitizer build (MIXPREC_SANITIZE) kernels are compiled with ASan and
// UBSan too, so an out-of-bounds access in a kernel is reported where it
// happens.
//
// Kernels must have C linkage (`extern "C" __global__ void NAME(...)`) and
// a unique name. Parameters are pointers and scalars; pointers are host
// pointers (a test's buffers, aligned as the memory plan aligns device
// buffers: see alignedBuffer).
//
// What differs from a GPU, on purpose or by necessity:
//  * Blocks run one after another, and a block's threads one at a time,
//    each until its next __syncthreads, __syncwarp or shuffle: results are
//    the same on every run, and a missing barrier shows as a wrong result
//    (ShimScheduler.cpp). Atomics are plain read-modify-writes.
//  * Synchronization a GPU would hang on or leave undefined (a thread that
//    exits before a barrier others wait at, a shuffle reading a lane outside
//    its mask or block, lanes that disagree) is a launch error.
//  * Dynamic shared memory reads as all-ones bytes until written in each
//    block; static `__shared__` arrays are not reset (they keep what the
//    previous block on this OS thread left, zeros at first).
//  * Math functions are the C library's, which differ from CUDA's by a few
//    ULPs at most (CUDA's documented bounds: expf 2, logf 1, tanhf 2,
//    erff 2, powf 4, rsqrtf 2); conversions and + - * / are bit-exact.
//    A NaN converted by the CUDA headers' host code is the canonical NaN
//    (0x7fff, 0x7fffffff), where the rounding library keeps its sign and
//    payload: the tests let a NaN meet any NaN.
//
// Thread safety: a Program may be launched from several OS threads at once
// when the launches share no buffer one of them writes (each OS thread has
// its own shared memory).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_SHIM_SHIMHARNESS_H
#define MIXPREC_CODEGEN_CUDA_SHIM_SHIMHARNESS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace mixprec::cudashim {

struct KernelRecord;
struct LibraryApi;

/// A grid or block shape.
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// A kernel's arguments, each kept by value (cuLaunchKernel copies them at
/// the call the same way).
class KernelArgs {
public:
  /// Appends a pointer, integer or floating-point argument.
  template <typename T> KernelArgs &add(T value) {
    static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are copied by bytes");
    std::vector<unsigned char> bytes(sizeof(T));
    std::memcpy(bytes.data(), &value, sizeof(T));
    values_.push_back(std::move(bytes));
    kinds_.push_back(std::is_pointer_v<T>          ? 'p'
                     : std::is_integral_v<T>       ? 'i'
                     : std::is_floating_point_v<T> ? 'f'
                                                   : 'o');
    return *this;
  }

  size_t size() const { return values_.size(); }
  size_t bytes(size_t i) const { return values_[i].size(); }
  char kind(size_t i) const { return kinds_[i]; }
  /// One pointer to each value, as cuLaunchKernel's kernelParams.
  std::vector<void *> params() const;

private:
  std::vector<std::vector<unsigned char>> values_;
  std::vector<char> kinds_;
};

struct CompileOptions {
  /// The kernels to make launchable; empty: every `__global__ void NAME(`
  /// of the source (comments skipped).
  std::vector<std::string> kernels;
  /// More compiler flags (-DNAME=VALUE for a test's variants).
  std::vector<std::string> extraFlags;
  /// Receives the compiler's whole output when not null.
  std::string *log = nullptr;
};

struct LaunchOptions {
  /// Runs each block's threads last-first. A kernel without races gives
  /// the same result both ways; one that reads shared memory before the
  /// barrier that orders it usually does not.
  bool reverseThreadOrder = false;
};

/// A compiled CUDA source: a loaded kernel library in a temporary folder,
/// removed with it.
class Program {
public:
  Program(const Program &) = delete;
  Program &operator=(const Program &) = delete;
  ~Program();

  /// Compiles the CUDA C++ file `path`. Null with a one-line `error` (the
  /// file and the compiler's first error) when it does not compile.
  static std::unique_ptr<Program> compileFile(const std::string &path,
                                              const CompileOptions &options, std::string &error);
  /// Compiles `source`, named `name` (a file name such as "softmax.cu") in
  /// diagnostics.
  static std::unique_ptr<Program> compileSource(const std::string &name, const std::string &source,
                                                const CompileOptions &options, std::string &error);

  /// The launchable kernels, sorted.
  std::vector<std::string> kernelNames() const;

  /// Runs `kernel` over `grid` blocks of `block` threads with
  /// `dynamicSharedBytes` of dynamic shared memory. False with a one-line
  /// `error` when the kernel is unknown, the arguments do not match its
  /// parameters (count, size, kind), the launch exceeds a GPU limit, or the
  /// kernel synchronizes wrongly (the error names the block, threads and
  /// source lines).
  bool launch(const std::string &kernel, Dim3 grid, Dim3 block, size_t dynamicSharedBytes,
              const KernelArgs &args, std::string &error, const LaunchOptions &options = {}) const;
  /// The same with cuLaunchKernel's `kernelParams` (one pointer to each
  /// argument's value), which cannot be checked: the CUDA backend's own
  /// launch lists can be replayed here unchanged.
  bool launchRaw(const std::string &kernel, Dim3 grid, Dim3 block, size_t dynamicSharedBytes,
                 void **kernelParams, std::string &error, const LaunchOptions &options = {}) const;

private:
  Program() = default;
  static std::unique_ptr<Program> build(const std::string &sourcePath, const std::string &source,
                                        const std::string &folder, const CompileOptions &options,
                                        std::string &error);
  /// Loads the compiled library and its kernel list.
  bool load(const std::string &libraryPath, const std::string &display, std::string &error);
  const KernelRecord *find(const std::string &kernel, std::string &error) const;

  std::string folder_;
  void *handle_ = nullptr;
  const LibraryApi *api_ = nullptr;
  std::map<std::string, const KernelRecord *> kernels_;
};

/// The `__global__ void NAME(` kernels of a CUDA source (also with
/// `__launch_bounds__(...)` before NAME), in order; comments, string
/// literals and templates skipped.
std::vector<std::string> findKernelNames(const std::string &source);

/// A zeroed buffer of `bytes` bytes aligned to 256 bytes, as the memory
/// plan aligns device buffers (so 16-byte vector accesses are aligned).
struct AlignedFree {
  void operator()(void *p) const;
};
using AlignedBuffer = std::unique_ptr<unsigned char[], AlignedFree>;
AlignedBuffer alignedBuffer(size_t bytes);

} // namespace mixprec::cudashim

#endif // MIXPREC_CODEGEN_CUDA_SHIM_SHIMHARNESS_H
