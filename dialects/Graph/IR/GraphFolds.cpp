//===- GraphFolds.cpp - folders of mp ops and constant materialization ----===//
//
// What a fold may do here: return an existing value, a constant attribute
// (materialized as mp.constant by GraphDialect::materializeConstant), or
// update the op in place to read an equivalent operand. Every folded
// constant is rounded exactly as the run-time op would round it.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace mixprec::graph {
namespace {

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// The value an exact widening cast reads, or null when `v` is not the
/// result of one.
Value sourceOfExactWidening(Value v) {
  auto cast = v.getDefiningOp<CastOp>();
  if (cast && isExactWidening(elementTypeOf(cast.getInput()), elementTypeOf(v)))
    return cast.getInput();
  return nullptr;
}

/// The value a scaling op (mp.amax, mp.quantize) may read instead of its
/// input `v`: the value before an exact widening from a non-FP8 dtype. The
/// op's result is the same on both; it is null when there is none.
Value narrowSourceForScaling(Value v) {
  Value narrow = sourceOfExactWidening(v);
  if (!narrow || isa<Float8E4M3FNType, Float8E5M2Type>(elementTypeOf(narrow)))
    return nullptr;
  return narrow;
}

/// Points a scaling op's `input` at its narrow source, if it has one, and
/// returns the op's `result` (an in-place fold); nothing otherwise.
OpFoldResult foldScalingInput(OpOperand &input, Value result) {
  Value narrow = narrowSourceForScaling(input.get());
  if (!narrow)
    return {};
  input.set(narrow);
  return result;
}

} // namespace

Operation *GraphDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                             Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(widen(x)) is cast(x): the widening lost nothing.
  if (Value original = sourceOfExactWidening(getInput())) {
    if (original.getType() == getType())
      return original;
    getInputMutable().assign(original);
    return getResult();
  }
  auto constant = dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput());
  if (!constant || !storageFormatOf(constant.getElementType()))
    return {};
  return storeFloatConstant(cast<RankedTensorType>(getType()), readFloatConstant(constant));
}

OpFoldResult AmaxOp::fold(FoldAdaptor) {
  return foldScalingInput(getInputMutable(), getResult());
}

OpFoldResult QuantizeOp::fold(FoldAdaptor) {
  return foldScalingInput(getInputMutable(), getResult());
}

/// The layout of a float constant is the compiler's (a weight's transpose
/// becomes a GEMM's flag, its lookups stay gathers of the one stored
/// table), so folders move only integer and bool constants: shapes, indices
/// and masks.
static bool isMovableConstant(Attribute value) {
  auto dense = dyn_cast_if_present<DenseElementsAttr>(value);
  return dense && !isa<FloatType>(dense.getElementType());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // Both reshapes keep the elements in row-major order: the second one can
  // read the first one's input.
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    if (inner.getInput().getType() == getType())
      return inner.getInput();
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (isMovableConstant(adaptor.getInput()))
    return cast<DenseElementsAttr>(adaptor.getInput()).reshape(cast<ShapedType>(getType()));
  return {};
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [d, p] : llvm::enumerate(getPerm()))
    if (p != static_cast<int64_t>(d))
      return {};
  return getInput();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  return {};
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() != getType())
    return {};
  if (llvm::any_of(getStarts(), [](int64_t s) { return s != 0; }) ||
      llvm::any_of(getSteps(), [](int64_t s) { return s != 1; }))
    return {};
  return getInput();
}

} // namespace mixprec::graph
