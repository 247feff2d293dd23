//===- Commands.h - the report and validate subcommands ---------*- C++ -*-===//
//
// `mixprec report` prints the precision plan of a compiled model (one row
// per op, then FLOP, byte and cast totals against FP32); `mixprec validate`
// runs the FP32 reference and the mixed plan on the same inputs and compares
// them per graph output and per op. Both take the precision options of
// `compile` (Options.h); their output formats are in the usage text.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TOOLS_MIXPREC_COMMANDS_H
#define MIXPREC_TOOLS_MIXPREC_COMMANDS_H

#include "tools/mixprec/Options.h"

#include "codegen/Cuda/CudaProgram.h"

#include "mixprec/runtime.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mixprec::tools {

/// `mixprec report MODEL [compile options] [--json FILE]`; returns the exit code.
int runReport();

/// `mixprec validate MODEL [compile options] [--input NAME=FILE.npy]... [--seed N]
/// [--tolerance X] [--json FILE]`; returns the exit code (0 ok, 1 error,
/// 3 non-finite outputs, 4 tolerance exceeded).
int runValidate();

/// `mixprec train MODEL --data NAME=FILE.npy ... [options]` (Train.cpp);
/// returns the exit code (0 ok, 1 error, 2 usage, 5 the loss scale cannot
/// recover).
int runTrain();

/// `mixprec report-run CSV... [--metrics FILE.json] -o FILE.html`
/// (ReportRun.cpp): the visual report of a training run; returns the exit
/// code (0 ok, 1 error, 2 usage).
int runReportRun();

/// The NVRTC options of an architecture (`smVersion`); kernel cache
/// warnings are printed as "mixprec: warning: ..." lines.
codegen::CudaCompileOptions cudaCompileOptions(int smVersion);

/// The CUDA architecture a module compiled just in time gets code for on
/// `backend`: the device's (cuda, or auto with a device), else none ("").
std::string jitCudaArch(Backend backend, int &smVersion);

/// Runs a compiled .mpk module through the runtime's C API on `backend`
/// (cpu, cuda or auto) and writes <output>.npy files; returns the exit code.
/// Errors name `displayName` (the user's model for a just-in-time run).
/// `loaded`, when not null, is `path` already loaded (a JIT cache hit): it is
/// run and released instead of loading the file again.
int runCompiledModule(const std::string &path, const std::string &displayName,
                      const NamedFiles &inputFiles,
                      uint64_t seed, const std::string &backend, const std::string &outputDir,
                      int repeat, bool time, mixprec_module_t loaded = nullptr);

/// Writes a JSON document to `path` ("-": stdout); false after printing the error.
bool writeJson(const std::string &path, llvm::json::Value document);

} // namespace mixprec::tools

#endif // MIXPREC_TOOLS_MIXPREC_COMMANDS_H
