//===- GraphTypeInference.cpp - result types the mp ops infer -------------===//
//
// InferShapedTypeOpInterface for the ops whose result shape follows from
// their operands and attributes: the shape functions of ShapeInference.h
// give it, or the rule the operands break (reported at `location`). The
// element type comes with it where the operands fix it; a GEMM may write
// any float type, so it leaves the element type to its builder.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/IR/GraphTypeInference.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/ShapeInference.h"

#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace mixprec::graph {
namespace {

/// The shape of operand `i`.
ArrayRef<int64_t> shapeAt(ValueShapeRange operands, unsigned i) {
  return cast<RankedTensorType>(operands[i].getType()).getShape();
}

/// The element type of operand `i`.
Type elementAt(ValueShapeRange operands, unsigned i) {
  return cast<RankedTensorType>(operands[i].getType()).getElementType();
}

/// Appends the result `inferred` with element type `element` (null where
/// the op does not fix it), or reports the broken rule at `location`.
LogicalResult addResult(std::optional<Location> location, const ShapeOrError &inferred,
                        Type element, SmallVectorImpl<ShapedTypeComponents> &results) {
  if (!inferred.ok())
    return emitOptionalError(location, inferred.error);
  results.emplace_back(ArrayRef<int64_t>(inferred.shape), element);
  return success();
}

/// Matmul and its FP8 form: the product of operands 0 and 1.
LogicalResult inferProduct(std::optional<Location> location, ValueShapeRange operands,
                           SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, matmulShape(shapeAt(operands, 0), shapeAt(operands, 1)), nullptr,
                   results);
}

/// A linear layer and its FP8 form: input (operand 0) times weight (operand 1).
LogicalResult inferLinear(std::optional<Location> location, ValueShapeRange operands,
                          bool transposeWeight, SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location,
                   linearShape(shapeAt(operands, 0), shapeAt(operands, 1), transposeWeight),
                   nullptr, results);
}

} // namespace

namespace detail {

LogicalResult inferBroadcastResult(std::optional<Location> location, ValueShapeRange operands,
                                   SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, broadcastShapes(shapeAt(operands, 0), shapeAt(operands, 1)),
                   elementAt(operands, 0), results);
}

LogicalResult inferPredicateResult(std::optional<Location> location, ValueShapeRange operands,
                                   SmallVectorImpl<ShapedTypeComponents> &results) {
  Type i1 = IntegerType::get(operands[0].getType().getContext(), 1);
  return addResult(location, broadcastShapes(shapeAt(operands, 0), shapeAt(operands, 1)), i1,
                   results);
}

LogicalResult inferReduceResult(std::optional<Location> location, ValueShapeRange operands,
                                ArrayRef<int64_t> axes, bool keepDims,
                                SmallVectorImpl<ShapedTypeComponents> &results) {
  return addResult(location, reduceShape(shapeAt(operands, 0), axes, keepDims),
                   elementAt(operands, 0), results);
}

} // namespace detail

//===----------------------------------------------------------------------===//
// GEMMs and convolutions (the result element type is the builder's choice)
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferProduct(location, operands, results);
}

LogicalResult ScaledMatmulOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferProduct(location, operands, results);
}

LogicalResult LinearOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return inferLinear(location, operands, op.getTransposeWeight(), results);
}

LogicalResult ScaledLinearOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return inferLinear(location, operands, op.getTransposeWeight(), results);
}

LogicalResult Conv2dOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location,
                   conv2dShape(shapeAt(operands, 0), shapeAt(operands, 1), op.getStrides(),
                               op.getPads(), op.getDilations(), op.getGroups()),
                   nullptr, results);
}

LogicalResult ConvOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location,
                   convShape(shapeAt(operands, 0), shapeAt(operands, 1), op.getStrides(),
                             op.getPads(), op.getDilations(), op.getGroups()),
                   nullptr, results);
}

LogicalResult ConvTransposeOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location,
                   convTransposeShape(shapeAt(operands, 0), shapeAt(operands, 1),
                                      op.getStrides(), op.getPads(), op.getDilations(),
                                      op.getOutputPadding(), op.getGroups()),
                   nullptr, results);
}

//===----------------------------------------------------------------------===//
// Element-wise ops (the binary ops' rule is inferBroadcastResult)
//===----------------------------------------------------------------------===//

// The values broadcast together first, then with the condition.
LogicalResult WhereOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<ShapedTypeComponents> &results) {
  ShapeOrError values = broadcastShapes(shapeAt(operands, 1), shapeAt(operands, 2));
  if (!values.ok())
    return emitOptionalError(location, values.error);
  return addResult(location, broadcastShapes(shapeAt(operands, 0), values.shape),
                   elementAt(operands, 1), results);
}

//===----------------------------------------------------------------------===//
// Pooling (the reductions' rule is inferReduceResult)
//===----------------------------------------------------------------------===//

LogicalResult MaxPool2dOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  ArrayRef<int64_t> dilations;
  if (std::optional<ArrayRef<int64_t>> d = op.getDilations())
    dilations = *d;
  return addResult(location,
                   pool2dShape(shapeAt(operands, 0), op.getKernelShape(), op.getStrides(),
                               op.getPads(), dilations, op.getCeilMode()),
                   elementAt(operands, 0), results);
}

LogicalResult AvgPool2dOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location,
                   pool2dShape(shapeAt(operands, 0), op.getKernelShape(), op.getStrides(),
                               op.getPads(), {}, op.getCeilMode()),
                   elementAt(operands, 0), results);
}

/// The N-D pooling ops: the window's shape; values keep the input's
/// element type, indices are i64.
template <typename OpTy>
LogicalResult inferPoolNd(MLIRContext *ctx, std::optional<Location> location,
                          ValueShapeRange operands, DictionaryAttr attributes,
                          OpaqueProperties properties, RegionRange regions, bool indices,
                          SmallVectorImpl<ShapedTypeComponents> &results) {
  typename OpTy::Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location,
                   poolShape(shapeAt(operands, 0), op.getKernelShape(), op.getStrides(),
                             op.getPads(), op.getDilations(), op.getCeilMode()),
                   indices ? Type(IntegerType::get(ctx, 64)) : elementAt(operands, 0), results);
}

LogicalResult MaxPoolOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferPoolNd<MaxPoolOp>(ctx, location, operands, attributes, properties, regions, false,
                                results);
}

LogicalResult AvgPoolOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferPoolNd<AvgPoolOp>(ctx, location, operands, attributes, properties, regions, false,
                                results);
}

LogicalResult MaxPoolIndicesOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferPoolNd<MaxPoolIndicesOp>(ctx, location, operands, attributes, properties, regions,
                                       true, results);
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location, transposeShape(shapeAt(operands, 0), op.getPerm()),
                   elementAt(operands, 0), results);
}

LogicalResult ConcatOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  if (operands.empty())
    return emitOptionalError(location, "needs at least one input");
  Adaptor op(operands.getValues(), attributes, properties, regions);
  SmallVector<SmallVector<int64_t, 4>> shapes;
  for (unsigned i = 0; i < operands.size(); ++i)
    shapes.emplace_back(shapeAt(operands, i));
  return addResult(location, concatShape(shapes, op.getAxis()), elementAt(operands, 0), results);
}

LogicalResult GatherOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location, gatherShape(shapeAt(operands, 0), shapeAt(operands, 1), op.getAxis()),
                   elementAt(operands, 0), results);
}

} // namespace mixprec::graph

//===----------------------------------------------------------------------===//
// Index-driven ops
//===----------------------------------------------------------------------===//

namespace mixprec::graph {

LogicalResult GatherElementsOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location,
                   gatherElementsShape(shapeAt(operands, 0), shapeAt(operands, 1), op.getAxis()),
                   elementAt(operands, 0), results);
}

LogicalResult GatherNdOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location,
                   gatherNdShape(shapeAt(operands, 0), shapeAt(operands, 1), op.getBatchDims()),
                   elementAt(operands, 0), results);
}

/// ArgMax and ArgMin: int64 indices.
template <typename OpTy>
static LogicalResult inferArgReduce(MLIRContext *ctx, std::optional<Location> location,
                                    ValueShapeRange operands, DictionaryAttr attributes,
                                    OpaqueProperties properties, RegionRange regions,
                                    SmallVectorImpl<ShapedTypeComponents> &results) {
  typename OpTy::Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location, argReduceShape(shapeAt(operands, 0), op.getAxis(), op.getKeepdims()),
                   IntegerType::get(ctx, 64), results);
}

LogicalResult ArgMaxOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferArgReduce<ArgMaxOp>(ctx, location, operands, attributes, properties, regions,
                                  results);
}

LogicalResult ArgMinOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  return inferArgReduce<ArgMinOp>(ctx, location, operands, attributes, properties, regions,
                                  results);
}

LogicalResult TopKOp::inferReturnTypeComponents(
    MLIRContext *ctx, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  ShapeOrError s = topKShape(shapeAt(operands, 0), op.getAxis(), op.getK());
  if (failed(addResult(location, s, elementAt(operands, 0), results)))
    return failure();
  return addResult(location, s, IntegerType::get(ctx, 64), results);
}

LogicalResult ScatterNdOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  // The tuples must address the data (the updates' shape is the verifier's).
  ShapeOrError tuples = gatherNdShape(shapeAt(operands, 0), shapeAt(operands, 1), 0);
  if (!tuples.ok())
    return emitOptionalError(location, tuples.error);
  return addResult(location, ShapeOrError{Shape(shapeAt(operands, 0)), ""}, elementAt(operands, 0),
                   results);
}

LogicalResult ReduceProdOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return detail::inferReduceResult(location, operands, op.getAxes(), op.getKeepdims(), results);
}

LogicalResult CumSumOp::inferReturnTypeComponents(
    MLIRContext *, std::optional<Location> location, ValueShapeRange operands,
    DictionaryAttr attributes, OpaqueProperties properties, RegionRange regions,
    SmallVectorImpl<ShapedTypeComponents> &results) {
  Adaptor op(operands.getValues(), attributes, properties, regions);
  return addResult(location, axisPreservingShape(shapeAt(operands, 0), op.getAxis()),
                   elementAt(operands, 0), results);
}

} // namespace mixprec::graph
