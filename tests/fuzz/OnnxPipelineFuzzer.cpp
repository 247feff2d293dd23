//===- OnnxPipelineFuzzer.cpp - libFuzzer entry: ONNX import and pipelines -===//
//
// Bytes -> importOnnxBuffer -> compilePrecision (at a precision picked from
// the bytes) -> compileKernels: what `mixprec compile -o M.mpk` does before
// writing. A bad model must end in an error with a message (and notes with
// messages; the CLI prints each as one escaped line), never a crash,
// a sanitizer report, a hang or unbounded memory. External data is looked up
// in a folder that does not exist, so no input reaches the file system.
// Seeds: tests/fuzz/corpus/onnx (tests/fuzz/make_corpus.py).
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile/Compile.h"
#include "compiler/Import/OnnxImporter.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace {

/// Stands for the model file; its folder does not exist.
constexpr const char *kModelName = "/nonexistent-mixprec-fuzz/model.onnx";

/// The precision for one input: a hash of its bytes, so that a finding
/// reproduces from the input alone.
mixprec::passes::Precision pickPrecision(const uint8_t *data, size_t size) {
  using mixprec::passes::Precision;
  static const Precision kPrecisions[] = {Precision::FP32, Precision::TF32, Precision::BF16,
                                          Precision::FP16, Precision::FP8};
  uint32_t hash = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 16777619u;
  return kPrecisions[hash % 5];
}

/// Whether `error` keeps the importer's contract for a failure: set, one line.
bool isOneLine(const std::string &error) {
  return !error.empty() && error.find('\n') == std::string::npos;
}

/// Whether the diagnostics of a failed pipeline keep the CLI's contract: at
/// least one error, its message and every note saying something (the CLI
/// escapes control characters, so each prints as one line).
bool isCleanFailure(const std::vector<std::vector<std::string>> &errors) {
  if (errors.empty())
    return false;
  for (const std::vector<std::string> &lines : errors)
    if (llvm::any_of(lines, [](const std::string &line) { return line.empty(); }))
      return false;
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: a context interns every attribute it sees, so
  // a shared one would grow with every distinct initializer.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mixprec::compiler::prepareContext(context);
  // Each error as the CLI formats it: its message, then its notes.
  std::vector<std::vector<std::string>> errors;
  mlir::ScopedDiagnosticHandler collect(&context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error) {
      std::vector<std::string> lines{mixprec::compiler::formatDiagnostic(diag)};
      for (mlir::Diagnostic &note : diag.getNotes())
        lines.push_back(mixprec::compiler::formatDiagnostic(note));
      errors.push_back(lines);
    }
    return mlir::success();
  });

  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module = mixprec::compiler::importOnnxBuffer(
      context, llvm::StringRef(reinterpret_cast<const char *>(data), size), kModelName, error);
  if (!module) {
    if (!isOneLine(error))
      __builtin_trap();
    return 0;
  }
  mixprec::passes::PrecisionPipelineOptions options;
  options.precision = pickPrecision(data, size);
  if (failed(mixprec::compiler::compilePrecision(*module, options,
                                                 mixprec::compiler::ExistingPlan::Keep))) {
    if (!isCleanFailure(errors))
      __builtin_trap();
    return 0;
  }
  if (failed(mixprec::compiler::compileKernels(*module)) && !isCleanFailure(errors))
    __builtin_trap();
  return 0;
}
