//===- Reduce.cpp - Reductions --------------------------------------------===//
//
// All reductions accumulate in double (one double accumulator per output
// element), then round once to float. For float inputs this makes sums
// effectively order-independent at float precision, so results match
// onnxruntime regardless of how either side orders the additions. Max/Min are
// exact either way.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Kernels.h"
#include "runtime/kernels/StridedLoop.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace mixprec::runtime::cpu {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct SumAcc {
  static constexpr double kInit = 0.0;
  template <typename X> static double step(double a, X x) { return a + x; }
  static double combine(double a, double b) { return a + b; }
};
struct SumSquareAcc {
  static constexpr double kInit = 0.0;
  template <typename X> static double step(double a, X x) {
    return a + static_cast<double>(x) * x;
  }
  static double combine(double a, double b) { return a + b; }
};
struct AbsSumAcc {
  static constexpr double kInit = 0.0;
  template <typename X> static double step(double a, X x) { return a + std::fabs(x); }
  static double combine(double a, double b) { return a + b; }
};
struct ProdAcc {
  static constexpr double kInit = 1.0;
  template <typename X> static double step(double a, X x) { return a * x; }
  static double combine(double a, double b) { return a * b; }
};
// NaN wins (x != x), matching numpy / onnxruntime's NaN-propagating max.
struct MaxAcc {
  static constexpr double kInit = -kInf;
  template <typename X> static double step(double a, X x) {
    return (x > a || x != x) ? static_cast<double>(x) : a;
  }
  static double combine(double a, double b) {
    return (b > a || b != b) ? b : a;
  }
};
struct MinAcc {
  static constexpr double kInit = kInf;
  template <typename X> static double step(double a, X x) {
    return (x < a || x != x) ? static_cast<double>(x) : a;
  }
  static double combine(double a, double b) {
    return (b < a || b != b) ? b : a;
  }
};

template <typename Acc, typename T>
double reduceRun(const T *x, int64_t n, int64_t stride, double a) {
  if (stride != 1) {
    for (int64_t i = 0; i < n; ++i)
      a = Acc::step(a, x[i * stride]);
    return a;
  }
  // Four independent chains hide the FP add latency on long rows.
  double a1 = Acc::kInit, a2 = Acc::kInit, a3 = Acc::kInit;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a = Acc::step(a, x[i]);
    a1 = Acc::step(a1, x[i + 1]);
    a2 = Acc::step(a2, x[i + 2]);
    a3 = Acc::step(a3, x[i + 3]);
  }
  for (; i < n; ++i)
    a = Acc::step(a, x[i]);
  return Acc::combine(Acc::combine(a, a1), Acc::combine(a2, a3));
}

struct ReducePlan {
  detail::StridedPlan<2> plan; // operand 0: input, operand 1: accumulator
  int64_t outCount = 1;
  int64_t reduceCount = 1; // elements folded into each output
};

ReducePlan makeReducePlan(const Shape &s, const std::vector<int64_t> &axes) {
  const size_t rank = s.size();
  std::vector<bool> reduced(rank, axes.empty());
  for (int64_t a : axes) {
    assert(a >= 0 && static_cast<size_t>(a) < rank && "axis not normalized");
    reduced[a] = true;
  }
  Shape kept = s;
  ReducePlan rp;
  for (size_t i = 0; i < rank; ++i)
    if (reduced[i]) {
      rp.reduceCount *= s[i];
      kept[i] = 1;
    }
  rp.outCount = numElements(kept);
  std::vector<int64_t> sin = contiguousStrides(s);
  std::vector<int64_t> sacc = contiguousStrides(kept);
  for (size_t i = 0; i < rank; ++i)
    if (reduced[i])
      sacc[i] = 0;
  rp.plan = detail::makePlan<2>(s, {&sin, &sacc});
  return rp;
}

template <typename Acc, typename T>
void accumulate(const ReducePlan &rp, const T *in,
                std::vector<double> &acc) {
  acc.assign(rp.outCount, Acc::kInit);
  double *a = acc.data();
  detail::forEachRow<2>(rp.plan, {0, 0},
                        [&](const std::array<int64_t, 2> &off, int64_t n,
                            const std::array<int64_t, 2> &st) {
                          const T *x = in + off[0];
                          double *y = a + off[1];
                          if (st[1] == 0) {
                            y[0] = reduceRun<Acc>(x, n, st[0], y[0]);
                          } else {
                            for (int64_t i = 0; i < n; ++i)
                              y[i * st[1]] =
                                  Acc::step(y[i * st[1]], x[i * st[0]]);
                          }
                        });
}

} // namespace

namespace {

/// reduce() in T: the accumulators are double either way.
template <typename T>
void reduceT(ReduceOp op, const T *in, const Shape &s,
             const std::vector<int64_t> &axes, bool keepDims, T *out) {
  (void)keepDims; // Same memory layout either way.
  for (size_t i = 1; i < axes.size(); ++i)
    assert(axes[i - 1] < axes[i] && "axes must be sorted and unique");
  const ReducePlan rp = makeReducePlan(s, axes);
  std::vector<double> acc;
  auto finish = [&](auto f) {
    for (int64_t i = 0; i < rp.outCount; ++i)
      out[i] = static_cast<T>(f(acc[i]));
  };
  switch (op) {
  case ReduceOp::Sum:
    accumulate<SumAcc>(rp, in, acc);
    return finish([](double v) { return v; });
  case ReduceOp::Mean: {
    accumulate<SumAcc>(rp, in, acc);
    // The mean of no values is 0, as onnxruntime gives (not 0/0).
    const double count = static_cast<double>(std::max<int64_t>(rp.reduceCount, 1));
    return finish([count](double v) { return v / count; });
  }
  case ReduceOp::Max:
    accumulate<MaxAcc>(rp, in, acc);
    return finish([](double v) { return v; });
  case ReduceOp::Min:
    accumulate<MinAcc>(rp, in, acc);
    return finish([](double v) { return v; });
  case ReduceOp::Prod:
    accumulate<ProdAcc>(rp, in, acc);
    return finish([](double v) { return v; });
  case ReduceOp::SumSquare:
    accumulate<SumSquareAcc>(rp, in, acc);
    return finish([](double v) { return v; });
  case ReduceOp::L1:
    accumulate<AbsSumAcc>(rp, in, acc);
    return finish([](double v) { return v; });
  case ReduceOp::L2:
    accumulate<SumSquareAcc>(rp, in, acc);
    return finish([](double v) { return std::sqrt(v); });
  case ReduceOp::LogSum:
    accumulate<SumAcc>(rp, in, acc);
    return finish([](double v) { return std::log(v); });
  case ReduceOp::LogSumExp: {
    // Shift by the per-output max so exp cannot overflow; an infinite max is
    // not subtracted (it would turn inf - inf into NaN) and the result is
    // then exactly +/-inf as it should be.
    std::vector<double> mx;
    accumulate<MaxAcc>(rp, in, mx);
    for (double &m : mx)
      if (std::isinf(m))
        m = 0.0;
    acc.assign(rp.outCount, 0.0);
    double *a = acc.data();
    const double *shift = mx.data();
    detail::forEachRow<2>(rp.plan, {0, 0},
                          [&](const std::array<int64_t, 2> &off, int64_t n,
                              const std::array<int64_t, 2> &st) {
                            const T *x = in + off[0];
                            for (int64_t i = 0; i < n; ++i) {
                              const int64_t j = off[1] + i * st[1];
                              a[j] += std::exp(x[i * st[0]] - shift[j]);
                            }
                          });
    for (int64_t i = 0; i < rp.outCount; ++i)
      out[i] = static_cast<T>(std::log(acc[i]) + mx[i]);
    return;
  }
  }
  assert(false && "unknown ReduceOp");
}

} // namespace

void reduce(ReduceOp op, const float *in, const Shape &s,
            const std::vector<int64_t> &axes, bool keepDims, float *out) {
  reduceT(op, in, s, axes, keepDims, out);
}

void reduce(ReduceOp op, const double *in, const Shape &s,
            const std::vector<int64_t> &axes, bool keepDims, double *out) {
  reduceT(op, in, s, axes, keepDims, out);
}

void globalAvgPool(const float *in, const Shape &is, float *out) {
  assert(is.size() >= 2);
  std::vector<int64_t> axes;
  for (size_t i = 2; i < is.size(); ++i)
    axes.push_back(static_cast<int64_t>(i));
  if (axes.empty()) { // [N, C]: nothing to pool; empty axes would mean "all".
    const int64_t n = numElements(is);
    for (int64_t i = 0; i < n; ++i)
      out[i] = in[i];
    return;
  }
  reduce(ReduceOp::Mean, in, is, axes, true, out);
}

void globalMaxPool(const float *in, const Shape &is, float *out) {
  assert(is.size() >= 2);
  std::vector<int64_t> axes;
  for (size_t i = 2; i < is.size(); ++i)
    axes.push_back(static_cast<int64_t>(i));
  if (axes.empty()) {
    const int64_t n = numElements(is);
    for (int64_t i = 0; i < n; ++i)
      out[i] = in[i];
    return;
  }
  reduce(ReduceOp::Max, in, is, axes, true, out);
}

} // namespace mixprec::runtime::cpu
