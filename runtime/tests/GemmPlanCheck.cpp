//===- GemmPlanCheck.cpp - do a module's GEMMs plan on cuBLASLt? ----------===//
//
// gemm_plan_check MODULE.mpk...: loads each module with the runtime's loader
// and plans each of its GEMM steps as the CUDA backend does before any
// cuBLASLt call (planGemm: dtypes, FP8's TN layout, epilogues, biases), so
// a module whose GEMMs the CUDA backend would refuse fails here, in CI,
// without a GPU. One line per module; exit 1 when any GEMM does not plan.
// For a module with CUDA code (--arch) the line also counts the routine
// steps that have no CUDA kernel, which the CUDA backend runs on the host;
// with --no-host-steps such a step (or a module without CUDA code) fails
// the module.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Module.h"
#include "runtime/src/backends/cuda/CudaBackend.h"
#include "runtime/src/backends/cuda/GemmPlan.h"

#include <cstdio>
#include <string>

using namespace mixprec::runtime;

int main(int argc, char **argv) {
  const bool noHostSteps = argc > 1 && std::string(argv[1]) == "--no-host-steps";
  const int first = noHostSteps ? 2 : 1;
  if (argc <= first) {
    std::fprintf(stderr, "usage: gemm_plan_check [--no-host-steps] MODULE.mpk...\n");
    return 2;
  }
  int failed = 0;
  for (int i = first; i < argc; ++i) {
    std::shared_ptr<const LoadedModule> module;
    if (Status s = LoadedModule::loadFile(argv[i], LoadOptions(), module); !s.ok()) {
      std::printf("FAIL  %s: %s\n", argv[i], s.message().c_str());
      ++failed;
      continue;
    }
    size_t fp8 = 0;
    bool ok = true;
    for (const GemmDesc &g : module->gemms()) {
      cuda::GemmPlan plan;
      if (Status s = cuda::planGemm(g, module->tensors(), plan); !s.ok()) {
        std::printf("FAIL  %s: %s\n", argv[i], s.message().c_str());
        ok = false;
        break;
      }
      fp8 += plan.fp8Scales;
    }
    // With CUDA code (--arch): the routine steps the backend runs on the host.
    const std::vector<size_t> hostSteps =
        module->cudaProgram() ? cuda::hostRoutineSteps(*module) : std::vector<size_t>();
    std::string host;
    if (module->cudaProgram())
      host = hostSteps.empty() ? "; no routine step runs on the host"
                               : "; " + cuda::describeHostSteps(*module, hostSteps);
    if (ok && noHostSteps && (!module->cudaProgram() || !hostSteps.empty())) {
      std::printf("FAIL  %s: %s\n", argv[i],
                  module->cudaProgram() ? (host.substr(2) + " (--no-host-steps)").c_str()
                                        : "no CUDA code (--no-host-steps)");
      ok = false;
    }
    if (ok)
      std::printf("PASS  %s: %zu GEMMs plan on cuBLASLt (%zu FP8)%s\n", argv[i],
                  module->gemms().size(), fp8, host.c_str());
    failed += !ok;
  }
  return failed ? 1 : 0;
}
