//===- LoadModel.cpp - an .onnx or .mlir model into mp IR ------------------===//
#include "compiler/Compile/Compile.h"
#include "compiler/Compile/BytecodeGuard.h"

#include "common/FileIO.h"
#if MIXPREC_ENABLE_ONNX
#include "compiler/Import/OnnxImporter.h"
#include "compiler/Import/OnnxImporterOptions.h"
#endif
#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Precision/PrecisionUtils.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdio>

#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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
  auto file = dyn_cast<FileLineColLoc>(diag.getLocation());
  if (file && file.getLine() == 0 && file.getColumn() == 0) // bytecode: no position
    os << file.getFilename().getValue() << ": MLIR bytecode";
  else if (file)
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn();
  else
    os << diag.getLocation();
  os << ": " << diag.str();
  for (Diagnostic &note : diag.getNotes())
    kept.notes.emplace_back(note.getLocation(), note.str());
  return kept;
}

/// Whether the file starts as MLIR bytecode does ("ML\xEFR"), whatever its name.
bool hasBytecodeMagic(const std::string &path) {
  char magic[4] = {};
  std::ifstream file(path, std::ios::binary);
  return file.read(magic, sizeof(magic)) && std::memcmp(magic, "ML\xEFR", 4) == 0;
}

/// How to get a file that runs, for the errors about files that do not.
constexpr const char *kRunnableHint =
    "write a runnable one with `mixprec compile MODEL -o FILE.mlirbc` (MLIR bytecode) or "
    "-o FILE.mlir without --elide-weights";

/// Gives every mp.constant dense data: a `dense_resource` blob (MLIR's text
/// form for large data) becomes the dense attribute the compiler reads. A
/// constant without data, elided for reading (`dense_resource<__elided__>`)
/// or naming a blob the file does not hold, is an error: the graph must
/// never run on missing weights.
LogicalResult materializeResources(ModuleOp module, const std::string &path) {
  WalkResult walk = module.walk([&](graph::ConstantOp op) {
    auto resource = dyn_cast<DenseResourceElementsAttr>(op.getValue());
    if (!resource)
      return WalkResult::advance();
    DenseResourceElementsHandle handle = resource.getRawHandle();
    std::string name = passes::opName(op);
    std::string which = "mp.constant" + (name.empty() ? "" : " '" + name + "'");
    AsmResourceBlob *blob = handle.getBlob();
    if (!blob) {
      InFlightDiagnostic diag = emitError(UnknownLoc::get(module.getContext())) << path << ": ";
      if (handle.getKey() == "__elided__")
        diag << "the weights are elided (" << which
             << " is dense_resource<__elided__>): the file was printed for reading; "
             << kRunnableHint;
      else
        diag << which << " names the resource '" << handle.getKey()
             << "', which the file does not hold";
      return WalkResult::interrupt();
    }
    bool splat = false;
    ArrayRef<char> data = blob->getData();
    if (!DenseElementsAttr::isValidRawBuffer(resource.getType(), data, splat)) {
      emitError(UnknownLoc::get(module.getContext()))
          << path << ": " << which << ": resource '" << handle.getKey() << "' holds "
          << data.size() << " bytes, which is not a " << resource.getType();
      return WalkResult::interrupt();
    }
    op.setValueAttr(DenseElementsAttr::getFromRawBuffer(resource.getType(), data));
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();
  // A state's initial value (mp.state_init) likewise.
  for (auto func : module.getOps<func::FuncOp>())
    for (unsigned i = 0; i < func.getNumArguments(); ++i) {
      auto resource =
          func.getArgAttrOfType<DenseResourceElementsAttr>(i, graph::GraphDialect::kStateInitAttr);
      if (!resource)
        continue;
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      bool splat = false;
      if (!blob || !DenseElementsAttr::isValidRawBuffer(resource.getType(), blob->getData(),
                                                        splat))
        return emitError(UnknownLoc::get(module.getContext()))
               << path << ": the initial value of state argument #" << i << " ("
               << graph::GraphDialect::kStateInitAttr << ") is "
               << (blob ? "not a " : "dense_resource without data, not a ")
               << resource.getType() << "; " << kRunnableHint;
      func.setArgAttr(i, graph::GraphDialect::kStateInitAttr,
                      DenseElementsAttr::getFromRawBuffer(resource.getType(), blob->getData()));
    }
  return success();
}

/// Parses and verifies `.mlir` text or MLIR bytecode; the first error is
/// emitted again, with its notes, as the one error of the load.
OwningOpRef<ModuleOp> parseMlirFile(MLIRContext &context, const std::string &path) {
  Location unknown = UnknownLoc::get(&context);
  // Only regular files: /dev/zero would be read forever, a FIFO would block.
  std::string text, error;
  if (!common::readRegularFile(path, text, error)) {
    emitError(unknown) << error;
    return nullptr;
  }
  if (isBytecode(llvm::MemoryBufferRef(text, path)))
    if (std::string why = bytecodeReaderFailure(path, text, prepareContext); !why.empty()) {
      emitError(unknown) << path << ": " << why;
      return nullptr;
    }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, path), llvm::SMLoc());
  std::optional<KeptDiagnostic> first;
  OwningOpRef<ModuleOp> module;
  bool parsed = false;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (!first && diag.getSeverity() == DiagnosticSeverity::Error)
        first = keepParseError(diag);
      return success();
    });
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    parsed = module && succeeded(verify(*module));
  }
  if (parsed)
    return succeeded(materializeResources(*module, path)) ? std::move(module) : nullptr;
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
  // MLIR bytecode is known by its first bytes, under any name.
  const bool bytecode = hasBytecodeMagic(path);
  if (pathRef.ends_with(".onnx") && !bytecode) {
#if !MIXPREC_ENABLE_ONNX
    emitError(UnknownLoc::get(&context))
        << path << ": this mixprec was built without the ONNX importer "
        << "(MIXPREC_ENABLE_ONNX=OFF); give the model as .mlir or .mlirbc";
    return nullptr;
#else
    OnnxImportOptions importOptions;
    importOptions.onExternalFile = options.onExternalFile;
    importOptions.inputShapes = options.inputShapes;
    importOptions.dataShapes = options.dataShapes;
    importOptions.dataMustBeInputs = options.dataMustBeInputs;
    importOptions.dataValues = options.dataValues;
    importOptions.dataFloatValues = options.dataFloatValues;
    importOptions.onValueUsed = options.onValueUsed;
    std::string error;
    OwningOpRef<ModuleOp> module = importOnnxFile(context, path, importOptions, error);
    if (!module)
      emitError(UnknownLoc::get(&context)) << error;
    return module;
#endif
  }
  if (bytecode || pathRef.ends_with(".mlir") || pathRef.ends_with(".mlirbc")) {
    if (!options.inputShapes.empty()) {
      emitError(UnknownLoc::get(&context))
          << path << ": --shape applies to ONNX models; mp IR is statically shaped";
      return nullptr;
    }
    return parseMlirFile(context, path);
  }
  emitError(UnknownLoc::get(&context))
      << path << ": unknown model format (expected .onnx, .mlir or .mlirbc)";
  return nullptr;
}

} // namespace mixprec::compiler
