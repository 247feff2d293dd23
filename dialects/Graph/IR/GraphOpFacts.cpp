//===- GraphOpFacts.cpp - interface methods the mp ops implement ----------===//
//
// The op facts that depend on operands or attributes (GraphInterfaces.td):
// GEMM costs, FP8 forms and operand roles, and which rows a reduction
// reduces. The facts that are fixed per op are traits in GraphOps.td.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;

namespace mixprec::graph {
namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// 2*K FLOPs per output element, K being the last dim of `contracted`.
int64_t gemmFlops(Value contracted, Value output) {
  ArrayRef<int64_t> shape = tensorType(contracted).getShape();
  int64_t k = shape.empty() ? 1 : shape.back();
  return 2 * tensorType(output).getNumElements() * k;
}

/// How many trailing dims `axes` (increasing) cover, or -1 if they are not
/// the trailing dims of a rank-`rank` tensor.
int64_t trailingDims(ArrayRef<int64_t> axes, int64_t rank) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[axes.size() - 1 - i] != rank - 1 - static_cast<int64_t>(i))
      return -1;
  return static_cast<int64_t>(axes.size());
}

int64_t rankOf(Value v) { return tensorType(v).getRank(); }

/// The one operand of an optional operand group, or null when it is absent.
OpOperand *firstOperand(MutableOperandRange range) {
  return range.size() == 0 ? nullptr : &range[0];
}

} // namespace

//===----------------------------------------------------------------------===//
// GEMM-class ops
//===----------------------------------------------------------------------===//

Value stripViews(Value v) {
  while (Operation *op = v.getDefiningOp()) {
    if (!isa<CastOp, TransposeOp, ReshapeOp>(op))
      break;
    v = op->getOperand(0);
  }
  return v;
}

bool isWeightLike(Value v) {
  v = stripViews(v);
  if (v.getDefiningOp<ConstantOp>())
    return true;
  auto arg = dyn_cast<BlockArgument>(v);
  auto func = arg ? dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()) : nullptr;
  return func && func.getArgAttr(arg.getArgNumber(), GraphDialect::kStateAttr);
}

// A matmul has an FP8 GEMM form when its right operand is a 2-D weight (a
// constant, quantized at compile time, or a trained parameter), or when it
// is a gradient of such a GEMM (mp.grad_operands, which the rule sets only
// then); two activations (attention's) stay in BF16.
bool MatmulOp::hasFp8GemmForm() {
  if ((*this)->hasAttr(GraphDialect::kGradOperandsAttr))
    return true;
  return rankOf(getRhs()) == 2 && isWeightLike(getRhs());
}
int64_t MatmulOp::getFlopCount() { return gemmFlops(getLhs(), getOutput()); }

/// Attention's products: Q.K^T and P.V, 2 flops per multiply-add each
/// (causal masking skips none of them in this count, as FlashAttention's
/// reports count the full square).
static int64_t attentionFlops(Value q, Value k, Value v) {
  ArrayRef<int64_t> qs = tensorType(q).getShape(), ks = tensorType(k).getShape(),
                    vs = tensorType(v).getShape();
  return 2 * qs[0] * qs[1] * qs[2] * ks[2] * (qs[3] + vs[3]);
}
int64_t AttentionOp::getFlopCount() { return attentionFlops(getQuery(), getKey(), getValue()); }
// The backward recomputes Q.K^T and computes dV, dP, dQ and dK: 2.5 times
// the forward's products.
int64_t AttentionGradOp::getFlopCount() {
  return attentionFlops(getQuery(), getKey(), getValue()) * 5 / 2;
}

bool LinearOp::hasFp8GemmForm() { return true; }
int64_t LinearOp::getFlopCount() { return gemmFlops(getInput(), getOutput()); }

int64_t ScaledMatmulOp::getFlopCount() { return gemmFlops(getOperand(0), getOutput()); }
int64_t ScaledLinearOp::getFlopCount() { return gemmFlops(getOperand(0), getOutput()); }

bool MatmulOp::fitsOneGemmCall() {
  ArrayRef<int64_t> a = tensorType(getLhs()).getShape(), b = tensorType(getRhs()).getShape(),
                    out = tensorType(getOutput()).getShape();
  if (a.size() < 2 || b.size() < 2)
    return false;
  auto fits = [&](ArrayRef<int64_t> s) {
    return s.size() == 2 || s.drop_back(2) == out.drop_back(2);
  };
  return fits(a) && fits(b);
}
bool LinearOp::fitsOneGemmCall() { return true; }
bool ScaledMatmulOp::fitsOneGemmCall() { return true; }
bool ScaledLinearOp::fitsOneGemmCall() { return true; }

SmallVector<Value, 2> MatmulOp::getWeightOperands() { return {getLhs(), getRhs()}; }
SmallVector<Value, 2> LinearOp::getWeightOperands() { return {getWeight()}; }
SmallVector<Value, 2> ScaledMatmulOp::getWeightOperands() { return {getLhs(), getRhs()}; }
SmallVector<Value, 2> ScaledLinearOp::getWeightOperands() { return {getWeight()}; }
SmallVector<Value, 2> Conv2dOp::getWeightOperands() { return {getWeight()}; }
SmallVector<Value, 2> ConvOp::getWeightOperands() { return {getWeight()}; }
SmallVector<Value, 2> ConvTransposeOp::getWeightOperands() { return {getWeight()}; }

GemmOperands MatmulOp::getGemmOperands() { return {getLhs(), getRhs(), {}, {}, {}}; }
GemmOperands LinearOp::getGemmOperands() {
  return {getInput(), getWeight(), getBias(), {}, {}, getTransposeWeight()};
}
GemmOperands ScaledMatmulOp::getGemmOperands() {
  return {getLhs(), getRhs(), {}, getLhsScale(), getRhsScale()};
}
GemmOperands ScaledLinearOp::getGemmOperands() {
  GemmOperands g{getInput(),      getWeight(),      getBias(),
                 getInputScale(), getWeightScale(), getTransposeWeight()};
  if (std::optional<ArrayRef<int64_t>> block = getInputBlock())
    g.aBlock.assign(block->begin(), block->end());
  if (std::optional<ArrayRef<int64_t>> block = getWeightBlock())
    g.bBlock.assign(block->begin(), block->end());
  return g;
}

OpOperand *MatmulOp::getBiasOperand() { return nullptr; }
OpOperand *LinearOp::getBiasOperand() { return firstOperand(getBiasMutable()); }
OpOperand *ScaledMatmulOp::getBiasOperand() { return nullptr; }
OpOperand *ScaledLinearOp::getBiasOperand() { return firstOperand(getBiasMutable()); }

// A matmul with a matrix on the right is a linear without transpose; a
// batched right operand has no bias epilogue.
Operation *MatmulOp::buildWithBias(OpBuilder &builder, Value bias, Type resultType) {
  if (rankOf(getRhs()) != 2)
    return nullptr;
  return builder.create<LinearOp>(getLoc(), resultType, getLhs(), getRhs(), bias,
                                  builder.getBoolAttr(false), getAccTypeAttr());
}
Operation *LinearOp::buildWithBias(OpBuilder &builder, Value bias, Type resultType) {
  if (getBias())
    return nullptr;
  return builder.create<LinearOp>(getLoc(), resultType, getInput(), getWeight(), bias,
                                  getTransposeWeightAttr(), getAccTypeAttr());
}
Operation *ScaledMatmulOp::buildWithBias(OpBuilder &builder, Value bias, Type resultType) {
  if (rankOf(getRhs()) != 2)
    return nullptr;
  return builder.create<ScaledLinearOp>(getLoc(), resultType, getLhs(), getRhs(), getLhsScale(),
                                        getRhsScale(), bias, builder.getBoolAttr(false),
                                        getAccTypeAttr(), nullptr, nullptr);
}
Operation *ScaledLinearOp::buildWithBias(OpBuilder &builder, Value bias, Type resultType) {
  if (getBias())
    return nullptr;
  return builder.create<ScaledLinearOp>(
      getLoc(), resultType, getInput(), getWeight(), getInputScale(), getWeightScale(), bias,
      getTransposeWeightAttr(), getAccTypeAttr(), getInputBlockAttr(), getWeightBlockAttr());
}

// Each output element sums C/groups * kH * kW products.
int64_t Conv2dOp::getFlopCount() {
  ArrayRef<int64_t> w = tensorType(getWeight()).getShape();
  return 2 * tensorType(getOutput()).getNumElements() * w[1] * w[2] * w[3];
}

// Each output element sums C/groups * prod(k) products.
int64_t ConvOp::getFlopCount() {
  ArrayRef<int64_t> w = tensorType(getWeight()).getShape();
  int64_t perOutput = 1;
  for (int64_t d : w.drop_front(1))
    perOutput *= d;
  return 2 * tensorType(getOutput()).getNumElements() * perOutput;
}

// Each input element meets M/groups * prod(k) weights.
int64_t ConvTransposeOp::getFlopCount() {
  ArrayRef<int64_t> w = tensorType(getWeight()).getShape();
  int64_t perInput = 1;
  for (int64_t d : w.drop_front(1))
    perInput *= d;
  return 2 * tensorType(getInput()).getNumElements() * perInput;
}

//===----------------------------------------------------------------------===//
// Row reductions
//===----------------------------------------------------------------------===//

int64_t SoftmaxOp::getRowReductionDims() {
  return static_cast<int64_t>(getAxis()) == rankOf(getInput()) - 1 ? 1 : -1;
}
int64_t LogSoftmaxOp::getRowReductionDims() {
  return static_cast<int64_t>(getAxis()) == rankOf(getInput()) - 1 ? 1 : -1;
}
// Norms normalize over every dim from `axis` on.
int64_t LayerNormOp::getRowReductionDims() {
  return rankOf(getInput()) - static_cast<int64_t>(getAxis());
}
int64_t RmsNormOp::getRowReductionDims() {
  return rankOf(getInput()) - static_cast<int64_t>(getAxis());
}
int64_t ReduceSumOp::getRowReductionDims() {
  return trailingDims(getAxes(), rankOf(getInput()));
}
int64_t ReduceMeanOp::getRowReductionDims() {
  return trailingDims(getAxes(), rankOf(getInput()));
}
int64_t ReduceMaxOp::getRowReductionDims() {
  return trailingDims(getAxes(), rankOf(getInput()));
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

// A reshape is a view of its input's bytes (an mpk.alias): it moves none.
int64_t ReshapeOp::getByteCount() { return 0; }

bool computesInTf32(Operation *op) {
  auto precision = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr);
  return precision && isa<FloatTF32Type>(precision.getValue());
}

} // namespace mixprec::graph
