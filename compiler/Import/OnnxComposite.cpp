//===- OnnxComposite.cpp - ops built from other mp ops ----------------------===//
//
// Ops the importer writes exactly as a few existing mp ops (GroupNorm as a
// reshape and a layer norm, Pad as gathers and concats, ...): no new
// runtime code, and every backend runs them.
// Shared helpers: OnnxOpHelpers.h and OnnxOpHelpers.cpp; dispatch:
// OnnxOpRegistry.cpp.
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporterImpl.h"
#include "compiler/Import/OnnxOpHelpers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"

#include <limits>

using namespace mlir;

namespace mixprec::compiler::onnx_import {

//===----------------------------------------------------------------------===//
// Building blocks
//===----------------------------------------------------------------------===//

Value Importer::sliceAxis(const NodeCtx &c, Value v, int64_t axis, int64_t start, int64_t count) {
  ArrayRef<int64_t> shape = shapeOf(v);
  if (start == 0 && count == shape[axis])
    return v;
  SmallVector<int64_t> starts(shape.size(), 0), steps(shape.size(), 1);
  Shape counts(shape.begin(), shape.end());
  starts[axis] = start;
  counts[axis] = count;
  return builder
      .create<graph::SliceOp>(c.loc, tensorType(counts, elemOf(v)), v,
                              builder.getDenseI64ArrayAttr(starts),
                              builder.getDenseI64ArrayAttr(steps))
      .getOutput();
}

FailureOr<Value> Importer::gatherAxis(const NodeCtx &c, FailureOr<Value> v, int64_t axis,
                                      ArrayRef<int64_t> indices) {
  if (failed(v))
    return failure();
  Value ix = constant(
      c.loc, makeIntAttr({static_cast<int64_t>(indices.size())}, builder.getI64Type(), indices));
  return createInferred<graph::GatherOp>(c, elemOf(*v), *v, ix, builder.getI64IntegerAttr(axis));
}

FailureOr<Value> Importer::concatAxis(const NodeCtx &c, ArrayRef<Value> parts, int64_t axis) {
  if (parts.size() == 1)
    return parts.front();
  return createInferred<graph::ConcatOp>(c, elemOf(parts.front()), ValueRange(parts),
                                         builder.getI64IntegerAttr(axis));
}

FailureOr<Value> Importer::mulV(const NodeCtx &c, FailureOr<Value> a, FailureOr<Value> b) {
  if (failed(a) || failed(b))
    return failure();
  return createInferred<graph::MulOp>(c, elemOf(*a), *a, *b);
}
FailureOr<Value> Importer::addV(const NodeCtx &c, FailureOr<Value> a, FailureOr<Value> b) {
  if (failed(a) || failed(b))
    return failure();
  return createInferred<graph::AddOp>(c, elemOf(*a), *a, *b);
}
FailureOr<Value> Importer::subV(const NodeCtx &c, FailureOr<Value> a, FailureOr<Value> b) {
  if (failed(a) || failed(b))
    return failure();
  return createInferred<graph::SubOp>(c, elemOf(*a), *a, *b);
}

/// |x| as relu(x) + relu(-x): one of the two terms is an exact zero, so the
/// sum is exact at every precision (there is no mp abs op).
FailureOr<Value> Importer::absV(const NodeCtx &c, FailureOr<Value> operand) {
  if (failed(operand))
    return failure();
  Value x = *operand;
  Value pos = builder.create<graph::ReluOp>(c.loc, x.getType(), x).getOutput();
  Value neg = builder.create<graph::NegOp>(c.loc, x.getType(), x).getOutput();
  Value negPos = builder.create<graph::ReluOp>(c.loc, x.getType(), neg).getOutput();
  return addV(c, pos, negPos);
}

/// Input i, one value per channel or (`groups` < `channels`) per group of
/// channels, as [C, 1, ...] to broadcast over an [N, C, ...] tensor of
/// `rank`. A constant is spread and re-typed at compile time; a run-time
/// value is spread with a gather of constant indices.
FailureOr<Value> Importer::perChannel(const NodeCtx &c, int i, int64_t channels, int64_t groups,
                                      int64_t rank) {
  SmallVector<int64_t> shape(rank - 1, 1);
  shape[0] = channels;
  int64_t per = channels / groups;
  Entry *e;
  if (failed(entryOf(c, i, e)))
    return failure();
  if (DenseElementsAttr k = e->constant) {
    SmallVector<float> v = floatValues(k), spread;
    for (int64_t ch = 0; ch < channels; ++ch)
      spread.push_back(v[ch / per]);
    return constant(Location(e->constantLoc), makeF32Attr(ctx, shape, spread));
  }
  FailureOr<Value> p = materialize(*e);
  if (per != 1) {
    SmallVector<int64_t> idx;
    for (int64_t ch = 0; ch < channels; ++ch)
      idx.push_back(ch / per);
    p = gatherAxis(c, p, 0, idx);
    if (failed(p))
      return failure();
  }
  return reshape(c, *p, shape);
}

//===----------------------------------------------------------------------===//
// Tile, Trilu, Pad, DepthToSpace, SpaceToDepth, CastLike
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Tile (opset 1 took tiles and axis inputs).
static const OpForm kTileForms[] = {
    {1, 3, 3, 1, 1, ""},
    {6, 2, 2, 1, 1, ""},
};

/// Tile: along each axis with r repeats, a concat of r copies (r = 0: an
/// empty slice).
LogicalResult Importer::convertTile(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(x);
  if (opset < 6)
    return nodeError(c, "Tile before opset 6 (the 'tiles' and 'axis' inputs) is not supported");
  SmallVector<int64_t> repeats;
  if (failed(requireConstInts(c, 1, "repeats", repeats)))
    return failure();
  if (repeats.size() != shape.size())
    return nodeError(c, "input 'repeats' has " + llvm::Twine(repeats.size()) +
                    " values, the input has rank " + llvm::Twine(shape.size()));
  for (int64_t r : repeats)
    if (r < 0 || r > 65536)
      return nodeError(c, "input 'repeats' must hold values in [0, 65536], got " +
                              shapes::formatShape(repeats));
  // The result's element count, saturated so that it cannot overflow.
  int64_t count = shapes::numElements(shape);
  for (int64_t r : repeats)
    count = std::min<int64_t>(count * r, int64_t(1) << 40);
  if (count > (int64_t(1) << 31))
    return nodeError(c, "the tiled result would have more than 2^31 elements");
  Value v = x;
  for (size_t d = 0; d < repeats.size(); ++d) {
    if (repeats[d] == 1)
      continue;
    if (repeats[d] == 0) {
      v = sliceAxis(c, v, d, 0, 0);
      continue;
    }
    SmallVector<Value> copies(repeats[d], v);
    FailureOr<Value> tiled = concatAxis(c, copies, d);
    if (failed(tiled))
      return failure();
    v = *tiled;
  }
  defineValue(c, 0, v);
  return success();
}

/// The ONNX schema forms of Trilu.
static const OpForm kTriluForms[] = {
    {14, 1, 2, 1, 1, "upper"},
};

/// Trilu: mp.where with a constant mask of the last two dims, built at
/// import (upper keeps j - i >= k, lower keeps j - i <= k).
LogicalResult Importer::convertTrilu(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloatOrInteger(c, 0, elemOf(x))))
    return failure(); // integers select exactly (int_elementwise)
  ArrayRef<int64_t> shape = shapeOf(x);
  if (shape.size() < 2)
    return nodeError(c, "input must have rank >= 2, got " + shapes::formatShape(shape));
  bool upper;
  if (failed(attrBool(c, "upper", true, upper)))
    return failure();
  int64_t k = 0;
  if (hasInput(c, 1)) {
    SmallVector<int64_t> kv;
    if (failed(requireConstInts(c, 1, "k", kv)))
      return failure();
    if (kv.size() != 1)
      return nodeError(c, "input 'k' must hold one value, got " + llvm::Twine(kv.size()));
    k = kv[0];
  }
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (rows * cols > kMaxFoldElements)
    return nodeError(c, "the mask of the last two dims would have more than 2^20 elements");
  // k far outside the matrix keeps or zeroes everything; clamp it so that
  // j - i - k cannot overflow.
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
  SmallVector<int64_t> mask;
  mask.reserve(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.push_back(upper ? j - i >= k : j - i <= k);
  Value m = constant(c.loc, makeIntAttr({rows, cols}, builder.getI1Type(), mask));
  Value zero = isFloat(elemOf(x)) ? constant(c.loc, makeF32Attr(ctx, {}, {0.0f}))
                                  : constant(c.loc, makeIntAttr({}, elemOf(x), {0}));
  return defineResult(c, 0, createInferred<graph::WhereOp>(c, elemOf(x), m, x, zero));
}

/// The ONNX schema forms of Pad (opset 1 named the pads `paddings`).
static const OpForm kPadForms[] = {
    {1, 1, 1, 1, 1, "mode paddings value"},
    {2, 1, 1, 1, 1, "mode pads value"},
    {11, 2, 3, 1, 1, "mode"},
    {18, 2, 4, 1, 1, "mode"},
};

/// The source index along an axis of size n of padded position p (p < 0
/// before the data, p >= n after it) in Pad's `mode`.
static int64_t padSource(llvm::StringRef mode, int64_t p, int64_t n) {
  if (mode == "edge")
    return std::clamp<int64_t>(p, 0, n - 1);
  if (mode == "wrap")
    return ((p % n) + n) % n;
  // reflect: mirror at the edges without repeating them (period 2n - 2).
  if (n == 1)
    return 0;
  int64_t period = 2 * n - 2;
  int64_t q = ((p % period) + period) % period;
  return q < n ? q : period - q;
}

/// Pad: negative pads crop (a slice); then per padded axis, constant mode
/// concats constant blocks, the other modes gather the axis with constant
/// indices.
LogicalResult Importer::convertPad(const NodeCtx &c) {
  Value x;
  std::string mode;
  if (failed(input(c, 0, x)) || failed(attrString(c, "mode", "constant", mode)))
    return failure();
  Type et = elemOf(x);
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t rank = static_cast<int64_t>(shape.size());
  if (mode != "constant" && mode != "reflect" && mode != "edge" && !(mode == "wrap" && opset >= 19))
    return nodeError(c, "attribute 'mode' must be constant, reflect, edge" +
                    llvm::Twine(opset >= 19 ? " or wrap" : "") + ", got " + quotedName(mode));
  SmallVector<int64_t> pads;
  float fillF = 0.0f;
  int64_t fillI = 0;
  SmallVector<int64_t> axes;
  if (opset < 11) {
    const char *name = opset < 2 ? "paddings" : "pads";
    std::optional<SmallVector<int64_t>> p;
    if (failed(attrInts(c, name, p)))
      return failure();
    if (!p)
      return nodeError(c, "attribute '" + llvm::Twine(name) + "' is required");
    pads = *p;
    if (failed(attrFloat(c, "value", 0.0f, fillF)))
      return failure();
    // An integer tensor pads with the value cast (truncated).
    if (std::isfinite(fillF) && std::abs(fillF) < 9.0e18f)
      fillI = static_cast<int64_t>(fillF);
  } else {
    if (failed(requireConstInts(c, 1, "pads", pads)))
      return failure();
    if (hasInput(c, 2)) {
      DenseElementsAttr v;
      if (failed(requireConst(c, 2, "constant_value", v)))
        return failure();
      if (v.getNumElements() != 1)
        return nodeError(c, "input 'constant_value' must hold one value, got " +
                        llvm::Twine(v.getNumElements()));
      if (v.getElementType() != et)
        return nodeError(c, "input 'constant_value' is " + elementTypeName(v.getElementType()) +
                        ", the data is " + elementTypeName(et));
      if (isFloat(et))
        fillF = floatValues(v)[0];
      else
        fillI = intValues(v)[0];
    }
    // The pads pair with the axes in the order given: no sorting.
    if (hasInput(c, 3) && failed(requireConstInts(c, 3, "axes", axes)))
      return failure();
    if (failed(normalizeAxesInOrder(c, "input 'axes'", axes, rank)))
      return failure();
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  int64_t n = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * n)
    return nodeError(c, "'pads' has " + llvm::Twine(pads.size()) + " values, want " + llvm::Twine(2 * n) +
                    " (begin and end for " + llvm::Twine(n) + " axes)");
  SmallVector<int64_t> before(rank, 0), after(rank, 0);
  for (int64_t i = 0; i < n; ++i) {
    before[axes[i]] = pads[i];
    after[axes[i]] = pads[n + i];
  }
  Value v = x;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = shapeOf(v)[d];
    if (std::abs(before[d]) > (int64_t(1) << 24) || std::abs(after[d]) > (int64_t(1) << 24))
      return nodeError(c, "pads of axis " + llvm::Twine(d) + " are out of range [-2^24, 2^24]");
    // Negative pads remove elements first.
    int64_t cropFront = std::max<int64_t>(0, -before[d]),
            cropBack = std::max<int64_t>(0, -after[d]);
    if (cropFront + cropBack > size)
      return nodeError(c, "pads of axis " + llvm::Twine(d) + " remove " +
                      llvm::Twine(cropFront + cropBack) + " elements of " + llvm::Twine(size));
    v = sliceAxis(c, v, d, cropFront, size - cropFront - cropBack);
    size -= cropFront + cropBack;
    int64_t front = std::max<int64_t>(0, before[d]), back = std::max<int64_t>(0, after[d]);
    if (front == 0 && back == 0)
      continue;
    FailureOr<Value> padded;
    if (mode == "constant") {
      SmallVector<Value> parts;
      auto block = [&](int64_t len) -> LogicalResult {
        Shape s(shapeOf(v).begin(), shapeOf(v).end());
        s[d] = len;
        int64_t count = shapes::numElements(s);
        if (count > kMaxFoldElements * 16)
          return nodeError(c, "the constant padding block " + shapes::formatShape(s) +
                                  " is too large");
        DenseElementsAttr a = isFloat(et) ? makeF32Attr(ctx, s, SmallVector<float>(count, fillF))
                                          : makeIntAttr(s, et, SmallVector<int64_t>(count, fillI));
        parts.push_back(constant(c.loc, a));
        return success();
      };
      if (front && failed(block(front)))
        return failure();
      parts.push_back(v);
      if (back && failed(block(back)))
        return failure();
      padded = concatAxis(c, parts, d);
    } else {
      if (size == 0)
        return nodeError(c, "cannot pad axis " + llvm::Twine(d) + " of size 0 in mode " +
                                quotedName(mode));
      SmallVector<int64_t> idx;
      for (int64_t p = -front; p < size + back; ++p)
        idx.push_back(padSource(mode, p, size));
      padded = gatherAxis(c, v, d, idx);
    }
    if (failed(padded))
      return failure();
    v = *padded;
  }
  defineValue(c, 0, v);
  return success();
}

/// The ONNX schema forms of DepthToSpace and SpaceToDepth.
static const OpForm kDepthToSpaceForms[] = {
    {1, 1, 1, 1, 1, "blocksize"},
    {11, 1, 1, 1, 1, "blocksize mode"},
};
static const OpForm kSpaceToDepthForms[] = {
    {1, 1, 1, 1, 1, "blocksize"},
    {28, 1, 1, 1, 1, "blocksize mode"},
};

/// DepthToSpace and SpaceToDepth: a reshape to 6-D, a transpose and a
/// reshape back to 4-D.
LogicalResult Importer::convertDepthSpace(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)))
    return failure();
  ArrayRef<int64_t> s = shapeOf(x);
  if (s.size() != 4)
    return nodeError(c, "input must be 4-D (N, C, H, W), got " + shapes::formatShape(s));
  std::optional<int64_t> bs;
  if (failed(attrIntOpt(c, "blocksize", bs)))
    return failure();
  if (!bs)
    return nodeError(c, "attribute 'blocksize' is required");
  int64_t b = *bs;
  if (b <= 0 || b > 4096)
    return nodeError(c, "attribute 'blocksize' must be in [1, 4096], got " + llvm::Twine(b));
  int64_t n = s[0], ch = s[1], h = s[2], w = s[3];
  std::string mode;
  if (failed(attrString(c, "mode", "DCR", mode)))
    return failure();
  if (mode != "DCR" && mode != "CRD")
    return nodeError(c, "attribute 'mode' must be DCR or CRD, got " + quotedName(mode));
  if (c.node.op_type() == "SpaceToDepth") {
    if (h % b || w % b)
      return nodeError(c, "H and W (" + llvm::Twine(h) + ", " + llvm::Twine(w) +
                      ") must be multiples of blocksize " + llvm::Twine(b));
    // DCR puts the block offsets before the channel, CRD (opset 28) after.
    Value r = reshape(c, x, {n, ch, h / b, b, w / b, b});
    FailureOr<Value> t =
        mode == "DCR" ? transpose(c, r, {0, 3, 5, 1, 2, 4}) : transpose(c, r, {0, 1, 3, 5, 2, 4});
    if (failed(t))
      return failure();
    defineValue(c, 0, reshape(c, *t, {n, ch * b * b, h / b, w / b}));
    return success();
  }
  if (ch % (b * b))
    return nodeError(c, "C (" + llvm::Twine(ch) + ") must be a multiple of blocksize^2 (" +
                    llvm::Twine(b * b) + ")");
  int64_t oc = ch / (b * b);
  FailureOr<Value> t = mode == "DCR"
                           ? transpose(c, reshape(c, x, {n, b, b, oc, h, w}), {0, 3, 4, 1, 5, 2})
                           : transpose(c, reshape(c, x, {n, oc, b, b, h, w}), {0, 1, 4, 2, 5, 3});
  if (failed(t))
    return failure();
  defineValue(c, 0, reshape(c, *t, {n, oc, h * b, w * b}));
  return success();
}

/// The ONNX schema forms of CastLike.
static const OpForm kCastLikeForms[] = {
    {15, 2, 2, 1, 1, ""},
    {19, 2, 2, 1, 1, "saturate"},
    {24, 2, 2, 1, 1, "round_mode saturate"},
};

/// CastLike: mp.cast to the element type of input #1 (only its type is
/// read). Constant inputs are folded by the generic constant folding.
LogicalResult Importer::convertCastLike(const NodeCtx &c) {
  RankedTensorType like, t;
  std::string roundMode;
  if (failed(inputType(c, 1, like)) || failed(attrString(c, "round_mode", "up", roundMode)))
    return failure();
  Type target = like.getElementType();
  if (roundMode != "up" && roundMode != "down")
    return nodeError(c, "attribute 'round_mode' must be up or down, got " + quotedName(roundMode));
  if (failed(inputType(c, 0, t)))
    return failure();
  if (t.getElementType() == target)
    return aliasOutput(c, 0, 0);
  Value x;
  if (failed(input(c, 0, x)))
    return failure();
  defineValue(
      c, 0, builder.create<graph::CastOp>(c.loc, tensorType(t.getShape(), target), x).getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Normalizations: InstanceNormalization, GroupNormalization
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of InstanceNormalization.
static const OpForm kInstanceNormForms[] = {
    {1, 3, 3, 1, 1, "consumed_inputs epsilon"},
    {6, 3, 3, 1, 1, "epsilon"},
};

/// GroupNormalization: scale and bias per group at opset 18, per channel
/// from 21.
static const OpForm kGroupNormForms[] = {
    {18, 3, 3, 1, 1, "epsilon num_groups"},
    {21, 3, 3, 1, 1, "epsilon num_groups stash_type"},
};

/// A normalization's epsilon attribute, positive (mp.layer_norm needs it).
FailureOr<float> Importer::positiveEpsilon(const NodeCtx &c) {
  float eps;
  if (failed(attrFloat(c, "epsilon", 1e-5f, eps)))
    return failure();
  if (!(eps > 0.0f) || !std::isfinite(eps))
    return nodeError(c,
                     "attribute 'epsilon' must be positive and finite, got " + std::to_string(eps));
  return eps;
}

/// InstanceNormalization and GroupNormalization: x [N, C, ...] reshaped to
/// [N, G, C / G * spatial], mp.layer_norm (no affine) over the last axis,
/// reshaped back, then times scale and plus bias per channel (Instance: G =
/// C). Per-group parameters (GroupNormalization-18) are spread to the
/// channels with a gather of constant indices.
LogicalResult Importer::convertGroupNorm(const NodeCtx &c) {
  Value x;
  if (failed(input(c, 0, x)) || failed(requireFloat(c, 0, elemOf(x))))
    return failure();
  ArrayRef<int64_t> s = shapeOf(x);
  int64_t rank = static_cast<int64_t>(s.size());
  if (rank < 3)
    return nodeError(c,
                     "input must have rank >= 3 (N, C, spatial...), got " + shapes::formatShape(s));
  FailureOr<float> eps = positiveEpsilon(c);
  if (failed(eps))
    return failure();
  int64_t channels = s[1];
  bool instance = c.node.op_type() == "InstanceNormalization";
  int64_t groups = channels;
  if (!instance) {
    std::optional<int64_t> g;
    if (failed(attrIntOpt(c, "num_groups", g)))
      return failure();
    if (!g)
      return nodeError(c, "attribute 'num_groups' is required");
    if (*g <= 0 || channels % *g)
      return nodeError(c, "attribute 'num_groups' (" + llvm::Twine(*g) +
                      ") must be positive and divide the channels (" + llvm::Twine(channels) + ")");
    groups = *g;
    int64_t stash;
    if (failed(attrInt(c, "stash_type", 1, stash)))
      return failure();
    if (stash != 1)
      return nodeError(c, "attribute 'stash_type' must be 1 (FLOAT), got " + llvm::Twine(stash));
  }
  bool perGroup = !instance && opset < 21;
  int64_t paramSize = perGroup ? groups : channels;
  SmallVector<Value, 2> params;
  static const char *roles[] = {"scale", "B"};
  for (int i = 1; i <= 2; ++i) {
    RankedTensorType t;
    if (failed(inputType(c, i, t)) || failed(requireFloat(c, i, t.getElementType())))
      return failure();
    if (t.getRank() != 1 || t.getDimSize(0) != paramSize)
      return nodeError(c, llvm::Twine(roles[i - 1]) + " shape " +
                              shapes::formatShape(t.getShape()) + " must be [" +
                              llvm::Twine(paramSize) + "] (one value per " +
                              (perGroup ? "group" : "channel") + ")");
    FailureOr<Value> param = perChannel(c, i, channels, perGroup ? groups : channels, rank);
    if (failed(param))
      return failure();
    params.push_back(*param);
  }
  int64_t inner = product(s, 1, rank) / groups;
  Value grouped = reshape(c, x, {s[0], groups, inner});
  Value norm = builder
                   .create<graph::LayerNormOp>(c.loc, grouped.getType(), grouped, Value(), Value(),
                                               builder.getI64IntegerAttr(2),
                                               builder.getF32FloatAttr(*eps), TypeAttr())
                   .getOutput();
  Value y = reshape(c, norm, s);
  return defineResult(c, 0, addV(c, mulV(c, y, params[0]), params[1]));
}

/// Mean and InvStdDev keep the normalized dims as 1 (ONNX's shapes) and are
/// built from mp.reduce_mean (fp32 class: it accumulates) and mp.rsqrt:
/// mean, then the mean of (x - mean)^2 (the two-pass form, which does not
/// cancel as E[x^2] - mean^2 does), then 1 / sqrt(var + epsilon).
LogicalResult Importer::defineLayerNormStats(const NodeCtx &c, Value x, int64_t axis, float eps) {
  auto used = [&](int i) {
    return i < c.node.output_size() && !c.node.output(i).empty() &&
           usedNames.count(c.node.output(i));
  };
  if (!used(1) && !used(2))
    return success();
  SmallVector<int64_t> axes;
  for (int64_t d = axis; d < static_cast<int64_t>(shapeOf(x).size()); ++d)
    axes.push_back(d);
  DenseI64ArrayAttr axesAttr = builder.getDenseI64ArrayAttr(axes);
  BoolAttr kd = builder.getBoolAttr(true);
  Type et = elemOf(x);
  FailureOr<Value> mean = createInferred<graph::ReduceMeanOp>(c, et, x, axesAttr, kd, TypeAttr());
  if (failed(defineResult(c, 1, mean)))
    return failure();
  if (!used(2))
    return success();
  FailureOr<Value> d = subV(c, x, mean);
  FailureOr<Value> square = mulV(c, d, d);
  if (failed(square))
    return failure();
  FailureOr<Value> var =
      createInferred<graph::ReduceMeanOp>(c, et, *square, axesAttr, kd, TypeAttr());
  FailureOr<Value> sum = addV(c, var, scalarF32(c, eps));
  if (failed(sum))
    return failure();
  defineValue(c, 2, builder.create<graph::RsqrtOp>(c.loc, sum->getType(), *sum).getOutput());
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions: ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
// ReduceLogSumExp, ReduceMin
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of the composite reductions: axes move from an
/// attribute to input #1 at opset 18.
static const OpForm kCompositeReduceForms[] = {
    {1, 1, 1, 1, 1, "axes keepdims"},
    {18, 1, 2, 1, 1, "keepdims noop_with_empty_axes"},
};

/// The composite reductions. Each sums or takes a maximum through
/// mp.reduce_sum / mp.reduce_max: reduce_sum is fp32 class because it
/// accumulates (a 16-bit running sum of squares loses the small terms), and
/// exp/log/sqrt around it are fp32 class for their range. With
/// noop_with_empty_axes and no axes, only the element-wise part runs (as in
/// the ONNX reference: ReduceSumSquare gives x^2).
LogicalResult Importer::convertCompositeReduce(const NodeCtx &c) {
  llvm::StringRef op = c.node.op_type();
  RankedTensorType t;
  if (failed(inputType(c, 0, t)))
    return failure();
  const bool boolMin = op == "ReduceMin" && t.getElementType().isInteger(1);
  if (!boolMin)
    if (failed(requireFloat(c, 0, t.getElementType())))
      return failure();
  bool keepDims;
  std::optional<SmallVector<int64_t>> axes;
  Value x;
  if (failed(attrBool(c, "keepdims", true, keepDims)) || failed(reduceAxes(c, 18, axes)) ||
      failed(input(c, 0, x)))
    return failure();
  if (boolMin) {
    // all(x) = not(any(not x)): true over no values, as ONNX's reference.
    if (!axes) {
      defineValue(c, 0, x);
      return success();
    }
    auto notOf = [&](Value v) { return builder.create<graph::NotOp>(c.loc, v.getType(), v); };
    FailureOr<Value> any = reduceAnyBool(c, notOf(x), *axes, keepDims);
    if (failed(any))
      return failure();
    defineValue(c, 0, notOf(*any));
    return success();
  }
  Type et = t.getElementType();
  BoolAttr kd = builder.getBoolAttr(keepDims);
  // Each step fails (without another error) when its operand did.
  auto sum = [&](FailureOr<Value> v) -> FailureOr<Value> {
    if (!axes || failed(v))
      return v;
    return createInferred<graph::ReduceSumOp>(c, et, *v, builder.getDenseI64ArrayAttr(*axes), kd,
                                              TypeAttr());
  };
  auto max = [&](FailureOr<Value> v, bool keep) -> FailureOr<Value> {
    if (!axes || failed(v))
      return v;
    return createInferred<graph::ReduceMaxOp>(c, et, *v, builder.getDenseI64ArrayAttr(*axes),
                                              builder.getBoolAttr(keep), TypeAttr());
  };
  auto unary = [&](auto tag, FailureOr<Value> v) -> FailureOr<Value> {
    using OpT = decltype(tag);
    if (failed(v))
      return v;
    return builder.create<OpT>(c.loc, v->getType(), *v).getOutput();
  };
  FailureOr<Value> r;
  if (op == "ReduceL1") {
    r = sum(absV(c, x));
  } else if (op == "ReduceL2") {
    r = axes ? unary(graph::SqrtOp(), sum(mulV(c, x, x))) : absV(c, x);
  } else if (op == "ReduceSumSquare") {
    r = sum(mulV(c, x, x));
  } else if (op == "ReduceLogSum") {
    r = unary(graph::LogOp(), sum(x));
  } else if (op == "ReduceLogSumExp") {
    if (!axes) {
      r = x;
    } else {
      // Stable: max + log(sum(exp(x - max))), so that exp cannot overflow.
      // A row whose maximum is infinite gives NaN (there is no mp op to test
      // for infinity).
      FailureOr<Value> m = max(x, true);
      FailureOr<Value> e = unary(graph::ExpOp(), subV(c, x, m));
      FailureOr<Value> l = unary(graph::LogOp(), sum(e));
      if (failed(l))
        return failure();
      if (!keepDims)
        m = reshape(c, *m, shapeOf(*l));
      r = addV(c, l, m);
    }
  } else { // ReduceMin: -max(-x)
    FailureOr<Value> neg = unary(graph::NegOp(), x);
    r = unary(graph::NegOp(), max(neg, keepDims));
  }
  return defineResult(c, 0, r);
}

//===----------------------------------------------------------------------===//
// 1-D Conv, MaxPool and AveragePool
//===----------------------------------------------------------------------===//

/// The window attributes of a 1-D node, one value each (pads: begin, end).
static std::optional<std::string> check1dWindowAttr(const onnx::AttributeProto &a) {
  llvm::StringRef name = a.name();
  size_t want = name == "pads" ? 2 : 1;
  if (name != "pads" && name != "kernel_shape" && name != "strides" && name != "dilations")
    return std::nullopt;
  if (static_cast<size_t>(a.ints_size()) == want)
    return std::nullopt;
  return "attribute '" + name.str() + "' must have " + std::to_string(want) + " values" +
         (want == 2 ? " [begin, end]" : "") + ", got " + std::to_string(a.ints_size());
}

/// A 1-D window node (a 3-D [N, C, W] input) runs through its 2-D
/// converter on a copy of the node: the input reshaped to [N, C, 1, W]
/// (Conv's weight to [M, C / group, 1, K]), the window attributes with a
/// leading 1 (pads with a 0 before each side), and the result reshaped
/// back to 3-D. auto_pad then pads nothing along the added dim of size 1.
LogicalResult Importer::convertWindow1d(const NodeCtx &c, Converter convert2d) {
  RankedTensorType xt, wt;
  if (failed(inputType(c, 0, xt)) || failed(requireFloat(c, 0, xt.getElementType())))
    return failure();
  bool isConv = c.node.op_type() == "Conv";
  if (isConv) {
    if (failed(inputType(c, 1, wt)) || failed(requireFloat(c, 1, wt.getElementType())))
      return failure();
    if (wt.getRank() != 3)
      return nodeError(c, "weight must be 3-D (M, C/group, K) for a 1-D convolution, got " +
                              shapes::formatShape(wt.getShape()));
  }
  onnx::NodeProto node = c.node;
  for (onnx::AttributeProto &a : *node.mutable_attribute()) {
    if (auto err = check1dWindowAttr(a))
      return nodeError(c, *err);
    llvm::StringRef name = a.name();
    if (name != "pads" && name != "kernel_shape" && name != "strides" && name != "dilations")
      continue;
    SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    SmallVector<int64_t> v2 =
        name == "pads" ? SmallVector<int64_t>{0, v[0], 0, v[1]} : SmallVector<int64_t>{1, v[0]};
    a.clear_ints();
    for (int64_t i : v2)
      a.add_ints(i);
  }
  // Synthetic value names (a control character keeps them apart from the
  // file's names); removed from the value table afterwards.
  std::string prefix = "\x01" + c.name + "\x01";
  auto define = [&](int i, ArrayRef<int64_t> shape) -> LogicalResult {
    FailureOr<Value> v = reshapeInput(c, i, shape);
    if (failed(v))
      return failure();
    std::string name = prefix + std::to_string(i);
    Entry e;
    e.value = *v;
    values[name] = e;
    node.set_input(i, name);
    return success();
  };
  ArrayRef<int64_t> xs = xt.getShape();
  if (failed(define(0, {xs[0], xs[1], 1, xs[2]})))
    return failure();
  if (isConv) {
    ArrayRef<int64_t> ws = wt.getShape();
    if (failed(define(1, {ws[0], ws[1], 1, ws[2]})))
      return failure();
  }
  std::string out = prefix + "out";
  node.set_output(0, out);
  NodeCtx c2{node, c.name, c.loc};
  if (failed((this->*convert2d)(c2)))
    return failure();
  Value y = values[out].value;
  for (int i = 0; i < 2; ++i)
    values.erase(prefix + std::to_string(i));
  values.erase(out);
  ArrayRef<int64_t> ys = shapeOf(y);
  defineValue(c, 0, reshape(c, y, {ys[0], ys[1], ys[3]}));
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Einsum.
static const OpForm kEinsumForms[] = {
    {12, 1, kVariadic, 1, 1, "equation"},
};

namespace {
/// An Einsum label: a letter, or the k-th dim of the ellipsis counted from
/// its right end (256 + k), so that ellipsis dims of different ranks align
/// as NumPy broadcasting does.
using Label = int;
constexpr Label kEllipsisLabel = 256;

/// One operand's term of an Einsum equation, parsed against its rank.
std::optional<std::string> parseTerm(llvm::StringRef term, int64_t rank,
                                     SmallVectorImpl<Label> &labels, int64_t &ellipsisRank) {
  size_t dots = term.find("...");
  int64_t letters = 0;
  for (char ch : term)
    if (ch != '.') {
      if (!llvm::isAlpha(ch))
        return "equation term '" + term.str() + "' holds '" + std::string(1, ch) +
               "', not a letter";
      ++letters;
    }
  if (dots == llvm::StringRef::npos) {
    if (llvm::is_contained(term, '.'))
      return "equation term '" + term.str() + "' has a '.' outside an ellipsis";
    if (letters != rank)
      return "equation term '" + term.str() + "' has " + std::to_string(letters) +
             " labels for an input of rank " + std::to_string(rank);
    for (char ch : term)
      labels.push_back(static_cast<unsigned char>(ch));
    ellipsisRank = 0;
    return std::nullopt;
  }
  llvm::StringRef before = term.substr(0, dots), after = term.substr(dots + 3);
  if (before.contains('.') || after.contains('.'))
    return "equation term '" + term.str() + "' has more than one ellipsis";
  ellipsisRank = rank - letters;
  if (ellipsisRank < 0)
    return "equation term '" + term.str() + "' has " + std::to_string(letters) +
           " labels for an input of rank " + std::to_string(rank);
  for (char ch : before)
    labels.push_back(static_cast<unsigned char>(ch));
  for (int64_t k = ellipsisRank - 1; k >= 0; --k)
    labels.push_back(kEllipsisLabel + k);
  for (char ch : after)
    labels.push_back(static_cast<unsigned char>(ch));
  return std::nullopt;
}

/// The output labels of Einsum `eq`: as written after "->", or (implicit)
/// the ellipsis then the letters used once, in alphabetical order; each
/// once, and each in an input.
FailureOr<SmallVector<Label>>
einsumOutputLabels(const Importer &imp, const NodeCtx &c, const std::string &eq,
                   llvm::StringRef out, bool explicitOut, ArrayRef<SmallVector<Label>> labels,
                   int64_t ellipsisRank, const llvm::DenseMap<Label, int64_t> &sizes) {
  // The output's labels: as written, or (implicit) the ellipsis then the
  // letters used once, in alphabetical order.
  SmallVector<Label> outLabels;
  if (explicitOut) {
    int64_t outLetters = 0;
    for (char ch : out)
      outLetters += ch != '.';
    if (auto err = parseTerm(out, outLetters + (out.contains("...") ? ellipsisRank : 0), outLabels,
                             ellipsisRank))
      return imp.nodeError(c, "attribute 'equation': " + *err);
  } else {
    for (int64_t k = ellipsisRank - 1; k >= 0; --k)
      outLabels.push_back(kEllipsisLabel + k);
    for (Label l = 'A'; l <= 'z'; ++l) {
      int uses = 0;
      for (auto &ls : labels)
        uses += llvm::count(ls, l);
      if (uses == 1)
        outLabels.push_back(l);
    }
  }
  for (Label l : outLabels) {
    if (llvm::count(outLabels, l) > 1)
      return imp.nodeError(c, "equation " + quotedName(eq) + " repeats label '" +
                                  llvm::Twine(static_cast<char>(l)) + "' in the output");
    if (!sizes.count(l))
      return imp.nodeError(c, "equation " + quotedName(eq) + ": output label '" +
                                  llvm::Twine(static_cast<char>(l)) + "' is in no input");
  }
  return outLabels;
}
} // namespace

/// Einsum of one or two operands without repeated labels in a term (no
/// diagonals): labels only one operand has and the output lacks are summed
/// first (mp.reduce_sum); two operands then become one batched mp.matmul
/// of [batch, free, contracted] x [batch, contracted, free] (transposes and
/// reshapes around it), and a transpose gives the output's label order.
LogicalResult Importer::convertEinsum(const NodeCtx &c) {
  std::string eq;
  if (failed(attrString(c, "equation", "", eq)))
    return failure();
  eq.erase(llvm::remove_if(eq, [](char ch) { return ch == ' '; }), eq.end());
  if (eq.empty())
    return nodeError(c, "attribute 'equation' is required");
  int n = c.node.input_size();
  if (n > 2)
    return nodeError(c, "Einsum of " + llvm::Twine(n) + " operands is not supported (one or two)");
  llvm::StringRef lhs = eq, out;
  bool explicitOut = false;
  if (size_t arrow = llvm::StringRef(eq).find("->"); arrow != llvm::StringRef::npos) {
    lhs = llvm::StringRef(eq).substr(0, arrow);
    out = llvm::StringRef(eq).substr(arrow + 2);
    explicitOut = true;
  }
  SmallVector<llvm::StringRef, 2> terms;
  lhs.split(terms, ',');
  if (static_cast<int>(terms.size()) != n)
    return nodeError(c, "equation " + quotedName(eq) + " has " + llvm::Twine(terms.size()) +
                    " input terms, the node has " + llvm::Twine(n) + " inputs");
  SmallVector<Value, 2> vals;
  SmallVector<SmallVector<Label>, 2> labels(n);
  int64_t ellipsisRank = 0;
  llvm::DenseMap<Label, int64_t> sizes;
  for (int i = 0; i < n; ++i) {
    Value v;
    if (failed(input(c, i, v)) || failed(requireFloat(c, i, elemOf(v))))
      return failure();
    vals.push_back(v);
    int64_t er = 0;
    if (auto err = parseTerm(terms[i], shapeOf(v).size(), labels[i], er))
      return nodeError(c, "attribute 'equation': " + *err);
    ellipsisRank = std::max(ellipsisRank, er);
    for (size_t d = 0; d < labels[i].size(); ++d) {
      Label l = labels[i][d];
      if (llvm::count(labels[i], l) > 1)
        return nodeError(c, "equation " + quotedName(eq) + " repeats label '" +
                        llvm::Twine(static_cast<char>(l)) +
                        "' in one term: diagonals are not "
                        "supported");
      int64_t size = shapeOf(v)[d];
      auto [it, fresh] = sizes.try_emplace(l, size);
      // Ellipsis dims broadcast (1 against n); letters must agree.
      if (!fresh && it->second != size) {
        if (l >= kEllipsisLabel && (it->second == 1 || size == 1))
          it->second = std::max(it->second, size);
        else
          return nodeError(c, "equation " + quotedName(eq) + ": label '" +
                          (l >= kEllipsisLabel ? llvm::Twine("...") : llvm::Twine(char(l))) +
                          "' has sizes " + llvm::Twine(it->second) + " and " + llvm::Twine(size));
      }
    }
  }
  FailureOr<SmallVector<Label>> outputLabels =
      einsumOutputLabels(*this, c, eq, out, explicitOut, labels, ellipsisRank, sizes);
  if (failed(outputLabels))
    return failure();
  const SmallVector<Label> &outLabels = *outputLabels;
  auto inOut = [&](Label l) { return llvm::is_contained(outLabels, l); };
  auto inOther = [&](int i, Label l) { return n == 2 && llvm::is_contained(labels[1 - i], l); };
  // Sum the labels only one operand has and the output lacks.
  for (int i = 0; i < n; ++i) {
    SmallVector<int64_t> axes;
    SmallVector<Label> kept;
    for (size_t d = 0; d < labels[i].size(); ++d) {
      Label l = labels[i][d];
      if (!inOut(l) && !inOther(i, l))
        axes.push_back(d);
      else
        kept.push_back(l);
    }
    if (!axes.empty()) {
      FailureOr<Value> summed = createInferred<graph::ReduceSumOp>(
          c, elemOf(vals[i]), vals[i], builder.getDenseI64ArrayAttr(axes),
          builder.getBoolAttr(false), TypeAttr());
      if (failed(summed))
        return failure();
      vals[i] = *summed;
      labels[i] = kept;
    }
  }
  // Puts v (labelled `have`) in the order `want`.
  auto permute = [&](Value v, ArrayRef<Label> have, ArrayRef<Label> want) -> FailureOr<Value> {
    SmallVector<int64_t> perm;
    for (Label l : want)
      perm.push_back(llvm::find(have, l) - have.begin());
    if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return v;
    return transpose(c, v, perm);
  };
  if (n == 1)
    return defineResult(c, 0, permute(vals[0], labels[0], outLabels));
  SmallVector<Label> batch, freeA, freeB, contracted;
  for (Label l : outLabels) {
    bool a = llvm::is_contained(labels[0], l), b = llvm::is_contained(labels[1], l);
    (a && b ? batch : a ? freeA : freeB).push_back(l);
  }
  for (Label l : labels[0])
    if (!inOut(l))
      contracted.push_back(l);
  auto sizeOf = [&](ArrayRef<Label> ls, int i) {
    SmallVector<int64_t> out;
    for (Label l : ls)
      out.push_back(shapeOf(vals[i])[llvm::find(labels[i], l) - labels[i].begin()]);
    return out;
  };
  auto prod = [](ArrayRef<int64_t> v) { return product(v, 0, v.size()); };
  SmallVector<Label> orderA(batch), orderB(batch);
  orderA.append(freeA.begin(), freeA.end());
  orderA.append(contracted.begin(), contracted.end());
  orderB.append(contracted.begin(), contracted.end());
  orderB.append(freeB.begin(), freeB.end());
  SmallVector<int64_t> batchA = sizeOf(batch, 0), batchB = sizeOf(batch, 1);
  int64_t m = prod(sizeOf(freeA, 0)), k = prod(sizeOf(contracted, 0)), nn = prod(sizeOf(freeB, 1));
  SmallVector<int64_t> shapeA(batchA), shapeB(batchB);
  shapeA.append({m, k});
  shapeB.append({k, nn});
  FailureOr<Value> pa = permute(vals[0], labels[0], orderA);
  if (failed(pa))
    return failure();
  FailureOr<Value> pb = permute(vals[1], labels[1], orderB);
  if (failed(pb))
    return failure();
  Value a = reshape(c, *pa, shapeA), b = reshape(c, *pb, shapeB);
  FailureOr<Value> matmul = createInferred<graph::MatmulOp>(c, elemOf(a), a, b, TypeAttr());
  if (failed(matmul))
    return failure();
  Value prodV = *matmul;
  SmallVector<int64_t> resultShape(shapeOf(prodV).drop_back(2));
  SmallVector<Label> resultLabels(batch);
  for (auto [ls, i] : {std::pair{&freeA, 0}, std::pair{&freeB, 1}}) {
    SmallVector<int64_t> sz = sizeOf(*ls, i);
    resultShape.append(sz.begin(), sz.end());
    resultLabels.append(ls->begin(), ls->end());
  }
  return defineResult(c, 0, permute(reshape(c, prodV, resultShape), resultLabels, outLabels));
}

//===----------------------------------------------------------------------===//
// Resize and Upsample
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Resize and Upsample.
// clang-format off: check_schema_forms.py reads each form's attributes as one string.
static const OpForm kResizeForms[] = {
    {10, 2, 2, 1, 1, "mode"},
    {11, 3, 4, 1, 1, "coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value mode nearest_mode"},
    {13, 1, 4, 1, 1, "coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value mode nearest_mode"},
    {18, 1, 4, 1, 1, "antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value keep_aspect_ratio_policy mode nearest_mode"},
};
// clang-format on
/// Upsample-1 (experimental: height_scale, width_scale) is refused.
static const OpForm kUpsampleForms[] = {
    {1, 1, 1, 1, 1, "height_scale mode width_scale"},
    {7, 1, 1, 1, 1, "mode scales"},
    {9, 2, 2, 1, 1, "mode"},
};

namespace {
/// How one axis is resized: sizes and the scale the coordinates use (the
/// given scale, or out / in when sizes were given).
struct AxisResize {
  int64_t in, out;
  float scale;
  /// The scale as onnx's reference holds it (double: the given FLOAT, or
  /// out / in), and the axis' region of interest (tf_crop_and_resize).
  double refScale;
  float roiStart = 0.0f, roiEnd = 1.0f;
};

/// The input coordinate of output index i (coordinate_transformation_mode),
/// in float as onnxruntime computes it.
float resizeCoordinate(llvm::StringRef mode, int64_t i, const AxisResize &a) {
  float fi = static_cast<float>(i), s = a.scale;
  if (mode == "half_pixel")
    return (fi + 0.5f) / s - 0.5f;
  if (mode == "half_pixel_symmetric") {
    float adjustment = static_cast<float>(a.out) / (s * static_cast<float>(a.in));
    float offset = static_cast<float>(a.in) / 2.0f * (1.0f - adjustment);
    return offset + (fi + 0.5f) / s - 0.5f;
  }
  if (mode == "pytorch_half_pixel")
    return a.out > 1 ? (fi + 0.5f) / s - 0.5f : 0.0f;
  if (mode == "align_corners") {
    // The resized length is scale * in, unrounded, as ONNX's reference
    // computes it (it is `out` when sizes are given).
    float resized = s * static_cast<float>(a.in);
    return resized == 1.0f ? 0.0f : fi * static_cast<float>(a.in - 1) / (resized - 1.0f);
  }
  return fi / s; // asymmetric
}

/// The input index nearest mode picks for coordinate x ("simple": Upsample's
/// and Resize-10's rule, truncating up- and rounding up downsampled).
int64_t nearestIndex(llvm::StringRef mode, float x, const AxisResize &a) {
  int64_t i;
  if (mode == "simple")
    i = a.scale < 1.0f ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  else if (mode == "floor")
    i = static_cast<int64_t>(std::floor(x));
  else if (mode == "ceil")
    i = static_cast<int64_t>(std::ceil(x));
  else if (mode == "round_prefer_ceil")
    i = static_cast<int64_t>(std::round(x));
  else // round_prefer_floor
    i = x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f
            ? static_cast<int64_t>(std::floor(x))
            : static_cast<int64_t>(std::round(x));
  return std::clamp<int64_t>(i, 0, a.in - 1);
}

/// The [in, out] matrix of linear or cubic interpolation weights along one
/// axis: column o holds the weights output o gives the input elements.
SmallVector<float> interpolationMatrix(llvm::StringRef mode, llvm::StringRef transform,
                                       const AxisResize &a, float cubicA, bool excludeOutside) {
  SmallVector<float> m(a.in * a.out, 0.0f);
  for (int64_t o = 0; o < a.out; ++o) {
    float x = resizeCoordinate(transform, o, a);
    if (mode == "linear") {
      x = std::clamp(x, 0.0f, static_cast<float>(a.in - 1));
      int64_t x0 = static_cast<int64_t>(x), x1 = std::min(x0 + 1, a.in - 1);
      float w1 = x - static_cast<float>(x0);
      m[x0 * a.out + o] += 1.0f - w1;
      m[x1 * a.out + o] += w1;
      continue;
    }
    // cubic: Keys' kernel with coefficient cubicA over 4 neighbours,
    // clamped to the edges, or dropped and renormalized (exclude_outside).
    int64_t x0 = static_cast<int64_t>(std::floor(x));
    float t = x - static_cast<float>(x0), A = cubicA;
    float w[4] = {((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A,
                  ((A + 2) * t - (A + 3)) * t * t + 1,
                  ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1,
                  ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A};
    float total = 0.0f;
    for (int k = 0; k < 4; ++k) {
      int64_t idx = x0 - 1 + k;
      if (excludeOutside && (idx < 0 || idx >= a.in))
        w[k] = 0.0f;
      total += w[k];
    }
    for (int k = 0; k < 4; ++k) {
      int64_t idx = std::clamp<int64_t>(x0 - 1 + k, 0, a.in - 1);
      m[idx * a.out + o] += excludeOutside ? w[k] / total : w[k];
    }
  }
  return m;
}

/// The input coordinate of output index y as onnx's reference computes it
/// (op_resize.py's _compute_x_ori: double, the resized length scale * in
/// unrounded; the roi's difference and start term in FLOAT as numpy's
/// float32 scalars compute them).
double referenceCoordinate(llvm::StringRef mode, int64_t y, const AxisResize &a) {
  double s = a.refScale, in = static_cast<double>(a.in), width = s * in;
  double fy = static_cast<double>(y);
  if (mode == "tf_crop_and_resize") {
    double span = static_cast<double>(a.roiEnd - a.roiStart);
    double x = width == 1.0 ? span * (in - 1.0) / 2.0 : fy * span * (in - 1.0) / (width - 1.0);
    return x + static_cast<double>(a.roiStart * static_cast<float>(a.in - 1));
  }
  if (mode == "align_corners")
    return width == 1.0 ? 0.0 : fy * (in - 1.0) / (width - 1.0);
  if (mode == "asymmetric")
    return fy / s;
  if (mode == "pytorch_half_pixel")
    return width == 1.0 ? -0.5 : (fy + 0.5) / s - 0.5;
  if (mode == "half_pixel_symmetric") {
    double offset = in / 2.0 * (1.0 - static_cast<double>(a.out) / width);
    return offset + (fy + 0.5) / s - 0.5;
  }
  return (fy + 0.5) / s - 0.5; // half_pixel
}

/// Keys' cubic kernel with coefficient A at distance x.
double cubicKernel(double x, double A) {
  x = std::abs(x);
  if (x <= 1.0)
    return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
  if (x < 2.0)
    return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
  return 0.0;
}

/// The filter coefficients of onnx's reference for `ratio` in (0, 1]: linear
/// or cubic, and with antialias the filter stretched by 1 / scale when
/// downscaling (and normalized), as _linear_coeffs_antialias and
/// _cubic_coeffs_antialias compute them.
SmallVector<double> referenceCoeffs(llvm::StringRef mode, double ratio, double scale,
                                    bool antialias, double A) {
  SmallVector<double> k;
  if (!antialias) {
    if (mode == "linear")
      return {1.0 - ratio, ratio};
    for (double d : {ratio + 1.0, ratio, 1.0 - ratio, 2.0 - ratio})
      k.push_back(cubicKernel(d, A));
    return k;
  }
  scale = std::min(scale, 1.0);
  double support = mode == "linear" ? 1.0 : 2.0;
  int64_t start = static_cast<int64_t>(std::floor(-support / scale)) + 1;
  int64_t end = 2 - start; // exclusive
  double total = 0.0;
  for (int64_t i = start; i < end; ++i) {
    double x = scale * (static_cast<double>(i) - ratio);
    k.push_back(mode == "linear" ? std::clamp(1.0 - std::abs(x), 0.0, 1.0) : cubicKernel(x, A));
    total += k.back();
  }
  for (double &v : k)
    v /= total;
  return k;
}

/// The [in + 1, out] weights of onnx's reference resize along one axis
/// (_interpolate_1d_along_axis): the coefficients of each output's window
/// of input elements (edge-clamped, or dropped and renormalized with
/// exclude_outside); an output that tf_crop_and_resize extrapolates reads
/// row `in` (the extrapolation value) with weight 1.
SmallVector<float> referenceMatrix(llvm::StringRef mode, llvm::StringRef transform,
                                   const AxisResize &a, double cubicA, bool excludeOutside,
                                   bool antialias) {
  SmallVector<float> m((a.in + 1) * a.out, 0.0f);
  double last = static_cast<double>(a.in - 1);
  for (int64_t o = 0; o < a.out; ++o) {
    double x = referenceCoordinate(transform, o, a);
    if (transform == "tf_crop_and_resize" && (x < 0.0 || x > last)) {
      m[a.in * a.out + o] = 1.0f;
      continue;
    }
    double floorX = std::floor(x);
    double ratio = x == floorX ? 1.0 : x - floorX; // prefer the element left of x
    SmallVector<double> k = referenceCoeffs(mode, ratio, a.refScale, antialias, cubicA);
    // The n elements nearest x, ties to the smaller index, as the reference
    // finds them in the edge-padded input.
    int64_t n = static_cast<int64_t>(k.size()), pad = (n + 1) / 2;
    double padded = x + static_cast<double>(pad);
    double p = std::floor(padded), frac = padded - p;
    int64_t offset = n % 2 == 0 ? (frac == 0.0 ? -(n / 2) : -(n / 2) + 1)
                                : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1);
    int64_t first = static_cast<int64_t>(p) + offset - pad;
    if (excludeOutside) {
      double total = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        if (first + j < 0 || first + j >= a.in)
          k[j] = 0.0;
        total += k[j];
      }
      for (double &v : k)
        v /= total == 0.0 ? 1.0 : total;
    }
    // Accumulate in double, then round once.
    SmallVector<double> column(a.in, 0.0);
    for (int64_t j = 0; j < n; ++j)
      column[std::clamp<int64_t>(first + j, 0, a.in - 1)] += k[j];
    for (int64_t i = 0; i < a.in; ++i)
      m[i * a.out + o] = static_cast<float>(column[i]);
  }
  return m;
}
} // namespace

FailureOr<SmallVector<float>> Importer::resizeRoi(const NodeCtx &c, ArrayRef<int64_t> axes,
                                                  int64_t rank) {
  if (!hasInput(c, 1))
    return nodeError(c, "input 'roi' is required with coordinate_transformation_mode "
                        "'tf_crop_and_resize'");
  DenseElementsAttr k;
  if (failed(requireConst(c, 1, "roi", k)))
    return failure();
  if (!isFloat(k.getElementType()))
    return nodeError(c, "input 'roi' must be FLOAT, got " + elementTypeName(k.getElementType()));
  SmallVector<float> given = floatValues(k);
  size_t n = axes.size();
  if (given.size() != 2 * n)
    return nodeError(c, "input 'roi' has " + llvm::Twine(given.size()) + " values, want " +
                            llvm::Twine(2 * n) + " (a start and an end per resized axis)");
  SmallVector<float> roi(rank, 0.0f);
  roi.append(rank, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(given[i]) || !std::isfinite(given[n + i]))
      return nodeError(c, "input 'roi' must hold finite values");
    roi[axes[i]] = given[i];
    roi[rank + axes[i]] = given[n + i];
  }
  return roi;
}

Value Importer::extrapolationSlice(const NodeCtx &c, Value v, int64_t axis, float value) {
  SmallVector<int64_t> shape(shapeOf(v));
  shape[axis] = 1;
  Type elem = elemOf(v);
  int64_t n = shapes::numElements(shape);
  if (isFloat(elem))
    return constant(c.loc, makeF32Attr(ctx, shape, SmallVector<float>(n, value)));
  // Integers: onnx's reference saturates to the type's range, then truncates.
  int64_t iv;
  if (elem.isInteger(1))
    iv = value != 0.0f;
  else if (std::isnan(value))
    iv = 0;
  else {
    bool i32 = elem.isInteger(32);
    int64_t lo = i32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    int64_t hi = i32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
    double t = std::trunc(static_cast<double>(value));
    iv = t <= static_cast<double>(lo)   ? lo
         : t >= static_cast<double>(hi) ? hi
                                        : static_cast<int64_t>(t);
  }
  return constant(c.loc, makeIntAttr(shape, elem, SmallVector<int64_t>(n, iv)));
}

/// Resize's mode, coordinate_transformation_mode and nearest_mode (the
/// legacy rules for Upsample and before opset 11), checked.
LogicalResult Importer::resizeModes(const NodeCtx &c, bool legacy, std::string &mode,
                                    std::string &transform, std::string &nearestMode) {
  if (failed(attrString(c, "mode", "nearest", mode)))
    return failure();
  if (mode != "nearest" && mode != "linear" && !(mode == "cubic" && !legacy))
    return nodeError(c, "attribute 'mode' must be nearest, linear" +
                            llvm::Twine(legacy ? "" : " or cubic") + ", got " + quotedName(mode));
  transform = "asymmetric";
  nearestMode = "simple";
  if (!legacy &&
      (failed(attrString(c, "coordinate_transformation_mode", "half_pixel", transform)) ||
       failed(attrString(c, "nearest_mode", "round_prefer_floor", nearestMode))))
    return failure();
  if (transform != "half_pixel" && transform != "pytorch_half_pixel" &&
      transform != "align_corners" && transform != "asymmetric" &&
      !(transform == "half_pixel_symmetric" && opset >= 19) && transform != "tf_crop_and_resize") {
    if (transform == "tf_half_pixel_for_nn")
      return nodeError(c, "attribute 'coordinate_transformation_mode' " + quotedName(transform) +
                              " is not supported");
    return nodeError(c, "attribute 'coordinate_transformation_mode' must be half_pixel, "
                        "pytorch_half_pixel, align_corners, asymmetric or tf_crop_and_resize" +
                            llvm::Twine(opset >= 19 ? " or half_pixel_symmetric" : "") + ", got " +
                            quotedName(transform));
  }
  if (nearestMode != "simple" && nearestMode != "round_prefer_floor" &&
      nearestMode != "round_prefer_ceil" && nearestMode != "floor" && nearestMode != "ceil")
    return nodeError(
        c, "attribute 'nearest_mode' must be round_prefer_floor, round_prefer_ceil, floor "
           "or ceil, got " +
               quotedName(nearestMode));
  return success();
}

/// Resize's scales (an attribute of Upsample before opset 9, else an
/// input) or sizes (an input from opset 11), one per axis of `axisCount`.
LogicalResult Importer::resizeScalesOrSizes(const NodeCtx &c, bool upsample, bool legacy,
                                            size_t axisCount, SmallVector<float> &scales,
                                            SmallVector<int64_t> &sizes) {
  if (upsample && opset < 9) {
    const onnx::AttributeProto *a;
    if (failed(findAttr(c, "scales", onnx::AttributeProto::FLOATS, a)))
      return failure();
    if (!a)
      return nodeError(c, "attribute 'scales' is required");
    scales.assign(a->floats().begin(), a->floats().end());
  } else {
    int scalesInput = legacy ? 1 : 2;
    if (hasInput(c, scalesInput)) {
      DenseElementsAttr k;
      if (failed(requireConst(c, scalesInput, "scales", k)))
        return failure();
      if (!isFloat(k.getElementType()))
        return nodeError(c, "input 'scales' must be FLOAT, got " +
                                elementTypeName(k.getElementType()));
      scales = floatValues(k);
    }
    if (!legacy && hasInput(c, 3)) {
      if (!scales.empty())
        return nodeError(c, "takes the 'scales' or the 'sizes' input, not both");
      if (failed(requireConstInts(c, 3, "sizes", sizes)))
        return failure();
    }
    if (scales.empty() && sizes.empty())
      return nodeError(c, "needs the 'scales' or the 'sizes' input");
  }
  size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axisCount)
    return nodeError(c, llvm::Twine(scales.empty() ? "'sizes'" : "'scales'") + " has " +
                            llvm::Twine(given) + " values, want " + llvm::Twine(axisCount));
  return success();
}

/// `v` with its axis `d` (of `rank`) multiplied by the matrix `w`
/// ([in, out]): moved last, multiplied, moved back.
FailureOr<Value> Importer::matmulAlongAxis(const NodeCtx &c, Value v, Value w, int64_t d,
                                           int64_t rank) {
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != d)
      perm.push_back(i);
  perm.push_back(d);
  bool last = d == rank - 1;
  FailureOr<Value> moved = last ? v : transpose(c, v, perm);
  if (failed(moved))
    return failure();
  FailureOr<Value> r = createInferred<graph::MatmulOp>(c, elemOf(v), *moved, w, TypeAttr());
  if (!last) {
    SmallVector<int64_t> inverse(rank);
    for (int64_t i = 0; i < rank; ++i)
      inverse[perm[i]] = i;
    r = transpose(c, r, inverse);
  }
  return r;
}

/// The per-axis plan of a Resize over `shape`: `scales` or `sizes` (with
/// keep_aspect_ratio_policy `policy`) of `axes`, checked.
static LogicalResult resizePlan(const Importer &imp, const NodeCtx &c, ArrayRef<int64_t> shape,
                                ArrayRef<int64_t> axes, ArrayRef<float> scales,
                                ArrayRef<int64_t> sizes, llvm::StringRef policy,
                                SmallVectorImpl<AxisResize> &plan) {
  for (int64_t d : shape)
    plan.push_back({d, d, 1.0f, 1.0});
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      float s = scales[i];
      if (!(s > 0.0f) || !std::isfinite(s) || s > 65536.0f)
        return imp.nodeError(c,
                             "scales must be positive and at most 65536, got " + std::to_string(s));
      AxisResize &a = plan[axes[i]];
      a.scale = s;
      a.refScale = static_cast<double>(s);
      a.out = static_cast<int64_t>(std::floor(static_cast<float>(a.in) * s));
    }
    return success();
  }
  for (size_t i = 0; i < axes.size(); ++i)
    if (sizes[i] <= 0 || sizes[i] > (int64_t(1) << 24))
      return imp.nodeError(c, "sizes must be in [1, 2^24], got " + shapes::formatShape(sizes));
  float common = 0.0f;
  double refCommon = 0.0;
  if (policy != "stretch")
    for (size_t i = 0; i < axes.size(); ++i) {
      float s = static_cast<float>(sizes[i]) / static_cast<float>(shape[axes[i]]);
      double r = static_cast<double>(sizes[i]) / static_cast<double>(shape[axes[i]]);
      common = i == 0 ? s : policy == "not_larger" ? std::min(common, s) : std::max(common, s);
      refCommon =
          i == 0 ? r : policy == "not_larger" ? std::min(refCommon, r) : std::max(refCommon, r);
    }
  for (size_t i = 0; i < axes.size(); ++i) {
    AxisResize &a = plan[axes[i]];
    if (policy == "stretch") {
      a.out = sizes[i];
      a.scale = static_cast<float>(a.out) / static_cast<float>(a.in);
      a.refScale = static_cast<double>(a.out) / static_cast<double>(a.in);
    } else {
      a.scale = common;
      a.refScale = refCommon;
      a.out = static_cast<int64_t>(std::round(common * static_cast<float>(a.in)));
    }
  }
  return success();
}

/// Resize (opset 10 to 19) and Upsample (7, 9): per resized axis, nearest
/// mode gathers with constant indices (exact, any dtype); linear and cubic
/// multiply by a constant [in, out] interpolation matrix (the axis moved
/// last and back): onnxruntime's rule, or with antialias and
/// tf_crop_and_resize onnx's reference windows (referenceMatrix); outputs
/// tf_crop_and_resize extrapolates read a slice of extrapolation_value
/// appended to the axis. Scales, sizes and roi must be compile-time
/// constants.
LogicalResult Importer::convertResize(const NodeCtx &c) {
  bool upsample = c.node.op_type() == "Upsample";
  if (upsample && opset < 7)
    return nodeError(c, "Upsample before opset 7 (experimental, height_scale and width_scale) is not "
                "supported");
  bool legacy = upsample || opset < 11; // Upsample's rules: asymmetric, "simple" nearest
  RankedTensorType t;
  std::string mode, transform, nearestMode, policy;
  float cubicA, extrapolation;
  bool excludeOutside, antialias;
  if (failed(inputType(c, 0, t)) || failed(resizeModes(c, legacy, mode, transform, nearestMode)) ||
      failed(attrFloat(c, "cubic_coeff_a", -0.75f, cubicA)) ||
      failed(attrFloat(c, "extrapolation_value", 0.0f, extrapolation)) ||
      failed(attrBool(c, "exclude_outside", false, excludeOutside)) ||
      failed(attrBool(c, "antialias", false, antialias)) ||
      failed(attrString(c, "keep_aspect_ratio_policy", "stretch", policy)))
    return failure();
  ArrayRef<int64_t> shape = t.getShape();
  int64_t rank = t.getRank();
  bool crop = transform == "tf_crop_and_resize";
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return nodeError(c, "attribute 'keep_aspect_ratio_policy' must be stretch, not_larger or "
                "not_smaller, got " +
                    quotedName(policy));
  std::optional<SmallVector<int64_t>> axesAttr;
  if (failed(attrInts(c, "axes", axesAttr)))
    return failure();
  SmallVector<int64_t> axes;
  if (axesAttr) {
    axes = *axesAttr;
    if (failed(normalizeAxesInOrder(c, "attribute 'axes'", axes, rank)))
      return failure();
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  // The scales or sizes of `axes`.
  SmallVector<float> scales;
  SmallVector<int64_t> sizes;
  SmallVector<AxisResize> plan;
  if (failed(resizeScalesOrSizes(c, upsample, legacy, axes.size(), scales, sizes)) ||
      failed(resizePlan(*this, c, shape, axes, scales, sizes, policy, plan)))
    return failure();
  if (crop) {
    FailureOr<SmallVector<float>> roi = resizeRoi(c, axes, rank);
    if (failed(roi))
      return failure();
    for (int64_t d = 0; d < rank; ++d) {
      plan[d].roiStart = (*roi)[d];
      plan[d].roiEnd = (*roi)[rank + d];
    }
  }
  Value v;
  if (failed(input(c, 0, v)) || (mode != "nearest" && failed(requireFloat(c, 0, elemOf(v)))))
    return failure();
  for (int64_t d = 0; d < rank; ++d) {
    const AxisResize &a = plan[d];
    if (a.out <= 0 || a.out > (int64_t(1) << 24))
      return nodeError(c,
               "axis " + llvm::Twine(d) + " would resize to " + llvm::Twine(a.out) + " elements");
    if (a.in == 0)
      return nodeError(c, "cannot resize axis " + llvm::Twine(d) + " of size 0");
    if (a.out == a.in && a.scale == 1.0f && a.roiStart == 0.0f && a.roiEnd == 1.0f)
      continue; // every transform maps i to i
    // tf_crop_and_resize: the extrapolation value, appended along d, is
    // what the outputs outside the input read (a gather or a weight of 1).
    bool outside = crop && llvm::any_of(llvm::seq<int64_t>(0, a.out), [&](int64_t o) {
                     double x = referenceCoordinate(transform, o, a);
                     return x < 0.0 || x > static_cast<double>(a.in - 1);
                   });
    FailureOr<Value> extension =
        outside ? concatAxis(c, {v, extrapolationSlice(c, v, d, extrapolation)}, d) : v;
    if (failed(extension))
      return failure();
    Value extended = *extension;
    if (mode == "nearest") {
      SmallVector<int64_t> idx;
      for (int64_t o = 0; o < a.out; ++o) {
        if (crop) {
          double x = referenceCoordinate(transform, o, a);
          idx.push_back(x < 0.0 || x > static_cast<double>(a.in - 1)
                            ? a.in
                            : nearestIndex(nearestMode, static_cast<float>(x), a));
          continue;
        }
        idx.push_back(nearestIndex(nearestMode, resizeCoordinate(transform, o, a), a));
      }
      FailureOr<Value> gathered = gatherAxis(c, extended, d, idx);
      if (failed(gathered))
        return failure();
      v = *gathered;
      continue;
    }
    if (a.in * a.out > kMaxFoldElements * 16)
      return nodeError(c, "the interpolation matrix of axis " + llvm::Twine(d) + " (" + llvm::Twine(a.in) +
                      " x " + llvm::Twine(a.out) + ") is too large");
    // The reference's windows where they differ from onnxruntime's rule
    // above: the antialias filter and tf_crop_and_resize.
    bool reference = antialias || crop;
    SmallVector<float> m =
        reference ? referenceMatrix(mode, transform, a, cubicA, excludeOutside, antialias)
                  : interpolationMatrix(mode, transform, a, cubicA, excludeOutside);
    if (reference && !outside)
      m.resize(a.in * a.out); // no extrapolation row
    v = extended;
    Value w = constant(c.loc, makeF32Attr(ctx, {outside ? a.in + 1 : a.in, a.out}, m));
    FailureOr<Value> resized = matmulAlongAxis(c, v, w, d, rank);
    if (failed(resized))
      return failure();
    v = *resized;
  }
  defineValue(c, 0, v);
  return success();
}

//===----------------------------------------------------------------------===//
// Attention (opset 23/24)
//===----------------------------------------------------------------------===//

/// The ONNX schema forms of Attention (24 added nonpad_kv_seqlen, 25 the
/// sliding window).
// clang-format off: check_schema_forms.py reads each form's attributes as one string.
static const OpForm kAttentionForms[] = {
    {23, 3, 6, 1, 4, "is_causal kv_num_heads q_num_heads qk_matmul_output_mode scale softcap softmax_precision"},
    {24, 3, 7, 1, 4, "is_causal kv_num_heads q_num_heads qk_matmul_output_mode scale softcap softmax_precision"},
    {25, 3, 7, 1, 4, "is_causal kv_num_heads left_window_size q_num_heads qk_matmul_output_mode right_window_size scale softcap softmax_precision"},
};
// clang-format on

/// A 3-D [B, S, heads * D] Attention input as [B, heads, S, D] (the
/// reference's reshape and transpose).
FailureOr<Value> Importer::attentionHeads(const NodeCtx &c, Value v, int64_t heads,
                                          llvm::StringRef role) {
  ArrayRef<int64_t> s = shapeOf(v);
  if (heads <= 0 || s[2] % heads)
    return nodeError(c, "input '" + role + "' hidden size " + llvm::Twine(s[2]) +
                            " is not a multiple of the head count " + llvm::Twine(heads));
  return transpose(c, reshape(c, v, {s[0], s[1], heads, s[2] / heads}), {0, 2, 1, 3});
}

/// The compile-time part of the attention bias, [biasBatch, qLen, kvLen]:
/// 0 where query i may attend key j, -inf where causality (offset by
/// `pastLen`, or by nonpad_kv_seqlen - qLen per batch), the sliding window
/// or padding (keys at or past `nonpad`) forbid it. Sets `anyFixed` when
/// anything is forbidden and `rowMasked` when a whole row is.
static SmallVector<float> attentionFixedBias(int64_t biasBatch, int64_t qLen, int64_t kvLen,
                                             const SmallVector<int64_t> *nonpad,
                                             int64_t pastLen, bool causal, int64_t leftWindow,
                                             int64_t rightWindow, bool &anyFixed,
                                             bool &rowMasked) {
  const float ninf = -std::numeric_limits<float>::infinity();
  SmallVector<float> fixed;
  for (int64_t b = 0; b < biasBatch; ++b)
    for (int64_t i = 0; i < qLen; ++i) {
      bool rowOpen = false;
      for (int64_t j = 0; j < kvLen; ++j) {
        int64_t diff = i + (nonpad ? (*nonpad)[b] - qLen : pastLen) - j;
        bool allowed = !causal || diff >= 0;
        if ((leftWindow >= 0 && diff > leftWindow) || (rightWindow >= 0 && -diff > rightWindow))
          allowed = false;
        if (nonpad && j >= (*nonpad)[b])
          allowed = false;
        anyFixed |= !allowed;
        rowOpen |= allowed;
        fixed.push_back(allowed ? 0.0f : ninf);
      }
      rowMasked |= !rowOpen;
    }
  return fixed;
}

/// Attention's attn_mask as an additive bias in `et`: a boolean mask as 0
/// or -inf, padded with -inf up to the key length `kvLen`.
FailureOr<Value> Importer::attentionMask(const NodeCtx &c, Value mask, Type et, int64_t kvLen) {
  const float ninf = -std::numeric_limits<float>::infinity();
  Type mt = elemOf(mask);
  ArrayRef<int64_t> ms = shapeOf(mask);
  if (ms.empty() || ms.back() > kvLen)
    return nodeError(c, "input 'attn_mask' shape " + shapes::formatShape(ms) +
                            " must end in at most the key length " + llvm::Twine(kvLen));
  FailureOr<Value> additive = mask;
  if (mt.isInteger(1))
    additive = createInferred<graph::WhereOp>(c, et, mask, scalarF32(c, 0.0f), scalarF32(c, ninf));
  else if (failed(requireFloat(c, 3, mt)))
    return failure();
  if (succeeded(additive) && ms.back() < kvLen) {
    Shape padShape(ms.begin(), ms.end());
    padShape.back() = kvLen - ms.back();
    SmallVector<float> pad(product(padShape, 0, padShape.size()), ninf);
    additive = concatAxis(c, {*additive, constant(c.loc, makeF32Attr(ctx, padShape, pad))},
                          static_cast<int64_t>(ms.size()) - 1);
  }
  return additive;
}

/// `probs` with 0 in the rows whose `bias` is all -inf (as the reference,
/// not the NaN of exp(-inf - -inf)).
FailureOr<Value> Importer::zeroMaskedRows(const NodeCtx &c, Type et, Value bias, Value probs) {
  int64_t last = static_cast<int64_t>(shapeOf(bias).size()) - 1;
  FailureOr<Value> rowMax = createInferred<graph::ReduceMaxOp>(
      c, et, bias, builder.getDenseI64ArrayAttr({last}), builder.getBoolAttr(true), TypeAttr());
  if (failed(rowMax))
    return failure();
  Value rowMasked =
      builder
          .create<graph::IsInfOp>(c.loc, tensorType(shapeOf(*rowMax), builder.getI1Type()), *rowMax,
                                  builder.getBoolAttr(true), builder.getBoolAttr(false))
          .getOutput();
  return createInferred<graph::WhereOp>(c, et, rowMasked, scalarF32(c, 0.0f), probs);
}

/// Attention's Q, K and V as 4-D [B, heads, S, D] (3-D inputs split by
/// q_num_heads and kv_num_heads), checked to fit each other; `rank` is the
/// inputs' rank.
FailureOr<SmallVector<Value, 3>> Importer::attentionInputs(const NodeCtx &c, int64_t &rank) {
  static const char *roles[] = {"Q", "K", "V"};
  SmallVector<Value, 3> qkv;
  for (int i = 0; i < 3; ++i) {
    Value v;
    if (failed(input(c, i, v)) || failed(requireFloat(c, i, elemOf(v))))
      return failure();
    qkv.push_back(v);
  }
  rank = static_cast<int64_t>(shapeOf(qkv[0]).size());
  for (int i = 0; i < 3; ++i)
    if (static_cast<int64_t>(shapeOf(qkv[i]).size()) != rank || (rank != 3 && rank != 4))
      return nodeError(c, "inputs Q, K and V must all be 3-D or all 4-D, got " +
                              llvm::Twine(roles[i]) + " " + shapes::formatShape(shapeOf(qkv[i])));
  std::optional<int64_t> qHeadsAttr, kvHeadsAttr;
  if (failed(attrIntOpt(c, "q_num_heads", qHeadsAttr)) ||
      failed(attrIntOpt(c, "kv_num_heads", kvHeadsAttr)))
    return failure();
  if (rank == 3) {
    if (!qHeadsAttr || !kvHeadsAttr)
      return nodeError(c, "3-D inputs need attributes 'q_num_heads' and 'kv_num_heads'");
    for (int i = 0; i < 3; ++i) {
      FailureOr<Value> split =
          attentionHeads(c, qkv[i], i == 0 ? *qHeadsAttr : *kvHeadsAttr, roles[i]);
      if (failed(split))
        return failure();
      qkv[i] = *split;
    }
  }
  Value q = qkv[0], k = qkv[1], v = qkv[2];
  Type et = elemOf(q);
  for (int i = 1; i < 3; ++i)
    if (elemOf(qkv[i]) != et)
      return nodeError(c, "inputs Q, K and V must have one element type");
  int64_t batch = shapeOf(q)[0], qHeads = shapeOf(q)[1];
  int64_t kHeads = shapeOf(k)[1], headSize = shapeOf(q)[3];
  if (shapeOf(k)[0] != batch || shapeOf(v)[0] != batch || shapeOf(v)[1] != kHeads ||
      shapeOf(k)[3] != headSize || shapeOf(v)[2] != shapeOf(k)[2])
    return nodeError(c, "Q " + shapes::formatShape(shapeOf(q)) + ", K " +
                            shapes::formatShape(shapeOf(k)) + " and V " +
                            shapes::formatShape(shapeOf(v)) +
                            " do not fit [B, H, S, D] attention (as 4-D)");
  if (rank == 4 && opset >= 25 && (qHeadsAttr || kvHeadsAttr))
    return nodeError(c, "attributes 'q_num_heads' and 'kv_num_heads' must not be given for 4-D inputs");
  if (rank == 4 && ((qHeadsAttr && *qHeadsAttr != qHeads) ||
                    (kvHeadsAttr && *kvHeadsAttr != kHeads)))
    return nodeError(c, "attributes 'q_num_heads'/'kv_num_heads' disagree with the 4-D inputs' heads (" +
                    llvm::Twine(qHeads) + ", " + llvm::Twine(kHeads) + ")");
  if (qHeads != kHeads && qHeads % kHeads)
    return nodeError(c, "Q's " + llvm::Twine(qHeads) + " heads are not a multiple of K/V's " +
                    llvm::Twine(kHeads) + " (grouped-query attention)");
  return qkv;
}

/// Attention as the ONNX reference computes it (onnx/reference/ops/
/// op_attention.py): Q and K each times sqrt(scale), Q K^T, softcap, plus
/// the bias (mask, causal and padding parts; the parts known at import are
/// one constant), softmax, rows whose bias is all -inf zeroed, times V.
/// Attention's attributes, checked (the scale's default needs the head
/// size).
LogicalResult Importer::attentionAttributes(const NodeCtx &c, int64_t headSize, AttentionAttrs &a) {
  if (failed(attrBool(c, "is_causal", false, a.causal)) ||
      failed(attrInt(c, "qk_matmul_output_mode", 0, a.mode)))
    return failure();
  if (a.mode < 0 || a.mode > 3)
    return nodeError(c,
                     "attribute 'qk_matmul_output_mode' must be 0..3, got " + llvm::Twine(a.mode));
  // softmax_precision: mp.softmax always runs in FP32, which covers FLOAT,
  // FLOAT16 and BFLOAT16. DOUBLE is computed in FP32 too (mixprec has no
  // FP64 compute; the README says so): the output has the inputs' FP32 type,
  // and an FP32 softmax with FP32 sums is within a few ulps of the double one.
  std::optional<int64_t> sp;
  if (failed(attrIntOpt(c, "softmax_precision", sp)))
    return failure();
  if (sp && *sp != 1 && *sp != 10 && *sp != 11 && *sp != 16)
    return nodeError(c,
                     "attribute 'softmax_precision' must be a float type (1, 10, 11 or 16), got " +
                         llvm::Twine(*sp));
  // The reference takes sqrt(scale) in double and rounds it to the input type.
  a.scale = 1.0 / std::sqrt(static_cast<double>(headSize));
  if (hasAttr(c, "scale")) {
    float given;
    if (failed(attrFloat(c, "scale", 1.0f, given)))
      return failure();
    a.scale = given;
  }
  if (!(a.scale > 0.0) || !std::isfinite(a.scale))
    return nodeError(c, "attribute 'scale' must be positive and finite, got " +
                            std::to_string(a.scale));
  if (failed(attrInt(c, "left_window_size", -1, a.leftWindow)) ||
      failed(attrInt(c, "right_window_size", -1, a.rightWindow)))
    return failure();
  if (a.leftWindow < -1 || a.rightWindow < -1)
    return nodeError(c, "attributes 'left_window_size' and 'right_window_size' must be -1 or "
                        "non-negative, got " +
                            llvm::Twine(a.leftWindow) + " and " + llvm::Twine(a.rightWindow));
  if (failed(attrFloat(c, "softcap", 0.0f, a.softcap)))
    return failure();
  if (!(a.softcap >= 0.0f) || !std::isfinite(a.softcap))
    return nodeError(c, "attribute 'softcap' must be non-negative and finite, got " +
                            std::to_string(a.softcap));
  return success();
}

LogicalResult Importer::convertAttention(const NodeCtx &c) {
  int64_t rank = 0;
  FailureOr<SmallVector<Value, 3>> inputs = attentionInputs(c, rank);
  if (failed(inputs))
    return failure();
  SmallVector<Value, 3> &qkv = *inputs;
  Value q = qkv[0], k = qkv[1], v = qkv[2];
  Type et = elemOf(q);
  int64_t batch = shapeOf(q)[0], qHeads = shapeOf(q)[1], qLen = shapeOf(q)[2];
  int64_t kHeads = shapeOf(k)[1], headSize = shapeOf(q)[3];
  AttentionAttrs attrs;
  if (failed(attentionAttributes(c, headSize, attrs)))
    return failure();

  // The cache: present = concat(past, new) on the sequence axis.
  Value pastK, pastV;
  if (failed(optInput(c, 4, pastK)) || failed(optInput(c, 5, pastV)))
    return failure();
  if (!pastK != !pastV)
    return nodeError(c, "inputs 'past_key' and 'past_value' must be given together");
  int64_t pastLen = 0;
  if (pastK) {
    pastLen = shapeOf(pastK)[2];
    FailureOr<Value> presentK = concatAxis(c, {pastK, k}, 2);
    if (failed(presentK))
      return failure();
    FailureOr<Value> presentV = concatAxis(c, {pastV, v}, 2);
    if (failed(presentV))
      return failure();
    k = *presentK;
    v = *presentV;
  }
  defineValue(c, 1, k);
  defineValue(c, 2, v);
  int64_t kvLen = shapeOf(k)[2];

  // The bias's compile-time part: causal (bottom-right, offset by the past
  // or by nonpad_kv_seqlen - qLen per batch), the sliding window (same
  // offset) and padding (keys at or past nonpad_kv_seqlen).
  std::optional<SmallVector<int64_t>> nonpad;
  if (hasInput(c, 6)) {
    if (pastK)
      return nodeError(c, "input 'nonpad_kv_seqlen' cannot be combined with past_key/past_value");
    nonpad.emplace();
    if (failed(requireConstInts(c, 6, "nonpad_kv_seqlen", *nonpad)))
      return failure();
    if (static_cast<int64_t>(nonpad->size()) != batch)
      return nodeError(c, "input 'nonpad_kv_seqlen' has " + llvm::Twine(nonpad->size()) +
                      " values, the batch is " + llvm::Twine(batch));
  }
  int64_t biasBatch = nonpad ? batch : 1;
  if (biasBatch * qLen * kvLen > kMaxFoldElements)
    return nodeError(c, "the attention bias would have more than 2^20 elements");
  bool anyFixed = false, fixedRowMasked = false;
  SmallVector<float> fixed =
      attentionFixedBias(biasBatch, qLen, kvLen, nonpad ? &*nonpad : nullptr, pastLen, attrs.causal,
                         attrs.leftWindow, attrs.rightWindow, anyFixed, fixedRowMasked);
  SmallVector<int64_t> fixedShape = nonpad ? SmallVector<int64_t>{batch, 1, qLen, kvLen}
                                           : SmallVector<int64_t>{qLen, kvLen};
  FailureOr<Value> bias = Value();
  bool hasMask = hasInput(c, 3);
  Value mask;
  if (failed(optInput(c, 3, mask)))
    return failure();
  if (mask) {
    FailureOr<Value> additive = attentionMask(c, mask, et, kvLen);
    bias = anyFixed ? addV(c, additive, constant(c.loc, makeF32Attr(ctx, fixedShape, fixed)))
                    : additive;
  } else if (anyFixed) {
    bias = constant(c.loc, makeF32Attr(ctx, fixedShape, fixed));
  }
  if (failed(bias))
    return failure();

  // Grouped-query attention: each K/V head repeated for its Q heads.
  if (qHeads != kHeads) {
    SmallVector<int64_t> idx;
    for (int64_t h = 0; h < qHeads; ++h)
      idx.push_back(h / (qHeads / kHeads));
    FailureOr<Value> groupedK = gatherAxis(c, k, 1, idx);
    if (failed(groupedK))
      return failure();
    FailureOr<Value> groupedV = gatherAxis(c, v, 1, idx);
    if (failed(groupedV))
      return failure();
    k = *groupedK;
    v = *groupedV;
  }
  Value s = scalarF32(c, static_cast<float>(std::sqrt(attrs.scale)));
  FailureOr<Value> kt = transpose(c, mulV(c, k, s), {0, 1, 3, 2});
  if (failed(kt))
    return failure();
  FailureOr<Value> qk = mulV(c, q, s);
  if (succeeded(qk))
    qk = createInferred<graph::MatmulOp>(c, et, *qk, *kt, TypeAttr());
  if (succeeded(qk) && attrs.softcap > 0.0f) {
    Value cap = scalarF32(c, attrs.softcap);
    FailureOr<Value> t = createInferred<graph::DivOp>(c, et, *qk, cap);
    if (failed(t))
      return failure();
    qk = mulV(c, builder.create<graph::TanhOp>(c.loc, t->getType(), *t).getOutput(), cap);
  }
  FailureOr<Value> logits = *bias ? addV(c, qk, *bias) : qk;
  if (failed(logits))
    return failure();
  FailureOr<Value> probs = builder
                               .create<graph::SoftmaxOp>(c.loc, logits->getType(), *logits,
                                                         builder.getI64IntegerAttr(3), TypeAttr())
                               .getOutput();
  // A row with no attendable key (its bias all -inf) gives 0, as in the
  // reference, not the NaN of exp(-inf - -inf).
  if (*bias && (hasMask || fixedRowMasked))
    probs = zeroMaskedRows(c, et, *bias, *probs);
  if (failed(probs))
    return failure();
  FailureOr<Value> y = createInferred<graph::MatmulOp>(c, et, *probs, v, TypeAttr());
  if (succeeded(y) && rank == 3) {
    ArrayRef<int64_t> ys = shapeOf(*y);
    FailureOr<Value> heads = transpose(c, *y, {0, 2, 1, 3});
    y = failed(heads) ? heads : reshape(c, *heads, {ys[0], ys[2], ys[1] * ys[3]});
  }
  if (failed(y))
    return failure();
  defineValue(c, 0, *y);
  defineValue(c, 3, attrs.mode == 2 ? *logits : attrs.mode == 3 ? *probs : *qk);
  return success();
}

//===----------------------------------------------------------------------===//
// The family's rows of the op table (findOp, OnnxOpRegistry.cpp)
//===----------------------------------------------------------------------===//

llvm::ArrayRef<Importer::OpInfo> Importer::compositeOps() {
  static const OpInfo table[] = {
      {"Tile", &Importer::convertTile, kTileForms},
      {"Trilu", &Importer::convertTrilu, kTriluForms},
      {"Pad", &Importer::convertPad, kPadForms},
      {"DepthToSpace", &Importer::convertDepthSpace, kDepthToSpaceForms},
      {"SpaceToDepth", &Importer::convertDepthSpace, kSpaceToDepthForms},
      {"CastLike", &Importer::convertCastLike, kCastLikeForms},
      {"InstanceNormalization", &Importer::convertGroupNorm, kInstanceNormForms},
      {"GroupNormalization", &Importer::convertGroupNorm, kGroupNormForms},
      {"ReduceL1", &Importer::convertCompositeReduce, kCompositeReduceForms},
      {"ReduceL2", &Importer::convertCompositeReduce, kCompositeReduceForms},
      {"ReduceSumSquare", &Importer::convertCompositeReduce, kCompositeReduceForms},
      {"ReduceLogSum", &Importer::convertCompositeReduce, kCompositeReduceForms},
      {"ReduceLogSumExp", &Importer::convertCompositeReduce, kCompositeReduceForms},
      {"ReduceMin", &Importer::convertCompositeReduce, kCompositeReduceForms},
      {"Einsum", &Importer::convertEinsum, kEinsumForms},
      {"Resize", &Importer::convertResize, kResizeForms},
      {"Upsample", &Importer::convertResize, kUpsampleForms},
      {"Attention", &Importer::convertAttention, kAttentionForms},
  };
  return table;
}

} // namespace mixprec::compiler::onnx_import
