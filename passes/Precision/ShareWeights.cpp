//===- ShareWeights.cpp - --mp-share-weights -------------------------------===//
//
// A weight read both by a low-precision GEMM (through the cast that
// --mp-insert-casts put before it) and by a data-movement op that keeps
// FP32 only because its inputs are constants (GPT-2's token embedding,
// which is also its LM head) would be stored twice: once in FP32, once in
// BF16. Data movement commutes with rounding (gather(round(W)) =
// round(gather(W))), so the data-movement op reads the rounded copy and its
// result is widened back, exactly, to the FP32 its users were given: the
// weight is stored once, at the dtype its GEMM needs.
//
// Only ops whose dtype came from "follow:constant-inputs" move: a dtype a
// policy, an override or --keep-fp32 chose stays as chosen. FP8 copies
// (quantized with a scale by --mp-insert-scaling) are left alone: reading
// them back is not a plain widening.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Graph/IR/GraphInterfaces.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_SHAREWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

/// The reason of the dtype an FP32 constant's data-movement reader got only
/// because its inputs are constants.
constexpr llvm::StringLiteral kConstantInputsReason = "follow:constant-inputs";

/// Whether `op` is a data-movement op reading `weight` as its only float
/// operand, in FP32 because its inputs are constants.
bool movesOnlyTheWeight(Operation *op, Value weight) {
  if (!op->hasTrait<graph::OpTrait::DataMovement>() || op->getNumResults() != 1)
    return false;
  auto reason = op->getAttrOfType<StringAttr>(graph::GraphDialect::kReasonAttr);
  if (!reason || reason.getValue() != kConstantInputsReason)
    return false;
  for (Value operand : op->getOperands())
    if (isa<FloatType>(getElementTypeOrSelf(operand.getType())) && operand != weight)
      return false;
  return getElementTypeOrSelf(op->getResult(0).getType()).isF32();
}

/// Rewrites the readers of one FP32 constant when it is also cast to a
/// single 16-bit dtype; returns whether anything changed.
bool shareWeight(graph::ConstantOp weight) {
  Value w = weight.getResult();
  if (!getElementTypeOrSelf(w.getType()).isF32())
    return false;
  SmallVector<graph::CastOp> casts;
  SmallVector<Operation *> movers;
  for (Operation *user : w.getUsers()) {
    if (auto cast = dyn_cast<graph::CastOp>(user)) {
      Type to = getElementTypeOrSelf(cast.getType());
      if (!to.isBF16() && !to.isF16())
        return false;
      casts.push_back(cast);
    } else if (movesOnlyTheWeight(user, w)) {
      movers.push_back(user);
    } else {
      return false; // another reader needs the FP32 weight anyway
    }
  }
  if (casts.empty() || movers.empty())
    return false;
  Type narrow = getElementTypeOrSelf(casts.front().getType());
  if (llvm::any_of(casts, [&](graph::CastOp c) {
        return getElementTypeOrSelf(c.getType()) != narrow;
      }))
    return false; // two copies either way
  // One cast, right after the weight, serves every reader.
  graph::CastOp copy = casts.front();
  copy->moveAfter(weight);
  for (graph::CastOp other : llvm::drop_begin(casts)) {
    other.getResult().replaceAllUsesWith(copy.getResult());
    other->erase();
  }
  MLIRContext *ctx = weight->getContext();
  for (Operation *mover : movers) {
    Value result = mover->getResult(0);
    auto wide = cast<RankedTensorType>(result.getType());
    mover->replaceUsesOfWith(w, copy.getResult());
    result.setType(wide.clone(narrow));
    mover->setAttr(graph::GraphDialect::kPrecisionAttr, TypeAttr::get(narrow));
    mover->setAttr(graph::GraphDialect::kReasonAttr,
                   StringAttr::get(ctx, "follow:shared-weight"));
    OpBuilder builder(ctx);
    builder.setInsertionPointAfter(mover);
    auto widen = builder.create<graph::CastOp>(mover->getLoc(), wide, result);
    result.replaceAllUsesExcept(widen.getResult(), widen);
  }
  return true;
}

struct ShareWeightsPass : public impl::ShareWeightsPassBase<ShareWeightsPass> {
  void runOnOperation() override {
    SmallVector<graph::ConstantOp> weights;
    getOperation().walk([&](graph::ConstantOp c) { weights.push_back(c); });
    for (graph::ConstantOp c : weights)
      shareWeight(c);
  }
};

} // namespace
} // namespace mixprec::passes
