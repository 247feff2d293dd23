#include "tests/unit/cpu/TestUtil.h"

#include <cstring>
#include <iterator>
#include <limits>
#include <vector>

using namespace mixprec::runtime::cpu;
using namespace mixprec::runtime::cpu::testing;

namespace {

/// The broadcast shape of `a` and `b`, which must broadcast.
Shape broadcast(const Shape &a, const Shape &b) {
  mixprec::shapes::ShapeOrError s = mixprec::shapes::broadcastShapes(a, b);
  EXPECT_TRUE(s.ok()) << s.error;
  return s.shape;
}

TEST(Shapes, HelpersAndAxes) {
  EXPECT_EQ(numElements({}), 1);
  EXPECT_EQ(numElements({2, 0, 3}), 0);
  EXPECT_EQ(numElements({2, 3, 4}), 24);
  EXPECT_EQ(contiguousStrides({2, 3, 4}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(normalizeAxis(-1, 3), 2);
  EXPECT_EQ(normalizeAxis(-3, 3), 0);
  EXPECT_EQ(normalizeAxis(3, 3), -1);
  EXPECT_EQ(normalizeAxis(-4, 3), -1);
}

double refBinary(BinaryOp op, double a, double b) {
  switch (op) {
  case BinaryOp::Add:
    return a + b;
  case BinaryOp::Sub:
    return a - b;
  case BinaryOp::Mul:
    return a * b;
  case BinaryOp::Div:
    return a / b;
  case BinaryOp::Pow:
    return std::pow(a, b);
  case BinaryOp::Max:
    return std::max(a, b);
  case BinaryOp::Min:
    return std::min(a, b);
  }
  return 0;
}

struct ShapePair {
  Shape a, b;
};

TEST(Binary, BroadcastingMatchesReference) {
  const std::vector<ShapePair> cases = {
      {{2, 3, 4}, {2, 3, 4}}, // same shape
      {{2, 3, 4}, {}},        // scalar rhs
      {{}, {2, 3, 4}},        // scalar lhs
      {{2, 3, 4}, {1}},       // one-element rhs with rank mismatch
      {{2, 3, 4}, {4}},       // row
      {{4}, {2, 3, 4}},       // row on the left
      {{2, 3, 4}, {3, 1}},    // column (inner broadcast)
      {{2, 1, 4}, {3, 1}},    // both broadcast
      {{5, 1}, {1, 6}},       // outer product
      {{2, 3, 1, 5}, {3, 4, 1}},
      {{1, 3, 4}, {2, 1, 4}},
      {{7, 1, 1}, {1, 1, 9}},
      {{3, 1}, {3, 4}},
      {{1, 768}, {768}}, // same element count, different rank
      {{0, 3}, {3}},     // empty output
  };
  const BinaryOp ops[] = {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul,
                          BinaryOp::Div, BinaryOp::Pow, BinaryOp::Max,
                          BinaryOp::Min};
  uint32_t seed = 1;
  for (const auto &c : cases) {
    const Shape os = broadcast(c.a, c.b);
    for (BinaryOp op : ops) {
      // Pow gets a positive base; Div a divisor bounded away from 0.
      const bool pow = op == BinaryOp::Pow;
      std::vector<float> a =
          randomFloats(count(c.a), pow ? 0.1f : -3.0f, 3.0f, seed++);
      std::vector<float> b =
          randomFloats(count(c.b), pow ? -2.0f : 0.5f, 2.0f, seed++);
      if (op == BinaryOp::Div)
        for (size_t i = 0; i < b.size(); i += 2)
          b[i] = -b[i];
      std::vector<float> out(count(os), -7.0f);
      binary(op, a.data(), c.a, b.data(), c.b, out.data(), os);
      std::vector<double> ref(out.size());
      for (int64_t i = 0; i < count(os); ++i) {
        auto idx = unravel(i, os);
        ref[i] = refBinary(op, a[broadcastIndex(idx, c.a)],
                           b[broadcastIndex(idx, c.b)]);
      }
      EXPECT_TRUE(allClose(out, ref, 1e-6, 1e-7))
          << "op " << int(op) << " " << shapeStr(c.a) << " x " << shapeStr(c.b);
    }
  }
}

TEST(Binary, InPlaceOnFullShapeOperand) {
  Shape as = {3, 5}, bs = {5};
  std::vector<float> a = randomFloats(15, -1, 1, 3);
  std::vector<float> b = randomFloats(5, -1, 1, 4);
  std::vector<double> ref(15);
  for (int i = 0; i < 15; ++i)
    ref[i] = double(a[i]) * b[i % 5];
  binary(BinaryOp::Mul, a.data(), as, b.data(), bs, a.data(), as);
  EXPECT_TRUE(allClose(a, ref, 1e-6, 0));
}

TEST(Binary, MaxMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {nan, 1.0f, 2.0f, nan};
  std::vector<float> b = {1.0f, nan, 3.0f, nan};
  std::vector<float> out(4);
  binary(BinaryOp::Max, a.data(), {4}, b.data(), {4}, out.data(), {4});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 3.0f);
  EXPECT_TRUE(std::isnan(out[3]));
  binary(BinaryOp::Min, a.data(), {4}, b.data(), {4}, out.data(), {4});
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 2.0f);
}

double refUnary(UnaryOp op, double x) {
  switch (op) {
  case UnaryOp::Neg:
    return -x;
  case UnaryOp::Abs:
    return std::fabs(x);
  case UnaryOp::Relu:
    return x > 0 ? x : 0;
  case UnaryOp::GeluErf:
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  case UnaryOp::GeluTanh:
    return 0.5 * x *
           (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  case UnaryOp::Tanh:
    return std::tanh(x);
  case UnaryOp::Sigmoid:
    return 1 / (1 + std::exp(-x));
  case UnaryOp::Silu:
    return x / (1 + std::exp(-x));
  case UnaryOp::Exp:
    return std::exp(x);
  case UnaryOp::Log:
    return std::log(x);
  case UnaryOp::Sqrt:
    return std::sqrt(x);
  case UnaryOp::Rsqrt:
    return 1 / std::sqrt(x);
  case UnaryOp::Erf:
    return std::erf(x);
  case UnaryOp::Reciprocal:
    return 1 / x;
  }
  return 0;
}

TEST(Unary, MatchesDoubleReference) {
  const UnaryOp ops[] = {UnaryOp::Neg,       UnaryOp::Abs,      UnaryOp::Relu,
                         UnaryOp::GeluErf,   UnaryOp::GeluTanh, UnaryOp::Tanh,
                         UnaryOp::Sigmoid,   UnaryOp::Silu,     UnaryOp::Exp,
                         UnaryOp::Log,       UnaryOp::Sqrt,     UnaryOp::Rsqrt,
                         UnaryOp::Erf,       UnaryOp::Reciprocal};
  for (UnaryOp op : ops) {
    const bool positive = op == UnaryOp::Log || op == UnaryOp::Sqrt ||
                          op == UnaryOp::Rsqrt || op == UnaryOp::Reciprocal;
    std::vector<float> x =
        randomFloats(1000, positive ? 0.01f : -6.0f, 6.0f, 100 + int(op));
    std::vector<float> y(x.size());
    unary(op, x.data(), y.data(), static_cast<int64_t>(x.size()));
    std::vector<double> ref(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      ref[i] = refUnary(op, x[i]);
    // GELU's tail (1 + erf(x) for very negative x) cancels in float; the
    // absolute error there is what onnxruntime's float formula has too.
    const double atol =
        (op == UnaryOp::GeluErf || op == UnaryOp::GeluTanh) ? 1e-6 : 1e-7;
    EXPECT_TRUE(allClose(y, ref, 2e-6, atol)) << "op " << int(op);
  }
}

TEST(Unary, SigmoidStableForLargeMagnitudes) {
  std::vector<float> x = {-1000.0f, -100.0f, -88.0f, -20.0f, 0.0f,
                          20.0f,    88.0f,   100.0f, 1000.0f};
  std::vector<float> y(x.size());
  unary(UnaryOp::Sigmoid, x.data(), y.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_FALSE(std::isnan(y[i])) << x[i];
    const double ref = 1 / (1 + std::exp(-double(x[i])));
    EXPECT_NEAR(y[i], ref, 1e-6 * ref + 1e-45) << x[i];
  }
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y.back(), 1.0f);
  EXPECT_GT(y[2], 0.0f); // exp(-88) is still a normal float
}

TEST(Unary, GeluTanhNoNaNForLargeInputs) {
  std::vector<float> x = {-1e20f, -1e4f, 1e4f, 1e20f};
  std::vector<float> y(4);
  unary(UnaryOp::GeluTanh, x.data(), y.data(), 4);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 1e4f);
  EXPECT_EQ(y[3], 1e20f);
}

TEST(Unary, ReluInVectorLanesGivesTheScalarBits) {
  // reluArray's clones (AVX-512, AVX2, baseline) against `x < 0 ? 0 : x`
  // bit for bit: NaNs of both signs with payloads, +-0, +-inf, subnormals,
  // at every lane position and in the loop's tail, in place and not.
  const uint32_t specials[] = {0x7fc00000u, 0xffc00001u, 0x7f800001u, 0x80000000u, 0x00000000u,
                               0x7f800000u, 0xff800000u, 0x80000001u, 0x00000001u, 0xbf800000u,
                               0x3f800000u, 0xc2f00000u, 0x7f7fffffu, 0xff7fffffu};
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t bits =
        i % 3 == 0 ? specials[(i / 3) % std::size(specials)] : uint32_t(i * 2654435761u);
    std::memcpy(&x[i], &bits, 4);
  }
  for (int64_t n : {int64_t(1000), int64_t(37), int64_t(5)}) {
    std::vector<float> y(static_cast<size_t>(n)), inPlace(x.begin(), x.begin() + n);
    unary(UnaryOp::Relu, x.data(), y.data(), n);
    unary(UnaryOp::Relu, inPlace.data(), inPlace.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = x[size_t(i)] < 0.0f ? 0.0f : x[size_t(i)];
      EXPECT_EQ(std::memcmp(&y[size_t(i)], &want, 4), 0) << i;
      EXPECT_EQ(std::memcmp(&inPlace[size_t(i)], &want, 4), 0) << i;
    }
  }
}

TEST(Unary, ReluKeepsNaNAndInPlace) {
  std::vector<float> x = {-1.0f, 0.0f, 2.5f,
                          std::numeric_limits<float>::quiet_NaN()};
  unary(UnaryOp::Relu, x.data(), x.data(), 4);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[2], 2.5f);
  EXPECT_TRUE(std::isnan(x[3]));
}

TEST(Where, BroadcastsAllThreeOperands) {
  struct Case {
    Shape c, a, b;
  };
  const std::vector<Case> cases = {
      {{2, 3}, {2, 3}, {2, 3}},    {{3, 1}, {1, 4}, {}},
      {{4}, {3, 4}, {3, 1}},       {{}, {2, 2}, {2}},
      {{2, 1, 5}, {1, 3, 1}, {5}},
  };
  uint32_t seed = 7;
  for (const auto &cs : cases) {
    Shape os = broadcast(broadcast(cs.a, cs.b), cs.c);
    std::vector<float> cf = randomFloats(count(cs.c), 0, 1, seed++);
    std::vector<uint8_t> cond(cf.size());
    for (size_t i = 0; i < cf.size(); ++i)
      cond[i] = cf[i] > 0.5f ? static_cast<uint8_t>(1 + i % 3) : 0;
    std::vector<float> a = randomFloats(count(cs.a), -1, 1, seed++);
    std::vector<float> b = randomFloats(count(cs.b), 2, 3, seed++);
    std::vector<float> out(count(os));
    where(cond.data(), cs.c, a.data(), cs.a, b.data(), cs.b, out.data(), os);
    for (int64_t i = 0; i < count(os); ++i) {
      auto idx = unravel(i, os);
      const float want = cond[broadcastIndex(idx, cs.c)]
                             ? a[broadcastIndex(idx, cs.a)]
                             : b[broadcastIndex(idx, cs.b)];
      ASSERT_EQ(out[i], want) << i << " out " << shapeStr(os);
    }
  }
}

} // namespace
