//===- CudaShim.h - CUDA device built-ins for kernels run on the CPU -*- C++ -*-===//
//
// Force-included (`-x c++ -include CudaShim.h`) before a CUDA C++ source
// that the harness (ShimHarness.h) compiles with the host compiler. It gives
// the kernel the subset of CUDA that mixprec's emitter prints, with the
// GPU's semantics:
//
//  * Qualifiers: __global__, __device__, __host__, __forceinline__,
//    __restrict__ (as the CUDA headers define them for a host compiler),
//    __launch_bounds__(...) (ignored) and
//    __shared__, which becomes `thread_local`: a block-scope
//    `__shared__ float red[32];` is then one array for all the fibers of the
//    block (blocks run one after another on the launching thread), and
//    `extern __shared__ float smem[];` names the block's dynamic shared
//    memory (ShimAbi.h).
//  * Indices: threadIdx, blockIdx, blockDim, gridDim (.x/.y/.z), warpSize.
//  * Synchronization: __syncthreads(), __syncwarp(mask), and
//    __shfl_sync/__shfl_up_sync/__shfl_down_sync/__shfl_xor_sync on float,
//    int and unsigned, with the optional width. Each records its source
//    line, so the scheduler names it when threads disagree.
//  * Atomics: atomicMax/atomicMin on int and unsigned, atomicMax and
//    atomicExch on unsigned long long, atomicCAS on unsigned, atomicAdd on
//    float; __threadfence(). Blocks and fibers never run at the same time,
//    so a plain read-modify-write is atomic here.
//  * Math: the C library's expf, logf, tanhf, erff, powf, sqrtf, fmaxf,
//    fminf, fabsf, fmaf, isnan, isinf; rsqrtf as 1/sqrtf; __fadd_rn, __fsub_rn,
//    __fmul_rn, __fdiv_rn, __fmaf_rn; __int_as_float, __float_as_int,
//    __float_as_uint, __uint_as_float.
//  * Types and conversions: the real cuda_fp16.h, cuda_bf16.h, cuda_fp8.h
//    and vector_types.h in host mode. Every conversion the emitter uses
//    (__float2half_rn, __half2float, __float2bfloat16_rn, __bfloat162float,
//    __nv_cvt_float_to_fp8, __nv_cvt_fp8_to_halfraw, the __nv_fp8_e4m3 and
//    __nv_fp8_e5m2 classes) is __host__ __device__ in CUDA 13, so the shim
//    runs NVIDIA's own host code for them; nothing is re-implemented.
//
// Floating point is compiled with -ffp-contract=off: the GPU's results
// equal the shim's only when the emitted code states its FMAs (NVRTC's
// default --fmad=true would contract a*b+c; the emitter decides).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_SHIM_CUDASHIM_H
#define MIXPREC_CODEGEN_CUDA_SHIM_CUDASHIM_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <vector_types.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <atomic>
#include <type_traits>
#include <utility>

#include "tests/cuda_shim/ShimAbi.h"

// `static` cannot follow `extern` (`extern __shared__ float smem[];`), and a
// block-scope `thread_local` is static: one array per block of fibers.
#undef __shared__
#define __shared__ thread_local

// Occupancy hints for ptxas; nothing to do on the CPU.
#define __launch_bounds__(...)

// The built-in index variables, read-only as on the GPU.
#define threadIdx (::mixprec::cudashim::currentContext().threadIdx)
#define blockIdx (::mixprec::cudashim::currentContext().blockIdx)
#define blockDim (::mixprec::cudashim::currentContext().blockDim)
#define gridDim (::mixprec::cudashim::currentContext().gridDim)

static constexpr int warpSize = static_cast<int>(mixprec::cudashim::kWarpSize);

/// glibc has it as a short name for unsigned short; the emitter may use it.
typedef unsigned short ushort;

// ---- Synchronization ---------------------------------------------------------

inline void __syncthreads(const char *file = __builtin_FILE(), int line = __builtin_LINE()) {
  mixprec::cudashim::blockBarrier(file, line);
}

inline void __syncwarp(unsigned mask = 0xffffffffu, const char *file = __builtin_FILE(),
                       int line = __builtin_LINE()) {
  mixprec::cudashim::warpExchange(mixprec::cudashim::WarpOp::SyncWarp, mask, 0, 0, 0, file, line);
}

namespace mixprec::cudashim {

/// The 32 bits of a shuffled value (float, int or unsigned).
template <typename T> uint32_t shuffleBits(T value) {
  static_assert(sizeof(T) == 4, "the shim shuffles 32-bit values");
  uint32_t bits;
  memcpy(&bits, &value, 4);
  return bits;
}

/// A shuffled value from its 32 bits.
template <typename T> T shuffleValue(uint32_t bits) {
  T value;
  memcpy(&value, &bits, 4);
  return value;
}

/// One shuffle: shfl.sync's c operand as CUDA's sm_30_intrinsics.hpp builds
/// it (segment mask from the width, clamp 31, or 0 for `up`).
template <typename T>
T shuffle(WarpOp op, unsigned mask, T value, int b, int width, const char *file, int line) {
  int c = ((warpSize - width) << 8) | (op == WarpOp::ShflUp ? 0 : 0x1f);
  return shuffleValue<T>(warpExchange(op, mask, shuffleBits(value), b, c, file, line));
}

} // namespace mixprec::cudashim

#define MIXPREC_CUDA_SHIM_SHUFFLE(NAME, OP, T, B)                                                  \
  inline T NAME(unsigned mask, T var, B b, int width = warpSize,                                   \
                const char *file = __builtin_FILE(), int line = __builtin_LINE()) {                \
    return mixprec::cudashim::shuffle<T>(mixprec::cudashim::WarpOp::OP, mask, var,                 \
                                         static_cast<int>(b), width, file, line);                  \
  }
#define MIXPREC_CUDA_SHIM_SHUFFLES(T)                                                              \
  MIXPREC_CUDA_SHIM_SHUFFLE(__shfl_sync, ShflIdx, T, int)                                          \
  MIXPREC_CUDA_SHIM_SHUFFLE(__shfl_up_sync, ShflUp, T, unsigned)                                   \
  MIXPREC_CUDA_SHIM_SHUFFLE(__shfl_down_sync, ShflDown, T, unsigned)                               \
  MIXPREC_CUDA_SHIM_SHUFFLE(__shfl_xor_sync, ShflXor, T, int)
MIXPREC_CUDA_SHIM_SHUFFLES(float)
MIXPREC_CUDA_SHIM_SHUFFLES(int)
MIXPREC_CUDA_SHIM_SHUFFLES(unsigned)
#undef MIXPREC_CUDA_SHIM_SHUFFLES
#undef MIXPREC_CUDA_SHIM_SHUFFLE

// ---- Atomics (each returns the old value, as CUDA's do) -----------------------

namespace mixprec::cudashim {

/// Stores `value` at `address` and returns what was there.
template <typename T> T exchange(T *address, T value) {
  T old = *address;
  *address = value;
  return old;
}

} // namespace mixprec::cudashim

inline int atomicMax(int *a, int v) { return mixprec::cudashim::exchange(a, *a > v ? *a : v); }
inline unsigned atomicMax(unsigned *a, unsigned v) {
  return mixprec::cudashim::exchange(a, *a > v ? *a : v);
}
inline int atomicMin(int *a, int v) { return mixprec::cudashim::exchange(a, *a < v ? *a : v); }
inline unsigned atomicMin(unsigned *a, unsigned v) {
  return mixprec::cudashim::exchange(a, *a < v ? *a : v);
}
inline unsigned atomicCAS(unsigned *a, unsigned compare, unsigned v) {
  return mixprec::cudashim::exchange(a, *a == compare ? v : *a);
}
inline float atomicAdd(float *a, float v) { return mixprec::cudashim::exchange(a, *a + v); }
inline unsigned long long atomicMax(unsigned long long *a, unsigned long long v) {
  return mixprec::cudashim::exchange(a, *a > v ? *a : v);
}
inline unsigned long long atomicExch(unsigned long long *a, unsigned long long v) {
  return mixprec::cudashim::exchange(a, v);
}

/// Orders the thread's memory accesses for every other thread: blocks and
/// fibers take turns on one host thread, which sees its own accesses in
/// order, so only the compiler needs telling.
inline void __threadfence() { std::atomic_signal_fence(std::memory_order_seq_cst); }

// ---- Math and bit casts -----------------------------------------------------------

/// CUDA's rsqrtf has no C library twin; the CPU reference computes the same
/// 1 / sqrt(x).
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

// The round-to-nearest intrinsics that keep NVRTC from contracting a*b+c
// into an FMA; with -ffp-contract=off the host rounds each operation alone.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }

inline float __int_as_float(int bits) {
  return mixprec::cudashim::shuffleValue<float>(static_cast<uint32_t>(bits));
}
inline float __uint_as_float(unsigned bits) { return mixprec::cudashim::shuffleValue<float>(bits); }
inline int __float_as_int(float value) {
  return static_cast<int>(mixprec::cudashim::shuffleBits(value));
}
inline unsigned __float_as_uint(float value) { return mixprec::cudashim::shuffleBits(value); }

// ---- Kernel registration (appended to the source by the harness) --------------

namespace mixprec::cudashim {

/// The kind letter of a kernel parameter type (KernelRecord::paramKinds).
template <typename T> constexpr char paramKind() {
  return std::is_pointer_v<T>          ? 'p'
         : std::is_integral_v<T>       ? 'i'
         : std::is_floating_point_v<T> ? 'f'
                                       : 'o';
}

template <auto Kernel> struct KernelBinding;

/// A kernel's record: its trampoline and its parameters' sizes and kinds.
template <typename... Params, void (*Kernel)(Params...)> struct KernelBinding<Kernel> {
  static constexpr uint32_t sizes[sizeof...(Params) + 1] = {sizeof(Params)..., 0};
  static constexpr char kinds[sizeof...(Params) + 1] = {paramKind<Params>()..., '\0'};

  static void invoke(void **params) { call(params, std::index_sequence_for<Params...>{}); }

  template <size_t... I> static void call(void **params, std::index_sequence<I...>) {
    Kernel(*static_cast<std::remove_cv_t<Params> *>(params[I])...);
  }

  static KernelRecord record(const char *name) {
    return KernelRecord{name, &invoke, sizeof...(Params), sizes, kinds, nullptr};
  }
};

} // namespace mixprec::cudashim

/// Makes kernel NAME launchable by name (one line per kernel after the
/// source).
#define MIXPREC_CUDA_SHIM_KERNEL(NAME)                                                             \
  static ::mixprec::cudashim::KernelRecord mixprecCudaShimRecord_##NAME =                          \
      ::mixprec::cudashim::KernelBinding<&NAME>::record(#NAME);                                    \
  static const bool mixprecCudaShimRegistered_##NAME =                                             \
      (::mixprec::cudashim::registerKernel(&mixprecCudaShimRecord_##NAME), true);

/// The library's one exported symbol (once, after the kernels).
#define MIXPREC_CUDA_SHIM_LIBRARY()                                                                \
  extern "C" __attribute__((visibility("default"))) const ::mixprec::cudashim::LibraryApi *        \
  mixprecCudaShimLibrary() {                                                                       \
    static const ::mixprec::cudashim::LibraryApi api{::mixprec::cudashim::kAbiVersion,             \
                                                     &::mixprec::cudashim::firstKernel,            \
                                                     &::mixprec::cudashim::launchKernel};          \
    return &api;                                                                                   \
  }

#endif // MIXPREC_CODEGEN_CUDA_SHIM_CUDASHIM_H
