//===- AssignPrecision.cpp - --mp-assign-precision -------------------------===//
#include "passes/Passes.h"
#include "passes/Precision/PolicyFile.h"
#include "passes/Precision/PrecisionUtils.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/GlobPattern.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>

namespace mixprec::passes {
#define GEN_PASS_DEF_ASSIGNPRECISIONPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;
using mixprec::graph::GraphDialect;

namespace mixprec::passes {
namespace {

/// Whether `op` can run as an FP8 scaled GEMM (an op fact; false for
/// anything that is not an mp op).
bool hasFp8GemmForm(Operation *op) {
  auto policy = dyn_cast<graph::PrecisionPolicyOpInterface>(op);
  return policy && policy.hasFp8GemmForm();
}

/// Whether an FP8 GEMM of `op` (a matmul or linear: operand 0's last dim
/// is the contraction k, the result's last dim the columns n) has k and n
/// static multiples of 16, the alignment cuBLASLt's FP8 GEMMs need: on an
/// H200 (cuBLASLt 13.1, 2026-12-04) its heuristic found no FP8 algorithm
/// for n = 10. Transformer Engine asks the same of its FP8 GEMMs. Modules
/// are backend-neutral, so the policy applies it for every target.
bool hasFp8AlignedDims(Operation *op) {
  auto lastDimIsMultipleOf16 = [](Type type) {
    auto shaped = dyn_cast<RankedTensorType>(type);
    return shaped && shaped.getRank() > 0 && !ShapedType::isDynamic(shaped.getShape().back()) &&
           shaped.getShape().back() % 16 == 0;
  };
  return op->getNumOperands() > 0 && op->getNumResults() > 0 &&
         lastDimIsMultipleOf16(op->getOperand(0).getType()) &&
         lastDimIsMultipleOf16(op->getResult(0).getType());
}

constexpr double kFp16Max = 65504.0;

/// Whether `pattern` names the op by type ("softmax", "mp.softmax") or by
/// a glob over its node name.
bool matches(Operation *op, StringRef pattern) {
  StringRef type = opTypeName(op);
  if (pattern == type || pattern == op->getName().getStringRef())
    return true;
  std::string name = opName(op);
  if (name.empty())
    return false;
  auto glob = llvm::GlobPattern::create(pattern);
  return glob && glob->match(name);
}

/// Splits "GLOB:DTYPE" at the last colon (globs may not hold one).
LogicalResult parseForce(MLIRContext *ctx, StringRef entry, PolicyOverride &out,
                         std::string &error) {
  size_t colon = entry.rfind(':');
  if (colon == StringRef::npos || colon == 0) {
    error = "force entry '" + entry.str() + "' must be NAME:DTYPE";
    return failure();
  }
  std::optional<Type> dtype = parseDType(ctx, entry.drop_front(colon + 1));
  if (!dtype) {
    error = "force entry '" + entry.str() + "': unknown dtype '" +
            entry.drop_front(colon + 1).str() + "' (use fp32, tf32, bf16, fp16 or fp8)";
    return failure();
  }
  out = {entry.str(), entry.take_front(colon).str(), *dtype};
  return success();
}

/// Ranks dtypes for widest-input promotion.
int width(Type t) {
  if (t.isF32() || isa<FloatTF32Type>(t))
    return 32;
  return t.getIntOrFloatBitWidth();
}

/// The widest of two dtypes; f16 and bf16 together promote to f32, as
/// torch.promote_types does.
Type widest(Type a, Type b) {
  if (!a)
    return b;
  if (!b || a == b)
    return a;
  if (width(a) == width(b))
    return Float32Type::get(a.getContext());
  return width(a) > width(b) ? a : b;
}

/// The largest |x| of a float constant operand, or 0 for anything else.
double constantAmax(Value v) {
  auto constant = v.getDefiningOp<graph::ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !isa<FloatType>(dense.getElementType()))
    return 0;
  double amax = 0;
  for (float x : graph::readFloatConstant(dense))
    amax = std::max(amax, static_cast<double>(std::fabs(x)));
  return amax;
}

/// Formats a number compactly for reasons ("1.3e+05").
std::string shortNumber(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3g", v);
  return buffer;
}

//===----------------------------------------------------------------------===//
// --mp-assign-precision
//===----------------------------------------------------------------------===//

struct AssignPrecisionPass
    : public impl::AssignPrecisionPassBase<AssignPrecisionPass> {
  using AssignPrecisionPassBase::AssignPrecisionPassBase;

  void runOnOperation() override;

private:
  LogicalResult buildPolicy(PrecisionPolicy &policy);

  /// The dtype an op's float result is assumed to have before casts: the
  /// assigned precision (FP8 GEMMs write BF16), or the type it has.
  Type valueDType(Value v, const PrecisionPolicy &policy);

  /// Decides the dtype and reason of one op.
  std::pair<Type, std::string> decide(Operation *op, PrecisionPolicy &policy);
};

LogicalResult AssignPrecisionPass::buildPolicy(PrecisionPolicy &policy) {
  MLIRContext *ctx = &getContext();
  func::FuncOp func = getOperation();
  std::string error;
  policy.target = dtypeOf(ctx, precision);
  policy.keepIoTypes = keepIoTypes;
  policy.fp16Margin = fp16Margin;
  policy.underflowThreshold = underflowThreshold;
  if (overflowFallback != Precision::BF16 && overflowFallback != Precision::FP32) {
    func.emitError() << "overflow-fallback must be bf16 or fp32, got '"
                     << precisionName(overflowFallback) << "'";
    return failure();
  }
  policy.overflowFallback = dtypeOf(ctx, overflowFallback);

  std::vector<std::string> forces(force.begin(), force.end());
  std::vector<std::string> keeps(keepFp32.begin(), keepFp32.end());
  if (!policyFile.empty() &&
      failed(readPolicyFile(ctx, policyFile, policy, forces, keeps, error))) {
    func.emitError() << error;
    return failure();
  }
  for (const std::string &entry : forces) {
    PolicyOverride o;
    if (failed(parseForce(ctx, entry, o, error))) {
      func.emitError() << error;
      return failure();
    }
    policy.overrides.push_back(o);
  }
  for (const std::string &entry : keeps)
    policy.overrides.push_back({"keep-fp32=" + entry, entry, Float32Type::get(ctx)});
  for (PolicyOverride &o : policy.overrides)
    if (o.entry.rfind("keep-fp32=", 0) != 0)
      o.entry = "force=" + o.entry;
  return success();
}

Type AssignPrecisionPass::valueDType(Value v, const PrecisionPolicy &policy) {
  Type type = cast<RankedTensorType>(v.getType()).getElementType();
  if (!isa<FloatType>(type))
    return nullptr;
  if (isa<BlockArgument>(v))
    return policy.keepIoTypes || policy.target.isF32() || isa<FloatTF32Type>(policy.target)
               ? type
               : (isa<Float8E4M3FNType>(policy.target) ? BFloat16Type::get(v.getContext())
                                                       : policy.target);
  Operation *producer = v.getDefiningOp();
  // Constants adapt to their consumers (weights are stored in the dtype
  // that uses them), so they never promote an op.
  if (isa<graph::ConstantOp>(producer))
    return nullptr;
  if (producer->hasAttr(GraphDialect::kFp32OutputAttr))
    return Float32Type::get(v.getContext()); // an FP32 weight gradient
  if (auto assigned = producer->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr)) {
    Type t = assigned.getValue();
    if (isa<FloatTF32Type>(t))
      return Float32Type::get(t.getContext());
    if (isa<Float8E4M3FNType, Float8E5M2Type>(t))
      return BFloat16Type::get(t.getContext()); // FP8 GEMMs write BF16
    return t;
  }
  return type;
}

std::pair<Type, std::string> AssignPrecisionPass::decide(Operation *op, PrecisionPolicy &policy) {
  MLIRContext *ctx = &getContext();
  Type f32 = Float32Type::get(ctx);
  graph::PrecisionClass opClass = graph::precisionClassOf(op);

  // The training step's update and gradient buckets (GraphBase.td): a
  // dtype the step's design fixes, above the policy and its overrides.
  if (auto pinned = op->getAttrOfType<TypeAttr>(GraphDialect::kPinnedPrecisionAttr))
    return {pinned.getValue(), "pinned"};

  for (PolicyOverride &o : policy.overrides)
    if (matches(op, o.pattern)) {
      o.matched = true;
      return {o.dtype, "override:" + o.entry};
    }

  Type dtype;
  std::string reason;
  switch (opClass) {
  case graph::PrecisionClass::Lowp:
    dtype = policy.target;
    reason = "policy:lowp";
    if (isa<Float8E4M3FNType>(dtype) && !hasFp8GemmForm(op)) {
      dtype = BFloat16Type::get(ctx);
      reason = "policy:lowp(no-fp8-gemm)";
    } else if (isa<Float8E4M3FNType>(dtype) && !hasFp8AlignedDims(op)) {
      dtype = BFloat16Type::get(ctx);
      reason = "policy:lowp(fp8-unaligned)";
    }
    break;
  case graph::PrecisionClass::Fp32:
    return {f32, "policy:fp32"};
  case graph::PrecisionClass::Follow: {
    for (Value operand : op->getOperands())
      dtype = widest(dtype, valueDType(operand, policy));
    reason = "follow:widest-input";
    // An op fed only by constants (an embedding lookup, a weight transpose)
    // keeps their dtype, as an FP32 parameter does under autocast.
    if (!dtype) {
      dtype = f32;
      reason = "follow:constant-inputs";
    }
    break;
  }
  case graph::PrecisionClass::Constant:
  case graph::PrecisionClass::Cast:
  case graph::PrecisionClass::Scaling:
  case graph::PrecisionClass::Integer: // exact in int64: no precision to choose
    return {nullptr, ""};
  }

  // Range evidence moves ops out of FP16: a weight that FP16 cannot hold
  // (found without calibration), then calibrated activations.
  if (dtype.isF16()) {
    // A weight's values are known exactly, so no margin applies to it.
    for (Value operand : op->getOperands()) {
      double amax = constantAmax(operand);
      if (amax > kFp16Max)
        return {policy.overflowFallback, "range:weight_amax=" + shortNumber(amax) + ">fp16_max"};
    }
    if (auto amax = op->getAttrOfType<FloatAttr>(GraphDialect::kCalibAmaxAttr)) {
      double a = amax.getValueAsDouble();
      if (!(a * policy.fp16Margin <= kFp16Max))
        return {policy.overflowFallback, "range:amax=" + shortNumber(a) + "*" +
                                             shortNumber(policy.fp16Margin) + ">fp16_max"};
    }
    if (auto share = op->getAttrOfType<FloatAttr>(GraphDialect::kCalibUnderflowAttr)) {
      double s = share.getValueAsDouble();
      if (s > policy.underflowThreshold)
        return {f32, "range:underflow=" + shortNumber(100 * s) + "%<fp16_min_normal"};
    }
  }
  return {dtype, reason};
}

void AssignPrecisionPass::runOnOperation() {
  func::FuncOp func = getOperation();
  MLIRContext *ctx = &getContext();
  PrecisionPolicy policy;
  if (failed(buildPolicy(policy)))
    return signalPassFailure();

  bool failedOp = false;
  func.walk([&](Operation *op) {
    if (!isa<GraphDialect>(op->getDialect()))
      return;
    // Constants take their users' dtypes; ops that are already typed for a
    // precision (casts, FP8 scaling) keep it.
    graph::PrecisionClass opClass = graph::precisionClassOf(op);
    if (opClass == graph::PrecisionClass::Constant || opClass == graph::PrecisionClass::Cast ||
        opClass == graph::PrecisionClass::Scaling)
      return;
    bool hasFloatResult = llvm::any_of(op->getResultTypes(), [](Type t) {
      return isa<FloatType>(cast<RankedTensorType>(t).getElementType());
    });
    if (!hasFloatResult)
      return; // integer/bool data movement has no precision to choose
    auto [dtype, reason] = decide(op, policy);
    if (isa<Float8E4M3FNType, Float8E5M2Type>(dtype) && !hasFp8GemmForm(op)) {
      op->emitError() << "cannot run in " << dtype << " (" << reason
                      << "): only linear layers and matmuls by a 2-D constant weight "
                         "have FP8 GEMMs";
      failedOp = true;
      return;
    }
    // The policy keeps an unaligned GEMM in BF16 (policy:lowp(fp8-unaligned));
    // an override asking for FP8 there would make a module the CUDA backend
    // refuses at load, so it is refused here, where the op can be named.
    if (isa<Float8E4M3FNType, Float8E5M2Type>(dtype) && !hasFp8AlignedDims(op)) {
      op->emitError() << "cannot run in " << dtype << " (" << reason
                      << "): an FP8 GEMM needs k and n multiples of 16 (cuBLASLt's FP8 "
                         "GEMMs, as Transformer Engine's), got "
                      << op->getOperand(0).getType() << " -> " << op->getResult(0).getType();
      failedOp = true;
      return;
    }
    if (isa<Float8E5M2Type>(dtype)) {
      op->emitError() << "cannot run in f8E5M2 (" << reason
                      << "): E5M2 is for gradients; forward GEMMs use f8E4M3FN";
      failedOp = true;
      return;
    }
    if (isa<FloatTF32Type>(dtype) && opClass != graph::PrecisionClass::Lowp) {
      dtype = Float32Type::get(ctx); // TF32 is a GEMM compute mode only
    }
    op->setAttr(GraphDialect::kPrecisionAttr, TypeAttr::get(dtype));
    op->setAttr(GraphDialect::kReasonAttr, StringAttr::get(ctx, reason));
    if (cast<graph::PrecisionPolicyOpInterface>(op).accumulates() && !op->hasAttr("acc_type"))
      op->setAttr("acc_type", TypeAttr::get(Float32Type::get(ctx)));
  });
  if (failedOp)
    return signalPassFailure();

  for (const PolicyOverride &o : policy.overrides)
    if (!o.matched) {
      func.emitError() << "override '" << o.entry << "' matches no op type or op name in @"
                       << func.getSymName();
      return signalPassFailure();
    }
  if (policy.keepIoTypes)
    func->setAttr(GraphDialect::kKeepIoTypesAttr, UnitAttr::get(ctx));
  else
    func->removeAttr(GraphDialect::kKeepIoTypesAttr);
}

} // namespace
} // namespace mixprec::passes
