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

} // namespace mixprec::graph
