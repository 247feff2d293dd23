//===- OnnxImporterOptions.h - importer entry point with options -*- C++ -*-===//
//
// The options-taking form of importOnnxFile. The plain form in
// OnnxImporter.h calls this one with default options; a CLI `--shape
// name=1x128` option fills `inputShapes`.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_IMPORT_ONNXIMPORTEROPTIONS_H
#define MIXPREC_COMPILER_IMPORT_ONNXIMPORTEROPTIONS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mixprec::compiler {

struct OnnxImportOptions {
  /// Static shapes for graph inputs by name. An entry replaces the declared
  /// shape entirely (symbolic dims included); a name that is not a graph
  /// input (or names an initializer) is an error.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// When set, called with the path of every external data file the import
  /// reads (a tool uses it to never write over one of its inputs).
  std::function<void(const std::string &)> onExternalFile;
};

/// importOnnxFile with options; same contract as the plain form.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &context,
                                                 const std::string &path,
                                                 const OnnxImportOptions &options,
                                                 std::string &error);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_IMPORT_ONNXIMPORTEROPTIONS_H
