//===- Elementwise.cpp - Shape helpers, binary/unary ops, Where -----------===//

#include "runtime/kernels/Erf.h"
#include "runtime/kernels/Exp.h"
#include "runtime/kernels/Kernels.h"
#include "runtime/kernels/StridedLoop.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace mixprec::runtime::cpu {

int64_t numElements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) {
    assert(d >= 0 && "negative dim");
    n *= d;
  }
  return n;
}

std::vector<int64_t> contiguousStrides(const Shape &s) {
  std::vector<int64_t> strides(s.size());
  int64_t stride = 1;
  for (size_t i = s.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= s[i];
  }
  return strides;
}

int64_t normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return -1;
  return axis < 0 ? axis + rank : axis;
}

namespace {

// One contiguous output run of a broadcast binary op. After coalescing, the
// input strides along the run are 0 (broadcast) or 1, so the three common
// patterns get their own vectorizable loops.
template <typename T, typename F>
inline void binaryRun(F f, const T *a, int64_t sa, const T *b,
                      int64_t sb, T *o, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = b[0];
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = a[0];
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(a[i * sa], b[i * sb]);
  }
}

template <typename T, typename F>
void binaryImpl(F f, const T *a, const Shape &as, const T *b,
                const Shape &bs, T *out, const Shape &os) {
  const int64_t n = numElements(os);
  if (n == 0)
    return;
  // Operands whose element count equals the output's differ from it only by
  // size-1 dims, so they share its flat layout.
  if (numElements(as) == n && numElements(bs) == n) {
    binaryRun(f, a, 1, b, 1, out, n);
    return;
  }
  if (numElements(bs) == 1 && numElements(as) == n) {
    binaryRun(f, a, 1, b, 0, out, n);
    return;
  }
  if (numElements(as) == 1 && numElements(bs) == n) {
    binaryRun(f, a, 0, b, 1, out, n);
    return;
  }
  std::vector<int64_t> so = contiguousStrides(os);
  std::vector<int64_t> sa = detail::broadcastStrides(as, os);
  std::vector<int64_t> sb = detail::broadcastStrides(bs, os);
  auto plan = detail::makePlan<3>(os, {&so, &sa, &sb});
  detail::forEachRow<3>(plan, {0, 0, 0},
                        [&](const std::array<int64_t, 3> &off, int64_t len,
                            const std::array<int64_t, 3> &st) {
                          assert(st[0] == 1);
                          binaryRun(f, a + off[1], st[1], b + off[2], st[2],
                                    out + off[0], len);
                        });
}

template <typename T> inline T maxPropagateNaN(T x, T y) {
  // Written so that a NaN in either operand wins, like numpy.maximum.
  return (x > y || x != x) ? x : y;
}
template <typename T> inline T minPropagateNaN(T x, T y) {
  return (x < y || x != x) ? x : y;
}

/// binary() in T (float: the runtime's kernel; double: the interpreter's
/// FP64 mode).
template <typename T>
void binaryT(BinaryOp op, const T *a, const Shape &as, const T *b,
             const Shape &bs, T *out, const Shape &outShape) {
#ifndef NDEBUG
  const shapes::ShapeOrError joined = shapes::broadcastShapes(as, bs);
  assert(joined.ok() && joined.shape == outShape);
#endif
  switch (op) {
  case BinaryOp::Add:
    return binaryImpl([](T x, T y) { return x + y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Sub:
    return binaryImpl([](T x, T y) { return x - y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Mul:
    return binaryImpl([](T x, T y) { return x * y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Div:
    return binaryImpl([](T x, T y) { return x / y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Pow:
    return binaryImpl([](T x, T y) { return std::pow(x, y); }, a, as, b,
                      bs, out, outShape);
  case BinaryOp::Max:
    return binaryImpl(maxPropagateNaN<T>, a, as, b, bs, out, outShape);
  case BinaryOp::Min:
    return binaryImpl(minPropagateNaN<T>, a, as, b, bs, out, outShape);
  }
  assert(false && "unknown BinaryOp");
}

} // namespace

void binary(BinaryOp op, const float *a, const Shape &as, const float *b,
            const Shape &bs, float *out, const Shape &outShape) {
  binaryT(op, a, as, b, bs, out, outShape);
}

void binary(BinaryOp op, const double *a, const Shape &as, const double *b,
            const Shape &bs, double *out, const Shape &outShape) {
  binaryT(op, a, as, b, bs, out, outShape);
}

namespace {

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MIXPREC_RELU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define MIXPREC_RELU_CLONES
#endif

/// ReLU over FP32 in vector lanes: `x < 0 ? 0 : x` (NaN and -0 kept) is a
/// compare and a select, no arithmetic, so every clone gives the same bits.
/// (The CPU backend's pass after each convolution: the baseline build's
/// four-wide loop made it 2% of a ResNet-18 run.) in == out is allowed.
MIXPREC_RELU_CLONES void reluArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = in[i] < 0.0f ? 0.0f : in[i];
}

/// A constant as T: the float literal for float (so the FP32 kernels keep
/// their exact constants), the double literal for double.
template <typename T> constexpr T literal(float f, double d) {
  if constexpr (std::is_same_v<T, float>)
    return f;
  else
    return d;
}

template <typename T> inline T sigmoid(T x) {
  // exp of a non-positive argument only, so neither branch overflows.
  if (x >= T(0))
    return T(1) / (T(1) + std::exp(-x));
  const T e = std::exp(x);
  return e / (T(1) + e);
}

template <typename T> inline T geluErf(T x) {
  constexpr T kInvSqrt2 =
      literal<T>(0.70710678118654752440f, 0.70710678118654752440);
  return T(0.5) * x * (T(1) + std::erf(x * kInvSqrt2));
}

template <typename T> inline T geluTanh(T x) {
  // 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)) exactly. The sigmoid form avoids
  // the cancellation in 1 + tanh(u) for negative x, saturates cleanly (x/inf
  // = -0 for very negative x) and is ~2.5x faster than tanhf.
  constexpr T kTwoSqrt2OverPi =
      literal<T>(1.59576912160573071176f, 1.59576912160573071176);
  const T u2 =
      kTwoSqrt2OverPi * (x + literal<T>(0.044715f, 0.044715) * x * x * x);
  return x / (T(1) + std::exp(-u2));
}

template <typename T, typename F>
inline void unaryLoop(F f, const T *in, T *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(in[i]);
}

/// unary() in T.
template <typename T> void unaryT(UnaryOp op, const T *in, T *out, int64_t n) {
  assert(n >= 0);
  switch (op) {
  case UnaryOp::Neg:
    return unaryLoop([](T x) { return -x; }, in, out, n);
  case UnaryOp::Abs:
    return unaryLoop([](T x) { return std::fabs(x); }, in, out, n);
  case UnaryOp::Relu:
    // `x < 0 ? 0 : x` keeps NaN, like onnxruntime's max(x, 0).
    if constexpr (std::is_same_v<T, float>)
      return reluArray(in, out, n);
    else
      return unaryLoop([](T x) { return x < T(0) ? T(0) : x; }, in, out, n);
  case UnaryOp::GeluErf:
    // FP32: Erf.h's erf, vectorised (the C library's erff runs one value at
    // a time); FP64 (the interpreter's reference mode): std::erf.
    if constexpr (std::is_same_v<T, float>)
      return geluErfArray(in, out, n);
    else
      return unaryLoop(geluErf<T>, in, out, n);
  case UnaryOp::GeluTanh:
    // FP32: Exp.h's exponential, vectorised (the C library's expf runs one
    // value at a time); FP64: std::exp. The same formulas.
    if constexpr (std::is_same_v<T, float>)
      return geluTanhArray(in, out, n);
    else
      return unaryLoop(geluTanh<T>, in, out, n);
  case UnaryOp::Tanh:
    // FP32: on Exp.h's exponential, vectorised (the C library's tanhf runs
    // one value at a time, ~20 ns each); FP64: std::tanh.
    if constexpr (std::is_same_v<T, float>)
      return tanhArray(in, out, n);
    else
      return unaryLoop([](T x) { return std::tanh(x); }, in, out, n);
  case UnaryOp::Sigmoid:
    if constexpr (std::is_same_v<T, float>)
      return sigmoidArray(in, out, n);
    else
      return unaryLoop(sigmoid<T>, in, out, n);
  case UnaryOp::Silu:
    if constexpr (std::is_same_v<T, float>)
      return siluArray(in, out, n);
    else
      return unaryLoop([](T x) { return x * sigmoid(x); }, in, out, n);
  case UnaryOp::Exp:
    if constexpr (std::is_same_v<T, float>)
      return expArray(in, out, n);
    else
      return unaryLoop([](T x) { return std::exp(x); }, in, out, n);
  case UnaryOp::Log:
    return unaryLoop([](T x) { return std::log(x); }, in, out, n);
  case UnaryOp::Sqrt:
    return unaryLoop([](T x) { return std::sqrt(x); }, in, out, n);
  case UnaryOp::Rsqrt:
    return unaryLoop([](T x) { return T(1) / std::sqrt(x); }, in, out, n);
  case UnaryOp::Erf:
    if constexpr (std::is_same_v<T, float>)
      return erfArray(in, out, n);
    else
      return unaryLoop([](T x) { return std::erf(x); }, in, out, n);
  case UnaryOp::Reciprocal:
    return unaryLoop([](T x) { return T(1) / x; }, in, out, n);
  }
  assert(false && "unknown UnaryOp");
}

/// where() in T.
template <typename T>
void whereT(const uint8_t *cond, const Shape &cs, const T *a, const Shape &as,
            const T *b, const Shape &bs, T *out, const Shape &os) {
#ifndef NDEBUG
  const shapes::ShapeOrError ab = shapes::broadcastShapes(as, bs);
  const shapes::ShapeOrError all = shapes::broadcastShapes(cs, ab.shape);
  assert(ab.ok() && all.ok() && all.shape == os);
#endif
  std::vector<int64_t> so = contiguousStrides(os);
  std::vector<int64_t> sc = detail::broadcastStrides(cs, os);
  std::vector<int64_t> sa = detail::broadcastStrides(as, os);
  std::vector<int64_t> sb = detail::broadcastStrides(bs, os);
  auto plan = detail::makePlan<4>(os, {&so, &sc, &sa, &sb});
  detail::forEachRow<4>(plan, {0, 0, 0, 0},
                        [&](const std::array<int64_t, 4> &off, int64_t n,
                            const std::array<int64_t, 4> &st) {
                          T *o = out + off[0];
                          const uint8_t *c = cond + off[1];
                          const T *pa = a + off[2];
                          const T *pb = b + off[3];
                          if (st[1] == 1 && st[2] == 1 && st[3] == 1) {
                            for (int64_t i = 0; i < n; ++i)
                              o[i] = c[i] ? pa[i] : pb[i];
                            return;
                          }
                          for (int64_t i = 0; i < n; ++i)
                            o[i] = c[i * st[1]] ? pa[i * st[2]] : pb[i * st[3]];
                        });
}

} // namespace

void unary(UnaryOp op, const float *in, float *out, int64_t n) { unaryT(op, in, out, n); }
void unary(UnaryOp op, const double *in, double *out, int64_t n) { unaryT(op, in, out, n); }

void where(const uint8_t *cond, const Shape &cs, const float *a,
           const Shape &as, const float *b, const Shape &bs, float *out,
           const Shape &os) {
  whereT(cond, cs, a, as, b, bs, out, os);
}
void where(const uint8_t *cond, const Shape &cs, const double *a,
           const Shape &as, const double *b, const Shape &bs, double *out,
           const Shape &os) {
  whereT(cond, cs, a, as, b, bs, out, os);
}

} // namespace mixprec::runtime::cpu
