//===- GraphOps.cpp - verifiers of mp ops ----------------------------------===//
#include "dialects/Graph/IR/GraphOps.h"
#include "common/Shapes.h"
#include "dialects/Graph/IR/GraphTypeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace mixprec::shapes;

namespace mixprec::graph {
namespace {

/// Returns the shape of a ranked tensor value.
ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// Returns the element type of a ranked tensor value.
Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// Fails with the shape function's reason, or when the result shape differs.
LogicalResult verifyInferredShape(Operation *op, const ShapeOrError &inferred,
                                  Value result) {
  if (!inferred.ok())
    return op->emitOpError() << inferred.error;
  if (shapeOf(result) != ArrayRef<int64_t>(inferred.shape))
    return op->emitOpError() << "result shape " << formatShape(shapeOf(result))
                             << " does not match the inferred shape "
                             << formatShape(inferred.shape);
  return success();
}

/// Fails unless `actual` is `expected`, naming the value by `what`.
LogicalResult verifySameElementType(Operation *op, StringRef what, Type actual,
                                    Type expected) {
  if (actual != expected)
    return op->emitOpError() << what << " element type must be " << expected << ", got "
                             << actual;
  return success();
}

bool isFP8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

/// The accumulator type must be f32, or f16 when every float operand is f16.
LogicalResult verifyAccType(Operation *op, std::optional<Type> accType) {
  if (!accType)
    return success();
  if (accType->isF32())
    return success();
  if (!accType->isF16())
    return op->emitOpError() << "acc_type must be f32 or f16, got " << *accType;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (isa<FloatType>(elementTypeOf(operand)) && !elementTypeOf(operand).isF16())
      return op->emitOpError() << "operand #" << i << " must be f16 when acc_type = f16, got "
                               << elementTypeOf(operand);
  return success();
}

/// GEMM operands share one element type, except the FP8 pairs cuBLASLt runs.
LogicalResult verifyGemmOperandTypes(Operation *op, Type lhs, Type rhs) {
  if (lhs == rhs && !(lhs.isFloat8E5M2()))
    return success();
  if (isFP8(lhs) && isFP8(rhs) && !(lhs.isFloat8E5M2() && rhs.isFloat8E5M2()))
    return success();
  if (lhs.isFloat8E5M2() && rhs.isFloat8E5M2())
    return op->emitOpError() << "FP8 operands cannot both be f8E5M2";
  return op->emitOpError() << "operand element types must match (or be an FP8 pair), got "
                           << lhs << " and " << rhs;
}

/// Checks a normalization axis and that a parameter has the normalized shape.
LogicalResult verifyNormParam(Operation *op, StringRef what, Value param,
                              ArrayRef<int64_t> normalized) {
  if (!param)
    return success();
  if (shapeOf(param) != normalized)
    return op->emitOpError() << what << " shape " << formatShape(shapeOf(param))
                             << " must equal the normalized shape " << formatShape(normalized);
  return success();
}

/// Fails unless 0 <= axis < rank.
LogicalResult verifyAxis(Operation *op, int64_t axis, size_t rank) {
  if (axis < 0 || axis >= static_cast<int64_t>(rank))
    return op->emitOpError() << "axis " << axis << " is out of range [0, " << rank << ")";
  return success();
}

/// Fails unless the result has the input's shape.
LogicalResult verifySameShape(Operation *op, Value input, Value result) {
  if (shapeOf(input) != shapeOf(result))
    return op->emitOpError() << "result shape " << formatShape(shapeOf(result))
                             << " must equal the input shape " << formatShape(shapeOf(input));
  return success();
}

/// Shared checks of the predicates (bool results): float operands of any
/// storage dtypes, or integer (bool) operands of one type.
LogicalResult verifyPredicate(Operation *op) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1), out = op->getResult(0);
  Type a = elementTypeOf(lhs), b = elementTypeOf(rhs);
  if (a != b && !(isa<FloatType>(a) && isa<FloatType>(b)))
    return op->emitOpError() << "operands must both be floats or share one integer type, got "
                             << a << " and " << b;
  return verifyInferredShape(op, broadcastShapes(shapeOf(lhs), shapeOf(rhs)), out);
}

/// Shared checks of mp.softmax and mp.log_softmax.
LogicalResult verifySoftmaxLike(Operation *op, int64_t axis, std::optional<Type> acc) {
  Value in = op->getOperand(0);
  if (failed(verifyAxis(op, axis, shapeOf(in).size())) ||
      failed(verifySameShape(op, in, op->getResult(0))))
    return failure();
  return verifyAccType(op, acc);
}

/// Shared checks of reductions.
LogicalResult verifyReduce(Operation *op, ArrayRef<int64_t> axes, bool keepDims,
                           std::optional<Type> acc) {
  Value in = op->getOperand(0), out = op->getResult(0);
  if (failed(verifySameElementType(op, "result", elementTypeOf(out), elementTypeOf(in))) ||
      failed(verifyInferredShape(op, reduceShape(shapeOf(in), axes, keepDims), out)))
    return failure();
  return verifyAccType(op, acc);
}

/// Shared checks of pooling ops.
LogicalResult verifyPool(Operation *op, ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                         ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations, bool ceilMode) {
  Value in = op->getOperand(0), out = op->getResult(0);
  if (failed(verifySameElementType(op, "result", elementTypeOf(out), elementTypeOf(in))))
    return failure();
  return verifyInferredShape(
      op, pool2dShape(shapeOf(in), kernel, strides, pads, dilations, ceilMode), out);
}

/// A linear layer's optional bias has the output's element type and
/// broadcasts to the output without growing it.
LogicalResult verifyLinearBias(Operation *op, Value bias, Value output,
                               ArrayRef<int64_t> outShape) {
  if (!bias)
    return success();
  if (failed(verifySameElementType(op, "bias", elementTypeOf(bias), elementTypeOf(output))))
    return failure();
  ShapeOrError withBias = broadcastShapes(outShape, shapeOf(bias));
  if (!withBias.ok() || ArrayRef<int64_t>(withBias.shape) != outShape)
    return op->emitOpError() << "bias shape " << formatShape(shapeOf(bias))
                             << " must broadcast to the output shape " << formatShape(outShape);
  return success();
}

/// A scale operand is a rank-0 f32 tensor (per-tensor scaling).
LogicalResult verifyScale(Operation *op, Value scale) {
  if (!shapeOf(scale).empty())
    return op->emitOpError() << "scale must be a rank-0 tensor<f32> (per-tensor scaling), got "
                             << scale.getType();
  return success();
}

/// The block of a block-scaled op: two positive sizes.
LogicalResult verifyBlock(Operation *op, StringRef name, ArrayRef<int64_t> block) {
  if (block.size() != 2 || block[0] < 1 || block[1] < 1)
    return op->emitOpError() << name << " must be two positive sizes (rows, cols), got [" << block
                             << "]";
  return success();
}

/// The scales of `data` (rank >= 2) with blocks `block`: the shape of
/// numerics::blockScaleShape.
LogicalResult verifyBlockScales(Operation *op, StringRef what, Value data, Value scales,
                                ArrayRef<int64_t> block) {
  auto shape = shapeOf(data);
  if (shape.size() < 2)
    return op->emitOpError() << what << " must have rank >= 2 for block scaling, got "
                             << data.getType();
  SmallVector<int64_t> expected(shape.begin(), shape.end());
  auto up = [](int64_t n, int64_t b) { return ShapedType::isDynamic(n) ? n : (n + b - 1) / b; };
  expected[shape.size() - 2] = up(shape[shape.size() - 2], block[0]);
  expected.back() = up(shape.back(), block[1]);
  if (ArrayRef<int64_t>(shapeOf(scales)) != ArrayRef<int64_t>(expected))
    return op->emitOpError() << "scales of " << what << " with blocks " << block[0] << "x"
                             << block[1] << " must have shape ["
                             << llvm::make_range(expected.begin(), expected.end()) << "], got "
                             << scales.getType();
  return success();
}

} // namespace
} // namespace mixprec::graph

#define GET_OP_CLASSES
#include "dialects/Graph/IR/GraphOps.cpp.inc"

namespace mixprec::graph {

LogicalResult CastOp::verify() { return verifySameShape(*this, getInput(), getOutput()); }

LogicalResult MatmulOp::verify() {
  if (failed(verifyGemmOperandTypes(*this, elementTypeOf(getLhs()), elementTypeOf(getRhs()))))
    return failure();
  if (failed(verifyInferredShape(*this, matmulShape(shapeOf(getLhs()), shapeOf(getRhs())),
                                 getOutput())))
    return failure();
  return verifyAccType(*this, getAccType());
}

/// The checks mp.attention and mp.attention_grad share: q, k, v of one
/// 16- or 32-bit float type, a bias of rank >= 1, the shape rule; returns
/// the output's shape (null on failure, already reported).
static FailureOr<Shape> verifyAttentionOperands(Operation *op, Value query, Value key, Value value,
                                                Value bias) {
  Type q = elementTypeOf(query);
  if (failed(verifySameElementType(op, "key", elementTypeOf(key), q)) ||
      failed(verifySameElementType(op, "value", elementTypeOf(value), q)))
    return failure();
  // FP8 Q/K/V need their descales as operands (a scaled form of the op);
  // until that form exists the precision policy keeps attention in 16 bits.
  if (isFP8(q))
    return op->emitOpError() << "FP8 operands (" << q << ") need a scaled attention form";
  if (bias && shapeOf(bias).empty())
    return op->emitOpError() << "bias must have rank >= 1 (a scalar shifts every score alike)";
  ShapeOrError inferred =
      attentionShape(shapeOf(query), shapeOf(key), shapeOf(value), bias ? shapeOf(bias) : Dims());
  if (!inferred.ok())
    return op->emitOpError() << inferred.error;
  return inferred.shape;
}

/// Fails unless `lse` is shaped as the output's rows.
static LogicalResult verifyLseShape(Operation *op, const Shape &out, Value lse) {
  return verifyInferredShape(op, ShapeOrError{Shape(out.begin(), out.end() - 1), ""}, lse);
}

LogicalResult AttentionOp::verify() {
  FailureOr<Shape> out =
      verifyAttentionOperands(*this, getQuery(), getKey(), getValue(), getBias());
  if (failed(out))
    return failure();
  if (!std::isfinite(getScale().convertToDouble()))
    return emitOpError() << "scale must be finite, got " << getScale().convertToDouble();
  if (failed(verifyInferredShape(*this, ShapeOrError{*out, ""}, getOutput())) ||
      failed(verifyLseShape(*this, *out, getLse())))
    return failure();
  if (getAccType() && !getAccType()->isF32())
    return emitOpError() << "acc_type must be f32, got " << *getAccType();
  return success();
}

LogicalResult AttentionGradOp::verify() {
  FailureOr<Shape> out =
      verifyAttentionOperands(*this, getQuery(), getKey(), getValue(), getBias());
  if (failed(out))
    return failure();
  const ShapeOrError inferred{*out, ""};
  if (failed(verifyInferredShape(*this, inferred, getOut())) ||
      failed(verifyInferredShape(*this, inferred, getOutGrad())) ||
      failed(verifyLseShape(*this, *out, getLse())))
    return failure();
  for (auto [operand, grad] :
       {std::pair(getQuery(), getQueryGrad()), std::pair(getKey(), getKeyGrad()),
        std::pair(getValue(), getValueGrad())})
    if (failed(verifyInferredShape(*this, ShapeOrError{Shape(shapeOf(operand)), ""}, grad)))
      return failure();
  if (getAccType() && !getAccType()->isF32())
    return emitOpError() << "acc_type must be f32, got " << *getAccType();
  return success();
}

LogicalResult LinearOp::verify() {
  if (failed(verifyGemmOperandTypes(*this, elementTypeOf(getInput()),
                                    elementTypeOf(getWeight()))))
    return failure();
  ShapeOrError inferred =
      linearShape(shapeOf(getInput()), shapeOf(getWeight()), getTransposeWeight());
  if (failed(verifyInferredShape(*this, inferred, getOutput())))
    return failure();
  if (failed(verifyLinearBias(*this, getBias(), getOutput(), inferred.shape)))
    return failure();
  return verifyAccType(*this, getAccType());
}

/// Shared checks of the convolutions: operand types, the inferred shape,
/// a bias of one value per output channel, `acc_type`.
static LogicalResult verifyConvolution(Operation *op, Value input, Value weight, Value bias,
                                       Value output, const ShapeOrError &inferred,
                                       std::optional<Type> acc) {
  if (failed(verifyGemmOperandTypes(op, elementTypeOf(input), elementTypeOf(weight))))
    return failure();
  if (failed(verifyInferredShape(op, inferred, output)))
    return failure();
  if (bias) {
    if (failed(verifySameElementType(op, "bias", elementTypeOf(bias), elementTypeOf(output))))
      return failure();
    int64_t channels = shapeOf(output)[1];
    if (shapeOf(bias) != ArrayRef<int64_t>{channels})
      return op->emitOpError() << "bias shape " << formatShape(shapeOf(bias)) << " must be ["
                               << channels << "] (one per output channel)";
  }
  return verifyAccType(op, acc);
}

LogicalResult Conv2dOp::verify() {
  return verifyConvolution(*this, getInput(), getWeight(), getBias(), getOutput(),
                           conv2dShape(shapeOf(getInput()), shapeOf(getWeight()), getStrides(),
                                       getPads(), getDilations(), getGroups()),
                           getAccType());
}

LogicalResult ConvOp::verify() {
  return verifyConvolution(*this, getInput(), getWeight(), getBias(), getOutput(),
                           convShape(shapeOf(getInput()), shapeOf(getWeight()), getStrides(),
                                     getPads(), getDilations(), getGroups()),
                           getAccType());
}

LogicalResult ConvTransposeOp::verify() {
  return verifyConvolution(*this, getInput(), getWeight(), getBias(), getOutput(),
                           convTransposeShape(shapeOf(getInput()), shapeOf(getWeight()),
                                              getStrides(), getPads(), getDilations(),
                                              getOutputPadding(), getGroups()),
                           getAccType());
}

// The one verifier of the element-wise binary ops (MP_BroadcastBinary).
// Two scalar functions relax or tighten the rule: an integer base may take
// a float exponent (ONNX Pow(int64, float32) gives int64), and PRelu's
// slope broadcasts to x, not x to the slope's shape.
LogicalResult detail::verifyBroadcastBinary(Operation *op) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1), out = op->getResult(0);
  ScalarFn fn = cast<ElementwiseOpInterface>(op).getScalarFn();
  bool floatExponent = fn == ScalarFn::Pow && isa<IntegerType>(elementTypeOf(lhs)) &&
                       isa<FloatType>(elementTypeOf(rhs));
  if ((!floatExponent &&
       failed(verifySameElementType(op, "rhs", elementTypeOf(rhs), elementTypeOf(lhs)))) ||
      failed(verifySameElementType(op, "result", elementTypeOf(out), elementTypeOf(lhs))) ||
      failed(verifyInferredShape(op, broadcastShapes(shapeOf(lhs), shapeOf(rhs)), out)))
    return failure();
  if (fn == ScalarFn::PRelu && shapeOf(out) != shapeOf(lhs))
    return op->emitOpError() << "slope shape " << formatShape(shapeOf(rhs))
                             << " must broadcast to the input shape " << formatShape(shapeOf(lhs));
  return success();
}

LogicalResult EqualOp::verify() { return verifyPredicate(*this); }
LogicalResult LessOp::verify() { return verifyPredicate(*this); }
LogicalResult LessOrEqualOp::verify() { return verifyPredicate(*this); }
LogicalResult GreaterOp::verify() { return verifyPredicate(*this); }
LogicalResult GreaterOrEqualOp::verify() { return verifyPredicate(*this); }
LogicalResult AndOp::verify() { return verifyPredicate(*this); }
LogicalResult OrOp::verify() { return verifyPredicate(*this); }
LogicalResult XorOp::verify() { return verifyPredicate(*this); }
LogicalResult IsNaNOp::verify() { return verifySameShape(*this, getInput(), getOutput()); }
LogicalResult IsInfOp::verify() {
  if (!getDetectNegative() && !getDetectPositive())
    return emitOpError() << "detects nothing: detect_negative or detect_positive must be true";
  return verifySameShape(*this, getInput(), getOutput());
}

LogicalResult WhereOp::verify() {
  if (failed(verifySameElementType(*this, "rhs", elementTypeOf(getRhs()),
                                   elementTypeOf(getLhs()))) ||
      failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getLhs()))))
    return failure();
  ShapeOrError values = broadcastShapes(shapeOf(getLhs()), shapeOf(getRhs()));
  if (!values.ok())
    return emitOpError() << values.error;
  return verifyInferredShape(*this, broadcastShapes(shapeOf(getCondition()), values.shape),
                             getOutput());
}

LogicalResult SoftmaxOp::verify() { return verifySoftmaxLike(*this, getAxis(), getAccType()); }
LogicalResult LogSoftmaxOp::verify() {
  return verifySoftmaxLike(*this, getAxis(), getAccType());
}

LogicalResult LayerNormOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  if (failed(verifyAxis(*this, getAxis(), shape.size())) ||
      failed(verifySameShape(*this, getInput(), getOutput())))
    return failure();
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive";
  ArrayRef<int64_t> normalized = shape.drop_front(getAxis());
  if (failed(verifyNormParam(*this, "scale", getScale(), normalized)) ||
      failed(verifyNormParam(*this, "bias", getBias(), normalized)))
    return failure();
  return verifyAccType(*this, getAccType());
}

LogicalResult RmsNormOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  if (failed(verifyAxis(*this, getAxis(), shape.size())) ||
      failed(verifySameShape(*this, getInput(), getOutput())))
    return failure();
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError() << "epsilon must be positive";
  if (failed(verifyNormParam(*this, "scale", getScale(), shape.drop_front(getAxis()))))
    return failure();
  return verifyAccType(*this, getAccType());
}

LogicalResult BatchNormOp::verify() {
  ArrayRef<int64_t> shape = shapeOf(getInput());
  if (shape.size() < 2)
    return emitOpError() << "input must have rank >= 2 (N, C, ...), got "
                         << formatShape(shape);
  if (failed(verifySameShape(*this, getInput(), getOutput())))
    return failure();
  if (getEpsilon().convertToFloat() < 0.0f)
    return emitOpError() << "epsilon must be non-negative";
  int64_t channels = shape[1];
  for (auto [name, v] : {std::pair<StringRef, Value>{"scale", getScale()},
                         {"bias", getBias()},
                         {"mean", getMean()},
                         {"variance", getVariance()}})
    if (shapeOf(v) != ArrayRef<int64_t>{channels})
      return emitOpError() << name << " shape " << formatShape(shapeOf(v)) << " must be ["
                           << channels << "] (one per channel)";
  return verifyAccType(*this, getAccType());
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduce(*this, getAxes(), getKeepdims(), getAccType());
}
LogicalResult ReduceMeanOp::verify() {
  return verifyReduce(*this, getAxes(), getKeepdims(), getAccType());
}
LogicalResult ReduceMaxOp::verify() {
  return verifyReduce(*this, getAxes(), getKeepdims(), getAccType());
}

LogicalResult ReshapeOp::verify() {
  if (failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getInput()))))
    return failure();
  int64_t in = numElements(shapeOf(getInput())), out = numElements(shapeOf(getOutput()));
  if (in != out)
    return emitOpError() << "result has " << out << " elements, input has " << in;
  return success();
}

LogicalResult TransposeOp::verify() {
  if (failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getInput()))))
    return failure();
  return verifyInferredShape(*this, transposeShape(shapeOf(getInput()), getPerm()),
                             getOutput());
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  std::vector<Dims> inputShapes;
  for (auto [i, v] : llvm::enumerate(getInputs())) {
    if (elementTypeOf(v) != elementTypeOf(getOutput()))
      return emitOpError() << "input #" << i << " element type must be "
                           << elementTypeOf(getOutput()) << ", got " << elementTypeOf(v);
    inputShapes.emplace_back(shapeOf(v));
  }
  return verifyInferredShape(*this, concatShape(inputShapes, getAxis()), getOutput());
}

LogicalResult SliceOp::verify() {
  if (failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getInput()))))
    return failure();
  if (shapeOf(getOutput()).size() != shapeOf(getInput()).size())
    return emitOpError() << "result rank must equal the input rank "
                         << shapeOf(getInput()).size();
  std::string error =
      checkSliceBounds(shapeOf(getInput()), getStarts(), getSteps(), shapeOf(getOutput()));
  if (!error.empty())
    return emitOpError() << error;
  return success();
}

LogicalResult GatherOp::verify() {
  if (failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getData()))))
    return failure();
  return verifyInferredShape(
      *this, gatherShape(shapeOf(getData()), shapeOf(getIndices()), getAxis()), getOutput());
}

LogicalResult GatherElementsOp::verify() {
  if (failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getData()))))
    return failure();
  return verifyInferredShape(
      *this, gatherElementsShape(shapeOf(getData()), shapeOf(getIndices()), getAxis()),
      getOutput());
}

LogicalResult GatherNdOp::verify() {
  if (failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getData()))))
    return failure();
  return verifyInferredShape(
      *this, gatherNdShape(shapeOf(getData()), shapeOf(getIndices()), getBatchDims()),
      getOutput());
}

LogicalResult ArgMaxOp::verify() {
  return verifyInferredShape(*this, argReduceShape(shapeOf(getInput()), getAxis(), getKeepdims()),
                             getOutput());
}

LogicalResult ArgMinOp::verify() {
  return verifyInferredShape(*this, argReduceShape(shapeOf(getInput()), getAxis(), getKeepdims()),
                             getOutput());
}

LogicalResult TopKOp::verify() {
  if (failed(verifySameElementType(*this, "values", elementTypeOf(getValues()),
                                   elementTypeOf(getInput()))))
    return failure();
  ShapeOrError s = topKShape(shapeOf(getInput()), getAxis(), getK());
  if (failed(verifyInferredShape(*this, s, getValues())))
    return failure();
  return verifyInferredShape(*this, s, getIndices());
}

LogicalResult CumSumOp::verify() {
  if (failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()),
                                   elementTypeOf(getInput()))))
    return failure();
  return verifyInferredShape(*this, axisPreservingShape(shapeOf(getInput()), getAxis()),
                             getOutput());
}

LogicalResult ScatterNdOp::verify() {
  Type element = elementTypeOf(getData());
  if (failed(verifySameElementType(*this, "updates", elementTypeOf(getUpdates()), element)) ||
      failed(verifySameElementType(*this, "result", elementTypeOf(getOutput()), element)))
    return failure();
  StringRef r = getReduction();
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return emitOpError() << "reduction must be none, add, mul, max or min, got '" << r << "'";
  // The updates hold one slice per index tuple: a GatherND's result shape.
  ShapeOrError updates = gatherNdShape(shapeOf(getData()), shapeOf(getIndices()), 0);
  if (!updates.ok())
    return emitOpError() << updates.error;
  if (shapeOf(getUpdates()) != ArrayRef<int64_t>(updates.shape))
    return emitOpError() << "updates have shape " << formatShape(shapeOf(getUpdates()))
                         << ", the indices address " << formatShape(updates.shape);
  return verifySameShape(*this, getData(), getOutput());
}

LogicalResult ReduceProdOp::verify() {
  return verifyReduce(*this, getAxes(), getKeepdims(), std::nullopt);
}

LogicalResult MaxPool2dOp::verify() {
  ArrayRef<int64_t> dilations;
  if (auto d = getDilations())
    dilations = *d;
  return verifyPool(*this, getKernelShape(), getStrides(), getPads(), dilations,
                    getCeilMode());
}

LogicalResult AvgPool2dOp::verify() {
  return verifyPool(*this, getKernelShape(), getStrides(), getPads(), {}, getCeilMode());
}

/// The N-D pooling ops: the window, and the result's element type (the
/// input's, or i64 for the indices, which ODS checks).
static LogicalResult verifyPoolNd(Operation *op, ArrayRef<int64_t> kernel,
                                  ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                                  ArrayRef<int64_t> dilations, bool ceilMode, bool indices) {
  Value in = op->getOperand(0), out = op->getResult(0);
  if (!indices &&
      failed(verifySameElementType(op, "result", elementTypeOf(out), elementTypeOf(in))))
    return failure();
  if (dilations.size() != kernel.size())
    return op->emitOpError() << "dilations must have " << kernel.size() << " values, got "
                             << dilations.size();
  return verifyInferredShape(
      op, poolShape(shapeOf(in), kernel, strides, pads, dilations, ceilMode), out);
}

LogicalResult MaxPoolOp::verify() {
  return verifyPoolNd(*this, getKernelShape(), getStrides(), getPads(), getDilations(),
                      getCeilMode(), false);
}

LogicalResult AvgPoolOp::verify() {
  return verifyPoolNd(*this, getKernelShape(), getStrides(), getPads(), getDilations(),
                      getCeilMode(), false);
}

LogicalResult MaxPoolIndicesOp::verify() {
  if (getStorageOrder() != 0 && getStorageOrder() != 1)
    return emitOpError() << "storage_order must be 0 (row-major) or 1 (column-major), got "
                         << getStorageOrder();
  return verifyPoolNd(*this, getKernelShape(), getStrides(), getPads(), getDilations(),
                      getCeilMode(), true);
}

LogicalResult QuantizeOp::verify() {
  if (failed(verifySameShape(*this, getInput(), getOutput())))
    return failure();
  return verifyScale(*this, getScale());
}

LogicalResult DequantizeOp::verify() {
  if (failed(verifySameShape(*this, getInput(), getOutput())))
    return failure();
  return verifyScale(*this, getScale());
}

LogicalResult Fp8ScaleOp::verify() {
  if (!isFP8(getFormat()))
    return emitOpError() << "format must be f8E4M3FN or f8E5M2, got " << getFormat();
  if (static_cast<int64_t>(getMargin()) < 0)
    return emitOpError() << "margin must be non-negative, got "
                         << static_cast<int64_t>(getMargin());
  return success();
}

LogicalResult BlockScaleOp::verify() {
  if (!isFP8(getFormat()))
    return emitOpError() << "format must be f8E4M3FN or f8E5M2, got " << getFormat();
  if (getRecipe() != "block" && getRecipe() != "mx")
    return emitOpError() << "recipe must be \"block\" or \"mx\", got \"" << getRecipe() << "\"";
  if (static_cast<int64_t>(getMargin()) < 0)
    return emitOpError() << "margin must be non-negative, got "
                         << static_cast<int64_t>(getMargin());
  if (failed(verifyBlock(*this, "block", getBlock())))
    return failure();
  return verifyBlockScales(*this, "input", getInput(), getScales(), getBlock());
}

LogicalResult BlockQuantizeOp::verify() {
  if (failed(verifySameShape(*this, getInput(), getOutput())) ||
      failed(verifyBlock(*this, "block", getBlock())))
    return failure();
  return verifyBlockScales(*this, "input", getInput(), getScales(), getBlock());
}

LogicalResult AllReduceOp::verify() {
  StringRef r = getReduction();
  if (r != "sum" && r != "mean" && r != "max")
    return emitOpError() << "reduction must be \"sum\", \"mean\" or \"max\", got \"" << r << "\"";
  if (getInput().getType() != getOutput().getType())
    return emitOpError() << "output type " << getOutput().getType() << " must be the input's, "
                         << getInput().getType();
  return success();
}

/// rank_slice and all_gather: float vectors of one dtype, the long one
/// `world` times the short one.
static LogicalResult verifyShardPair(Operation *op, Value whole, Value part, int64_t world) {
  auto w = cast<RankedTensorType>(whole.getType());
  auto p = cast<RankedTensorType>(part.getType());
  if (world < 1)
    return op->emitOpError() << "world must be >= 1, got " << world;
  if (w.getRank() != 1 || p.getRank() != 1)
    return op->emitOpError() << "takes vectors, got " << whole.getType() << " and "
                             << part.getType();
  if (w.getElementType() != p.getElementType())
    return op->emitOpError() << "input and output must have one element type, got "
                             << whole.getType() << " and " << part.getType();
  if (w.getDimSize(0) != world * p.getDimSize(0))
    return op->emitOpError() << "the whole vector must have world (" << world
                             << ") times the slice's " << p.getDimSize(0) << " elements, got "
                             << w.getDimSize(0);
  return success();
}

LogicalResult RankSliceOp::verify() {
  return verifyShardPair(*this, getInput(), getOutput(), getWorld());
}

LogicalResult AllGatherOp::verify() {
  return verifyShardPair(*this, getOutput(), getInput(), getWorld());
}

LogicalResult ScaledMatmulOp::verify() {
  if (failed(verifyGemmOperandTypes(*this, elementTypeOf(getLhs()), elementTypeOf(getRhs()))) ||
      failed(verifyScale(*this, getLhsScale())) || failed(verifyScale(*this, getRhsScale())))
    return failure();
  if (failed(verifyInferredShape(*this, matmulShape(shapeOf(getLhs()), shapeOf(getRhs())),
                                 getOutput())))
    return failure();
  return verifyAccType(*this, getAccType());
}

LogicalResult ScaledLinearOp::verify() {
  if (failed(verifyGemmOperandTypes(*this, elementTypeOf(getInput()), elementTypeOf(getWeight()))))
    return failure();
  std::optional<ArrayRef<int64_t>> inputBlock = getInputBlock(), weightBlock = getWeightBlock();
  if (inputBlock.has_value() != weightBlock.has_value())
    return emitOpError() << "input_block and weight_block come together";
  if (!inputBlock) {
    if (failed(verifyScale(*this, getInputScale())) || failed(verifyScale(*this, getWeightScale())))
      return failure();
  } else {
    if (failed(verifyBlock(*this, "input_block", *inputBlock)) ||
        failed(verifyBlock(*this, "weight_block", *weightBlock)))
      return failure();
    if (!getTransposeWeight() || shapeOf(getWeight()).size() != 2)
      return emitOpError() << "block scaling takes the weight as a 2-D [n, k] tensor "
                              "(transpose_weight = true)";
    if ((*inputBlock)[1] != (*weightBlock)[1])
      return emitOpError() << "input and weight blocks must have the same length along k, got "
                           << (*inputBlock)[1] << " and " << (*weightBlock)[1];
    if (shapeOf(getInput()).size() > 2 && (*inputBlock)[0] != 1)
      return emitOpError() << "an input of rank > 2 takes blocks of one row, got "
                           << (*inputBlock)[0];
    if (failed(verifyBlockScales(*this, "input", getInput(), getInputScale(), *inputBlock)) ||
        failed(verifyBlockScales(*this, "weight", getWeight(), getWeightScale(), *weightBlock)))
      return failure();
  }
  ShapeOrError inferred =
      linearShape(shapeOf(getInput()), shapeOf(getWeight()), getTransposeWeight());
  if (failed(verifyInferredShape(*this, inferred, getOutput())))
    return failure();
  if (failed(verifyLinearBias(*this, getBias(), getOutput(), inferred.shape)))
    return failure();
  return verifyAccType(*this, getAccType());
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments() << " arguments for "
                         << getInputs().size() << " inputs";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs())))
    if (std::get<0>(pair) != std::get<1>(pair).getType())
      return emitOpError() << "body argument #" << i << " has type " << std::get<0>(pair)
                           << ", input #" << i << " is " << std::get<1>(pair).getType();
  auto yield = cast<YieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yielded types must match the results";
  return success();
}

} // namespace mixprec::graph
