//===- Report.h - report, validate and their inputs, as a library -*- C++ -*-===//
//
// What `mixprec report` and `mixprec validate` compute, as text and JSON,
// without a command line: the CLI (tools/mixprec) and the Python package
// (python/) call these, so both give the same rows, summaries and
// comparisons. Nothing here prints or exits; failures are error strings.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_REPORT_REPORT_H
#define MIXPREC_COMPILER_REPORT_REPORT_H

#include "common/Npy.h"
#include "compiler/Interpreter/Interpreter.h"
#include "passes/Pipelines.h"

#include "mixprec/runtime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::compiler {

/// Keeps the first error the compile API emits on a context, formatted
/// one line each (formatDiagnostic), with its notes, from when it is made
/// until it is destroyed; other diagnostics (warnings, later errors) are
/// dropped.
class FirstError {
public:
  explicit FirstError(mlir::MLIRContext &context);
  /// "" when no error was emitted.
  const std::string &message() const { return error; }
  const std::vector<std::string> &notes() const { return noteLines; }

private:
  std::string error;
  std::vector<std::string> noteLines;
  mlir::ScopedDiagnosticHandler handler;
};

/// What a report or validation is of: named in its header line and JSON.
struct PlanInfo {
  std::string model;
  passes::Precision precision = passes::Precision::BF16;
  std::string policyFile;
  /// "MODEL --precision P [--policy F]", the header line's subject.
  std::string description() const;
};

/// The label an op is shown (and matched) by: its ONNX node name, else
/// "FILE:LINE:COL" (file base name) from its location, else "" (no label).
std::string nodeLabel(mlir::Operation *op);

/// Prints rows (the first is the header), each column padded to its widest
/// cell with two spaces between columns, each line indented by `indent`.
void printTable(llvm::raw_ostream &os, const std::vector<std::vector<std::string>> &rows,
                unsigned indent);

/// A report or a validation: the text `mixprec` prints and the document
/// its `--json` writes.
struct PlanDocument {
  std::string text;
  llvm::json::Value json = nullptr;
  /// validate's exit status (0 ok, kValidateNonFinite, kValidateTolerance);
  /// 0 for a report.
  int status = 0;
};

/// The report of `plan` against the imported FP32 graph `reference`: one row
/// per op, then the summary (`graph`: the plan as a dataflow table instead).
PlanDocument reportPlan(mlir::func::FuncOp plan, mlir::func::FuncOp reference,
                        const PlanInfo &info, bool graph);

/// Exit statuses of validate (also in the usage text).
constexpr int kValidateNonFinite = 3;
constexpr int kValidateTolerance = 4;

/// How validate judges: `tolerance` (max_rel) when not negative, else the
/// default bounds of the plan's precision; `calibrated` (--calibrate was
/// given) silences the FP16 range hint.
struct ValidateOptions {
  double tolerance = -1;
  bool calibrated = false;
};

/// Runs `reference` and `plan` on the interpreter with the same `inputs`
/// and compares them per graph output and per op. False with `error`
/// (naming the model and the run) when a run fails.
bool validatePlan(mlir::func::FuncOp reference, mlir::func::FuncOp plan,
                  const std::vector<HostTensor> &inputs, const PlanInfo &info,
                  const ValidateOptions &options, PlanDocument &out, std::string &error);

// The .npy -> input rule and module-input encoding (common/HostTensor.h).
using support::encodeModuleInput;
using support::hostTensorFromNpy;
using support::kindOfDType;

/// Gives each state argument (mp.state) not yet `given` its mp.state_init
/// value, and marks it given; false naming the state when it cannot.
bool initialStates(mlir::func::FuncOp func, const GraphSignature &sig, std::vector<bool> &given,
                   std::vector<HostTensor> &inputs, std::string &error);

/// Fills each input not `given` with random values from `seed`: normal
/// floats, integers valid as indices of the gather they feed, fair bools.
void randomInputs(mlir::func::FuncOp func, const GraphSignature &sig,
                  const std::vector<bool> &given, uint64_t seed,
                  std::vector<HostTensor> &inputs);

/// The IR text of a compiled graph, as `mixprec compile` prints it
/// (op locations kept, graph arguments named after the model's inputs);
/// with `elideWeights`, large constants elided under kElidedHeader.
void printModule(mlir::ModuleOp module, llvm::raw_ostream &os, bool elideWeights = false);

/// Constants with more elements than this are elided in IR printed for reading.
constexpr int64_t kElideElementsOver = 16;

/// The first line of IR printed for reading: what is missing and how to get
/// a file that runs (loadModel refuses an elided file with the same advice).
constexpr const char *kElidedHeader =
    "// mixprec: for reading only: constants over 16 elements are elided "
    "(dense_resource<__elided__>), so this file does not run; for a runnable one "
    "write -o FILE.mlirbc (MLIR bytecode) or -o FILE.mlir without --elide-weights";

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_REPORT_REPORT_H
