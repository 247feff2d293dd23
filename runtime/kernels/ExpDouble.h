//===- ExpDouble.h - e^x in double for the FP32 kernels' functions -*- C++ -*-===//
//
// The exponential Exp.cpp (e^x of floats) and Erf.cpp (erfc's e^-x^2)
// build on: a few units of 2^-53 relative, branch-free (their loops
// vectorise); and the FP32 series their GELU forms use. Include it only in files built as those are
// (-O3 -fno-trapping-math -ffp-contract=off, runtime/kernels/CMakeLists.txt): the same bits from
// their AVX-512, AVX2 and baseline code.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_KERNELS_EXPDOUBLE_H
#define MIXPREC_RUNTIME_KERNELS_EXPDOUBLE_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace mixprec::runtime::cpu::detail {

/// e^x for x whose k below lies in [-1022, 1023], 2^k a normal double (the
/// callers' x: [-104, 89] and [-17, 0]): x = k ln2 + r, k the nearest integer
/// to x / ln2 (found by adding 1.5 * 2^52, whose low bits then hold it;
/// ln2 in two parts so that k * ln2hi is exact), e^r by its Taylor series
/// to r^13 (|r| <= ln2/2: the rest is below 2^-60), times 2^k made in the
/// exponent bits (Horner's rule in fused multiply-adds). A NaN x gives a
/// NaN.
inline double expInRange(double x) {
  constexpr double kShifter = 6755399441055744.0; // 1.5 * 2^52
  constexpr double kLog2e = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;
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
  // Horner's steps fused (std::fma: one rounding each, and the same bits
  // from the clones' FMA instructions and the baseline's libm fma, which
  // picks the FMA instruction where the CPU has one): 0.56 -> 0.36 ms for
  // 393216 values on AVX-512.
  double p = kInverseFactorials[13];
#pragma GCC unroll 16
  for (int n = 12; n >= 0; --n)
    p = std::fma(p, r, kInverseFactorials[n]);
  // t's low bits hold k (two's complement); k + 1023 is the exponent of 2^k
  // (any bits for a NaN x, whose p is NaN).
  uint64_t bits;
  std::memcpy(&bits, &t, sizeof(bits));
  const uint64_t scaleBits = (bits + 1023) << 52;
  double scale;
  std::memcpy(&scale, &scaleBits, sizeof(scale));
  return p * scale;
}

/// e^r for a reduced FP32 r (|r| <= ln2/2 and a little) by its Taylor
/// series to r^7 in FMAs (the rest below 2^-27 relative): the FP32
/// exponentials of GELU's erf form (Erf.cpp) and tanh form (Exp.cpp) after
/// their range reductions.
inline float expReducedFloat(float r) {
  constexpr float kInverseFactorials[8] = {1.0f,      1.0f,       0.5f,       1.0f / 6,
                                           1.0f / 24, 1.0f / 120, 1.0f / 720, 1.0f / 5040};
  float p = kInverseFactorials[7];
#pragma GCC unroll 8
  for (int j = 6; j >= 0; --j)
    p = std::fma(p, r, kInverseFactorials[j]);
  return p;
}

} // namespace mixprec::runtime::cpu::detail

#endif // MIXPREC_RUNTIME_KERNELS_EXPDOUBLE_H
