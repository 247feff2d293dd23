//===- CudaKernelsCheck.cpp - every emitted kernel through NVRTC ----------===//
//
// cuda_kernels_check FILE.mlir...: emits the CUDA C++ of every mpk.kernel
// and every routine with a CUDA form (CudaRoutines.h) in each planned mpk
// file (mixprec compile --emit mpk-mlir) and compiles them with NVRTC for
// sm_80 and sm_90 with ptxas's resource report: a file's kernels as one
// program, then, if that fails, each kernel alone. Fails
// (exit 1, one line per problem) when NVRTC rejects a kernel (its error names
// the kernel and the source line), when ptxas reports spills, a stack frame
// or local memory, or when it reports nothing to check. No GPU is needed.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/CudaEmitter.h"
#include "codegen/Cuda/CudaRoutines.h"
#include "codegen/Cuda/NvrtcCompiler.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <cstdio>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// The sum of N over every "N bytes <key>" in ptxas's -v log (key one of
/// "stack frame", "spill stores", ...); false when no key occurs at all.
bool ptxasUsage(const std::string &log, const std::vector<std::string> &keys, int64_t &total) {
  bool seen = false;
  total = 0;
  for (const std::string &key : keys) {
    const std::regex pattern("([0-9]+) bytes " + key);
    for (auto it = std::sregex_iterator(log.begin(), log.end(), pattern);
         it != std::sregex_iterator(); ++it) {
      total += std::atoll((*it)[1].str().c_str());
      seen = true;
    }
  }
  return seen;
}

/// The emitter's NVRTC options for `sm`, with ptxas's resource report.
mixprec::codegen::NvrtcOptions checkOptions(int sm) {
  mixprec::codegen::NvrtcOptions options;
  options.smVersion = sm;
  options.extraOptions = mixprec::codegen::cudaEmitterNvrtcOptions();
  options.extraOptions.push_back("--ptxas-options=-v");
  return options;
}

/// The bytes spilled (stores and loads), of stack frame and of local
/// memory in ptxas's -v `log`; false when it reports no spills or no stack
/// frame at all.
bool resourceUsage(const std::string &log, int64_t &spills, int64_t &stack, int64_t &lmem) {
  ptxasUsage(log, {"lmem"}, lmem);
  return ptxasUsage(log, {"spill stores", "spill loads"}, spills) &&
         ptxasUsage(log, {"stack frame"}, stack);
}

/// Compiles one kernel for `sm`; prints and counts each problem.
int checkKernel(const std::string &file, const mixprec::codegen::CudaKernel &kernel, int sm) {
  mixprec::codegen::NvrtcResult result;
  std::string error;
  const std::string where = file + ": " + kernel.name + " (sm_" + std::to_string(sm) + ")";
  if (!mixprec::codegen::compileWithNvrtc(kernel.name + ".cu",
                                          mixprec::codegen::cudaPrelude() + kernel.source,
                                          checkOptions(sm), result, error)) {
    std::fprintf(stderr, "%s: %s\n", where.c_str(), error.c_str());
    return 1;
  }
  int problems = 0;
  int64_t spills = 0, stack = 0, lmem = 0;
  if (!resourceUsage(result.log, spills, stack, lmem)) {
    std::fprintf(stderr, "%s: ptxas reported no resource usage; log:\n%s\n", where.c_str(),
                 result.log.c_str());
    return 1;
  }
  if (spills || stack || lmem) {
    std::fprintf(stderr, "%s: %lld bytes spilled, %lld bytes stack frame, %lld bytes lmem\n",
                 where.c_str(), (long long)spills, (long long)stack, (long long)lmem);
    ++problems;
  }
  return problems;
}

/// Whether the one program of every kernel in `kernels` (the form `mixprec
/// compile --arch` gives NVRTC) compiles for `sm` with ptxas reporting each
/// entry function, with no spills, stack frame or local memory; else why not.
/// One NVRTC call parses the prelude and the CUDA headers once for all of
/// them (a call per kernel took 2-3x longer); on a failure the caller
/// compiles each kernel alone, which names the kernel at fault.
bool programPasses(const std::vector<mixprec::codegen::CudaKernel> &kernels, int sm,
                   std::string &why) {
  mixprec::codegen::NvrtcResult result;
  if (!mixprec::codegen::compileWithNvrtc("program.cu",
                                          mixprec::codegen::cudaProgramSource(kernels),
                                          checkOptions(sm), result, why))
    return false;
  size_t entries = 0;
  for (size_t at = 0; (at = result.log.find("Compiling entry function", at)) != std::string::npos;
       ++at)
    ++entries;
  int64_t spills = 0, stack = 0, lmem = 0;
  if (!resourceUsage(result.log, spills, stack, lmem) || entries != kernels.size()) {
    why = "ptxas reported " + std::to_string(entries) + " entry functions for " +
          std::to_string(kernels.size()) + " kernels";
    return false;
  }
  if (spills || stack || lmem) {
    why = "spills, a stack frame or local memory";
    return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cuda_kernels_check FILE.mlir...\n");
    return 2;
  }
  mlir::MLIRContext context;
  context.getOrLoadDialect<mixprec::graph::GraphDialect>();
  context.getOrLoadDialect<mixprec::kernel::KernelDialect>();
  context.getOrLoadDialect<mlir::func::FuncDialect>();
  int problems = 0, kernels = 0;
  for (int i = 1; i < argc; ++i) {
    mlir::OwningOpRef<mlir::ModuleOp> module =
        mlir::parseSourceFile<mlir::ModuleOp>(argv[i], &context);
    if (!module) {
      std::fprintf(stderr, "%s: cannot parse\n", argv[i]);
      ++problems;
      continue;
    }
    for (auto func : module->getOps<mlir::func::FuncOp>()) {
      // The emitter's error goes to stderr at its op (the context's
      // default handler).
      mlir::FailureOr<std::vector<mixprec::codegen::CudaKernel>> emittedOrError =
          mixprec::codegen::emitCudaKernels(func);
      if (failed(emittedOrError)) {
        std::fprintf(stderr, "%s: cannot emit CUDA code (the error above)\n", argv[i]);
        ++problems;
        continue;
      }
      std::vector<mixprec::codegen::CudaKernel> emitted = std::move(*emittedOrError);
      // The routines' kernels too (CudaRoutines.h).
      for (auto &routine : mixprec::codegen::emitCudaRoutines(func))
        if (routine)
          emitted.push_back(std::move(*routine));
      kernels += static_cast<int>(emitted.size());
      for (int sm : {80, 90}) {
        std::string why;
        if (emitted.empty() || programPasses(emitted, sm, why))
          continue;
        int alone = 0;
        for (const auto &kernel : emitted)
          alone += checkKernel(argv[i], kernel, sm);
        if (alone == 0) {
          std::fprintf(stderr,
                       "%s (sm_%d): the program of its %zu kernels fails (%s), though "
                       "each kernel alone passes\n",
                       argv[i], sm, emitted.size(), why.c_str());
          alone = 1;
        }
        problems += alone;
      }
    }
  }
  std::printf("%d kernels from %d files compiled for sm_80 and sm_90: %d problems\n", kernels,
              argc - 1, problems);
  // A run that checked nothing proves nothing.
  return problems || kernels == 0 ? 1 : 0;
}
