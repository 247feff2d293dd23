//===- ModelLoader.h - load an .onnx or .mlir model for the CLI -*- C++ -*-===//
#ifndef MIXPREC_TOOLS_MIXPREC_MODELLOADER_H
#define MIXPREC_TOOLS_MIXPREC_MODELLOADER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace mixprec::tools {

/// Loads the dialects the CLI reads and writes.
void loadDialects(mlir::MLIRContext &context);

/// Imports an `.onnx` file or parses and verifies `mp` IR in `.mlir`. On
/// failure returns null and sets a one-line `error` naming the file.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &context, const std::string &path,
                                            std::string &error);

} // namespace mixprec::tools

#endif // MIXPREC_TOOLS_MIXPREC_MODELLOADER_H
