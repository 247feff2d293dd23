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

#if defined(__x86_64__) && defined(__GNUC__)
#include "runtime/kernels/Avx2Microkernel.h" // (avx2::cpuRuns)
#include <immintrin.h>
#define MIXPREC_ERF_AVX2 1
#endif

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

#if MIXPREC_ERF_AVX2
/// geluErfFastOne over 8 lanes, step for step (the same FMAs, products and
/// sums in the same order, so the same bits), for AVX2 CPUs without
/// AVX-512: the compiler's vectorised loop picked each of S's 11
/// coefficients from its three intervals with two blends and reloaded most
/// constants every iteration (16 registers); here a coefficient is one
/// in-lane permute (vpermilps) of a table holding the three intervals'
/// values in each 128-bit half, by the interval's index. 2.2 -> 2.05 ns a
/// value on an AVX2 EPYC (Zen 3) with a cross-lane permute (vpermps, which
/// Zen 3 runs far slower than vpermilps: the 12 a vector took a third of
/// the time), 1.75 with the in-lane one (about 36 FMAs and products a
/// vector, chains of ~70 dependent steps).
__attribute__((target("avx2,fma"))) void geluErfAvx2(const float *in, float *out, int64_t n) {
  // Column j of kMills as an in-lane permute table: entries i and 4 + i =
  // interval i's (vpermilps picks within each 128-bit half).
  alignas(32) float mills[11][8] = {};
  for (int j = 0; j < 11; ++j)
    for (int i = 0; i < 3; ++i)
      mills[j][i] = mills[j][4 + i] = kMills[i][j];
  alignas(32) static const float kCentres[8] = {1.0f, 3.0f, 5.0f, 0.0f, 1.0f, 3.0f, 5.0f, 0.0f};
  const __m256 centres = _mm256_load_ps(kCentres);
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  const __m256 half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.0f);
  const __m256 shifter = _mm256_set1_ps(12582912.0f); // 1.5 * 2^23
  auto gelu8 = [&](const __m256 x) __attribute__((target("avx2,fma"))) {
    // std::min(|x|, 6): 6 where 6 < |x|, else |x| (a NaN too).
    const __m256 u = _mm256_min_ps(_mm256_set1_ps(6.0f), _mm256_andnot_ps(signBit, x));
    const __m256 w = _mm256_mul_ps(x, x);
    __m256 p = _mm256_set1_ps(kPhiSmall[5]);
    for (int j = 4; j >= 0; --j)
      p = _mm256_fmadd_ps(p, w, _mm256_set1_ps(kPhiSmall[j]));
    const __m256 phiSmall = _mm256_fmadd_ps(x, p, half);
    // The interval: 0 (u < 2), 1 (u < 4), else 2 (a NaN too).
    const __m256 first = _mm256_cmp_ps(u, _mm256_set1_ps(2.0f), _CMP_LT_OQ);
    const __m256 second = _mm256_cmp_ps(u, _mm256_set1_ps(4.0f), _CMP_LT_OQ);
    const __m256i index =
        _mm256_add_epi32(_mm256_set1_epi32(2),
                         _mm256_add_epi32(_mm256_castps_si256(first), _mm256_castps_si256(second)));
    const __m256 v = _mm256_sub_ps(u, _mm256_permutevar_ps(centres, index));
    auto mill = [&](int j) __attribute__((target("avx2,fma"))) {
      return _mm256_permutevar_ps(_mm256_load_ps(mills[j]), index);
    };
    __m256 s = mill(10);
    for (int j = 9; j >= 2; --j)
      s = _mm256_fmadd_ps(s, v, mill(j));
    s = _mm256_add_ps(_mm256_fmadd_ps(s, v, mill(1)), mill(0));
    const __m256 hi = _mm256_mul_ps(u, u);
    const __m256 lo = _mm256_fmsub_ps(u, u, hi); // fma(u, u, -hi)
    const __m256 h = _mm256_mul_ps(half, hi);
    const __m256 t = _mm256_fmadd_ps(h, _mm256_set1_ps(1.44269504f), shifter);
    const __m256 k = _mm256_sub_ps(t, shifter);
    const __m256 negK = _mm256_xor_ps(k, signBit);
    const __m256 reduced = _mm256_fmadd_ps(negK, _mm256_set1_ps(1.42860677e-6f),
                                           _mm256_fmadd_ps(negK, _mm256_set1_ps(0.693145752f), h));
    const __m256 r = _mm256_sub_ps(_mm256_xor_ps(reduced, signBit), _mm256_mul_ps(half, lo));
    // detail::expReducedFloat(r).
    __m256 e = _mm256_set1_ps(1.0f / 5040);
    for (float c : {1.0f / 720, 1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f})
      e = _mm256_fmadd_ps(e, r, _mm256_set1_ps(c));
    const __m256i scaleBits = _mm256_slli_epi32(
        _mm256_sub_epi32(_mm256_set1_epi32(127),
                         _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(0x4B400000))),
        23);
    const __m256 q = _mm256_mul_ps(_mm256_mul_ps(e, s), _mm256_castsi256_ps(scaleBits));
    const __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
    const __m256 large = _mm256_blendv_ps(_mm256_sub_ps(one, q), q, negative);
    const __m256 phi = _mm256_blendv_ps(large, phiSmall, _mm256_cmp_ps(u, half, _CMP_LE_OQ));
    const __m256 far = _mm256_cmp_ps(x, _mm256_set1_ps(-5.65685415f), _CMP_LT_OQ);
    const __m256 gelu =
        _mm256_blendv_ps(_mm256_mul_ps(x, phi), _mm256_mul_ps(x, _mm256_setzero_ps()), far);
    return _mm256_blendv_ps(gelu, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  };
  // Two vectors an iteration: each is a chain of ~70 dependent steps, and
  // two side by side keep more of the FMA units busy.
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 y0 = gelu8(_mm256_loadu_ps(in + i)), y1 = gelu8(_mm256_loadu_ps(in + i + 8));
    _mm256_storeu_ps(out + i, y0);
    _mm256_storeu_ps(out + i + 8, y1);
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, gelu8(_mm256_loadu_ps(in + i)));
  for (; i < n; ++i)
    out[i] = geluErfFastOne(in[i]);
}
#endif

/// geluErfArray's loop as the compiler vectorises it.
MIXPREC_ERF_CLONES void geluErfLoop(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = geluErfFastOne(in[i]);
}

} // namespace

float erfFloat(float x) { return erfOne(x); }

MIXPREC_ERF_CLONES void erfArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = erfOne(in[i]);
}

float geluErfFloat(float x) { return geluErfFastOne(x); }

void geluErfArray(const float *in, float *out, int64_t n) {
#if MIXPREC_ERF_AVX2
  static const bool avx2Only = avx2::cpuRuns() && !__builtin_cpu_supports("avx512f");
  if (avx2Only)
    return geluErfAvx2(in, out, n);
#endif
  geluErfLoop(in, out, n);
}

float geluErfAccurate(float x) { return geluErfOne(x); }

MIXPREC_ERF_CLONES void geluErfAccurateArray(const float *in, float *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = geluErfOne(in[i]);
}

} // namespace mixprec::runtime::cpu
