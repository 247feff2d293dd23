//===- Commands.h - the report and validate subcommands ---------*- C++ -*-===//
//
// `mixprec report` prints the precision plan of a compiled model (one row
// per op, then FLOP, byte and cast totals against FP32); `mixprec validate`
// runs the FP32 reference and the mixed plan on the same inputs and compares
// them per graph output and per op. Both take the options of `compile`
// (CompileArgs); their output formats are described in the usage text.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TOOLS_MIXPREC_COMMANDS_H
#define MIXPREC_TOOLS_MIXPREC_COMMANDS_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mixprec::tools {

/// `mixprec report MODEL [compile options] [--json FILE]`; returns the exit code.
int runReport(llvm::ArrayRef<std::string> args);

/// `mixprec validate MODEL [compile options] [--input NAME=FILE.npy]... [--seed N]
/// [--tolerance X] [--json FILE]`; returns the exit code (0 ok, 1 error,
/// 2 usage, 3 non-finite outputs, 4 tolerance exceeded).
int runValidate(llvm::ArrayRef<std::string> args);

/// Runs a compiled .mpk module through the runtime's C API on `backend`
/// (cpu, cuda or auto) and writes <output>.npy files; returns the exit code.
/// Errors name `displayName` (the user's model for a just-in-time run).
int runCompiledModule(const std::string &path, const std::string &displayName,
                      const std::vector<std::pair<std::string, std::string>> &inputFiles,
                      uint64_t seed, const std::string &backend, const std::string &outputDir,
                      int repeat, bool time);

/// The label an op is shown (and matched) by: its ONNX node name, else
/// "FILE:LINE:COL" (file base name) from its location, else "" (no label).
std::string nodeLabel(mlir::Operation *op);

/// Splits `--json FILE` (and, when `tolerance` is non-null, `--tolerance X`)
/// off `args`; the rest go to parseCompileArgs. Returns 0 or a usage exit code.
int splitExtraArgs(llvm::StringRef command, llvm::ArrayRef<std::string> args,
                   std::vector<std::string> &rest, std::string &json, double *tolerance);

/// Prints rows (the first is the header), each column padded to its widest
/// cell with two spaces between columns, each line indented by `indent`.
void printTable(llvm::raw_ostream &os, const std::vector<std::vector<std::string>> &rows,
                unsigned indent);

} // namespace mixprec::tools

#endif // MIXPREC_TOOLS_MIXPREC_COMMANDS_H
