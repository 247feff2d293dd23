//===- CudaProgram.cpp - a module's kernels as one NVRTC program -----------===//
#include "codegen/Cuda/CudaProgram.h"

#include "codegen/Cuda/KernelCache.h"
#include "codegen/Cuda/NvrtcCompiler.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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

} // namespace

std::string cudaProgramName(mlir::func::FuncOp func) {
  return "mp_" + func.getSymName().str() + ".cu";
}

bool emitCudaProgram(mlir::func::FuncOp func, CudaModuleCode &code, std::string &error) {
  code.kernels.clear();
  if (!emitCudaKernels(func, code.kernels, error))
    return false;
  code.routines = emitCudaRoutines(func);
  code.source = cudaProgramSource(programKernels(code));
  return true;
}

bool compileCudaProgram(mlir::func::FuncOp func, const CudaCompileOptions &options,
                        CudaModuleCode &code, CudaCompileStats &stats, std::string &error) {
  if (!emitCudaProgram(func, code, error))
    return false;
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
  bool compiled = cache.compile(cudaProgramName(func), code.source, nvrtc, result, error);
  stats.kernels += static_cast<int64_t>(code.kernels.size());
  stats.nvrtcCompiles += static_cast<int64_t>(nvrtcCompileCount() - compilesBefore);
  stats.cacheHits += static_cast<int64_t>(cache.stats().hits);
  if (!compiled)
    return false;
  code.smVersion = options.smVersion;
  code.nvrtcVersion = nvrtcVersionString();
  code.ptx = std::move(result.ptx);
  code.cubin = std::move(result.cubin);
  return true;
}

} // namespace mixprec::codegen
