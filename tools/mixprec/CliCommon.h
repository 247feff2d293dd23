//===- CliCommon.h - pieces shared by the mixprec subcommands ---*- C++ -*-===//
#ifndef MIXPREC_TOOLS_MIXPREC_CLICOMMON_H
#define MIXPREC_TOOLS_MIXPREC_CLICOMMON_H

#include "common/Npy.h"
#include "compiler/Compile/Compile.h"
#include "compiler/Compile/Session.h"
#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Report/Report.h"
#include "tools/mixprec/Options.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
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

/// Prints "mixprec: error: MESSAGE" and returns 1. Control characters in
/// MESSAGE (a newline in an op type or file name) are escaped
/// (common::escapeControls), so an error is always one line.
int fail(const std::string &message);

/// The command line as main got it (argv[0] first), for a command that runs
/// itself again (train --ranks).
std::vector<std::string> &commandLine();

/// Prints the error and the usage text and returns 2.
int usageError(const std::string &message);

/// Keeps the first error the compile API emits on a context, with its
/// notes, from when it is made until it is destroyed; other diagnostics
/// (warnings, later errors) are dropped.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext &context) : first(context) {}

  /// Prints the error as "mixprec: error: SUBJECT: ERROR" (without
  /// "SUBJECT: " when empty), then "mixprec: note: NOTE" per note, each
  /// one line; returns 1.
  int fail(llvm::StringRef subject = "") const;

private:
  compiler::FirstError first;
};

/// What one command compiles in: a context prepared for mixprec models
/// (compiler::prepareContext), and the first error emitted on it.
struct CommandContext {
  CommandContext() : diagnostics(context) { compiler::prepareContext(context); }
  mlir::MLIRContext context;
  DiagnosticCapture diagnostics;
};

double millisecondsSince(std::chrono::steady_clock::time_point start);

// IR printing and array conversion live in the report library, which the
// Python package shares.
using compiler::hostTensorFromNpy;
using compiler::kElidedHeader;
using compiler::kElideElementsOver;
using compiler::printModule;

/// How emitModule writes IR: MLIR text, or MLIR bytecode (`.mlirbc`).
enum class IrForm { Text, Bytecode };

/// Writes `module` to `output` (stdout when empty or "-"); returns an exit
/// code. Text is elided for reading with --elide-weights, or when it goes
/// to a terminal; bytecode is never written to a terminal.
int emitModule(mlir::ModuleOp module, const std::string &output, IrForm form = IrForm::Text);

//===----------------------------------------------------------------------===//
// The file-writing rules (stated in the usage text and the README): every
// output file is written atomically (a temporary file in the same folder,
// checked, then renamed; a failed write leaves the old file intact), and no
// command writes to a file it reads (compared as files: device and inode).
//===----------------------------------------------------------------------===//

/// Records that this command reads `path` (`what` names it in errors: "the
/// model", "--input x"). One process runs one command, so the set is global.
void noteInput(const std::string &path, const std::string &what);

/// Fails, with `error` naming the output and the input, if `output` is a
/// file this command reads.
bool checkNotAnInput(const std::string &output, std::string &error);

/// Writes `text` to `path` ("" or "-": stdout) by the rules above; returns
/// false after printing the error.
bool writeTextFile(const std::string &path, llvm::StringRef text);

/// Flushes stdout and reports a failed write to it (a full disk, a closed
/// pipe) as an error; returns `rc`, or 1 if stdout failed.
int finishStdout(int rc);

/// Reads `NAME=FILE` arrays for the graph inputs, or makes random ones from
/// `seed` when none are given. Fails naming the flag, file or input.
bool loadInputs(mlir::func::FuncOp func, const compiler::GraphSignature &sig,
                const NamedFiles &inputFiles, uint64_t seed,
                std::vector<compiler::HostTensor> &inputs, std::string &error,
                llvm::StringRef flag = "--input");

/// The file a graph output is written to: NAME.npy, with every byte
/// outside [A-Za-z0-9_.-] (and a leading '.') written as %XX, so that
/// distinct names give distinct files ("a/b" -> "a%2Fb.npy", "a_b" ->
/// "a_b.npy").
std::string fileNameFor(const std::string &name);

/// Parses a whole unsigned decimal number (no sign, no overflow).
bool parseUnsigned(llvm::StringRef text, uint64_t &out);

/// Creates `outputDir` and maps each graph output name to its file there
/// (fileNameFor); a name seen before maps to "" (the same tensor, written
/// once). Fails if a file is one of the command's inputs.
bool planOutputFiles(const std::string &outputDir, const std::vector<std::string> &names,
                     std::vector<std::string> &paths, std::string &error);

/// Writes one output tensor as .npy (float32, int64 or bool).
bool writeOutput(const compiler::HostTensor &t, const std::string &path, std::string &error,
                 bool int32 = false);

/// Loads the model (the files it reads become this command's inputs), or
/// prints the error and returns null. `externalFiles`, if given, receives
/// the other files the model read (ONNX external data); `valuesUsed` the
/// graph inputs whose --input values the model was specialised to.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(CommandContext &command,
                                            std::vector<std::string> *externalFiles = nullptr,
                                            std::vector<std::string> *valuesUsed = nullptr);

/// The most elements an integer --input may have to be taken as a value
/// (a shape, axes, sizes) at compile time.
constexpr int64_t kMaxValueElements = 64;

/// What the --input (and --calibrate) arrays say before the model is
/// compiled, by input name.
struct GivenArrays {
  /// Their shapes (--input before --calibrate): they specialise a model's
  /// dynamic dims (LoadOptions::dataShapes).
  std::map<std::string, std::vector<int64_t>> shapes;
  /// The values of the small integer and float32 --input arrays (at most
  /// kMaxValueElements): an input that the model needs at compile time
  /// (Reshape's shape, ReduceSum's axes, Resize's scales given as graph
  /// inputs) is specialised to them (LoadOptions::dataValues).
  std::map<std::string, std::vector<int64_t>> intValues;
  std::map<std::string, std::vector<float>> floatValues;
};

/// The given arrays, each file read once per process.
const GivenArrays &givenArrays();

/// Loads the model, calibrates it if asked (--calibrate), and runs the
/// precision pipeline with the command line's precision options. Returns
/// the annotated module, or null after printing the error (`externalFiles`,
/// `valuesUsed`: as loadModel's).
mlir::OwningOpRef<mlir::ModuleOp> compileModel(CommandContext &command,
                                               std::vector<std::string> *externalFiles = nullptr,
                                               std::vector<std::string> *valuesUsed = nullptr);

/// The graph of `module`, or null after printing the error (naming the model).
mlir::func::FuncOp entryFunctionOf(mlir::ModuleOp module, const DiagnosticCapture &diagnostics);

/// The imported FP32 graph and the compiled plan of one model, side by side
/// (report and validate compare them).
using compiler::ReferenceAndPlan;

/// Loads the reference and compiles the plan; returns 0, or the exit code
/// after printing the error.
int loadReferenceAndPlan(CommandContext &command, ReferenceAndPlan &out);

/// What report and validate are of: the model and the precision options.
compiler::PlanInfo planInfo();

} // namespace mixprec::tools

#endif // MIXPREC_TOOLS_MIXPREC_CLICOMMON_H
