//===- GraphTypeInference.cpp - result types the mp ops infer -------------===//
//
// InferShapedTypeOpInterface for the ops whose result shape follows from
// their operands and attributes: the shape functions of common/Shapes.h
// give it, or the rule the operands break (reported at `location`). The
// element type comes with it where the operands fix it; a GEMM may write
// any float type, so it leaves the element type to its builder.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/IR/GraphTypeInference.h"

#include "common/Shapes.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mixprec::shapes;

namespace mixprec::graph {
namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The shape of `v`.
ArrayRef<int64_t> shapeOf(Value v) { return tensorType(v).getShape(); }

/// The element type of `v`.
Type elementOf(Value v) { return tensorType(v).getElementType(); }

/// Appends the result `inferred` with element type `element` (null where
/// the op does not fix it), or reports the broken rule at `location`.
LogicalResult addResult(std::optional<Location> location, const ShapeOrError &inferred,
                        Type element, SmallVectorImpl<ShapedTypeComponents> &results) {
  if (!inferred.ok())
    return emitOptionalError(location, inferred.error);
  results.emplace_back(ArrayRef<int64_t>(inferred.shape), element);
  return success();
}

/// Matmul and its FP8 form: the product of `lhs` and `rhs`.
LogicalResult inferProduct(std::optional<Location> location, Value lhs, Value rhs,
                           SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, matmulShape(shapeOf(lhs), shapeOf(rhs)), nullptr, results);
}

/// A linear layer and its FP8 form: `input` times `weight`.
LogicalResult inferLinear(std::optional<Location> location, Value input, Value weight,
                          bool transposeWeight, SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, linearShape(shapeOf(input), shapeOf(weight), transposeWeight),
                   nullptr, results);
}

} // namespace

namespace detail {

LogicalResult inferBroadcastResult(std::optional<Location> location, Value lhs, Value rhs,
                                   SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, broadcastShapes(shapeOf(lhs), shapeOf(rhs)), elementOf(lhs),
                   results);
}

LogicalResult inferPredicateResult(std::optional<Location> location, Value lhs, Value rhs,
                                   SmallVectorImpl<ShapedTypeComponents> &results) {
  Type i1 = IntegerType::get(lhs.getContext(), 1);
  return addResult(location, broadcastShapes(shapeOf(lhs), shapeOf(rhs)), i1, results);
}

LogicalResult inferReduceResult(std::optional<Location> location, Value input,
                                ArrayRef<int64_t> axes, bool keepDims,
                                SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, reduceShape(shapeOf(input), axes, keepDims), elementOf(input),
                   results);
}

} // namespace detail

//===----------------------------------------------------------------------===//
// GEMMs and convolutions (the result element type is the builder's choice)
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferProduct(location, adaptor.getLhs(), adaptor.getRhs(), results);
}

LogicalResult ScaledMatmulOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferProduct(location, adaptor.getLhs(), adaptor.getRhs(), results);
}

LogicalResult LinearOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferLinear(location, adaptor.getInput(), adaptor.getWeight(),
                     adaptor.getTransposeWeight(), results);
}

LogicalResult ScaledLinearOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferLinear(location, adaptor.getInput(), adaptor.getWeight(),
                     adaptor.getTransposeWeight(), results);
}

LogicalResult Conv2dOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location,
                   conv2dShape(shapeOf(adaptor.getInput()), shapeOf(adaptor.getWeight()),
                               adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
                               adaptor.getGroups()),
                   nullptr, results);
}

LogicalResult ConvOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location,
                   convShape(shapeOf(adaptor.getInput()), shapeOf(adaptor.getWeight()),
                             adaptor.getStrides(), adaptor.getPads(), adaptor.getDilations(),
                             adaptor.getGroups()),
                   nullptr, results);
}

LogicalResult ConvTransposeOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location,
                   convTransposeShape(shapeOf(adaptor.getInput()), shapeOf(adaptor.getWeight()),
                                      adaptor.getStrides(), adaptor.getPads(),
                                      adaptor.getDilations(), adaptor.getOutputPadding(),
                                      adaptor.getGroups()),
                   nullptr, results);
}

//===----------------------------------------------------------------------===//
// Element-wise ops (the binary ops' rule is inferBroadcastResult)
//===----------------------------------------------------------------------===//

// The values broadcast together first, then with the condition.
LogicalResult WhereOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  ShapeOrError values = broadcastShapes(shapeOf(adaptor.getLhs()), shapeOf(adaptor.getRhs()));
  if (!values.ok())
    return emitOptionalError(location, values.error);
  return addResult(location, broadcastShapes(shapeOf(adaptor.getCondition()), values.shape),
                   elementOf(adaptor.getLhs()), results);
}

//===----------------------------------------------------------------------===//
// Pooling (the reductions' rule is inferReduceResult)
//===----------------------------------------------------------------------===//

LogicalResult MaxPool2dOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  ArrayRef<int64_t> dilations;
  if (std::optional<ArrayRef<int64_t>> d = adaptor.getDilations())
    dilations = *d;
  return addResult(location,
                   pool2dShape(shapeOf(adaptor.getInput()), adaptor.getKernelShape(),
                               adaptor.getStrides(), adaptor.getPads(), dilations,
                               adaptor.getCeilMode()),
                   elementOf(adaptor.getInput()), results);
}

LogicalResult AvgPool2dOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location,
                   pool2dShape(shapeOf(adaptor.getInput()), adaptor.getKernelShape(),
                               adaptor.getStrides(), adaptor.getPads(), {},
                               adaptor.getCeilMode()),
                   elementOf(adaptor.getInput()), results);
}

/// The N-D pooling ops: the window's shape; values keep the input's
/// element type, indices are i64.
template <typename AdaptorTy>
LogicalResult inferPoolNd(MLIRContext *ctx, std::optional<Location> location, AdaptorTy adaptor,
                          bool indices, SmallVectorImpl<ShapedTypeComponents> &results) {
  Value input = adaptor.getInput();
  return addResult(location,
                   poolShape(shapeOf(input), adaptor.getKernelShape(), adaptor.getStrides(),
                             adaptor.getPads(), adaptor.getDilations(), adaptor.getCeilMode()),
                   indices ? Type(IntegerType::get(ctx, 64)) : elementOf(input), results);
}

LogicalResult MaxPoolOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferPoolNd(ctx, location, adaptor, false, results);
}

LogicalResult AvgPoolOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferPoolNd(ctx, location, adaptor, false, results);
}

LogicalResult MaxPoolIndicesOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferPoolNd(ctx, location, adaptor, true, results);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, transposeShape(shapeOf(adaptor.getInput()), adaptor.getPerm()),
                   elementOf(adaptor.getInput()), results);
}

LogicalResult ConcatOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(location, "needs at least one input");
  std::vector<Dims> inputShapes;
  for (Value input : inputs)
    inputShapes.emplace_back(shapeOf(input));
  return addResult(location, concatShape(inputShapes, adaptor.getAxis()), elementOf(inputs.front()),
                   results);
}

LogicalResult GatherOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(
      location,
      gatherShape(shapeOf(adaptor.getData()), shapeOf(adaptor.getIndices()), adaptor.getAxis()),
      elementOf(adaptor.getData()), results);
}

} // namespace mixprec::graph

//===----------------------------------------------------------------------===//
// Index-driven ops
//===----------------------------------------------------------------------===//

namespace mixprec::graph {

LogicalResult GatherElementsOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location,
                   gatherElementsShape(shapeOf(adaptor.getData()), shapeOf(adaptor.getIndices()),
                                       adaptor.getAxis()),
                   elementOf(adaptor.getData()), results);
}

LogicalResult GatherNdOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location,
                   gatherNdShape(shapeOf(adaptor.getData()), shapeOf(adaptor.getIndices()),
                                 adaptor.getBatchDims()),
                   elementOf(adaptor.getData()), results);
}

/// ArgMax and ArgMin: int64 indices.
template <typename AdaptorTy>
static LogicalResult inferArgReduce(MLIRContext *ctx, std::optional<Location> location,
                                    AdaptorTy adaptor,
                                    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(
      location,
      argReduceShape(shapeOf(adaptor.getInput()), adaptor.getAxis(), adaptor.getKeepdims()),
      IntegerType::get(ctx, 64), results);
}

LogicalResult ArgMaxOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferArgReduce(ctx, location, adaptor, results);
}

LogicalResult ArgMinOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferArgReduce(ctx, location, adaptor, results);
}

LogicalResult TopKOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  ShapeOrError s = topKShape(shapeOf(adaptor.getInput()), adaptor.getAxis(), adaptor.getK());
  if (failed(addResult(location, s, elementOf(adaptor.getInput()), results)))
    return failure();
  return addResult(location, s, IntegerType::get(ctx, 64), results);
}

LogicalResult ScatterNdOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  // The tuples must address the data (the updates' shape is the verifier's).
  Value data = adaptor.getData();
  ShapeOrError tuples = gatherNdShape(shapeOf(data), shapeOf(adaptor.getIndices()), 0);
  if (!tuples.ok())
    return emitOptionalError(location, tuples.error);
  return addResult(location, ShapeOrError{Shape(shapeOf(data)), ""}, elementOf(data), results);
}

LogicalResult ReduceProdOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return detail::inferReduceResult(location, adaptor.getInput(), adaptor.getAxes(),
                                   adaptor.getKeepdims(), results);
}

LogicalResult
AttentionOp::inferReturnTypeComponents(MLIRContext *ctx, std::optional<Location> location,
                                       Adaptor adaptor,
                                       SmallVectorImpl<ShapedTypeComponents> &results) {
  Value bias = adaptor.getBias();
  ShapeOrError out = attentionShape(shapeOf(adaptor.getQuery()), shapeOf(adaptor.getKey()),
                                    shapeOf(adaptor.getValue()), bias ? shapeOf(bias) : Dims());
  if (failed(addResult(location, out, nullptr, results)))
    return failure();
  Shape rows(out.shape.begin(), out.shape.end() - 1);
  return addResult(location, ShapeOrError{rows, ""}, Float32Type::get(ctx), results);
}

LogicalResult CumSumOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, axisPreservingShape(shapeOf(adaptor.getInput()), adaptor.getAxis()),
                   elementOf(adaptor.getInput()), results);
}

} // namespace mixprec::graph
