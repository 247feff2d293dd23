//===- Elementwise.cpp - Shape helpers, binary/unary ops, Where -----------===//

#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/StridedLoop.h"

#include <cassert>
#include <cmath>
#include <cstring>

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

Shape broadcastShapes(const Shape &a, const Shape &b, bool *ok) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Right-align; missing leading dims act as 1.
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      if (ok)
        *ok = false;
      return {};
    }
  }
  if (ok)
    *ok = true;
  return out;
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
template <typename F>
inline void binaryRun(F f, const float *a, int64_t sa, const float *b,
                      int64_t sb, float *o, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const float bv = b[0];
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const float av = a[0];
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(av, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      o[i] = f(a[i * sa], b[i * sb]);
  }
}

template <typename F>
void binaryImpl(F f, const float *a, const Shape &as, const float *b,
                const Shape &bs, float *out, const Shape &os) {
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

inline float maxPropagateNaN(float x, float y) {
  // Written so that a NaN in either operand wins, like numpy.maximum.
  return (x > y || x != x) ? x : y;
}
inline float minPropagateNaN(float x, float y) {
  return (x < y || x != x) ? x : y;
}

} // namespace

void binary(BinaryOp op, const float *a, const Shape &as, const float *b,
            const Shape &bs, float *out, const Shape &outShape) {
#ifndef NDEBUG
  bool ok = false;
  assert(broadcastShapes(as, bs, &ok) == outShape && ok);
#endif
  switch (op) {
  case BinaryOp::Add:
    return binaryImpl([](float x, float y) { return x + y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Sub:
    return binaryImpl([](float x, float y) { return x - y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Mul:
    return binaryImpl([](float x, float y) { return x * y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Div:
    return binaryImpl([](float x, float y) { return x / y; }, a, as, b, bs, out,
                      outShape);
  case BinaryOp::Pow:
    return binaryImpl([](float x, float y) { return std::pow(x, y); }, a, as, b,
                      bs, out, outShape);
  case BinaryOp::Max:
    return binaryImpl(maxPropagateNaN, a, as, b, bs, out, outShape);
  case BinaryOp::Min:
    return binaryImpl(minPropagateNaN, a, as, b, bs, out, outShape);
  }
  assert(false && "unknown BinaryOp");
}

namespace {

inline float sigmoid(float x) {
  // exp of a non-positive argument only, so neither branch overflows.
  if (x >= 0.0f)
    return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

inline float geluErf(float x) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
}

inline float geluTanh(float x) {
  // 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)) exactly. The sigmoid form avoids
  // the cancellation in 1 + tanh(u) for negative x, saturates cleanly (x/inf
  // = -0 for very negative x) and is ~2.5x faster than tanhf.
  constexpr float kTwoSqrt2OverPi = 1.59576912160573071176f;
  const float u2 = kTwoSqrt2OverPi * (x + 0.044715f * x * x * x);
  return x / (1.0f + std::exp(-u2));
}

template <typename F>
inline void unaryLoop(F f, const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(in[i]);
}

} // namespace

void unary(UnaryOp op, const float *in, float *out, int64_t n) {
  assert(n >= 0);
  switch (op) {
  case UnaryOp::Neg:
    return unaryLoop([](float x) { return -x; }, in, out, n);
  case UnaryOp::Abs:
    return unaryLoop([](float x) { return std::fabs(x); }, in, out, n);
  case UnaryOp::Relu:
    // `x < 0 ? 0 : x` keeps NaN, like onnxruntime's max(x, 0).
    return unaryLoop([](float x) { return x < 0.0f ? 0.0f : x; }, in, out, n);
  case UnaryOp::GeluErf:
    return unaryLoop(geluErf, in, out, n);
  case UnaryOp::GeluTanh:
    return unaryLoop(geluTanh, in, out, n);
  case UnaryOp::Tanh:
    return unaryLoop([](float x) { return std::tanh(x); }, in, out, n);
  case UnaryOp::Sigmoid:
    return unaryLoop(sigmoid, in, out, n);
  case UnaryOp::Silu:
    return unaryLoop([](float x) { return x * sigmoid(x); }, in, out, n);
  case UnaryOp::Exp:
    return unaryLoop([](float x) { return std::exp(x); }, in, out, n);
  case UnaryOp::Log:
    return unaryLoop([](float x) { return std::log(x); }, in, out, n);
  case UnaryOp::Sqrt:
    return unaryLoop([](float x) { return std::sqrt(x); }, in, out, n);
  case UnaryOp::Rsqrt:
    return unaryLoop([](float x) { return 1.0f / std::sqrt(x); }, in, out, n);
  case UnaryOp::Erf:
    return unaryLoop([](float x) { return std::erf(x); }, in, out, n);
  case UnaryOp::Reciprocal:
    return unaryLoop([](float x) { return 1.0f / x; }, in, out, n);
  }
  assert(false && "unknown UnaryOp");
}

void where(const uint8_t *cond, const Shape &cs, const float *a,
           const Shape &as, const float *b, const Shape &bs, float *out,
           const Shape &os) {
#ifndef NDEBUG
  bool ok1 = false, ok2 = false;
  Shape ab = broadcastShapes(as, bs, &ok1);
  assert(ok1 && broadcastShapes(cs, ab, &ok2) == os && ok2);
#endif
  std::vector<int64_t> so = contiguousStrides(os);
  std::vector<int64_t> sc = detail::broadcastStrides(cs, os);
  std::vector<int64_t> sa = detail::broadcastStrides(as, os);
  std::vector<int64_t> sb = detail::broadcastStrides(bs, os);
  auto plan = detail::makePlan<4>(os, {&so, &sc, &sa, &sb});
  detail::forEachRow<4>(plan, {0, 0, 0, 0},
                        [&](const std::array<int64_t, 4> &off, int64_t n,
                            const std::array<int64_t, 4> &st) {
                          float *o = out + off[0];
                          const uint8_t *c = cond + off[1];
                          const float *pa = a + off[2];
                          const float *pb = b + off[3];
                          if (st[1] == 1 && st[2] == 1 && st[3] == 1) {
                            for (int64_t i = 0; i < n; ++i)
                              o[i] = c[i] ? pa[i] : pb[i];
                            return;
                          }
                          for (int64_t i = 0; i < n; ++i)
                            o[i] = c[i * st[1]] ? pa[i * st[2]] : pb[i * st[3]];
                        });
}

} // namespace mixprec::runtime::cpu
