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
#include <set>
#include <string>
#include <vector>

namespace mixprec::compiler {

struct OnnxImportOptions {
  /// Shapes for graph inputs by name (`--shape x=2x128`). The model's
  /// fixed dims must agree; its symbolic dims (dim_param) take the given
  /// sizes, consistently across inputs; a name that is not a graph input
  /// (or names an initializer) is an error.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// Sizes of symbolic dims by dim_param (`--shape batch=8`); a name no
  /// graph input uses is an error.
  std::map<std::string, int64_t> dimParams;
  /// Shapes of the data at hand (`mixprec run --input`): they bind the
  /// symbolic and unknown dims of inputs whose declared shape is not fully
  /// static, with the checks of inputShapes; a static input ignores them
  /// (the run itself compares its data).
  std::map<std::string, std::vector<int64_t>> dataShapes;
  /// Every name of dataShapes must be a graph input (training data: data
  /// for a name the model does not take is an error naming it).
  bool dataMustBeInputs = false;
  /// Values of small integer inputs at hand (`mixprec run --input`): where
  /// an op needs an input at compile time (Reshape's shape, ReduceSum's
  /// axes, Slice's starts given as graph inputs), the value given is used,
  /// and `onValueUsed` is told the input's name (the module is then
  /// specialised to that value). Nowhere else: data stays data.
  std::map<std::string, std::vector<int64_t>> dataValues;
  /// The same for small float inputs (Resize's scales given as an input).
  std::map<std::string, std::vector<float>> dataFloatValues;
  std::function<void(const std::string &)> onValueUsed;
  /// Graph inputs (of dataValues/dataFloatValues) that are the given
  /// constants from the start, everywhere they are read: the importer adds
  /// one and imports again when a compile-time input is computed from it at
  /// run time (a CenterCropPad's pads from its `shape` input). Callers leave
  /// it empty.
  std::set<std::string> pinnedInputs;
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
