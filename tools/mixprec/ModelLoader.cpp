//===- ModelLoader.cpp - load an .onnx or .mlir model for the CLI ----------===//
#include "tools/mixprec/ModelLoader.h"

#include "common/FileIO.h"
#include "compiler/Import/OnnxImporter.h"
#include "compiler/Import/OnnxImporterOptions.h"
#include "tools/mixprec/CliCommon.h"
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
  compiler::registerReferenceExternalModels(context);
}

/// Parses `.mlir` text, turning the first diagnostic into the error line.
static OwningOpRef<ModuleOp> parseMlirFile(MLIRContext &context, const std::string &path,
                                           std::string &error) {
  // Only regular files: /dev/zero would be read forever, a FIFO would block.
  std::string text;
  if (!common::readRegularFile(path, text, error))
    return nullptr;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path), llvm::SMLoc());
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
  noteInput(path, "the model " + path);
  // Refused before any reader opens it: a device is read forever, a FIFO blocks.
  if (std::string why = common::whyNotReadable(path); !why.empty()) {
    error = path + ": cannot read: " + why;
    return nullptr;
  }
  llvm::StringRef ref(path);
  if (ref.ends_with(".onnx")) {
    compiler::OnnxImportOptions options;
    // External data files are inputs too: no output may replace them.
    options.onExternalFile = [&](const std::string &file) {
      noteInput(file, "external data of the model " + path);
    };
    return compiler::importOnnxFile(context, path, options, error);
  }
  if (ref.ends_with(".mlir"))
    return parseMlirFile(context, path, error);
  error = path + ": unknown model format (expected .onnx or .mlir)";
  return nullptr;
}

} // namespace mixprec::tools
