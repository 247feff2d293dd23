//===- GraphCanonicalize.cpp - canonicalization patterns of mp ops --------===//
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <optional>

using namespace mlir;

namespace mixprec::graph {
namespace {

/// Gives `to`, which computes what `from` did, `from`'s calibration
/// evidence (its result's amax and underflow share): a graph calibrated
/// before canonicalization keeps static FP8 scales for it.
void keepCalibration(Operation *from, Operation *to) {
  for (StringRef name : {GraphDialect::kCalibAmaxAttr, GraphDialect::kCalibUnderflowAttr})
    if (Attribute a = from->getAttr(name))
      to->setAttr(name, a);
}

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
      // value a reader looks for.
      auto silu = rewriter.create<SiluOp>(mul.getLoc(), mul.getType(), x);
      keepCalibration(mul, silu); // before `mul` is gone
      rewriter.replaceOp(mul, silu);
      rewriter.eraseOp(sigmoid);
      return success();
    }
    return failure();
  }
};

/// Whether a constant exported in FP32 (or FP16/BF16) is meant to be
/// `exact`: within a few FP16 ulps, so that 0.7978845608 or 0.79788456
/// both mean sqrt(2/pi).
bool near(std::optional<double> value, double exact) {
  return value && std::fabs(*value - exact) <= 2e-3 * std::fabs(exact);
}

/// mp.mul's operands, either order: the one `first` accepts first.
template <typename F> std::optional<std::pair<Value, Value>> operandsOf(Operation *op, F first) {
  auto mul = dyn_cast_or_null<MulOp>(op);
  if (!mul)
    return std::nullopt;
  if (first(mul.getLhs()))
    return std::pair(mul.getLhs(), mul.getRhs());
  if (first(mul.getRhs()))
    return std::pair(mul.getRhs(), mul.getLhs());
  return std::nullopt;
}

/// GELU as exporters decompose it becomes one mp.gelu (onnxruntime's
/// GeluFusion and FastGeluFusion do the same), matched at its last
/// product:
///   erf:  x * 0.5 * (1 + erf(x / sqrt 2))       (x / sqrt 2 also x * 0.70710678)
///   tanh: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
///                                              (x^3 as pow(x, 3) or x * x * x)
/// with the products of x, 0.5 and the (1 + ...) factor in any grouping and
/// order, and the sums in either order. Every value it absorbs must have no
/// other reader, and x the product's type (the constants alone broadcast).
/// One op computes the formula in FP32 and rounds once, where the
/// decomposition rounds after each of its eight ops: results move by a few
/// FP32 ulps at FP32, and a low-precision plan rounds once instead of eight
/// times.
struct MulToGelu : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp mul, PatternRewriter &rewriter) const override {
    // The product's factors through single-use products of one type:
    // values and splat constants.
    SmallVector<Value> values;
    SmallVector<Operation *> absorbed;
    double constant = 1.0;
    SmallVector<Value> work = {mul.getLhs(), mul.getRhs()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (std::optional<double> c = splatFloatValue(v)) {
        constant *= *c;
        continue;
      }
      auto inner = v.getDefiningOp<MulOp>();
      if (inner && inner->hasOneUse() && inner.getType() == mul.getType()) {
        absorbed.push_back(inner);
        work.append({inner.getLhs(), inner.getRhs()});
        continue;
      }
      values.push_back(v);
    }
    if (values.size() != 2 || !near(constant, 0.5))
      return failure();
    for (auto [x, onePlus] : {std::pair(values[0], values[1]), std::pair(values[1], values[0])}) {
      if (x.getType() != mul.getType())
        continue;
      std::optional<GeluApproximation> form = matchOnePlus(x, onePlus, absorbed);
      if (!form)
        continue;
      auto gelu = rewriter.create<GeluOp>(mul.getLoc(), mul.getType(), x, *form);
      keepCalibration(mul, gelu); // before `mul` is gone
      rewriter.replaceOp(mul, gelu);
      // Readers first: each absorbed op's value is read only by the next.
      for (Operation *op : absorbed)
        if (op->use_empty())
          rewriter.eraseOp(op);
      return success();
    }
    return failure();
  }

private:
  /// `v` == 1 + erf(x / sqrt 2) or 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)),
  /// every op single-use; appends the ops to `absorbed` (readers first).
  static std::optional<GeluApproximation> matchOnePlus(Value x, Value v,
                                                       SmallVector<Operation *> &absorbed) {
    auto add = v.getDefiningOp<AddOp>();
    if (!add || !add->hasOneUse() || add.getType() != x.getType())
      return std::nullopt;
    Value t = near(splatFloatValue(add.getLhs()), 1.0)   ? add.getRhs()
              : near(splatFloatValue(add.getRhs()), 1.0) ? add.getLhs()
                                                         : Value();
    if (!t || !t.hasOneUse())
      return std::nullopt;
    SmallVector<Operation *> ops = {add};
    std::optional<GeluApproximation> form;
    if (auto erf = t.getDefiningOp<ErfOp>()) {
      ops.push_back(erf);
      if (matchScaledX(x, erf.getInput(), M_SQRT1_2, ops))
        form = GeluApproximation::none;
    } else if (auto tanh = t.getDefiningOp<TanhOp>()) {
      ops.push_back(tanh);
      if (matchTanhArgument(x, tanh.getInput(), ops))
        form = GeluApproximation::tanh;
    }
    if (form)
      absorbed.append(ops.begin(), ops.end());
    return form;
  }

  /// `v` == x * k (either order) or x / (1 / k), single-use.
  static bool matchScaledX(Value x, Value v, double k, SmallVector<Operation *> &ops) {
    if (!v.hasOneUse())
      return false;
    if (auto div = v.getDefiningOp<DivOp>()) {
      if (div.getLhs() != x || !near(splatFloatValue(div.getRhs()), 1.0 / k))
        return false;
      ops.push_back(div);
      return true;
    }
    auto pair = operandsOf(v.getDefiningOp(), [&](Value a) { return a == x; });
    if (!pair || !near(splatFloatValue(pair->second), k))
      return false;
    ops.push_back(v.getDefiningOp());
    return true;
  }

  /// `v` == sqrt(2/pi) * (x + 0.044715 * x^3), each op single-use.
  static bool matchTanhArgument(Value x, Value v, SmallVector<Operation *> &ops) {
    if (!v.hasOneUse())
      return false;
    auto scaled = operandsOf(
        v.getDefiningOp(), [](Value a) { return near(splatFloatValue(a), std::sqrt(2.0 / M_PI)); });
    if (!scaled || !scaled->second.hasOneUse())
      return false;
    ops.push_back(v.getDefiningOp());
    auto sum = scaled->second.getDefiningOp<AddOp>();
    if (!sum)
      return false;
    Value cubic = sum.getLhs() == x ? sum.getRhs() : sum.getRhs() == x ? sum.getLhs() : Value();
    if (!cubic || !cubic.hasOneUse())
      return false;
    ops.push_back(sum);
    auto term = operandsOf(cubic.getDefiningOp(),
                           [](Value a) { return near(splatFloatValue(a), 0.044715); });
    if (!term || !term->second.hasOneUse())
      return false;
    ops.push_back(cubic.getDefiningOp());
    Value cube = term->second;
    if (auto pow = cube.getDefiningOp<PowOp>()) {
      std::optional<double> e = splatFloatValue(pow.getRhs());
      if (pow.getLhs() != x || !e || *e != 3.0)
        return false;
      ops.push_back(pow);
      return true;
    }
    // x * (x * x) or (x * x) * x.
    auto outer = operandsOf(cube.getDefiningOp(), [&](Value a) { return a == x; });
    if (!outer || !outer->second.hasOneUse())
      return false;
    auto square = outer->second.getDefiningOp<MulOp>();
    if (!square || square.getLhs() != x || square.getRhs() != x)
      return false;
    ops.push_back(cube.getDefiningOp());
    ops.push_back(square);
    return true;
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

std::optional<double> splatFloatValue(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

void CastOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<MergeDuplicateCasts>(context);
}

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<MulOfSigmoidToSilu, MulToGelu>(context);
}

} // namespace mixprec::graph
