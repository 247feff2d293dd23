//===- CudaEmitter.h - CUDA C++ from mpk kernels ----------------*- C++ -*-===//
//
// Prints one `extern "C" __global__` CUDA C++ kernel per mpk.kernel from its
// body, with the CPU backend's numerics (runtime/src/backends/cpu/CpuKernelRun.cpp):
// registers are FP32, each value is rounded to its IR element type (the
// arithmetic of a bf16 op runs in FP32 and rounds once to bf16, as the
// module format and the interpreter say), stores round to the tensor's
// dtype, FP8 conversions saturate (satfinite) and
// Quantize gives NaN for a non-finite value or scale. Each op says what it
// computes (ScalarFn, row_reduce kind, amax); the emitter maps those cases.
//
// Element-wise kernels whose accesses all walk the innermost dim
// contiguously (or broadcast along it) take V consecutive elements per
// thread, V = 16 bytes / the widest such element, when V divides the
// innermost dim: one pack load or store per access (16 bytes for the
// widest), which needs every buffer 16-byte aligned (the memory plan aligns
// to 256; the CUDA backend checks buffers bound by the application).
//
// Kernel parameters: the kernel's inputs in order, then its results, as
// device pointers of their element types. The emitted source uses only the
// CUDA subset a CPU shim can implement (see CudaEmitter.cpp's prelude).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_CUDAEMITTER_H
#define MIXPREC_CODEGEN_CUDA_CUDAEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::func {
class FuncOp;
}

namespace mixprec::kernel {
class KernelOp;
}

namespace mixprec::codegen {

/// How to launch one emitted kernel: a 1-D grid of 1-D blocks.
struct CudaLaunch {
  /// Blocks; 0 means the iteration space is empty and nothing is launched.
  int64_t gridSize = 0;
  /// Threads per block, a multiple of 32 (the block reductions use whole
  /// warps).
  int64_t blockSize = 256;
  /// Whether one block handles one row (a kernel with row reductions).
  bool rowKernel = false;
  /// Kernel results (index among the results) that accumulate an amax with
  /// atomicMax and so must be set to 0.0f before the launch.
  std::vector<int> zeroedResults;
  /// Routine kernels: the last parameter is the error record
  /// (runtime/format/CudaErrorRecord.h), which the kernel may report into.
  bool errorRecord = false;
};

struct CudaKernel {
  std::string name;   ///< the __global__ function's name
  std::string source; ///< the function's text (needs cudaPrelude() before it)
  CudaLaunch launch;
};

/// A C identifier from an op or function name: other characters become '_'.
std::string cudaIdentifier(llvm::StringRef text);

/// The includes and device helpers every emitted kernel uses.
const std::string &cudaPrelude();

/// NVRTC options the emitted code needs: no FMA contraction, so products
/// and sums round as the CPU backend's do.
std::vector<std::string> cudaEmitterNvrtcOptions();

/// Emits `op` as the kernel `name`. Fails with a one-line error, naming the
/// kernel, at the op without a CUDA form: a body op, or `op` itself for an
/// input or result type.
mlir::FailureOr<CudaKernel> emitCudaKernel(kernel::KernelOp op, const std::string &name);

/// Emits every mpk.kernel of `func`, in order, named
/// mp_<function>_k<index>_<first source op>. Fails at the first op without
/// a CUDA form (an op that is no mpk step among them).
mlir::FailureOr<std::vector<CudaKernel>> emitCudaKernels(mlir::func::FuncOp func);

/// One program of `kernels`: the prelude, then each kernel after a comment
/// saying how it is launched.
std::string cudaProgramSource(const std::vector<CudaKernel> &kernels);

/// Prints the prelude and every kernel of every function in `module`, then
/// its routines' kernels (CudaRoutines.h).
mlir::LogicalResult translateModuleToCuda(mlir::ModuleOp module, llvm::raw_ostream &os);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_CUDAEMITTER_H
