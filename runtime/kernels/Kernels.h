//===- Kernels.h - FP32 CPU reference kernels -------------------*- C++ -*-===//
//
// Reference kernels for the standalone runtime: the MLIR interpreter and the
// compiled-module CPU backend both call these. The arithmetic kernels also
// have a double overload, the same code instantiated in FP64 (accumulators
// stay double), for the interpreter's FP64 mode (gradient checks). Semantics follow ONNX (results
// are checked against onnxruntime FP32), so every deviation from the ONNX
// definition would show up as a numerical mismatch downstream.
//
// Conventions:
//  * Buffers are dense, row-major (C order). Shapes are std::vector<int64_t>;
//    an empty shape is a scalar with one element.
//  * The caller (graph verifier / interpreter) validates shapes. Kernels assert
//    consistency in debug builds and, for consistent shapes, never read or
//    write outside the buffers their shapes describe.
//  * No exceptions (the project builds with -fno-exceptions); the few kernels
//    that can fail on data (gather) return bool.
//  * Output buffers must not alias inputs unless a function says otherwise.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_KERNELS_H
#define MIXPREC_RUNTIME_CPU_KERNELS_H

#include "common/Shapes.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace mixprec::runtime::cpu {

using Shape = std::vector<int64_t>;

// The shape rules (broadcasting, matmul, reductions, window sizes, gathers)
// are common/Shapes.h's, the ones the compiler verifies modules with: the
// kernels' preconditions are stated in its terms (shapes::pooledSize...).

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

/// Product of the dims; 1 for a scalar (empty shape).
int64_t numElements(const Shape &s);

/// Row-major element strides of a dense tensor of shape `s`.
std::vector<int64_t> contiguousStrides(const Shape &s);

/// Normalizes a possibly negative axis against `rank`; returns -1 when out of
/// range [-rank, rank).
int64_t normalizeAxis(int64_t axis, int64_t rank);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Max/Min propagate NaN (numpy.maximum / onnxruntime >= 1.15 behaviour).
enum class BinaryOp { Add, Sub, Mul, Div, Pow, Max, Min };

/// out = a (op) b with numpy broadcasting; `outShape` must equal
/// broadcastShapes(as, bs). `out` may alias `a` or `b` when that operand has
/// the output shape (in-place update).
void binary(BinaryOp op, const float *a, const Shape &as, const float *b,
            const Shape &bs, float *out, const Shape &outShape);
void binary(BinaryOp op, const double *a, const Shape &as, const double *b,
            const Shape &bs, double *out, const Shape &outShape);

enum class UnaryOp {
  Neg,
  Abs,
  Relu,
  GeluErf,  // 0.5 x (1 + erf(x / sqrt 2))
  GeluTanh, // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  Tanh,
  Sigmoid,
  Silu, // x * sigmoid(x), one rounding
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Erf,
  Reciprocal,
};

/// out[i] = op(in[i]); `out` may alias `in`.
void unary(UnaryOp op, const float *in, float *out, int64_t n);
void unary(UnaryOp op, const double *in, double *out, int64_t n);

/// out = cond ? a : b, all three broadcast to `os` (cond bytes: nonzero=true).
void where(const uint8_t *cond, const Shape &cs, const float *a,
           const Shape &as, const float *b, const Shape &bs, float *out,
           const Shape &os);
void where(const uint8_t *cond, const Shape &cs, const double *a,
           const Shape &as, const double *b, const Shape &bs, double *out,
           const Shape &os);

//===----------------------------------------------------------------------===//
// Linear algebra (OpenBLAS)
//===----------------------------------------------------------------------===//

/// numpy.matmul / ONNX MatMul: both operands rank >= 1; a 1-D `a` is promoted
/// to [1,K] and a 1-D `b` to [K,1], with the promoted dim removed from the
/// result; batch dims broadcast. `os` must equal matmulShape(as, bs).
void matmul(const float *a, const Shape &as, const float *b, const Shape &bs,
            float *out, const Shape &os);
void matmul(const double *a, const Shape &as, const double *b, const Shape &bs,
            double *out, const Shape &os);

/// y = x * (transposeW ? W^T : W) + bias.
/// x: [..., K] (leading dims flattened into M); W: [N,K] if transposeW else
/// [K,N]; os = x.shape[:-1] + [N]. `bias` may be null; otherwise biasShape
/// must broadcast (numpy rules) to `os` or to the 2-D view [M,N] (so [N],
/// [1,N], [M,N], [M,1] and scalars all work even when x has batch dims).
void linear(const float *x, const Shape &xs, const float *w, const Shape &ws,
            bool transposeW, const float *bias, const Shape &biasShape,
            float *out, const Shape &os);
void linear(const double *x, const Shape &xs, const double *w, const Shape &ws,
            bool transposeW, const double *bias, const Shape &biasShape,
            double *out, const Shape &os);

//===----------------------------------------------------------------------===//
// Normalization / softmax
//===----------------------------------------------------------------------===//

/// Softmax over one axis (opset-13 semantics), max-subtracted. Negative axes
/// are allowed. `out` may alias `in`.
void softmax(const float *in, const Shape &s, int64_t axis, float *out);
void logSoftmax(const float *in, const Shape &s, int64_t axis, float *out);
void softmax(const double *in, const Shape &s, int64_t axis, double *out);
void logSoftmax(const double *in, const Shape &s, int64_t axis, double *out);

/// ONNX LayerNormalization: normalizes over dims [axis, rank) with population
/// variance and eps inside the sqrt. scale/bias have numElements equal to the
/// product of the normalized dims; bias may be null. Negative axes allowed.
void layerNorm(const float *in, const Shape &s, int64_t axis,
               const float *scale, const float *bias, float eps, float *out);
void layerNorm(const double *in, const Shape &s, int64_t axis,
               const double *scale, const double *bias, double eps, double *out);

/// y = x / sqrt(mean(x^2 over [axis, rank)) + eps) * scale; scale may be null.
void rmsNorm(const float *in, const Shape &s, int64_t axis, const float *scale,
             float eps, float *out);
void rmsNorm(const double *in, const Shape &s, int64_t axis, const double *scale,
             double eps, double *out);

/// ONNX BatchNormalization (inference): s = [N, C, spatial...]; per-channel
/// scale/bias/mean/var of length C.
void batchNormInference(const float *in, const Shape &s, const float *scale,
                        const float *bias, const float *mean, const float *var,
                        float eps, float *out);
void batchNormInference(const double *in, const Shape &s, const double *scale,
                        const double *bias, const double *mean, const double *var,
                        double eps, double *out);

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// L1 = sum|x|, L2 = sqrt(sum x^2), LogSum = log(sum x),
/// LogSumExp = log(sum exp x) (max-shifted). Reductions over an empty set
/// give the identity: Sum 0, Prod 1, Max -inf, Min +inf, and Mean 0 (as
/// onnxruntime gives; not 0/0).
enum class ReduceOp {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  SumSquare,
  L1,
  L2,
  LogSum,
  LogSumExp,
};

/// Reduces `axes` (normalized, sorted, unique; empty = all) of `in`.
/// Sum-like reductions accumulate in double, so the result is the correctly
/// rounded float of a double-precision sum for any realistic length; Max/Min
/// are exact. `keepDims` only changes the logical output shape, not the
/// memory layout, and is accepted for the caller's readability/asserts.
void reduce(ReduceOp op, const float *in, const Shape &s,
            const std::vector<int64_t> &axes, bool keepDims, float *out);
void reduce(ReduceOp op, const double *in, const Shape &s,
            const std::vector<int64_t> &axes, bool keepDims, double *out);

//===----------------------------------------------------------------------===//
// Data movement (any trivially copyable element type)
//===----------------------------------------------------------------------===//

namespace detail {
void transposeRaw(const void *in, const Shape &s,
                  const std::vector<int64_t> &perm, void *out, size_t elemSize);
void concatRaw(const std::vector<const void *> &ins,
               const std::vector<Shape> &shapes, int64_t axis, void *out,
               size_t elemSize);
void sliceRaw(const void *in, const Shape &s,
              const std::vector<int64_t> &starts,
              const std::vector<int64_t> &steps, const Shape &outShape,
              void *out, size_t elemSize);
bool gatherRaw(const void *data, const Shape &ds, const int64_t *idx,
               const Shape &is, int64_t axis, void *out, size_t elemSize);
void expandRaw(const void *in, const Shape &s, void *out, const Shape &os,
               size_t elemSize);
} // namespace detail

/// out = in.transpose(perm); out shape is s[perm[i]].
template <typename T>
void transpose(const T *in, const Shape &s, const std::vector<int64_t> &perm,
               T *out) {
  static_assert(std::is_trivially_copyable_v<T>);
  detail::transposeRaw(in, s, perm, out, sizeof(T));
}

/// Concatenation along `axis` (normalized or negative).
template <typename T>
void concat(const std::vector<const T *> &ins, const std::vector<Shape> &shapes,
            int64_t axis, T *out) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::vector<const void *> raw(ins.begin(), ins.end());
  detail::concatRaw(raw, shapes, axis, out, sizeof(T));
}

/// out[i_0..] = in[starts[d] + i_d * steps[d] ...]. starts are already
/// normalized/clamped (ONNX Slice preprocessing), steps are nonzero and may be
/// negative, and outShape gives the element count per axis. Every touched
/// index must lie inside `s` (asserted).
template <typename T>
void slice(const T *in, const Shape &s, const std::vector<int64_t> &starts,
           const std::vector<int64_t> &steps, const Shape &outShape, T *out) {
  static_assert(std::is_trivially_copyable_v<T>);
  detail::sliceRaw(in, s, starts, steps, outShape, out, sizeof(T));
}

/// ONNX Gather: out shape = ds[:axis] + is + ds[axis+1:]. Negative indices
/// wrap once; any index outside [-ds[axis], ds[axis]) makes it return false
/// without writing `out`.
template <typename T>
[[nodiscard]] bool gather(const T *data, const Shape &ds, const int64_t *idx,
                          const Shape &is, int64_t axis, T *out) {
  static_assert(std::is_trivially_copyable_v<T>);
  return detail::gatherRaw(data, ds, idx, is, axis, out, sizeof(T));
}

/// ONNX Expand / numpy broadcast_to: copies `in` broadcast to `os`.
template <typename T>
void expand(const T *in, const Shape &s, T *out, const Shape &os) {
  static_assert(std::is_trivially_copyable_v<T>);
  detail::expandRaw(in, s, out, os, sizeof(T));
}

//===----------------------------------------------------------------------===//
// Convolution / pooling (NCHW)
//===----------------------------------------------------------------------===//

/// ONNX auto_pad SAME_UPPER / SAME_LOWER pads for one spatial dim (output size
/// ceil(in / stride)); the odd pad goes to the end for SAME_UPPER.
void samePads(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
              bool upper, int64_t *padBegin, int64_t *padEnd);

/// ONNX Conv, 2-D: in [N,C,H,W], w [M, C/groups, kH, kW], bias [M] or null,
/// pads {top, left, bottom, right}, out [N,M,OH,OW] (os as computed by
/// pooledSize with ceilMode=false). im2col + cblas_sgemm per image and group.
void conv2d(const float *in, const Shape &is, const float *w, const Shape &ws,
            const float *bias, const std::array<int64_t, 2> &strides,
            const std::array<int64_t, 4> &pads,
            const std::array<int64_t, 2> &dilations, int64_t groups, float *out,
            const Shape &os);
void conv2d(const double *in, const Shape &is, const double *w, const Shape &ws,
            const double *bias, const std::array<int64_t, 2> &strides,
            const std::array<int64_t, 4> &pads,
            const std::array<int64_t, 2> &dilations, int64_t groups, double *out,
            const Shape &os);

/// ONNX MaxPool, 2-D. Padding never wins: only in-bounds elements take part
/// (a window with none yields -inf). NaN propagates.
void maxPool2d(const float *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads,
               const std::array<int64_t, 2> &dilations, float *out,
               const Shape &os);
void maxPool2d(const double *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads,
               const std::array<int64_t, 2> &dilations, double *out,
               const Shape &os);

/// ONNX AveragePool, 2-D (dilations from opset 19). With countIncludePad the
/// divisor counts the window taps inside the padded extent
/// [-padBegin, in + padEnd) (so the ceil_mode overhang beyond the end pad is
/// not counted, as in onnxruntime); otherwise only in-bounds taps. A window
/// with no in-bounds tap yields 0.
void avgPool2d(const float *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads, bool countIncludePad,
               float *out, const Shape &os,
               const std::array<int64_t, 2> &dilations = {1, 1});
void avgPool2d(const double *in, const Shape &is,
               const std::array<int64_t, 2> &kernel,
               const std::array<int64_t, 2> &strides,
               const std::array<int64_t, 4> &pads, bool countIncludePad,
               double *out, const Shape &os,
               const std::array<int64_t, 2> &dilations = {1, 1});

/// The window of an N-D convolution or pooling op (1 to 3 spatial dims),
/// one value per spatial dim: kernel (pooling only; a convolution's is its
/// weight's), strides, dilations; pads are the begins then the ends (ONNX
/// order: {top, left, bottom, right} in 2-D).
struct Window {
  std::vector<int64_t> kernel, strides, pads, dilations;
};

/// ONNX Conv, N-D: in [N, C, D...], w [M, C/groups, k...], bias [M] or null,
/// out [N, M, O...] (pooledSize with ceilMode=false). im2col + SGEMM per
/// image and group.
void conv(const float *in, const Shape &is, const float *w, const Shape &ws,
          const float *bias, const Window &win, int64_t groups, float *out,
          const Shape &os);
void conv(const double *in, const Shape &is, const double *w, const Shape &ws,
          const double *bias, const Window &win, int64_t groups, double *out,
          const Shape &os);

/// ONNX ConvTranspose, N-D: in [N, C, D...], w [C, M/groups, k...], bias
/// [M] or null, out [N, M, O...] (O as transposedSize gives with the
/// output padding the caller chose). SGEMM (W_g^T x_g) + col2im per image
/// and group, accumulated in FP32.
void convTranspose(const float *in, const Shape &is, const float *w, const Shape &ws,
                   const float *bias, const Window &win, int64_t groups, float *out,
                   const Shape &os);
void convTranspose(const double *in, const Shape &is, const double *w, const Shape &ws,
                   const double *bias, const Window &win, int64_t groups, double *out,
                   const Shape &os);

/// ONNX MaxPool, N-D. Padding never wins: only in-bounds elements take part.
/// NaN propagates. With `indices`, also writes ONNX's Indices output: the
/// flat index of the (first) maximum in the whole input, its spatial part
/// row-major, or column-major (storage_order 1) when `columnMajor`.
void maxPool(const float *in, const Shape &is, const Window &win, float *out,
             const Shape &os, int64_t *indices = nullptr, bool columnMajor = false);
void maxPool(const double *in, const Shape &is, const Window &win, double *out,
             const Shape &os, int64_t *indices = nullptr, bool columnMajor = false);

/// maxPool() for a 2-D window over `in` stored channels-last: the logical
/// [N, C, H, W] of `is` laid out as [N, H, W, C] (oneDNN's nhwc). Each
/// output takes the same taps in the same order under maxPool's rule (the
/// first tap, then each later one that is larger or the first NaN; -inf
/// for a window with no in-bounds tap), all channels of a position at once:
/// maxPool's bits. Writes output rows [firstRow, endRow) of the N x OH
/// rows, channels-last when `channelsLastOut`, else in the plain layout.
void maxPool2dChannelsLast(const float *in, const Shape &is, const Window &win, float *out,
                           const Shape &os, bool channelsLastOut, int64_t firstRow, int64_t endRow);

/// ONNX AveragePool, N-D, with avgPool2d's divisor rule per dim.
void avgPool(const float *in, const Shape &is, const Window &win, bool countIncludePad,
             float *out, const Shape &os);
void avgPool(const double *in, const Shape &is, const Window &win, bool countIncludePad,
             double *out, const Shape &os);

/// ONNX GlobalAveragePool / GlobalMaxPool over all dims after [N, C].
void globalAvgPool(const float *in, const Shape &is, float *out);
void globalMaxPool(const float *in, const Shape &is, float *out);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_KERNELS_H
