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

#include "dialects/Graph/IR/GraphDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/Graph/IR/GraphOps.h.inc"

#endif // MIXPREC_DIALECTS_GRAPH_IR_GRAPHOPS_H
