//===- GraphCanonicalize.cpp - canonicalization patterns of mp ops --------===//
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;

namespace mixprec::graph {
namespace {

/// mp.mul %x, (mp.sigmoid %x) (either operand order), the form exporters
/// write for SiLU, becomes mp.silu %x: one kernel op, one rounding, and the
/// name a reader and a policy file can use. Only when nothing broadcasts
/// and the sigmoid has no other use (it would otherwise be computed twice).
struct MulOfSigmoidToSilu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rewriter) const override {
    for (auto [x, other] : {std::pair(mul.getLhs(), mul.getRhs()),
                            std::pair(mul.getRhs(), mul.getLhs())}) {
      auto sigmoid = other.getDefiningOp<SigmoidOp>();
      if (!sigmoid || sigmoid.getInput() != x || !sigmoid->hasOneUse() ||
          x.getType() != mul.getType())
        continue;
      // The silu takes the product's location (its node name): that is the
      // value a reader looks for. `mul` is gone after this call.
      rewriter.replaceOpWithNewOp<SiluOp>(mul, mul.getType(), x);
      rewriter.eraseOp(sigmoid);
      return success();
    }
    return failure();
  }
};

/// A second cast of one value to one type is the first: both round the
/// same values the same way. The earlier cast stays, so every user still
/// comes after its operand.
struct MergeDuplicateCasts : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(CastOp cast, PatternRewriter &rewriter) const override {
    for (Operation *user : cast.getInput().getUsers()) {
      auto earlier = dyn_cast<CastOp>(user);
      if (earlier && earlier != cast && earlier.getType() == cast.getType() &&
          earlier->getBlock() == cast->getBlock() && earlier->isBeforeInBlock(cast)) {
        rewriter.replaceOp(cast, earlier.getOutput());
        return success();
      }
    }
    return failure();
  }
};

} // namespace

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<MergeDuplicateCasts>(context);
}

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<MulOfSigmoidToSilu>(context);
}

} // namespace mixprec::graph
