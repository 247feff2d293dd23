//===- OnnxIndexing.cpp - index-driven ops ----------------------------------===//
//
// Ops that compute or follow indices (TopK, ArgMax, GatherElements,
// GatherND, ScatterND, CumSum, ...), each an mp op run as a routine.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Fails unless input `i` holds indices (INT64 or INT32).
static void requireIndices(const Importer &imp, const NodeCtx &c, Type t, int i) {
  if (!t.isInteger(64) && !t.isInteger(32))
    imp.nodeFail(c, "indices (" + quotedName(c.node.input(i)) + ") must be INT64 or INT32, got " +
                        elementTypeName(t));
}

/// Fails unless input 0 is a float, INT32 or INT64 tensor (what ArgMax,
/// TopK and CumSum run on).
static void requireNumeric(const Importer &imp, const NodeCtx &c, Type t) {
  if (!isFloat(t) && !isRuntimeInteger(t))
    imp.nodeFail(c, "input (" + quotedName(c.node.input(0)) +
                        ") must be a float, INT32 or INT64 tensor, got " + elementTypeName(t));
}

/// Checks constant gather indices now instead of failing at run time:
/// component `j` of every tuple of `tuple` values addresses dim
/// `dims[j]` of the data.
static void checkConstIndices(const Importer &imp, const NodeCtx &c,
                              llvm::ArrayRef<int64_t> indices, int64_t tuple,
                              llvm::function_ref<int64_t(int64_t j)> dimOf) {
  for (size_t n = 0; n < indices.size(); ++n) {
    int64_t j = static_cast<int64_t>(n) % tuple, size = dimOf(j), i = indices[n];
    if (i < -size || i >= size)
      imp.nodeFail(c, "index " + llvm::Twine(i) + " (element " + llvm::Twine(n) +
                          " of the indices) is out of range for a dim of size " +
                          llvm::Twine(size));
  }
}

//===----------------------------------------------------------------------===//
// GatherElements, GatherND
//===----------------------------------------------------------------------===//

static const OpForm kGatherElementsForms[] = {
    {11, 2, 2, 1, 1, "axis"},
};

LogicalResult Importer::convertGatherElements(const NodeCtx &c) {
  Entry &data = entryOf(c, 0);
  Entry &indices = entryOf(c, 1);
  RankedTensorType dt = entryType(data), it = entryType(indices);
  requireIndices(*this, c, it.getElementType(), 1);
  if (dt.getRank() == 0)
    return nodeError(c, "data must have rank >= 1");
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", 0), dt.getRank());
  if (indices.constant)
    checkConstIndices(*this, c, intValues(indices.constant), 1,
                      [&](int64_t) { return dt.getDimSize(axis); });
  Value d = materialize(data), ix = materialize(indices);
  defineValue(c, 0,
              createInferred<graph::GatherElementsOp>(c, dt.getElementType(), d, ix,
                                                      builder.getI64IntegerAttr(axis)));
  return success();
}

static const OpForm kGatherNdForms[] = {
    {11, 2, 2, 1, 1, ""},
    {12, 2, 2, 1, 1, "batch_dims"},
};

LogicalResult Importer::convertGatherNd(const NodeCtx &c) {
  Entry &data = entryOf(c, 0);
  Entry &indices = entryOf(c, 1);
  RankedTensorType dt = entryType(data), it = entryType(indices);
  requireIndices(*this, c, it.getElementType(), 1);
  int64_t batchDims = attrInt(c, "batch_dims", 0);
  Shape s = expectShape(c, graph::gatherNdShape(dt.getShape(), it.getShape(), batchDims));
  if (indices.constant)
    checkConstIndices(*this, c, intValues(indices.constant), it.getShape().back(),
                      [&](int64_t j) { return dt.getDimSize(batchDims + j); });
  Value d = materialize(data), ix = materialize(indices);
  defineValue(c, 0,
              builder
                  .create<graph::GatherNdOp>(c.loc, tensorType(s, dt.getElementType()), d, ix,
                                             builder.getI64IntegerAttr(batchDims))
                  .getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// ArgMax, ArgMin
//===----------------------------------------------------------------------===//

static const OpForm kArgReduceForms[] = {
    {1, 1, 1, 1, 1, "axis keepdims"},
    {12, 1, 1, 1, 1, "axis keepdims select_last_index"},
};

LogicalResult Importer::convertArgReduce(const NodeCtx &c) {
  Value x = input(c, 0);
  requireNumeric(*this, c, elemOf(x));
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", 0), rank);
  IntegerAttr axisAttr = builder.getI64IntegerAttr(axis);
  BoolAttr keepDims = builder.getBoolAttr(attrBool(c, "keepdims", true));
  BoolAttr last = builder.getBoolAttr(attrBool(c, "select_last_index", false));
  Type i64 = builder.getI64Type();
  defineValue(c, 0,
              c.node.op_type() == "ArgMax"
                  ? createInferred<graph::ArgMaxOp>(c, i64, x, axisAttr, keepDims, last)
                  : createInferred<graph::ArgMinOp>(c, i64, x, axisAttr, keepDims, last));
  return success();
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

static const OpForm kTopKForms[] = {
    {1, 1, 1, 2, 2, "axis k"},
    {10, 2, 2, 2, 2, "axis"},
    {11, 2, 2, 2, 2, "axis largest sorted"},
};

LogicalResult Importer::convertTopK(const NodeCtx &c) {
  Value x = input(c, 0);
  Type et = elemOf(x);
  requireNumeric(*this, c, et);
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.empty())
    return nodeError(c, "input must have rank >= 1");
  int64_t axis = normalizeAxis(c, "attribute 'axis'", attrInt(c, "axis", -1), shape.size());
  int64_t k = 0;
  if (opset < 10) {
    std::optional<int64_t> given = attrIntOpt(c, "k");
    if (!given)
      return nodeError(c, "attribute 'k' is required");
    k = *given;
  } else {
    SmallVector<int64_t> given = requireConstInts(c, 1, "K");
    if (given.size() != 1)
      return nodeError(c, "input 'K' (" + quotedName(c.node.input(1)) + ") must hold one value, got " +
                      llvm::Twine(given.size()));
    k = given[0];
  }
  if (k < 0 || k > shape[axis])
    return nodeError(c, "k " + llvm::Twine(k) + " is out of range [0, " + llvm::Twine(shape[axis]) +
                    "] for axis " + llvm::Twine(axis) + " of " + graph::formatShape(shape));
  Shape s = expectShape(c, graph::topKShape(shape, axis, k));
  auto op = builder.create<graph::TopKOp>(
      c.loc, tensorType(s, et), tensorType(s, builder.getI64Type()), x,
      builder.getI64IntegerAttr(axis), builder.getI64IntegerAttr(k),
      builder.getBoolAttr(attrBool(c, "largest", true)),
      builder.getBoolAttr(attrBool(c, "sorted", true)));
  defineValue(c, 0, op.getValues());
  defineValue(c, 1, op.getIndices());
  return success();
}

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

static const OpForm kCumSumForms[] = {
    {11, 2, 2, 1, 1, "exclusive reverse"},
};

LogicalResult Importer::convertCumSum(const NodeCtx &c) {
  Value x = input(c, 0);
  requireNumeric(*this, c, elemOf(x));
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  SmallVector<int64_t> axes = requireConstInts(c, 1, "axis");
  if (axes.size() != 1)
    return nodeError(c, "input 'axis' (" + quotedName(c.node.input(1)) + ") must hold one value, got " +
                    llvm::Twine(axes.size()));
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  int64_t axis = normalizeAxis(c, "input 'axis'", axes[0], rank);
  defineValue(c, 0,
              createInferred<graph::CumSumOp>(c, elemOf(x), x, builder.getI64IntegerAttr(axis),
                                              builder.getBoolAttr(attrBool(c, "exclusive", false)),
                                              builder.getBoolAttr(attrBool(c, "reverse", false))));
  return success();
}

//===----------------------------------------------------------------------===//
// ScatterND
//===----------------------------------------------------------------------===//

static const OpForm kScatterNdForms[] = {
    {11, 3, 3, 1, 1, ""},
    {16, 3, 3, 1, 1, "reduction"},
};

LogicalResult Importer::convertScatterNd(const NodeCtx &c) {
  Entry &indices = entryOf(c, 1);
  RankedTensorType it = entryType(indices);
  requireIndices(*this, c, it.getElementType(), 1);
  Value data = input(c, 0);
  requireNumeric(*this, c, elemOf(data));
  std::string reduction = attrString(c, "reduction", "none");
  // Opset 16 has none, add and mul; 18 adds max and min.
  bool known = reduction == "none" || reduction == "add" || reduction == "mul" ||
               (opset >= 18 && (reduction == "max" || reduction == "min"));
  if (!known)
    return nodeError(c, "attribute 'reduction' '" + reduction + "' is not one of none, add, mul" +
                    (opset >= 18 ? ", max, min" : " (max and min from opset 18)"));
  ArrayRef<int64_t> ds = shapeOf(data);
  Shape expected = expectShape(c, graph::gatherNdShape(ds, it.getShape(), 0));
  Value updates = input(c, 2);
  if (elemOf(updates) != elemOf(data))
    return nodeError(c, "updates (" + quotedName(c.node.input(2)) + ") are " +
                    elementTypeName(elemOf(updates)) + ", the data is " +
                    elementTypeName(elemOf(data)));
  if (shapeOf(updates) != ArrayRef<int64_t>(expected))
    return nodeError(c, "updates (" + quotedName(c.node.input(2)) + ") have shape " +
                    graph::formatShape(shapeOf(updates)) + ", the indices address " +
                    graph::formatShape(expected));
  if (indices.constant)
    checkConstIndices(*this, c, intValues(indices.constant), it.getShape().back(),
                      [&](int64_t j) { return ds[j]; });
  Value ix = materialize(indices);
  defineValue(c, 0,
              createInferred<graph::ScatterNdOp>(c, elemOf(data), data, ix, updates,
                                                 builder.getStringAttr(reduction)));
  return success();
}

//===----------------------------------------------------------------------===//
// ReduceProd (converted with the other reductions, convertReduce)
//===----------------------------------------------------------------------===//

static const OpForm kReduceProdForms[] = {
    {1, 1, 1, 1, 1, "axes keepdims"},
    {18, 1, 2, 1, 1, "keepdims noop_with_empty_axes"},
};

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::indexingOps() {
  static const OpInfo table[] = {
      {"GatherElements", &Importer::convertGatherElements, kGatherElementsForms},
      {"GatherND", &Importer::convertGatherNd, kGatherNdForms},
      {"ArgMax", &Importer::convertArgReduce, kArgReduceForms},
      {"ArgMin", &Importer::convertArgReduce, kArgReduceForms},
      {"TopK", &Importer::convertTopK, kTopKForms},
      {"CumSum", &Importer::convertCumSum, kCumSumForms},
      {"ScatterND", &Importer::convertScatterNd, kScatterNdForms},
      {"ReduceProd", &Importer::convertReduce, kReduceProdForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
