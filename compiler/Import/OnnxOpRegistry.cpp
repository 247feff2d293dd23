//===- OnnxOpRegistry.cpp - ONNX op type -> converter ---------------------===//
//
// findOp: the op table, one family of rows per converter file
// (OnnxGemm.cpp, OnnxElementwise.cpp, OnnxNormalization.cpp, OnnxShape.cpp,
// OnnxPooling.cpp, OnnxConstants.cpp, OnnxFold.cpp, OnnxComposite.cpp,
// OnnxIndexing.cpp). Each row names the op type, its
// converter and its ONNX schema forms (OpForm), kept next to the converter;
// convertNode checks a node's attributes and arity against the forms before
// the converter runs.
//
// Each converter reads its node's inputs and attributes (following the
// node's opset version where the op changed), computes the result type with
// the mp shape functions, and defines the node's outputs: as mp ops, as
// aliases (Identity, no-op reshapes) or as compile-time constants (Constant,
// Shape, and integer shape arithmetic folded on constants).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"

#include "llvm/ADT/STLExtras.h"

namespace mixprec::compiler::onnx_import {

const Importer::OpInfo *Importer::findOp(llvm::StringRef opType) {
  // Each op's forms (next to its converter) say from which opset it exists.
  using Family = llvm::ArrayRef<OpInfo> (*)();
  static const Family families[] = {
      &Importer::gemmOps,
      &Importer::elementwiseOps,
      &Importer::normalizationOps,
      &Importer::shapeOps,
      &Importer::poolingOps,
      &Importer::constantOps,
      &Importer::foldOps,
      &Importer::compositeOps,
      &Importer::indexingOps,
  };
  for (Family family : families)
    for (const OpInfo &info : family())
      if (opType == info.opType)
        return &info;
  return nullptr;
}

} // namespace mixprec::compiler::onnx_import
