//===- KernelUtils.cpp - what kernels are made of --------------------------===//
#include "passes/KernelUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace mixprec::passes {

bool isElementwiseKernelOp(Operation *op) {
  using namespace graph;
  return isa<AddOp, SubOp, MulOp, DivOp, PowOp, NegOp, ReluOp, GeluOp, TanhOp, SigmoidOp, ExpOp,
             LogOp, SqrtOp, RsqrtOp, ErfOp, ReciprocalOp, CastOp, WhereOp, QuantizeOp,
             DequantizeOp>(op);
}

bool isGemmOp(Operation *op) {
  using namespace graph;
  return isa<MatmulOp, LinearOp, ScaledMatmulOp, ScaledLinearOp>(op);
}

bool isReductionOp(Operation *op) {
  using namespace graph;
  return isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp, ReduceSumOp, ReduceMeanOp,
             ReduceMaxOp>(op);
}

int64_t rowReductionDims(Operation *op) {
  using namespace graph;
  if (!isReductionOp(op))
    return -1;
  int64_t rank = cast<RankedTensorType>(op->getOperand(0).getType()).getRank();
  auto trailing = [&](ArrayRef<int64_t> axes) -> int64_t {
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[axes.size() - 1 - i] != rank - 1 - static_cast<int64_t>(i))
        return -1;
    return static_cast<int64_t>(axes.size());
  };
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case<SoftmaxOp, LogSoftmaxOp>([&](auto o) {
        return static_cast<int64_t>(o.getAxis()) == rank - 1 ? 1 : -1;
      })
      .Case<LayerNormOp, RmsNormOp>(
          [&](auto o) { return rank - static_cast<int64_t>(o.getAxis()); })
      .Case<ReduceSumOp, ReduceMeanOp, ReduceMaxOp>(
          [&](auto o) { return trailing(o.getAxes()); })
      .Default([](Operation *) { return -1; });
}

bool isScalarConstant(Value v) {
  return v.getDefiningOp<graph::ConstantOp>() &&
         cast<RankedTensorType>(v.getType()).getNumElements() == 1;
}

} // namespace mixprec::passes
