//===- GraphBuilder.h - building mp ops as formulas -------------*- C++ -*-===//
//
// GraphBuilder creates mp ops at one location and computes each result type
// from the operands (NumPy broadcasting, reductions, reshapes), so that code
// that writes math as mp ops (gradient rules, the training step's loss,
// optimizer and loss-scale updates) reads as its formulas.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_DIALECTS_GRAPH_IR_GRAPHBUILDER_H
#define MIXPREC_DIALECTS_GRAPH_IR_GRAPHBUILDER_H

#include "common/Shapes.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>

namespace mixprec::graph {
namespace builder_detail {
using namespace mlir;

inline RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }
inline ArrayRef<int64_t> shapeOf(Value v) { return tensorType(v).getShape(); }
inline Type elementTypeOf(Value v) { return tensorType(v).getElementType(); }
inline bool isFloatTensor(Value v) { return isa<FloatType>(elementTypeOf(v)); }

/// The value of a splat float constant, if `v` is one.
inline std::optional<double> splatValue(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  auto dense = constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

/// Builds mp ops at one location (gradient rules, the training step),, computing each
/// result type from the operands, so that a rule reads as its formula.
class GraphBuilder {
public:
  GraphBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  /// A splat float constant of `shape` (rank 0 by default).
  Value splat(double v, Type elementType, ArrayRef<int64_t> shape = {}) {
    auto type = RankedTensorType::get(shape, elementType);
    return b.create<ConstantOp>(loc, type,
                                DenseElementsAttr::get(type, FloatAttr::get(elementType, v)));
  }
  /// A rank-0 constant of `like`'s element type: broadcasts in any binary op.
  Value scalar(double v, Value like) { return splat(v, elementTypeOf(like)); }
  /// Zeros of `like`'s type.
  Value zerosLike(Value like) { return splat(0.0, elementTypeOf(like), shapeOf(like)); }
  /// An integer constant of `shape` holding `values` (row-major).
  Value indexConstant(ArrayRef<int64_t> values, ArrayRef<int64_t> shape, Type elementType) {
    auto type = RankedTensorType::get(shape, elementType);
    SmallVector<APInt> ints;
    for (int64_t v : values)
      ints.push_back(APInt(elementType.getIntOrFloatBitWidth(), v, /*isSigned=*/true));
    return b.create<ConstantOp>(loc, type, DenseElementsAttr::get(type, ints));
  }

  /// A broadcasting binary op; its result has `lhs`'s element type.
  template <typename OpT> Value binary(Value lhs, Value rhs) {
    shapes::ShapeOrError shape = shapes::broadcastShapes(shapeOf(lhs), shapeOf(rhs));
    auto type = RankedTensorType::get(shape.shape, elementTypeOf(lhs));
    return b.create<OpT>(loc, type, lhs, rhs);
  }
  Value add(Value x, Value y) {
    if (splatValue(y) == 0.0 && sameShapeAfterBroadcast(x, y))
      return x;
    return binary<AddOp>(x, y);
  }
  Value sub(Value x, Value y) { return binary<SubOp>(x, y); }
  /// x * y, with the products by splat 0, 1 and -1 folded (they are most
  /// partial derivatives of the table).
  Value mul(Value x, Value y) {
    if (std::optional<double> c = splatValue(y); c && sameShapeAfterBroadcast(x, y)) {
      if (*c == 1.0)
        return x;
      if (*c == -1.0)
        return neg(x);
      if (*c == 0.0)
        return zerosLike(x);
    }
    return binary<MulOp>(x, y);
  }
  Value div(Value x, Value y) { return binary<DivOp>(x, y); }
  Value neg(Value x) { return unary<NegOp>(x); }
  template <typename OpT> Value unary(Value x) { return b.create<OpT>(loc, x.getType(), x); }
  /// A bool tensor comparing `x` and `y` (broadcast).
  template <typename OpT> Value compare(Value x, Value y) {
    shapes::ShapeOrError shape = shapes::broadcastShapes(shapeOf(x), shapeOf(y));
    return b.create<OpT>(loc, RankedTensorType::get(shape.shape, b.getI1Type()), x, y);
  }
  /// condition ? x : y, broadcast; the result has `x`'s element type.
  Value where(Value condition, Value x, Value y) {
    shapes::ShapeOrError shape = shapes::broadcastShapes(shapeOf(condition), shapeOf(x));
    shape = shapes::broadcastShapes(shape.shape, shapeOf(y));
    return b.create<WhereOp>(loc, RankedTensorType::get(shape.shape, elementTypeOf(x)),
                             condition, x, y);
  }
  /// 1 where `condition` holds, else 0, in `like`'s element type.
  Value indicator(Value condition, Value like) {
    return where(condition, scalar(1.0, like), scalar(0.0, like));
  }

  Value reshape(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    return b.create<ReshapeOp>(loc, RankedTensorType::get(shape, elementTypeOf(x)), x);
  }
  Value transpose(Value x, ArrayRef<int64_t> perm) {
    if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return x;
    shapes::ShapeOrError shape = shapes::transposeShape(shapeOf(x), perm);
    return b.create<TransposeOp>(loc, RankedTensorType::get(shape.shape, elementTypeOf(x)), x,
                                 perm);
  }
  /// Swaps the last two dims.
  Value transposeLast2(Value x) {
    SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, shapeOf(x).size()));
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return transpose(x, perm);
  }
  /// A slice from the origin with unit steps.
  Value sliceFront(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    SmallVector<int64_t> zeros(shape.size(), 0), ones(shape.size(), 1);
    return b.create<SliceOp>(loc, RankedTensorType::get(shape, elementTypeOf(x)), x, zeros, ones);
  }
  Value cast(Value x, Type elementType) {
    if (elementTypeOf(x) == elementType)
      return x;
    return b.create<CastOp>(loc, RankedTensorType::get(shapeOf(x), elementType), x);
  }
  Value toF32(Value x) { return cast(x, b.getF32Type()); }

  /// A sum over `axes` (increasing), accumulated in FP32 (the default acc_type).
  Value reduceSum(Value x, ArrayRef<int64_t> axes, bool keepDims) {
    if (axes.empty())
      return x;
    shapes::ShapeOrError shape = shapes::reduceShape(shapeOf(x), axes, keepDims);
    return b.create<ReduceSumOp>(loc, RankedTensorType::get(shape.shape, elementTypeOf(x)), x,
                                 axes, keepDims, TypeAttr());
  }
  /// The mean over `axes`, as a sum times 1/count (FP32 accumulation).
  Value reduceMean(Value x, ArrayRef<int64_t> axes) {
    int64_t count = 1;
    for (int64_t a : axes)
      count *= shapeOf(x)[a];
    return mul(reduceSum(x, axes, /*keepDims=*/true), scalar(1.0 / double(count), x));
  }

  /// The adjoint of a broadcast: `x` summed over the dims that broadcasting
  /// added or stretched to reach its shape, reshaped to `shape`.
  Value sumToShape(Value x, ArrayRef<int64_t> shape) {
    ArrayRef<int64_t> from = shapeOf(x);
    if (from == shape)
      return x;
    size_t lead = from.size() - shape.size();
    SmallVector<int64_t> axes;
    for (size_t i = 0; i < from.size(); ++i)
      if (i < lead || (shape[i - lead] == 1 && from[i] != 1))
        axes.push_back(static_cast<int64_t>(i));
    return reshape(reduceSum(x, axes, /*keepDims=*/true), shape);
  }
  /// `x` broadcast to `shape` (NumPy rules): there is no broadcast op, so it
  /// adds zeros of that shape, which is exact.
  Value broadcastTo(Value x, ArrayRef<int64_t> shape) {
    if (shapeOf(x) == shape)
      return x;
    return binary<AddOp>(x, splat(0.0, elementTypeOf(x), shape));
  }

  /// numpy.matmul (both operands of `lhs`'s element type).
  Value matmul(Value lhs, Value rhs) {
    shapes::ShapeOrError shape = shapes::matmulShape(shapeOf(lhs), shapeOf(rhs));
    return b.create<MatmulOp>(loc, RankedTensorType::get(shape.shape, elementTypeOf(lhs)), lhs,
                              rhs, TypeAttr());
  }
  Value linear(Value input, Value weight, bool transposeWeight) {
    shapes::ShapeOrError shape =
        shapes::linearShape(shapeOf(input), shapeOf(weight), transposeWeight);
    return b.create<LinearOp>(loc, RankedTensorType::get(shape.shape, elementTypeOf(input)),
                              input, weight, Value(), transposeWeight, TypeAttr());
  }
  /// A convolution without bias: mp.conv2d for 2 spatial dims (as the
  /// importer writes it), mp.conv otherwise.
  Value conv(Value input, Value weight, ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
             ArrayRef<int64_t> dilations, int64_t groups) {
    shapes::ShapeOrError shape =
        shapes::convShape(shapeOf(input), shapeOf(weight), strides, pads, dilations, groups);
    auto type = RankedTensorType::get(shape.shape, elementTypeOf(input));
    if (shapeOf(input).size() == 4)
      return b.create<Conv2dOp>(loc, type, input, weight, Value(), strides, pads, dilations,
                                groups, TypeAttr());
    return b.create<ConvOp>(loc, type, input, weight, Value(), strides, pads, dilations, groups,
                            TypeAttr());
  }
  Value convTranspose(Value input, Value weight, ArrayRef<int64_t> strides,
                      ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                      ArrayRef<int64_t> outputPadding, int64_t groups) {
    shapes::ShapeOrError shape = shapes::convTransposeShape(
        shapeOf(input), shapeOf(weight), strides, pads, dilations, outputPadding, groups);
    return b.create<ConvTransposeOp>(loc,
                                     RankedTensorType::get(shape.shape, elementTypeOf(input)),
                                     input, weight, Value(), strides, pads, dilations,
                                     outputPadding, groups, TypeAttr());
  }
  Value concat(ValueRange parts, int64_t axis) {
    if (parts.size() == 1)
      return parts[0];
    std::vector<shapes::Dims> inputs; // views of the types' shapes
    for (Value p : parts)
      inputs.emplace_back(shapeOf(p));
    shapes::ShapeOrError shape = shapes::concatShape(inputs, axis);
    return b.create<ConcatOp>(loc, RankedTensorType::get(shape.shape, elementTypeOf(parts[0])),
                              parts, axis);
  }
  /// scatter_nd(zeros of `dataShape`, tuples, updates, "add"): the adjoint
  /// of reading the elements (or slices) at `tuples`.
  Value scatterAdd(ArrayRef<int64_t> dataShape, Value tuples, Value updates) {
    Value zeros = splat(0.0, elementTypeOf(updates), dataShape);
    return b.create<ScatterNdOp>(loc, zeros.getType(), zeros, tuples, updates, "add");
  }

  OpBuilder &b;
  Location loc;

private:
  /// Whether broadcasting `y` against `x` leaves `x`'s shape unchanged.
  bool sameShapeAfterBroadcast(Value x, Value y) {
    shapes::ShapeOrError shape = shapes::broadcastShapes(shapeOf(x), shapeOf(y));
    return shape.ok() && ArrayRef<int64_t>(shape.shape) == shapeOf(x);
  }
};

} // namespace builder_detail

using builder_detail::elementTypeOf;
using builder_detail::GraphBuilder;
using builder_detail::isFloatTensor;
using builder_detail::shapeOf;
using builder_detail::splatValue;
using builder_detail::tensorType;

} // namespace mixprec::graph

#endif // MIXPREC_DIALECTS_GRAPH_IR_GRAPHBUILDER_H
