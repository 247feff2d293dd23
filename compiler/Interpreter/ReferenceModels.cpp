//===- ReferenceModels.cpp - FP8 scaling, fusions, and the registration ---===//
#include "compiler/Interpreter/ReferenceModels.h"

#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/DialectRegistry.h"

#include <cmath>

using namespace mlir;
namespace num = mixprec::numerics;

namespace mixprec::compiler {
namespace {

struct AmaxReference : ReferenceModel<AmaxReference, graph::AmaxOp> {
  /// NaN anywhere makes the result NaN (so the scale computed from it is 1).
  template <typename T> static LogicalResult run(graph::AmaxOp op, Evaluator &e) {
    T amax = 0;
    for (T v : floatStorage<T>(e.get(op.getInput())))
      amax = std::isnan(v) || std::isnan(amax) ? NAN : std::max(amax, std::fabs(v));
    e.setFloat(op.getOutput(), std::vector<T>{amax});
    return success();
  }
};

struct Fp8ScaleReference : ReferenceModel<Fp8ScaleReference, graph::Fp8ScaleOp> {
  /// FP32: numerics::fp8Scale; FP64: the same rule unrounded (fp8ScaleExact).
  template <typename T> static LogicalResult run(graph::Fp8ScaleOp op, Evaluator &e) {
    auto format = op.getFormat().isFloat8E5M2() ? num::Format::F8E5M2 : num::Format::F8E4M3FN;
    T amax = e.values<T>(op.getAmax())[0];
    auto margin = static_cast<int64_t>(op.getMargin());
    if constexpr (std::is_same_v<T, float>)
      e.setFloat(op.getScale(), std::vector<float>{num::fp8Scale(format, amax, margin)});
    else
      e.setFloat(op.getScale(), std::vector<double>{num::fp8ScaleExact(format, amax, margin)});
    return success();
  }
};

struct FusionReference : ReferenceModel<FusionReference, graph::FusionOp> {
  /// A fused kernel computes exactly what its ops compute, rounding every
  /// intermediate to its IR dtype; only the memory traffic differs.
  template <typename T> static LogicalResult run(graph::FusionOp op, Evaluator &e) {
    Block &body = op.getBody().front();
    // Copy before inserting: get() refers into the environment, which may rehash.
    for (auto [arg, input] : llvm::zip(body.getArguments(), op.getInputs())) {
      HostTensor value = e.get(input);
      e.set(arg, std::move(value));
    }
    for (Operation &inner : body.without_terminator())
      if (failed(e.execute(&inner)))
        return e.fail(describeOp(&inner) + ": " + e.error());
    Operation *yield = body.getTerminator();
    for (auto [result, yielded] : llvm::zip(op.getResults(), yield->getOperands())) {
      HostTensor value = e.get(yielded);
      e.set(result, std::move(value));
    }
    for (Operation &inner : body.without_terminator())
      for (Value v : inner.getResults())
        e.erase(v);
    for (BlockArgument arg : body.getArguments())
      e.erase(arg);
    return success();
  }
};

} // namespace

void attachScalingAndFusionReferenceModels(MLIRContext *ctx) {
  graph::AmaxOp::attachInterface<AmaxReference>(*ctx);
  graph::Fp8ScaleOp::attachInterface<Fp8ScaleReference>(*ctx);
  graph::FusionOp::attachInterface<FusionReference>(*ctx);
}

void registerReferenceExternalModels(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, graph::GraphDialect *) {
    attachGemmReferenceModels(ctx);
    attachReductionReferenceModels(ctx);
    attachDataMovementReferenceModels(ctx);
    attachScalingAndFusionReferenceModels(ctx);
    attachIndexingReferenceModels(ctx);
  });
}

void registerReferenceExternalModels(MLIRContext &context) {
  DialectRegistry registry;
  registerReferenceExternalModels(registry);
  context.appendDialectRegistry(registry);
}

} // namespace mixprec::compiler
