//===- PrecisionUtils.cpp - dtype names, op classes, op names --------------===//
#include "passes/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mixprec::passes {

OpClass classifyOp(Operation *op) {
  using namespace graph;
  return llvm::TypeSwitch<Operation *, OpClass>(op)
      .Case<MatmulOp, LinearOp, Conv2dOp, ScaledMatmulOp, ScaledLinearOp>(
          [](auto) { return OpClass::LowPrecision; })
      .Case<SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp, BatchNormOp, ReduceSumOp,
            ReduceMeanOp, ExpOp, LogOp, PowOp, SqrtOp, RsqrtOp, ErfOp, ReciprocalOp>(
          [](auto) { return OpClass::Fp32; })
      .Case<ConstantOp>([](auto) { return OpClass::Constant; })
      .Default([](Operation *) { return OpClass::Follow; });
}

const char *opClassName(OpClass c) {
  switch (c) {
  case OpClass::LowPrecision:
    return "lowp";
  case OpClass::Fp32:
    return "fp32";
  case OpClass::Follow:
    return "follow";
  case OpClass::Constant:
    return "constant";
  }
  return "?";
}

bool accumulates(Operation *op) {
  using namespace graph;
  return isa<MatmulOp, LinearOp, Conv2dOp, ScaledMatmulOp, ScaledLinearOp, SoftmaxOp,
             LogSoftmaxOp, LayerNormOp, RmsNormOp, BatchNormOp, ReduceSumOp, ReduceMeanOp>(op);
}

bool supportsFp8(Operation *op) {
  if (isa<graph::LinearOp>(op))
    return true;
  if (auto matmul = dyn_cast<graph::MatmulOp>(op)) {
    auto rhs = matmul.getRhs().getDefiningOp<graph::ConstantOp>();
    return rhs && cast<RankedTensorType>(matmul.getRhs().getType()).getRank() == 2;
  }
  return false;
}

std::optional<Type> parseDType(MLIRContext *ctx, StringRef name) {
  if (name == "fp32" || name == "f32")
    return Float32Type::get(ctx);
  if (name == "tf32")
    return FloatTF32Type::get(ctx);
  if (name == "bf16")
    return BFloat16Type::get(ctx);
  if (name == "fp16" || name == "f16")
    return Float16Type::get(ctx);
  if (name == "fp8" || name == "f8E4M3FN" || name == "e4m3")
    return Float8E4M3FNType::get(ctx);
  if (name == "f8E5M2" || name == "e5m2")
    return Float8E5M2Type::get(ctx);
  return std::nullopt;
}

std::string dtypeName(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

std::string opName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (isa<NameLoc>(inner)) {
        loc = inner;
        break;
      }
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

StringRef opTypeName(Operation *op) {
  return op->getName().getStringRef().drop_front(op->getName().getDialectNamespace().size() + 1);
}

unsigned dtypeBytes(Type t) {
  if (isa<FloatTF32Type>(t))
    return 4;
  return (t.getIntOrFloatBitWidth() + 7) / 8;
}

} // namespace mixprec::passes
