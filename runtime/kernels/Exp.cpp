//===- Exp.cpp - e^x of floats, vectorised --------------------------------===//
//
// Exp.h says how and how accurately.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Exp.h"
#include "runtime/kernels/ExpDouble.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MIXPREC_EXP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
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

inline float geluTanhOne(float x) {
  // 0.5 (1 + tanh(u)) == 1 / (1 + exp(-2u)) exactly. The sigmoid form avoids
  // the cancellation in 1 + tanh(u) for negative x and saturates cleanly
  // (x / inf = -0 for very negative x).
  constexpr float kTwoSqrt2OverPi = 1.59576912160573071176f;
  const float u2 = kTwoSqrt2OverPi * (x + 0.044715f * x * x * x);
  return x / (1.0f + expOne(-u2));
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
