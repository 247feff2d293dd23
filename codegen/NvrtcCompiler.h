//===- NvrtcCompiler.h - CUDA C++ to PTX/CUBIN with NVRTC -------*- C++ -*-===//
//
// Compiles generated CUDA C++ at run time. NVRTC needs no GPU or driver, so
// this runs (and is tested) on machines without one; the CUDA backend later
// loads the CUBIN or PTX through the driver API.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_NVRTCCOMPILER_H
#define MIXPREC_CODEGEN_NVRTCCOMPILER_H

#include <string>
#include <vector>

namespace mixprec::codegen {

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
};

/// Compiles `source` (named `name` in diagnostics). Returns false and sets a
/// one-line `error` naming the program, with the log's first error, if
/// NVRTC rejects it.
bool compileWithNvrtc(const std::string &name, const std::string &source,
                      const NvrtcOptions &options, NvrtcResult &result, std::string &error);

/// "major.minor" of the NVRTC library in use.
std::string nvrtcVersionString();

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_NVRTCCOMPILER_H
