//===- ConstantFolding.cpp - mp ops folded by their reference semantics ---===//
#include "compiler/Interpreter/ConstantFolding.h"

#include "compiler/Interpreter/Evaluator.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace mixprec::compiler {
namespace {

/// The number of elements of a result, or -1 for a type the interpreter
/// does not hold (unranked, dynamic).
int64_t staticElementsOf(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return -1;
  return tensor.getNumElements();
}

/// A host tensor as a dense attribute of `type`: floats stored in its
/// dtype (they are already rounded to it), integers in its width (i32
/// values are already within range), bools as i1.
DenseElementsAttr attrOfTensor(const HostTensor &t, RankedTensorType type) {
  switch (t.kind) {
  case HostTensor::Kind::Float:
    return graph::storeFloatConstant(type, t.floats);
  case HostTensor::Kind::Int: {
    unsigned width = type.getElementTypeBitWidth();
    SmallVector<APInt> values;
    values.reserve(t.ints.size());
    for (int64_t v : t.ints)
      values.push_back(APInt(width, static_cast<uint64_t>(v), /*isSigned=*/true));
    return DenseElementsAttr::get(type, values);
  }
  case HostTensor::Kind::Bool: {
    SmallVector<bool> values(t.bools.begin(), t.bools.end());
    return DenseElementsAttr::get(type, values);
  }
  }
  return nullptr;
}

} // namespace

int64_t foldLimitOf(Operation *op, ArrayRef<DenseElementsAttr> operands,
                    const ConstantFoldLimits &limits) {
  bool anyFloat = llvm::any_of(operands, [](DenseElementsAttr a) {
    return a && isa<FloatType>(a.getElementType());
  });
  if (op->hasTrait<graph::OpTrait::DataMovement>())
    return anyFloat ? 0 : limits.runTime;
  return anyFloat ? limits.runTime : limits.compileTime;
}

FailureOr<SmallVector<DenseElementsAttr, 1>>
evaluateOnConstants(Operation *op, ArrayRef<DenseElementsAttr> operands, int64_t maxElements,
                    std::string &error) {
  error.clear();
  if (op->getNumRegions() != 0 || op->getNumResults() == 0 || !isMemoryEffectFree(op) ||
      op->hasTrait<OpTrait::ConstantLike>() || !hasReferenceSemantics(op) ||
      operands.size() != op->getNumOperands())
    return failure();
  for (Type t : op->getResultTypes()) {
    int64_t n = staticElementsOf(t);
    if (n < 0 || n > maxElements)
      return failure();
  }
  llvm::DenseMap<Value, HostTensor> env, constants;
  for (auto [value, attr] : llvm::zip(op->getOperands(), operands)) {
    HostTensor t;
    if (!attr || !decodeConstant(attr, t, error)) {
      error.clear(); // not a dense constant: nothing to fold, nothing wrong
      return failure();
    }
    constants[value] = std::move(t);
  }
  Evaluator evaluator(env, constants);
  if (failed(evaluator.execute(op))) {
    error = evaluator.error();
    return failure();
  }
  SmallVector<DenseElementsAttr, 1> results;
  for (Value result : op->getResults())
    results.push_back(
        attrOfTensor(evaluator.get(result), cast<RankedTensorType>(result.getType())));
  return results;
}

FailureOr<SmallVector<DenseElementsAttr, 1>>
foldConstantOp(Operation *op, const ConstantFoldLimits &limits, std::string &error) {
  error.clear();
  SmallVector<DenseElementsAttr> operands;
  for (Value v : op->getOperands()) {
    Operation *def = v.getDefiningOp();
    auto value = def ? dyn_cast_if_present<DenseElementsAttr>(constantValueOf(def)) : nullptr;
    if (!value)
      return failure();
    operands.push_back(value);
  }
  int64_t limit = foldLimitOf(op, operands, limits);
  if (limit <= 0)
    return failure();
  return evaluateOnConstants(op, operands, limit, error);
}

} // namespace mixprec::compiler
