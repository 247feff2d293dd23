// Erf.h's erf of floats: within half an ulp of erf (plus 2^-40 relative)
// over a sweep of every 251st FP32 bit pattern and the special values; the
// array forms the same bits as the scalar one; the accurate GELU within
// half an ulp of GELU, the FP32 one within 3 ulps of it for every FP32
// value; and the C library's erff within one ulp of it (the function it
// replaced).
#include "runtime/kernels/Erf.h"
#include "runtime/kernels/Kernels.h"
#include "tests/unit/FloatBits.h"
#include "tests/unit/cpu/EveryFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
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

/// The FP32 spacing at |v| (subnormals 2^-149).
double spacingAt(double v) {
  const double a = std::fabs(v);
  if (a < std::ldexp(1.0, -126))
    return std::ldexp(1.0, -149);
  return std::ldexp(1.0, std::ilogb(a) - 23);
}

/// Every 251st bit pattern (both signs, NaNs skipped) plus the edges of
/// the formula's pieces and the special values.
std::vector<float> sweep() {
  std::vector<float> xs;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 251) {
    const float x = floatOf(static_cast<uint32_t>(b));
    if (!std::isnan(x))
      xs.push_back(x);
  }
  for (float edge : {0.0f, 1.0f, 4.0f, 3.9f, 3.92f, 1e-30f, 1e-45f, 0.5f, 2.0f})
    for (float x : {edge, std::nextafter(edge, 0.0f), std::nextafter(edge, 10.0f)}) {
      xs.push_back(x);
      xs.push_back(-x);
    }
  xs.push_back(std::numeric_limits<float>::infinity());
  xs.push_back(-std::numeric_limits<float>::infinity());
  return xs;
}

TEST(Erf, WithinHalfAnUlpOfErf) {
  const std::vector<float> xs = sweep();
  std::vector<float> ys(xs.size());
  erfArray(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  double worst = 0;
  int64_t failures = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double ref = std::erf(static_cast<double>(xs[i])); // within 1 ulp of double
    const double err = std::fabs(static_cast<double>(ys[i]) - ref);
    const double bound = 0.5 * spacingAt(ref) + std::ldexp(std::fabs(ref), -40);
    worst = std::max(worst, err / spacingAt(ref));
    if (!(err <= bound) && failures++ < 10)
      ADD_FAILURE() << "erf(" << xs[i] << ") = " << ys[i] << ", erf in double " << ref;
    // The array form is the scalar one, bit for bit.
    if (bitsOf(ys[i]) != bitsOf(erfFloat(xs[i])) && failures++ < 10)
      ADD_FAILURE() << "erfArray and erfFloat differ at " << xs[i];
  }
  EXPECT_EQ(failures, 0);
  std::printf("erf: %zu values, worst %.4f ulp\n", xs.size(), worst);
}

TEST(Erf, SpecialValues) {
  EXPECT_EQ(bitsOf(erfFloat(-0.0f)), bitsOf(-0.0f));
  EXPECT_EQ(erfFloat(0.0f), 0.0f);
  EXPECT_EQ(erfFloat(INFINITY), 1.0f);
  EXPECT_EQ(erfFloat(-INFINITY), -1.0f);
  EXPECT_EQ(erfFloat(4.0f), 1.0f);
  EXPECT_TRUE(std::isnan(erfFloat(NAN)));
  // The smallest subnormal: 2/sqrt(pi) * 2^-149 rounds to 2^-149.
  EXPECT_EQ(erfFloat(std::ldexp(1.0f, -149)), std::ldexp(1.0f, -149));
}

TEST(Erf, CLibraryErffWithinOneUlp) {
  // The function it replaced: glibc's erff agrees to one ulp.
  const std::vector<float> xs = sweep();
  for (float x : xs) {
    const float mine = erfFloat(x), libc = std::erf(x);
    ASSERT_LE(std::fabs(static_cast<double>(mine) - libc), spacingAt(mine) * 1.0001) << x;
  }
}

TEST(Erf, GeluErfAccurateWithinHalfAnUlp) {
  // Against 0.5 x erfc(-x / sqrt 2) in double (std::erfc: no cancellation).
  const std::vector<float> xs = sweep();
  std::vector<float> ys(xs.size());
  geluErfAccurateArray(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  double worst = 0;
  int64_t failures = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i];
    if (std::isinf(x))
      continue; // below
    const double ref = 0.5 * x * std::erfc(-x * 0.70710678118654752440);
    const double err = std::fabs(static_cast<double>(ys[i]) - ref);
    // Below -4 sqrt 2 the result is -0: |GELU| < 2^-24 there.
    const double bound = x < -4 * std::sqrt(2.0)
                             ? std::ldexp(1.0, -24)
                             : 0.5 * spacingAt(ref) + std::ldexp(std::fabs(ref), -40);
    if (x >= -4 * std::sqrt(2.0))
      worst = std::max(worst, err / spacingAt(ref));
    if (!(err <= bound) && failures++ < 10)
      ADD_FAILURE() << "gelu(" << xs[i] << ") = " << ys[i] << ", in double " << ref;
    if (bitsOf(ys[i]) != bitsOf(geluErfAccurate(xs[i])) && failures++ < 10)
      ADD_FAILURE() << "geluErfAccurateArray and geluErfAccurate differ at " << xs[i];
  }
  EXPECT_EQ(failures, 0);
  std::printf("gelu_erf (accurate): %zu values, worst %.4f ulp\n", xs.size(), worst);
}

/// Units in the last place of `ref` (an FP32 value) that `y` is off by.
double ulpsOff(float y, float ref) {
  return std::fabs(static_cast<double>(y) - static_cast<double>(ref)) / spacingAt(ref);
}

TEST(Erf, GeluErfWithinThreeUlpsOfTheAccurateOne) {
  // Every FP32 bit pattern (every 257th under a sanitizer: a Release build
  // takes ~15 s on two cores, most of it geluErfAccurate), on two threads:
  // geluErfArray within 3 ulps of geluErfAccurateArray, NaN exactly where
  // it is NaN, -0 where it is -0; the scalar form (every 61st) and
  // unary(GeluErf) (the sweep) the same bits as the array form (on AVX2
  // CPUs without AVX-512 its own intrinsics, Erf.cpp).
  struct alignas(64) Result { // (one cache line each: two threads count)
    double worst = 0;
    float worstAt = 0;
    uint64_t values = 0, sameBits = 0, failures = 0;
    std::vector<std::string> messages;
  };
  Result results[2];
  std::vector<float> fast[2], accurate[2];
  for (int part : {0, 1}) {
    fast[part].resize(kEveryFloatBlock);
    accurate[part].resize(kEveryFloatBlock);
  }
  forEveryFloat([&](const float *xs, size_t n, int part) {
    Result &res = results[part];
    float *ys = fast[part].data(), *refs = accurate[part].data();
    geluErfArray(xs, ys, static_cast<int64_t>(n));
    geluErfAccurateArray(xs, refs, static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      ++res.values;
      const float x = xs[i], y = ys[i], ref = refs[i];
      std::string why;
      if (bitsOf(y) == bitsOf(ref)) {
        ++res.sameBits;
      } else if (std::isnan(ref) || std::isnan(y) || ref == 0.0f) {
        why = "NaN or zero differs";
      } else if (const double off = ulpsOff(y, ref); off > 3.0) {
        why = "more than 3 ulps off";
      } else if (off > res.worst) {
        res.worst = off;
        res.worstAt = x;
      }
      if (i % 61 == 0 && bitsOf(y) != bitsOf(geluErfFloat(x)))
        why = "geluErfArray and geluErfFloat differ";
      if (!why.empty() && res.failures++ < 10)
        res.messages.push_back(why + " at x = " + std::to_string(x) + " (bits " +
                               std::to_string(bitsOf(x)) + "): " + std::to_string(y) +
                               ", accurate " + std::to_string(ref));
    }
  });
  const Result &low = results[0], &high = results[1];
  for (const Result *r : {&low, &high})
    for (const std::string &m : r->messages)
      ADD_FAILURE() << m;
  EXPECT_EQ(low.failures + high.failures, 0u);
  const Result &worse = low.worst >= high.worst ? low : high;
  std::printf("gelu_erf (FP32): %llu values (stride %llu), %.2f%% the same bits as the "
              "accurate one, worst %.4f ulp at %.9g\n",
              static_cast<unsigned long long>(low.values + high.values),
              static_cast<unsigned long long>(kEveryFloatStride),
              100.0 * static_cast<double>(low.sameBits + high.sameBits) /
                  static_cast<double>(low.values + high.values),
              worse.worst, worse.worstAt);
  const std::vector<float> xs = sweep();
  std::vector<float> ys(xs.size()), viaUnary(xs.size());
  geluErfArray(xs.data(), ys.data(), static_cast<int64_t>(xs.size()));
  unary(UnaryOp::GeluErf, xs.data(), viaUnary.data(), static_cast<int64_t>(xs.size()));
  EXPECT_EQ(std::memcmp(ys.data(), viaUnary.data(), ys.size() * sizeof(float)), 0)
      << "unary(GeluErf) is not geluErfArray";
  // Every length up to 40 (the AVX2 form's two-vector, one-vector and
  // scalar tails) over GELU's interval edges, the same bits as the scalar.
  std::vector<float> edges;
  for (float edge : {0.0f, 0.5f, 2.0f, 4.0f, 6.0f, 5.65685415f, 1e-30f, 1e-45f, 1e30f, INFINITY})
    for (float x : {edge, std::nextafter(edge, 0.0f), std::nextafter(edge, 10.0f)}) {
      edges.push_back(x);
      edges.push_back(-x);
    }
  edges.push_back(NAN);
  edges.push_back(-NAN);
  for (size_t n = 0; n <= 40; ++n)
    for (size_t start = 0; start + n <= edges.size(); start += 7) {
      std::vector<float> out(n + 1, 42.0f);
      geluErfArray(edges.data() + start, out.data(), static_cast<int64_t>(n));
      for (size_t i = 0; i < n; ++i)
        EXPECT_EQ(bitsOf(out[i]), bitsOf(geluErfFloat(edges[start + i])))
            << "geluErfArray of " << n << " values at " << edges[start + i];
      EXPECT_EQ(out[n], 42.0f) << "geluErfArray wrote past " << n << " values";
    }
  EXPECT_TRUE(std::isnan(geluErfFloat(NAN)));
  EXPECT_EQ(geluErfFloat(INFINITY), INFINITY);
  // -inf * 0, as the formula in FP32 and FP64 (the interpreter) gives.
  EXPECT_TRUE(std::isnan(geluErfFloat(-INFINITY)));
  EXPECT_EQ(bitsOf(geluErfFloat(-0.0f)), bitsOf(-0.0f));
  EXPECT_EQ(bitsOf(geluErfFloat(-6.0f)), bitsOf(-0.0f));
  EXPECT_EQ(geluErfFloat(7.0f), 7.0f);
}

} // namespace
