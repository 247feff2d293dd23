//===- IntElementwiseTest.cpp - exact integer element-wise ops ------------===//
//
// cpu::intElementwise against an independent reference: 128-bit integer
// arithmetic reduced to 64 bits, on every pair of a set of edge values (the
// int64 limits, +-2^63 neighbours, past 2^53 and 2^24, zeros, +-1) plus
// random values, and broadcasting on shapes with size-1 and missing dims.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/IntElementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using namespace mixprec::runtime::cpu;
using i128 = __int128;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

/// v reduced to 64 bits, two's complement.
int64_t wrap(i128 v) { return static_cast<int64_t>(static_cast<uint64_t>(v)); }

std::vector<int64_t> edgeValues() {
  std::vector<int64_t> v = {kMin,         kMin + 1,      kMax,     kMax - 1,  0,
                            1,            -1,            2,        -2,        3,
                            -3,           7,             -7,       (1LL << 53) + 1,
                            -(1LL << 53) - 1, (1LL << 24) + 1, 3037000500LL, -3037000500LL,
                            1LL << 62,    -(1LL << 62)};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20; ++i)
    v.push_back(static_cast<int64_t>(rng()));
  return v;
}

/// Truncating quotient and remainders with 128-bit operands (no overflow).
i128 quotient(i128 a, i128 b) { return b == 0 ? 0 : a / b; }
i128 cRem(i128 a, i128 b) { return b == 0 ? 0 : a - b * (a / b); }
i128 floorRem(i128 a, i128 b) {
  i128 r = cRem(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/// One op over all pairs of edge values ([n, 1] by [n]).
std::vector<int64_t> pairs(IntOp op, const std::vector<int64_t> &v) {
  const int64_t n = static_cast<int64_t>(v.size());
  IntOperand operands[2];
  operands[0].ints = v.data();
  operands[0].shape = {n, 1};
  operands[1].ints = v.data();
  operands[1].shape = {n};
  std::vector<int64_t> out(n * n);
  intElementwise(op, operands, 2, out.data(), {n, n});
  return out;
}

TEST(IntElementwise, ArithmeticWrapsAndDividesExactly) {
  const std::vector<int64_t> v = edgeValues();
  const size_t n = v.size();
  struct Case {
    IntOp op;
    i128 (*ref)(i128, i128);
  };
  const Case cases[] = {
      {IntOp::Add, [](i128 a, i128 b) { return a + b; }},
      {IntOp::Sub, [](i128 a, i128 b) { return a - b; }},
      {IntOp::Mul, [](i128 a, i128 b) { return a * b; }},
      {IntOp::Div, quotient},
      {IntOp::Mod, floorRem},
      {IntOp::Fmod, cRem},
      {IntOp::Max, [](i128 a, i128 b) { return a > b ? a : b; }},
      {IntOp::Min, [](i128 a, i128 b) { return a < b ? a : b; }},
      {IntOp::Equal, [](i128 a, i128 b) { return i128(a == b); }},
      {IntOp::Less, [](i128 a, i128 b) { return i128(a < b); }},
      {IntOp::LessOrEqual, [](i128 a, i128 b) { return i128(a <= b); }},
      {IntOp::Greater, [](i128 a, i128 b) { return i128(a > b); }},
      {IntOp::GreaterOrEqual, [](i128 a, i128 b) { return i128(a >= b); }},
  };
  for (const Case &c : cases) {
    std::vector<int64_t> got = pairs(c.op, v);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j)
        ASSERT_EQ(got[i * n + j], wrap(c.ref(v[i], v[j])))
            << intOpName(c.op) << "(" << v[i] << ", " << v[j] << ")";
  }
}

TEST(IntElementwise, DefinedAtTheEdgesOfC) {
  EXPECT_EQ(intscalar::div(kMin, -1), kMin); // wraps, as the 128-bit quotient does
  EXPECT_EQ(intscalar::div(5, 0), 0);
  EXPECT_EQ(intscalar::mod(kMin, -1), 0);
  EXPECT_EQ(intscalar::fmod(kMin, -1), 0);
  EXPECT_EQ(intscalar::mod(-7, 0), 0);
  EXPECT_EQ(intscalar::mod(-7, 3), 2);
  EXPECT_EQ(intscalar::fmod(-7, 3), -1);
  EXPECT_EQ(intscalar::mod(7, -3), -2);
  EXPECT_EQ(intscalar::neg(kMin), kMin);
  EXPECT_EQ(intscalar::abs(kMin), kMin);
  EXPECT_EQ(intscalar::abs(-5), 5);
}

TEST(IntElementwise, PowIsExactAndWraps) {
  // Against repeated 128-bit multiplication reduced to 64 bits each step.
  for (int64_t base : std::vector<int64_t>{0, 1, -1, 2, -2, 3, -3, 10, 3037000500LL, kMin, kMax}) {
    i128 acc = 1;
    for (int64_t e = 0; e <= 70; ++e) {
      ASSERT_EQ(intscalar::pow(base, e), wrap(acc)) << base << "^" << e;
      acc = wrap(acc * base);
    }
    // A negative exponent: the truncated real power.
    int64_t want = base == 1 ? 1 : base == -1 ? -1 : 0;
    EXPECT_EQ(intscalar::pow(base, -1), want) << base;
    EXPECT_EQ(intscalar::pow(base, -2), base == 1 || base == -1 ? 1 : 0) << base;
  }
  // 3^39 exceeds 2^53: a double power would round it.
  EXPECT_EQ(intscalar::pow(3, 39), 4052555153018976267LL);
}

TEST(IntElementwise, PowByAFloatTruncatesTheDoublePower) {
  EXPECT_EQ(intscalar::powFloat(2, 0.5), 1);
  EXPECT_EQ(intscalar::powFloat(-8, 1.0 / 3.0), 0); // NaN
  EXPECT_EQ(intscalar::powFloat(7, 2.5), 129);
  EXPECT_EQ(intscalar::powFloat(-2, 3.0), -8);
  EXPECT_EQ(intscalar::powFloat(10, 30.0), kMax);    // saturates
  EXPECT_EQ(intscalar::powFloat(-10, 31.0), kMin);
  EXPECT_EQ(intscalar::powFloat(0, -1.0), kMax);     // +inf
  EXPECT_EQ(intscalar::powFloat(2, 62.0), 1LL << 62);
}

TEST(IntElementwise, UnarySelectAndBroadcast) {
  const std::vector<int64_t> v = edgeValues();
  const int64_t n = static_cast<int64_t>(v.size());
  IntOperand x;
  x.ints = v.data();
  x.shape = {n};
  std::vector<int64_t> out(n);
  intElementwise(IntOp::Neg, &x, 1, out.data(), {n});
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(out[i], wrap(-i128(v[i])));
  intElementwise(IntOp::Abs, &x, 1, out.data(), {n});
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(out[i], wrap(v[i] < 0 ? -i128(v[i]) : i128(v[i])));
  // select: a [2, 1, 3] condition, a [4, 1] lhs, a rank-0 rhs -> [2, 4, 3].
  std::vector<int64_t> cond = {1, 0, 1, 0, 0, 1}, lhs = {10, 20, 30, 40}, rhs = {kMin};
  IntOperand ops[3];
  ops[0].ints = cond.data();
  ops[0].shape = {2, 1, 3};
  ops[1].ints = lhs.data();
  ops[1].shape = {4, 1};
  ops[2].ints = rhs.data();
  ops[2].shape = {};
  std::vector<int64_t> sel(24);
  intElementwise(IntOp::Select, ops, 3, sel.data(), {2, 4, 3});
  for (int64_t a = 0; a < 2; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 3; ++c)
        EXPECT_EQ(sel[(a * 4 + b) * 3 + c], cond[a * 3 + c] ? lhs[b] : kMin);
  // An empty output writes nothing.
  intElementwise(IntOp::Select, ops, 3, nullptr, {2, 0, 3});
}

} // namespace
