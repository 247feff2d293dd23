//===- Erf.h - erf of floats, vectorised, within half an ulp ----*- C++ -*-===//
//
// The error function of FP32 values, and GELU's erf form, for the
// reference kernels' Erf and GeluErf (runtime/kernels/Elementwise.cpp): the
// interpreter and the CPU backend both call them, so they agree bit for
// bit. They replace the C library's erff (up to 1 ulp off, and GELU's
// 0.5 x (1 + erff(x / sqrt 2)), which loses every bit as erf nears -1):
// erf within half an ulp (below; about glibc's speed, 3.8 ns a value
// vectorised, in double), GELU within 3 ulps in FP32 arithmetic
// (geluErfFloat: BERT-base's GELU kernels 1.8 -> 0.5 ms a layer).
//
// How: in double, then rounded once to FP32.
//   |x| <= 1:     x * sum_{n<=16} c_n x^(2n), erf's Taylor series,
//                 c_n = 2/sqrt(pi) (-1)^n / (n! (2n+1)); the first term
//                 left out is below 2^-52 of the sum.
//   1 < |x| < 4:  1 - exp(-x^2) R(|x|), R(u) = erfc(u) exp(u^2) as a
//                 24-term Chebyshev series on [1, 4] (relative error
//                 1.5e-17, mpmath), exp(-x^2) by range reduction to
//                 [-ln2/2, ln2/2], e^r's Taylor series to r^13 and 2^k
//                 built in the exponent bits.
//   |x| >= 4:     +-1 (erfc(4) = 1.5e-8 is below half an FP32 ulp of 1).
//   NaN:          itself; erf(-0) = -0.
// Every double step is a few units of 2^-53, so the double result is within
// 2^-48 relative of erf(x): the FP32 result is the correctly rounded one
// but where erf(x) lies within 2^-48 relative of a rounding boundary
// between two floats (it is then one of the two nearest). ErfTest checks
// every 251st FP32 bit pattern against FP64 references (std::erf and
// std::erfc in double) for <= 0.5 ulp + 2^-40 relative (seen: 0.5000).
// Built with -ffp-contract=off: the AVX-512, AVX2 and baseline code give
// the same bits.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_KERNELS_ERF_H
#define MIXPREC_RUNTIME_KERNELS_ERF_H

#include <cstdint>

namespace mixprec::runtime::cpu {

/// erf(x) rounded to FP32 (see above).
float erfFloat(float x);

/// out[i] = erfFloat(in[i]); in == out allowed.
void erfArray(const float *in, float *out, int64_t n);

/// GELU, 0.5 x (1 + erf(x / sqrt 2)) = x Phi(x), in FP32 arithmetic:
/// what the interpreter's FP32 mode and the CPU backend compute for
/// GeluErf (the interpreter's FP64 mode has its own, in double). Within 3
/// ulps of geluErfAccurate for every FP32 input (ErfTest checks all 2^32 in
/// a Release build: 96.9% the same bits, the worst 3 ulps at -1.339;
/// sanitizer builds check every 31st), so within 3.5 ulps of GELU; 4.8x as
/// fast (1.0 ns a value on this 2-core EPYC with AVX-512, against 4.8). How: Phi(x) =
/// 1/2 + x P(x^2) for |x| <= 1/2; else Phi(-u) = exp(-u^2/2) S(u), S the
/// scaled Mills ratio as a polynomial on [1/2, 2], [2, 4], [4, 6] in an
/// exact v = u - c, exp(-u^2/2) with u^2 split exactly (FMA) and folded
/// into the reduced argument, Phi(u) = 1 - Phi(-u): relative, not
/// absolute, error on the negative side (no 1 + erf cancellation);
/// bench/gelu_coefficients.py makes the coefficients. Explicit FMAs: the
/// AVX-512, AVX2 and baseline code (fmaf) give the same bits. Below -4
/// sqrt 2 the result is -0, as geluErfAccurate's.
float geluErfFloat(float x);

/// out[i] = geluErfFloat(in[i]); in == out allowed.
void geluErfArray(const float *in, float *out, int64_t n);

/// GELU computed in double with erf's pieces above and rounded once
/// (within half an ulp plus 2^-48 relative), the negative side as 0.5 x
/// erfc(|x| / sqrt 2): no cancellation, where the FP32 formula 0.5f x (1 +
/// erff(x / sqrt 2)) loses every bit of its result as erff(z) nears -1 (at
/// x = -2.5, one ulp of erff is 13 ulps of the GELU). Below x = -4 sqrt 2
/// it is -0 (|GELU| < 2^-24 there). The reference geluErfFloat is checked
/// against; no kernel calls it.
float geluErfAccurate(float x);

/// out[i] = geluErfAccurate(in[i]); in == out allowed.
void geluErfAccurateArray(const float *in, float *out, int64_t n);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_KERNELS_ERF_H
