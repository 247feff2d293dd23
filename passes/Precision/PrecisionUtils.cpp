//===- PrecisionUtils.cpp - dtype names, op classes, op names --------------===//
#include "passes/Precision/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mixprec::passes {

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

Type dtypeOf(MLIRContext *ctx, Precision precision) {
  switch (precision) {
  case Precision::FP32:
    return Float32Type::get(ctx);
  case Precision::TF32:
    return FloatTF32Type::get(ctx);
  case Precision::BF16:
    return BFloat16Type::get(ctx);
  case Precision::FP16:
    return Float16Type::get(ctx);
  case Precision::FP8:
    return Float8E4M3FNType::get(ctx);
  }
  llvm_unreachable("a precision without a dtype");
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
