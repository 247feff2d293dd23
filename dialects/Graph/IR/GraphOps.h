//===- GraphOps.h - the mp graph dialect ------------------------*- C++ -*-===//
#ifndef MIXPREC_DIALECTS_GRAPH_IR_GRAPHOPS_H
#define MIXPREC_DIALECTS_GRAPH_IR_GRAPHOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Graph/IR/GraphInterfaces.h"

#include <optional>

#include "dialects/Graph/IR/GraphDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/Graph/IR/GraphOps.h.inc"

namespace mixprec::graph {
/// `v` read through casts, transposes and reshapes: the value they view.
mlir::Value stripViews(mlir::Value v);
/// Whether `v` is a weight: a constant or a module state (a training step's
/// parameter), read through casts, transposes and reshapes. A matmul by a
/// weight has an FP8 form; one of two activations (attention's) stays in
/// the wider type, as Transformer Engine does.
bool isWeightLike(mlir::Value v);
/// The value of a splat float constant (every element one value), or
/// nullopt.
std::optional<double> splatFloatValue(mlir::Value v);
} // namespace mixprec::graph

#endif // MIXPREC_DIALECTS_GRAPH_IR_GRAPHOPS_H
