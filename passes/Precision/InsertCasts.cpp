//===- InsertCasts.cpp - --mp-insert-casts ---------------------------------===//
#include "passes/Passes.h"
#include "passes/Precision/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mixprec::passes {
#define GEN_PASS_DEF_INSERTCASTSPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;
using mixprec::graph::GraphDialect;

namespace mixprec::passes {
namespace {

/// Returns `t` with element type `element`.
RankedTensorType withElementType(Type t, Type element) {
  return cast<RankedTensorType>(t).clone(element);
}

Type elementTypeOf(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }

bool isFP8(Type t) { return isa<Float8E4M3FNType, Float8E5M2Type>(t); }

/// The storage dtype of an op's float results for an assigned precision:
/// TF32 stores F32, FP8 GEMMs write BF16.
Type resultDType(Type precision) {
  if (isa<FloatTF32Type>(precision))
    return Float32Type::get(precision.getContext());
  if (isFP8(precision))
    return BFloat16Type::get(precision.getContext());
  return precision;
}

/// The dtype operand `index` of `op` must arrive in, or null to leave it.
Type operandDType(Operation *op, unsigned index, Type precision) {
  Value operand = op->getOperand(index);
  if (!isa<FloatType>(elementTypeOf(operand)))
    return nullptr; // indices, masks
  // Attention adds its bias to FP32 scores: a -inf or -1e4 mask keeps the
  // dtype it has (FP16 would turn -1e30 into -inf, BF16 round the rest);
  // its gradient reads the FP32 log-sum-exp as it is.
  if (auto attention = dyn_cast<graph::AttentionOp>(op);
      attention && operand == attention.getBias())
    return nullptr;
  if (auto grad = dyn_cast<graph::AttentionGradOp>(op);
      grad && (operand == grad.getBias() || operand == grad.getLse()))
    return nullptr;
  if (isFP8(precision)) {
    // GEMM operands meet in F32, which holds every input dtype exactly, so
    // --mp-insert-scaling quantizes the original values (no double rounding
    // through BF16); --mp-fold-casts then drops the widening cast. The bias
    // follows the BF16 output.
    auto gemm = dyn_cast<graph::GemmOpInterface>(op);
    OpOperand *bias = gemm ? gemm.getBiasOperand() : nullptr;
    if (bias && operand == bias->get())
      return resultDType(precision);
    return Float32Type::get(op->getContext());
  }
  return resultDType(precision);
}

/// Results that are FP32 whatever the op's precision: attention's
/// log-sum-exp (the backward pass recomputes probabilities from it), and a
/// GEMM's marked mp.fp32_output (a training step's weight gradients).
bool isFp32Result(OpResult result) {
  if (result.getOwner()->hasAttr(GraphDialect::kFp32OutputAttr))
    return true;
  auto attention = dyn_cast<graph::AttentionOp>(result.getOwner());
  return attention && result == attention.getLse();
}

/// Creates or reuses the cast of `value` to `element`, placed right after
/// the value's definition so that every consumer can share it.
class CastBuilder {
public:
  Value get(Value value, Type element) {
    if (elementTypeOf(value) == element)
      return value;
    auto key = std::make_pair(value, element);
    auto it = casts.find(key);
    if (it != casts.end())
      return it->second;
    OpBuilder builder(value.getContext());
    Location loc = value.getLoc();
    if (auto arg = dyn_cast<BlockArgument>(value))
      builder.setInsertionPointToStart(arg.getOwner());
    else
      builder.setInsertionPointAfter(value.getDefiningOp());
    Value cast = builder.create<graph::CastOp>(loc, withElementType(value.getType(), element),
                                               value);
    casts[key] = cast;
    return cast;
  }

private:
  llvm::DenseMap<std::pair<Value, Type>, Value> casts;
};

//===----------------------------------------------------------------------===//
// --mp-insert-casts
//===----------------------------------------------------------------------===//

struct InsertCastsPass : public impl::InsertCastsPassBase<InsertCastsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &body = func.getBody().front();
    bool keepIo = func->hasAttr(GraphDialect::kKeepIoTypesAttr);
    CastBuilder casts;

    // Without keep-io-types, a float input that every consumer wants in one
    // dtype takes that dtype in the signature. State (an FP32 master weight,
    // say) keeps its dtype: the session holds it across runs as it is.
    if (!keepIo)
      for (BlockArgument arg : body.getArguments())
        if (!func.getArgAttr(arg.getArgNumber(), GraphDialect::kStateAttr))
          retypeArgument(arg);

    SmallVector<Operation *> annotated;
    for (Operation &op : body)
      if (op.hasAttr(GraphDialect::kPrecisionAttr))
        annotated.push_back(&op);
    for (Operation *op : annotated) {
      Type precision = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr).getValue();
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (Type want = operandDType(op, i, precision))
          op->setOperand(i, casts.get(op->getOperand(i), want));
      for (OpResult result : op->getResults())
        if (isa<FloatType>(elementTypeOf(result)) && !isFp32Result(result))
          result.setType(withElementType(result.getType(), resultDType(precision)));
    }

    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Type> resultTypes;
    for (auto [i, operand] : llvm::enumerate(ret.getOperands())) {
      Type original = func.getFunctionType().getResult(i);
      const bool state = func.getResultAttr(i, GraphDialect::kStateUpdateAttr) != nullptr;
      if ((keepIo || state) && operand.getType() != original)
        ret.setOperand(i, casts.get(operand, cast<RankedTensorType>(original).getElementType()));
      resultTypes.push_back(ret.getOperand(i).getType());
    }
    func.setType(FunctionType::get(&getContext(), body.getArgumentTypes(), resultTypes));
  }

  /// Gives `arg` the dtype its annotated consumers agree on, if they do.
  void retypeArgument(BlockArgument arg) {
    if (!isa<FloatType>(elementTypeOf(arg)))
      return;
    Type agreed;
    for (OpOperand &use : arg.getUses()) {
      Operation *user = use.getOwner();
      auto precision = user->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr);
      Type want = precision ? operandDType(user, use.getOperandNumber(), precision.getValue())
                            : elementTypeOf(arg);
      if (!want || (agreed && want != agreed))
        return;
      agreed = want;
    }
    if (agreed)
      arg.setType(withElementType(arg.getType(), agreed));
  }
};

} // namespace
} // namespace mixprec::passes
