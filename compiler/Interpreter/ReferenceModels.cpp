//===- ReferenceModels.cpp - FP8 scaling, fusions, and the registration ---===//
#include "compiler/Interpreter/ReferenceModels.h"

#include "common/numerics/BlockScaling.h"
#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"

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

/// The format of an FP8 type (the verifiers make these FP8).
num::Format fp8FormatOf(Type t) { return *graph::storageFormatOf(t); }

/// The BlockLayout of `v` with blocks `block`.
num::BlockLayout blockLayoutOf(Value v, ArrayRef<int64_t> block) {
  return num::BlockLayout::of(shapeOf(v), block[0], block[1]);
}

struct BlockScaleReference : ReferenceModel<BlockScaleReference, graph::BlockScaleOp> {
  /// numerics::computeBlockScales on the input as stored. The scales are
  /// powers of two, so the FP64 mode computes the same ones (from the
  /// input rounded to float: only an amax beyond float range would differ).
  template <typename T> static LogicalResult run(graph::BlockScaleOp op, Evaluator &e) {
    num::BlockLayout layout = blockLayoutOf(op.getInput(), op.getBlock());
    const T *x = e.values<T>(op.getInput());
    std::vector<float> in(x, x + layout.batch * layout.rows * layout.cols);
    std::vector<float> scales(static_cast<size_t>(layout.scaleCount()));
    num::computeBlockScales(fp8FormatOf(op.getFormat()),
                            op.getRecipe() == "mx" ? num::BlockRecipe::Mx : num::BlockRecipe::Block,
                            static_cast<int64_t>(op.getMargin()), layout, in.data(), scales.data());
    e.setFloat(op.getScales(), std::vector<T>(scales.begin(), scales.end()));
    return success();
  }
};

struct BlockQuantizeReference : ReferenceModel<BlockQuantizeReference, graph::BlockQuantizeOp> {
  /// numerics::blockQuantize; the FP64 mode keeps x * scale unrounded (as
  /// every result of that mode is: no storage rounding), NaN for a NaN scale.
  template <typename T> static LogicalResult run(graph::BlockQuantizeOp op, Evaluator &e) {
    num::BlockLayout layout = blockLayoutOf(op.getInput(), op.getBlock());
    const T *x = e.values<T>(op.getInput());
    const T *s = e.values<T>(op.getScales());
    std::vector<T> out = e.alloc<T>(op.getOutput());
    if constexpr (std::is_same_v<T, float>) {
      num::blockQuantize(fp8FormatOf(elementTypeOf(op.getOutput())), layout, x, s, out.data());
    } else {
      for (int64_t b = 0; b < layout.batch; ++b)
        for (int64_t r = 0; r < layout.rows; ++r)
          for (int64_t c = 0; c < layout.cols; ++c) {
            const int64_t i = (b * layout.rows + r) * layout.cols + c;
            T scale = s[(b * layout.scaleRows() + r / layout.blockRows) * layout.scaleCols() +
                        c / layout.blockCols];
            out[i] = std::isfinite(x[i]) && std::isfinite(scale) ? x[i] * scale : T(NAN);
          }
    }
    e.setFloat(op.getOutput(), std::move(out));
    return success();
  }
};

struct AllReduceReference : ReferenceModel<AllReduceReference, graph::AllReduceOp> {
  /// The interpreter is one process, a job of one rank: the sum, mean and
  /// max of one contribution are that contribution.
  template <typename T> static LogicalResult run(graph::AllReduceOp op, Evaluator &e) {
    HostTensor value = e.get(op.getInput());
    e.set(op.getOutput(), std::move(value));
    return success();
  }
};

/// rank_slice and all_gather: the interpreter is a job of one rank, so
/// only a step compiled for one rank runs (the slice and the gather are
/// copies there).
template <typename Op> struct OneRankReference : ReferenceModel<OneRankReference<Op>, Op> {
  template <typename T> static LogicalResult run(Op op, Evaluator &e) {
    if (op.getWorld() != 1)
      return op.emitOpError() << "was compiled for a job of " << op.getWorld()
                              << " ranks; the interpreter is one process";
    HostTensor value = e.get(op.getInput());
    e.set(op.getOutput(), std::move(value));
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
  graph::BlockScaleOp::attachInterface<BlockScaleReference>(*ctx);
  graph::BlockQuantizeOp::attachInterface<BlockQuantizeReference>(*ctx);
  graph::AllReduceOp::attachInterface<AllReduceReference>(*ctx);
  graph::RankSliceOp::attachInterface<OneRankReference<graph::RankSliceOp>>(*ctx);
  graph::AllGatherOp::attachInterface<OneRankReference<graph::AllGatherOp>>(*ctx);
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
