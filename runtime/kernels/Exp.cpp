//===- Exp.cpp - e^x of floats, vectorised --------------------------------===//
//
// Exp.h says how and how accurately.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Exp.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MIXPREC_EXP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MIXPREC_EXP_CLONES
#endif

namespace mixprec::runtime::cpu {
namespace {

/// e^x for a float x, in double (Exp.h); a NaN x gives a NaN.
inline double expDouble(float xf) {
  constexpr double kShifter = 6755399441055744.0; // 1.5 * 2^52
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
  // Clamped: k stays in [-150, 129]. (A NaN passes through the min and max.)
  const double x = std::min(std::max(static_cast<double>(xf), -104.0), 89.0);
  const double t = x * kLog2e + kShifter;
  const double k = t - kShifter;
  const double r = (x - k * kLn2Hi) - k * kLn2Lo;
  constexpr double kInverseFactorials[14] = {1.0,
                                             1.0,
                                             1.0 / 2,
                                             1.0 / 6,
                                             1.0 / 24,
                                             1.0 / 120,
                                             1.0 / 720,
                                             1.0 / 5040,
                                             1.0 / 40320,
                                             1.0 / 362880,
                                             1.0 / 3628800,
                                             1.0 / 39916800,
                                             1.0 / 479001600,
                                             1.0 / 6227020800};
  double p = kInverseFactorials[13];
#pragma GCC unroll 16
  for (int n = 12; n >= 0; --n)
    p = p * r + kInverseFactorials[n];
  // t's low bits hold k (two's complement); k + 1023 in [873, 1152] is the
  // exponent of 2^k (any bits for a NaN x, whose p is NaN).
  uint64_t bits;
  std::memcpy(&bits, &t, sizeof(bits));
  const uint64_t scaleBits = (bits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scaleBits, sizeof(scale));
  return p * scale;
}

inline float expOne(float x) {
  const float e = static_cast<float>(expDouble(x));
  return x != x ? x : e;
}

inline float sigmoidOne(float x) {
  // e^-|x| <= 1: neither form overflows; x >= 0 is false for a NaN, whose e
  // is NaN.
  const float e = expOne(-std::fabs(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

inline float geluTanhOne(float x) {
  // 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)) exactly. The sigmoid form avoids
  // the cancellation in 1 + tanh(u) for negative x and saturates cleanly
  // (x / inf = -0 for very negative x).
  constexpr float kTwoSqrt2OverPi = 1.59576912160573071176f;
  const float u2 = kTwoSqrt2OverPi * (x + 0.044715f * x * x * x);
  return x / (1.0f + expOne(-u2));
}

} // namespace

float expFloat(float x) { return expOne(x); }

MIXPREC_EXP_CLONES void expArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = expOne(in[i]);
}

MIXPREC_EXP_CLONES void sigmoidArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = sigmoidOne(in[i]);
}

MIXPREC_EXP_CLONES void siluArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = in[i] * sigmoidOne(in[i]);
}

MIXPREC_EXP_CLONES void geluTanhArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = geluTanhOne(in[i]);
}

} // namespace mixprec::runtime::cpu
