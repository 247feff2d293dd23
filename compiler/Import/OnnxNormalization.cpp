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
  Value x = input(c, 0);
  if (failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  // Before opset 13 Softmax coerces the input to 2-D [prod(dims[:axis]),
  // prod(dims[axis:])] and normalizes each row; from 13 it normalizes one
  // axis.
  bool legacy = opset < 13;
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", legacy ? 1 : -1), rank);
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
Importer::NormAttributes Importer::normAttributes(const NodeCtx &c, int64_t rank) {
  if (rank == 0)
    nodeFail(c, "input must have rank >= 1");
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", -1), rank);
  float eps = attrFloat(c, "epsilon", 1e-5f);
  if (!(eps > 0.0f))
    nodeFail(c, "attribute 'epsilon' must be positive, got " + std::to_string(eps));
  int64_t stash = attrInt(c, "stash_type", 1);
  if (stash != 1)
    nodeFail(c, "attribute 'stash_type' must be 1 (FLOAT), got " + llvm::Twine(stash));
  return {axis, eps};
}

static const OpForm kLayerNormForms[] = {
    {17, 2, 3, 1, 3, "axis epsilon stash_type *"},
};

LogicalResult Importer::convertLayerNorm(const NodeCtx &c) {
  Value x = input(c, 0);
  if (failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  if (failed(requireFloat(c, 1, inputType(c, 1).getElementType())))
    return failure();
  if (hasInput(c, 2))
    if (failed(requireFloat(c, 2, inputType(c, 2).getElementType())))
      return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  auto [axis, eps] = normAttributes(c, static_cast<int64_t>(shape.size()));
  ArrayRef<int64_t> normalized = shape.drop_front(axis);
  // Scale and B are shaped like the normalized dims; one with the same
  // element count (e.g. [64] for [1, 64]) is reshaped to match.
  auto param = [&](int i, const char *role) -> Value {
    if (!hasInput(c, i))
      return Value();
    RankedTensorType t = inputType(c, i);
    if (t.getShape() == normalized)
      return input(c, i);
    if (graph::numElements(t.getShape()) != graph::numElements(normalized))
      nodeFail(c, llvm::Twine(role) + " shape " + graph::formatShape(t.getShape()) +
                      " does not match the normalized shape " + graph::formatShape(normalized));
    return reshapeInput(c, i, normalized);
  };
  Value scale = param(1, "Scale");
  if (!scale)
    return nodeError(c, "missing required input #1 (Scale)");
  Value bias = param(2, "B");
  defineValue(c, 0,
              builder
                  .create<graph::LayerNormOp>(c.loc, x.getType(), x, scale, bias,
                                              builder.getI64IntegerAttr(axis),
                                              builder.getF32FloatAttr(eps), TypeAttr())
                  .getOutput());
  defineLayerNormStats(c, x, axis, eps);
  return success();
}

/// The ONNX schema forms of RMSNormalization.
static const OpForm kRmsNormForms[] = {
    {23, 2, 2, 1, 1, "axis epsilon stash_type"},
};

LogicalResult Importer::convertRmsNorm(const NodeCtx &c) {
  Value x = input(c, 0);
  if (failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  if (failed(requireFloat(c, 1, inputType(c, 1).getElementType())))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  auto [axis, eps] = normAttributes(c, static_cast<int64_t>(shape.size()));
  ArrayRef<int64_t> normalized = shape.drop_front(axis);
  // A scale shaped like the normalized dims goes into the op; one that
  // only broadcasts to them (numpy rules, e.g. [D] for [S, D]) multiplies
  // the normalized result.
  RankedTensorType scaleType = inputType(c, 1);
  bool exact = scaleType.getShape() == normalized;
  Value scale = input(c, 1);
  Value y = builder
                .create<graph::RmsNormOp>(c.loc, x.getType(), x, exact ? scale : Value(),
                                          builder.getI64IntegerAttr(axis),
                                          builder.getF32FloatAttr(eps), TypeAttr())
                .getOutput();
  if (!exact) {
    if (scaleType.getRank() > static_cast<int64_t>(normalized.size()))
      return nodeError(c, "scale shape " + graph::formatShape(scaleType.getShape()) +
                      " does not broadcast to the normalized shape " +
                      graph::formatShape(normalized));
    Shape s = expectShape(c, graph::broadcastShapes(shape, scaleType.getShape()));
    if (s != Shape(shape.begin(), shape.end()))
      return nodeError(c, "scale shape " + graph::formatShape(scaleType.getShape()) +
                      " does not broadcast to the normalized shape " +
                      graph::formatShape(normalized));
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
  Value x = input(c, 0);
  if (failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  int64_t training = attrInt(c, "training_mode", 0);
  if (training != 0 && training != 1)
    return nodeError(c, "attribute 'training_mode' must be 0 or 1, got " + llvm::Twine(training));
  if (opset < 9 && attrInt(c, "spatial", 1) != 1)
    return nodeError(c, "attribute 'spatial' must be 1: per-activation statistics are not supported");
  float eps = attrFloat(c, "epsilon", 1e-5f);
  if (!(eps >= 0.0f))
    return nodeError(c, "attribute 'epsilon' must be non-negative, got " + std::to_string(eps));
  float momentum = attrFloat(c, "momentum", 0.9f);
  if (training && !std::isfinite(momentum))
    return nodeError(c, "attribute 'momentum' must be finite, got " + std::to_string(momentum));
  if (!training)
    if (failed(requireUnusedOutputs(c, 1, "only output #0 (Y) of BatchNormalization is supported")))
      return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 2)
    return nodeError(c, "input must have rank >= 2 (N, C, ...), got " + graph::formatShape(shape));
  int64_t channels = shape[1];
  static const char *roles[] = {"scale", "B", "input_mean", "input_var"};
  SmallVector<Value, 4> params;
  for (int i = 1; i <= 4; ++i) {
    RankedTensorType t = inputType(c, i);
    if (failed(requireFloat(c, i, t.getElementType())))
      return failure();
    if (graph::numElements(t.getShape()) != channels)
      return nodeError(c, llvm::Twine(roles[i - 1]) + " shape " + graph::formatShape(t.getShape()) +
                      " must be [" + llvm::Twine(channels) + "] (one value per channel)");
    params.push_back(reshapeInput(c, i, {channels}));
  }
  Value mean = params[2], var = params[3];
  if (training) {
    SmallVector<int64_t> axes{0};
    for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
      axes.push_back(d);
    DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(axes);
    BoolAttr keep = builder.getBoolAttr(true);
    Type et = elemOf(x);
    Value m = createInferred<graph::ReduceMeanOp>(c, et, x, axesAttr, keep, TypeAttr());
    Value d = createInferred<graph::SubOp>(c, et, x, m);
    Value v = createInferred<graph::ReduceMeanOp>(c, et, createInferred<graph::MulOp>(c, et, d, d),
                                                  axesAttr, keep, TypeAttr());
    mean = reshape(c, m, {channels});
    var = reshape(c, v, {channels});
    // running = input * momentum + batch * (1 - momentum)
    Value keptShare = scalarF32(c, momentum), batchShare = scalarF32(c, 1.0f - momentum);
    auto running = [&](Value in, Value batch) {
      Value kept = createInferred<graph::MulOp>(c, et, in, keptShare);
      Value added = createInferred<graph::MulOp>(c, et, batch, batchShare);
      return createInferred<graph::AddOp>(c, et, kept, added);
    };
    defineValue(c, 1, running(params[2], mean));
    defineValue(c, 2, running(params[3], var));
  }
  defineValue(c, 0,
              builder
                  .create<graph::BatchNormOp>(c.loc, x.getType(), x, params[0], params[1], mean,
                                              var, builder.getF32FloatAttr(eps), TypeAttr())
                  .getOutput());
  return success();
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
Value Importer::reduceAnyBool(const NodeCtx &c, Value x, ArrayRef<int64_t> axes, bool keepDims) {
  Type f32 = builder.getF32Type();
  Value wide = builder.create<graph::CastOp>(c.loc, tensorType(shapeOf(x), f32), x).getOutput();
  Value m = createInferred<graph::ReduceMaxOp>(c, f32, wide, builder.getDenseI64ArrayAttr(axes),
                                               builder.getBoolAttr(keepDims), TypeAttr());
  return createInferred<graph::GreaterOp>(c, nullptr, m, scalarF32(c, 0.5f));
}

LogicalResult Importer::convertReduce(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  // ReduceSum takes axes as an input from opset 13, the others from 18.
  bool keepDims = attrBool(c, "keepdims", true);
  std::optional<SmallVector<int64_t>> axes = reduceAxes(c, op == "ReduceSum" ? 13 : 18);
  if (!axes) {
    aliasOutput(c, 0, 0);
    return success();
  }
  SmallVector<int64_t> norm = *axes;
  RankedTensorType t = inputType(c, 0);
  if (op == "ReduceMax" && t.getElementType().isInteger(1)) {
    defineValue(c, 0, reduceAnyBool(c, input(c, 0), norm, keepDims));
    return success();
  }
  if (failed(requireFloat(c, 0, t.getElementType())))
    return failure();
  Value x = input(c, 0);
  Type et = t.getElementType();
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(norm);
  BoolAttr kd = builder.getBoolAttr(keepDims);
  Value r;
  if (op == "ReduceSum")
    r = createInferred<graph::ReduceSumOp>(c, et, x, axesAttr, kd, TypeAttr());
  else if (op == "ReduceMean")
    r = createInferred<graph::ReduceMeanOp>(c, et, x, axesAttr, kd, TypeAttr());
  else if (op == "ReduceProd") // its row is in OnnxIndexing.cpp
    r = createInferred<graph::ReduceProdOp>(c, et, x, axesAttr, kd);
  else
    r = createInferred<graph::ReduceMaxOp>(c, et, x, axesAttr, kd, TypeAttr());
  defineValue(c, 0, r);
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
