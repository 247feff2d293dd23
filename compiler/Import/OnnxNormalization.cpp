//===- OnnxNormalization.cpp - normalizations, reductions -----------------===//
//
// The converters of Softmax/LogSoftmax, LayerNormalization,
// BatchNormalization and ReduceSum/ReduceMean/ReduceMax, each under its op's
// ONNX schema forms.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Normalizations and reductions
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Softmax and LogSoftmax (axis changes meaning at 13, not form).
static const OpForm kSoftmaxForms[] = {
    {1, 1, 1, 1, 1, "axis"},
};

LogicalResult Importer::convertSoftmax(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  // Before opset 13 Softmax coerces the input to 2-D [prod(dims[:axis]),
  // prod(dims[axis:])] and normalizes each row; from 13 it normalizes one
  // axis.
  bool legacy = opset < 13;
  int64_t axis;
  if (failed(attrInt(c, "axis", legacy ? 1 : -1, axis)) ||
      failed(normalizeAxis(c, "attribute 'axis'", axis, rank)))
    return failure();
  bool isLog = c.node.op_type() == "LogSoftmax";
  auto make = [&](Value in, int64_t ax) -> Value {
    IntegerAttr axAttr = builder.getI64IntegerAttr(ax);
    if (isLog)
      return builder.create<graph::LogSoftmaxOp>(c.loc, in.getType(), in, axAttr, TypeAttr())
          .getOutput();
    return builder.create<graph::SoftmaxOp>(c.loc, in.getType(), in, axAttr, TypeAttr())
        .getOutput();
  };
  // Legacy softmax at the last axis is the same as single-axis softmax.
  if (!legacy || axis == rank - 1) {
    defineValue(c, 0, make(x, axis));
    return success();
  }
  int64_t outer = product(shape, 0, axis), inner = product(shape, axis, rank);
  Value flat = reshape(c, x, {outer, inner});
  defineValue(c, 0, reshape(c, make(flat, 1), shape));
  return success();
}

/// The ONNX schema forms of LayerNorm.
FailureOr<Importer::NormAttributes> Importer::normAttributes(const NodeCtx &c, int64_t rank) {
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  NormAttributes a;
  if (failed(attrInt(c, "axis", -1, a.axis)) ||
      failed(normalizeAxis(c, "attribute 'axis'", a.axis, rank)) ||
      failed(attrFloat(c, "epsilon", 1e-5f, a.eps)))
    return failure();
  if (!(a.eps > 0.0f))
    return nodeError(c, "attribute 'epsilon' must be positive, got " + std::to_string(a.eps));
  int64_t stash;
  if (failed(attrInt(c, "stash_type", 1, stash)))
    return failure();
  if (stash != 1)
    return nodeError(c, "attribute 'stash_type' must be 1 (FLOAT), got " + llvm::Twine(stash));
  return a;
}

static const OpForm kLayerNormForms[] = {
    {17, 2, 3, 1, 3, "axis epsilon stash_type *"},
};

LogicalResult Importer::convertLayerNorm(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  RankedTensorType scaleType, biasType;
  if (failed(inputType(c, 1, scaleType)) || failed(requireFloat(c, 1, scaleType.getElementType())))
    return failure();
  if (hasInput(c, 2))
    if (failed(inputType(c, 2, biasType)) || failed(requireFloat(c, 2, biasType.getElementType())))
      return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  FailureOr<NormAttributes> attrs = normAttributes(c, static_cast<int64_t>(shape.size()));
  if (failed(attrs))
    return failure();
  auto [axis, eps] = *attrs;
  ArrayRef<int64_t> normalized = shape.drop_front(axis);
  // Scale and B are shaped like the normalized dims; one with the same
  // element count (e.g. [64] for [1, 64]) is reshaped to match.
  auto param = [&](int i, const char *role) -> FailureOr<Value> {
    if (!hasInput(c, i))
      return Value();
    RankedTensorType t;
    Value v;
    if (failed(inputType(c, i, t)))
      return failure();
    if (t.getShape() == normalized) {
      if (failed(input(c, i, v)))
        return failure();
      return v;
    }
    if (shapes::numElements(t.getShape()) != shapes::numElements(normalized))
      return nodeError(c, llvm::Twine(role) + " shape " + shapes::formatShape(t.getShape()) +
                              " does not match the normalized shape " +
                              shapes::formatShape(normalized));
    return reshapeInput(c, i, normalized);
  };
  FailureOr<Value> scale = param(1, "Scale");
  if (failed(scale))
    return failure();
  if (!*scale)
    return nodeError(c, "missing required input #1 (Scale)");
  FailureOr<Value> bias = param(2, "B");
  if (failed(bias))
    return failure();
  defineValue(c, 0,
              builder
                  .create<graph::LayerNormOp>(c.loc, x.getType(), x, *scale, *bias,
                                              builder.getI64IntegerAttr(axis),
                                              builder.getF32FloatAttr(eps), TypeAttr())
                  .getOutput());
  return defineLayerNormStats(c, x, axis, eps);
}

/// The ONNX schema forms of RMSNormalization.
static const OpForm kRmsNormForms[] = {
    {23, 2, 2, 1, 1, "axis epsilon stash_type"},
};

LogicalResult Importer::convertRmsNorm(const NodeCtx &c) {
  Value x, scale;
  RankedTensorType scaleType;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  if (failed(inputType(c, 1, scaleType)) || failed(requireFloat(c, 1, scaleType.getElementType())))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  FailureOr<NormAttributes> attrs = normAttributes(c, static_cast<int64_t>(shape.size()));
  if (failed(attrs))
    return failure();
  auto [axis, eps] = *attrs;
  ArrayRef<int64_t> normalized = shape.drop_front(axis);
  // A scale shaped like the normalized dims goes into the op; one that
  // only broadcasts to them (numpy rules, e.g. [D] for [S, D]) multiplies
  // the normalized result.
  bool exact = scaleType.getShape() == normalized;
  if (failed(input(c, 1, scale)))
    return failure();
  Value y = builder
                .create<graph::RmsNormOp>(c.loc, x.getType(), x, exact ? scale : Value(),
                                          builder.getI64IntegerAttr(axis),
                                          builder.getF32FloatAttr(eps), TypeAttr())
                .getOutput();
  if (!exact) {
    if (scaleType.getRank() > static_cast<int64_t>(normalized.size()))
      return nodeError(c, "scale shape " + shapes::formatShape(scaleType.getShape()) +
                              " does not broadcast to the normalized shape " +
                              shapes::formatShape(normalized));
    FailureOr<Shape> s = expectShape(c, shapes::broadcastShapes(shape, scaleType.getShape()));
    if (failed(s))
      return failure();
    if (*s != Shape(shape.begin(), shape.end()))
      return nodeError(c, "scale shape " + shapes::formatShape(scaleType.getShape()) +
                              " does not broadcast to the normalized shape " +
                              shapes::formatShape(normalized));
    y = builder.create<graph::MulOp>(c.loc, x.getType(), y, scale).getOutput();
  }
  defineValue(c, 0, y);
  return success();
}

/// The ONNX schema forms of BatchNorm.
static const OpForm kBatchNormForms[] = {
    {1, 5, 5, 1, 5, "consumed_inputs epsilon is_test momentum spatial"},
    {6, 5, 5, 1, 5, "epsilon is_test momentum spatial"},
    {7, 5, 5, 1, 5, "epsilon momentum spatial"},
    {9, 5, 5, 1, 5, "epsilon momentum"},
    {14, 5, 5, 1, 3, "epsilon momentum training_mode"},
};

/// BatchNormalization. In inference, mp.batch_norm with the running
/// statistics. With training_mode (opset 14+), as onnx's reference: the
/// batch's mean and population variance over every axis but 1 (two
/// mp.reduce_mean, fp32 class: they accumulate; the variance in the
/// two-pass form, mean((x - mean)^2), which does not cancel) normalize x
/// through the same mp.batch_norm, and outputs #1 and #2 are the running
/// statistics updated with `momentum` (input * momentum + batch * (1 -
/// momentum), the population variance too).
LogicalResult Importer::convertBatchNorm(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  int64_t training, spatial = 1;
  if (failed(attrInt(c, "training_mode", 0, training)))
    return failure();
  if (training != 0 && training != 1)
    return nodeError(c, "attribute 'training_mode' must be 0 or 1, got " + llvm::Twine(training));
  if (opset < 9 && failed(attrInt(c, "spatial", 1, spatial)))
    return failure();
  if (spatial != 1)
    return nodeError(c, "attribute 'spatial' must be 1: per-activation statistics are not supported");
  float eps, momentum;
  if (failed(attrFloat(c, "epsilon", 1e-5f, eps)))
    return failure();
  if (!(eps >= 0.0f))
    return nodeError(c, "attribute 'epsilon' must be non-negative, got " + std::to_string(eps));
  if (failed(attrFloat(c, "momentum", 0.9f, momentum)))
    return failure();
  if (training && !std::isfinite(momentum))
    return nodeError(c, "attribute 'momentum' must be finite, got " + std::to_string(momentum));
  if (!training)
    if (failed(requireUnusedOutputs(c, 1, "only output #0 (Y) of BatchNormalization is supported")))
      return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 2)
    return nodeError(c, "input must have rank >= 2 (N, C, ...), got " + shapes::formatShape(shape));
  int64_t channels = shape[1];
  static const char *roles[] = {"scale", "B", "input_mean", "input_var"};
  SmallVector<Value, 4> params;
  for (int i = 1; i <= 4; ++i) {
    RankedTensorType t;
    if (failed(inputType(c, i, t)) || failed(requireFloat(c, i, t.getElementType())))
      return failure();
    if (shapes::numElements(t.getShape()) != channels)
      return nodeError(c, llvm::Twine(roles[i - 1]) + " shape " +
                              shapes::formatShape(t.getShape()) + " must be [" +
                              llvm::Twine(channels) + "] (one value per channel)");
    FailureOr<Value> param = reshapeInput(c, i, {channels});
    if (failed(param))
      return failure();
    params.push_back(*param);
  }
  Value mean = params[2], var = params[3];
  if (training && failed(defineBatchStats(c, x, params[2], params[3], momentum, mean, var)))
    return failure();
  defineValue(c, 0,
              builder
                  .create<graph::BatchNormOp>(c.loc, x.getType(), x, params[0], params[1], mean,
                                              var, builder.getF32FloatAttr(eps), TypeAttr())
                  .getOutput());
  return success();
}

/// BatchNormalization's training mode: `mean` and `var` become the batch's
/// statistics of x, outputs #1 and #2 the running ones updated from
/// `runningMean` and `runningVar` with `momentum`.
LogicalResult Importer::defineBatchStats(const NodeCtx &c, Value x, Value runningMean,
                                         Value runningVar, float momentum, Value &mean,
                                         Value &var) {
  int64_t channels = shapeOf(x)[1];
  SmallVector<int64_t> axes{0};
  for (int64_t d = 2; d < static_cast<int64_t>(shapeOf(x).size()); ++d)
    axes.push_back(d);
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(axes);
  BoolAttr keep = builder.getBoolAttr(true);
  Type et = elemOf(x);
  FailureOr<Value> m = createInferred<graph::ReduceMeanOp>(c, et, x, axesAttr, keep, TypeAttr());
  if (failed(m))
    return failure();
  FailureOr<Value> d = createInferred<graph::SubOp>(c, et, x, *m);
  if (failed(d))
    return failure();
  FailureOr<Value> d2 = createInferred<graph::MulOp>(c, et, *d, *d);
  if (failed(d2))
    return failure();
  FailureOr<Value> v = createInferred<graph::ReduceMeanOp>(c, et, *d2, axesAttr, keep, TypeAttr());
  if (failed(v))
    return failure();
  mean = reshape(c, *m, {channels});
  var = reshape(c, *v, {channels});
  // running = input * momentum + batch * (1 - momentum)
  Value keptShare = scalarF32(c, momentum), batchShare = scalarF32(c, 1.0f - momentum);
  auto running = [&](int out, Value in, Value batch) -> LogicalResult {
    FailureOr<Value> kept = createInferred<graph::MulOp>(c, et, in, keptShare);
    if (failed(kept))
      return failure();
    FailureOr<Value> added = createInferred<graph::MulOp>(c, et, batch, batchShare);
    if (failed(added))
      return failure();
    FailureOr<Value> sum = createInferred<graph::AddOp>(c, et, *kept, *added);
    if (failed(sum))
      return failure();
    defineValue(c, out, *sum);
    return success();
  };
  return failure(failed(running(1, runningMean, mean)) || failed(running(2, runningVar, var)));
}

/// The ONNX schema forms of ReduceSum, and of ReduceMean and ReduceMax: axes move from an
/// attribute to input #1 at opset 13 and 18.
static const OpForm kReduceSumForms[] = {
    {1, 1, 1, 1, 1, "axes keepdims"},
    {13, 1, 2, 1, 1, "keepdims noop_with_empty_axes"},
};
static const OpForm kReduceForms[] = {
    {1, 1, 1, 1, 1, "axes keepdims"},
    {18, 1, 2, 1, 1, "keepdims noop_with_empty_axes"},
};

/// ReduceMax of bools, "any": the 0/1 values widened to FP32 (exact), their
/// maximum, > 0.5. An empty set's maximum is -inf, so its "any" is false,
/// as ONNX's reference gives (ReduceMin, "all", is not(any(not x)): true).
FailureOr<Value> Importer::reduceAnyBool(const NodeCtx &c, Value x, ArrayRef<int64_t> axes,
                                         bool keepDims) {
  Type f32 = builder.getF32Type();
  Value wide = builder.create<graph::CastOp>(c.loc, tensorType(shapeOf(x), f32), x).getOutput();
  FailureOr<Value> m = createInferred<graph::ReduceMaxOp>(
      c, f32, wide, builder.getDenseI64ArrayAttr(axes), builder.getBoolAttr(keepDims), TypeAttr());
  if (failed(m))
    return failure();
  return createInferred<graph::GreaterOp>(c, nullptr, *m, scalarF32(c, 0.5f));
}

LogicalResult Importer::convertReduce(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  bool keepDims;
  std::optional<SmallVector<int64_t>> axes;
  if (failed(attrBool(c, "keepdims", true, keepDims)) ||
      failed(reduceAxes(c, op == "ReduceSum" ? 13 : 18, axes)))
    return failure();
  if (!axes)
    return aliasOutput(c, 0, 0);
  SmallVector<int64_t> norm = *axes;
  RankedTensorType t;
  Value x;
  if (failed(inputType(c, 0, t)) || failed(input(c, 0, x)))
    return failure();
  FailureOr<Value> r;
  if (op == "ReduceMax" && t.getElementType().isInteger(1)) {
    r = reduceAnyBool(c, x, norm, keepDims);
    if (failed(r))
      return failure();
    defineValue(c, 0, *r);
    return success();
  }
  if (failed(requireFloat(c, 0, t.getElementType())))
    return failure();
  Type et = t.getElementType();
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(norm);
  BoolAttr kd = builder.getBoolAttr(keepDims);
  if (op == "ReduceSum")
    r = createInferred<graph::ReduceSumOp>(c, et, x, axesAttr, kd, TypeAttr());
  else if (op == "ReduceMean")
    r = createInferred<graph::ReduceMeanOp>(c, et, x, axesAttr, kd, TypeAttr());
  else if (op == "ReduceProd") // its row is in OnnxIndexing.cpp
    r = createInferred<graph::ReduceProdOp>(c, et, x, axesAttr, kd);
  else
    r = createInferred<graph::ReduceMaxOp>(c, et, x, axesAttr, kd, TypeAttr());
  if (failed(r))
    return failure();
  defineValue(c, 0, *r);
  return success();
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::normalizationOps() {
  static const OpInfo table[] = {
      {"Softmax", &Importer::convertSoftmax, kSoftmaxForms},
      {"LogSoftmax", &Importer::convertSoftmax, kSoftmaxForms},
      {"LayerNormalization", &Importer::convertLayerNorm, kLayerNormForms},
      {"RMSNormalization", &Importer::convertRmsNorm, kRmsNormForms},
      {"BatchNormalization", &Importer::convertBatchNorm, kBatchNormForms},
      {"ReduceSum", &Importer::convertReduce, kReduceSumForms},
      {"ReduceMean", &Importer::convertReduce, kReduceForms},
      {"ReduceMax", &Importer::convertReduce, kReduceForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
