//===- OnnxGemm.cpp - GEMM-class ONNX ops ---------------------------------===//
//
// The converters of MatMul, Gemm and Conv (the ops the mixed-precision
// planner assigns GEMM kernels to), each under its op's ONNX schema forms.
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
// GEMM-class ops: MatMul, Gemm, Conv
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of MatMul.
static const OpForm kMatMulForms[] = {
    {1, 2, 2, 1, 1, ""},
};

LogicalResult Importer::convertMatMul(const NodeCtx &c) {
  Value a, b;
  if (failed(input(c, 0, a)) || failed(input(c, 1, b)))
    return failure();
  if (failed(requireFloat(c, 0, elemOf(a))))
    return failure();
  if (failed(requireFloat(c, 1, elemOf(b))))
    return failure();
  FailureOr<RankedTensorType> inferred =
      inferredType<graph::MatmulOp>(c, elemOf(a), a, b, TypeAttr());
  if (failed(inferred))
    return failure();
  RankedTensorType t = *inferred;
  // x @ W^T with a 2-D W (a tied LM head, a PyTorch Linear exported as
  // MatMul(x, Transpose(W))) is a linear layer reading W transposed: the
  // weight stays one constant, and FP8 and cuBLASLt see a weight, not an
  // activation.
  if (auto w = b.getDefiningOp<graph::TransposeOp>();
      w && shapeOf(a).size() >= 2 && shapeOf(b).size() == 2 &&
      w.getPerm() == ArrayRef<int64_t>{1, 0}) {
    defineValue(c, 0,
                builder
                    .create<graph::LinearOp>(c.loc, t, a, w.getInput(), Value(),
                                             builder.getBoolAttr(true), TypeAttr())
                    .getOutput());
    return success(); // the transpose, if now unused, goes with the importer's dead-op sweep
  }
  defineValue(c, 0, builder.create<graph::MatmulOp>(c.loc, t, a, b, TypeAttr()).getOutput());
  return success();
}

/// The ONNX schema forms of Gemm: C is optional from opset 11.
static const OpForm kGemmForms[] = {
    {1, 3, 3, 1, 1, "alpha beta broadcast transA transB"},
    {7, 3, 3, 1, 1, "alpha beta transA transB"},
    {11, 2, 3, 1, 1, "alpha beta transA transB"},
};

LogicalResult Importer::convertGemm(const NodeCtx &c) {
  Value a, b, bias;
  if (failed(input(c, 0, a)) || failed(input(c, 1, b)) || failed(optInput(c, 2, bias)))
    return failure();
  if (failed(requireFloat(c, 0, elemOf(a))))
    return failure();
  if (failed(requireFloat(c, 1, elemOf(b))))
    return failure();
  if (bias)
    if (failed(requireFloat(c, 2, elemOf(bias))))
      return failure();
  float alpha, beta;
  bool transA, transB;
  if (failed(attrFloat(c, "alpha", 1.0f, alpha)) || failed(attrFloat(c, "beta", 1.0f, beta)) ||
      failed(attrBool(c, "transA", false, transA)) || failed(attrBool(c, "transB", false, transB)))
    return failure();
  if (shapeOf(a).size() != 2 || shapeOf(b).size() != 2)
    return nodeError(c, "A and B must be 2-D, got " + shapes::formatShape(shapeOf(a)) + " and " +
                            shapes::formatShape(shapeOf(b)));
  if (transA) {
    FailureOr<Value> at = transpose(c, a, {1, 0});
    if (failed(at))
      return failure();
    a = *at;
  }
  BoolAttr transAttr = transB ? builder.getBoolAttr(true) : BoolAttr();
  FailureOr<RankedTensorType> inferred =
      inferredType<graph::LinearOp>(c, elemOf(a), a, b, Value(), transAttr, TypeAttr());
  if (failed(inferred))
    return failure();
  RankedTensorType outType = *inferred;
  ArrayRef<int64_t> out = outType.getShape();
  if (bias) {
    ShapeOrError withC = shapes::broadcastShapes(out, shapeOf(bias));
    if (!withC.ok() || ArrayRef<int64_t>(withC.shape) != ArrayRef<int64_t>(out))
      return nodeError(c, "C shape " + shapes::formatShape(shapeOf(bias)) +
                              " does not broadcast to the output shape " +
                              shapes::formatShape(out));
    // beta scales C only; beta = 0 drops C (as onnxruntime does).
    if (beta == 0.0f)
      bias = nullptr;
    else if (beta != 1.0f)
      bias =
          builder.create<graph::MulOp>(c.loc, bias.getType(), bias, scalarF32(c, beta)).getOutput();
  }
  Value y;
  if (alpha == 1.0f) {
    // Y = A'B' + beta C: the bias epilogue of one mp.linear.
    y = builder.create<graph::LinearOp>(c.loc, outType, a, b, bias, transAttr, TypeAttr())
            .getOutput();
  } else {
    // Y = alpha (A'B') + beta C: alpha scales the product only, so C cannot
    // ride in the linear's bias.
    y = builder.create<graph::LinearOp>(c.loc, outType, a, b, Value(), transAttr, TypeAttr())
            .getOutput();
    y = builder.create<graph::MulOp>(c.loc, outType, y, scalarF32(c, alpha)).getOutput();
    if (bias)
      y = builder.create<graph::AddOp>(c.loc, outType, y, bias).getOutput();
  }
  defineValue(c, 0, y);
  return success();
}

/// The ONNX schema forms of Conv.
static const OpForm kConvForms[] = {
    {1, 2, 3, 1, 1, "auto_pad dilations group kernel_shape pads strides"},
};

/// The rank rule of N-D window nodes: an input of rank 3 to 5.
static std::optional<std::string> checkWindowRank(llvm::StringRef what, ArrayRef<int64_t> shape) {
  if (shape.size() >= 3 && shape.size() <= 5)
    return std::nullopt;
  return "only 1-D to 3-D " + what.str() + " (an input of rank 3 to 5) is supported, got an " +
         "input of shape " + shapes::formatShape(shape);
}

/// The weight's spatial dims as the kernel: `kernel_shape` must agree.
static std::optional<std::string> checkKernelAttr(std::optional<SmallVector<int64_t>> attr,
                                                  ArrayRef<int64_t> kernel) {
  if (attr && ArrayRef<int64_t>(*attr) != kernel)
    return "attribute 'kernel_shape' " + shapes::formatShape(*attr) +
           " does not match the weight's spatial dims " + shapes::formatShape(kernel);
  if (auto err = checkWindowValues("kernel_shape", kernel, kernel.size()))
    return "weight spatial dims " + shapes::formatShape(kernel) +
           " are not a valid kernel: " + *err;
  return std::nullopt;
}

/// The optional bias of a convolution: float, one value per output channel.
LogicalResult Importer::requireConvBias(const NodeCtx &c, Value bias, int64_t channels) {
  if (!bias)
    return success();
  if (failed(requireFloat(c, 2, elemOf(bias))))
    return failure();
  if (shapeOf(bias) != ArrayRef<int64_t>{channels})
    return nodeError(c, "bias shape " + shapes::formatShape(shapeOf(bias)) + " must be [" +
                            llvm::Twine(channels) + "] (one per output channel)");
  return success();
}

FailureOr<Importer::ConvNode> Importer::convNode(const NodeCtx &c, bool transposed) {
  ConvNode n;
  if (failed(input(c, 0, n.x)) || failed(input(c, 1, n.w)) || failed(optInput(c, 2, n.bias)))
    return failure();
  if (auto err = checkWindowRank(transposed ? "transposed convolution" : "convolution",
                                 shapeOf(n.x)))
    return nodeError(c, *err);
  const size_t rank = shapeOf(n.x).size(), dims = rank - 2;
  if (failed(requireFloat(c, 0, elemOf(n.x))))
    return failure();
  if (failed(requireFloat(c, 1, elemOf(n.w))))
    return failure();
  ArrayRef<int64_t> ws = shapeOf(n.w);
  if (ws.size() != rank)
    return nodeError(
        c, transposed ? "weight must have the input's rank " + llvm::Twine(rank) +
                            " (C, M/group, k...), got " + shapes::formatShape(ws)
           : rank == 4
               ? "weight must be 4-D (M, C/group, kH, kW), got " + shapes::formatShape(ws)
               : "weight must be 5-D (M, C/group, kD, kH, kW), got " + shapes::formatShape(ws));
  n.kernel.assign(ws.begin() + 2, ws.end());
  std::optional<SmallVector<int64_t>> kernelAttr;
  if (failed(attrInts(c, "kernel_shape", kernelAttr)))
    return failure();
  if (auto err = checkKernelAttr(kernelAttr, n.kernel))
    return nodeError(c, *err);
  SmallVector<int64_t> ones(dims, 1);
  if (failed(windowInts(c, "strides", ones, n.strides, dims)) ||
      failed(windowInts(c, "dilations", ones, n.dilations, dims)) ||
      failed(attrInt(c, "group", 1, n.group)))
    return failure();
  if (n.group <= 0)
    return nodeError(c, "attribute 'group' must be positive, got " + llvm::Twine(n.group));
  return n;
}

LogicalResult Importer::convertConv(const NodeCtx &c) {
  RankedTensorType xType;
  if (failed(inputType(c, 0, xType)))
    return failure();
  if (xType.getRank() == 3) // 1-D: OnnxComposite.cpp
    return convertWindow1d(c, &Importer::convertConv);
  FailureOr<ConvNode> node = convNode(c, /*transposed=*/false);
  if (failed(node))
    return failure();
  ConvNode &n = *node;
  Value x = n.x, w = n.w, bias = n.bias;
  const size_t rank = shapeOf(x).size();
  ArrayRef<int64_t> kernel = n.kernel, strides = n.strides, dilations = n.dilations;
  int64_t group = n.group;
  FailureOr<SmallVector<int64_t>> pads = windowPads(c, shapeOf(x), kernel, strides, dilations);
  if (failed(pads))
    return failure();
  DenseI64ArrayAttr stridesAttr = builder.getDenseI64ArrayAttr(strides);
  DenseI64ArrayAttr padsAttr = builder.getDenseI64ArrayAttr(*pads);
  DenseI64ArrayAttr dilationsAttr = builder.getDenseI64ArrayAttr(dilations);
  IntegerAttr groupAttr = builder.getI64IntegerAttr(group);
  // 2-D keeps mp.conv2d (its routine and its CUDA-less host step are the
  // same); 3-D is mp.conv.
  auto build = [&](auto opTag) -> FailureOr<Value> {
    using OpT = decltype(opTag);
    FailureOr<RankedTensorType> t = inferredType<OpT>(
        c, elemOf(x), x, w, bias, stridesAttr, padsAttr, dilationsAttr, groupAttr, TypeAttr());
    if (failed(t) || failed(requireConvBias(c, bias, shapeOf(w)[0])))
      return failure();
    return builder
        .create<OpT>(c.loc, *t, x, w, bias, stridesAttr, padsAttr, dilationsAttr, groupAttr,
                     TypeAttr())
        .getOutput();
  };
  FailureOr<Value> y = rank == 4 ? build(graph::Conv2dOp()) : build(graph::ConvOp());
  if (failed(y))
    return failure();
  defineValue(c, 0, *y);
  return success();
}

/// The ONNX schema forms of ConvTranspose.
static const OpForm kConvTransposeForms[] = {
    {1, 2, 3, 1, 1,
     "auto_pad dilations group kernel_shape output_padding output_shape pads strides"},
};

FailureOr<SmallVector<int64_t>>
Importer::convTransposePads(const NodeCtx &c, ArrayRef<int64_t> inShape, ArrayRef<int64_t> kernel,
                            ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                            ArrayRef<int64_t> outputPadding) {
  const size_t dims = kernel.size();
  std::optional<SmallVector<int64_t>> pads, outputShape;
  std::string autoPad;
  if (failed(padAttributes(c, dims, pads, autoPad)) ||
      failed(attrInts(c, "output_shape", outputShape)))
    return failure();
  if (outputShape) {
    // The spatial dims, or (as some exporters write it) the whole shape.
    if (outputShape->size() == dims + 2)
      outputShape->erase(outputShape->begin(), outputShape->begin() + 2);
    if (outputShape->size() != dims)
      return nodeError(c, "attribute 'output_shape' must have " + llvm::Twine(dims) +
                              " values, got " + shapes::formatShape(*outputShape));
  }
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!outputShape && !same) {
    if (autoPad != "NOTSET" && pads && llvm::any_of(*pads, [](int64_t p) { return p != 0; }))
      return nodeError(c, "attributes 'pads' and 'auto_pad' (" + autoPad + ") cannot both be set");
    return autoPad == "NOTSET" && pads ? *pads : SmallVector<int64_t>(2 * dims, 0);
  }
  // ONNX: output_shape (else, for SAME_*, input * stride) fixes the total
  // padding; SAME_UPPER puts its odd element at the end, every other mode
  // at the beginning. Explicit pads are ignored then.
  SmallVector<int64_t> out(2 * dims, 0);
  for (size_t i = 0; i < dims; ++i) {
    int64_t target = outputShape ? (*outputShape)[i] : inShape[2 + i] * strides[i];
    int64_t natural = strides[i] * (inShape[2 + i] - 1) + outputPadding[i] +
                      (kernel[i] - 1) * dilations[i] + 1;
    if (outputShape && (target <= 0 || target > std::numeric_limits<int32_t>::max()))
      return nodeError(c, "attribute 'output_shape' " + shapes::formatShape(*outputShape) +
                              " must hold sizes in [1, 2^31 - 1]");
    // A target above the unpadded size pads negatively: the added
    // positions get the bias alone. The halves round down (floor), as in
    // ONNX's reference; without auto_pad the added positions all go to the
    // end (as the reference and onnxruntime place them).
    int64_t total = natural - target;
    int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
    out[i] = autoPad == "SAME_UPPER" ? half : total - half;
    if (autoPad == "NOTSET")
      out[i] = std::max<int64_t>(0, out[i]);
    out[dims + i] = total - out[i];
  }
  return out;
}

LogicalResult Importer::convertConvTranspose(const NodeCtx &c) {
  FailureOr<ConvNode> node = convNode(c, /*transposed=*/true);
  if (failed(node))
    return failure();
  ConvNode &n = *node;
  Value x = n.x, w = n.w, bias = n.bias;
  const size_t dims = n.kernel.size();
  ArrayRef<int64_t> kernel = n.kernel, strides = n.strides, dilations = n.dilations;
  int64_t group = n.group;
  std::optional<SmallVector<int64_t>> givenPadding;
  if (failed(attrInts(c, "output_padding", givenPadding)))
    return failure();
  SmallVector<int64_t> outputPadding = givenPadding.value_or(SmallVector<int64_t>(dims, 0));
  if (outputPadding.size() != dims)
    return nodeError(c, "attribute 'output_padding' must have " + llvm::Twine(dims) +
                            " values, got " + shapes::formatShape(outputPadding));
  for (size_t i = 0; i < dims; ++i)
    if (outputPadding[i] < 0 || outputPadding[i] >= std::max(strides[i], dilations[i]))
      return nodeError(c, "attribute 'output_padding' " + shapes::formatShape(outputPadding) +
                              " must hold values in [0, max(stride, dilation)) per dim");
  FailureOr<SmallVector<int64_t>> pads =
      convTransposePads(c, shapeOf(x), kernel, strides, dilations, outputPadding);
  if (failed(pads))
    return failure();
  DenseI64ArrayAttr stridesAttr = builder.getDenseI64ArrayAttr(strides);
  DenseI64ArrayAttr padsAttr = builder.getDenseI64ArrayAttr(*pads);
  DenseI64ArrayAttr dilationsAttr = builder.getDenseI64ArrayAttr(dilations);
  DenseI64ArrayAttr outputPaddingAttr = builder.getDenseI64ArrayAttr(outputPadding);
  IntegerAttr groupAttr = builder.getI64IntegerAttr(group);
  FailureOr<RankedTensorType> t =
      inferredType<graph::ConvTransposeOp>(c, elemOf(x), x, w, bias, stridesAttr, padsAttr,
                                           dilationsAttr, outputPaddingAttr, groupAttr, TypeAttr());
  if (failed(t) || failed(requireConvBias(c, bias, t->getShape()[1])))
    return failure();
  defineValue(c, 0,
              builder
                  .create<graph::ConvTransposeOp>(c.loc, *t, x, w, bias, stridesAttr, padsAttr,
                                                  dilationsAttr, outputPaddingAttr, groupAttr,
                                                  TypeAttr())
                  .getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::gemmOps() {
  static const OpInfo table[] = {
      {"MatMul", &Importer::convertMatMul, kMatMulForms},
      {"Gemm", &Importer::convertGemm, kGemmForms},
      {"Conv", &Importer::convertConv, kConvForms},
      {"ConvTranspose", &Importer::convertConvTranspose, kConvTransposeForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
