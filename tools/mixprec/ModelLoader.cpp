//===- ModelLoader.cpp - load an .onnx or .mlir model for the CLI ----------===//
#include "tools/mixprec/ModelLoader.h"

#include "compiler/Import/OnnxImporter.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mixprec::tools {

void loadDialects(MLIRContext &context) {
  context.loadDialect<graph::GraphDialect, func::FuncDialect>();
}

/// Parses `.mlir` text, turning the first diagnostic into the error line.
static OwningOpRef<ModuleOp> parseMlirFile(MLIRContext &context, const std::string &path,
                                           std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = path + ": cannot read: " + buffer.getError().message();
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  std::string firstDiagnostic;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (firstDiagnostic.empty() && diag.getSeverity() == DiagnosticSeverity::Error) {
      llvm::raw_string_ostream os(firstDiagnostic);
      if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
        os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
      else
        os << diag.getLocation();
      os << ": " << diag.str();
    }
    return success();
  });
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module || failed(verify(*module))) {
    error = firstDiagnostic.empty() ? path + ": cannot parse as MLIR" : firstDiagnostic;
    // Diagnostics may span lines (notes, source excerpts); keep the first.
    error = error.substr(0, error.find('\n'));
    return nullptr;
  }
  return module;
}

OwningOpRef<ModuleOp> loadModel(MLIRContext &context, const std::string &path,
                                std::string &error) {
  llvm::StringRef ref(path);
  if (ref.ends_with(".onnx"))
    return compiler::importOnnxFile(context, path, error);
  if (ref.ends_with(".mlir"))
    return parseMlirFile(context, path, error);
  error = path + ": unknown model format (expected .onnx or .mlir)";
  return nullptr;
}

} // namespace mixprec::tools
