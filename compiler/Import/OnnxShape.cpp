//===- OnnxShape.cpp - data-movement ONNX ops -----------------------------===//
//
// The converters of the data-movement ops: Reshape, Flatten, Unsqueeze,
// Squeeze, Transpose, Concat, Slice, Split and Gather (folded at compile time
// on small integer constants, which carry exported graphs' shape
// arithmetic), each under its op's ONNX schema forms.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Reshape.
static const OpForm kReshapeForms[] = {
    {1, 1, 1, 1, 1, "consumed_inputs shape"},
    {5, 2, 2, 1, 1, ""},
    {14, 2, 2, 1, 1, "allowzero"},
};

LogicalResult Importer::convertReshape(const NodeCtx &c) {
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  ArrayRef<int64_t> in = t.getShape();
  SmallVector<int64_t> target;
  if (opset < 5) {
    std::optional<SmallVector<int64_t>> attr;
    if (failed(attrInts(c, "shape", attr)))
      return failure();
    if (!attr)
      return nodeError(c, "attribute 'shape' is required before opset 5");
    target = *attr;
  } else if (failed(requireConstInts(c, 1, "shape", target))) {
    return failure();
  }
  bool allowZero = false;
  if (opset >= 14 && failed(attrBool(c, "allowzero", false, allowZero)))
    return failure();
  FailureOr<Shape> out = expectShape(c, reshapeShape(in, target, allowZero));
  if (failed(out))
    return failure();
  return defineReshaped(c, 0, *out);
}

/// The ONNX schema forms of Flatten.
static const OpForm kFlattenForms[] = {
    {1, 1, 1, 1, 1, "axis"},
};

LogicalResult Importer::convertFlatten(const NodeCtx &c) {
  RankedTensorType t;
  int64_t axis;
  if (failed(inputType(c, 0, t)) || failed(attrInt(c, "axis", 1, axis)))
    return failure();
  ArrayRef<int64_t> in = t.getShape();
  int64_t rank = static_cast<int64_t>(in.size());
  // axis lies in [-rank, rank] (negative from opset 11).
  if (axis < (opset >= 11 ? -rank : 0) || axis > rank)
    return nodeError(c, "attribute 'axis' " + llvm::Twine(axis) + " is out of range for rank " +
                    llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  return defineReshaped(c, 0, {product(in, 0, axis), product(in, axis, rank)});
}

/// The ONNX schema forms of Unsqueeze.
static const OpForm kUnsqueezeForms[] = {
    {1, 1, 1, 1, 1, "axes"},
    {13, 2, 2, 1, 1, ""},
};

LogicalResult Importer::convertUnsqueeze(const NodeCtx &c) {
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  ArrayRef<int64_t> in = t.getShape();
  SmallVector<int64_t> axes;
  if (opset < 13) {
    std::optional<SmallVector<int64_t>> attr;
    if (failed(attrInts(c, "axes", attr)))
      return failure();
    if (!attr)
      return nodeError(c, "attribute 'axes' is required before opset 13");
    axes = *attr;
  } else if (failed(requireConstInts(c, 1, "axes", axes))) {
    return failure();
  }
  int64_t outRank = static_cast<int64_t>(in.size() + axes.size());
  FailureOr<SmallVector<int64_t>> norm = normalizeAxes(c, "axes", axes, outRank);
  if (failed(norm))
    return failure();
  Shape out;
  size_t next = 0;
  for (int64_t d = 0; d < outRank; ++d)
    out.push_back(llvm::is_contained(*norm, d) ? 1 : in[next++]);
  return defineReshaped(c, 0, out);
}

/// The ONNX schema forms of Squeeze.
static const OpForm kSqueezeForms[] = {
    {1, 1, 1, 1, 1, "axes"},
    {13, 1, 2, 1, 1, ""},
};

LogicalResult Importer::convertSqueeze(const NodeCtx &c) {
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  ArrayRef<int64_t> in = t.getShape();
  std::optional<SmallVector<int64_t>> axes;
  if (opset < 13) {
    if (failed(attrInts(c, "axes", axes)))
      return failure();
  } else if (hasInput(c, 1)) {
    axes.emplace();
    if (failed(requireConstInts(c, 1, "axes", *axes)))
      return failure();
  }
  Shape out;
  if (!axes) {
    for (int64_t d : in)
      if (d != 1)
        out.push_back(d);
  } else {
    FailureOr<SmallVector<int64_t>> normalized =
        normalizeAxes(c, "axes", *axes, static_cast<int64_t>(in.size()));
    if (failed(normalized))
      return failure();
    const SmallVector<int64_t> &norm = *normalized;
    for (int64_t a : norm)
      if (in[a] != 1)
        return nodeError(c, "cannot squeeze axis " + llvm::Twine(a) + " of size " +
                                llvm::Twine(in[a]) + " (input shape " + shapes::formatShape(in) +
                                ")");
    for (size_t d = 0; d < in.size(); ++d)
      if (!llvm::is_contained(norm, static_cast<int64_t>(d)))
        out.push_back(in[d]);
  }
  return defineReshaped(c, 0, out);
}

/// The ONNX schema forms of Transpose.
static const OpForm kTransposeForms[] = {
    {1, 1, 1, 1, 1, "perm"},
};

LogicalResult Importer::convertTranspose(const NodeCtx &c) {
  Value x;
  std::optional<SmallVector<int64_t>> p;
  if (failed(input(c, 0, x)) || failed(attrInts(c, "perm", p)))
    return failure();
  int64_t rank = static_cast<int64_t>(shapeOf(x).size());
  SmallVector<int64_t> perm;
  if (p)
    perm = *p;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank)
    return nodeError(c, "attribute 'perm' " + shapes::formatShape(perm) + " must have " +
                            llvm::Twine(rank) + " entries");
  return defineResult(c, 0, transpose(c, x, perm));
}

/// The ONNX schema forms of Concat.
static const OpForm kConcatForms[] = {
    {1, 1, kVariadic, 1, 1, "axis"},
};

LogicalResult Importer::convertConcat(const NodeCtx &c) {
  int n = c.node.input_size(); // at least one (checkSchema)
  SmallVector<Entry *> entries(n);
  for (int i = 0; i < n; ++i)
    if (failed(entryOf(c, i, entries[i])))
      return failure();
  RankedTensorType first = entryType(*entries[0]);
  int64_t rank = first.getRank();
  if (rank == 0)
    return nodeError(c, "inputs must have rank >= 1");
  std::optional<int64_t> axisAttr;
  if (failed(attrIntOpt(c, "axis", axisAttr)))
    return failure();
  if (!axisAttr && opset >= 4)
    return nodeError(c, "attribute 'axis' is required");
  int64_t axis = axisAttr.value_or(1);
  if (failed(normalizeAxis(c, "attribute 'axis'", axis, rank)))
    return failure();
  std::vector<shapes::Dims> inputShapes; // views of the types' shapes
  bool allConst = true;
  for (int i = 0; i < n; ++i) {
    RankedTensorType t = entryType(*entries[i]);
    if (t.getElementType() != first.getElementType())
      return nodeError(c, "input #" + llvm::Twine(i) + " is " + elementTypeName(t.getElementType()) +
                      ", input #0 is " + elementTypeName(first.getElementType()));
    inputShapes.emplace_back(t.getShape());
    allConst &= static_cast<bool>(entries[i]->constant);
  }
  FailureOr<Shape> concatenated = expectShape(c, shapes::concatShape(inputShapes, axis));
  if (failed(concatenated))
    return failure();
  const Shape &s = *concatenated;
  if (allConst && isa<IntegerType>(first.getElementType()) &&
      shapes::numElements(s) <= kMaxFoldElements) {
    // Shape vectors assembled from constants stay compile-time known.
    int64_t outer = product(s, 0, axis);
    SmallVector<SmallVector<int64_t>> vals;
    for (Entry *e : entries)
      vals.push_back(intValues(e->constant));
    // Each input's elements per outer index: its dims from the axis on.
    SmallVector<int64_t> chunks;
    for (shapes::Dims in : inputShapes)
      chunks.push_back(product(llvm::ArrayRef<int64_t>(in.begin(), in.end()), axis, in.size()));
    SmallVector<int64_t> out;
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < n; ++i)
        out.append(vals[i].begin() + o * chunks[i], vals[i].begin() + (o + 1) * chunks[i]);
    defineConst(c, 0, makeIntAttr(s, first.getElementType(), out));
    return success();
  }
  SmallVector<Value> operands;
  for (Entry *e : entries)
    operands.push_back(materialize(*e));
  defineValue(c, 0,
              builder
                  .create<graph::ConcatOp>(c.loc, tensorType(s, first.getElementType()), operands,
                                           builder.getI64IntegerAttr(axis))
                  .getOutput());
  return success();
}

/// The ONNX schema forms of Slice.
static const OpForm kSliceForms[] = {
    {1, 1, 1, 1, 1, "axes ends starts"},
    {10, 3, 5, 1, 1, ""},
};

LogicalResult Importer::convertSlice(const NodeCtx &c) {
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  ArrayRef<int64_t> in = t.getShape();
  int64_t rank = t.getRank();
  SmallVector<int64_t> starts, ends, axes, steps;
  bool haveAxes = false, haveSteps = false;
  if (opset < 10) {
    std::optional<SmallVector<int64_t>> s, e, a;
    if (failed(attrInts(c, "starts", s)) || failed(attrInts(c, "ends", e)))
      return failure();
    if (!s || !e)
      return nodeError(c, "attributes 'starts' and 'ends' are required before opset 10");
    starts = *s;
    ends = *e;
    if (failed(attrInts(c, "axes", a)))
      return failure();
    if (a) {
      axes = *a;
      haveAxes = true;
    }
  } else {
    if (failed(requireConstInts(c, 1, "starts", starts)) ||
        failed(requireConstInts(c, 2, "ends", ends)))
      return failure();
    haveAxes = hasInput(c, 3);
    haveSteps = hasInput(c, 4);
    if ((haveAxes && failed(requireConstInts(c, 3, "axes", axes))) ||
        (haveSteps && failed(requireConstInts(c, 4, "steps", steps))))
      return failure();
  }
  if (!haveAxes)
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (!haveSteps)
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return nodeError(c, "starts, ends, axes and steps must have the same length, got " +
                    llvm::Twine(starts.size()) + ", " + llvm::Twine(ends.size()) + ", " +
                    llvm::Twine(axes.size()) + ", " + llvm::Twine(steps.size()));

  SmallVector<int64_t> outStarts(rank, 0), outSteps(rank, 1);
  Shape counts(in.begin(), in.end());
  SmallVector<bool> seen(rank, false);
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t axis = axes[k];
    if (failed(normalizeAxis(c, "axis", axis, rank)))
      return failure();
    if (seen[axis])
      return nodeError(c, "axis " + llvm::Twine(axis) + " is sliced twice");
    seen[axis] = true;
    int64_t step = steps[k];
    if (step == 0)
      return nodeError(c, "step of axis " + llvm::Twine(axis) + " is zero");
    int64_t dim = in[axis];
    int64_t s = starts[k], e = ends[k];
    // ONNX: negative indices count from the end, then clamp to [0, dim] for
    // positive steps and [0, dim-1] / [-1, dim-1] for negative ones (so
    // INT64_MAX / INT64_MIN ends mean "to the end"). dim <= INT64_MAX so
    // adding it to a negative index cannot overflow.
    if (s < 0)
      s += dim;
    if (e < 0)
      e += dim;
    int64_t count = 0;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (e > s)
        count =
            static_cast<int64_t>(static_cast<uint64_t>(e - s - 1) / static_cast<uint64_t>(step)) +
            1;
    } else if (dim > 0) {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      uint64_t magnitude = 0 - static_cast<uint64_t>(step); // |INT64_MIN| fits uint64
      if (s > e)
        count = static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / magnitude) + 1;
    }
    outStarts[axis] = count > 0 ? s : 0;
    // A step only matters between two taken elements: with one or none,
    // any step (INT64_MAX included) means 1, which every backend accepts.
    outSteps[axis] = count > 1 ? step : 1;
    counts[axis] = count;
  }
  std::string bounds = shapes::checkSliceBounds(in, outStarts, outSteps, counts);
  if (!bounds.empty())
    return nodeError(c, bounds);
  return defineSlice(c, 0, outStarts, outSteps, counts);
}

/// Defines output `out` of `c` as input #0 sliced at `starts` by `steps`,
/// `counts` elements per dim (bounds checked by the caller): an alias when
/// it takes everything, a folded constant for small integer constants
/// (shape arithmetic stays compile-time known), else mp.slice.
LogicalResult Importer::defineSlice(const NodeCtx &c, int out, ArrayRef<int64_t> starts,
                                    ArrayRef<int64_t> steps, ArrayRef<int64_t> counts) {
  Entry *entry;
  if (failed(entryOf(c, 0, entry)))
    return failure();
  Entry &data = *entry;
  RankedTensorType t = entryType(data);
  ArrayRef<int64_t> in = t.getShape();
  int64_t rank = t.getRank();
  bool identity =
      counts == in && llvm::all_of(steps, [](int64_t s) { return s == 1; });
  if (identity) {
    defineEntry(c, out, data);
    return success();
  }
  if (data.constant && isa<IntegerType>(t.getElementType()) &&
      shapes::numElements(counts) <= kMaxFoldElements) {
    SmallVector<int64_t> vals = intValues(data.constant), values;
    SmallVector<int64_t> strides = stridesOf(in);
    int64_t n = shapes::numElements(counts);
    SmallVector<int64_t> idx(rank, 0);
    for (int64_t flat = 0; flat < n; ++flat) {
      int64_t src = 0;
      for (int64_t d = 0; d < rank; ++d)
        src += (starts[d] + idx[d] * steps[d]) * strides[d];
      values.push_back(vals[src]);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++idx[d] < counts[d])
          break;
        idx[d] = 0;
      }
    }
    defineConst(c, out, makeIntAttr(counts, t.getElementType(), values));
    return success();
  }
  Value x = materialize(data);
  defineValue(c, out,
              builder
                  .create<graph::SliceOp>(c.loc, tensorType(counts, t.getElementType()), x,
                                          builder.getDenseI64ArrayAttr(starts),
                                          builder.getDenseI64ArrayAttr(steps))
                  .getOutput());
  return success();
}

/// The ONNX schema forms of Split.
static const OpForm kSplitForms[] = {
    {1, 1, 2, 1, kVariadic, "axis split"},
    {2, 1, 1, 1, kVariadic, "axis split"},
    {13, 1, 2, 1, kVariadic, "axis"},
    {18, 1, 2, 1, kVariadic, "axis num_outputs"},
};

/// The sizes a Split node cuts `dim` into: the `split` input (opset 1 and
/// 13+) or attribute (before 13), else `num_outputs` parts of ceil(dim / n)
/// with the last smaller (18+), else equal parts, one per output (before 18).
LogicalResult Importer::splitSizes(const NodeCtx &c, int64_t dim, SmallVector<int64_t> &sizes) {
  int outputs = c.node.output_size();
  std::optional<int64_t> numOutputs;
  std::optional<SmallVector<int64_t>> attr;
  if (failed(attrIntOpt(c, "num_outputs", numOutputs)))
    return failure();
  if (hasInput(c, 1)) {
    if (numOutputs)
      return nodeError(c, "takes the 'split' input or the 'num_outputs' attribute, not both");
    if (failed(requireConstInts(c, 1, "split", sizes)))
      return failure();
  } else if (failed(attrInts(c, "split", attr))) {
    return failure();
  } else if (attr) {
    sizes = *attr;
  } else if (numOutputs) {
    if (*numOutputs != outputs)
      return nodeError(c, "attribute 'num_outputs' is " + llvm::Twine(*numOutputs) +
                              ", the node has " + llvm::Twine(outputs) + " outputs");
    int64_t chunk = (dim + outputs - 1) / outputs;
    if (dim - chunk * (outputs - 1) < 0)
      return nodeError(c, "cannot cut dim " + llvm::Twine(dim) + " into " + llvm::Twine(outputs) +
                              " parts of " + llvm::Twine(chunk) + ": the last would be negative");
    sizes.assign(outputs, chunk);
    sizes.back() = dim - chunk * (outputs - 1);
  } else {
    if (opset >= 18)
      return nodeError(c, "needs the 'split' input or the 'num_outputs' attribute from opset 18");
    if (dim % outputs != 0)
      return nodeError(c, "cannot split dim " + llvm::Twine(dim) + " into " + llvm::Twine(outputs) +
                              " equal parts");
    sizes.assign(outputs, dim / outputs);
  }
  if (static_cast<int>(sizes.size()) != outputs)
    return nodeError(c, "'split' has " + llvm::Twine(sizes.size()) + " sizes, the node has " +
                            llvm::Twine(outputs) + " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0 || s > dim)
      return nodeError(c, "split size " + llvm::Twine(s) + " is outside [0, " + llvm::Twine(dim) +
                              "]");
    total += s;
  }
  if (total != dim)
    return nodeError(c, "split sizes add up to " + llvm::Twine(total) + ", the axis has " +
                            llvm::Twine(dim));
  return success();
}

/// Split: output i is the slice of the input along `axis` after the first
/// i sizes (GPT-style decoders split a fused QKV projection this way).
LogicalResult Importer::convertSplit(const NodeCtx &c) {
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  int64_t rank = t.getRank();
  if (rank == 0)
    return nodeError(c, "input must have rank >= 1");
  int64_t axis;
  SmallVector<int64_t> sizes;
  if (failed(attrInt(c, "axis", 0, axis)) ||
      failed(normalizeAxis(c, "attribute 'axis'", axis, rank)) ||
      failed(splitSizes(c, t.getDimSize(axis), sizes)))
    return failure();
  SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
  Shape counts(t.getShape().begin(), t.getShape().end());
  for (int i = 0; i < c.node.output_size(); ++i) {
    counts[axis] = sizes[i];
    if (!c.node.output(i).empty() && failed(defineSlice(c, i, starts, steps, counts)))
      return failure();
    starts[axis] += sizes[i];
  }
  return success();
}

/// The ONNX schema forms of Gather.
static const OpForm kGatherForms[] = {
    {1, 2, 2, 1, 1, "axis"},
};

LogicalResult Importer::convertGather(const NodeCtx &c) {
  Entry *pd, *pi;
  if (failed(entryOf(c, 0, pd)) || failed(entryOf(c, 1, pi)))
    return failure();
  Entry &data = *pd, &indices = *pi;
  RankedTensorType dt = entryType(data), it = entryType(indices);
  if (!it.getElementType().isInteger(64) && !it.getElementType().isInteger(32))
    return nodeError(c, "indices (" + quotedName(c.node.input(1)) + ") must be INT64 or INT32, got " +
                    elementTypeName(it.getElementType()));
  int64_t axis;
  if (failed(attrInt(c, "axis", 0, axis)) ||
      failed(normalizeAxis(c, "attribute 'axis'", axis, dt.getRank())))
    return failure();
  FailureOr<Shape> s = expectShape(c, shapes::gatherShape(dt.getShape(), it.getShape(), axis));
  if (failed(s))
    return failure();
  int64_t dim = dt.getDimSize(axis);
  SmallVector<int64_t> idx;
  if (indices.constant) {
    // Constant indices are checked now instead of failing at run time.
    idx = intValues(indices.constant);
    for (int64_t &i : idx) {
      if (i < -dim || i >= dim)
        return nodeError(c, "index " + llvm::Twine(i) + " is out of range for axis " + llvm::Twine(axis) +
                        " of size " + llvm::Twine(dim));
      if (i < 0)
        i += dim;
    }
  }
  if (data.constant && indices.constant && isa<IntegerType>(dt.getElementType()) &&
      shapes::numElements(*s) <= kMaxFoldElements) {
    SmallVector<int64_t> vals = intValues(data.constant), out;
    int64_t outer = product(dt.getShape(), 0, axis);
    int64_t inner = product(dt.getShape(), axis + 1, dt.getRank());
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i : idx) {
        auto begin = vals.begin() + (o * dim + i) * inner;
        out.append(begin, begin + inner);
      }
    defineConst(c, 0, makeIntAttr(*s, dt.getElementType(), out));
    return success();
  }
  Value d = materialize(data), ix = materialize(indices);
  defineValue(c, 0,
              builder
                  .create<graph::GatherOp>(c.loc, tensorType(*s, dt.getElementType()), d, ix,
                                           builder.getI64IntegerAttr(axis))
                  .getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::shapeOps() {
  static const OpInfo table[] = {
      {"Reshape", &Importer::convertReshape, kReshapeForms},
      {"Flatten", &Importer::convertFlatten, kFlattenForms},
      {"Unsqueeze", &Importer::convertUnsqueeze, kUnsqueezeForms},
      {"Squeeze", &Importer::convertSqueeze, kSqueezeForms},
      {"Transpose", &Importer::convertTranspose, kTransposeForms},
      {"Concat", &Importer::convertConcat, kConcatForms},
      {"Slice", &Importer::convertSlice, kSliceForms},
      {"Split", &Importer::convertSplit, kSplitForms},
      {"Gather", &Importer::convertGather, kGatherForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
