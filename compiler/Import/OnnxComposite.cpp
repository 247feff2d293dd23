//===- OnnxComposite.cpp - ops built from other mp ops ----------------------===//
//
// Ops the importer writes exactly as a few existing mp ops (GroupNorm as a
// reshape and a layer norm, Pad as gathers and concats, ...): no new
// runtime code, and every backend runs them.
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

llvm::ArrayRef<Importer::OpInfo> Importer::compositeOps() {
  return {};
}

} // namespace mixprec::compiler::onnx_import
