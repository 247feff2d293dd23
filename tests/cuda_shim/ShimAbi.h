//===- ShimAbi.h - What a shim kernel library and its scheduler share -*- C++ -*-===//
//
// The CUDA shim runs CUDA C++ kernels on the CPU. A kernel source is
// compiled by the host compiler into a shared library (ShimHarness.h) made
// of three parts, all inside that library:
//
//  * the kernels, compiled with CudaShim.h force-included (it maps the CUDA
//    built-ins onto the functions below);
//  * one registration record per kernel (KernelRecord), made by
//    MIXPREC_CUDA_SHIM_KERNEL(name) lines the harness appends to the source;
//  * the scheduler (ShimScheduler.cpp, linked from a static library), which
//    runs a launch block by block, each CUDA thread on its own fiber.
//
// The library exports one C symbol, mixprecCudaShimLibrary, returning the
// table below; everything else stays hidden, so several kernel libraries
// can be loaded at once. Only plain C types cross this boundary: the
// scheduler archive and the kernels may be built with different flags.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_SHIM_SHIMABI_H
#define MIXPREC_CODEGEN_CUDA_SHIM_SHIMABI_H

#include <vector_types.h>

#include <cstddef>
#include <cstdint>

namespace mixprec::cudashim {

/// Threads in a warp, as on every NVIDIA GPU mixprec targets.
constexpr unsigned kWarpSize = 32;
/// Most threads in a block (every architecture from sm_80 on).
constexpr unsigned kMaxThreadsPerBlock = 1024;
/// Most dynamic shared memory one block may ask for: 227 KiB, the sm_90
/// opt-in limit (sm_80 allows 163 KiB; the kernels decide what they need).
constexpr size_t kMaxDynamicSharedBytes = 227 * 1024;

/// The indices a CUDA thread reads through threadIdx, blockIdx, blockDim
/// and gridDim.
struct ThreadContext {
  uint3 threadIdx;
  uint3 blockIdx;
  dim3 blockDim;
  dim3 gridDim;
};

/// The warp-synchronous operations; the shuffles follow PTX shfl.sync's
/// modes (idx, up, down, bfly).
enum class WarpOp : uint32_t { SyncWarp, ShflIdx, ShflUp, ShflDown, ShflXor };

/// A kernel of the library: its C name, a trampoline that calls it with
/// parameters given as cuLaunchKernel gives them (one pointer to each
/// parameter's value), and each parameter's size and kind.
struct KernelRecord {
  const char *name;
  void (*invoke)(void **params);
  unsigned numParams;
  const uint32_t *paramSizes;
  /// One character a parameter: 'p' pointer, 'i' integer, 'f' floating
  /// point, 'o' anything else (a struct passed by value).
  const char *paramKinds;
  const KernelRecord *next;
};

/// One launch, as cuLaunchKernel takes it.
struct LaunchRequest {
  dim3 grid;
  dim3 block;
  size_t dynamicSharedBytes;
  void **params;
  /// Runs the threads of a block in descending order of their index (see
  /// ShimHarness.h, LaunchOptions).
  bool reverseThreadOrder;
};

/// What a kernel library exports. `launch` returns false and writes a
/// NUL-terminated one-line reason into `error` (at most errorSize bytes).
struct LibraryApi {
  uint32_t abiVersion;
  const KernelRecord *(*firstKernel)();
  bool (*launch)(const KernelRecord *kernel, const LaunchRequest *request, char *error,
                 size_t errorSize);
};

/// Bumped whenever a struct above changes.
constexpr uint32_t kAbiVersion = 1;

// ---- Scheduler entry points (ShimScheduler.cpp) -----------------------------

/// Adds a kernel to this library's list (called by static initializers).
void registerKernel(KernelRecord *record);
/// The first registered kernel, or null.
const KernelRecord *firstKernel();
/// Runs every block of one launch; see LibraryApi::launch.
bool launchKernel(const KernelRecord *kernel, const LaunchRequest *request, char *error,
                  size_t errorSize);

/// The running CUDA thread's indices. Aborts outside a launch.
const ThreadContext &currentContext();
/// __syncthreads(): waits until every thread of the block reaches a
/// barrier. `file` and `line` name the call in diagnostics.
void blockBarrier(const char *file, int line);
/// A warp operation: waits until every lane of `mask` reaches the same
/// operation with the same mask, then returns the value it reads (the 32
/// bits of `value` that the PTX rules pick for this lane; 0 for SyncWarp).
/// `b` and `c` are shfl.sync's lane and clamp/segment operands.
uint32_t warpExchange(WarpOp op, unsigned mask, uint32_t value, int b, int c, const char *file,
                      int line);

} // namespace mixprec::cudashim

/// The dynamic shared memory of the running block (`extern __shared__ float
/// smem[];` in a kernel names it). At the start of every block its first
/// dynamicSharedBytes are filled with 0xff bytes (a NaN as float, -1 as
/// int), so a read before a write shows; under AddressSanitizer the rest is
/// poisoned, so an access beyond the launch's size is reported. C linkage:
/// clang gives the kernel's block-scope declaration the linkage of its
/// `extern "C"` kernel.
extern "C" {
alignas(
    128) inline thread_local float smem[mixprec::cudashim::kMaxDynamicSharedBytes / sizeof(float)];
}

#endif // MIXPREC_CODEGEN_CUDA_SHIM_SHIMABI_H
