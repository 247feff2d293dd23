//===- OnnxPipelineFuzzer.cpp - libFuzzer entry: ONNX import and pipelines -===//
//
// Bytes -> importOnnxBuffer -> runPrecisionPipeline (at a precision picked
// from the bytes) -> runKernelPipeline: what `mixprec compile -o M.mpk` does
// before writing. A bad model must end in a one-line error, never a crash,
// a sanitizer report, a hang or unbounded memory. External data is looked up
// in a folder that does not exist, so no input reaches the file system.
// Seeds: tests/fuzz/corpus/onnx (tests/fuzz/make_corpus.py).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporter.h"
#include "compiler/Pipeline/Pipeline.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

/// Stands for the model file; its folder does not exist.
constexpr const char *kModelName = "/nonexistent-mixprec-fuzz/model.onnx";

/// The precision for one input: a hash of its bytes, so that a finding
/// reproduces from the input alone.
const char *pickPrecision(const uint8_t *data, size_t size) {
  static const char *const kPrecisions[] = {"fp32", "tf32", "bf16", "fp16", "fp8"};
  uint32_t hash = 2166136261u; // FNV-1a
  for (size_t i = 0; i < size; ++i)
    hash = (hash ^ data[i]) * 16777619u;
  return kPrecisions[hash % 5];
}

/// Whether `error` keeps the CLI's contract for a failure: set, one line.
bool isOneLineError(const std::string &error) {
  return !error.empty() && error.find('\n') == std::string::npos;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: a context interns every attribute it sees, so
  // a shared one would grow with every distinct initializer.
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  context.loadDialect<mixprec::graph::GraphDialect, mixprec::kernel::KernelDialect,
                      mlir::func::FuncDialect>();
  // Errors are checked through the entry points' messages; keep stderr quiet.
  mlir::ScopedDiagnosticHandler quiet(&context, [](mlir::Diagnostic &) { return mlir::success(); });

  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module = mixprec::compiler::importOnnxBuffer(
      context, llvm::StringRef(reinterpret_cast<const char *>(data), size), kModelName, error);
  if (!module) {
    if (!isOneLineError(error))
      __builtin_trap();
    return 0;
  }
  mixprec::compiler::PrecisionOptions options;
  options.precision = pickPrecision(data, size);
  if (!mixprec::compiler::runPrecisionPipeline(*module, options, error)) {
    if (!isOneLineError(error))
      __builtin_trap();
    return 0;
  }
  if (!mixprec::compiler::runKernelPipeline(*module, error) && !isOneLineError(error))
    __builtin_trap();
  return 0;
}
