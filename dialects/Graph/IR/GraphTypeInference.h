//===- GraphTypeInference.h - result types shared by op classes -*- C++ -*-===//
//
// The inference rules that whole ODS op classes share (element-wise binary
// ops, reductions); their inferReturnTypeComponents, generated from
// GraphOps.td, call these. GraphTypeInference.cpp has the rest.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_DIALECTS_GRAPH_IR_GRAPHTYPEINFERENCE_H
#define MIXPREC_DIALECTS_GRAPH_IR_GRAPHTYPEINFERENCE_H

#include "mlir/Interfaces/InferTypeOpInterface.h"

namespace mixprec::graph::detail {

/// Element-wise binary ops: the operands broadcast; the element type is the lhs's.
mlir::LogicalResult
inferBroadcastResult(std::optional<mlir::Location> location, mlir::Value lhs, mlir::Value rhs,
                     llvm::SmallVectorImpl<mlir::ShapedTypeComponents> &results);

/// Predicates: the operands broadcast; the element type is i1.
mlir::LogicalResult
inferPredicateResult(std::optional<mlir::Location> location, mlir::Value lhs, mlir::Value rhs,
                     llvm::SmallVectorImpl<mlir::ShapedTypeComponents> &results);

/// Reductions: `input` without (or with unit) `axes`, same element type.
mlir::LogicalResult inferReduceResult(std::optional<mlir::Location> location, mlir::Value input,
                                      llvm::ArrayRef<int64_t> axes, bool keepDims,
                                      llvm::SmallVectorImpl<mlir::ShapedTypeComponents> &results);

} // namespace mixprec::graph::detail

#endif // MIXPREC_DIALECTS_GRAPH_IR_GRAPHTYPEINFERENCE_H
