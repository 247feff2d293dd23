#include "tests/unit/cpu/TestUtil.h"

#include <limits>

using namespace mixprec::runtime::cpu;
using namespace mixprec::runtime::cpu::testing;

namespace {

/// reduce()'s output shape: common/Shapes.h's rule, with no axes meaning all
/// of them (the kernel's convention).
Shape reducedShape(const Shape &s, std::vector<int64_t> axes, bool keepDims) {
  if (s.empty())
    return {};
  if (axes.empty())
    for (size_t d = 0; d < s.size(); ++d)
      axes.push_back(static_cast<int64_t>(d));
  mixprec::shapes::ShapeOrError r = mixprec::shapes::reduceShape(s, axes, keepDims);
  EXPECT_TRUE(r.ok()) << r.error;
  return r.shape;
}

// Reference: visit every input element, map it to its output slot by zeroing
// reduced coordinates, fold in double.
std::vector<double> refReduce(ReduceOp op, const std::vector<float> &x,
                              const Shape &s,
                              const std::vector<int64_t> &axes) {
  std::vector<bool> red(s.size(), axes.empty());
  for (int64_t a : axes)
    red[a] = true;
  Shape keep = s;
  int64_t rc = 1;
  for (size_t i = 0; i < s.size(); ++i)
    if (red[i]) {
      keep[i] = 1;
      rc *= s[i];
    }
  const int64_t nOut = count(keep);
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> groups(nOut);
  for (int64_t i = 0; i < count(s); ++i) {
    auto idx = unravel(i, s);
    for (size_t d = 0; d < s.size(); ++d)
      if (red[d])
        idx[d] = 0;
    groups[ravel(idx, keep)].push_back(x[i]);
  }
  std::vector<double> ref(nOut);
  for (int64_t o = 0; o < nOut; ++o) {
    const auto &g = groups[o];
    double r = 0;
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean:
    case ReduceOp::LogSum:
      for (double v : g)
        r += v;
      if (op == ReduceOp::Mean)
        r /= double(rc);
      if (op == ReduceOp::LogSum)
        r = std::log(r);
      break;
    case ReduceOp::Max:
      r = -inf;
      for (double v : g)
        r = std::max(r, v);
      break;
    case ReduceOp::Min:
      r = inf;
      for (double v : g)
        r = std::min(r, v);
      break;
    case ReduceOp::Prod:
      r = 1;
      for (double v : g)
        r *= v;
      break;
    case ReduceOp::SumSquare:
    case ReduceOp::L2:
      for (double v : g)
        r += v * v;
      if (op == ReduceOp::L2)
        r = std::sqrt(r);
      break;
    case ReduceOp::L1:
      for (double v : g)
        r += std::fabs(v);
      break;
    case ReduceOp::LogSumExp: {
      double s2 = 0;
      for (double v : g)
        s2 += std::exp(v);
      r = std::log(s2);
      break;
    }
    }
    ref[o] = r;
  }
  return ref;
}

TEST(Reduce, AllOpsManyAxisSets) {
  const Shape s = {2, 3, 4, 5};
  // Positive inputs keep Prod/LogSum well defined and sums away from zero,
  // so a relative tolerance is meaningful.
  std::vector<float> x = randomFloats(count(s), 0.5f, 1.5f, 61);
  const std::vector<std::vector<int64_t>> axesSets = {
      {}, {0}, {1}, {3}, {0, 2}, {1, 3}, {2, 3}, {0, 1, 2, 3}, {0, 3}, {1, 2}};
  const ReduceOp ops[] = {
      ReduceOp::Sum,    ReduceOp::Mean,      ReduceOp::Max, ReduceOp::Min,
      ReduceOp::Prod,   ReduceOp::SumSquare, ReduceOp::L1,  ReduceOp::L2,
      ReduceOp::LogSum, ReduceOp::LogSumExp};
  for (const auto &axes : axesSets)
    for (ReduceOp op : ops)
      for (bool keep : {true, false}) {
        const Shape os = reducedShape(s, axes, keep);
        std::vector<float> out(count(os), -9.0f);
        reduce(op, x.data(), s, axes, keep, out.data());
        EXPECT_TRUE(allClose(out, refReduce(op, x, s, axes), 1e-6, 0))
            << "op " << int(op) << " axes " << shapeStr(axes);
      }
}

TEST(Reduce, OutputShapes) {
  EXPECT_EQ(reducedShape({2, 3, 4}, {1}, true), (Shape{2, 1, 4}));
  EXPECT_EQ(reducedShape({2, 3, 4}, {1}, false), (Shape{2, 4}));
  EXPECT_EQ(reducedShape({2, 3, 4}, {}, false), (Shape{}));
  EXPECT_EQ(reducedShape({2, 3, 4}, {}, true), (Shape{1, 1, 1}));
  EXPECT_EQ(reducedShape({2, 3, 4}, {0, 2}, false), (Shape{3}));
}

TEST(Reduce, SignedValuesSumAccurately) {
  // Many terms of mixed sign: double accumulation keeps the error at the
  // final rounding even though the sum is far smaller than its terms.
  const Shape s = {4, 4096};
  std::vector<float> x = randomFloats(count(s), -100, 100, 62);
  std::vector<float> out(4);
  reduce(ReduceOp::Sum, x.data(), s, {1}, false, out.data());
  std::vector<double> ref = refReduce(ReduceOp::Sum, x, s, {1});
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[i], static_cast<float>(ref[i]));
}

TEST(Reduce, EmptyReductionGivesIdentity) {
  const Shape s = {2, 0, 3};
  std::vector<float> out(6);
  const float inf = std::numeric_limits<float>::infinity();
  reduce(ReduceOp::Sum, nullptr, s, {1}, true, out.data());
  for (float v : out)
    EXPECT_EQ(v, 0.0f);
  reduce(ReduceOp::Prod, nullptr, s, {1}, true, out.data());
  for (float v : out)
    EXPECT_EQ(v, 1.0f);
  reduce(ReduceOp::Max, nullptr, s, {1}, true, out.data());
  for (float v : out)
    EXPECT_EQ(v, -inf);
  reduce(ReduceOp::Min, nullptr, s, {1}, false, out.data());
  for (float v : out)
    EXPECT_EQ(v, inf);
  // The mean of no values is 0, as onnxruntime gives (this test pinned
  // 0/0 = NaN before, where the module's kernels gave 0: issue 7).
  reduce(ReduceOp::Mean, nullptr, s, {1}, false, out.data());
  for (float v : out)
    EXPECT_EQ(v, 0.0f);
  reduce(ReduceOp::LogSumExp, nullptr, s, {1}, false, out.data());
  for (float v : out)
    EXPECT_EQ(v, -inf);
}

TEST(Reduce, ScalarInput) {
  float x = 2.5f, y = 0;
  reduce(ReduceOp::SumSquare, &x, {}, {}, false, &y);
  EXPECT_EQ(y, 6.25f);
}

TEST(Reduce, MaxMinPropagateNaNAndLogSumExpIsStable) {
  std::vector<float> x = {
      1, std::numeric_limits<float>::quiet_NaN(), 3, 4, 5, 6, 7, 8, 9, 10};
  float y = 0;
  reduce(ReduceOp::Max, x.data(), {10}, {0}, false, &y);
  EXPECT_TRUE(std::isnan(y));
  reduce(ReduceOp::Min, x.data(), {10}, {}, false, &y);
  EXPECT_TRUE(std::isnan(y));

  std::vector<float> big = {1000.0f, 1000.0f, 999.0f};
  reduce(ReduceOp::LogSumExp, big.data(), {3}, {0}, false, &y);
  EXPECT_NEAR(y, 1000.0 + std::log(2.0 + std::exp(-1.0)), 1e-3);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> withInf = {1.0f, inf};
  reduce(ReduceOp::LogSumExp, withInf.data(), {2}, {0}, false, &y);
  EXPECT_EQ(y, inf);
}

TEST(GlobalPool, AvgAndMax) {
  const Shape s = {2, 3, 4, 5};
  std::vector<float> x = randomFloats(count(s), -1, 1, 63);
  std::vector<float> avg(6), mx(6);
  globalAvgPool(x.data(), s, avg.data());
  globalMaxPool(x.data(), s, mx.data());
  for (int p = 0; p < 6; ++p) {
    double sum = 0, m = -INFINITY;
    for (int i = 0; i < 20; ++i) {
      sum += x[p * 20 + i];
      m = std::max(m, double(x[p * 20 + i]));
    }
    EXPECT_NEAR(avg[p], sum / 20, 1e-6);
    EXPECT_EQ(mx[p], float(m));
  }
}

} // namespace
