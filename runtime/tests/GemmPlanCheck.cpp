//===- GemmPlanCheck.cpp - do a module's GEMMs plan on cuBLASLt? ----------===//
//
// gemm_plan_check MODULE.mpk...: loads each module with the runtime's loader
// and plans each of its GEMM steps as the CUDA backend does before any
// cuBLASLt call (planGemm: dtypes, FP8's TN layout, epilogues, biases), so
// a module whose GEMMs the CUDA backend would refuse fails here, in CI,
// without a GPU. One line per module; exit 1 when any GEMM does not plan.
// For a module with CUDA code (--arch) the line also counts the routine
// steps that have no CUDA kernel, which the CUDA backend runs on the host.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Module.h"
#include "runtime/src/backends/cuda/CudaBackend.h"
#include "runtime/src/backends/cuda/GemmPlan.h"

#include <cstdio>
#include <string>

using namespace mixprec::runtime;

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gemm_plan_check MODULE.mpk...\n");
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; ++i) {
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
    const std::string host =
        module->cudaProgram()
            ? "; " + cuda::describeHostSteps(*module, cuda::hostRoutineSteps(*module))
            : "";
    if (ok)
      std::printf("PASS  %s: %zu GEMMs plan on cuBLASLt (%zu FP8)%s\n", argv[i],
                  module->gemms().size(), fp8, host.c_str());
    failed += !ok;
  }
  return failed ? 1 : 0;
}
