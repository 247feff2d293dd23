//===- KernelUtils.cpp - what kernels are made of --------------------------===//
#include "passes/KernelUtils.h"

#include "dialects/Graph/IR/GraphOps.h"


using namespace mlir;

namespace mixprec::passes {

std::optional<StringRef> gemmEpilogueOf(Operation *op) {
  auto elementwise = dyn_cast<graph::ElementwiseOpInterface>(op);
  if (!elementwise)
    return std::nullopt;
  switch (elementwise.getScalarFn()) {
  case graph::ScalarFn::Relu:
    return StringRef("relu");
  case graph::ScalarFn::GeluTanh:
    return StringRef("gelu");
  default:
    return std::nullopt;
  }
}

bool isElementwiseKernelOp(Operation *op) {
  return isa<graph::ElementwiseOpInterface>(op);
}

bool isGemmOp(Operation *op) { return op->hasTrait<graph::OpTrait::GemmKernel>(); }

bool isReductionOp(Operation *op) { return op->hasTrait<graph::OpTrait::RowReductionKernel>(); }

int64_t rowReductionDims(Operation *op) { return graph::rowReductionDimsOf(op); }

bool isScalarConstant(Value v) {
  return v.getDefiningOp<graph::ConstantOp>() &&
         cast<RankedTensorType>(v.getType()).getNumElements() == 1;
}

} // namespace mixprec::passes
