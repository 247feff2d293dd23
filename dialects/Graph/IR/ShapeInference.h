//===- ShapeInference.h - result shapes of mp ops --------------*- C++ -*-===//
//
// The shape functions of the mp ops: the verifiers check results against
// them, and the ops' type inference (GraphTypeInference.cpp), which the ONNX
// importer builds ops with, computes them, so that a shape the importer
// infers is the shape the verifier accepts.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_DIALECTS_GRAPH_IR_SHAPEINFERENCE_H
#define MIXPREC_DIALECTS_GRAPH_IR_SHAPEINFERENCE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace mixprec::graph {

using Shape = llvm::SmallVector<int64_t, 4>;

/// A shape, or the rule that made it impossible (error is then not empty).
struct ShapeOrError {
  Shape shape;
  std::string error;
  bool ok() const { return error.empty(); }
  static ShapeOrError failure(std::string why) { return {{}, std::move(why)}; }
};

/// Formats a shape as "[2, 3, 4]" for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Returns the product of the dims, or -1 when it overflows int64.
int64_t numElements(llvm::ArrayRef<int64_t> shape);

/// NumPy broadcasting of two shapes.
ShapeOrError broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// numpy.matmul: 1-D operands promoted, batch dims broadcast.
ShapeOrError matmulShape(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs);

/// input [..., K] times weight [K, N] (or [N, K] when transposed).
ShapeOrError linearShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> weight,
                         bool transposeWeight);

/// ONNX output size of one spatial dim of a window op.
int64_t pooledSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin,
                   int64_t padEnd, int64_t dilation, bool ceilMode);

/// NCHW x OIHW convolution; pads are [top, left, bottom, right].
ShapeOrError conv2dShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> weight,
                         llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                         llvm::ArrayRef<int64_t> dilations, int64_t groups);

/// NCHW pooling window; dilations may be empty (all ones).
ShapeOrError pool2dShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> kernel,
                         llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                         llvm::ArrayRef<int64_t> dilations, bool ceilMode);

/// N-D convolution (1 to 3 spatial dims): input [N, C, D...], weight
/// [M, C/groups, k...]; pads are the begins then the ends.
ShapeOrError convShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> weight,
                       llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                       llvm::ArrayRef<int64_t> dilations, int64_t groups);

/// N-D transposed convolution: input [N, C, D...], weight [C, M/groups,
/// k...]; each output dim is ONNX's stride * (in - 1) + output_padding +
/// (k - 1) * dilation + 1 - pads.
ShapeOrError convTransposeShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> weight,
                                llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                                llvm::ArrayRef<int64_t> dilations,
                                llvm::ArrayRef<int64_t> outputPadding, int64_t groups);

/// N-D pooling window (1 to 3 spatial dims); dilations may be empty.
ShapeOrError poolShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> kernel,
                       llvm::ArrayRef<int64_t> strides, llvm::ArrayRef<int64_t> pads,
                       llvm::ArrayRef<int64_t> dilations, bool ceilMode);

/// Reduction over sorted, unique, non-negative axes.
ShapeOrError reduceShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> axes,
                         bool keepDims);

/// output[i] = input[perm[i]].
ShapeOrError transposeShape(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> perm);

/// Concatenation along a non-negative axis.
ShapeOrError concatShape(llvm::ArrayRef<llvm::SmallVector<int64_t, 4>> inputs, int64_t axis);

/// ONNX Gather: data[:axis] + indices + data[axis+1:].
ShapeOrError gatherShape(llvm::ArrayRef<int64_t> data, llvm::ArrayRef<int64_t> indices,
                         int64_t axis);

/// ONNX GatherElements: the indices' shape (same rank as data, each dim
/// off the non-negative `axis` at most the data's).
ShapeOrError gatherElementsShape(llvm::ArrayRef<int64_t> data, llvm::ArrayRef<int64_t> indices,
                                 int64_t axis);

/// ONNX GatherND: indices[:-1] + data[batchDims + indices[-1]:].
ShapeOrError gatherNdShape(llvm::ArrayRef<int64_t> data, llvm::ArrayRef<int64_t> indices,
                           int64_t batchDims);

/// ArgMax/ArgMin over the non-negative `axis`, which must not be empty.
ShapeOrError argReduceShape(llvm::ArrayRef<int64_t> input, int64_t axis, bool keepDims);

/// TopK: the input with `k` (in [0, dim]) on the non-negative `axis`.
ShapeOrError topKShape(llvm::ArrayRef<int64_t> input, int64_t axis, int64_t k);

/// An op that keeps its input's shape along a non-negative `axis` (CumSum).
ShapeOrError axisPreservingShape(llvm::ArrayRef<int64_t> input, int64_t axis);

/// Checks that a strided slice with `counts` elements per dim stays in bounds.
std::string checkSliceBounds(llvm::ArrayRef<int64_t> input, llvm::ArrayRef<int64_t> starts,
                             llvm::ArrayRef<int64_t> steps, llvm::ArrayRef<int64_t> counts);

} // namespace mixprec::graph

#endif // MIXPREC_DIALECTS_GRAPH_IR_SHAPEINFERENCE_H
