//===- OnnxImporter.h - ONNX protobuf to the mp dialect ---------*- C++ -*-===//
#ifndef MIXPREC_COMPILER_IMPORT_ONNXIMPORTER_H
#define MIXPREC_COMPILER_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace mixprec::compiler {

/// Imports the ONNX model at `path` into a module holding one `func.func
/// @main` of mp ops, all FP32 (integer and bool tensors keep their types).
/// Graph inputs and outputs are named with `mp.name` argument/result
/// attributes, ops carry their node name as a NameLoc. On failure returns
/// null and sets `error` to one line naming the file and the node or tensor
/// at fault. The context must have the mp and func dialects loaded.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &context,
                                                 const std::string &path, std::string &error);

/// importOnnxFile for a model held in memory (the fuzzer's entry): `name`
/// stands for the file in errors and locations, and external data is looked
/// up in its folder.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxBuffer(mlir::MLIRContext &context,
                                                   llvm::StringRef bytes, const std::string &name,
                                                   std::string &error);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_IMPORT_ONNXIMPORTER_H
