//===- Shapes.cpp - the shape functions of the ops
//-------------------------===//
#include "common/Shapes.h"

#include "common/FormatShape.h"

#include <algorithm>
#include <limits>

namespace mixprec::shapes {
namespace {
template <typename F> bool anyOf(Dims dims, F f) {
  return std::any_of(dims.begin(), dims.end(), f);
}
} // namespace

std::string formatShape(Dims shape) { return support::formatShapeOf(shape); }

int64_t numElements(Dims shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return -1;
    n *= d;
  }
  return n;
}

ShapeOrError broadcastShapes(Dims a, Dims b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return ShapeOrError::failure("shapes " + formatShape(a) + " and " + formatShape(b) +
                                   " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return {out, ""};
}

ShapeOrError matmulShape(Dims lhs, Dims rhs) {
  if (lhs.empty() || rhs.empty())
    return ShapeOrError::failure("matmul operands must have rank >= 1");
  Shape a(lhs.begin(), lhs.end()), b(rhs.begin(), rhs.end());
  bool lhsVector = a.size() == 1, rhsVector = b.size() == 1;
  if (lhsVector)
    a.insert(a.begin(), 1);
  if (rhsVector)
    b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), k2 = b[b.size() - 2], n = b.back();
  if (k != k2)
    return ShapeOrError::failure("contracting dimensions differ: " + formatShape(lhs) + " x " +
                                 formatShape(rhs));
  ShapeOrError batch = broadcastShapes(Dims(a).dropBack(2), Dims(b).dropBack(2));
  if (!batch.ok())
    return ShapeOrError::failure("batch dimensions: " + batch.error);
  Shape out = batch.shape;
  if (!lhsVector)
    out.push_back(m);
  if (!rhsVector)
    out.push_back(n);
  return {out, ""};
}

ShapeOrError attentionShape(Dims q, Dims k, Dims v, Dims bias) {
  if (q.size() != 4 || k.size() != 4 || v.size() != 4)
    return ShapeOrError::failure("attention operands must have rank 4 ([batch, heads, seq, dim]), "
                                 "got " +
                                 formatShape(q) + ", " + formatShape(k) + ", " + formatShape(v));
  if (q[0] != k[0] || q[1] != k[1] || k[0] != v[0] || k[1] != v[1])
    return ShapeOrError::failure("batch and head dims differ: q " + formatShape(q) + ", k " +
                                 formatShape(k) + ", v " + formatShape(v));
  if (q[3] != k[3])
    return ShapeOrError::failure("q and k head dims differ: " + formatShape(q) + " and " +
                                 formatShape(k));
  if (k[2] != v[2])
    return ShapeOrError::failure("k and v sequence lengths differ: " + formatShape(k) + " and " +
                                 formatShape(v));
  Shape scores = {q[0], q[1], q[2], k[2]};
  if (!bias.empty()) {
    ShapeOrError b = broadcastShapes(bias, Dims(scores));
    if (!b.ok() || b.shape != scores)
      return ShapeOrError::failure("bias " + formatShape(bias) +
                                   " does not broadcast to the scores " + formatShape(scores));
  }
  return {{q[0], q[1], q[2], v[3]}, ""};
}

ShapeOrError linearShape(Dims input, Dims weight, bool transposeWeight) {
  if (input.empty())
    return ShapeOrError::failure("input must have rank >= 1");
  if (weight.size() != 2)
    return ShapeOrError::failure("weight must have rank 2, got " + formatShape(weight));
  int64_t k = transposeWeight ? weight[1] : weight[0];
  int64_t n = transposeWeight ? weight[0] : weight[1];
  if (input.back() != k)
    return ShapeOrError::failure("input features " + std::to_string(input.back()) +
                                 " do not match weight " + formatShape(weight) +
                                 (transposeWeight ? " (transposed)" : ""));
  Shape out(input.begin(), input.end());
  out.back() = n;
  return {out, ""};
}

int64_t pooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                   int64_t dilation, bool ceilMode) {
  const int64_t effective = dilation * (kernel - 1) + 1;
  const int64_t room = in + padBegin + padEnd - effective;
  if (room < 0)
    return 0;
  int64_t out = (ceilMode ? (room + stride - 1) / stride : room / stride) + 1;
  // With ceil_mode, a window that would start in the trailing padding is
  // dropped (ONNX and PyTorch agree on this).
  if (ceilMode && (out - 1) * stride >= in + padBegin)
    --out;
  return out;
}

int64_t transposedSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                       int64_t dilation, int64_t outputPadding) {
  return stride * (in - 1) + outputPadding + (kernel - 1) * dilation + 1 - padBegin - padEnd;
}

/// Checks the strides, pads and dilations of a window op with `dims`
/// spatial dims (dilations may be empty: all ones). A transposed
/// convolution's pads may be negative (ONNX's output_shape can ask for
/// more than the unpadded size).
static std::string checkWindowAttrs(size_t dims, Dims strides, Dims pads, Dims dilations,
                                    bool negativePads = false) {
  std::string n = std::to_string(dims);
  if (strides.size() != dims)
    return "strides must have " + n + " values, got " + std::to_string(strides.size());
  if (pads.size() != 2 * dims)
    return "pads must have " + std::to_string(2 * dims) + " values " +
           (dims == 2 ? "[top, left, bottom, right]" : "[begins..., ends...]") + ", got " +
           std::to_string(pads.size());
  if (!dilations.empty() && dilations.size() != dims)
    return "dilations must have " + n + " values, got " + std::to_string(dilations.size());
  if (anyOf(strides, [](int64_t s) { return s <= 0; }))
    return "strides must be positive, got " + formatShape(strides);
  if (!negativePads && anyOf(pads, [](int64_t p) { return p < 0; }))
    return "pads must be non-negative, got " + formatShape(pads);
  if (anyOf(dilations, [](int64_t d) { return d <= 0; }))
    return "dilations must be positive, got " + formatShape(dilations);
  return "";
}

/// The rank rule of the N-D window ops: [N, C] and 1 to 3 spatial dims.
static std::string checkSpatialRank(Dims input) {
  if (input.size() < 3 || input.size() > 5)
    return "input must be [N, C, spatial...] with 1 to 3 spatial dims, got " + formatShape(input);
  return "";
}

/// Group arithmetic of a convolution with `inChannels` and `outChannels`,
/// whose weight expects `expectedIn` input channels.
static std::string checkGroups(Dims weight, int64_t inChannels, int64_t outChannels,
                               int64_t expectedIn, int64_t groups) {
  if (groups <= 0)
    return "groups must be positive, got " + std::to_string(groups);
  if (inChannels % groups != 0 || outChannels % groups != 0)
    return "input channels " + std::to_string(inChannels) + " and output channels " +
           std::to_string(outChannels) + " must both divide by groups " + std::to_string(groups);
  if (expectedIn != inChannels)
    return "weight " + formatShape(weight) + " expects " + std::to_string(expectedIn) +
           " input channels, got " + std::to_string(inChannels);
  return "";
}

ShapeOrError convShape(Dims input, Dims weight, Dims strides, Dims pads, Dims dilations,
                       int64_t groups) {
  if (std::string e = checkSpatialRank(input); !e.empty())
    return ShapeOrError::failure(e);
  const size_t dims = input.size() - 2;
  if (weight.size() != input.size())
    return ShapeOrError::failure("weight must have the input's rank " +
                                 std::to_string(input.size()) + " [M, C/groups, k...], got " +
                                 formatShape(weight));
  if (dilations.size() != dims)
    return ShapeOrError::failure("dilations must have " + std::to_string(dims) + " values");
  if (std::string e = checkWindowAttrs(dims, strides, pads, dilations); !e.empty())
    return ShapeOrError::failure(e);
  if (std::string e = checkGroups(weight, input[1], weight[0], weight[1] * groups, groups);
      !e.empty())
    return ShapeOrError::failure(e);
  Shape out{input[0], weight[0]};
  for (size_t i = 0; i < dims; ++i) {
    out.push_back(pooledSize(input[2 + i], weight[2 + i], strides[i], pads[i], pads[dims + i],
                             dilations[i], /*ceilMode=*/false));
    if (out.back() <= 0)
      return ShapeOrError::failure("kernel " + formatShape(weight.dropFront(2)) +
                                   " does not fit the padded input " + formatShape(input));
  }
  return {out, ""};
}

ShapeOrError conv2dShape(Dims input, Dims weight, Dims strides, Dims pads, Dims dilations,
                         int64_t groups) {
  if (input.size() != 4)
    return ShapeOrError::failure("input must be NCHW (rank 4), got " + formatShape(input));
  if (weight.size() != 4)
    return ShapeOrError::failure("weight must be OIHW (rank 4), got " + formatShape(weight));
  return convShape(input, weight, strides, pads, dilations, groups);
}

ShapeOrError convTransposeShape(Dims input, Dims weight, Dims strides, Dims pads, Dims dilations,
                                Dims outputPadding, int64_t groups) {
  if (std::string e = checkSpatialRank(input); !e.empty())
    return ShapeOrError::failure(e);
  const size_t dims = input.size() - 2;
  if (weight.size() != input.size())
    return ShapeOrError::failure("weight must have the input's rank " +
                                 std::to_string(input.size()) + " [C, M/groups, k...], got " +
                                 formatShape(weight));
  if (dilations.size() != dims)
    return ShapeOrError::failure("dilations must have " + std::to_string(dims) + " values");
  if (std::string e = checkWindowAttrs(dims, strides, pads, dilations,
                                       /*negativePads=*/true);
      !e.empty())
    return ShapeOrError::failure(e);
  if (outputPadding.size() != dims)
    return ShapeOrError::failure("output_padding must have " + std::to_string(dims) +
                                 " values, got " + std::to_string(outputPadding.size()));
  if (groups <= 0)
    return ShapeOrError::failure("groups must be positive, got " + std::to_string(groups));
  if (std::string e = checkGroups(weight, input[1], weight[1] * groups, weight[0], groups);
      !e.empty())
    return ShapeOrError::failure(e);
  Shape out{input[0], weight[1] * groups};
  for (size_t i = 0; i < dims; ++i) {
    // ONNX allows output padding below the stride or the dilation.
    if (outputPadding[i] < 0 || outputPadding[i] >= std::max(strides[i], dilations[i]))
      return ShapeOrError::failure("output_padding " + formatShape(outputPadding) +
                                   " must be non-negative and below the stride or the dilation");
    int64_t size = transposedSize(input[2 + i], weight[2 + i], strides[i], pads[i], pads[dims + i],
                                  dilations[i], outputPadding[i]);
    if (input[2 + i] <= 0 || weight[2 + i] <= 0 || size <= 0)
      return ShapeOrError::failure("pads " + formatShape(pads) + " leave no output of input " +
                                   formatShape(input) + " and kernel " +
                                   formatShape(weight.dropFront(2)));
    out.push_back(size);
  }
  return {out, ""};
}

ShapeOrError poolShape(Dims input, Dims kernel, Dims strides, Dims pads, Dims dilations,
                       bool ceilMode) {
  if (std::string e = checkSpatialRank(input); !e.empty())
    return ShapeOrError::failure(e);
  const size_t dims = input.size() - 2;
  if (kernel.size() != dims || anyOf(kernel, [](int64_t k) { return k <= 0; }))
    return ShapeOrError::failure("kernel_shape must be " + std::to_string(dims) +
                                 " positive values, got " + formatShape(kernel));
  if (std::string e = checkWindowAttrs(dims, strides, pads, dilations); !e.empty())
    return ShapeOrError::failure(e);
  Shape out{input[0], input[1]};
  for (size_t i = 0; i < dims; ++i) {
    if (pads[i] >= kernel[i] || pads[dims + i] >= kernel[i])
      return ShapeOrError::failure("pads " + formatShape(pads) +
                                   " must be smaller than kernel_shape " + formatShape(kernel));
    int64_t dilation = dilations.empty() ? 1 : dilations[i];
    out.push_back(pooledSize(input[2 + i], kernel[i], strides[i], pads[i], pads[dims + i], dilation,
                             ceilMode));
    if (out.back() <= 0)
      return ShapeOrError::failure("window " + formatShape(kernel) +
                                   " does not fit the padded input " + formatShape(input));
  }
  return {out, ""};
}

ShapeOrError pool2dShape(Dims input, Dims kernel, Dims strides, Dims pads, Dims dilations,
                         bool ceilMode) {
  if (input.size() != 4)
    return ShapeOrError::failure("input must be NCHW (rank 4), got " + formatShape(input));
  return poolShape(input, kernel, strides, pads, dilations, ceilMode);
}

ShapeOrError reduceShape(Dims input, Dims axes, bool keepDims) {
  if (axes.empty())
    return ShapeOrError::failure("axes must not be empty");
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(input.size()))
      return ShapeOrError::failure("axis " + std::to_string(axes[i]) +
                                   " is out of range for rank " + std::to_string(input.size()));
    if (i > 0 && axes[i] <= axes[i - 1])
      return ShapeOrError::failure("axes must be strictly increasing, got " + formatShape(axes));
  }
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(input.size()); ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    if (!reduced)
      out.push_back(input[d]);
    else if (keepDims)
      out.push_back(1);
  }
  return {out, ""};
}

ShapeOrError transposeShape(Dims input, Dims perm) {
  if (perm.size() != input.size())
    return ShapeOrError::failure("perm has " + std::to_string(perm.size()) + " entries for rank " +
                                 std::to_string(input.size()));
  std::vector<bool> seen(input.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p])
      return ShapeOrError::failure("perm " + formatShape(perm) + " is not a permutation");
    seen[p] = true;
    out.push_back(input[p]);
  }
  return {out, ""};
}

ShapeOrError concatShape(const std::vector<Dims> &inputs, int64_t axis) {
  if (inputs.empty())
    return ShapeOrError::failure("needs at least one input");
  const auto &first = inputs.front();
  if (axis < 0 || axis >= static_cast<int64_t>(first.size()))
    return ShapeOrError::failure("axis " + std::to_string(axis) + " is out of range for rank " +
                                 std::to_string(first.size()));
  Shape out(first.begin(), first.end());
  for (size_t i = 1; i < inputs.size(); ++i) {
    const auto &s = inputs[i];
    bool compatible = s.size() == first.size();
    for (size_t d = 0; compatible && d < s.size(); ++d)
      compatible = static_cast<int64_t>(d) == axis || s[d] == first[d];
    if (!compatible)
      return ShapeOrError::failure("input #" + std::to_string(i) + " " + formatShape(s) +
                                   " does not match " + formatShape(first) + " off axis " +
                                   std::to_string(axis));
    out[axis] += s[axis];
  }
  return {out, ""};
}

ShapeOrError gatherShape(Dims data, Dims indices, int64_t axis) {
  if (axis < 0 || axis >= static_cast<int64_t>(data.size()))
    return ShapeOrError::failure("axis " + std::to_string(axis) + " is out of range for rank " +
                                 std::to_string(data.size()));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return {out, ""};
}

namespace {
/// The rule an axis out of [0, rank) breaks, or empty.
std::string axisError(int64_t axis, size_t rank) {
  if (axis >= 0 && axis < static_cast<int64_t>(rank))
    return "";
  return "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank);
}
} // namespace

ShapeOrError gatherElementsShape(Dims data, Dims indices, int64_t axis) {
  if (std::string e = axisError(axis, data.size()); !e.empty())
    return ShapeOrError::failure(e);
  if (indices.size() != data.size())
    return ShapeOrError::failure("indices have rank " + std::to_string(indices.size()) +
                                 ", data has rank " + std::to_string(data.size()));
  for (size_t d = 0; d < data.size(); ++d)
    if (static_cast<int64_t>(d) != axis && indices[d] > data[d])
      return ShapeOrError::failure("indices " + formatShape(indices) + " exceed data " +
                                   formatShape(data) + " in dim " + std::to_string(d));
  return {Shape(indices.begin(), indices.end()), ""};
}

ShapeOrError gatherNdShape(Dims data, Dims indices, int64_t batchDims) {
  const int64_t r = data.size(), q = indices.size();
  if (q < 1)
    return ShapeOrError::failure("indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return ShapeOrError::failure("batch_dims " + std::to_string(batchDims) +
                                 " must be in [0, min(data rank, indices rank))");
  const int64_t m = indices.back();
  if (m < 1 || m > r - batchDims)
    return ShapeOrError::failure("the last dim of indices " + formatShape(indices) +
                                 " must be in [1, " + std::to_string(r - batchDims) + "]");
  for (int64_t d = 0; d < batchDims; ++d)
    if (data[d] != indices[d])
      return ShapeOrError::failure("batch dim " + std::to_string(d) + " differs: data " +
                                   formatShape(data) + ", indices " + formatShape(indices));
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + batchDims + m, data.end());
  return {out, ""};
}

ShapeOrError argReduceShape(Dims input, int64_t axis, bool keepDims) {
  if (std::string e = axisError(axis, input.size()); !e.empty())
    return ShapeOrError::failure(e);
  if (input[axis] == 0)
    return ShapeOrError::failure("axis " + std::to_string(axis) + " of " + formatShape(input) +
                                 " is empty");
  return reduceShape(input, {axis}, keepDims);
}

ShapeOrError topKShape(Dims input, int64_t axis, int64_t k) {
  if (std::string e = axisError(axis, input.size()); !e.empty())
    return ShapeOrError::failure(e);
  if (k < 0 || k > input[axis])
    return ShapeOrError::failure("k " + std::to_string(k) + " is out of range [0, " +
                                 std::to_string(input[axis]) + "] for axis " +
                                 std::to_string(axis));
  Shape out(input.begin(), input.end());
  out[axis] = k;
  return {out, ""};
}

ShapeOrError axisPreservingShape(Dims input, int64_t axis) {
  if (std::string e = axisError(axis, input.size()); !e.empty())
    return ShapeOrError::failure(e);
  return {Shape(input.begin(), input.end()), ""};
}

std::string checkSliceBounds(Dims input, Dims starts, Dims steps, Dims counts) {
  if (starts.size() != input.size() || steps.size() != input.size() ||
      counts.size() != input.size())
    return "starts and steps need one value per dimension (" + std::to_string(input.size()) + ")";
  for (size_t d = 0; d < input.size(); ++d) {
    if (steps[d] == 0)
      return "step of dimension " + std::to_string(d) + " is zero";
    if (counts[d] == 0)
      continue;
    // The last index read, in 128 bits: a count and a step may each be
    // large, their product may not fit int64.
    const __int128 last =
        static_cast<__int128>(starts[d]) + static_cast<__int128>(counts[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= input[d] || last < 0 || last >= input[d])
      return "dimension " + std::to_string(d) + " reads indices " + std::to_string(starts[d]) +
             " to " + std::to_string(static_cast<long long>(last)) + " outside [0, " +
             std::to_string(input[d]) + ")";
  }
  return "";
}

} // namespace mixprec::shapes
