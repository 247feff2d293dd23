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

/// Whether MaxPool node `c` has its Indices output (#1) read.
static bool indicesUsed(const onnx::NodeProto &node, const llvm::StringSet<> &used) {
  return node.output_size() > 1 && !node.output(1).empty() && used.count(node.output(1));
}

LogicalResult Importer::convertMaxPool(const NodeCtx &c) {
  int64_t storageOrder;
  if (failed(attrInt(c, "storage_order", 0, storageOrder)))
    return failure();
  if (storageOrder != 0 && storageOrder != 1)
    return nodeError(c, "attribute 'storage_order' must be 0 (row-major) or 1 (column-major), got " +
                llvm::Twine(storageOrder));
  RankedTensorType xType;
  if (failed(inputType(c, 0, xType)))
    return failure();
  int64_t rank = xType.getRank();
  // mp.max_pool2d has no indices; 1-D runs through it (OnnxComposite.cpp).
  if (indicesUsed(c.node, usedNames) || rank == 5)
    return convertPoolNd(c);
  if (rank == 3)
    return convertWindow1d(c, &Importer::convertMaxPool);
  Value x;
  PoolWindow w;
  if (failed(input(c, 0, x)) || failed(require4D(c, shapeOf(x), "pooling")) ||
      failed(requireFloat(c, 0, elemOf(x))) || failed(poolWindow(c, shapeOf(x), w)))
    return failure();
  // Dilations are optional on mp.max_pool2d: set them only when they matter.
  DenseI64ArrayAttr dil = llvm::any_of(w.dilations, [](int64_t d) { return d != 1; })
                              ? builder.getDenseI64ArrayAttr(w.dilations)
                              : DenseI64ArrayAttr();
  return defineResult(
      c, 0,
      createInferred<graph::MaxPool2dOp>(c, elemOf(x), x, builder.getDenseI64ArrayAttr(w.kernel),
                                         builder.getDenseI64ArrayAttr(w.strides),
                                         builder.getDenseI64ArrayAttr(w.pads),
                                         w.ceilMode ? builder.getBoolAttr(true) : BoolAttr(), dil));
}

/// The ONNX schema forms of AveragePool.
static const OpForm kAveragePoolForms[] = {
    {1, 1, 1, 1, 1, "auto_pad kernel_shape pads strides"},
    {7, 1, 1, 1, 1, "auto_pad count_include_pad kernel_shape pads strides"},
    {10, 1, 1, 1, 1, "auto_pad ceil_mode count_include_pad kernel_shape pads strides"},
    {19, 1, 1, 1, 1, "auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides"},
};

/// The window attributes of a pooling node over `shape` (rank 3 to 5), read
/// in the order kernel_shape, strides, dilations, ceil_mode, then (when
/// `countIncludePad` is set: 2-D AveragePool) count_include_pad, then the
/// pads.
LogicalResult Importer::poolWindow(const NodeCtx &c, ArrayRef<int64_t> shape, PoolWindow &w,
                                   bool *countIncludePad) {
  const size_t dims = shape.size() - 2;
  SmallVector<int64_t> ones(dims, 1);
  if (failed(windowInts(c, "kernel_shape", std::nullopt, w.kernel, dims)) ||
      failed(windowInts(c, "strides", ones, w.strides, dims)) ||
      failed(windowInts(c, "dilations", ones, w.dilations, dims)) ||
      failed(attrBool(c, "ceil_mode", false, w.ceilMode)))
    return failure();
  if (countIncludePad && failed(attrBool(c, "count_include_pad", false, *countIncludePad)))
    return failure();
  FailureOr<SmallVector<int64_t>> pads = windowPads(c, shape, w.kernel, w.strides, w.dilations);
  if (failed(pads))
    return failure();
  w.pads = *pads;
  return success();
}

/// Whether `dilations` is set with a value other than 1.
static bool dilated(std::optional<SmallVector<int64_t>> dilations) {
  return dilations && llvm::any_of(*dilations, [](int64_t d) { return d != 1; });
}

LogicalResult Importer::convertAveragePool(const NodeCtx &c) {
  RankedTensorType xType;
  if (failed(inputType(c, 0, xType)))
    return failure();
  int64_t rank = xType.getRank();
  // mp.avg_pool2d has no dilations; 1-D runs through the 2-D converter.
  std::optional<SmallVector<int64_t>> dilations;
  if (rank == 4 && failed(attrInts(c, "dilations", dilations)))
    return failure();
  if (rank == 5 || (rank == 4 && dilated(dilations)))
    return convertPoolNd(c);
  if (rank == 3)
    return convertWindow1d(c, &Importer::convertAveragePool);
  Value x;
  PoolWindow w;
  bool countIncludePad;
  if (failed(input(c, 0, x)) || failed(require4D(c, shapeOf(x), "pooling")) ||
      failed(requireFloat(c, 0, elemOf(x))) ||
      failed(poolWindow(c, shapeOf(x), w, &countIncludePad)))
    return failure();
  return defineResult(
      c, 0,
      createInferred<graph::AvgPool2dOp>(c, elemOf(x), x, builder.getDenseI64ArrayAttr(w.kernel),
                                         builder.getDenseI64ArrayAttr(w.strides),
                                         builder.getDenseI64ArrayAttr(w.pads),
                                         w.ceilMode ? builder.getBoolAttr(true) : BoolAttr(),
                                         countIncludePad ? builder.getBoolAttr(true) : BoolAttr()));
}

LogicalResult Importer::convertPoolNd(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 3 || shape.size() > 5)
    return nodeError(c,
                     "only 1-D to 3-D pooling (an input of rank 3 to 5) is supported, got an input "
                     "of shape " +
                         shapes::formatShape(shape));
  if (failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  PoolWindow w;
  bool countIncludePad = false;
  bool average = c.node.op_type() == "AveragePool";
  if (failed(poolWindow(c, shape, w)) ||
      (average && failed(attrBool(c, "count_include_pad", false, countIncludePad))))
    return failure();
  DenseI64ArrayAttr kernelAttr = builder.getDenseI64ArrayAttr(w.kernel);
  DenseI64ArrayAttr stridesAttr = builder.getDenseI64ArrayAttr(w.strides);
  DenseI64ArrayAttr padsAttr = builder.getDenseI64ArrayAttr(w.pads);
  DenseI64ArrayAttr dilationsAttr = builder.getDenseI64ArrayAttr(w.dilations);
  BoolAttr ceilAttr = w.ceilMode ? builder.getBoolAttr(true) : BoolAttr();
  if (average)
    return defineResult(c, 0,
                        createInferred<graph::AvgPoolOp>(
                            c, elemOf(x), x, kernelAttr, stridesAttr, padsAttr, dilationsAttr,
                            ceilAttr, countIncludePad ? builder.getBoolAttr(true) : BoolAttr()));
  if (failed(defineResult(c, 0,
                          createInferred<graph::MaxPoolOp>(c, elemOf(x), x, kernelAttr, stridesAttr,
                                                           padsAttr, dilationsAttr, ceilAttr))))
    return failure();
  if (!indicesUsed(c.node, usedNames))
    return success();
  int64_t storageOrder;
  if (failed(attrInt(c, "storage_order", 0, storageOrder)))
    return failure();
  return defineResult(c, 1,
                      createInferred<graph::MaxPoolIndicesOp>(
                          c, builder.getI64Type(), x, kernelAttr, stridesAttr, padsAttr,
                          dilationsAttr, ceilAttr,
                          storageOrder ? builder.getI64IntegerAttr(storageOrder) : IntegerAttr()));
}

/// The ONNX schema forms of GlobalAveragePool and GlobalMaxPool.
static const OpForm kGlobalPoolForms[] = {
    {1, 1, 1, 1, 1, ""},
};

LogicalResult Importer::convertGlobalPool(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 3)
    return nodeError(c, "input must have rank >= 3 (N, C, spatial...), got " +
                            shapes::formatShape(shape));
  SmallVector<int64_t> axes;
  for (int64_t d = 2; d < static_cast<int64_t>(shape.size()); ++d)
    axes.push_back(d);
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(axes);
  BoolAttr kd = builder.getBoolAttr(true);
  return defineResult(
      c, 0,
      c.node.op_type() == "GlobalAveragePool"
          ? createInferred<graph::ReduceMeanOp>(c, elemOf(x), x, axesAttr, kd, TypeAttr())
          : createInferred<graph::ReduceMaxOp>(c, elemOf(x), x, axesAttr, kd, TypeAttr()));
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
