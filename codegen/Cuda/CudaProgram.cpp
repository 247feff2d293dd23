//===- CudaProgram.cpp - a module's kernels as one NVRTC program -----------===//
#include "codegen/Cuda/CudaProgram.h"

#include "codegen/Cuda/KernelCache.h"
#include "codegen/Cuda/NvrtcCompiler.h"

#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace mixprec::codegen {
namespace {

/// The program's functions: every mpk.kernel's, then each routine kernel.
std::vector<CudaKernel> programKernels(const CudaModuleCode &code) {
  std::vector<CudaKernel> all = code.kernels;
  for (const std::optional<CudaKernel> &routine : code.routines)
    if (routine)
      all.push_back(*routine);
  return all;
}

/// Puts an undeclared identifier at the top of `kernel`'s body (the line
/// after its signature), where NVRTC will reject it.
void breakKernelBody(CudaKernel &kernel) {
  size_t body = kernel.source.find(") {\n");
  if (body == std::string::npos)
    body = kernel.source.size();
  else
    body += 4;
  kernel.source.insert(body, "  mp_injected_error = 1; // --cuda-test-break-kernel\n");
}

/// The step of `func` whose CUDA function is `kernelName`: the mpk.kernel
/// or mpk.call it was emitted from (`code` numbers each in program order),
/// or null.
Operation *stepOfKernel(func::FuncOp func, const CudaModuleCode &code, StringRef kernelName) {
  size_t kernels = 0, routines = 0;
  for (Operation &op : func.getBody().front()) {
    const CudaKernel *emitted = nullptr;
    if (isa<kernel::KernelOp>(op) && kernels < code.kernels.size())
      emitted = &code.kernels[kernels++];
    else if (isa<kernel::CallOp>(op) && routines < code.routines.size())
      if (const std::optional<CudaKernel> &routine = code.routines[routines++])
        emitted = &*routine;
    if (emitted && emitted->name == kernelName)
      return &op;
  }
  return nullptr;
}

} // namespace

std::string cudaProgramName(mlir::func::FuncOp func) {
  return "mp_" + func.getSymName().str() + ".cu";
}

FailureOr<CudaModuleCode> emitCudaProgram(mlir::func::FuncOp func) {
  FailureOr<std::vector<CudaKernel>> kernels = emitCudaKernels(func);
  if (failed(kernels))
    return failure();
  CudaModuleCode code;
  code.kernels = std::move(*kernels);
  code.routines = emitCudaRoutines(func);
  code.source = cudaProgramSource(programKernels(code));
  return code;
}

FailureOr<CudaModuleCode> compileCudaProgram(mlir::func::FuncOp func,
                                             const CudaCompileOptions &options,
                                             CudaCompileStats &stats) {
  FailureOr<CudaModuleCode> emitted = emitCudaProgram(func);
  if (failed(emitted))
    return failure();
  CudaModuleCode &code = *emitted;
  if (options.breakKernel >= 0 && static_cast<size_t>(options.breakKernel) < code.kernels.size()) {
    breakKernelBody(code.kernels[options.breakKernel]);
    code.source = cudaProgramSource(programKernels(code));
  }
  NvrtcOptions nvrtc;
  nvrtc.smVersion = options.smVersion;
  nvrtc.cubin = true;
  nvrtc.extraOptions = cudaEmitterNvrtcOptions();
  KernelCacheOptions cacheOptions;
  cacheOptions.directory = options.cacheDirectory;
  cacheOptions.warn = options.warn;
  KernelCache cache(cacheOptions);
  const uint64_t compilesBefore = nvrtcCompileCount();
  NvrtcResult result;
  std::string error;
  bool compiled = cache.compile(cudaProgramName(func), code.source, nvrtc, result, error);
  stats.kernels += static_cast<int64_t>(code.kernels.size());
  stats.nvrtcCompiles += static_cast<int64_t>(nvrtcCompileCount() - compilesBefore);
  stats.cacheHits += static_cast<int64_t>(cache.stats().hits);
  if (!compiled) {
    // NVRTC's message already names the program, kernel and source line.
    if (Operation *step = stepOfKernel(func, code, result.failedKernel))
      return step->emitError() << error;
    return mlir::emitError(mlir::UnknownLoc::get(func.getContext())) << error;
  }
  code.smVersion = options.smVersion;
  code.nvrtcVersion = nvrtcVersionString();
  code.ptx = std::move(result.ptx);
  code.cubin = std::move(result.cubin);
  return emitted;
}

} // namespace mixprec::codegen
