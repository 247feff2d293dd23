//===- FoldCasts.cpp - --mp-fold-casts -------------------------------------===//
#include "passes/Passes.h"

#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_FOLDCASTSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;
namespace num = mixprec::numerics;

namespace mixprec::passes {
namespace {

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

/// Whether every value of `from` is exactly a value of `to` (so a cast
/// from -> to loses nothing): FP8 fits in F16, BF16 and F32; F16 and BF16
/// fit in F32; F16 and BF16 do not fit in each other.
bool isExactWidening(Type from, Type to) {
  if (from == to)
    return true;
  if (!graph::storageFormatOf(from) || !graph::storageFormatOf(to))
    return false;
  if (to.isF32())
    return true;
  return isa<Float8E4M3FNType, Float8E5M2Type>(from) && (to.isF16() || to.isBF16());
}

/// Rounds a float constant to `to` exactly as the run-time cast does
/// (round-to-nearest-even, FP8 saturating), or returns null if `to` is not
/// a float storage dtype.
DenseElementsAttr castConstant(DenseElementsAttr attr, Type to) {
  std::optional<num::Format> format = graph::storageFormatOf(to);
  if (!format || !graph::storageFormatOf(attr.getElementType()))
    return nullptr;
  auto type = cast<RankedTensorType>(attr.getType()).clone(to);
  std::vector<float> values = graph::readFloatConstant(attr);
  num::RoundOptions options;
  options.saturate = *format == num::Format::F8E4M3FN || *format == num::Format::F8E5M2;
  size_t bytes = num::formatBytes(*format);
  std::vector<char> raw(values.size() * bytes);
  num::encodeArray(*format, values.data(), raw.data(), values.size(), options);
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

//===----------------------------------------------------------------------===//
// --mp-fold-casts
//===----------------------------------------------------------------------===//

struct FoldCastsPass : public impl::FoldCastsPassBase<FoldCastsPass> {
  /// One forward sweep suffices: an operand's casts are already folded
  /// when its consumer is visited.
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    llvm::DenseMap<std::pair<Value, Type>, Value> firstCast;
    SmallVector<graph::CastOp> casts;
    func.walk([&](graph::CastOp op) { casts.push_back(op); });
    for (graph::CastOp op : casts) {
      Value input = op.getInput();
      Type to = elementTypeOf(op.getOutput());
      // A cast whose input was itself an exact widening casts the original.
      if (auto inner = input.getDefiningOp<graph::CastOp>())
        if (isExactWidening(elementTypeOf(inner.getInput()), elementTypeOf(input)))
          input = inner.getInput();
      Value replacement;
      if (elementTypeOf(input) == to) {
        replacement = input;
      } else if (auto constant = input.getDefiningOp<graph::ConstantOp>()) {
        auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
        if (DenseElementsAttr folded = dense ? castConstant(dense, to) : nullptr) {
          OpBuilder builder(op);
          replacement = builder.create<graph::ConstantOp>(constant.getLoc(), folded);
        }
      }
      if (!replacement) {
        auto key = std::make_pair(input, to);
        auto [it, inserted] = firstCast.try_emplace(key, op.getOutput());
        if (!inserted && it->second.getDefiningOp()->isBeforeInBlock(op))
          replacement = it->second;
        else if (input != op.getInput())
          op.getInputMutable().assign(input);
      }
      if (replacement) {
        op.getOutput().replaceAllUsesWith(replacement);
        op.erase();
      }
    }
    bypassWideningIntoScaling(func);
    eraseDeadCastsAndConstants(func);
  }

  /// mp.amax and mp.quantize give the same result on a value and on its
  /// exact widening, so they read the narrow value and the cast can go.
  void bypassWideningIntoScaling(func::FuncOp func) {
    func.walk([&](Operation *op) {
      if (!isa<graph::AmaxOp, graph::QuantizeOp>(op))
        return;
      auto cast = op->getOperand(0).getDefiningOp<graph::CastOp>();
      if (cast && isExactWidening(elementTypeOf(cast.getInput()), elementTypeOf(cast.getOutput())) &&
          !isa<Float8E4M3FNType, Float8E5M2Type>(elementTypeOf(cast.getInput())))
        op->setOperand(0, cast.getInput());
    });
  }

  /// Removes casts and constants that nothing uses any more.
  void eraseDeadCastsAndConstants(func::FuncOp func) {
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<graph::CastOp, graph::ConstantOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty())
        op->erase();
  }
};

} // namespace
} // namespace mixprec::passes
