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
static LogicalResult requireIndices(const Importer &imp, const NodeCtx &c, Type t, int i) {
  if (!t.isInteger(64) && !t.isInteger(32))
    return imp.nodeError(c, "indices (" + quotedName(c.node.input(i)) +
                                ") must be INT64 or INT32, got " + elementTypeName(t));
  return success();
}

/// Fails unless input 0 is a float, INT32 or INT64 tensor (what ArgMax,
/// TopK and CumSum run on).
static LogicalResult requireNumeric(const Importer &imp, const NodeCtx &c, Type t) {
  if (!isFloat(t) && !isRuntimeInteger(t))
    return imp.nodeError(c, "input (" + quotedName(c.node.input(0)) +
                                ") must be a float, INT32 or INT64 tensor, got " +
                                elementTypeName(t));
  return success();
}

/// Checks constant gather indices now instead of failing at run time:
/// component `j` of every tuple of `tuple` values addresses dim
/// `dims[j]` of the data.
static LogicalResult checkConstIndices(const Importer &imp, const NodeCtx &c,
                                       llvm::ArrayRef<int64_t> indices, int64_t tuple,
                                       llvm::function_ref<int64_t(int64_t j)> dimOf) {
  for (size_t n = 0; n < indices.size(); ++n) {
    int64_t j = static_cast<int64_t>(n) % tuple, size = dimOf(j), i = indices[n];
    if (i < -size || i >= size)
      return imp.nodeError(c, "index " + llvm::Twine(i) + " (element " + llvm::Twine(n) +
                                  " of the indices) is out of range for a dim of size " +
                                  llvm::Twine(size));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// GatherElements, GatherND
//===----------------------------------------------------------------------===//

static const OpForm kGatherElementsForms[] = {
    {11, 2, 2, 1, 1, "axis"},
};

LogicalResult Importer::convertGatherElements(const NodeCtx &c) {
  Entry *pd, *pi;
  if (failed(entryOf(c, 0, pd)) || failed(entryOf(c, 1, pi)))
    return failure();
  Entry &data = *pd, &indices = *pi;
  RankedTensorType dt = entryType(data), it = entryType(indices);
  if (failed(requireIndices(*this, c, it.getElementType(), 1)))
    return failure();
  if (dt.getRank() == 0)
    return nodeError(c, "data must have rank >= 1");
  int64_t axis;
  if (failed(attrInt(c, "axis", 0, axis)) ||
      failed(normalizeAxis(c, "attribute 'axis'", axis, dt.getRank())))
    return failure();
  if (indices.constant && failed(checkConstIndices(*this, c, intValues(indices.constant), 1,
                                                   [&](int64_t) { return dt.getDimSize(axis); })))
    return failure();
  Value d = materialize(data), ix = materialize(indices);
  return defineResult(c, 0,
                      createInferred<graph::GatherElementsOp>(c, dt.getElementType(), d, ix,
                                                              builder.getI64IntegerAttr(axis)));
}

static const OpForm kGatherNdForms[] = {
    {11, 2, 2, 1, 1, ""},
    {12, 2, 2, 1, 1, "batch_dims"},
};

LogicalResult Importer::convertGatherNd(const NodeCtx &c) {
  Entry *pd, *pi;
  if (failed(entryOf(c, 0, pd)) || failed(entryOf(c, 1, pi)))
    return failure();
  Entry &data = *pd, &indices = *pi;
  RankedTensorType dt = entryType(data), it = entryType(indices);
  int64_t batchDims;
  if (failed(requireIndices(*this, c, it.getElementType(), 1)) ||
      failed(attrInt(c, "batch_dims", 0, batchDims)))
    return failure();
  FailureOr<Shape> gathered =
      expectShape(c, shapes::gatherNdShape(dt.getShape(), it.getShape(), batchDims));
  if (failed(gathered))
    return failure();
  const Shape &s = *gathered;
  if (indices.constant &&
      failed(checkConstIndices(*this, c, intValues(indices.constant), it.getShape().back(),
                               [&](int64_t j) { return dt.getDimSize(batchDims + j); })))
    return failure();
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
  Value x;
  if (failed(input(c, 0, x)) || failed(requireNumeric(*this, c, elemOf(x))))
    return failure();
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  int64_t axis;
  bool keep, selectLast;
  if (failed(attrInt(c, "axis", 0, axis)) ||
      failed(normalizeAxis(c, "attribute 'axis'", axis, rank)) ||
      failed(attrBool(c, "keepdims", true, keep)) ||
      failed(attrBool(c, "select_last_index", false, selectLast)))
    return failure();
  IntegerAttr axisAttr = builder.getI64IntegerAttr(axis);
  BoolAttr keepDims = builder.getBoolAttr(keep);
  BoolAttr last = builder.getBoolAttr(selectLast);
  Type i64 = builder.getI64Type();
  return defineResult(c, 0,
                      c.node.op_type() == "ArgMax"
                          ? createInferred<graph::ArgMaxOp>(c, i64, x, axisAttr, keepDims, last)
                          : createInferred<graph::ArgMinOp>(c, i64, x, axisAttr, keepDims, last));
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
  Value x;
  if (failed(input(c, 0, x)))
    return failure();
  Type et = elemOf(x);
  if (failed(requireNumeric(*this, c, et)))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.empty())
    return nodeError(c, "input must have rank >= 1");
  int64_t axis;
  if (failed(attrInt(c, "axis", -1, axis)) ||
      failed(normalizeAxis(c, "attribute 'axis'", axis, shape.size())))
    return failure();
  int64_t k = 0;
  if (opset < 10) {
    std::optional<int64_t> given;
    if (failed(attrIntOpt(c, "k", given)))
      return failure();
    if (!given)
      return nodeError(c, "attribute 'k' is required");
    k = *given;
  } else {
    SmallVector<int64_t> given;
    if (failed(requireConstInts(c, 1, "K", given)))
      return failure();
    if (given.size() != 1)
      return nodeError(c, "input 'K' (" + quotedName(c.node.input(1)) + ") must hold one value, got " +
                      llvm::Twine(given.size()));
    k = given[0];
  }
  if (k < 0 || k > shape[axis])
    return nodeError(c, "k " + llvm::Twine(k) + " is out of range [0, " + llvm::Twine(shape[axis]) +
                            "] for axis " + llvm::Twine(axis) + " of " +
                            shapes::formatShape(shape));
  FailureOr<Shape> s = expectShape(c, shapes::topKShape(shape, axis, k));
  bool largest, sorted;
  if (failed(s) || failed(attrBool(c, "largest", true, largest)) ||
      failed(attrBool(c, "sorted", true, sorted)))
    return failure();
  auto op = builder.create<graph::TopKOp>(
      c.loc, tensorType(*s, et), tensorType(*s, builder.getI64Type()), x,
      builder.getI64IntegerAttr(axis), builder.getI64IntegerAttr(k), builder.getBoolAttr(largest),
      builder.getBoolAttr(sorted));
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
  Value x;
  SmallVector<int64_t> axes;
  if (failed(input(c, 0, x)) || failed(requireNumeric(*this, c, elemOf(x))) ||
      failed(requireConstInts(c, 1, "axis", axes)))
    return failure();
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  if (axes.size() != 1)
    return nodeError(c, "input 'axis' (" + quotedName(c.node.input(1)) + ") must hold one value, got " +
                    llvm::Twine(axes.size()));
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  int64_t axis = axes[0];
  bool exclusive, reverse;
  if (failed(normalizeAxis(c, "input 'axis'", axis, rank)) ||
      failed(attrBool(c, "exclusive", false, exclusive)) ||
      failed(attrBool(c, "reverse", false, reverse)))
    return failure();
  return defineResult(c, 0,
                      createInferred<graph::CumSumOp>(
                          c, elemOf(x), x, builder.getI64IntegerAttr(axis),
                          builder.getBoolAttr(exclusive), builder.getBoolAttr(reverse)));
}

//===----------------------------------------------------------------------===//
// ScatterND
//===----------------------------------------------------------------------===//

static const OpForm kScatterNdForms[] = {
    {11, 3, 3, 1, 1, ""},
    {16, 3, 3, 1, 1, "reduction"},
};

LogicalResult Importer::convertScatterNd(const NodeCtx &c) {
  Entry *pi;
  if (failed(entryOf(c, 1, pi)))
    return failure();
  Entry &indices = *pi;
  RankedTensorType it = entryType(indices);
  Value data;
  std::string reduction;
  if (failed(requireIndices(*this, c, it.getElementType(), 1)) || failed(input(c, 0, data)) ||
      failed(requireNumeric(*this, c, elemOf(data))) ||
      failed(attrString(c, "reduction", "none", reduction)))
    return failure();
  // Opset 16 has none, add and mul; 18 adds max and min.
  bool known = reduction == "none" || reduction == "add" || reduction == "mul" ||
               (opset >= 18 && (reduction == "max" || reduction == "min"));
  if (!known)
    return nodeError(c, "attribute 'reduction' '" + reduction + "' is not one of none, add, mul" +
                    (opset >= 18 ? ", max, min" : " (max and min from opset 18)"));
  ArrayRef<int64_t> ds = shapeOf(data);
  FailureOr<Shape> addressed = expectShape(c, shapes::gatherNdShape(ds, it.getShape(), 0));
  Value updates;
  if (failed(addressed) || failed(input(c, 2, updates)))
    return failure();
  const Shape &expected = *addressed;
  if (elemOf(updates) != elemOf(data))
    return nodeError(c, "updates (" + quotedName(c.node.input(2)) + ") are " +
                    elementTypeName(elemOf(updates)) + ", the data is " +
                    elementTypeName(elemOf(data)));
  if (shapeOf(updates) != ArrayRef<int64_t>(expected))
    return nodeError(c, "updates (" + quotedName(c.node.input(2)) + ") have shape " +
                            shapes::formatShape(shapeOf(updates)) + ", the indices address " +
                            shapes::formatShape(expected));
  if (indices.constant &&
      failed(checkConstIndices(*this, c, intValues(indices.constant), it.getShape().back(),
                               [&](int64_t j) { return ds[j]; })))
    return failure();
  Value ix = materialize(indices);
  return defineResult(c, 0,
                      createInferred<graph::ScatterNdOp>(c, elemOf(data), data, ix, updates,
                                                         builder.getStringAttr(reduction)));
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
