//===- CliCommon.h - pieces shared by the mixprec subcommands ---*- C++ -*-===//
#ifndef MIXPREC_TOOLS_MIXPREC_CLICOMMON_H
#define MIXPREC_TOOLS_MIXPREC_CLICOMMON_H

#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Pipeline/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mixprec::tools {

/// The usage text, printed after usage errors.
extern const char *const kUsage;

/// Prints "mixprec: error: MESSAGE" and returns 1.
int fail(const std::string &message);

/// Prints the error and the usage text and returns 2.
int usageError(const std::string &message);

double millisecondsSince(std::chrono::steady_clock::time_point start);

/// Prints IR with op locations (node names), so they survive a round trip.
void printModule(mlir::ModuleOp module, llvm::raw_ostream &os);

/// Writes `module` to `output` (stdout when empty or "-"); returns an exit code.
int emitModule(mlir::ModuleOp module, const std::string &output);

using NamedFiles = std::vector<std::pair<std::string, std::string>>;

/// Splits "NAME=FILE" for --input/--calibrate; false if malformed.
bool parseNamedFile(const std::string &spec, NamedFiles &out);

/// Reads `NAME=FILE` arrays for the graph inputs, or makes random ones from
/// `seed` when none are given. Fails naming the flag, file or input.
bool loadInputs(mlir::func::FuncOp func, const compiler::GraphSignature &sig,
                const NamedFiles &inputFiles, uint64_t seed,
                std::vector<compiler::HostTensor> &inputs, std::string &error,
                llvm::StringRef flag = "--input");

/// Turns a graph output name into a file name (ONNX names may hold '/').
std::string fileNameFor(const std::string &name);

/// Writes one output tensor as .npy (float32, int64 or bool).
bool writeOutput(const compiler::HostTensor &t, const std::string &path, std::string &error);

/// Options shared by compile, report and validate.
struct CompileArgs {
  std::string model, output, emit = "mlir";
  compiler::PrecisionOptions precision;
  NamedFiles calibration, inputs;
  uint64_t seed = 0;
};

/// Parses the precision options; returns 0, or the exit code of a usage error.
int parseCompileArgs(llvm::StringRef command, llvm::ArrayRef<std::string> args,
                     CompileArgs &out);

/// Loads the model, calibrates it if asked, and runs the precision passes.
/// Returns the annotated module, or null after printing the error.
mlir::OwningOpRef<mlir::ModuleOp> compileModel(mlir::MLIRContext &context,
                                               const CompileArgs &args);

/// The imported FP32 graph and the compiled plan of one model, side by side
/// (report and validate compare them).
struct ReferenceAndPlan {
  mlir::OwningOpRef<mlir::ModuleOp> reference, plan;
  mlir::func::FuncOp referenceFunc, planFunc;
};

/// Loads the reference and compiles the plan; returns 0, or the exit code
/// after printing the error.
int loadReferenceAndPlan(mlir::MLIRContext &context, const CompileArgs &args,
                         ReferenceAndPlan &out);

} // namespace mixprec::tools

#endif // MIXPREC_TOOLS_MIXPREC_CLICOMMON_H
