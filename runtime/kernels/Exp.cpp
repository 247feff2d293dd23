//===- Exp.cpp - e^x of floats, vectorised --------------------------------===//
//
// Exp.h says how and how accurately.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Exp.h"
#include "runtime/kernels/ExpDouble.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// The AVX2 clone is x86-64-v3 (AVX2 with FMA): its explicit fmaf calls are
// then one VFMADD each, not a call to the C library's scalar fmaf (the
// plain "avx2" target has no FMA; GELU ran 30x slower on an AVX2 EPYC).
// Either way each is one correctly rounded fused multiply-add: the
// same bits.
#define MIXPREC_EXP_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define MIXPREC_EXP_CLONES
#endif

namespace mixprec::runtime::cpu {
namespace {

/// e^x for a float x, in double (Exp.h); a NaN x gives a NaN.
inline double expDouble(float xf) {
  // Clamped: k stays in [-150, 129]. (A NaN passes through the min and max.)
  return detail::expInRange(std::min(std::max(static_cast<double>(xf), -104.0), 89.0));
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

/// e^t in FP32 arithmetic for GELU's tanh form (Exp.h): t clamped to
/// [-104, 89]; t = k ln2 + r, k the nearest integer to t / ln2 (found by
/// adding 1.5 * 2^23, whose low bits then hold it; ln2 in two parts, FMAs),
/// |r| <= ln2/2 + a little, e^r by its Taylor series to r^7 (the rest below
/// 2^-27 relative) in FMAs, times 2^k as two normal powers of two (k in
/// [-150, 129]: the second product rounds once, to a subnormal or inf
/// where e^t is one). A NaN t gives a NaN.
inline float expForGelu(float tf) {
  const float t = std::min(std::max(tf, -104.0f), 89.0f);
  constexpr float kShifter = 12582912.0f; // 1.5 * 2^23
  const float shifted = std::fma(t, 1.44269504f, kShifter);
  const float k = shifted - kShifter;
  const float r = std::fma(-k, 1.42860677e-6f, std::fma(-k, 0.693145752f, t));
  const float p = detail::expReducedFloat(r);
  // k from the shifted value's low bits (two's complement), split in two
  // halves each in [-75, 65] (any bits for a NaN t, whose p is NaN).
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof(bits));
  const int32_t ki = static_cast<int32_t>(bits - 0x4B400000u);
  const int32_t k1 = ki / 2, k2 = ki - k1;
  const uint32_t s1 = static_cast<uint32_t>(k1 + 127) << 23, s2 = static_cast<uint32_t>(k2 + 127)
                                                                  << 23;
  float scale1, scale2;
  std::memcpy(&scale1, &s1, sizeof(scale1));
  std::memcpy(&scale2, &s2, sizeof(scale2));
  return (p * scale1) * scale2;
}

inline float geluTanhOne(float x) {
  // 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)) exactly. The sigmoid form avoids
  // the cancellation in 1 + tanh(u) for negative x and saturates cleanly
  // (x / inf = -0 for very negative x). The exponential in FP32 arithmetic
  // (expForGelu; Exp.h gives the bound).
  constexpr float kTwoSqrt2OverPi = 1.59576912160573071176f;
  const float u2 = kTwoSqrt2OverPi * (x + 0.044715f * x * x * x);
  const float gelu = x / (1.0f + expForGelu(-u2));
  return x != x ? x : gelu;
}

inline float tanhOne(float xf) {
  // In double, rounded once: an odd Taylor series below 2^-5 (the next
  // term is under 2^-57 of the result), (1 - e) / (1 + e) with e = e^-2|x|
  // above (1 - e >= 0.06: a few units of 2^-53), the sign put back. A NaN
  // passes through; +-inf gives +-1 (e^-2|x| clamped to e^-104).
  const double x = xf, a = std::fabs(x), x2 = x * x;
  const double e = detail::expInRange(std::max(-2.0 * a, -104.0));
  const double big = (1.0 - e) / (1.0 + e);
  const double small =
      a *
      (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * (62.0 / 2835.0)))));
  const float t = static_cast<float>(std::copysign(a < 0x1p-5 ? small : big, x));
  return xf != xf ? xf : t;
}

} // namespace

float expFloat(float x) { return expOne(x); }

float tanhFloat(float x) { return tanhOne(x); }

float geluTanhFloat(float x) { return geluTanhOne(x); }

MIXPREC_EXP_CLONES void tanhArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = tanhOne(in[i]);
}

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
