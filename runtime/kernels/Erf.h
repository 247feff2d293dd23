//===- Erf.h - erf of floats, vectorised, within half an ulp ----*- C++ -*-===//
//
// The error function of FP32 values, and GELU's erf form, for the
// reference kernels' Erf and GeluErf (runtime/kernels/Elementwise.cpp): the
// interpreter and the CPU backend both call them, so they agree bit for
// bit. They replace the C library's erff (up to 1 ulp off, and GELU's
// 0.5 x (1 + erff(x / sqrt 2)), which loses every bit as erf nears -1) with
// results within half an ulp. Speed: about glibc's (3.8 ns a value
// vectorised, in double; BERT-base's GELU kernels 1.8 ms a layer either
// way on this 2-core EPYC).
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

/// GELU, 0.5 x (1 + erf(x / sqrt 2)), computed in double with the same
/// pieces and rounded once (within half an ulp plus 2^-48 relative), the
/// negative side as 0.5 x erfc(|x| / sqrt 2): no cancellation, where the
/// FP32 formula 0.5f x (1 + erff(x / sqrt 2)) loses every bit of its
/// result as erff(z) nears -1 (at x = -2.5, one ulp of erff is 13 ulps of
/// the GELU). Below x = -4 sqrt 2 it is -0 (|GELU| < 2^-24 there).
float geluErfFloat(float x);

/// out[i] = geluErfFloat(in[i]); in == out allowed.
void geluErfArray(const float *in, float *out, int64_t n);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_KERNELS_ERF_H
