//===- KernelUtils.cpp - what kernels are made of --------------------------===//
#include "passes/KernelUtils.h"

#include "dialects/Graph/IR/GraphOps.h"


using namespace mlir;

namespace mixprec::passes {

bool isElementwiseKernelOp(Operation *op) {
  return op->hasTrait<graph::OpTrait::ElementwiseKernel>();
}

bool isGemmOp(Operation *op) { return op->hasTrait<graph::OpTrait::GemmKernel>(); }

bool isReductionOp(Operation *op) { return op->hasTrait<graph::OpTrait::RowReductionKernel>(); }

int64_t rowReductionDims(Operation *op) { return graph::rowReductionDimsOf(op); }

bool isScalarConstant(Value v) {
  return v.getDefiningOp<graph::ConstantOp>() &&
         cast<RankedTensorType>(v.getType()).getNumElements() == 1;
}

} // namespace mixprec::passes
