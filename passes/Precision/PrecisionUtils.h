//===- PrecisionUtils.h - dtype names, op classes, op names ----*- C++ -*-===//
//
// Shared by the precision passes, the report and the CLI: how a dtype is
// spelled, which class of the default policy an op belongs to, and the name
// an op is matched by.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_PRECISIONUTILS_H
#define MIXPREC_PASSES_PRECISIONUTILS_H

#include "passes/OptionTypes.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"

#include <optional>
#include <string>

namespace mixprec::passes {

// Op classes, accumulation and FP8 GEMM forms are op facts: ask the op
// (graph::PrecisionPolicyOpInterface, dialects/Graph/IR/GraphInterfaces.h).

/// Parses fp32/f32, tf32, bf16, fp16/f16, fp8/f8E4M3FN, f8E5M2.
std::optional<mlir::Type> parseDType(mlir::MLIRContext *ctx, llvm::StringRef name);

/// The element type of a precision: f32, tf32, bf16, f16, f8E4M3FN.
mlir::Type dtypeOf(mlir::MLIRContext *ctx, Precision precision);

/// The MLIR spelling of a type ("bf16", "f8E4M3FN").
std::string dtypeName(mlir::Type t);

/// The node name of an op (its NameLoc), or "" when it has none.
std::string opName(mlir::Operation *op);

/// The op type without the dialect prefix ("softmax").
llvm::StringRef opTypeName(mlir::Operation *op);

/// Bytes per element of a storage dtype (tf32 counts as f32).
unsigned dtypeBytes(mlir::Type t);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_PRECISIONUTILS_H
