// Exp.h's e^x of floats: for every FP32 input (every 257th under a
// sanitizer) within one ulp of e^x in double rounded to FP32 (the
// correctly rounded result but where e^x lies next to a rounding boundary),
// NaN exactly for NaN, and the same bits as the C library's expf for
// nearly every input (the function it replaced); the special values; the
// scalar and array forms the same bits; unary(Exp/Sigmoid/Silu) the FP32
// formulas on it, within two ulps of the same formulas on expf; GELU's
// tanh form (its exponential in FP32 arithmetic) within two ulps of its
// formula on this exponential, every FP32 input; tanh on the same
// exponential, every FP32 input against tanh in double.
#include "runtime/kernels/Exp.h"
#include "runtime/kernels/Kernels.h"
#include "tests/unit/FloatBits.h"
#include "tests/unit/cpu/EveryFloat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace mixprec::runtime::cpu;

namespace {

using mixprec::test::bitsOf;
using mixprec::test::floatOf;
using mixprec::test::forEveryFloat;
using mixprec::test::kEveryFloatBlock;
using mixprec::test::kEveryFloatStride;

/// How many FP32 values lie between a and b (both finite or equal infs):
/// the distance of their ordered bit patterns.
int64_t ulpsApart(float a, float b) {
  auto ordered = [](float v) {
    const int64_t bits = bitsOf(v);
    return bits & 0x80000000 ? -(bits & 0x7fffffff) : bits;
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

TEST(Exp, EveryInputWithinOneUlpOfTheRoundedDouble) {
  struct alignas(64) Result { // (one cache line each: two threads count)
    uint64_t values = 0, nans = 0, sameAsDouble = 0, sampled = 0, sameAsExpf = 0, failures = 0;
    std::vector<std::string> messages;
  };
  Result results[2];
  std::vector<float> ys[2] = {std::vector<float>(kEveryFloatBlock),
                              std::vector<float>(kEveryFloatBlock)};
  forEveryFloat([&](const float *xs, size_t n, int part) {
    Result &res = results[part];
    float *out = ys[part].data();
    expArray(xs, out, static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      ++res.values;
      const float x = xs[i], y = out[i];
      // e^x rounds to 0 below -104, overflows above 89 and rounds to 1
      // for |x| < 2^-26 (the C library takes longest over these).
      const float ref = x < -104.0f               ? 0.0f
                        : x > 89.0f               ? std::numeric_limits<float>::infinity()
                        : std::fabs(x) < 0x1p-26f ? 1.0f
                                                  : static_cast<float>(std::exp(double(x)));
      std::string why;
      if (std::isnan(x) || std::isnan(y)) {
        res.nans += std::isnan(x);
        if (!(std::isnan(x) && std::isnan(y)))
          why = "NaN differs";
      } else if (bitsOf(y) == bitsOf(ref)) {
        ++res.sameAsDouble;
      } else if (std::isinf(y) != std::isinf(ref) || ulpsApart(y, ref) > 1) {
        why = "more than one ulp off";
      }
      if (i % 61 == 0) {
        res.sampled += !std::isnan(x);
        res.sameAsExpf += !std::isnan(x) && bitsOf(y) == bitsOf(std::exp(x));
        if (bitsOf(y) != bitsOf(expFloat(x)))
          why = "expArray and expFloat differ";
      }
      if (!why.empty() && res.failures++ < 10)
        res.messages.push_back(why + " at x = " + std::to_string(x) + " (bits " +
                               std::to_string(bitsOf(x)) + "): " + std::to_string(y) + ", double " +
                               std::to_string(ref));
    }
  });
  const Result &low = results[0], &high = results[1];
  for (const Result *r : {&low, &high})
    for (const std::string &m : r->messages)
      ADD_FAILURE() << m;
  EXPECT_EQ(low.failures + high.failures, 0u);
  const double values = static_cast<double>(low.values + high.values);
  const double nans = static_cast<double>(low.nans + high.nans);
  const double sameAsDouble = static_cast<double>(low.sameAsDouble + high.sameAsDouble);
  const double sampled = static_cast<double>(low.sampled + high.sampled);
  const double sameAsExpf = static_cast<double>(low.sameAsExpf + high.sameAsExpf);
  std::printf("exp (FP32): %.0f values (stride %llu); the same bits as e^x in double rounded: "
              "all but %.0f; as the C library's expf: %.4f%% of every 61st\n",
              values, static_cast<unsigned long long>(kEveryFloatStride),
              values - nans - sameAsDouble, 100.0 * sameAsExpf / sampled);
  // Only inputs whose e^x lies within ~2^-50 relative of a rounding
  // boundary may differ: a handful in 2^32.
  EXPECT_LT(values - nans - sameAsDouble, 1e-6 * values);
}

TEST(Exp, SpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(expFloat(0.0f), 1.0f);
  EXPECT_EQ(expFloat(-0.0f), 1.0f);
  EXPECT_EQ(expFloat(kInf), kInf);
  EXPECT_EQ(bitsOf(expFloat(-kInf)), 0u);
  EXPECT_TRUE(std::isnan(expFloat(std::numeric_limits<float>::quiet_NaN())));
  // The largest input below overflow, and the first above it.
  EXPECT_EQ(expFloat(88.7228317f), 3.40279851e38f);
  EXPECT_EQ(expFloat(88.7228394f), kInf);
  EXPECT_EQ(expFloat(1000.0f), kInf);
  // Subnormal results, rounded once: the smallest subnormal at ln(2^-149)
  // and 0 below half of it.
  EXPECT_EQ(expFloat(-103.278931f), std::ldexp(1.0f, -149));
  EXPECT_EQ(bitsOf(expFloat(-103.972084f)), 0u);
  EXPECT_EQ(expFloat(-100.0f), static_cast<float>(std::exp(-100.0)));
  EXPECT_EQ(expFloat(-87.5f), static_cast<float>(std::exp(-87.5)));
  EXPECT_EQ(expFloat(1.0f), 2.71828183f);
}

/// The FP32 formulas of Exp.h over an exponential `e`.
float sigmoidWith(float x, const std::function<float(float)> &e) {
  const float v = e(-std::fabs(x));
  return x >= 0.0f ? 1.0f / (1.0f + v) : v / (1.0f + v);
}

TEST(Exp, UnaryOpsAreTheFormulasOnIt) {
  // Every 4099th bit pattern, both signs, NaNs included.
  std::vector<float> xs;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 4099)
    xs.push_back(floatOf(static_cast<uint32_t>(b)));
  for (float x : {0.0f, -0.0f, 1.0f, -1.0f, 10.0f, -10.0f, 88.0f, -88.0f, 1e-30f, -1e-30f})
    xs.push_back(x);
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<float> ys(xs.size());
  auto ours = [](float v) { return expFloat(v); };
  auto libc = [](float v) { return std::exp(v); };
  struct Case {
    UnaryOp op;
    std::function<float(float, const std::function<float(float)> &)> formula;
  };
  const Case cases[] = {
      {UnaryOp::Exp, [](float x, const std::function<float(float)> &e) { return e(x); }},
      {UnaryOp::Sigmoid, sigmoidWith},
      {UnaryOp::Silu,
       [](float x, const std::function<float(float)> &e) { return x * sigmoidWith(x, e); }},
  };
  for (const Case &c : cases) {
    unary(c.op, xs.data(), ys.data(), n);
    int64_t differFromLibc = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const float want = c.formula(xs[i], ours), old = c.formula(xs[i], libc);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(ys[i])) << "op " << int(c.op) << " at " << xs[i];
        continue;
      }
      ASSERT_EQ(bitsOf(ys[i]), bitsOf(want)) << "op " << int(c.op) << " at " << xs[i];
      // Where expf is one ulp off, 1 + e moves by at most one ulp and the
      // quotient (and silu's product) by at most two.
      if (bitsOf(want) != bitsOf(old)) {
        ++differFromLibc;
        EXPECT_LE(ulpsApart(want, old), 2) << "op " << int(c.op) << " at " << xs[i];
      }
    }
    EXPECT_LT(differFromLibc, n / 10000) << "op " << int(c.op);
  }
  // In place.
  std::vector<float> inPlace = xs;
  unary(UnaryOp::GeluTanh, inPlace.data(), inPlace.data(), n);
  unary(UnaryOp::GeluTanh, xs.data(), ys.data(), n);
  EXPECT_EQ(std::memcmp(inPlace.data(), ys.data(), ys.size() * sizeof(float)), 0);
}

TEST(Exp, GeluTanhEveryInputAsCloseToTheFormulaAsOnExpFloat) {
  // geluTanhArray (its e^-2u in FP32 arithmetic) against the formula
  // x / (1 + e^-2u) in double from the same FP32 2u, rounded once: every
  // FP32 input (every 257th under a sanitizer) within two ulps of it, or no
  // further than the same FP32 formula on expFloat (the correctly rounded
  // exponential but next to a rounding boundary; the function before this
  // one) is: where the result is subnormal or 1 + e overflows, the FP32
  // formula is far from the double one either way. NaN exactly where the
  // formula on expFloat gives NaN; the scalar form the same bits. (Where
  // the bits are those on expFloat, no further by definition.)
  struct alignas(64) Result {
    uint64_t values = 0, sameAsBefore = 0, differ = 0, withinTwo = 0, failures = 0;
    std::vector<std::string> messages;
  };
  Result results[2];
  std::vector<float> ys[2] = {std::vector<float>(kEveryFloatBlock),
                              std::vector<float>(kEveryFloatBlock)};
  std::vector<float> ts[2] = {std::vector<float>(kEveryFloatBlock),
                              std::vector<float>(kEveryFloatBlock)};
  std::vector<float> es[2] = {std::vector<float>(kEveryFloatBlock),
                              std::vector<float>(kEveryFloatBlock)};
  forEveryFloat([&](const float *xs, size_t n, int part) {
    Result &res = results[part];
    float *out = ys[part].data(), *t = ts[part].data(), *e = es[part].data();
    geluTanhArray(xs, out, static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) // -2u in FP32, as the kernel takes it
      t[i] = -(1.59576912160573071176f * (xs[i] + 0.044715f * xs[i] * xs[i] * xs[i]));
    expArray(t, e, static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      ++res.values;
      const float x = xs[i], y = out[i];
      const float before = x / (1.0f + e[i]);
      std::string why;
      if (std::isnan(before) || std::isnan(y)) {
        if (!(std::isnan(before) && std::isnan(y)))
          why = "NaN differs";
      } else if (bitsOf(y) == bitsOf(before)) {
        ++res.sameAsBefore;
      } else { // (the formula in double only here: it takes the time)
        ++res.differ;
        const float exact = static_cast<float>(double(x) / (1.0 + std::exp(double(t[i]))));
        const int64_t off = ulpsApart(y, exact);
        res.withinTwo += off <= 2;
        if (off > 2 && off > ulpsApart(before, exact))
          why = std::to_string(off) + " ulps off the formula in double (" + std::to_string(exact) +
                "), on expFloat " + std::to_string(ulpsApart(before, exact));
      }
      if (i % 61 == 0 && bitsOf(y) != bitsOf(geluTanhFloat(x)))
        why = "geluTanhArray and geluTanhFloat differ";
      if (!why.empty() && res.failures++ < 10)
        res.messages.push_back(why + " at x = " + std::to_string(x) + " (bits " +
                               std::to_string(bitsOf(x)) + "): " + std::to_string(y) +
                               ", on expFloat " + std::to_string(before));
    }
  });
  for (const Result &r : results)
    for (const std::string &m : r.messages)
      ADD_FAILURE() << m;
  EXPECT_EQ(results[0].failures + results[1].failures, 0u);
  const double values = double(results[0].values + results[1].values);
  const double same = double(results[0].sameAsBefore + results[1].sameAsBefore);
  const double differ = double(results[0].differ + results[1].differ);
  const double withinTwo = double(results[0].withinTwo + results[1].withinTwo);
  std::printf("[ exp ] GELU (tanh form): %.0f inputs, %.4f%% the bits of the formula on "
              "expFloat; of the rest %.4f%% within two ulps of the formula in double\n",
              values, 100.0 * same / values, 100.0 * withinTwo / std::max(1.0, differ));
  EXPECT_GT(same, 0.95 * values);
  EXPECT_TRUE(std::isnan(geluTanhFloat(NAN)));
  EXPECT_TRUE(std::isnan(geluTanhFloat(-INFINITY)));
  EXPECT_EQ(geluTanhFloat(INFINITY), INFINITY);
  EXPECT_EQ(bitsOf(geluTanhFloat(-0.0f)), bitsOf(-0.0f));
  EXPECT_EQ(bitsOf(geluTanhFloat(-20.0f)), bitsOf(-0.0f));
  EXPECT_EQ(geluTanhFloat(20.0f), 20.0f);
}

} // namespace

// Tanh (Exp.h's tanhFloat, on the same exponential): every FP32 input
// (every 257th under a sanitizer) within one ulp of tanh in double rounded
// to FP32, NaN exactly for NaN, odd (-0 for -0); unary(Tanh) is tanhArray.
TEST(Tanh, EveryInputWithinOneUlpOfTheRoundedDouble) {
  struct alignas(64) Result {
    uint64_t values = 0, nans = 0, sameAsDouble = 0, failures = 0;
    std::vector<std::string> messages;
  };
  Result results[2];
  std::vector<float> ys[2] = {std::vector<float>(kEveryFloatBlock),
                              std::vector<float>(kEveryFloatBlock)};
  forEveryFloat([&](const float *xs, size_t n, int part) {
    Result &res = results[part];
    float *out = ys[part].data();
    unary(UnaryOp::Tanh, xs, out, static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      ++res.values;
      const float x = xs[i], y = out[i];
      const float ref = static_cast<float>(std::tanh(double(x)));
      std::string why;
      if (std::isnan(x) || std::isnan(y)) {
        res.nans += std::isnan(x);
        if (!(std::isnan(x) && std::isnan(y)))
          why = "NaN differs";
      } else if (bitsOf(y) == bitsOf(ref)) {
        ++res.sameAsDouble;
      } else if (ulpsApart(y, ref) > 1 || std::signbit(y) != std::signbit(ref)) {
        why = "more than one ulp off";
      }
      if (i % 61 == 0 && bitsOf(y) != bitsOf(tanhFloat(x)) && !std::isnan(x))
        why = "tanhArray and tanhFloat differ";
      if (!why.empty() && res.failures++ < 10)
        res.messages.push_back(why + " at x = " + std::to_string(x) + " (bits " +
                               std::to_string(bitsOf(x)) + "): " + std::to_string(y) + ", double " +
                               std::to_string(ref));
    }
  });
  for (const Result &r : results)
    for (const std::string &m : r.messages)
      ADD_FAILURE() << m;
  EXPECT_EQ(results[0].failures + results[1].failures, 0u);
  const double values = static_cast<double>(results[0].values + results[1].values);
  const double off =
      values - static_cast<double>(results[0].nans + results[1].nans + results[0].sameAsDouble +
                                   results[1].sameAsDouble);
  std::printf("tanh (FP32): %.0f values (stride %llu); the same bits as tanh in double rounded: "
              "all but %.0f\n",
              values, static_cast<unsigned long long>(kEveryFloatStride), off);
  EXPECT_LT(off, 1e-6 * values);
  EXPECT_EQ(bitsOf(tanhFloat(-0.0f)), bitsOf(-0.0f));
  EXPECT_EQ(tanhFloat(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(tanhFloat(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_EQ(tanhFloat(1e-30f), 1e-30f);
}
