//===- LoadModel.cpp - an .onnx or .mlir model into mp IR ------------------===//
#include "compiler/Compile/Compile.h"

#include "common/FileIO.h"
#include "compiler/Import/OnnxImporter.h"
#include "compiler/Import/OnnxImporterOptions.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mixprec::compiler {
namespace {

/// A diagnostic kept to be emitted again: its message and its notes.
struct KeptDiagnostic {
  std::string message;
  std::vector<std::pair<Location, std::string>> notes;
};

/// The first error of parsing or verifying `.mlir` text, its location
/// written into the message as the file reader always did ("FILE:LINE:COL"
/// for a position in the file, the printed location otherwise).
KeptDiagnostic keepParseError(Diagnostic &diag) {
  KeptDiagnostic kept;
  llvm::raw_string_ostream os(kept.message);
  if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  else
    os << diag.getLocation();
  os << ": " << diag.str();
  for (Diagnostic &note : diag.getNotes())
    kept.notes.emplace_back(note.getLocation(), note.str());
  return kept;
}

/// Parses and verifies `.mlir` text; the first error is emitted again, with
/// its notes, as the one error of the load.
OwningOpRef<ModuleOp> parseMlirFile(MLIRContext &context, const std::string &path) {
  Location unknown = UnknownLoc::get(&context);
  // Only regular files: /dev/zero would be read forever, a FIFO would block.
  std::string text, error;
  if (!common::readRegularFile(path, text, error)) {
    emitError(unknown) << error;
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path), llvm::SMLoc());
  std::optional<KeptDiagnostic> first;
  OwningOpRef<ModuleOp> module;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (!first && diag.getSeverity() == DiagnosticSeverity::Error)
        first = keepParseError(diag);
      return success();
    });
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (module && succeeded(verify(*module)))
      return module;
  }
  if (!first) {
    emitError(unknown) << path << ": cannot parse as MLIR";
    return nullptr;
  }
  InFlightDiagnostic diag = emitError(unknown) << first->message;
  for (auto &[loc, note] : first->notes)
    diag.attachNote(loc) << note;
  return nullptr;
}

} // namespace

OwningOpRef<ModuleOp> loadModel(MLIRContext &context, llvm::StringRef pathRef,
                                const LoadOptions &options) {
  std::string path = pathRef.str();
  // Refused before any reader opens it: a device is read forever, a FIFO blocks.
  if (std::string why = common::whyNotReadable(path); !why.empty()) {
    emitError(UnknownLoc::get(&context)) << path << ": cannot read: " << why;
    return nullptr;
  }
  if (pathRef.ends_with(".onnx")) {
    OnnxImportOptions importOptions;
    importOptions.onExternalFile = options.onExternalFile;
    importOptions.inputShapes = options.inputShapes;
    importOptions.dataShapes = options.dataShapes;
    importOptions.dataValues = options.dataValues;
    importOptions.dataFloatValues = options.dataFloatValues;
    importOptions.onValueUsed = options.onValueUsed;
    std::string error;
    OwningOpRef<ModuleOp> module = importOnnxFile(context, path, importOptions, error);
    if (!module)
      emitError(UnknownLoc::get(&context)) << error;
    return module;
  }
  if (pathRef.ends_with(".mlir")) {
    if (!options.inputShapes.empty()) {
      emitError(UnknownLoc::get(&context))
          << path << ": --shape applies to ONNX models; mp IR is statically shaped";
      return nullptr;
    }
    return parseMlirFile(context, path);
  }
  emitError(UnknownLoc::get(&context))
      << path << ": unknown model format (expected .onnx or .mlir)";
  return nullptr;
}

} // namespace mixprec::compiler
