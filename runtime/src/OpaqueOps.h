//===- OpaqueOps.h - backend routines for ops that do not fuse --*- C++ -*-===//
//
// An Opaque step names an mp op type and carries its operands and flattened
// attributes. This header is the contract between the module writer
// (passes/LowerToKernels.cpp builds int_attrs/float_attrs) and the
// backends. Integer attributes are int_attrs in the order listed, float
// attributes float_attrs; "(optional ...)" attributes may be left off the
// end. An absent optional input is -1 in `inputs`, or simply left off when
// no later input follows. Shapes are the tensors' own shapes; every routine
// has exactly one output.
//
//   op_type       inputs                        int_attrs / float_attrs
//   ------------  ----------------------------  -----------------------------------------
//   conv2d        x[N,C,H,W], w[M,C/g,kH,kW],   stride_h, stride_w, pad_top, pad_left,
//                 (optional bias[M])            pad_bottom, pad_right, dilation_h,
//                                               dilation_w, groups, (optional tf32 0|1)
//   max_pool2d    x[N,C,H,W]                    kernel_h, kernel_w, stride_h, stride_w,
//                                               pad_top, pad_left, pad_bottom, pad_right,
//                                               dilation_h, dilation_w, ceil_mode
//   avg_pool2d    x[N,C,H,W]                    kernel_h, kernel_w, stride_h, stride_w,
//                                               pad_top, pad_left, pad_bottom, pad_right,
//                                               count_include_pad, ceil_mode,
//                                               (optional dilation_h, dilation_w)
//   transpose     x                             perm (rank entries)
//   slice         x                             starts (rank entries), steps (rank
//                                               entries); starts already normalized
//                                               and clamped, steps non-zero; the
//                                               output's shape gives the counts
//   concat        x0, x1, ...                   axis (negative counts from the end)
//   gather        data, indices (i64 or i32)    axis
//   softmax       x                             axis
//   log_softmax   x                             axis
//   layer_norm    x, (optional scale),          axis / epsilon
//                 (optional bias)
//   rms_norm      x, (optional scale)           axis / epsilon
//   batch_norm    x[N,C,...], scale[C],         - / epsilon
//                 bias[C], mean[C], var[C]
//   reduce_sum    x                             keepdims 0|1, axes... (none: all)
//   reduce_mean   x                             keepdims 0|1, axes... (none: all)
//   reduce_max    x                             keepdims 0|1, axes... (none: all)
//   matmul        a, b (rank >= 1 each)         (optional tf32 0|1); numpy.matmul: 1-D
//                                               operands promoted, batch dims broadcast
//                                               (GEMMs the Gemm step cannot express)
//   fp8_scale     amax (f32, 1 element)         margin, format (schema DType:
//                                               3 = F8E4M3FN, 4 = F8E5M2);
//                                               output f32, 1 element
//
// Numerics: float routines decode their inputs to FP32 (exact), run the
// FP32 reference kernel (runtime/cpu/Kernels.h) and round the result
// once to the output dtype (FP8 saturating), as the reference interpreter
// does; conv2d with tf32 rounds x and w to TF32 first. Data movement
// (transpose, slice, concat, gather) copies elements of any dtype and
// needs the output dtype to equal the input's. fp8_scale computes
// (fp8_max / amax) / 2^margin in double and gives 1 for a zero or
// non-finite amax.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_OPAQUEOPS_H
#define MIXPREC_RUNTIME_OPAQUEOPS_H

#include "runtime/src/Module.h"

#include <array>
#include <cstdint>
#include <vector>

namespace mixprec::runtime {

enum class OpaqueKind {
  Conv2d,
  MaxPool2d,
  AvgPool2d,
  Transpose,
  Slice,
  Concat,
  Gather,
  Softmax,
  LogSoftmax,
  LayerNorm,
  RmsNorm,
  BatchNorm,
  ReduceSum,
  ReduceMean,
  ReduceMax,
  Fp8Scale,
  Matmul,
};

/// An opaque step after verification: attributes decoded and normalized.
struct OpaqueOp {
  OpaqueKind kind = OpaqueKind::Transpose;
  std::string name;             ///< for messages: "opaque #3 'conv1' (conv2d)"
  std::vector<int32_t> inputs;  ///< tensor indices, -1 for an absent optional input
  int32_t output = -1;

  // Pooling / convolution.
  std::array<int64_t, 2> kernel{1, 1}, strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  int64_t groups = 1;
  bool tf32 = false, ceilMode = false, countIncludePad = false;
  // Axis-based ops (normalized to [0, rank)); reductions: sorted, unique axes.
  int64_t axis = 0;
  std::vector<int64_t> axes;
  bool keepDims = false;
  // transpose: perm; slice: starts and steps.
  std::vector<int64_t> perm, starts, steps;
  float epsilon = 0.0f;
  int64_t margin = 0;
  schema::DType fp8Format = schema::DType::F8E4M3FN;
};

/// Decodes and verifies opaque `index` against the module's tensors: op type
/// known, operand and attribute counts, dtypes, and every shape relation the
/// routine relies on to stay in bounds. Error messages name the op.
Status verifyOpaque(const schema::Opaque &opaque, size_t index,
                    const std::vector<TensorDesc> &tensors, OpaqueOp &out);

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_OPAQUEOPS_H
