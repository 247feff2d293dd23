//===- NvrtcCompiler.h - CUDA C++ to PTX/CUBIN with NVRTC -------*- C++ -*-===//
//
// Compiles generated CUDA C++ at run time. NVRTC needs no GPU or driver, so
// this runs (and is tested) on machines without one; the CUDA backend later
// loads the CUBIN or PTX through the driver API. KernelCache.h keeps the
// results on disk.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_NVRTCCOMPILER_H
#define MIXPREC_CODEGEN_CUDA_NVRTCCOMPILER_H

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::codegen {

/// The oldest architecture mixprec compiles for: sm_80 (Ampere) is the first
/// with BF16 arithmetic.
constexpr int kMinSmVersion = 80;

struct NvrtcOptions {
  /// SM version, e.g. 90 for sm_90 (H100/H200). NVRTC 13 accepts 75..121.
  int smVersion = 90;
  /// Also produce a CUBIN for `smVersion` (otherwise PTX only).
  bool cubin = true;
  /// Where cuda_fp16.h, cuda_bf16.h and cuda_fp8.h live; NVRTC has no
  /// default include path.
  std::string cudaIncludeDir = "/usr/local/cuda/include";
  std::vector<std::string> extraOptions;
};

struct NvrtcResult {
  std::string ptx;
  std::vector<char> cubin;
  /// The compiler log (warnings, or the errors on failure).
  std::string log;
  /// On failure, the `__global__` function the first error is in ("" when
  /// it is outside every kernel): a caller with the IR finds the op whose
  /// code NVRTC rejected by it.
  std::string failedKernel;
};

/// The command-line options NVRTC gets for `options`, in order: what the
/// compilation (and so a cache key) depends on besides the source.
std::vector<std::string> nvrtcArguments(const NvrtcOptions &options);

/// Compiles `source` (named `name` in diagnostics). Returns false and sets a
/// one-line `error` if NVRTC rejects it: the program, the kernel
/// (`__global__` function) the first error is in, NVRTC's message and the
/// text of the failing source line; that kernel is also `result.failedKernel`.
bool compileWithNvrtc(const std::string &name, const std::string &source,
                      const NvrtcOptions &options, NvrtcResult &result, std::string &error);

/// How many times this process has called NVRTC to compile a program (the
/// kernel cache's tests count compilations with it).
uint64_t nvrtcCompileCount();

/// "major.minor" of the NVRTC library in use.
std::string nvrtcVersionString();

/// The SM versions the NVRTC library in use can compile for, ascending.
std::vector<int> nvrtcSupportedSmVersions();

/// Parses an `--arch` value, "sm_90", into 90. Fails with a one-line error
/// naming the value when it is malformed, older than sm_80, or an
/// architecture this NVRTC does not know (the message lists those it does).
bool parseCudaArch(const std::string &text, int &smVersion, std::string &error);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_NVRTCCOMPILER_H
