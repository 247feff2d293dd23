//===- OpaqueOps.cpp - decoding and verification of opaque routines -------===//
//
// The reference kernels assert their shape preconditions only in debug
// builds, so everything they rely on to stay in bounds is checked here, at
// load time, with a message naming the op and the rule.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/OpaqueOps.h"

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace mixprec::runtime {
namespace {

/// Bound on window, stride, dilation and pad attributes: keeps the output
/// size arithmetic of pooledSize far from overflow.
constexpr int64_t kMaxWindowAttr = int64_t(1) << 31;

struct OpTypeEntry {
  const char *name;
  OpaqueKind kind;
};

constexpr OpTypeEntry kOpTypes[] = {
    {"conv2d", OpaqueKind::Conv2d},         {"max_pool2d", OpaqueKind::MaxPool2d},
    {"avg_pool2d", OpaqueKind::AvgPool2d},  {"transpose", OpaqueKind::Transpose},
    {"slice", OpaqueKind::Slice},           {"concat", OpaqueKind::Concat},
    {"gather", OpaqueKind::Gather},         {"softmax", OpaqueKind::Softmax},
    {"log_softmax", OpaqueKind::LogSoftmax}, {"layer_norm", OpaqueKind::LayerNorm},
    {"rms_norm", OpaqueKind::RmsNorm},      {"batch_norm", OpaqueKind::BatchNorm},
    {"reduce_sum", OpaqueKind::ReduceSum},  {"reduce_mean", OpaqueKind::ReduceMean},
    {"reduce_max", OpaqueKind::ReduceMax},  {"fp8_scale", OpaqueKind::Fp8Scale},
    {"matmul", OpaqueKind::Matmul},
};

std::string knownOpTypes() {
  std::string list;
  for (const OpTypeEntry &e : kOpTypes)
    list += (list.empty() ? "" : ", ") + std::string(e.name);
  return list;
}

/// Checks one opaque op; `fail` builds the error with the op's name.
class OpaqueVerifier {
public:
  OpaqueVerifier(const schema::Opaque &op, const std::vector<TensorDesc> &tensors, OpaqueOp &out)
      : op(op), tensors(tensors), out(out) {}

  Status run();

private:
  Status fail(const std::string &what) const { return invalidModule(out.name + ": " + what); }

  const TensorDesc &in(size_t i) const { return tensors[out.inputs[i]]; }
  const TensorDesc &result() const { return tensors[out.output]; }
  bool hasInput(size_t i) const { return i < out.inputs.size() && out.inputs[i] >= 0; }

  Status operands(size_t minInputs, size_t maxInputs, size_t optionalFrom);
  Status intAttrCount(size_t count, size_t optionalExtra = 0);
  Status floatAttrCount(size_t count);
  Status floatTensor(const TensorDesc &t, const char *role) const;
  Status axisAttr(int64_t value, size_t rank, int64_t &axis) const;
  Status sameShape(const TensorDesc &a, const TensorDesc &b) const;
  Status windowAttrs(size_t first, bool withKernel);
  Status planeOutput(int64_t kh, int64_t kw, bool ceilMode) const;

  Status conv2d();
  Status pool2d(bool isMax);
  Status transpose();
  Status slice();
  Status concat();
  Status gather();
  Status axisNormalization(bool withEpsilon, size_t maxInputs);
  Status batchNorm();
  Status reduce();
  Status matmul();
  Status fp8Scale();

  const schema::Opaque &op;
  const std::vector<TensorDesc> &tensors;
  OpaqueOp &out;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

Status OpaqueVerifier::operands(size_t minInputs, size_t maxInputs, size_t optionalFrom) {
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

Status OpaqueVerifier::intAttrCount(size_t count, size_t optionalExtra) {
  if (ints.size() != count && ints.size() != count + optionalExtra)
    return fail("needs " + std::to_string(count) +
                (optionalExtra ? " or " + std::to_string(count + optionalExtra) : "") +
                " int_attrs, got " + std::to_string(ints.size()));
  return okStatus();
}

Status OpaqueVerifier::floatAttrCount(size_t count) {
  if (floats.size() != count)
    return fail("needs " + std::to_string(count) + " float_attrs, got " +
                std::to_string(floats.size()));
  return okStatus();
}

Status OpaqueVerifier::floatTensor(const TensorDesc &t, const char *role) const {
  if (!isFloatDType(t.dtype))
    return fail(std::string(role) + " '" + t.name + "' must be a float tensor, got " +
                dtypeName(t.dtype));
  return okStatus();
}

Status OpaqueVerifier::axisAttr(int64_t value, size_t rank, int64_t &axis) const {
  axis = cpu::normalizeAxis(value, static_cast<int64_t>(rank));
  if (axis < 0)
    return fail("axis " + std::to_string(value) + " is out of range for rank " +
                std::to_string(rank));
  return okStatus();
}

Status OpaqueVerifier::sameShape(const TensorDesc &a, const TensorDesc &b) const {
  if (a.shape != b.shape)
    return fail("'" + b.name + "' has shape " + formatShape(b.shape) + ", expected " +
                formatShape(a.shape));
  return okStatus();
}

/// Reads strides, pads and dilations (and the kernel window when asked)
/// starting at int_attrs[first]; bounds them.
Status OpaqueVerifier::windowAttrs(size_t first, bool withKernel) {
  size_t i = first;
  if (withKernel) {
    out.kernel = {ints[i], ints[i + 1]};
    i += 2;
  }
  out.strides = {ints[i], ints[i + 1]};
  out.pads = {ints[i + 2], ints[i + 3], ints[i + 4], ints[i + 5]};
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
Status OpaqueVerifier::planeOutput(int64_t kh, int64_t kw, bool ceilMode) const {
  for (int64_t v : out.dilations)
    if (v < 1 || v > kMaxWindowAttr)
      return fail("dilation " + std::to_string(v) + " out of range [1, 2^31]");
  const TensorDesc &x = in(0), &y = result();
  int64_t oh = cpu::pooledSize(x.shape[2], kh, out.strides[0], out.pads[0], out.pads[2],
                               out.dilations[0], ceilMode);
  int64_t ow = cpu::pooledSize(x.shape[3], kw, out.strides[1], out.pads[1], out.pads[3],
                               out.dilations[1], ceilMode);
  if (oh <= 0 || ow <= 0)
    return fail("the window does not fit the padded input " + formatShape(x.shape));
  if (y.shape[2] != oh || y.shape[3] != ow)
    return fail("output '" + y.name + "' has spatial size [" + std::to_string(y.shape[2]) + "," +
                std::to_string(y.shape[3]) + "], the attributes give [" + std::to_string(oh) +
                "," + std::to_string(ow) + "]");
  return okStatus();
}

Status OpaqueVerifier::conv2d() {
  if (Status s = operands(2, 3, 2); !s.ok())
    return s;
  if (Status s = intAttrCount(9, 1); !s.ok())
    return s;
  if (Status s = floatAttrCount(0); !s.ok())
    return s;
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
  if (Status s = windowAttrs(0, false); !s.ok())
    return s;
  out.dilations = {ints[6], ints[7]};
  out.groups = ints[8];
  if (ints.size() == 10) {
    if (ints[9] != 0 && ints[9] != 1)
      return fail("tf32 must be 0 or 1, got " + std::to_string(ints[9]));
    out.tf32 = ints[9] == 1;
  }
  const int64_t m = w.shape[0];
  if (out.groups < 1 || x.shape[1] % out.groups != 0 || x.shape[1] / out.groups != w.shape[1] ||
      m % out.groups != 0)
    return fail("groups " + std::to_string(out.groups) + " do not divide input " +
                formatShape(x.shape) + " and weight " + formatShape(w.shape));
  if (w.shape[2] < 1 || w.shape[3] < 1)
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
  return planeOutput(w.shape[2], w.shape[3], false);
}

Status OpaqueVerifier::pool2d(bool isMax) {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  if (Status s = isMax ? intAttrCount(11) : intAttrCount(10, 2); !s.ok())
    return s;
  if (Status s = floatAttrCount(0); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  for (const TensorDesc *t : {&x, &y})
    if (t->shape.size() != 4)
      return fail("'" + t->name + "' must have rank 4, got " + formatShape(t->shape));
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  if (Status s = windowAttrs(0, true); !s.ok())
    return s;
  int64_t ceilMode = 0;
  if (isMax) {
    out.dilations = {ints[8], ints[9]};
    ceilMode = ints[10];
  } else {
    if (ints[8] != 0 && ints[8] != 1)
      return fail("count_include_pad must be 0 or 1, got " + std::to_string(ints[8]));
    out.countIncludePad = ints[8] == 1;
    ceilMode = ints[9];
    if (ints.size() == 12)
      out.dilations = {ints[10], ints[11]};
  }
  if (ceilMode != 0 && ceilMode != 1)
    return fail("ceil_mode must be 0 or 1, got " + std::to_string(ceilMode));
  out.ceilMode = ceilMode == 1;
  if (y.shape[0] != x.shape[0] || y.shape[1] != x.shape[1])
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) + ", expected [" +
                std::to_string(x.shape[0]) + "," + std::to_string(x.shape[1]) + ",..]");
  return planeOutput(out.kernel[0], out.kernel[1], out.ceilMode);
}

Status OpaqueVerifier::transpose() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  const size_t rank = x.shape.size();
  if (Status s = intAttrCount(rank); !s.ok())
    return s;
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> expected(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t p = ints[i];
    if (p < 0 || static_cast<size_t>(p) >= rank || seen[p])
      return fail("perm is not a permutation of 0.." + std::to_string(rank - 1));
    seen[p] = true;
    expected[i] = x.shape[p];
  }
  if (y.shape != expected)
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) + ", perm gives " +
                formatShape(expected));
  out.perm = ints;
  return okStatus();
}

Status OpaqueVerifier::slice() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  const size_t rank = x.shape.size();
  if (Status s = intAttrCount(2 * rank); !s.ok())
    return s;
  if (y.shape.size() != rank)
    return fail("output '" + y.name + "' has rank " + std::to_string(y.shape.size()) +
                ", input has " + std::to_string(rank));
  out.starts.assign(ints.begin(), ints.begin() + rank);
  out.steps.assign(ints.begin() + rank, ints.end());
  for (size_t d = 0; d < rank; ++d) {
    const int64_t start = out.starts[d], step = out.steps[d], count = y.shape[d];
    if (step == 0 || step > kMaxElements || step < -kMaxElements)
      return fail("step of dim " + std::to_string(d) + " is " + std::to_string(step));
    if (count == 0)
      continue;
    // The last index read, in 128 bits: count and |step| are each below
    // 2^48, their product is not.
    __int128 last = static_cast<__int128>(start) + static_cast<__int128>(count - 1) * step;
    if (start < 0 || start >= x.shape[d] || last < 0 || last >= x.shape[d])
      return fail("dim " + std::to_string(d) + " reads indices " + std::to_string(start) +
                  " to " + std::to_string(static_cast<long long>(last)) +
                  " of an extent of " + std::to_string(x.shape[d]));
  }
  return okStatus();
}

Status OpaqueVerifier::concat() {
  if (Status s = operands(1, 1u << 16, 1u << 16); !s.ok())
    return s;
  if (Status s = intAttrCount(1); !s.ok())
    return s;
  const TensorDesc &y = result();
  const size_t rank = y.shape.size();
  if (rank == 0)
    return fail("cannot concatenate scalars");
  if (Status s = axisAttr(ints[0], rank, out.axis); !s.ok())
    return s;
  int64_t total = 0;
  for (size_t i = 0; i < out.inputs.size(); ++i) {
    const TensorDesc &x = in(i);
    if (x.shape.size() != rank)
      return fail("input '" + x.name + "' has rank " + std::to_string(x.shape.size()) +
                  ", output has " + std::to_string(rank));
    for (size_t d = 0; d < rank; ++d)
      if (static_cast<int64_t>(d) != out.axis && x.shape[d] != y.shape[d])
        return fail("input '" + x.name + "' " + formatShape(x.shape) +
                    " does not match output " + formatShape(y.shape) + " off the axis");
    total += x.shape[out.axis]; // each below 2^48, at most 2^16 inputs
  }
  if (total != y.shape[out.axis])
    return fail("inputs add up to " + std::to_string(total) + " along axis " +
                std::to_string(out.axis) + ", output has " + std::to_string(y.shape[out.axis]));
  return okStatus();
}

Status OpaqueVerifier::gather() {
  if (Status s = operands(2, 2, 2); !s.ok())
    return s;
  if (Status s = intAttrCount(1); !s.ok())
    return s;
  const TensorDesc &data = in(0), &idx = in(1), &y = result();
  if (idx.dtype != schema::DType::I64 && idx.dtype != schema::DType::I32)
    return fail("indices '" + idx.name + "' must be i64 or i32, got " + dtypeName(idx.dtype));
  if (data.shape.empty())
    return fail("cannot gather from a scalar");
  if (Status s = axisAttr(ints[0], data.shape.size(), out.axis); !s.ok())
    return s;
  std::vector<int64_t> expected(data.shape.begin(), data.shape.begin() + out.axis);
  expected.insert(expected.end(), idx.shape.begin(), idx.shape.end());
  expected.insert(expected.end(), data.shape.begin() + out.axis + 1, data.shape.end());
  if (y.shape != expected)
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) + ", expected " +
                formatShape(expected));
  return okStatus();
}

Status OpaqueVerifier::axisNormalization(bool withEpsilon, size_t maxInputs) {
  if (Status s = operands(1, maxInputs, 1); !s.ok())
    return s;
  if (Status s = intAttrCount(1); !s.ok())
    return s;
  if (Status s = floatAttrCount(withEpsilon ? 1 : 0); !s.ok())
    return s;
  const TensorDesc &x = in(0), &y = result();
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  if (Status s = sameShape(x, y); !s.ok())
    return s;
  // softmax treats a scalar as one element; the norms need an axis.
  size_t rank = std::max<size_t>(x.shape.size(), withEpsilon ? 0 : 1);
  if (Status s = axisAttr(ints[0], rank, out.axis); !s.ok())
    return s;
  if (withEpsilon)
    out.epsilon = floats[0];
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

Status OpaqueVerifier::matmul() {
  if (Status s = operands(2, 2, 2); !s.ok())
    return s;
  if (Status s = intAttrCount(0, 1); !s.ok())
    return s;
  if (Status s = floatAttrCount(0); !s.ok())
    return s;
  if (!ints.empty()) {
    if (ints[0] != 0 && ints[0] != 1)
      return fail("tf32 must be 0 or 1, got " + std::to_string(ints[0]));
    out.tf32 = ints[0] == 1;
  }
  const TensorDesc &a = in(0), &b = in(1), &y = result();
  for (const TensorDesc *t : {&a, &b, &y})
    if (Status s = floatTensor(*t, t == &y ? "output" : "operand"); !s.ok())
      return s;
  bool ok = false;
  cpu::Shape expected = cpu::matmulShape(a.shape, b.shape, &ok);
  if (a.shape.empty() || b.shape.empty() || !ok)
    return fail("operands " + formatShape(a.shape) + " x " + formatShape(b.shape) +
                " do not multiply");
  if (expected != y.shape)
    return fail("output '" + y.name + "' has shape " + formatShape(y.shape) + ", expected " +
                formatShape(expected));
  return okStatus();
}

Status OpaqueVerifier::batchNorm() {
  if (Status s = operands(5, 5, 5); !s.ok())
    return s;
  if (Status s = intAttrCount(0); !s.ok())
    return s;
  if (Status s = floatAttrCount(1); !s.ok())
    return s;
  out.epsilon = floats[0];
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

Status OpaqueVerifier::reduce() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  if (Status s = floatAttrCount(0); !s.ok())
    return s;
  if (ints.empty())
    return fail("needs int_attrs [keepdims, axes...], got none");
  if (ints[0] != 0 && ints[0] != 1)
    return fail("keepdims must be 0 or 1, got " + std::to_string(ints[0]));
  out.keepDims = ints[0] == 1;
  const TensorDesc &x = in(0), &y = result();
  if (Status s = floatTensor(x, "input"); !s.ok())
    return s;
  if (Status s = floatTensor(y, "output"); !s.ok())
    return s;
  const size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  for (size_t i = 1; i < ints.size(); ++i) {
    int64_t axis = 0;
    if (Status s = axisAttr(ints[i], rank, axis); !s.ok())
      return s;
    if (seen[axis])
      return fail("axis " + std::to_string(axis) + " is listed twice");
    seen[axis] = true;
    out.axes.push_back(axis);
  }
  std::sort(out.axes.begin(), out.axes.end());
  std::vector<int64_t> expected = cpu::reducedShape(x.shape, out.axes, out.keepDims);
  if (cpu::numElements(expected) != y.elements)
    return fail("output '" + y.name + "' has " + std::to_string(y.elements) +
                " elements, the reduction gives " + formatShape(expected));
  return okStatus();
}

Status OpaqueVerifier::fp8Scale() {
  if (Status s = operands(1, 1, 1); !s.ok())
    return s;
  if (Status s = intAttrCount(2); !s.ok())
    return s;
  if (Status s = floatAttrCount(0); !s.ok())
    return s;
  if (in(0).dtype != schema::DType::F32 || in(0).elements != 1)
    return fail("amax '" + in(0).name + "' must be one f32 element");
  if (result().dtype != schema::DType::F32 || result().elements != 1)
    return fail("output '" + result().name + "' must be one f32 element");
  // |margin| beyond the float exponent range gives 0 or inf either way.
  if (ints[0] < -1024 || ints[0] > 1024)
    return fail("margin " + std::to_string(ints[0]) + " out of range [-1024, 1024]");
  out.margin = ints[0];
  if (ints[1] != static_cast<int64_t>(schema::DType::F8E4M3FN) &&
      ints[1] != static_cast<int64_t>(schema::DType::F8E5M2))
    return fail("format must be 3 (F8E4M3FN) or 4 (F8E5M2), got " + std::to_string(ints[1]));
  out.fp8Format = static_cast<schema::DType>(ints[1]);
  return okStatus();
}

Status OpaqueVerifier::run() {
  const char *type = op.op_type() ? op.op_type()->c_str() : "";
  bool known = false;
  for (const OpTypeEntry &e : kOpTypes)
    if (std::strcmp(e.name, type) == 0) {
      out.kind = e.kind;
      known = true;
    }
  if (!known)
    return fail("unknown op type '" + std::string(type) + "' (this runtime runs: " +
                knownOpTypes() + ")");
  if (op.int_attrs())
    ints.assign(op.int_attrs()->begin(), op.int_attrs()->end());
  if (op.float_attrs())
    floats.assign(op.float_attrs()->begin(), op.float_attrs()->end());

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
  case OpaqueKind::Conv2d:
    return conv2d();
  case OpaqueKind::MaxPool2d:
    return pool2d(true);
  case OpaqueKind::AvgPool2d:
    return pool2d(false);
  case OpaqueKind::Transpose:
  case OpaqueKind::Slice:
  case OpaqueKind::Concat:
  case OpaqueKind::Gather: {
    Status s = out.kind == OpaqueKind::Transpose ? transpose()
               : out.kind == OpaqueKind::Slice   ? slice()
               : out.kind == OpaqueKind::Concat  ? concat()
                                                 : gather();
    if (!s.ok())
      return s;
    for (size_t i = 0; i < out.inputs.size(); ++i) {
      if (out.kind == OpaqueKind::Gather && i == 1)
        continue;
      if (in(i).dtype != result().dtype)
        return fail("input '" + in(i).name + "' is " + dtypeName(in(i).dtype) +
                    ", the output is " + dtypeName(result().dtype) +
                    " (data movement keeps the dtype)");
    }
    return okStatus();
  }
  case OpaqueKind::Softmax:
  case OpaqueKind::LogSoftmax:
    if (Status s = floatAttrCount(0); !s.ok())
      return s;
    return axisNormalization(false, 1);
  case OpaqueKind::LayerNorm:
    return axisNormalization(true, 3);
  case OpaqueKind::RmsNorm:
    return axisNormalization(true, 2);
  case OpaqueKind::BatchNorm:
    return batchNorm();
  case OpaqueKind::ReduceSum:
  case OpaqueKind::ReduceMean:
  case OpaqueKind::ReduceMax:
    return reduce();
  case OpaqueKind::Fp8Scale:
    return fp8Scale();
  case OpaqueKind::Matmul:
    return matmul();
  }
  return fail("unhandled op type");
}

} // namespace

Status verifyOpaque(const schema::Opaque &opaque, size_t index,
                    const std::vector<TensorDesc> &tensors, OpaqueOp &out) {
  out = OpaqueOp();
  out.name = "opaque #" + std::to_string(index);
  if (opaque.name() && opaque.name()->size())
    out.name += " '" + opaque.name()->str() + "'";
  if (opaque.op_type())
    out.name += " (" + opaque.op_type()->str() + ")";
  return OpaqueVerifier(opaque, tensors, out).run();
}

} // namespace mixprec::runtime
