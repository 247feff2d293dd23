//===- OnnxPooling.cpp - pooling ONNX ops ---------------------------------===//
//
// The converters of MaxPool, AveragePool, GlobalAveragePool and
// GlobalMaxPool, each under its op's ONNX schema forms.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace mixprec::compiler::onnx_import {

/// The ONNX schema forms of MaxPool.
static const OpForm kMaxPoolForms[] = {
    {1, 1, 1, 1, 1, "auto_pad kernel_shape pads strides"},
    {8, 1, 1, 1, 2, "auto_pad kernel_shape pads storage_order strides"},
    {10, 1, 1, 1, 2, "auto_pad ceil_mode dilations kernel_shape pads storage_order strides"},
};

void Importer::convertMaxPool(const NodeCtx &c) {
  if (inputType(c, 0).getRank() == 3) // 1-D: OnnxComposite.cpp
    return convertWindow1d(c, &Importer::convertMaxPool);
  Value x = input(c, 0);
  require4D(c, shapeOf(x), "pooling");
  requireFloat(c, 0, elemOf(x));
  if (attrInt(c, "storage_order", 0) != 0)
    nodeFail(c, "attribute 'storage_order' must be 0 (only row-major indices are defined)");
  requireUnusedOutputs(c, 1, "the Indices output of MaxPool is not supported");
  SmallVector<int64_t> kernel = windowInts(c, "kernel_shape", std::nullopt);
  SmallVector<int64_t> strides = windowInts(c, "strides", SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations = windowInts(c, "dilations", SmallVector<int64_t>{1, 1});
  bool ceilMode = attrBool(c, "ceil_mode", false);
  SmallVector<int64_t> pads = windowPads(c, shapeOf(x), kernel, strides, dilations);
  // Dilations are optional on mp.max_pool2d: set them only when they matter.
  DenseI64ArrayAttr dil = llvm::any_of(dilations, [](int64_t d) { return d != 1; })
                              ? builder.getDenseI64ArrayAttr(dilations)
                              : DenseI64ArrayAttr();
  defineValue(c, 0,
              createInferred<graph::MaxPool2dOp>(
                  c, elemOf(x), x, builder.getDenseI64ArrayAttr(kernel),
                  builder.getDenseI64ArrayAttr(strides), builder.getDenseI64ArrayAttr(pads),
                  ceilMode ? builder.getBoolAttr(true) : BoolAttr(), dil));
}

/// The ONNX schema forms of AveragePool.
static const OpForm kAveragePoolForms[] = {
    {1, 1, 1, 1, 1, "auto_pad kernel_shape pads strides"},
    {7, 1, 1, 1, 1, "auto_pad count_include_pad kernel_shape pads strides"},
    {10, 1, 1, 1, 1, "auto_pad ceil_mode count_include_pad kernel_shape pads strides"},
    {19, 1, 1, 1, 1, "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides"},
};

void Importer::convertAveragePool(const NodeCtx &c) {
  if (inputType(c, 0).getRank() == 3) // 1-D: OnnxComposite.cpp
    return convertWindow1d(c, &Importer::convertAveragePool);
  Value x = input(c, 0);
  require4D(c, shapeOf(x), "pooling");
  requireFloat(c, 0, elemOf(x));
  SmallVector<int64_t> kernel = windowInts(c, "kernel_shape", std::nullopt);
  SmallVector<int64_t> strides = windowInts(c, "strides", SmallVector<int64_t>{1, 1});
  SmallVector<int64_t> dilations = windowInts(c, "dilations", SmallVector<int64_t>{1, 1});
  if (llvm::any_of(dilations, [](int64_t d) { return d != 1; }))
    nodeFail(c, "attribute 'dilations' " + graph::formatShape(dilations) +
                    " is not supported for AveragePool (only 1)");
  bool ceilMode = attrBool(c, "ceil_mode", false);
  bool countIncludePad = attrBool(c, "count_include_pad", false);
  SmallVector<int64_t> pads = windowPads(c, shapeOf(x), kernel, strides, dilations);
  defineValue(c, 0,
              createInferred<graph::AvgPool2dOp>(
                  c, elemOf(x), x, builder.getDenseI64ArrayAttr(kernel),
                  builder.getDenseI64ArrayAttr(strides), builder.getDenseI64ArrayAttr(pads),
                  ceilMode ? builder.getBoolAttr(true) : BoolAttr(),
                  countIncludePad ? builder.getBoolAttr(true) : BoolAttr()));
}

/// The ONNX schema forms of GlobalAveragePool and GlobalMaxPool.
static const OpForm kGlobalPoolForms[] = {
    {1, 1, 1, 1, 1, ""},
};

void Importer::convertGlobalPool(const NodeCtx &c) {
  Value x = input(c, 0);
  requireFloat(c, 0, elemOf(x));
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 3)
    nodeFail(c, "input must have rank >= 3 (N, C, spatial...), got " + graph::formatShape(shape));
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
    axes.push_back(d);
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(axes);
  BoolAttr kd = builder.getBoolAttr(true);
  Value r = c.node.op_type() == "GlobalAveragePool"
                ? createInferred<graph::ReduceMeanOp>(c, elemOf(x), x, axesAttr, kd, TypeAttr())
                : createInferred<graph::ReduceMaxOp>(c, elemOf(x), x, axesAttr, kd, TypeAttr());
  defineValue(c, 0, r);
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::poolingOps() {
  static const OpInfo table[] = {
      {"MaxPool", &Importer::convertMaxPool, kMaxPoolForms},
      {"AveragePool", &Importer::convertAveragePool, kAveragePoolForms},
      {"GlobalAveragePool", &Importer::convertGlobalPool, kGlobalPoolForms},
      {"GlobalMaxPool", &Importer::convertGlobalPool, kGlobalPoolForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
