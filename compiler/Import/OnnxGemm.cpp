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

void Importer::convertMatMul(const NodeCtx &c) {
  Value a = input(c, 0), b = input(c, 1);
  requireFloat(c, 0, elemOf(a));
  requireFloat(c, 1, elemOf(b));
  RankedTensorType t = inferredType<graph::MatmulOp>(c, elemOf(a), a, b, TypeAttr());
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
    return; // the transpose, if now unused, goes with the importer's dead-op sweep
  }
  defineValue(c, 0, builder.create<graph::MatmulOp>(c.loc, t, a, b, TypeAttr()).getOutput());
}

/// The ONNX schema forms of Gemm: C is optional from opset 11.
static const OpForm kGemmForms[] = {
    {1, 3, 3, 1, 1, "alpha beta broadcast transA transB"},
    {7, 3, 3, 1, 1, "alpha beta transA transB"},
    {11, 2, 3, 1, 1, "alpha beta transA transB"},
};

void Importer::convertGemm(const NodeCtx &c) {
  Value a = input(c, 0), b = input(c, 1), bias = optInput(c, 2);
  requireFloat(c, 0, elemOf(a));
  requireFloat(c, 1, elemOf(b));
  if (bias)
    requireFloat(c, 2, elemOf(bias));
  float alpha = attrFloat(c, "alpha", 1.0f), beta = attrFloat(c, "beta", 1.0f);
  bool transA = attrBool(c, "transA", false), transB = attrBool(c, "transB", false);
  if (shapeOf(a).size() != 2 || shapeOf(b).size() != 2)
    nodeFail(c, "A and B must be 2-D, got " + graph::formatShape(shapeOf(a)) + " and " +
                    graph::formatShape(shapeOf(b)));
  if (transA)
    a = transpose(c, a, {1, 0});
  BoolAttr transAttr = transB ? builder.getBoolAttr(true) : BoolAttr();
  RankedTensorType outType =
      inferredType<graph::LinearOp>(c, elemOf(a), a, b, Value(), transAttr, TypeAttr());
  ArrayRef<int64_t> out = outType.getShape();
  if (bias) {
    ShapeOrError withC = graph::broadcastShapes(out, shapeOf(bias));
    if (!withC.ok() || ArrayRef<int64_t>(withC.shape) != ArrayRef<int64_t>(out))
      nodeFail(c, "C shape " + graph::formatShape(shapeOf(bias)) +
                      " does not broadcast to the output shape " + graph::formatShape(out));
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
}

/// The ONNX schema forms of Conv.
static const OpForm kConvForms[] = {
    {1, 2, 3, 1, 1, "auto_pad dilations group kernel_shape pads strides"},
};

void Importer::convertConv(const NodeCtx &c) {
  if (inputType(c, 0).getRank() == 3) // 1-D: OnnxComposite.cpp
    return convertWindow1d(c, &Importer::convertConv);
  Value x = input(c, 0), w = input(c, 1), bias = optInput(c, 2);
  require4D(c, shapeOf(x), "convolution");
  requireFloat(c, 0, elemOf(x));
  requireFloat(c, 1, elemOf(w));
  if (shapeOf(w).size() != 4)
    nodeFail(c, "weight must be 4-D (M, C/group, kH, kW), got " + graph::formatShape(shapeOf(w)));
  ArrayRef<int64_t> kernel = shapeOf(w).drop_front(2);
  if (auto k = attrInts(c, "kernel_shape"))
    if (ArrayRef<int64_t>(*k) != kernel)
      nodeFail(c, "attribute 'kernel_shape' " + graph::formatShape(*k) +
                      " does not match the weight's spatial dims " + graph::formatShape(kernel));
  if (auto err = checkWindowValues("kernel_shape", kernel, 2))
    nodeFail(c, "weight spatial dims " + graph::formatShape(kernel) +
                    " are not a valid kernel: " + *err);
  SmallVector<int64_t> strides = windowInts(c, "strides", SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations = windowInts(c, "dilations", SmallVector<int64_t>{1, 1});
  int64_t group = attrInt(c, "group", 1);
  if (group <= 0)
    nodeFail(c, "attribute 'group' must be positive, got " + llvm::Twine(group));
  SmallVector<int64_t> pads = windowPads(c, shapeOf(x), kernel, strides, dilations);
  DenseI64ArrayAttr stridesAttr = builder.getDenseI64ArrayAttr(strides);
  DenseI64ArrayAttr padsAttr = builder.getDenseI64ArrayAttr(pads);
  DenseI64ArrayAttr dilationsAttr = builder.getDenseI64ArrayAttr(dilations);
  IntegerAttr groupAttr = builder.getI64IntegerAttr(group);
  RankedTensorType t = inferredType<graph::Conv2dOp>(
      c, elemOf(x), x, w, bias, stridesAttr, padsAttr, dilationsAttr, groupAttr, TypeAttr());
  if (bias) {
    requireFloat(c, 2, elemOf(bias));
    if (shapeOf(bias) != ArrayRef<int64_t>{shapeOf(w)[0]})
      nodeFail(c, "bias shape " + graph::formatShape(shapeOf(bias)) + " must be [" +
                      llvm::Twine(shapeOf(w)[0]) + "] (one per output channel)");
  }
  defineValue(c, 0,
              builder
                  .create<graph::Conv2dOp>(c.loc, t, x, w, bias, stridesAttr, padsAttr,
                                           dilationsAttr, groupAttr, TypeAttr())
                  .getOutput());
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::gemmOps() {
  static const OpInfo table[] = {
      {"MatMul", &Importer::convertMatMul, kMatMulForms},
      {"Gemm", &Importer::convertGemm, kGemmForms},
      {"Conv", &Importer::convertConv, kConvForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
