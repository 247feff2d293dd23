//===- GraphInterfaces.cpp - op facts of the mp dialect --------------------===//
#include "dialects/Graph/IR/GraphInterfaces.h"

#include "mlir/IR/BuiltinTypes.h"

#include <algorithm>

using namespace mlir;

#include "dialects/Graph/IR/GraphInterfaces.cpp.inc"

namespace mixprec::graph {

llvm::StringRef stringifyPrecisionClass(PrecisionClass c) {
  switch (c) {
  case PrecisionClass::Lowp:
    return "lowp";
  case PrecisionClass::Fp32:
    return "fp32";
  case PrecisionClass::Follow:
    return "follow";
  case PrecisionClass::Constant:
    return "constant";
  case PrecisionClass::Cast:
    return "cast";
  case PrecisionClass::Scaling:
    return "scaling";
  }
  return "?";
}

namespace detail {

PrecisionClass precisionClassFromTraits(Operation *op) {
  if (op->hasTrait<OpTrait::LowpClass>())
    return PrecisionClass::Lowp;
  if (op->hasTrait<OpTrait::Fp32Class>())
    return PrecisionClass::Fp32;
  if (op->hasTrait<OpTrait::CastClass>())
    return PrecisionClass::Cast;
  if (op->hasTrait<OpTrait::ScalingClass>())
    return PrecisionClass::Scaling;
  if (op->hasTrait<mlir::OpTrait::ConstantLike>())
    return PrecisionClass::Constant;
  return PrecisionClass::Follow;
}

/// Elements of a ranked tensor value (0 for anything else).
static int64_t numElements(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  return t ? t.getNumElements() : 0;
}

int64_t defaultFlopCount(Operation *op) {
  PrecisionClass c = precisionClassFromTraits(op);
  if (op->hasTrait<OpTrait::DataMovement>() || c == PrecisionClass::Cast ||
      c == PrecisionClass::Constant)
    return 0;
  int64_t most = 0;
  for (Value v : op->getOperands())
    most = std::max(most, numElements(v));
  for (Value v : op->getResults())
    most = std::max(most, numElements(v));
  return most;
}

/// Bytes a ranked tensor value holds in storage (i1 and FP8 one byte each).
static int64_t storageBytes(Value v) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t)
    return 0;
  unsigned bits = t.getElementType().getIntOrFloatBitWidth();
  return t.getNumElements() * std::max<int64_t>(1, (bits + 7) / 8);
}

int64_t defaultByteCount(Operation *op) {
  if (op->hasTrait<mlir::OpTrait::ConstantLike>())
    return 0;
  int64_t bytes = 0;
  for (Value v : op->getOperands())
    bytes += storageBytes(v);
  for (Value v : op->getResults())
    bytes += storageBytes(v);
  return bytes;
}

} // namespace detail

PrecisionClass precisionClassOf(Operation *op) {
  if (auto policy = dyn_cast<PrecisionPolicyOpInterface>(op))
    return policy.getPrecisionClass();
  return PrecisionClass::Follow;
}

int64_t rowReductionDimsOf(Operation *op) {
  if (auto reduction = dyn_cast<RowReductionOpInterface>(op))
    return reduction.getRowReductionDims();
  return -1;
}

} // namespace mixprec::graph
