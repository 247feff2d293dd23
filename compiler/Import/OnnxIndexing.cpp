//===- OnnxIndexing.cpp - index-driven ops ----------------------------------===//
//
// Ops that compute or follow indices (TopK, ArgMax, GatherElements,
// GatherND, ScatterND, CumSum, ...), each an mp op run as a routine.
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

llvm::ArrayRef<Importer::OpInfo> Importer::indexingOps() {
  return {};
}

} // namespace mixprec::compiler::onnx_import
