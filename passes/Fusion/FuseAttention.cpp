//===- FuseAttention.cpp - --mp-fuse-attention -----------------------------===//
//
// Forms mp.attention from what the exporters write for scaled dot-product
// attention. Starting from a matmul whose left operand is a softmax over
// the last axis (optionally behind SDPA's IsNaN guard, `where(is_nan(p), 0,
// p)`, which zeroes rows with every key masked: mp.attention's own
// convention), it walks the scores back to the first matmul through
//
//   mul / div by a splat constant      -> the scale
//   add of a tensor broadcasting to the scores -> the bias (two at most,
//                                          summed; no scale after them)
//   where(constant causal mask, s, fill <= -1e4) (or the mask inverted)
//                                       -> causal
//
// and the two products' operands through splat-constant muls (torch.onnx
// scales q and k by sqrt(scale) each) and transposes (K^T). Every value it
// absorbs must have no other reader (a training step's backward reads the
// probabilities, so its forward stays unfused); shapes must be the rank-4
// [B, H, S, D] the op takes. A causal mask with a finite fill differs from
// -inf only when a row's scores span more than |fill| - 104 (exp(-104)
// underflows FP32), which -1e4 leaves far away.
//
//===----------------------------------------------------------------------===//
#include "passes/Fusion/FuseAttention.h"
#include "passes/Passes.h"

#include "common/Shapes.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"

#include <cmath>
#include <optional>

namespace mixprec::passes {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;

namespace mixprec::passes {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// Whether the constant bool `mask` keeps exactly key j <= i + seqK - seqQ
/// for query i, at every broadcast index (`keep` false: the mask marks the
/// masked keys instead).
bool isCausalMask(Value mask, int64_t seqQ, int64_t seqK, bool keep) {
  DenseElementsAttr attr;
  if (!matchPattern(mask, m_Constant(&attr)) || !attr.getElementType().isInteger(1))
    return false;
  ArrayRef<int64_t> shape = shapeOf(mask);
  if (shape.size() < 2 || shape[shape.size() - 2] != seqQ || shape.back() != seqK)
    return false;
  int64_t index = 0;
  for (bool value : attr.getValues<bool>()) {
    const int64_t j = index % seqK, i = (index / seqK) % seqQ;
    if (value != (keep == (j <= i + seqK - seqQ)))
      return false;
    ++index;
  }
  return true;
}

/// A candidate: the ops to absorb and what they make.
struct Match {
  Value q, k, v;
  /// The bias adds met, nearest the softmax first (T5 adds its relative
  /// position bias and then the mask's): summed into one bias.
  SmallVector<Value, 2> biases;
  double scale = 1.0;
  bool causal = false;
  SmallVector<Operation *> absorbed;
};

/// Whether `v` is read by `user` alone.
bool onlyReadBy(Value v, Operation *user) {
  return llvm::all_of(v.getUsers(), [&](Operation *u) { return u == user; });
}

/// Peels splat-constant scalings off a product operand, multiplying them
/// into `scale`.
Value peelScales(Value v, Match &m) {
  while (auto mul = v.getDefiningOp<graph::MulOp>()) {
    if (!mul->hasOneUse())
      break;
    std::optional<double> c = graph::splatFloatValue(mul.getRhs());
    Value other = mul.getLhs();
    if (!c) {
      c = graph::splatFloatValue(mul.getLhs());
      other = mul.getRhs();
    }
    if (!c || shapeOf(other) != shapeOf(mul.getOutput()))
      break;
    m.scale *= *c;
    m.absorbed.push_back(mul);
    v = other;
  }
  return v;
}

/// K as [B, H, Sk, D] from the first product's right operand [B, H, D, Sk]:
/// through scalings and transposes, composing the permutations; a new
/// transpose only when what is left is not the identity.
Value keyFromTransposed(Value kt, Match &m, OpBuilder &b) {
  SmallVector<int64_t> perm = {0, 1, 3, 2}; // kt = transpose(k, perm)
  Value v = peelScales(kt, m);
  while (auto t = v.getDefiningOp<graph::TransposeOp>()) {
    if (!t->hasOneUse())
      break;
    // v = transpose(x, p) and k = transpose(v, perm) => k = transpose(x, p o perm).
    ArrayRef<int64_t> p = t.getPerm();
    SmallVector<int64_t> composed(4);
    for (int i = 0; i < 4; ++i)
      composed[i] = p[perm[i]];
    perm = composed;
    m.absorbed.push_back(t);
    v = peelScales(t.getInput(), m);
  }
  if (llvm::equal(perm, ArrayRef<int64_t>{0, 1, 2, 3}))
    return v;
  ArrayRef<int64_t> in = shapeOf(v);
  SmallVector<int64_t> shape;
  for (int64_t d : perm)
    shape.push_back(in[d]);
  auto type = RankedTensorType::get(shape, cast<RankedTensorType>(v.getType()).getElementType());
  return b.create<graph::TransposeOp>(v.getLoc(), type, v, b.getDenseI64ArrayAttr(perm));
}

/// Walks the scores `s` (shape `scores`) back to the Q.K^T product, adding
/// what it absorbs to `m`; the product is then m.absorbed's last op.
/// `scaledAfterBias`: a scale was met nearer the softmax than this point, so
/// a bias here would be scaled too (not mp.attention's form).
bool matchScores(Value s, ArrayRef<int64_t> scores, bool scaledAfterBias, Match &m) {
  Operation *def = s.getDefiningOp();
  if (!def || !s.hasOneUse() || shapeOf(s) != scores)
    return false;
  const int64_t seqQ = scores[2], seqK = scores[3];
  if (auto mm = dyn_cast<graph::MatmulOp>(def)) {
    m.absorbed.push_back(mm);
    return true;
  }
  if (auto mul = dyn_cast<graph::MulOp>(def)) {
    std::optional<double> c = graph::splatFloatValue(mul.getRhs());
    Value other = mul.getLhs();
    if (!c) {
      c = graph::splatFloatValue(mul.getLhs());
      other = mul.getRhs();
    }
    if (!c)
      return false;
    m.scale *= *c;
    m.absorbed.push_back(mul);
    return matchScores(other, scores, true, m);
  }
  if (auto div = dyn_cast<graph::DivOp>(def)) {
    std::optional<double> c = graph::splatFloatValue(div.getRhs());
    if (!c || *c == 0.0)
      return false;
    m.scale /= *c;
    m.absorbed.push_back(div);
    return matchScores(div.getLhs(), scores, true, m);
  }
  if (auto add = dyn_cast<graph::AddOp>(def)) {
    if (m.biases.size() == 2 || scaledAfterBias)
      return false;
    // Either operand may carry the chain; the other is the bias.
    for (auto [chain, bias] :
         {std::pair(add.getLhs(), add.getRhs()), std::pair(add.getRhs(), add.getLhs())}) {
      Match attempt = m;
      attempt.biases.push_back(bias);
      attempt.absorbed.push_back(add);
      if (!shapeOf(bias).empty() && matchScores(chain, scores, false, attempt)) {
        m = std::move(attempt);
        return true;
      }
    }
    return false;
  }
  if (auto where = dyn_cast<graph::WhereOp>(def)) {
    // where(mask, s, fill) keeps the keys the mask marks; where(mask, fill,
    // s) masks them.
    for (bool keep : {true, false}) {
      Value chain = keep ? where.getLhs() : where.getRhs();
      std::optional<double> fill = graph::splatFloatValue(keep ? where.getRhs() : where.getLhs());
      if (m.causal || !fill || *fill > -1e4 ||
          !isCausalMask(where.getCondition(), seqQ, seqK, keep))
        continue;
      Match attempt = m;
      attempt.causal = true;
      attempt.absorbed.push_back(where);
      if (matchScores(chain, scores, scaledAfterBias, attempt)) {
        m = std::move(attempt);
        return true;
      }
    }
    return false;
  }
  return false;
}

/// Matches the attention ending in `pv`, the probabilities times V.
std::optional<Match> matchAttention(graph::MatmulOp pv) {
  Match m;
  Value probs = pv.getLhs();
  m.v = pv.getRhs();
  if (shapeOf(probs).size() != 4 || shapeOf(m.v).size() != 4)
    return std::nullopt;
  // SDPA's guard: where(is_nan(p), 0, p).
  if (auto guard = probs.getDefiningOp<graph::WhereOp>()) {
    auto isNan = guard.getCondition().getDefiningOp<graph::IsNaNOp>();
    std::optional<double> zero = graph::splatFloatValue(guard.getLhs());
    if (!isNan || !zero || *zero != 0.0 || isNan.getInput() != guard.getRhs() ||
        !guard->hasOneUse() || !isNan->hasOneUse())
      return std::nullopt;
    Value p = guard.getRhs();
    if (!llvm::all_of(p.getUsers(), [&](Operation *u) { return u == guard || u == isNan; }))
      return std::nullopt;
    m.absorbed.append({guard, isNan});
    probs = p;
  } else if (!probs.hasOneUse()) {
    return std::nullopt;
  }
  auto softmax = probs.getDefiningOp<graph::SoftmaxOp>();
  if (!softmax || softmax.getAxis() != 3)
    return std::nullopt;
  m.absorbed.push_back(softmax);

  // The scores, back to the product.
  ArrayRef<int64_t> scores = shapeOf(softmax.getInput());
  if (!matchScores(softmax.getInput(), scores, /*scaledAfterBias=*/false, m))
    return std::nullopt;
  auto qk = cast<graph::MatmulOp>(m.absorbed.back());
  if (shapeOf(qk.getLhs()).size() != 4 || shapeOf(qk.getRhs()).size() != 4)
    return std::nullopt;
  m.q = peelScales(qk.getLhs(), m);
  m.k = qk.getRhs(); // transposed; keyFromTransposed builds K when rewriting
  return m;
}

struct FuseAttentionPass : public impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override { fuseAttention(getOperation()); }
};

} // namespace

/// The match's bias: none, the one added, or the sum of the two (one
/// float type, their broadcast shape broadcasting to the scores).
FailureOr<Value> combinedBias(const Match &m, OpBuilder &b, ArrayRef<int64_t> q,
                              ArrayRef<int64_t> k) {
  if (m.biases.empty())
    return Value();
  if (m.biases.size() == 1)
    return m.biases[0];
  Value x = m.biases[0], y = m.biases[1];
  Type element = cast<RankedTensorType>(x.getType()).getElementType();
  if (element != cast<RankedTensorType>(y.getType()).getElementType())
    return failure();
  shapes::ShapeOrError sum = shapes::broadcastShapes(shapeOf(x), shapeOf(y));
  const shapes::Shape scores = {q[0], q[1], q[2], k[2]};
  if (!sum.ok() || sum.shape.size() > 4)
    return failure();
  shapes::ShapeOrError all = shapes::broadcastShapes(sum.shape, scores);
  if (!all.ok() || all.shape != scores)
    return failure();
  // Added in the order the scores met them: inner (nearer the product) first.
  return b.create<graph::AddOp>(x.getLoc(), RankedTensorType::get(sum.shape, element), y, x)
      .getOutput();
}

int fuseAttention(func::FuncOp func) {
  SmallVector<graph::MatmulOp> candidates;
  func.walk([&](graph::MatmulOp op) { candidates.push_back(op); });
  int formed = 0;
  for (graph::MatmulOp pv : candidates) {
    std::optional<Match> m = matchAttention(pv);
    if (!m)
      continue;
    OpBuilder b(pv);
    Value k = keyFromTransposed(m->k, *m, b);
    ArrayRef<int64_t> q = shapeOf(m->q), kShape = shapeOf(k), v = shapeOf(m->v);
    auto element = [](Value x) { return cast<RankedTensorType>(x.getType()).getElementType(); };
    if (q.size() != 4 || kShape.size() != 4 || q[0] != kShape[0] || q[1] != kShape[1] ||
        q[3] != kShape[3] || kShape[0] != v[0] || kShape[1] != v[1] || kShape[2] != v[2] ||
        element(m->q) != element(k) || element(k) != element(m->v) || !std::isfinite(m->scale)) {
      if (k != m->k && k.use_empty())
        k.getDefiningOp()->erase();
      continue;
    }
    FailureOr<Value> bias = combinedBias(*m, b, q, kShape);
    if (failed(bias)) {
      if (k != m->k && k.use_empty())
        k.getDefiningOp()->erase();
      continue;
    }
    auto lseType = RankedTensorType::get({q[0], q[1], q[2]}, b.getF32Type());
    auto attention = b.create<graph::AttentionOp>(
        pv.getLoc(), TypeRange{pv.getOutput().getType(), lseType}, m->q, k, m->v, *bias,
        b.getF64FloatAttr(m->scale), b.getBoolAttr(m->causal), TypeAttr());
    pv.getOutput().replaceAllUsesWith(attention.getOutput());
    pv->erase();
    // The absorbed ops, readers first.
    for (Operation *op : m->absorbed)
      if (op->use_empty())
        op->erase();
    ++formed;
  }
  return formed;
}

} // namespace mixprec::passes
