//===- FoldCasts.cpp - --mp-fold-casts -------------------------------------===//
#include "passes/Passes.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_FOLDCASTSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

//===----------------------------------------------------------------------===//
// --mp-fold-casts
//===----------------------------------------------------------------------===//

struct FoldCastsPass : public impl::FoldCastsPassBase<FoldCastsPass> {
  /// The folders (mp.cast, and mp.amax / mp.quantize reading through exact
  /// widenings) and mp.cast's canonicalization patterns, applied greedily
  /// to the function's ops and to the ops they create. Not the region-wide
  /// driver of --canonicalize: that one also hoists every constant to the
  /// top, merges equal ones and drops their locations, and a weight keeps
  /// its place and its name here (validate names it; the report counts it).
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    RewritePatternSet patterns(&getContext());
    graph::CastOp::getCanonicalizationPatterns(patterns, &getContext());
    SmallVector<Operation *> ops;
    func.getBody().walk([&](Operation *op) { ops.push_back(op); });
    GreedyRewriteConfig config;
    config.strictMode = GreedyRewriteStrictness::ExistingAndNewOps;
    if (failed(applyOpPatternsAndFold(ops, std::move(patterns), config))) {
      func.emitError() << "--mp-fold-casts did not converge";
      return signalPassFailure();
    }
  }
};

} // namespace
} // namespace mixprec::passes
