//===- OnnxOpHelpers.cpp - helpers shared by converters -------------------===//
//
// Importer members that several op families' converters use: axis
// normalization, reshape/transpose building, window attributes.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

ShapeOrError reshapeShape(ArrayRef<int64_t> in, ArrayRef<int64_t> target, bool allowZero) {
  auto failure = [](const llvm::Twine &why) { return ShapeOrError::failure(why.str()); };
  Shape out;
  int inferIndex = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= in.size())
        return failure("shape " + shapes::formatShape(target) + " copies dim " + llvm::Twine(i) +
                       " (0), but the input " + shapes::formatShape(in) + " has rank " +
                       llvm::Twine(in.size()));
      out.push_back(in[i]);
    } else if (d == -1) {
      if (inferIndex >= 0)
        return failure("shape " + shapes::formatShape(target) + " has more than one -1");
      inferIndex = static_cast<int>(i);
      out.push_back(1);
    } else if (d < 0) {
      return failure("shape " + shapes::formatShape(target) + " has invalid dimension " +
                     llvm::Twine(d));
    } else {
      out.push_back(d);
    }
  }
  if (allowZero && inferIndex >= 0 && llvm::is_contained(target, 0))
    return failure("shape " + shapes::formatShape(target) + " has both 0 and -1 with allowzero=1");
  int64_t total = shapes::numElements(in);
  int64_t known = shapes::numElements(out); // the -1 slot counts as 1
  if (known < 0)
    return failure("shape " + shapes::formatShape(target) + " has too many elements");
  if (inferIndex >= 0) {
    if (known == 0 || total % known != 0)
      return failure("cannot reshape " + shapes::formatShape(in) + " to " +
                     shapes::formatShape(target) + ": the -1 dimension cannot be inferred");
    out[inferIndex] = total / known;
  } else if (known != total) {
    return failure("cannot reshape " + shapes::formatShape(in) + " (" + llvm::Twine(total) +
                   " elements) to " + shapes::formatShape(out) + " (" + llvm::Twine(known) +
                   " elements)");
  }
  return {out, ""};
}

FailureOr<Shape> Importer::expectShape(const NodeCtx &c, const ShapeOrError &s) const {
  if (!s.ok())
    return nodeError(c, s.error);
  return s.shape;
}

LogicalResult Importer::normalizeAxis(const NodeCtx &c, llvm::StringRef what, int64_t &axis,
                                      int64_t rank) const {
  if (axis < -rank || axis >= rank)
    return nodeError(c, what + " " + llvm::Twine(axis) + " is out of range [" + llvm::Twine(-rank) +
                            ", " + llvm::Twine(rank - 1) + "] for rank " + llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  return success();
}

FailureOr<SmallVector<int64_t>> Importer::normalizeAxes(const NodeCtx &c, llvm::StringRef what,
                                                        ArrayRef<int64_t> axes,
                                                        int64_t rank) const {
  SmallVector<int64_t> out(axes.begin(), axes.end());
  for (int64_t &a : out)
    if (failed(normalizeAxis(c, twineStr("axis in " + what), a, rank)))
      return failure();
  llvm::sort(out);
  for (size_t i = 1; i < out.size(); ++i)
    if (out[i] == out[i - 1])
      return nodeError(c, what + " names axis " + llvm::Twine(out[i]) + " twice");
  return out;
}

LogicalResult Importer::normalizeAxesInOrder(const NodeCtx &c, llvm::StringRef what,
                                             SmallVectorImpl<int64_t> &axes, int64_t rank) const {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (failed(normalizeAxis(c, twineStr("axis in " + what), axes[i], rank)))
      return failure();
    if (llvm::is_contained(ArrayRef<int64_t>(axes).take_front(i), axes[i]))
      return nodeError(c, what + " names axis " + llvm::Twine(axes[i]) + " twice");
  }
  return success();
}

LogicalResult Importer::requireFloat(const NodeCtx &c, int i, Type t) const {
  if (!isFloat(t))
    return nodeError(c, "input #" + llvm::Twine(i) + " (" + quotedName(c.node.input(i)) +
                    ") must be FLOAT, got " + elementTypeName(t));
  return success();
}

LogicalResult Importer::requireFloatOrInteger(const NodeCtx &c, int i, Type t) const {
  if (!isFloat(t) && !isRuntimeInteger(t))
    return nodeError(c, "input #" + llvm::Twine(i) + " (" + quotedName(c.node.input(i)) +
                    ") must be FLOAT, INT32 or INT64, got " + elementTypeName(t));
  return success();
}

RankedTensorType Importer::tensorType(ArrayRef<int64_t> shape, Type elem) const {
  return RankedTensorType::get(shape, elem);
}

Value Importer::constant(Location loc, DenseElementsAttr attr) {
  // Constants go to the top of the function, in order of first use: after
  // the last one placed, or before the first op.
  if (lastConstant)
    constBuilder.setInsertionPointAfter(lastConstant);
  else
    constBuilder.setInsertionPointToStart(builder.getInsertionBlock());
  auto op = constBuilder.create<graph::ConstantOp>(loc, attr);
  lastConstant = op;
  return op.getOutput();
}

Value Importer::scalarF32(const NodeCtx &c, float v) {
  return constant(c.loc, makeF32Attr(ctx, {}, {v}));
}

Value Importer::reshape(const NodeCtx &c, Value v, ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  return builder.create<graph::ReshapeOp>(c.loc, tensorType(shape, elemOf(v)), v).getOutput();
}

FailureOr<Value> Importer::reshapeInput(const NodeCtx &c, int i, ArrayRef<int64_t> shape) {
  Entry *entry;
  if (failed(entryOf(c, i, entry)))
    return failure();
  Entry &e = *entry;
  // A constant parameter is re-typed at compile time instead of reshaped at
  // run time.
  if (e.constant && ArrayRef<int64_t>(entryType(e).getShape()) != shape)
    return constant(Location(e.constantLoc),
                    e.constant.reshape(tensorType(shape, e.constant.getElementType())));
  return reshape(c, materialize(e), shape);
}

FailureOr<Value> Importer::transpose(const NodeCtx &c, FailureOr<Value> v, ArrayRef<int64_t> perm) {
  if (failed(v))
    return failure();
  return createInferred<graph::TransposeOp>(c, elemOf(*v), *v, builder.getDenseI64ArrayAttr(perm));
}

LogicalResult Importer::defineReshaped(const NodeCtx &c, int inputIndex, ArrayRef<int64_t> shape) {
  Entry *entry;
  if (failed(entryOf(c, inputIndex, entry)))
    return failure();
  Entry &e = *entry;
  RankedTensorType t = entryType(e);
  if (t.getShape() == shape) {
    defineEntry(c, 0, e);
    return success();
  }
  // Integer constants stay compile-time known through reshapes (shape
  // arithmetic); float constants (weights) are reshaped by an op so that
  // large tensors are not copied at import time.
  if (e.constant && isa<IntegerType>(t.getElementType())) {
    defineConst(c, 0, e.constant.reshape(tensorType(shape, t.getElementType())));
    return success();
  }
  defineValue(c, 0, reshape(c, materialize(e), shape));
  return success();
}

bool Importer::hasAttr(const NodeCtx &c, llvm::StringRef name) const {
  return llvm::any_of(c.node.attribute(),
                      [&](const onnx::AttributeProto &a) { return a.name() == name; });
}

LogicalResult Importer::require4D(const NodeCtx &c, ArrayRef<int64_t> shape, llvm::StringRef what) const {
  if (shape.size() != 4)
    return nodeError(c, "only 2-D " + what +
                            " (a 4-D NCHW input) is supported, got an input of shape " +
                            shapes::formatShape(shape));
  return success();
}

LogicalResult Importer::reduceAxes(const NodeCtx &c, int64_t inputFrom,
                                   std::optional<SmallVector<int64_t>> &axes) {
  bool axesAsInput = opset >= inputFrom;
  axes = std::nullopt;
  bool noopWithEmptyAxes = false;
  // checkSchema allows the attribute or the input, not both.
  if (axesAsInput) {
    if (failed(attrBool(c, "noop_with_empty_axes", false, noopWithEmptyAxes)))
      return failure();
    SmallVector<int64_t> given;
    if (hasInput(c, 1)) {
      if (failed(requireConstInts(c, 1, "axes", given)))
        return failure();
      axes = given;
    }
  } else if (failed(attrInts(c, "axes", axes))) {
    return failure();
  }
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  int64_t rank = t.getRank();
  if (axes && !axes->empty()) {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(c, axesAsInput ? "input 'axes'" : "attribute 'axes'", *axes, rank);
    if (failed(normalized))
      return failure();
    axes = *normalized;
    return success();
  }
  // No axes: nothing with noop_with_empty_axes, else every axis (mp
  // reductions spell "all" out). A rank-0 input has nothing to reduce.
  axes = std::nullopt;
  if (noopWithEmptyAxes || rank == 0)
    return success();
  axes.emplace();
  for (int64_t d = 0; d < rank; ++d)
    axes->push_back(d);
  return success();
}

LogicalResult Importer::windowInts(const NodeCtx &c, llvm::StringRef name,
                                   std::optional<SmallVector<int64_t>> dflt,
                                   SmallVector<int64_t> &values, size_t count) {
  std::optional<SmallVector<int64_t>> v;
  if (failed(attrInts(c, name, v)))
    return failure();
  if (!v) {
    if (!dflt)
      return nodeError(c, "attribute '" + name + "' is required");
    v = dflt;
  }
  if (auto err = checkWindowValues(name, *v, count))
    return nodeError(c, *err);
  values = *v;
  return success();
}

LogicalResult Importer::explicitPads(const NodeCtx &c, size_t dims,
                                     std::optional<SmallVector<int64_t>> &pads) {
  if (failed(attrInts(c, "pads", pads)))
    return failure();
  if (!pads)
    return success();
  if (pads->size() != 2 * dims)
    return nodeError(c, "attribute 'pads' must have " + llvm::Twine(2 * dims) + " values " +
                            (dims == 2 ? "[top, left, bottom, right]" : "[begins..., ends...]") +
                            ", got " + llvm::Twine(pads->size()));
  for (int64_t p : *pads)
    if (p < 0 || p > std::numeric_limits<int32_t>::max())
      return nodeError(c, "attribute 'pads' must hold non-negative values, got " +
                              shapes::formatShape(*pads));
  return success();
}

FailureOr<std::string> Importer::autoPadMode(const NodeCtx &c) {
  std::string autoPad;
  if (failed(attrString(c, "auto_pad", "NOTSET", autoPad)))
    return failure();
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return nodeError(c,
                     "attribute 'auto_pad' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got " +
                         quotedName(autoPad));
  return autoPad;
}

LogicalResult Importer::padAttributes(const NodeCtx &c, size_t dims,
                                      std::optional<SmallVector<int64_t>> &pads,
                                      std::string &autoPad) {
  if (failed(explicitPads(c, dims, pads)))
    return failure();
  FailureOr<std::string> mode = autoPadMode(c);
  if (failed(mode))
    return failure();
  autoPad = *mode;
  return success();
}

FailureOr<SmallVector<int64_t>> Importer::windowPads(const NodeCtx &c, ArrayRef<int64_t> inShape,
                                                     ArrayRef<int64_t> kernel,
                                                     ArrayRef<int64_t> strides,
                                                     ArrayRef<int64_t> dilations) {
  const size_t dims = kernel.size();
  std::optional<SmallVector<int64_t>> pads;
  std::string autoPad;
  if (failed(padAttributes(c, dims, pads, autoPad)))
    return failure();
  SmallVector<int64_t> out(2 * dims, 0);
  if (autoPad == "NOTSET")
    return pads ? *pads : out;
  if (pads && llvm::any_of(*pads, [](int64_t p) { return p != 0; }))
    return nodeError(c, "attributes 'pads' and 'auto_pad' (" + autoPad + ") cannot both be set");
  if (autoPad == "VALID")
    return out;
  for (size_t i = 0; i < dims; ++i) {
    int64_t in = inShape[2 + i], s = strides[i];
    int64_t outSize = (in + s - 1) / s;
    int64_t effective = (kernel[i] - 1) * dilations[i] + 1;
    int64_t total = std::max<int64_t>(0, (outSize - 1) * s + effective - in);
    // SAME_UPPER puts the odd padding element at the end, SAME_LOWER at the
    // beginning.
    int64_t small = total / 2, large = total - small;
    out[i] = autoPad == "SAME_UPPER" ? small : large;
    out[dims + i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return out;
}

} // namespace mixprec::compiler::onnx_import
