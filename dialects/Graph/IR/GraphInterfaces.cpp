//===- GraphInterfaces.cpp - op facts of the mp dialect --------------------===//
#include "dialects/Graph/IR/GraphInterfaces.h"

#include "runtime/kernels/IntElementwise.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

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
  case PrecisionClass::Integer:
    return "integer";
  }
  return "?";
}

namespace detail {

PrecisionClass precisionClassFromTraits(Operation *op) {
  // Before the fp32 trait: an integer pow has no float to widen.
  if (!op->hasTrait<OpTrait::CastClass>() && computesOnIntegers(op))
    return PrecisionClass::Integer;
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
  // Integer ops are exact int64 arithmetic: no floating-point operations.
  if (op->hasTrait<OpTrait::DataMovement>() || c == PrecisionClass::Cast ||
      c == PrecisionClass::Constant || c == PrecisionClass::Integer)
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

/// Whether `t` is a tensor of i32 or i64 (not bool).
static bool isIntegerTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  auto integer = tensor ? dyn_cast<IntegerType>(tensor.getElementType()) : nullptr;
  return integer && integer.getWidth() > 1;
}

/// Whether `t` is a tensor of floats.
static bool isFloatTensor(Type t) {
  auto tensor = dyn_cast<RankedTensorType>(t);
  return tensor && isa<FloatType>(tensor.getElementType());
}

bool computesOnIntegers(Operation *op) {
  if (!isa<ElementwiseOpInterface>(op) || op->getNumResults() != 1)
    return false;
  if (isFloatTensor(op->getResult(0).getType()))
    return false;
  // A cast from a float reads FP32 values: it stays in float kernels.
  if (op->hasTrait<OpTrait::CastClass>() && isFloatTensor(op->getOperand(0).getType()))
    return false;
  return isIntegerTensor(op->getResult(0).getType()) ||
         llvm::any_of(op->getOperandTypes(), isIntegerTensor);
}

int64_t intElementwiseOpOf(Operation *op) {
  using runtime::cpu::IntOp;
  auto elementwise = dyn_cast<ElementwiseOpInterface>(op);
  if (!elementwise)
    return -1;
  // The intOp column of runtime/format/ScalarFns.def.
#define MP_INT_INT(K) int64_t(IntOp::K)
#define MP_INT_FLOAT_ONLY int64_t(-1)
  switch (elementwise.getScalarFn()) {
#define MP_SCALAR_FN(Name, mnemonic, value, arity, opcode, cuda, cudaUlp, eval, intOp, ...)        \
  case ScalarFn::Name:                                                                             \
    return MP_INT_##intOp;
#include "runtime/format/ScalarFns.def"
  }
#undef MP_INT_INT
#undef MP_INT_FLOAT_ONLY
  return -1;
}

int64_t rowReductionDimsOf(Operation *op) {
  if (auto reduction = dyn_cast<RowReductionOpInterface>(op))
    return reduction.getRowReductionDims();
  return -1;
}

} // namespace mixprec::graph
