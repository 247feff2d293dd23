//===- Routines.cpp - decoding and verification of routine routines -------===//
//
// The reference kernels assert their shape preconditions only in debug
// builds, so everything they rely on to stay in bounds is checked here, at
// load time, with a message naming the op and the rule.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/Routines.h"

#include "runtime/kernels/Indexing.h"
#include "runtime/kernels/IntElementwise.h"
#include "runtime/kernels/Kernels.h"

#include "common/Shapes.h"
#include "common/numerics/BlockScaling.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace mixprec::runtime {
namespace {

/// Bound on window, stride, dilation and pad attributes: keeps the output
/// size arithmetic of shapes::pooledSize far from overflow.
constexpr int64_t kMaxWindowAttr = int64_t(1) << 31;

/// A routine: its op_type, its kind and the options table it takes (the
/// schema's list at table Routine).
struct OpTypeEntry {
  const char *name;
  RoutineKind kind;
  schema::RoutineOptions options;
};

using Options = schema::RoutineOptions;
constexpr OpTypeEntry kOpTypes[] = {
    {"conv2d", RoutineKind::Conv2d, Options::Conv2dOptions},
    {"max_pool2d", RoutineKind::MaxPool2d, Options::Pool2dOptions},
    {"avg_pool2d", RoutineKind::AvgPool2d, Options::Pool2dOptions},
    {"transpose", RoutineKind::Transpose, Options::TransposeOptions},
    {"slice", RoutineKind::Slice, Options::SliceOptions},
    {"concat", RoutineKind::Concat, Options::AxisOptions},
    {"gather", RoutineKind::Gather, Options::AxisOptions},
    {"softmax", RoutineKind::Softmax, Options::AxisOptions},
    {"log_softmax", RoutineKind::LogSoftmax, Options::AxisOptions},
    {"layer_norm", RoutineKind::LayerNorm, Options::NormOptions},
    {"rms_norm", RoutineKind::RmsNorm, Options::NormOptions},
    {"batch_norm", RoutineKind::BatchNorm, Options::BatchNormOptions},
    {"reduce_sum", RoutineKind::ReduceSum, Options::ReduceOptions},
    {"reduce_mean", RoutineKind::ReduceMean, Options::ReduceOptions},
    {"reduce_max", RoutineKind::ReduceMax, Options::ReduceOptions},
    {"fp8_scale", RoutineKind::Fp8Scale, Options::Fp8ScaleOptions},
    {"matmul", RoutineKind::Matmul, Options::MatmulOptions},
    {"gather_elements", RoutineKind::GatherElements, Options::AxisOptions},
    {"gather_nd", RoutineKind::GatherNd, Options::GatherNdOptions},
    {"arg_max", RoutineKind::ArgMax, Options::ArgReduceOptions},
    {"arg_min", RoutineKind::ArgMin, Options::ArgReduceOptions},
    {"topk", RoutineKind::TopK, Options::TopKOptions},
    {"cumsum", RoutineKind::CumSum, Options::CumSumOptions},
    {"reduce_prod", RoutineKind::ReduceProd, Options::ReduceOptions},
    {"scatter_nd", RoutineKind::ScatterNd, Options::ScatterNdOptions},
    {"conv", RoutineKind::Conv, Options::ConvOptions},
    {"conv_transpose", RoutineKind::ConvTranspose, Options::ConvOptions},
    {"max_pool", RoutineKind::MaxPool, Options::PoolOptions},
    {"avg_pool", RoutineKind::AvgPool, Options::PoolOptions},
    {"max_pool_indices", RoutineKind::MaxPoolIndices, Options::PoolOptions},
    {"int_elementwise", RoutineKind::IntElementwise, Options::IntElementwiseOptions},
    {"attention", RoutineKind::Attention, Options::AttentionOptions},
    {"attention_grad", RoutineKind::AttentionGrad, Options::AttentionOptions},
    {"block_scale", RoutineKind::BlockScale, Options::BlockScaleOptions},
    {"block_quantize", RoutineKind::BlockQuantize, Options::BlockScaleOptions},
    {"block_scaled_gemm", RoutineKind::BlockScaledGemm, Options::BlockGemmOptions},
    {"all_reduce", RoutineKind::AllReduce, Options::AllReduceOptions},
    {"rank_slice", RoutineKind::RankSlice, Options::ShardOptions},
    {"all_gather", RoutineKind::AllGather, Options::ShardOptions},
};

/// The schema's name of an options table, or its number when this runtime
/// does not know it.
std::string optionsName(schema::RoutineOptions type) {
  if (type == Options::NONE)
    return "none";
  const char *name = schema::EnumNameRoutineOptions(type);
  return name && *name ? std::string(name)
                       : "options type " + std::to_string(static_cast<int>(type)) +
                             " (unknown to this runtime)";
}

std::string knownOpTypes() {
  std::string list;
  for (const OpTypeEntry &e : kOpTypes)
    list += (list.empty() ? "" : ", ") + std::string(e.name);
  return list;
}

/// Checks one routine op; `fail` builds the error with the op's name.
class RoutineVerifier {
public:
  RoutineVerifier(const schema::Routine &op, const std::vector<TensorDesc> &tensors, RoutineOp &out)
      : op(op), tensors(tensors), out(out) {}

  Status run();

private:
  Status fail(const std::string &what) const { return invalidModule(out.name + ": " + what); }

  const TensorDesc &in(size_t i) const { return tensors[out.inputs[i]]; }
  const TensorDesc &result() const { return tensors[out.output]; }
  bool hasInput(size_t i) const { return i < out.inputs.size() && out.inputs[i] >= 0; }

  /// The options table, of the type run() checked.
  template <typename T> const T &options() const { return *op.options_as<T>(); }
  /// Decodes the strides, pads and dilations of a 2-D window table (also
  /// as out.window, which the backends run every window routine with).
  template <typename T> void readWindow(const T &o) {
    out.strides = {o.stride_h(), o.stride_w()};
    out.pads = {o.pad_top(), o.pad_left(), o.pad_bottom(), o.pad_right()};
    out.dilations = {o.dilation_h(), o.dilation_w()};
    out.window.strides.assign(out.strides.begin(), out.strides.end());
    out.window.pads.assign(out.pads.begin(), out.pads.end());
    out.window.dilations.assign(out.dilations.begin(), out.dilations.end());
  }

  Status operands(size_t minInputs, size_t maxInputs, size_t optionalFrom);
  Status listField(const flatbuffers::Vector<int64_t> *field, const char *name,
                   size_t count, std::vector<int64_t> &values) const;
  Status floatTensor(const TensorDesc &t, const char *role) const;
  Status axisAttr(int64_t value, size_t rank, int64_t &axis) const;
  Status sameShape(const TensorDesc &a, const TensorDesc &b) const;
  Status expectShape(const shapes::ShapeOrError &rule, const TensorDesc &y,
                     const std::string &context = "") const;
  Status windowAttrs() const;
  Status planeOutput(int64_t kh, int64_t kw, bool ceilMode) const;

  Status conv2d();
  Status pool2d(bool isMax);
  Status spatialRank(size_t &dims) const;
  Status windowLists(const flatbuffers::Vector<int64_t> *strides,
                     const flatbuffers::Vector<int64_t> *pads,
                     const flatbuffers::Vector<int64_t> *dilations, size_t dims,
                     bool negativePads);
  Status spatialOutput(const std::vector<int64_t> &expected) const;
  Status convChannels(int64_t m, int64_t inChannels) const;
  Status convNd();
  Status poolNd();
  Status transpose();
  Status slice();
  Status concat();
  Status gatherAlongAxis();
  Status gather();
  Status axisNormalization(int64_t axis, bool isNorm, size_t maxInputs);
  Status batchNorm();
  Status reduce();
  Status matmul();
  Status fp8Scale();
  Status allReduce();
  Status shard();
  Status collectiveDTypes() const;
  Status indexTensor(const TensorDesc &t) const;
  Status numericTensor(const TensorDesc &t, const char *role) const;
  Status gatherElements();
  Status gatherNd();
  Status argReduce();
  Status topK();
  Status cumSum();
  Status scatterNd();
  Status intElementwise();
  Status attention();
  Status blockScaling();
  Status blockScaledGemm();

  const schema::Routine &op;
  const std::vector<TensorDesc> &tensors;
  RoutineOp &out;
};

Status RoutineVerifier::operands(size_t minInputs, size_t maxInputs, size_t optionalFrom) {
  if (out.inputs.size() < minInputs || out.inputs.size() > maxInputs)
    return fail("takes " +
                (minInputs == maxInputs ? std::to_string(minInputs)
                                        : std::to_string(minInputs) + " to " +
                                              std::to_string(maxInputs)) +
                " inputs, got " + std::to_string(out.inputs.size()));
  for (size_t i = 0; i < out.inputs.size(); ++i)
    if (out.inputs[i] < 0 && i < optionalFrom)
      return fail("input #" + std::to_string(i) + " is required, got -1");
  return okStatus();
}

/// Copies the list option `name`, which must have `count` entries (any
/// number for SIZE_MAX; an absent list has none).
Status RoutineVerifier::listField(const flatbuffers::Vector<int64_t> *field, const char *name,
                                 size_t count, std::vector<int64_t> &values) const {
  const size_t size = field ? field->size() : 0;
  // The FlatBuffers verifier checks a vector's length word (4-byte
  // alignment) but not that its 8-byte elements are 8-byte aligned; a forged
  // offset can misalign them, and reading them would be undefined behaviour.
  if (size && reinterpret_cast<uintptr_t>(field->data()) % alignof(int64_t) != 0)
    return fail(std::string(name) + " vector is misaligned");
  if (count != SIZE_MAX && size != count)
    return fail(std::string(name) + " needs " + std::to_string(count) + " entries, got " +
                std::to_string(size));
  values.clear();
  if (field)
    values.assign(field->begin(), field->end());
  return okStatus();
}

Status RoutineVerifier::floatTensor(const TensorDesc &t, const char *role) const {
  if (!isFloatDType(t.dtype))
    return fail(std::string(role) + " '" + t.name + "' must be a float tensor, got " +
                dtypeName(t.dtype));
  return okStatus();
}

Status RoutineVerifier::axisAttr(int64_t value, size_t rank, int64_t &axis) const {
  axis = cpu::normalizeAxis(value, static_cast<int64_t>(rank));
  if (axis < 0)
    return fail("axis " + std::to_string(value) + " is out of range for rank " +
                std::to_string(rank));
  return okStatus();
}

/// Checks `y` against the shape `rule` gives (common/Shapes.h, the rules the
/// compiler verified the graph with), or reports the rule the operands
/// break, after `context` where given.
Status RoutineVerifier::expectShape(const shapes::ShapeOrError &rule, const TensorDesc &y,
                                    const std::string &context) const {
  if (!rule.ok())
    return fail(context.empty() ? rule.error : context + ": " + rule.error);
  if (y.shape != rule.shape)
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) + ", expected " +
                formatShape(rule.shape));
  return okStatus();
}

Status RoutineVerifier::sameShape(const TensorDesc &a, const TensorDesc &b) const {
  if (a.shape != b.shape)
    return fail("'" + b.name + "' has shape " + formatShape(b.shape) + ", expected " +
                formatShape(a.shape));
  return okStatus();
}

/// Bounds the window, strides and pads decoded into `out`.
Status RoutineVerifier::windowAttrs() const {
  for (int64_t v : out.kernel)
    if (v < 1 || v > kMaxWindowAttr)
      return fail("kernel size " + std::to_string(v) + " out of range [1, 2^31]");
  for (int64_t v : out.strides)
    if (v < 1 || v > kMaxWindowAttr)
      return fail("stride " + std::to_string(v) + " out of range [1, 2^31]");
  for (int64_t v : out.pads)
    if (v < 0 || v > kMaxWindowAttr)
      return fail("pad " + std::to_string(v) + " out of range [0, 2^31]");
  return okStatus();
}

/// Checks x [N,C,H,W] -> y [N,C',OH,OW] with OH/OW as ONNX computes them.
Status RoutineVerifier::planeOutput(int64_t kh, int64_t kw, bool ceilMode) const {
  for (int64_t v : out.dilations)
    if (v < 1 || v > kMaxWindowAttr)
      return fail("dilation " + std::to_string(v) + " out of range [1, 2^31]");
  const TensorDesc &x = in(0), &y = result();
  int64_t oh = shapes::pooledSize(x.shape[2], kh, out.strides[0], out.pads[0], out.pads[2],
                                  out.dilations[0], ceilMode);
  int64_t ow = shapes::pooledSize(x.shape[3], kw, out.strides[1], out.pads[1], out.pads[3],
                                  out.dilations[1], ceilMode);
  if (oh <= 0 || ow <= 0)
    return fail("the window does not fit the padded input " + formatShape(x.shape));
  if (y.shape[2] != oh || y.shape[3] != ow)
    return fail("output '" + y.name + "' has spatial size [" + std::to_string(y.shape[2]) + "," +
                std::to_string(y.shape[3]) + "], the attributes give [" + std::to_string(oh) +
                "," + std::to_string(ow) + "]");
  return okStatus();
}

Status RoutineVerifier::conv2d() {
  if (Status s = operands(2, 3, 2); !s.ok())
    return s;
  const schema::Conv2dOptions &o = options<schema::Conv2dOptions>();
  readWindow(o);
  out.groups = o.groups();
  out.tf32 = o.tf32();
  const TensorDesc &x = in(0), &w = in(1), &y = result();
  for (const TensorDesc *t : {&x, &w, &y})
    if (t->shape.size() != 4)
      return fail("'" + t->name + "' must have rank 4, got " + formatShape(t->shape));
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (Status s = floatTensor(w, "weight"); !s.ok())
    return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  if (Status s = windowAttrs(); !s.ok())
    return s;
  if (Status s = convChannels(w.shape[0], w.shape[1] * out.groups); !s.ok())
    return s;
  return planeOutput(w.shape[2], w.shape[3], false);
}

Status RoutineVerifier::pool2d(bool isMax) {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const schema::Pool2dOptions &o = options<schema::Pool2dOptions>();
  out.kernel = {o.kernel_h(), o.kernel_w()};
  out.window.kernel.assign(out.kernel.begin(), out.kernel.end());
  readWindow(o);
  out.ceilMode = o.ceil_mode();
  out.countIncludePad = o.count_include_pad();
  if (isMax && out.countIncludePad)
    return fail("count_include_pad applies to avg_pool2d only");
  const TensorDesc &x = in(0), &y = result();
  for (const TensorDesc *t : {&x, &y})
    if (t->shape.size() != 4)
      return fail("'" + t->name + "' must have rank 4, got " + formatShape(t->shape));
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  if (Status s = windowAttrs(); !s.ok())
    return s;
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1])
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) + ", expected [" +
                std::to_string(x.shape[0]) + "," + std::to_string(x.shape[1]) + ",..]");
  return planeOutput(out.kernel[0], out.kernel[1], out.ceilMode);
}

/// The spatial dims of input 0 ([N, C, D...]): 1 to 3; the output has its rank.
Status RoutineVerifier::spatialRank(size_t &dims) const {
  const TensorDesc &x = in(0), &y = result();
  if (x.shape.size() < 3 || x.shape.size() > 5)
    return fail("'" + x.name + "' must be [N, C, D...] with 1 to 3 spatial dims, got " +
                formatShape(x.shape));
  if (y.shape.size() != x.shape.size())
    return fail("output '" + y.name + "' must have rank " + std::to_string(x.shape.size()) +
                ", got " + formatShape(y.shape));
  dims = x.shape.size() - 2;
  return okStatus();
}

/// Decodes the strides, pads and dilations of an N-D window into
/// out.window (one entry per spatial dim, pads twice as many) and bounds
/// them; a transposed convolution's pads may be negative.
Status RoutineVerifier::windowLists(const flatbuffers::Vector<int64_t> *strides,
                                   const flatbuffers::Vector<int64_t> *pads,
                                   const flatbuffers::Vector<int64_t> *dilations, size_t dims,
                                   bool negativePads) {
  cpu::Window &w = out.window;
  if (Status s = listField(strides, "strides", dims, w.strides); !s.ok())
    return s;
  if (Status s = listField(pads, "pads", 2 * dims, w.pads); !s.ok())
    return s;
  if (Status s = listField(dilations, "dilations", dims, w.dilations); !s.ok())
    return s;
  for (int64_t v : w.kernel)
    if (v < 1 || v > kMaxWindowAttr)
      return fail("kernel size " + std::to_string(v) + " out of range [1, 2^31]");
  for (int64_t v : w.strides)
    if (v < 1 || v > kMaxWindowAttr)
      return fail("stride " + std::to_string(v) + " out of range [1, 2^31]");
  for (int64_t v : w.dilations)
    if (v < 1 || v > kMaxWindowAttr)
      return fail("dilation " + std::to_string(v) + " out of range [1, 2^31]");
  for (int64_t v : w.pads)
    if (v < (negativePads ? -kMaxWindowAttr : 0) || v > kMaxWindowAttr)
      return fail("pad " + std::to_string(v) + " out of range [" +
                  (negativePads ? "-2^31" : "0") + ", 2^31]");
  return okStatus();
}

/// Checks that the output's spatial dims are `expected`.
Status RoutineVerifier::spatialOutput(const std::vector<int64_t> &expected) const {
  const TensorDesc &x = in(0), &y = result();
  std::vector<int64_t> got(y.shape.begin() + 2, y.shape.end());
  for (int64_t d : expected)
    if (d <= 0)
      return fail("the window does not fit the padded input " + formatShape(x.shape));
  if (got != expected)
    return fail("output '" + y.name + "' has spatial size " + formatShape(got) +
                ", the attributes give " + formatShape(expected));
  return okStatus();
}

/// The channel rules of a convolution with `m` output channels whose weight
/// expects `inChannels` input channels: out.groups divides both and
/// inChannels is the input's, the kernel window is not empty, the bias (if
/// any) is float with m values, the output is [N, m, ...].
Status RoutineVerifier::convChannels(int64_t m, int64_t inChannels) const {
  const TensorDesc &x = in(0), &w = in(1), &y = result();
  const int64_t g = out.groups;
  if (g < 1 || x.shape[1] % g != 0 || m % g != 0 || inChannels != x.shape[1])
    return fail("groups " + std::to_string(g) + " do not divide input " + formatShape(x.shape) +
                " and weight " + formatShape(w.shape));
  for (size_t d = 2; d < w.shape.size(); ++d)
    if (w.shape[d] < 1)
      return fail("weight '" + w.name + "' has an empty kernel window " + formatShape(w.shape));
  if (hasInput(2)) {
    if (Status s = floatTensor(in(2), "bias"); !s.ok())
      return s;
    if (in(2).elements != m)
      return fail("bias '" + in(2).name + "' has " + std::to_string(in(2).elements) +
                  " elements, expected " + std::to_string(m));
  }
  if (y.shape[0] != x.shape[0] || y.shape[1] != m)
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) +
                ", expected [N,M,..] = [" + std::to_string(x.shape[0]) + "," + std::to_string(m) +
                ",..]");
  return okStatus();
}

/// conv and conv_transpose.
Status RoutineVerifier::convNd() {
  if (Status s = operands(2, 3, 2); !s.ok())
    return s;
  const bool transposed = out.kind == RoutineKind::ConvTranspose;
  const schema::ConvOptions &o = options<schema::ConvOptions>();
  size_t dims = 0;
  if (Status s = spatialRank(dims); !s.ok())
    return s;
  const TensorDesc &x = in(0), &w = in(1), &y = result();
  if (w.shape.size() != x.shape.size())
    return fail("weight '" + w.name + "' must have rank " + std::to_string(x.shape.size()) +
                ", got " + formatShape(w.shape));
  for (auto [t, role] : {std::pair{&x, "input"}, {&w, "weight"}, {&y, "output"}})
    if (Status s = floatTensor(*t, role); !s.ok())
      return s;
  if (Status s = windowLists(o.strides(), o.pads(), o.dilations(), dims, transposed); !s.ok())
    return s;
  if (Status s = listField(o.output_padding(), "output_padding", transposed ? dims : 0,
                           out.outputPadding);
      !s.ok())
    return s;
  out.groups = o.groups();
  out.tf32 = o.tf32();
  const int64_t g = out.groups;
  if (g < 1 || g > kMaxWindowAttr)
    return fail("groups " + std::to_string(g) + " out of range [1, 2^31]");
  // Weight [M, C/g, k...] (conv) or [C, M/g, k...] (conv_transpose).
  if (Status s = transposed ? convChannels(w.shape[1] * g, w.shape[0])
                            : convChannels(w.shape[0], w.shape[1] * g);
      !s.ok())
    return s;
  const cpu::Window &win = out.window;
  std::vector<int64_t> expected;
  for (size_t s = 0; s < dims; ++s) {
    const int64_t k = w.shape[2 + s];
    if (!transposed) {
      expected.push_back(shapes::pooledSize(x.shape[2 + s], k, win.strides[s], win.pads[s],
                                            win.pads[dims + s], win.dilations[s], false));
      continue;
    }
    const int64_t pad = out.outputPadding[s];
    if (pad < 0 || pad >= std::max(win.strides[s], win.dilations[s]))
      return fail("output_padding " + formatShape(out.outputPadding) +
                  " must be non-negative and below the stride or the dilation");
    if (x.shape[2 + s] < 1)
      return fail("input '" + x.name + "' has an empty spatial dim " + formatShape(x.shape));
    expected.push_back(shapes::transposedSize(x.shape[2 + s], k, win.strides[s], win.pads[s],
                                              win.pads[dims + s], win.dilations[s], pad));
  }
  return spatialOutput(expected);
}

/// max_pool, avg_pool and max_pool_indices.
Status RoutineVerifier::poolNd() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const schema::PoolOptions &o = options<schema::PoolOptions>();
  size_t dims = 0;
  if (Status s = spatialRank(dims); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  if (Status s = listField(o.kernel(), "kernel", dims, out.window.kernel); !s.ok())
    return s;
  if (Status s = windowLists(o.strides(), o.pads(), o.dilations(), dims, false); !s.ok())
    return s;
  out.ceilMode = o.ceil_mode();
  out.countIncludePad = o.count_include_pad();
  if (out.countIncludePad && out.kind != RoutineKind::AvgPool)
    return fail("count_include_pad applies to avg_pool only");
  const bool indices = out.kind == RoutineKind::MaxPoolIndices;
  if (o.storage_order() != 0 && (!indices || o.storage_order() != 1))
    return fail("storage_order " + std::to_string(o.storage_order()) +
                (indices ? " must be 0 or 1" : " applies to max_pool_indices only"));
  out.columnMajor = o.storage_order() == 1;
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (indices ? y.dtype != schema::DType::I64 : !isFloatDType(y.dtype))
    return fail("output '" + y.name + "' must be " + (indices ? "i64" : "a float tensor") +
                ", got " + dtypeName(y.dtype));
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1])
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) + ", expected [" +
                std::to_string(x.shape[0]) + "," + std::to_string(x.shape[1]) + ",..]");
  const cpu::Window &win = out.window;
  std::vector<int64_t> expected;
  for (size_t s = 0; s < dims; ++s)
    expected.push_back(shapes::pooledSize(x.shape[2 + s], win.kernel[s], win.strides[s],
                                          win.pads[s], win.pads[dims + s], win.dilations[s],
                                          out.ceilMode));
  return spatialOutput(expected);
}

Status RoutineVerifier::transpose() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  const size_t rank = x.shape.size();
  if (Status s = listField(options<schema::TransposeOptions>().perm(), "perm", rank, out.perm);
      !s.ok())
    return s;
  return expectShape(shapes::transposeShape(x.shape, out.perm), y);
}

Status RoutineVerifier::slice() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  const size_t rank = x.shape.size();
  const schema::SliceOptions &o = options<schema::SliceOptions>();
  if (Status s = listField(o.starts(), "starts", rank, out.starts); !s.ok())
    return s;
  if (Status s = listField(o.steps(), "steps", rank, out.steps); !s.ok())
    return s;
  if (y.shape.size() != rank)
    return fail("output '" + y.name + "' has rank " + std::to_string(y.shape.size()) +
                ", input has " + std::to_string(rank));
  for (size_t d = 0; d < rank; ++d)
    if (out.steps[d] == 0 || out.steps[d] > kMaxElements || out.steps[d] < -kMaxElements)
      return fail("step of dim " + std::to_string(d) + " is " + std::to_string(out.steps[d]));
  if (std::string e = shapes::checkSliceBounds(x.shape, out.starts, out.steps, y.shape); !e.empty())
    return fail(e);
  return okStatus();
}

Status RoutineVerifier::concat() {
  if (Status s = operands(1, 1u << 16, 1u << 16); !s.ok())
    return s;
  const TensorDesc &y = result();
  const size_t rank = y.shape.size();
  if (rank == 0)
    return fail("cannot concatenate scalars");
  if (Status s = axisAttr(options<schema::AxisOptions>().axis(), rank, out.axis); !s.ok())
    return s;
  // Each dim is below 2^48 and there are at most 2^16 inputs: the sum
  // along the axis fits.
  std::vector<shapes::Dims> inputs;
  for (size_t i = 0; i < out.inputs.size(); ++i)
    inputs.emplace_back(in(i).shape);
  return expectShape(shapes::concatShape(inputs, out.axis), y);
}

/// What gather and gather_elements share: data, indices and an axis of the data.
Status RoutineVerifier::gatherAlongAxis() {
  if (Status s = operands(2, 2, 2); !s.ok())
    return s;
  if (Status s = indexTensor(in(1)); !s.ok())
    return s;
  if (in(0).shape.empty())
    return fail("cannot gather from a scalar");
  return axisAttr(options<schema::AxisOptions>().axis(), in(0).shape.size(), out.axis);
}

Status RoutineVerifier::gather() {
  if (Status s = gatherAlongAxis(); !s.ok())
    return s;
  return expectShape(shapes::gatherShape(in(0).shape, in(1).shape, out.axis), result());
}

Status RoutineVerifier::indexTensor(const TensorDesc &t) const {
  if (t.dtype != schema::DType::I64 && t.dtype != schema::DType::I32)
    return fail("indices '" + t.name + "' must be i64 or i32, got " + dtypeName(t.dtype));
  return okStatus();
}

/// The inputs arg_max, topk and cumsum take: floats, i32 or i64.
Status RoutineVerifier::numericTensor(const TensorDesc &t, const char *role) const {
  if (!isFloatDType(t.dtype) && t.dtype != schema::DType::I64 && t.dtype != schema::DType::I32)
    return fail(std::string(role) + " '" + t.name + "' must be a float, i32 or i64 tensor, got " +
                dtypeName(t.dtype));
  return okStatus();
}

Status RoutineVerifier::gatherElements() {
  if (Status s = gatherAlongAxis(); !s.ok())
    return s;
  return expectShape(shapes::gatherElementsShape(in(0).shape, in(1).shape, out.axis), result());
}

Status RoutineVerifier::gatherNd() {
  if (Status s = operands(2, 2, 2); !s.ok())
    return s;
  const TensorDesc &data = in(0), &idx = in(1), &y = result();
  if (Status s = indexTensor(idx); !s.ok())
    return s;
  out.batchDims = options<schema::GatherNdOptions>().batch_dims();
  return expectShape(shapes::gatherNdShape(data.shape, idx.shape, out.batchDims), y,
                     "data " + formatShape(data.shape) + " and indices " + formatShape(idx.shape) +
                         " do not fit batch_dims " + std::to_string(out.batchDims));
}

Status RoutineVerifier::argReduce() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const schema::ArgReduceOptions &o = options<schema::ArgReduceOptions>();
  const TensorDesc &x = in(0), &y = result();
  if (Status s = numericTensor(x, "input"); !s.ok())
    return s;
  if (y.dtype != schema::DType::I64)
    return fail("output '" + y.name + "' must be i64, got " + dtypeName(y.dtype));
  if (Status s = axisAttr(o.axis(), x.shape.size(), out.axis); !s.ok())
    return s;
  out.keepDims = o.keepdims();
  out.selectLast = o.select_last_index();
  return expectShape(shapes::argReduceShape(x.shape, out.axis, out.keepDims), y);
}

Status RoutineVerifier::topK() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const schema::TopKOptions &o = options<schema::TopKOptions>();
  const TensorDesc &x = in(0), &y = result();
  if (Status s = numericTensor(x, "input"); !s.ok())
    return s;
  if (Status s = axisAttr(o.axis(), x.shape.size(), out.axis); !s.ok())
    return s;
  out.k = o.k();
  out.largest = o.largest();
  out.writesIndices = o.indices();
  const shapes::ShapeOrError rule = shapes::topKShape(x.shape, out.axis, out.k);
  if (!rule.ok())
    return fail(rule.error);
  schema::DType want = out.writesIndices ? schema::DType::I64 : x.dtype;
  if (y.dtype != want)
    return fail("output '" + y.name + "' must be " + dtypeName(want) + ", got " +
                dtypeName(y.dtype));
  return expectShape(rule, y);
}

Status RoutineVerifier::cumSum() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const schema::CumSumOptions &o = options<schema::CumSumOptions>();
  const TensorDesc &x = in(0), &y = result();
  if (Status s = numericTensor(x, "input"); !s.ok())
    return s;
  if (y.dtype != x.dtype)
    return fail("output '" + y.name + "' is " + dtypeName(y.dtype) + ", the input is " +
                dtypeName(x.dtype));
  if (Status s = axisAttr(o.axis(), x.shape.size(), out.axis); !s.ok())
    return s;
  out.exclusive = o.exclusive();
  out.reverse = o.reverse();
  return sameShape(x, y);
}

/// int_elementwise: the op's operand count, integer (or bool) operands
/// and output (pow's exponent may be a float), each operand broadcasting
/// to the output's shape; comparisons write bool.
Status RoutineVerifier::intElementwise() {
  out.intOp = options<schema::IntElementwiseOptions>().op();
  if (out.intOp < 0 || out.intOp > cpu::kLastIntOp)
    return fail("op " + std::to_string(out.intOp) + " out of range [0, " +
                std::to_string(cpu::kLastIntOp) + "]");
  const auto kind = static_cast<cpu::IntOp>(out.intOp);
  const size_t arity = cpu::intOpArity(kind);
  if (Status s = operands(arity, arity, arity); !s.ok())
    return s;
  auto isInt = [](schema::DType d) {
    return d == schema::DType::I64 || d == schema::DType::I32 || d == schema::DType::Bool;
  };
  for (size_t i = 0; i < arity; ++i) {
    const TensorDesc &t = in(i);
    const bool floatExponent = kind == cpu::IntOp::Pow && i == 1 && isFloatDType(t.dtype);
    if (!isInt(t.dtype) && !floatExponent)
      return fail("input '" + t.name + "' must be an i64, i32 or bool tensor, got " +
                  dtypeName(t.dtype));
    const shapes::ShapeOrError joined = shapes::broadcastShapes(t.shape, result().shape);
    if (!joined.ok() || joined.shape != result().shape)
      return fail("input '" + t.name + "' " + formatShape(t.shape) +
                  " does not broadcast to the output " + formatShape(result().shape));
  }
  const bool compares = kind >= cpu::IntOp::Equal && kind <= cpu::IntOp::GreaterOrEqual;
  if (compares ? result().dtype != schema::DType::Bool : !isInt(result().dtype))
    return fail("output '" + result().name + "' must be " +
                (compares ? std::string("bool") : std::string("an i64, i32 or bool tensor")) +
                ", got " + dtypeName(result().dtype));
  return okStatus();
}

Status RoutineVerifier::scatterNd() {
  if (Status s = operands(3, 3, 3); !s.ok())
    return s;
  const TensorDesc &data = in(0), &idx = in(1), &updates = in(2), &y = result();
  if (Status s = numericTensor(data, "data"); !s.ok())
    return s;
  if (Status s = indexTensor(idx); !s.ok())
    return s;
  for (const TensorDesc *t : {&updates, &y})
    if (t->dtype != data.dtype)
      return fail("'" + t->name + "' is " + dtypeName(t->dtype) + ", the data is " +
                  dtypeName(data.dtype));
  out.scatterReduction = options<schema::ScatterNdOptions>().reduction();
  if (out.scatterReduction < 0 || out.scatterReduction > 4)
    return fail("reduction " + std::to_string(out.scatterReduction) + " out of range [0, 4]");
  // The updates hold one slice per index tuple: a gather_nd's output shape.
  const shapes::ShapeOrError expected = shapes::gatherNdShape(data.shape, idx.shape, 0);
  if (!expected.ok())
    return fail("indices " + formatShape(idx.shape) + " do not address data " +
                formatShape(data.shape) + ": " + expected.error);
  if (updates.shape != expected.shape)
    return fail("updates '" + updates.name + "' have shape " + formatShape(updates.shape) +
                ", expected " + formatShape(expected.shape));
  return sameShape(data, y);
}

/// attention: float q, k, v of one dtype, a float bias broadcasting to the
/// scores, the shapes of common/Shapes.h's rule; the output in v's dtype
/// or the FP32 log-sum-exp.
Status RoutineVerifier::attention() {
  const bool grad = out.kind == RoutineKind::AttentionGrad;
  // attention: q, k, v, (bias); attention_grad: q, k, v, out, lse, dout, (bias).
  const size_t biasIndex = grad ? 6 : 3;
  if (Status s = operands(biasIndex, biasIndex + 1, biasIndex); !s.ok())
    return s;
  const schema::AttentionOptions &o = options<schema::AttentionOptions>();
  out.attentionScale = o.scale();
  out.causal = o.causal();
  out.writesLse = !grad && o.lse();
  out.attentionGrad = grad ? o.grad() : 0;
  if (!std::isfinite(out.attentionScale))
    return fail("scale must be finite");
  if (out.attentionGrad < 0 || out.attentionGrad > 2)
    return fail("grad " + std::to_string(out.attentionGrad) + " out of range [0, 2]");
  const TensorDesc &q = in(0), &k = in(1), &v = in(2), &y = result();
  for (const TensorDesc *t : {&q, &k, &v})
    if (Status s = floatTensor(*t, "operand"); !s.ok())
      return s;
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    return fail(std::string("q, k and v must share one dtype, got ") + dtypeName(q.dtype) + ", " +
                dtypeName(k.dtype) + ", " + dtypeName(v.dtype));
  const bool hasBias = hasInput(biasIndex);
  if (hasBias) {
    if (Status s = floatTensor(in(biasIndex), "bias"); !s.ok())
      return s;
    if (in(biasIndex).shape.empty())
      return fail("bias must have rank >= 1");
  }
  const shapes::ShapeOrError rule = shapes::attentionShape(
      q.shape, k.shape, v.shape, hasBias ? in(biasIndex).shape : cpu::Shape{});
  if (!rule.ok())
    return fail(rule.error);
  const shapes::ShapeOrError rows{cpu::Shape(rule.shape.begin(), rule.shape.end() - 1), ""};
  if (grad) {
    const TensorDesc &o = in(3), &lse = in(4), &dout = in(5);
    for (const TensorDesc *t : {&o, &dout})
      if (Status s = floatTensor(*t, "operand"); !s.ok())
        return s;
    if (lse.dtype != schema::DType::F32)
      return fail("log-sum-exp '" + lse.name + "' must be f32, got " + dtypeName(lse.dtype));
    for (auto [t, want] : {std::pair(&o, &rule), std::pair(&dout, &rule), std::pair(&lse, &rows)})
      if (t->shape != want->shape)
        return fail("'" + t->name + "' has shape " + formatShape(t->shape) + ", expected " +
                    formatShape(want->shape));
    if (Status s = floatTensor(y, "output"); !s.ok())
      return s;
    const TensorDesc &operand = in(static_cast<size_t>(out.attentionGrad));
    return expectShape(shapes::ShapeOrError{operand.shape, ""}, y);
  }
  if (!out.writesLse) {
    if (y.dtype != v.dtype)
      return fail("output '" + y.name + "' must be " + dtypeName(v.dtype) + ", got " +
                  dtypeName(y.dtype));
    return expectShape(rule, y);
  }
  if (y.dtype != schema::DType::F32)
    return fail("log-sum-exp '" + y.name + "' must be f32, got " + dtypeName(y.dtype));
  return expectShape(rows, y);
}

/// softmax, log_softmax (isNorm false) and the norms over dims [axis, rank).
Status RoutineVerifier::axisNormalization(int64_t axis, bool isNorm, size_t maxInputs) {
  if (Status s = operands(1, maxInputs, 1); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  if (Status s = sameShape(x, y); !s.ok())
    return s;
  // softmax treats a scalar as one element; the norms need an axis.
  size_t rank = std::max<size_t>(x.shape.size(), isNorm ? 0 : 1);
  if (Status s = axisAttr(axis, rank, out.axis); !s.ok())
    return s;
  int64_t normalized = 1;
  for (size_t d = out.axis; d < x.shape.size(); ++d)
    normalized *= x.shape[d];
  for (size_t i = 1; i < out.inputs.size(); ++i) {
    if (!hasInput(i))
      continue;
    if (Status s = floatTensor(in(i), i == 1 ? "scale" : "bias"); !s.ok())
      return s;
    if (in(i).elements != normalized)
      return fail("'" + in(i).name + "' has " + std::to_string(in(i).elements) +
                  " elements, the normalized dims hold " + std::to_string(normalized));
  }
  return okStatus();
}

Status RoutineVerifier::matmul() {
  if (Status s = operands(2, 2, 2); !s.ok())
    return s;
  out.tf32 = options<schema::MatmulOptions>().tf32();
  const TensorDesc &a = in(0), &b = in(1), &y = result();
  for (const TensorDesc *t : {&a, &b, &y})
    if (Status s = floatTensor(*t, t == &y ? "output" : "operand"); !s.ok())
      return s;
  return expectShape(shapes::matmulShape(a.shape, b.shape), y,
                     "operands " + formatShape(a.shape) + " x " + formatShape(b.shape) +
                         " do not multiply");
}

Status RoutineVerifier::batchNorm() {
  if (Status s = operands(5, 5, 5); !s.ok())
    return s;
  out.epsilon = options<schema::BatchNormOptions>().epsilon();
  const TensorDesc &x = in(0), &y = result();
  if (x.shape.size() < 2)
    return fail("input '" + x.name + "' must have rank >= 2, got " + formatShape(x.shape));
  if (Status s = sameShape(x, y); !s.ok())
    return s;
  for (size_t i = 0; i < 5; ++i)
    if (Status s = floatTensor(in(i), "operand"); !s.ok())
      return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  for (size_t i = 1; i < 5; ++i)
    if (in(i).elements != x.shape[1])
      return fail("'" + in(i).name + "' has " + std::to_string(in(i).elements) +
                  " elements, the input has " + std::to_string(x.shape[1]) + " channels");
  return okStatus();
}

Status RoutineVerifier::reduce() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const schema::ReduceOptions &o = options<schema::ReduceOptions>();
  out.keepDims = o.keepdims();
  std::vector<int64_t> axes;
  if (Status s = listField(o.axes(), "axes", SIZE_MAX, axes); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  const size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  for (int64_t value : axes) {
    int64_t axis = 0;
    if (Status s = axisAttr(value, rank, axis); !s.ok())
      return s;
    if (seen[axis])
      return fail("axis " + std::to_string(axis) + " is listed twice");
    seen[axis] = true;
    out.axes.push_back(axis);
  }
  std::sort(out.axes.begin(), out.axes.end());
  // No axes reduce them all (the kernels' convention); a scalar keeps its shape.
  std::vector<int64_t> all(rank);
  for (size_t d = 0; d < rank; ++d)
    all[d] = static_cast<int64_t>(d);
  const shapes::ShapeOrError rule =
      rank == 0 ? shapes::ShapeOrError{{}, ""}
                : shapes::reduceShape(x.shape, out.axes.empty() ? all : out.axes, out.keepDims);
  if (!rule.ok())
    return fail(rule.error);
  const std::vector<int64_t> &expected = rule.shape;
  if (cpu::numElements(expected) != y.elements)
    return fail("output '" + y.name + "' has " + std::to_string(y.elements) +
                " elements, the reduction gives " + formatShape(expected));
  return okStatus();
}

Status RoutineVerifier::fp8Scale() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const schema::Fp8ScaleOptions &o = options<schema::Fp8ScaleOptions>();
  if (in(0).dtype != schema::DType::F32 || in(0).elements != 1)
    return fail("amax '" + in(0).name + "' must be one f32 element");
  if (result().dtype != schema::DType::F32 || result().elements != 1)
    return fail("output '" + result().name + "' must be one f32 element");
  // |margin| beyond the float exponent range gives 0 or inf either way.
  if (o.margin() < -1024 || o.margin() > 1024)
    return fail("margin " + std::to_string(o.margin()) + " out of range [-1024, 1024]");
  out.margin = o.margin();
  if (o.format() != schema::DType::F8E4M3FN && o.format() != schema::DType::F8E5M2)
    return fail(std::string("format must be f8E4M3FN or f8E5M2, got ") + dtypeName(o.format()));
  out.fp8Format = o.format();
  return okStatus();
}

/// The collectives' routines: an f32, f16 or bf16 input and an output of
/// its dtype.
Status RoutineVerifier::collectiveDTypes() const {
  const schema::DType d = in(0).dtype;
  if (d != schema::DType::F32 && d != schema::DType::F16 && d != schema::DType::BF16)
    return fail("input '" + in(0).name + "' is " + dtypeName(d) + ", not f32, f16 or bf16");
  if (result().dtype != d)
    return fail("output '" + result().name + "' is " + dtypeName(result().dtype) +
                ", the input is " + dtypeName(d));
  return okStatus();
}

/// all_reduce: one f32, f16 or bf16 input and an output of its dtype and shape.
Status RoutineVerifier::allReduce() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  out.reduction = options<schema::AllReduceOptions>().reduction();
  if (out.reduction < 0 || out.reduction > 2)
    return fail("reduction " + std::to_string(out.reduction) +
                " out of range (0 sum, 1 mean, 2 max)");
  if (Status s = collectiveDTypes(); !s.ok())
    return s;
  return sameShape(in(0), result());
}

/// rank_slice and all_gather: f32, f16 or bf16 vectors of one dtype, the
/// whole (rank_slice's input, all_gather's output) `world` times the part.
Status RoutineVerifier::shard() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  out.world = options<schema::ShardOptions>().world();
  if (out.world < 1 || out.world > (int64_t(1) << 20))
    return fail("world " + std::to_string(out.world) + " out of range [1, 2^20]");
  if (Status s = collectiveDTypes(); !s.ok())
    return s;
  const bool gather = out.kind == RoutineKind::AllGather;
  const TensorDesc &whole = gather ? result() : in(0);
  const TensorDesc &part = gather ? in(0) : result();
  if (whole.shape.size() != 1 || part.shape.size() != 1)
    return fail("takes vectors, got '" + in(0).name + "' of rank " +
                std::to_string(in(0).shape.size()) + " and '" + result().name + "' of rank " +
                std::to_string(result().shape.size()));
  if (whole.shape[0] != out.world * part.shape[0])
    return fail("'" + whole.name + "' has " + std::to_string(whole.shape[0]) +
                " elements, not world (" + std::to_string(out.world) + ") x " +
                std::to_string(part.shape[0]));
  return okStatus();
}

Status RoutineVerifier::blockScaling() {
  const bool quantize = out.kind == RoutineKind::BlockQuantize;
  if (Status s = operands(quantize ? 2 : 1, quantize ? 2 : 1, quantize ? 2 : 1); !s.ok())
    return s;
  const schema::BlockScaleOptions &o = options<schema::BlockScaleOptions>();
  out.blockRows = o.block_rows();
  out.blockCols = o.block_cols();
  out.blockRecipe = o.recipe();
  out.margin = o.margin();
  if (out.blockRows < 1 || out.blockCols < 1 || out.blockRows > kMaxElements ||
      out.blockCols > kMaxElements)
    return fail("block " + std::to_string(out.blockRows) + "x" + std::to_string(out.blockCols) +
                " must have sizes in [1, 2^48]");
  if (out.blockRecipe != 0 && out.blockRecipe != 1)
    return fail("recipe " + std::to_string(out.blockRecipe) + " must be 0 (block) or 1 (mx)");
  if (out.margin < 0 || out.margin > 1024)
    return fail("margin " + std::to_string(out.margin) + " out of range [0, 1024]");
  const TensorDesc &x = in(0), &y = result();
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (x.dtype == schema::DType::F8E4M3FN || x.dtype == schema::DType::F8E5M2)
    return fail("input '" + x.name + "' must not be FP8");
  if (x.shape.size() < 2)
    return fail("input '" + x.name + "' must have rank >= 2, got " + formatShape(x.shape));
  const std::vector<int64_t> scaleShape =
      numerics::blockScaleShape(x.shape, out.blockRows, out.blockCols);
  const TensorDesc &scales = quantize ? in(1) : y;
  if (scales.dtype != schema::DType::F32 || scales.shape != scaleShape)
    return fail("scales '" + scales.name + "' must be f32 of shape " + formatShape(scaleShape) +
                ", got " + dtypeName(scales.dtype) + " " + formatShape(scales.shape));
  if (!quantize) {
    if (o.format() != schema::DType::F8E4M3FN && o.format() != schema::DType::F8E5M2)
      return fail(std::string("format must be f8E4M3FN or f8E5M2, got ") + dtypeName(o.format()));
    out.fp8Format = o.format();
    return okStatus();
  }
  if (y.dtype != schema::DType::F8E4M3FN && y.dtype != schema::DType::F8E5M2)
    return fail("output '" + y.name + "' must be f8E4M3FN or f8E5M2, got " + dtypeName(y.dtype));
  if (y.shape != x.shape)
    return fail("output '" + y.name + "' must have the input's shape " + formatShape(x.shape) +
                ", got " + formatShape(y.shape));
  out.fp8Format = y.dtype;
  return okStatus();
}

Status RoutineVerifier::blockScaledGemm() {
  // a [.., k], b [n, k], a's scales, b's scales, (bias [n] or broadcasting
  // to [m, n]).
  if (Status s = operands(4, 5, 4); !s.ok())
    return s;
  const schema::BlockGemmOptions &o = options<schema::BlockGemmOptions>();
  out.blockRows = o.a_block_rows();
  out.bBlockRows = o.b_block_rows();
  out.blockCols = o.k_block();
  out.epilogue = o.epilogue();
  for (int64_t v : {out.blockRows, out.bBlockRows, out.blockCols})
    if (v < 1 || v > kMaxElements)
      return fail("block sizes must lie in [1, 2^48], got a " + std::to_string(out.blockRows) +
                  "x" + std::to_string(out.blockCols) + ", b " + std::to_string(out.bBlockRows) +
                  "x" + std::to_string(out.blockCols));
  if (out.epilogue < 0 || out.epilogue > 2)
    return fail("epilogue " + std::to_string(out.epilogue) + " must be 0, 1 or 2");
  const TensorDesc &a = in(0), &b = in(1), &sa = in(2), &sb = in(3), &y = result();
  auto fp8 = [](schema::DType t) {
    return t == schema::DType::F8E4M3FN || t == schema::DType::F8E5M2;
  };
  if (!fp8(a.dtype) || !fp8(b.dtype))
    return fail(std::string("a and b must be FP8, got ") + dtypeName(a.dtype) + " and " +
                dtypeName(b.dtype));
  if (a.shape.size() < 2 || b.shape.size() != 2 || a.shape.back() != b.shape.back())
    return fail("a must be [.., k] and b [n, k] with the same k, got " + formatShape(a.shape) +
                " and " + formatShape(b.shape));
  out.gemmK = a.shape.back();
  out.gemmN = b.shape[0];
  out.gemmM = out.gemmK == 0 ? 0 : a.elements / out.gemmK;
  if (a.shape.size() > 2 && out.blockRows != 1)
    return fail("an a of rank > 2 takes blocks of one row, got " + std::to_string(out.blockRows));
  const std::vector<int64_t> aScales =
      numerics::blockScaleShape(a.shape, out.blockRows, out.blockCols);
  const std::vector<int64_t> bScales =
      numerics::blockScaleShape(b.shape, out.bBlockRows, out.blockCols);
  if (sa.dtype != schema::DType::F32 || sa.shape != aScales)
    return fail("a's scales '" + sa.name + "' must be f32 of shape " + formatShape(aScales) +
                ", got " + dtypeName(sa.dtype) + " " + formatShape(sa.shape));
  if (sb.dtype != schema::DType::F32 || sb.shape != bScales)
    return fail("b's scales '" + sb.name + "' must be f32 of shape " + formatShape(bScales) +
                ", got " + dtypeName(sb.dtype) + " " + formatShape(sb.shape));
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  std::vector<int64_t> expected(a.shape.begin(), a.shape.end() - 1);
  expected.push_back(out.gemmN);
  if (y.shape != expected)
    return fail("output '" + y.name + "' must have shape " + formatShape(expected) + ", got " +
                formatShape(y.shape));
  if (hasInput(4)) {
    if (Status s = floatTensor(in(4), "bias"); !s.ok())
      return s;
    const shapes::ShapeOrError joined = shapes::broadcastShapes(in(4).shape, y.shape);
    if (!joined.ok() || joined.shape != y.shape)
      return fail("bias " + formatShape(in(4).shape) + " does not broadcast to the output " +
                  formatShape(y.shape));
  }
  return okStatus();
}

Status RoutineVerifier::run() {
  const char *type = op.op_type() ? op.op_type()->c_str() : "";
  const OpTypeEntry *entry = nullptr;
  for (const OpTypeEntry &e : kOpTypes)
    if (std::strcmp(e.name, type) == 0)
      entry = &e;
  if (!entry)
    return fail("unknown op type '" + std::string(type) + "' (this runtime runs: " +
                knownOpTypes() + ")");
  out.kind = entry->kind;
  // The verifier accepts a set type with no table (and a type it does not
  // know): every decoder below reads the table run() checked here.
  if (op.options_type() != entry->options || !op.options())
    return fail("takes " + optionsName(entry->options) + ", got " +
                (op.options() ? optionsName(op.options_type()) : std::string("none")));

  // Operand indices first: every check below may look at the tensors.
  const size_t count = tensors.size();
  if (op.inputs())
    for (int32_t t : *op.inputs()) {
      if (t < -1 || (t >= 0 && static_cast<size_t>(t) >= count))
        return fail("input tensor index " + std::to_string(t) + " out of range (" +
                    std::to_string(count) + " tensors)");
      out.inputs.push_back(t);
    }
  if (!op.outputs() || op.outputs()->size() != 1)
    return fail("needs exactly one output, got " +
                std::to_string(op.outputs() ? op.outputs()->size() : 0));
  int32_t o = op.outputs()->Get(0);
  if (o < 0 || static_cast<size_t>(o) >= count)
    return fail("output tensor index " + std::to_string(o) + " out of range (" +
                std::to_string(count) + " tensors)");
  out.output = o;
  if (tensors[o].isConstant())
    return fail("output '" + tensors[o].name + "' is a constant");

  switch (out.kind) {
  case RoutineKind::Conv2d:
    return conv2d();
  case RoutineKind::MaxPool2d:
    return pool2d(true);
  case RoutineKind::AvgPool2d:
    return pool2d(false);
  case RoutineKind::Conv:
  case RoutineKind::ConvTranspose:
    return convNd();
  case RoutineKind::MaxPool:
  case RoutineKind::AvgPool:
  case RoutineKind::MaxPoolIndices:
    return poolNd();
  case RoutineKind::Transpose:
  case RoutineKind::Slice:
  case RoutineKind::Concat:
  case RoutineKind::Gather:
  case RoutineKind::GatherElements:
  case RoutineKind::GatherNd: {
    Status s = out.kind == RoutineKind::Transpose        ? transpose()
               : out.kind == RoutineKind::Slice          ? slice()
               : out.kind == RoutineKind::Concat         ? concat()
               : out.kind == RoutineKind::GatherElements ? gatherElements()
               : out.kind == RoutineKind::GatherNd       ? gatherNd()
                                                        : gather();
    if (!s.ok())
      return s;
    const bool gathers = out.kind == RoutineKind::Gather ||
                         out.kind == RoutineKind::GatherElements ||
                         out.kind == RoutineKind::GatherNd;
    for (size_t i = 0; i < out.inputs.size(); ++i) {
      if (gathers && i == 1)
        continue;
      if (in(i).dtype != result().dtype)
        return fail("input '" + in(i).name + "' is " + dtypeName(in(i).dtype) +
                    ", the output is " + dtypeName(result().dtype) +
                    " (data movement keeps the dtype)");
    }
    return okStatus();
  }
  case RoutineKind::Softmax:
  case RoutineKind::LogSoftmax:
    return axisNormalization(options<schema::AxisOptions>().axis(), false, 1);
  case RoutineKind::LayerNorm:
  case RoutineKind::RmsNorm: {
    const schema::NormOptions &o = options<schema::NormOptions>();
    out.epsilon = o.epsilon();
    return axisNormalization(o.axis(), true, out.kind == RoutineKind::LayerNorm ? 3 : 2);
  }
  case RoutineKind::BatchNorm:
    return batchNorm();
  case RoutineKind::ReduceSum:
  case RoutineKind::ReduceMean:
  case RoutineKind::ReduceMax:
  case RoutineKind::ReduceProd:
    return reduce();
  case RoutineKind::Fp8Scale:
    return fp8Scale();
  case RoutineKind::Matmul:
    return matmul();
  case RoutineKind::ArgMax:
  case RoutineKind::ArgMin:
    return argReduce();
  case RoutineKind::TopK:
    return topK();
  case RoutineKind::CumSum:
    return cumSum();
  case RoutineKind::ScatterNd:
    return scatterNd();
  case RoutineKind::IntElementwise:
    return intElementwise();
  case RoutineKind::Attention:
  case RoutineKind::AttentionGrad:
    return attention();
  case RoutineKind::BlockScale:
  case RoutineKind::BlockQuantize:
    return blockScaling();
  case RoutineKind::BlockScaledGemm:
    return blockScaledGemm();
  case RoutineKind::AllReduce:
    return allReduce();
  case RoutineKind::RankSlice:
  case RoutineKind::AllGather:
    return shard();
  }
  return fail("unhandled op type");
}

} // namespace

Status verifyRoutine(const schema::Routine &routine, size_t index,
                    const std::vector<TensorDesc> &tensors, RoutineOp &out) {
  out = RoutineOp();
  out.name = "routine #" + std::to_string(index);
  if (routine.name() && routine.name()->size())
    out.name += " '" + routine.name()->str() + "'";
  if (routine.op_type())
    out.name += " (" + routine.op_type()->str() + ")";
  return RoutineVerifier(routine, tensors, out).run();
}

} // namespace mixprec::runtime
