//===- InsertScaling.cpp - --mp-insert-scaling -----------------------------===//
#include "passes/Passes.h"

#include "common/numerics/Rounding.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Graph/IR/StorageFormat.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <cmath>

namespace mixprec::passes {
#define GEN_PASS_DEF_INSERTSCALINGPASS
#include "passes/Passes.h.inc"
} // namespace mixprec::passes

using namespace mlir;
using mixprec::graph::GraphDialect;
namespace num = mixprec::numerics;

namespace mixprec::passes {
namespace {

/// The rounding format of an FP8 type (the pass only sees FP8 precisions).
num::Format fp8Format(Type t) { return *graph::storageFormatOf(t); }

/// The Transformer Engine rule (numerics::fp8Scale) for an FP8 type.
float scaleFor(double amax, Type format, int64_t margin) {
  return num::fp8Scale(fp8Format(format), amax, margin);
}

/// A rank-0 f32 constant.
Value scalarConstant(OpBuilder &b, Location loc, float v) {
  auto type = RankedTensorType::get({}, b.getF32Type());
  return b.create<graph::ConstantOp>(loc, DenseElementsAttr::get(type, v));
}

/// An FP8 tensor and the scale it was quantized with.
struct Quantized {
  Value value;
  Value scale;
};

/// Quantizes a constant at compile time with a scale from its own amax.
std::optional<Quantized> quantizeConstant(OpBuilder &b, graph::ConstantOp constant,
                                          Type format, int64_t margin) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  if (!dense)
    return std::nullopt;
  std::vector<float> values = graph::readFloatConstant(dense);
  // NaN propagates, as mp.amax does at run time: an inf or NaN weight makes
  // the scale NaN and every quantized weight NaN (numerics::fp8Scale).
  double amax = 0;
  for (float v : values)
    amax = std::isnan(v) || std::isnan(amax) ? NAN : std::max(amax, std::fabs(double(v)));
  float scale = scaleFor(amax, format, margin);
  num::quantizeFp8Array(fp8Format(format), values.data(), scale, values.data(), values.size());
  std::vector<char> raw(values.size());
  num::RoundOptions saturate; // exact: the values are FP8 already (NaN included)
  saturate.saturate = true;
  num::encodeArray(fp8Format(format), values.data(), raw.data(), values.size(), saturate);
  auto type = cast<RankedTensorType>(dense.getType()).clone(format);
  Location loc = constant.getLoc();
  Value q = b.create<graph::ConstantOp>(loc, DenseElementsAttr::getFromRawBuffer(type, raw));
  return Quantized{q, scalarConstant(b, loc, scale)};
}

//===----------------------------------------------------------------------===//
// --mp-insert-scaling
//===----------------------------------------------------------------------===//

struct InsertScalingPass : public impl::InsertScalingPassBase<InsertScalingPass> {
  using InsertScalingPassBase::InsertScalingPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (scaling != "auto" && scaling != "current" && scaling != "static") {
      func.emitError() << "scaling must be current, static or auto, got '" << scaling << "'";
      return signalPassFailure();
    }
    if (margin < 0) {
      func.emitError() << "margin must be non-negative, got " << margin;
      return signalPassFailure();
    }
    SmallVector<Operation *> gemms;
    func.walk([&](Operation *op) {
      auto precision = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr);
      auto policy = dyn_cast<graph::PrecisionPolicyOpInterface>(op);
      if (precision && isa<Float8E4M3FNType, Float8E5M2Type>(precision.getValue()) && policy &&
          policy.hasFp8GemmForm())
        gemms.push_back(op);
    });
    for (Operation *op : gemms)
      if (failed(rewrite(op)))
        return signalPassFailure();
  }

  /// Quantizes an operand of `user`: constants now, activations at run time.
  FailureOr<Quantized> quantize(OpBuilder &b, Operation *user, Value v, Type format) {
    if (auto constant = v.getDefiningOp<graph::ConstantOp>())
      if (std::optional<Quantized> q = quantizeConstant(b, constant, format, margin))
        return *q;
    Location loc = user->getLoc();
    auto fp8Type = cast<RankedTensorType>(v.getType()).clone(format);
    Operation *producer = v.getDefiningOp();
    auto calibrated =
        producer ? producer->getAttrOfType<FloatAttr>(GraphDialect::kCalibAmaxAttr) : nullptr;
    if (scaling == "static" && !calibrated) {
      user->emitError() << "scaling=static needs a calibrated amax for every FP8 GEMM input "
                           "(run with calibration inputs, or use scaling=current)";
      return failure();
    }
    Value scale;
    if (calibrated && scaling != "current") {
      scale = scalarConstant(b, loc, scaleFor(calibrated.getValueAsDouble(), format, margin));
    } else {
      auto scalar = RankedTensorType::get({}, b.getF32Type());
      Value amax = b.create<graph::AmaxOp>(loc, scalar, v);
      scale = b.create<graph::Fp8ScaleOp>(loc, scalar, amax, TypeAttr::get(format),
                                          b.getI64IntegerAttr(margin));
    }
    Value q = b.create<graph::QuantizeOp>(loc, fp8Type, v, scale);
    return Quantized{q, scale};
  }

  /// Replaces an FP8 matmul or linear by its scaled form.
  LogicalResult rewrite(Operation *op) {
    Type format = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr).getValue();
    OpBuilder b(op);
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    FailureOr<Quantized> qa = quantize(b, op, lhs, format);
    if (failed(qa))
      return failure();
    FailureOr<Quantized> qb = quantize(b, op, rhs, format);
    if (failed(qb))
      return failure();
    Operation *scaled;
    Type resultType = op->getResult(0).getType();
    if (auto linear = dyn_cast<graph::LinearOp>(op))
      scaled = b.create<graph::ScaledLinearOp>(
          op->getLoc(), resultType, qa->value, qb->value, qa->scale, qb->scale,
          linear.getBias(), linear.getTransposeWeight(), linear.getAccTypeAttr());
    else
      scaled = b.create<graph::ScaledMatmulOp>(op->getLoc(), resultType, qa->value, qb->value,
                                               qa->scale, qb->scale,
                                               cast<graph::MatmulOp>(op).getAccTypeAttr());
    for (StringRef name : {GraphDialect::kPrecisionAttr, GraphDialect::kReasonAttr,
                           GraphDialect::kCalibAmaxAttr, GraphDialect::kCalibUnderflowAttr})
      if (Attribute a = op->getAttr(name))
        scaled->setAttr(name, a);
    op->getResult(0).replaceAllUsesWith(scaled->getResult(0));
    op->erase();
    // A weight now stored in FP8 leaves its wide original dead.
    for (Value operand : {lhs, rhs})
      if (auto constant = operand.getDefiningOp<graph::ConstantOp>())
        if (constant->use_empty())
          constant->erase();
    return success();
  }
};

} // namespace
} // namespace mixprec::passes
