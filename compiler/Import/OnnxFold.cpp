//===- OnnxFold.cpp - compile-time evaluation -------------------------------===//
//
// The ops of shape subgraphs (ConstantOfShape, Range, Size, Expand, ...)
// and the evaluator that folds any node whose inputs are all compile-time
// constants, so that the mp graph holds only tensor compute.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::foldOps() {
  return {};
}

} // namespace mixprec::compiler::onnx_import
