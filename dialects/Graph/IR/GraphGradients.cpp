//===- GraphGradients.cpp - gradient rules of the mp ops -------------------===//
//
// GradientOpInterface (GraphInterfaces.td): each op builds the adjoints of
// its operands from the adjoints of its results, as mp ops. Element-wise ops
// share one rule: the derivative of their ScalarFn (scalarPartials, from
// runtime/format/ScalarFns.def),
// times the result adjoint, reduced to each operand's shape (sumToShape).
// The other ops write their rule below, grouped as GraphOps.td groups them.
// GradBuilder keeps the rules readable as formulas: it computes the result
// type of each op it builds (NumPy broadcasting, reductions, reshapes).
//
// Rules that are exact only under a condition say so: reduce_prod divides
// by the input (not defined at zeros), scatter_nd (reduction none) assumes
// distinct index tuples, max and reduce_max split ties evenly.
//
//===----------------------------------------------------------------------===//
#include "common/Shapes.h"
#include "dialects/Graph/IR/GraphBuilder.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mixprec::shapes;

namespace mixprec::graph {
namespace {

using GradBuilder = GraphBuilder;


/// The location of the ops of `op`'s gradient rule: its node name with
/// ".grad" appended, so that the printed IR names them after the op.
Location gradientLocation(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return NameLoc::get(StringAttr::get(op->getContext(), name.getName().str() + ".grad"),
                            loc);
  if (auto name = dyn_cast<NameLoc>(loc))
    return NameLoc::get(StringAttr::get(op->getContext(), name.getName().str() + ".grad"), loc);
  return loc;
}


/// Marks operand `index` of the GEMM that made `product` as the one that
/// carries the gradient (GraphDialect::kGradOperandsAttr); returns `product`.
Value gradOperand(Value product, int64_t index) {
  Operation *gemm = product.getDefiningOp();
  gemm->setAttr(GraphDialect::kGradOperandsAttr,
                DenseI64ArrayAttr::get(gemm->getContext(), {index}));
  return product;
}

/// The shape of a reduction's input with the reduced dims kept as 1.
SmallVector<int64_t> keptShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> axes) {
  SmallVector<int64_t> kept(shape);
  for (int64_t a : axes)
    kept[a] = 1;
  return kept;
}

/// The dims [from, rank) of a rank-`rank` tensor.
SmallVector<int64_t> trailingAxes(int64_t from, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(from, rank));
}

} // namespace

//===----------------------------------------------------------------------===//
// Element-wise ops: the derivative table
//===----------------------------------------------------------------------===//

namespace {

/// The partial derivatives of the scalar function `fn` with respect to each
/// of its arguments `x` (the op's operands, then its FP32 parameters as
/// rank-0 constants), given its result `y`, as tensors that broadcast to
/// `y`'s shape: one entry per argument, null where the function is not
/// differentiable in it (a select's condition). Failure for functions with
/// no derivative (predicates, logic, FP8 scaling). Each function's rule is
/// the derivative column of runtime/format/ScalarFns.def.
FailureOr<SmallVector<Value>> scalarPartials(ScalarFn fn, GradBuilder &g, ArrayRef<Value> x,
                                             Value y) {
  [[maybe_unused]] auto c = [&](double v) { return g.scalar(v, y); };
  [[maybe_unused]] auto sq = [&](Value v) { return g.mul(v, v); };
  switch (fn) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, cuda, cudaUlp, eval, intOp, epilogue,   \
                     ...)                                                                          \
  case ScalarFn::Name:                                                                             \
    __VA_ARGS__                                                                                    \
    break;
#include "runtime/format/ScalarFns.def"
  }
  return failure();
}

} // namespace

namespace detail {

LogicalResult buildElementwiseGradients(Operation *op, OpBuilder &builder,
                                        ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign(op->getNumOperands(), Value());
  Value dy = resultGrads[0];
  Value y = op->getResult(0);
  // Integer and bool results carry no gradient.
  if (!dy || !isFloatTensor(y))
    return success();
  auto elementwise = cast<ElementwiseOpInterface>(op);
  GradBuilder g(builder, gradientLocation(op));
  SmallVector<Value> args(op->getOperands());
  for (float p : elementwise.getScalarParams())
    args.push_back(g.scalar(p, y));
  FailureOr<SmallVector<Value>> partials = scalarPartials(elementwise.getScalarFn(), g, args, y);
  if (failed(partials))
    return op->emitError() << "no gradient rule for the scalar function '"
                           << stringifyScalarFn(elementwise.getScalarFn()) << "'";
  for (auto [i, x] : llvm::enumerate(op->getOperands())) {
    Value partial = (*partials)[i];
    if (!partial || !isFloatTensor(x))
      continue;
    // The partial derivative is in the operand's dtype; a cast's is 1 in the result's.
    Value contribution = g.mul(dy, g.cast(partial, elementTypeOf(dy)));
    operandGrads[i] = g.cast(g.sumToShape(g.broadcastTo(contribution, shapeOf(y)), shapeOf(x)),
                             elementTypeOf(x));
  }
  return success();
}

} // namespace detail

//===----------------------------------------------------------------------===//
// Helpers of the ops' own rules
//===----------------------------------------------------------------------===//

namespace {

/// Starts a rule: one null adjoint per operand; the result adjoint `dy`
/// of result `result` (null when none reaches it).
Value startRule(Operation *op, ValueRange resultGrads, SmallVectorImpl<Value> &operandGrads,
                unsigned result = 0) {
  operandGrads.assign(op->getNumOperands(), Value());
  return resultGrads[result];
}

/// Stores `grad` as the adjoint of ODS operand group `group` when the op has
/// that (optional) operand and it is a float: cast to the operand's dtype.
template <typename OpT>
void setGrad(OpT op, GradBuilder &g, unsigned group, Value grad,
             SmallVectorImpl<Value> &operandGrads) {
  auto [start, length] = op.getODSOperandIndexAndLength(group);
  if (length != 1 || !grad)
    return;
  Value operand = op->getOperand(start);
  if (isFloatTensor(operand))
    operandGrads[start] = g.cast(grad, elementTypeOf(operand));
}

/// The coordinate along `dim` of each position of `shape`, as a constant of
/// shape [shape..., 1] and element type `t` (one column of index tuples).
Value coordinates(GradBuilder &g, ArrayRef<int64_t> shape, int64_t dim, Type t) {
  int64_t n = numElements(shape), stride = 1;
  for (size_t d = dim + 1; d < shape.size(); ++d)
    stride *= shape[d];
  SmallVector<int64_t> values(n);
  for (int64_t i = 0; i < n; ++i)
    values[i] = (i / stride) % shape[dim];
  SmallVector<int64_t> column(shape);
  column.push_back(1);
  return g.indexConstant(values, column, t);
}

/// Index tuples [S..., rank] (S the shape of `indices`, of the data's rank)
/// addressing, at each position, the element GatherElements reads: the
/// position with dim `axis` replaced by the index.
Value elementTuples(GradBuilder &g, Value indices, int64_t axis) {
  ArrayRef<int64_t> shape = shapeOf(indices);
  SmallVector<int64_t> column(shape);
  column.push_back(1);
  SmallVector<Value> parts;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
    parts.push_back(d == axis ? g.reshape(indices, column)
                              : coordinates(g, shape, d, elementTypeOf(indices)));
  return g.concat(parts, static_cast<int64_t>(shape.size()));
}

/// The adjoint of reading `data` along `axis` at per-element `indices`
/// (GatherElements, TopK's values): `dy` scattered back, repeats summed.
Value scatterAlongAxis(GradBuilder &g, Value data, Value indices, uint64_t axis, Value dy) {
  return g.scatterAdd(shapeOf(data), elementTuples(g, indices, static_cast<int64_t>(axis)), dy);
}

/// The adjoint of a convolution's input: the transposed convolution of `dy`
/// with the same weight ([M, C/groups, k...] read as [C_in, M_out/groups,
/// k...]), with the output padding, or extra end padding (a ceil-mode
/// pooling window past the end), that gives back `inputShape`.
Value convInputGrad(GradBuilder &g, Value dy, Value weight, ArrayRef<int64_t> inputShape,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                    ArrayRef<int64_t> dilations, int64_t groups) {
  size_t dims = inputShape.size() - 2;
  SmallVector<int64_t> endPadded(pads), outputPadding(dims, 0);
  for (size_t s = 0; s < dims; ++s) {
    int64_t k = shapeOf(weight)[2 + s], o = shapeOf(dy)[2 + s];
    int64_t size = strides[s] * (o - 1) + (k - 1) * dilations[s] + 1 - pads[s] - pads[dims + s];
    int64_t missing = inputShape[2 + s] - size;
    if (missing >= 0)
      outputPadding[s] = missing;
    else
      endPadded[dims + s] -= missing;
  }
  return g.convTranspose(dy, weight, strides, endPadded, dilations, outputPadding, groups);
}

/// The adjoint of a convolution's weight (shape `weightShape`, [M, C/groups,
/// k...]) given its input `x` [N, C, S...] and output adjoint `dy` [N, M,
/// O...]: dW[m, c, j] = sum over n, o of dy[n, m, o] x[n, c, o*s + j*d - p].
/// That is itself a grouped convolution, of x with the channels of each
/// group as its batch and N as its channels, by dy with N as its input
/// channels, strides and dilations swapped; it may reach past k (the rows
/// the forward's floor dropped), which the slice cuts.
Value convWeightGrad(GradBuilder &g, Value x, Value dy, ArrayRef<int64_t> weightShape,
                     ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                     ArrayRef<int64_t> dilations, int64_t groups) {
  ArrayRef<int64_t> xs = shapeOf(x);
  int64_t n = xs[0], perGroup = xs[1] / groups;
  SmallVector<int64_t> split{n, groups, perGroup}, merged{perGroup, groups * n};
  SmallVector<int64_t> groupsFirst{2, 1, 0}, swap01{1, 0};
  for (size_t s = 2; s < xs.size(); ++s) {
    split.push_back(xs[s]);
    merged.push_back(xs[s]);
    groupsFirst.push_back(static_cast<int64_t>(s + 1));
    swap01.push_back(static_cast<int64_t>(s));
  }
  Value input = g.reshape(g.transpose(g.reshape(x, split), groupsFirst), merged);
  Value out = g.conv(input, g.transpose(dy, swap01), /*strides=*/dilations, pads,
                     /*dilations=*/strides, groups);
  SmallVector<int64_t> kept{perGroup, weightShape[0]};
  kept.append(weightShape.begin() + 2, weightShape.end());
  return g.transpose(g.sliceFront(out, kept), swap01);
}

/// Every dim of a rank-`rank` tensor but the channel (dim 1).
SmallVector<int64_t> allButChannel(int64_t rank) {
  SmallVector<int64_t> axes{0};
  axes.append(trailingAxes(2, rank));
  return axes;
}

} // namespace

//===----------------------------------------------------------------------===//
// GEMM-class ops
//===----------------------------------------------------------------------===//

// dA = dY B^T and dB = A^T dY, 1-D operands promoted as numpy.matmul does,
// each summed over the batch dims it was broadcast along (for a 2-D B, by
// one GEMM over the flattened rows).
LogicalResult MatmulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Type t = elementTypeOf(dy);
  ArrayRef<int64_t> aShape = shapeOf(getLhs()), bShape = shapeOf(getRhs());
  Value a = g.cast(getLhs(), t), bb = g.cast(getRhs(), t);
  if (aShape.size() == 1)
    a = g.reshape(a, {1, aShape[0]});
  if (bShape.size() == 1)
    bb = g.reshape(bb, {bShape[0], 1});
  Value d = g.reshape(dy, matmulShape(shapeOf(a), shapeOf(bb)).shape);
  Value da = g.matmul(d, g.transposeLast2(bb));
  Value db;
  if (shapeOf(bb).size() == 2 && shapeOf(a).size() > 2) {
    // A 2-D b (a weight) is shared by every row of a: dB is one GEMM over
    // the rows of a and d flattened to [P, K] and [P, N], as mp.linear's
    // rule computes it, not a batched GEMM summed over the batch dims (a
    // 2-D GEMM, which FP8 training runs in cuBLASLt's TN layout).
    int64_t k = shapeOf(a).back(), n = shapeOf(d).back();
    int64_t rows = numElements(shapeOf(a)) / k;
    db = g.matmul(g.transposeLast2(g.reshape(a, {rows, k})), g.reshape(d, {rows, n}));
  } else {
    db = g.matmul(g.transposeLast2(a), d);
  }
  // The gradients of a GEMM by a weight (a constant, or an argument: a
  // parameter when the step is built) are FP8 GEMMs at fp8, as it is.
  Value weight = stripViews(getRhs());
  if (bShape.size() == 2 && (isa<BlockArgument>(weight) || weight.getDefiningOp<ConstantOp>())) {
    gradOperand(da, 0);
    gradOperand(db, 1);
  }
  da = g.sumToShape(da, shapeOf(a));
  db = g.sumToShape(db, shapeOf(bb));
  setGrad(*this, g, 0, g.reshape(da, aShape), operandGrads);
  setGrad(*this, g, 1, g.reshape(db, bShape), operandGrads);
  return success();
}

// dX = dY W^T (a linear with the flag flipped); dW from the rows of X and
// dY flattened to [P, K] and [P, N]; the bias sums dY to its shape.
// One mp.attention_grad: the probabilities are recomputed from the
// forward's log-sum-exp (its second result) inside, never stored. The
// lse result is a by-product nothing differentiates.
LogicalResult AttentionOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Type t = elementTypeOf(dy);
  Value q = g.cast(getQuery(), t), k = g.cast(getKey(), t), v = g.cast(getValue(), t);
  Value out = g.cast(getOutput(), t);
  auto grad = b.create<AttentionGradOp>(
      gradientLocation(*this), TypeRange{q.getType(), k.getType(), v.getType()}, q, k, v, out,
      getLse(), dy, getBias(), getScaleAttr(), getCausalAttr(), TypeAttr());
  setGrad(*this, g, 0, grad.getQueryGrad(), operandGrads);
  setGrad(*this, g, 1, grad.getKeyGrad(), operandGrads);
  setGrad(*this, g, 2, grad.getValueGrad(), operandGrads);
  return success();
}

LogicalResult LinearOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Type t = elementTypeOf(dy);
  Value x = g.cast(getInput(), t), w = g.cast(getWeight(), t);
  bool transposed = getTransposeWeight();
  setGrad(*this, g, 0, gradOperand(g.linear(dy, w, !transposed), 0), operandGrads);
  int64_t k = shapeOf(x).empty() ? 1 : shapeOf(x).back();
  int64_t n = shapeOf(dy).empty() ? 1 : shapeOf(dy).back();
  int64_t rows = numElements(shapeOf(x)) / k;
  Value x2 = g.reshape(x, {rows, k}), d2 = g.reshape(dy, {rows, n});
  Value dw = transposed ? gradOperand(g.matmul(g.transposeLast2(d2), x2), 0)
                        : gradOperand(g.matmul(g.transposeLast2(x2), d2), 1);
  setGrad(*this, g, 1, dw, operandGrads);
  if (getBias())
    setGrad(*this, g, 2, g.sumToShape(dy, shapeOf(getBias())), operandGrads);
  return success();
}

namespace {
/// The rule of mp.conv2d and mp.conv: input by a transposed convolution,
/// weight by a convolution of x with dy, bias by a sum over all but channels.
template <typename OpT>
LogicalResult convGradients(OpT op, OpBuilder &b, ValueRange resultGrads,
                            SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(op, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(op));
  Type t = elementTypeOf(dy);
  Value x = g.cast(op.getInput(), t), w = g.cast(op.getWeight(), t);
  int64_t groups = static_cast<int64_t>(op.getGroups());
  setGrad(op, g, 0,
          convInputGrad(g, dy, w, shapeOf(x), op.getStrides(), op.getPads(), op.getDilations(),
                        groups),
          operandGrads);
  setGrad(op, g, 1,
          convWeightGrad(g, x, dy, shapeOf(w), op.getStrides(), op.getPads(), op.getDilations(),
                         groups),
          operandGrads);
  setGrad(op, g, 2, g.reduceSum(dy, allButChannel(shapeOf(dy).size()), false), operandGrads);
  return success();
}
} // namespace

LogicalResult Conv2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  return convGradients(*this, b, resultGrads, operandGrads);
}
LogicalResult ConvOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return convGradients(*this, b, resultGrads, operandGrads);
}

// The adjoint of a transposed convolution's input is the convolution of dy
// with the same weight (cut to the input's size where the output padding
// reached a stride further); its weight's is convWeightGrad with the roles
// of input and output exchanged.
LogicalResult ConvTransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                              SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Type t = elementTypeOf(dy);
  Value x = g.cast(getInput(), t), w = g.cast(getWeight(), t);
  int64_t groups = static_cast<int64_t>(getGroups());
  Value dx = g.conv(dy, w, getStrides(), getPads(), getDilations(), groups);
  setGrad(*this, g, 0, g.sliceFront(dx, shapeOf(x)), operandGrads);
  setGrad(*this, g, 1,
          convWeightGrad(g, dy, x, shapeOf(w), getStrides(), getPads(), getDilations(), groups),
          operandGrads);
  setGrad(*this, g, 2, g.reduceSum(dy, allButChannel(shapeOf(dy).size()), false), operandGrads);
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations (backward in FP32: every sum accumulates in FP32 and the
// values it sums are FP32, whatever the storage dtype)
//===----------------------------------------------------------------------===//

// dx = y (dy - sum(dy y)).
LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value y = g.toF32(getOutput()), d = g.toF32(dy);
  int64_t axis = static_cast<int64_t>(getAxis());
  Value dot = g.reduceSum(g.mul(d, y), {axis}, /*keepDims=*/true);
  setGrad(*this, g, 0, g.mul(y, g.sub(d, dot)), operandGrads);
  return success();
}

// dx = dy - exp(y) sum(dy).
LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value y = g.toF32(getOutput()), d = g.toF32(dy);
  int64_t axis = static_cast<int64_t>(getAxis());
  Value total = g.reduceSum(d, {axis}, /*keepDims=*/true);
  setGrad(*this, g, 0, g.sub(d, g.mul(g.unary<ExpOp>(y), total)), operandGrads);
  return success();
}

// With xhat = (x - mean) r, r = 1 / sqrt(var + eps) and h = dy * scale:
// dx = r (h - mean(h) - xhat mean(h xhat)); dscale = sum(dy xhat); dbias = sum(dy).
LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value x = g.toF32(getInput()), d = g.toF32(dy);
  SmallVector<int64_t> axes = trailingAxes(getAxis(), shapeOf(x).size());
  Value centered = g.sub(x, g.reduceMean(x, axes));
  Value variance = g.reduceMean(g.mul(centered, centered), axes);
  Value r = g.unary<RsqrtOp>(g.add(variance, g.scalar(getEpsilon().convertToDouble(), x)));
  Value xhat = g.mul(centered, r);
  Value h = getScale() ? g.mul(d, g.toF32(getScale())) : d;
  Value inner = g.sub(g.sub(h, g.reduceMean(h, axes)), g.mul(xhat, g.reduceMean(g.mul(h, xhat), axes)));
  setGrad(*this, g, 0, g.mul(r, inner), operandGrads);
  if (getScale())
    setGrad(*this, g, 1, g.sumToShape(g.mul(d, xhat), shapeOf(getScale())), operandGrads);
  if (getBias())
    setGrad(*this, g, 2, g.sumToShape(d, shapeOf(getBias())), operandGrads);
  return success();
}

// With r = 1 / sqrt(mean(x^2) + eps), xhat = x r, h = dy * scale:
// dx = r (h - xhat mean(h xhat)); dscale = sum(dy xhat).
LogicalResult RmsNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value x = g.toF32(getInput()), d = g.toF32(dy);
  SmallVector<int64_t> axes = trailingAxes(getAxis(), shapeOf(x).size());
  Value r = g.unary<RsqrtOp>(
      g.add(g.reduceMean(g.mul(x, x), axes), g.scalar(getEpsilon().convertToDouble(), x)));
  Value xhat = g.mul(x, r);
  Value h = getScale() ? g.mul(d, g.toF32(getScale())) : d;
  setGrad(*this, g, 0, g.mul(r, g.sub(h, g.mul(xhat, g.reduceMean(g.mul(h, xhat), axes)))),
          operandGrads);
  if (getScale())
    setGrad(*this, g, 1, g.sumToShape(g.mul(d, xhat), shapeOf(getScale())), operandGrads);
  return success();
}

// The inference form is affine in x per channel: y = (x - m) r s + b with
// r = 1 / sqrt(v + eps). dx = dy s r; ds = sum(dy (x - m) r); db = sum(dy);
// dm = -sum(dy) s r; dv = -sum(dy (x - m)) s r^3 / 2.
LogicalResult BatchNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  int64_t rank = shapeOf(getInput()).size(), channels = shapeOf(getInput())[1];
  SmallVector<int64_t> perChannel(rank, 1);
  perChannel[1] = channels;
  auto channel = [&](Value v) { return g.reshape(g.toF32(v), perChannel); };
  Value x = g.toF32(getInput()), d = g.toF32(dy);
  Value r = g.unary<RsqrtOp>(
      g.add(channel(getVariance()), g.scalar(getEpsilon().convertToDouble(), x)));
  Value scale = channel(getScale());
  Value centered = g.sub(x, channel(getMean()));
  SmallVector<int64_t> axes = allButChannel(rank);
  auto sumPerChannel = [&](Value v) { return g.reduceSum(v, axes, /*keepDims=*/false); };
  Value sr = g.mul(scale, r);
  setGrad(*this, g, 0, g.mul(d, sr), operandGrads);
  setGrad(*this, g, 1, sumPerChannel(g.mul(d, g.mul(centered, r))), operandGrads);
  setGrad(*this, g, 2, sumPerChannel(d), operandGrads);
  setGrad(*this, g, 3, g.neg(sumPerChannel(g.mul(d, sr))), operandGrads);
  Value dv = g.mul(g.mul(d, centered), g.mul(sr, g.mul(g.mul(r, r), g.scalar(-0.5, x))));
  setGrad(*this, g, 4, sumPerChannel(dv), operandGrads);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions: the result adjoint, with the reduced dims kept, broadcast back
//===----------------------------------------------------------------------===//

namespace {
/// The result adjoint of a reduction of `input` over `axes`, reshaped to
/// keep the reduced dims (as 1), in the input's dtype.
Value keptAdjoint(GradBuilder &g, Value dy, Value input, ArrayRef<int64_t> axes) {
  return g.cast(g.reshape(dy, keptShape(shapeOf(input), axes)), elementTypeOf(input));
}
} // namespace

LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value d = keptAdjoint(g, dy, getInput(), getAxes());
  setGrad(*this, g, 0, g.broadcastTo(d, shapeOf(getInput())), operandGrads);
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value d = keptAdjoint(g, dy, getInput(), getAxes());
  int64_t count = 1;
  for (int64_t a : getAxes())
    count *= shapeOf(getInput())[a];
  Value spread = g.broadcastTo(g.mul(d, g.scalar(1.0 / double(count), d)), shapeOf(getInput()));
  setGrad(*this, g, 0, spread, operandGrads);
  return success();
}

// The maximum's adjoint goes to the elements equal to it, split evenly
// among ties (as torch.amax).
LogicalResult ReduceMaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value x = getInput();
  Value d = keptAdjoint(g, dy, x, getAxes());
  Value y = keptAdjoint(g, getOutput(), x, getAxes());
  Value mask = g.indicator(g.compare<EqualOp>(x, y), x);
  Value ties = g.reduceSum(mask, getAxes(), /*keepDims=*/true);
  setGrad(*this, g, 0, g.mul(mask, g.div(d, ties)), operandGrads);
  return success();
}

// dx = dy y / x: exact where no reduced element is zero.
LogicalResult ReduceProdOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value x = getInput();
  Value d = keptAdjoint(g, dy, x, getAxes());
  Value y = keptAdjoint(g, getOutput(), x, getAxes());
  setGrad(*this, g, 0, g.mul(g.div(y, x), d), operandGrads);
  return success();
}

// A running sum's adjoint is the running sum of dy the other way.
LogicalResult CumSumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  Value dx = b.create<CumSumOp>(g.loc, dy.getType(), dy, getAxis(), getExclusive(), !getReverse());
  setGrad(*this, g, 0, dx, operandGrads);
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement: the inverse movement, or a scatter-add of what was read
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  setGrad(*this, g, 0, g.reshape(dy, shapeOf(getInput())), operandGrads);
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  SmallVector<int64_t> inverse(getPerm().size());
  for (auto [i, p] : llvm::enumerate(getPerm()))
    inverse[p] = static_cast<int64_t>(i);
  setGrad(*this, g, 0, g.transpose(dy, inverse), operandGrads);
  return success();
}

// Each input's adjoint is its stretch of dy along the axis.
LogicalResult ConcatOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  int64_t axis = static_cast<int64_t>(getAxis()), offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> shape = shapeOf(input);
    SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
    starts[axis] = offset;
    offset += shape[axis];
    operandGrads[i] = b.create<SliceOp>(g.loc, input.getType(), dy, starts, steps);
  }
  return success();
}

// Unit steps: dy padded back with zero blocks (concats). Other steps: dy
// scattered to the positions read (a constant index tuple per element).
LogicalResult SliceOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(dy);
  ArrayRef<int64_t> starts = getStarts(), steps = getSteps();
  if (llvm::all_of(steps, [](int64_t s) { return s == 1; })) {
    Value padded = dy;
    for (size_t d = 0; d < in.size(); ++d) {
      SmallVector<Value> parts;
      SmallVector<int64_t> block(shapeOf(padded));
      if ((block[d] = starts[d]) > 0)
        parts.push_back(g.splat(0.0, elementTypeOf(dy), block));
      parts.push_back(padded);
      if ((block[d] = in[d] - starts[d] - out[d]) > 0)
        parts.push_back(g.splat(0.0, elementTypeOf(dy), block));
      padded = g.concat(parts, static_cast<int64_t>(d));
    }
    setGrad(*this, g, 0, padded, operandGrads);
    return success();
  }
  int64_t rank = static_cast<int64_t>(in.size()), n = numElements(out);
  SmallVector<int64_t> tuples(n * rank);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i;
    for (int64_t d = rank - 1; d >= 0; --d) {
      tuples[i * rank + d] = starts[d] + (rest % out[d]) * steps[d];
      rest /= out[d];
    }
  }
  SmallVector<int64_t> tupleShape(out);
  tupleShape.push_back(rank);
  Value index = g.indexConstant(tuples, tupleShape, b.getI64Type());
  setGrad(*this, g, 0, g.scatterAdd(in, index, dy), operandGrads);
  return success();
}

// data[:axis] + I + data[axis+1:] gathered: dy with the index dims moved to
// the front is scattered (summing repeats) into data with `axis` moved to
// the front, which then moves back.
LogicalResult GatherOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  ArrayRef<int64_t> data = shapeOf(getData()), indices = shapeOf(getIndices());
  int64_t axis = static_cast<int64_t>(getAxis()), ni = static_cast<int64_t>(indices.size());
  int64_t rank = static_cast<int64_t>(data.size());
  SmallVector<int64_t> indicesFirst, axisFirstShape{data[axis]}, back;
  for (int64_t i = 0; i < ni; ++i)
    indicesFirst.push_back(axis + i);
  for (int64_t i = 0; i < axis; ++i)
    indicesFirst.push_back(i);
  for (int64_t i = axis + ni; i < static_cast<int64_t>(shapeOf(dy).size()); ++i)
    indicesFirst.push_back(i);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      axisFirstShape.push_back(data[d]);
  // Dim d of data sits at d + 1 of the axis-first layout (the axis at 0).
  for (int64_t d = 0; d < rank; ++d)
    back.push_back(d < axis ? d + 1 : (d == axis ? 0 : d));
  SmallVector<int64_t> column(indices);
  column.push_back(1);
  Value scattered = g.scatterAdd(axisFirstShape, g.reshape(getIndices(), column),
                                 g.transpose(dy, indicesFirst));
  setGrad(*this, g, 0, g.transpose(scattered, back), operandGrads);
  return success();
}

LogicalResult GatherElementsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                               SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  setGrad(*this, g, 0, scatterAlongAxis(g, getData(), getIndices(), getAxis(), dy), operandGrads);
  return success();
}

// The tuples address slices of data past its batch dims; the batch
// coordinates are prepended so that scatter_nd (no batch dims) reads them.
LogicalResult GatherNdOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  ArrayRef<int64_t> indices = shapeOf(getIndices());
  ArrayRef<int64_t> positions = indices.drop_back();
  SmallVector<Value> parts;
  for (int64_t d = 0; d < static_cast<int64_t>(getBatchDims()); ++d)
    parts.push_back(coordinates(g, positions, d, elementTypeOf(getIndices())));
  parts.push_back(getIndices());
  Value tuples = g.concat(parts, static_cast<int64_t>(indices.size()) - 1);
  setGrad(*this, g, 0, g.scatterAdd(shapeOf(getData()), tuples, dy), operandGrads);
  return success();
}

// The values' adjoint goes back to where each value was taken from.
LogicalResult TopKOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  GradBuilder g(b, gradientLocation(*this));
  setGrad(*this, g, 0, scatterAlongAxis(g, getInput(), getIndices(), getAxis(), dy),
          operandGrads);
  return success();
}

// reduction none: data's adjoint is dy with the overwritten slices zeroed,
// the updates' the slices of dy they landed in (exact for distinct tuples:
// of repeated ones only the last lands). add: dy, and the same slices.
LogicalResult ScatterNdOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(*this, resultGrads, operandGrads);
  if (!dy || !isFloatTensor(dy))
    return success();
  StringRef reduction = getReduction();
  if (reduction != "none" && reduction != "add")
    return emitOpError() << "has no gradient rule for reduction '" << reduction << "'";
  GradBuilder g(b, gradientLocation(*this));
  Value dData = dy;
  if (reduction == "none") {
    Value zeros = g.zerosLike(getUpdates());
    dData = b.create<ScatterNdOp>(g.loc, dy.getType(), dy, getIndices(), zeros, "none");
  }
  setGrad(*this, g, 0, dData, operandGrads);
  ShapeOrError sliceShape = gatherNdShape(shapeOf(dy), shapeOf(getIndices()), 0);
  Value dUpdates = b.create<GatherNdOp>(
      g.loc, RankedTensorType::get(sliceShape.shape, elementTypeOf(dy)), dy, getIndices(), 0);
  setGrad(*this, g, 2, dUpdates, operandGrads);
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

/// Max pooling's adjoint: dy scattered (summed) to the flat input index of
/// each window's maximum, which mp.max_pool_indices gives.
Value maxPoolGrad(GradBuilder &g, Value x, Value dy, ArrayRef<int64_t> kernel,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                  ArrayRef<int64_t> dilations, bool ceilMode) {
  auto indexType = RankedTensorType::get(shapeOf(dy), g.b.getI64Type());
  Value indices = g.b.create<MaxPoolIndicesOp>(g.loc, indexType, x, kernel, strides, pads,
                                               dilations, ceilMode, 0);
  int64_t n = numElements(shapeOf(dy));
  Value flat = g.scatterAdd({numElements(shapeOf(x))}, g.reshape(indices, {n, 1}),
                            g.reshape(g.cast(dy, elementTypeOf(x)), {n}));
  return g.reshape(flat, shapeOf(x));
}

/// Average pooling's divisor at each output position, as the CPU kernel
/// counts it (runtime/kernels/Conv.cpp avgPool): the taps inside the input, or
/// with `countIncludePad` inside [-padBegin, size + padEnd); [1, 1, O...].
Value avgPoolDivisors(GradBuilder &g, Value x, Value y, ArrayRef<int64_t> kernel,
                      ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                      ArrayRef<int64_t> dilations, bool countIncludePad) {
  ArrayRef<int64_t> in = shapeOf(x).drop_front(2), out = shapeOf(y).drop_front(2);
  size_t dims = in.size();
  SmallVector<int64_t> shape{1, 1};
  shape.append(out.begin(), out.end());
  int64_t n = numElements(out);
  std::vector<float> divisors(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t count = 1, rest = i;
    for (int64_t d = static_cast<int64_t>(dims) - 1; d >= 0; --d) {
      int64_t start = (rest % out[d]) * strides[d] - pads[d], taps = 0;
      rest /= out[d];
      for (int64_t k = 0; k < kernel[d]; ++k) {
        int64_t at = start + k * dilations[d];
        taps += countIncludePad ? at < in[d] + pads[dims + d] : at >= 0 && at < in[d];
      }
      count *= taps;
    }
    divisors[i] = count == 0 ? 1.0f : static_cast<float>(count);
  }
  auto f32 = RankedTensorType::get(shape, g.b.getF32Type());
  Value constant = g.b.create<ConstantOp>(g.loc, f32, DenseElementsAttr::get(f32,
                                                                           ArrayRef(divisors)));
  return g.cast(constant, elementTypeOf(y));
}

/// Average pooling's adjoint: dy over each window's divisor, spread over its
/// taps by a depthwise transposed convolution with a kernel of ones.
Value avgPoolGrad(GradBuilder &g, Value x, Value y, Value dy, ArrayRef<int64_t> kernel,
                  ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                  ArrayRef<int64_t> dilations, bool countIncludePad) {
  int64_t channels = shapeOf(x)[1];
  SmallVector<int64_t> weightShape{channels, 1};
  weightShape.append(kernel.begin(), kernel.end());
  Value ones = g.splat(1.0, elementTypeOf(x), weightShape);
  Value scaled = g.div(g.cast(dy, elementTypeOf(x)),
                       avgPoolDivisors(g, x, y, kernel, strides, pads, dilations, countIncludePad));
  return convInputGrad(g, scaled, ones, shapeOf(x), strides, pads, dilations, channels);
}

} // namespace

namespace {
/// The rule of a max pooling op (the 2-D one has optional dilations).
template <typename OpT>
LogicalResult maxPoolGradients(OpT op, ArrayRef<int64_t> dilations, OpBuilder &b,
                               ValueRange resultGrads, SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(op, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(op));
  setGrad(op, g, 0,
          maxPoolGrad(g, op.getInput(), dy, op.getKernelShape(), op.getStrides(), op.getPads(),
                      dilations, op.getCeilMode()),
          operandGrads);
  return success();
}

/// The rule of an average pooling op (the 2-D one has no dilations).
template <typename OpT>
LogicalResult avgPoolGradients(OpT op, ArrayRef<int64_t> dilations, OpBuilder &b,
                               ValueRange resultGrads, SmallVectorImpl<Value> &operandGrads) {
  Value dy = startRule(op, resultGrads, operandGrads);
  if (!dy)
    return success();
  GradBuilder g(b, gradientLocation(op));
  setGrad(op, g, 0,
          avgPoolGrad(g, op.getInput(), op.getOutput(), dy, op.getKernelShape(), op.getStrides(),
                      op.getPads(), dilations, op.getCountIncludePad()),
          operandGrads);
  return success();
}
} // namespace

LogicalResult MaxPoolOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return maxPoolGradients(*this, getDilations(), b, resultGrads, operandGrads);
}

LogicalResult MaxPool2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  SmallVector<int64_t> dilations{1, 1};
  if (auto d = getDilations())
    dilations.assign(d->begin(), d->end());
  return maxPoolGradients(*this, dilations, b, resultGrads, operandGrads);
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return avgPoolGradients(*this, getDilations(), b, resultGrads, operandGrads);
}

LogicalResult AvgPool2dOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  return avgPoolGradients(*this, {1, 1}, b, resultGrads, operandGrads);
}

} // namespace mixprec::graph
