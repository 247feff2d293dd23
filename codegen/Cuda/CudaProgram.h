//===- CudaProgram.h - a module's kernels as one NVRTC program --*- C++ -*-===//
//
// `mixprec compile --arch sm_XX` puts CUDA code into a module: every
// mpk.kernel of the planned function is emitted (CudaEmitter.h) into one
// program, cudaPrelude() and then each kernel, then the routines that have
// a CUDA form (CudaRoutines.h), and NVRTC compiles it for
// the architecture through the on-disk KernelCache, so compiling the same
// model again calls NVRTC zero times. The module writer stores the result
// as Module.cuda, each kernel's launch as Kernel.cuda and each routine
// kernel's as Routine.cuda
// (runtime/schema/module.fbs.in).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_CUDAPROGRAM_H
#define MIXPREC_CODEGEN_CUDA_CUDAPROGRAM_H

#include "codegen/Cuda/CudaEmitter.h"
#include "codegen/Cuda/CudaRoutines.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mixprec::codegen {

/// The CUDA code of a module's kernels.
struct CudaModuleCode {
  int smVersion = 0;
  std::string nvrtcVersion; ///< "13.0"
  std::string source;       ///< cudaPrelude() and every kernel
  std::string ptx;
  std::vector<char> cubin;  ///< for exactly smVersion
  /// One per mpk.kernel of the function, in program order (the order the
  /// module writer numbers kernels in).
  std::vector<CudaKernel> kernels;
  /// One per mpk.call of the function, in program order (the order the
  /// module writer numbers routines in): its kernel, after every
  /// mpk.kernel's in the program, or nullopt (run on the host).
  std::vector<std::optional<CudaKernel>> routines;
};

struct CudaCompileOptions {
  /// SM version to compile for (parseCudaArch), e.g. 90.
  int smVersion = 90;
  /// The kernel cache's root folder; "" means defaultCacheDirectory().
  std::string cacheDirectory;
  /// Receives each cache warning (one line, no prefix); null prints
  /// "mixprec: warning: ..." on stderr.
  std::function<void(const std::string &)> warn;
  /// Test only: kernel #N gets an undeclared identifier in its body, so
  /// that NVRTC rejects the program there (-1: none).
  int breakKernel = -1;
};

/// What compiling one program did.
struct CudaCompileStats {
  int64_t kernels = 0;       ///< kernels in the program
  int64_t nvrtcCompiles = 0; ///< NVRTC calls (0 when the cache had it)
  int64_t cacheHits = 0;
};

/// Emits every mpk.kernel of `func` into `code.kernels`, every routine with
/// a CUDA form into `code.routines`, and the program into `code.source` (no
/// compilation). Fails with the emitter's error at the op without a CUDA
/// form.
mlir::FailureOr<CudaModuleCode> emitCudaProgram(mlir::func::FuncOp func);

/// The NVRTC program name of `func`'s kernels, "mp_<function>.cu": NVRTC's
/// diagnostics and the cache key carry it.
std::string cudaProgramName(mlir::func::FuncOp func);

/// emitCudaProgram, then compiles the program with NVRTC for
/// `options.smVersion` through the kernel cache. Fails with a one-line
/// error: the emitter's, or NVRTC's naming the kernel and the failing
/// source line, at the mpk.kernel or mpk.call whose code NVRTC rejected.
/// An NVRTC failure outside every kernel (the prelude, NVRTC itself) is no
/// op's: it is emitted at an unknown location.
mlir::FailureOr<CudaModuleCode> compileCudaProgram(mlir::func::FuncOp func,
                                                   const CudaCompileOptions &options,
                                                   CudaCompileStats &stats);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_CUDAPROGRAM_H
