//===- Shapes.h - the shape functions of the ops, without LLVM --*- C++ -*-===//
//
// One definition of every shape rule: the mp dialect's verifiers and type
// inference (GraphTypeInference.cpp), the ONNX importer, the runtime's
// routine checks (runtime/src/Routines.cpp) and the reference kernels'
// preconditions all call these, so a shape the importer infers is the
// shape the verifier accepts and the shape the runtime checks a module
// against. Plain C++17: the runtime-only build links it.
//
// A function returns the result shape or the rule the operands break
// (ShapeOrError::error, worded for a diagnostic: "perm [1, 1] is not a
// permutation"). Axes are non-negative here; callers normalize ONNX's
// negative axes first.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_SHAPES_H
#define MIXPREC_COMMON_SHAPES_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

namespace mixprec::shapes {

using Shape = std::vector<int64_t>;

/// A read-only view of dims: a std::vector, an llvm::ArrayRef or
/// SmallVector, a braced list (for the call's duration), or pointer and size.
class Dims {
public:
  Dims() = default;
  Dims(const int64_t *data, size_t size) : data_(data), size_(size) {}
  // A braced list lives to the end of the full expression, as long as a
  // call's Dims argument does (llvm::ArrayRef makes the same choice).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  Dims(std::initializer_list<int64_t> list) : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  /// Any contiguous container of int64_t with data() and size().
  template <typename C, typename = std::enable_if_t<std::is_convertible_v<
                            decltype(std::data(std::declval<const C &>())), const int64_t *>>>
  Dims(const C &c) : data_(std::data(c)), size_(std::size(c)) {}

  const int64_t *begin() const { return data_; }
  const int64_t *end() const { return data_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t operator[](size_t i) const { return data_[i]; }
  int64_t front() const { return data_[0]; }
  int64_t back() const { return data_[size_ - 1]; }
  /// The dims without the first (last) `n`.
  Dims dropFront(size_t n) const { return {data_ + n, size_ - n}; }
  Dims dropBack(size_t n) const { return {data_, size_ - n}; }
  Shape vec() const { return Shape(begin(), end()); }

private:
  const int64_t *data_ = nullptr;
  size_t size_ = 0;
};

/// A shape, or the rule that made it impossible (error is then not empty).
struct ShapeOrError {
  Shape shape;
  std::string error;
  bool ok() const { return error.empty(); }
  static ShapeOrError failure(std::string why) { return {{}, std::move(why)}; }
};

/// "[2, 3, 4]", the spelling of a shape in diagnostics.
std::string formatShape(Dims shape);

/// The product of the dims (1 for a scalar), or -1 when a dim is negative
/// or the product overflows int64.
int64_t numElements(Dims shape);

/// NumPy / ONNX multidirectional broadcasting of two shapes.
ShapeOrError broadcastShapes(Dims a, Dims b);

/// numpy.matmul: 1-D operands promoted, batch dims broadcast.
ShapeOrError matmulShape(Dims lhs, Dims rhs);

/// Attention's output: q [B, H, Sq, D], k [B, H, Sk, D], v [B, H, Sk, Dv]
/// give [B, H, Sq, Dv]; a bias (empty Dims: none) must broadcast to
/// [B, H, Sq, Sk] (runtime/kernels/Attention.h). The log-sum-exp result is
/// the output's shape without its last dim.
ShapeOrError attentionShape(Dims q, Dims k, Dims v, Dims bias);

/// input [..., K] times weight [K, N] (or [N, K] when transposed).
ShapeOrError linearShape(Dims input, Dims weight, bool transposeWeight);

/// ONNX's output size of one spatial dim of a window op (convolution or
/// pooling): floor (or ceil) of (in + pads - dilated kernel) / stride, plus
/// one; a ceil-mode window that would start in the end padding is dropped.
/// 0 when the window does not fit.
int64_t pooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                   int64_t dilation, bool ceilMode);

/// ONNX's output size of one spatial dim of a transposed convolution:
/// stride * (in - 1) + outputPadding + (kernel - 1) * dilation + 1 - pads.
int64_t transposedSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                       int64_t dilation, int64_t outputPadding);

/// NCHW x OIHW convolution; pads are [top, left, bottom, right].
ShapeOrError conv2dShape(Dims input, Dims weight, Dims strides, Dims pads, Dims dilations,
                         int64_t groups);

/// NCHW pooling window; dilations may be empty (all ones).
ShapeOrError pool2dShape(Dims input, Dims kernel, Dims strides, Dims pads, Dims dilations,
                         bool ceilMode);

/// N-D convolution (1 to 3 spatial dims): input [N, C, D...], weight
/// [M, C/groups, k...]; pads are the begins then the ends.
ShapeOrError convShape(Dims input, Dims weight, Dims strides, Dims pads, Dims dilations,
                       int64_t groups);

/// N-D transposed convolution: input [N, C, D...], weight [C, M/groups,
/// k...]; each output dim is transposedSize's.
ShapeOrError convTransposeShape(Dims input, Dims weight, Dims strides, Dims pads, Dims dilations,
                                Dims outputPadding, int64_t groups);

/// N-D pooling window (1 to 3 spatial dims); dilations may be empty.
ShapeOrError poolShape(Dims input, Dims kernel, Dims strides, Dims pads, Dims dilations,
                       bool ceilMode);

/// Reduction over sorted, unique, non-negative axes (at least one).
ShapeOrError reduceShape(Dims input, Dims axes, bool keepDims);

/// output[i] = input[perm[i]].
ShapeOrError transposeShape(Dims input, Dims perm);

/// Concatenation along a non-negative axis.
ShapeOrError concatShape(const std::vector<Dims> &inputs, int64_t axis);

/// ONNX Gather: data[:axis] + indices + data[axis+1:].
ShapeOrError gatherShape(Dims data, Dims indices, int64_t axis);

/// ONNX GatherElements: the indices' shape (same rank as data, each dim
/// off the non-negative `axis` at most the data's).
ShapeOrError gatherElementsShape(Dims data, Dims indices, int64_t axis);

/// ONNX GatherND: indices[:-1] + data[batchDims + indices[-1]:].
ShapeOrError gatherNdShape(Dims data, Dims indices, int64_t batchDims);

/// ArgMax/ArgMin over the non-negative `axis`, which must not be empty.
ShapeOrError argReduceShape(Dims input, int64_t axis, bool keepDims);

/// TopK: the input with `k` (in [0, dim]) on the non-negative `axis`.
ShapeOrError topKShape(Dims input, int64_t axis, int64_t k);

/// An op that keeps its input's shape along a non-negative `axis` (CumSum).
ShapeOrError axisPreservingShape(Dims input, int64_t axis);

/// Checks that a strided slice with `counts` elements per dim stays in
/// bounds (the last index computed in 128 bits); empty when it does.
std::string checkSliceBounds(Dims input, Dims starts, Dims steps, Dims counts);

} // namespace mixprec::shapes

#endif // MIXPREC_COMMON_SHAPES_H
