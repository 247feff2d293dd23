//===- Erf.cpp - erf of floats, vectorised, within half an ulp ------------===//
//
// Erf.h says how and how accurately. The coefficients come from
// bench/erf_coefficients.py (mpmath, 50 digits, printed to 17).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Erf.h"
#include "runtime/kernels/ExpDouble.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// The AVX2 clone is x86-64-v3 (AVX2 with FMA): its explicit fmaf calls are
// then one VFMADD each, not a call to the C library's scalar fmaf (the
// plain "avx2" target has no FMA; GELU ran 30x slower on an AVX2 EPYC).
// Either way each is one correctly rounded fused multiply-add: the
// same bits.
#define MIXPREC_ERF_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define MIXPREC_ERF_CLONES
#endif

namespace mixprec::runtime::cpu {
namespace {

/// erf(x) = x * sum_n kTaylor[n] x^(2n), |x| <= 1.
constexpr double kTaylor[17] = {
    1.1283791670955126,    -3.7612638903183752e-1,  1.1283791670955126e-1,  -2.6866170645131252e-2,
    5.2239776254421878e-3, -8.5483270234508528e-4,  1.2055332981789664e-4,  -1.4925650358406251e-5,
    1.6462114365889247e-6, -1.6365844691234924e-7,  1.4807192815879217e-8,  -1.2290555301717927e-9,
    9.422759064650411e-11, -6.7113668551641104e-12, 4.4632242632864773e-13, -2.7835162072109214e-14,
    1.6342614095367152e-15};

/// erfc(u) exp(u^2) = sum_j kChebyshev[j] T_j((2u - 5) / 3), u in [1, 4].
constexpr double kChebyshev[24] = {
    2.4442575284923573e-1,   -1.3589862891594599e-1,  3.563511414853497e-2,
    -8.8840986182224904e-3,  2.1184239975531773e-3,   -4.8539876408003705e-4,
    1.0727375453771771e-4,   -2.2936634481904863e-5,  4.7568746915755546e-6,
    -9.5899448326627695e-7,  1.8829006882958967e-7,   -3.6063206621430912e-8,
    6.7476020519374553e-9,   -1.234907042333986e-9,   2.213150119337267e-10,
    -3.887955444797808e-11,  6.7013882532739994e-12,  -1.1342374260996386e-12,
    1.8865559199095147e-13,  -3.0857804703524322e-14, 4.9667089574315614e-15,
    -7.8710622067463138e-16, 1.2282530525789326e-16,  -1.8481242502952081e-17};

/// e^y for y in [-17, 0] (ExpDouble.h).
inline double expNonPositive(double y) { return detail::expInRange(y); }

/// erf(z) for |z| <= 1 (the Taylor series; any z, to be selected or not).
inline double erfSmall(double z) {
  const double z2 = z * z;
  double p = kTaylor[16];
#pragma GCC unroll 16
  for (int n = 15; n >= 0; --n)
    p = p * z2 + kTaylor[n];
  return z * p;
}

/// erfc(u) for 1 < u < 4 (u is clamped to [1, 4], so that every step
/// stays finite for values that will not be selected).
inline double erfcMiddle(double u) {
  u = std::min(std::max(u, 1.0), 4.0);
  const double t = (2.0 * u - 5.0) / 3.0;
  double b1 = 0.0, b2 = 0.0;
#pragma GCC unroll 24
  for (int j = 23; j >= 1; --j) {
    const double b0 = 2.0 * t * b1 - b2 + kChebyshev[j];
    b2 = b1;
    b1 = b0;
  }
  return expNonPositive(-(u * u)) * (t * b1 - b2 + kChebyshev[0]);
}

inline float erfOne(float xf) {
  const double x = xf;
  const double ax = std::fabs(x);
  const double small = erfSmall(x);
  const double large = 1.0 - erfcMiddle(ax);
  const double magnitude = ax <= 1.0 ? std::fabs(small) : ax < 4.0 ? large : 1.0;
  const double result = std::copysign(magnitude, x);
  return static_cast<float>(x != x ? x : result);
}

/// 0.5 x (1 + erf(x / sqrt 2)) in double, rounded once: for x / sqrt 2 <
/// -1 as 0.5 x erfc(|x| / sqrt 2), whose erfc has no cancellation (1 +
/// erf(z) near z = -4 keeps no significant bit of an FP32 erf); beyond
/// |x / sqrt 2| = 4, x (x > 0) or -0 (x < 0: |gelu| < 2^-24 there).
inline float geluErfOne(float xf) {
  const double x = xf;
  const double z = x * 0.70710678118654752440;
  const double az = std::fabs(z);
  const double erfc = erfcMiddle(az);
  // Selects one at a time (the loop then vectorises).
  const bool negative = z < 0.0;
  const double middle = negative ? erfc : 2.0 - erfc;
  const double far = negative ? 0.0 : 2.0;
  const double outer = az < 4.0 ? middle : far;
  const double cdf = az <= 1.0 ? 1.0 + erfSmall(z) : outer;
  const double gelu = 0.5 * x * cdf;
  return static_cast<float>(x != x ? x : gelu);
}

/// GELU's FP32 pieces (bench/gelu_coefficients.py): Phi(x) = 1/2 + x
/// P(x^2) for |x| <= 1/2, and S(u) = Phi(-u) exp(u^2/2) on [1/2, 2], [2,
/// 4], [4, 6] in v = u - 1, 3, 5, its constant term as hi + lo.
constexpr float kPhiSmall[6] = {0.3989423f,     -0.06649038f,   0.009973556f,
                                -0.0011873108f, 0.00011529948f, -8.959376e-06f};
constexpr float kMills[3][11] = {
    {0.2615783f, -1.8670958e-10f, -0.13736399f, 0.06210719f, -0.025085595f, 0.009254721f,
     -0.0031656732f, 0.0010183372f, -0.00031169932f, 8.43214e-05f, -1.3905529e-05f},
    {0.12151395f, 6.183427e-10f, -0.034400437f, 0.009156316f, -0.0023104895f, 0.00055625505f,
     -0.00012837884f, 2.8398048e-05f, -6.0946527e-06f, 1.4037582e-06f, -2.8150617e-07f},
    {0.0769193f, 2.633243e-09f, -0.014345756f, 0.0025952635f, -0.00045647903f, 7.8218116e-05f,
     -1.3078865e-05f, 2.1344108e-06f, -3.4135633e-07f, 5.676034e-08f, -8.703114e-09f}};

/// GELU in FP32 arithmetic (Erf.h gives the bound): every step an FMA or
/// one rounding, selects instead of branches (the loop vectorises).
inline float geluErfFastOne(float x) {
  const float u = std::min(std::fabs(x), 6.0f);
  // |x| <= 1/2: Phi = 1/2 + x P(x^2).
  const float w = x * x;
  float p = kPhiSmall[5];
#pragma GCC unroll 8
  for (int j = 4; j >= 0; --j)
    p = std::fma(p, w, kPhiSmall[j]);
  const float phiSmall = std::fma(x, p, 0.5f);
  // Otherwise Q = Phi(-u) = exp(-u^2/2) S(u); v = u - c is exact.
  const bool first = u < 2.0f, second = u < 4.0f;
  const float v = u - (first ? 1.0f : second ? 3.0f : 5.0f);
  auto mills = [&](int j) { return first ? kMills[0][j] : second ? kMills[1][j] : kMills[2][j]; };
  float s = mills(10);
#pragma GCC unroll 10
  for (int j = 9; j >= 2; --j)
    s = std::fma(s, v, mills(j));
  s = std::fma(s, v, mills(1)) + mills(0);
  // exp(-u^2/2): u^2 = hi + lo exactly; hi/2 = k ln2 - r' (k found by
  // adding 1.5 * 2^23, whose low bits then hold it; ln2 in two parts,
  // FMAs), r = r' - lo/2 in [-0.35, 0.35], e^r by its Taylor series to r^7
  // (the rest below 2^-27), 2^-k made in the exponent bits.
  const float hi = u * u, lo = std::fma(u, u, -hi);
  const float h = 0.5f * hi;
  constexpr float kShifter = 12582912.0f; // 1.5 * 2^23
  const float t = std::fma(h, 1.44269504f, kShifter);
  const float k = t - kShifter;
  const float r = -std::fma(-k, 1.42860677e-6f, std::fma(-k, 0.693145752f, h)) - 0.5f * lo;
  const float e = detail::expReducedFloat(r);
  // k in [0, 26] (unsigned: a NaN x, whose result is x, makes any bits).
  uint32_t tBits;
  std::memcpy(&tBits, &t, sizeof(tBits));
  const uint32_t scaleBits = (127u - (tBits - 0x4B400000u)) << 23;
  float scale;
  std::memcpy(&scale, &scaleBits, sizeof(scale));
  const float q = (e * s) * scale;
  const float phi = u <= 0.5f ? phiSmall : x < 0.0f ? q : 1.0f - q;
  // Below -4 sqrt 2, -0 as the double form (x * 0: NaN for -inf).
  const float gelu = x < -5.65685415f ? x * 0.0f : x * phi;
  return x != x ? x : gelu;
}

} // namespace

float erfFloat(float x) { return erfOne(x); }

MIXPREC_ERF_CLONES void erfArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = erfOne(in[i]);
}

float geluErfFloat(float x) { return geluErfFastOne(x); }

MIXPREC_ERF_CLONES void geluErfArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = geluErfFastOne(in[i]);
}

float geluErfAccurate(float x) { return geluErfOne(x); }

MIXPREC_ERF_CLONES void geluErfAccurateArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = geluErfOne(in[i]);
}

} // namespace mixprec::runtime::cpu
