//===- Exp.h - e^x of floats, vectorised, and the functions built on it -*- C++ -*-===//
//
// The exponential of FP32 values for the reference kernels' Exp, Sigmoid,
// Silu, GeluTanh and Tanh (runtime/kernels/Elementwise.cpp; the interpreter's
// FP32 mode and the CPU backend both call them, so they agree bit for
// bit). They replace the C library's expf, which runs one value at a time:
// GPT-2's GELU kernels spent ~3 ns a value in it.
//
// How: in double, then rounded once to FP32. x is clamped to [-104, 89]
// (beyond, e^x rounds to 0 or overflows to inf either way), x = k ln2 + r
// with k the nearest integer to x / ln2 (found by adding 1.5 * 2^52, whose
// low bits then hold it; ln2 in two parts so that k ln2hi is exact), e^r
// by its Taylor series to r^13 in fused multiply-adds (|r| <= ln2/2: the
// rest is below 2^-60), times 2^k made in the exponent bits (k in [-150,
// 129]: a normal double; FP32 subnormal results are rounded once, by the
// conversion). Each double step is a few units of 2^-53, so the FP32
// result is the correctly rounded e^x but where e^x lies within ~2^-50
// relative of a rounding boundary between two floats (it is then one of
// the two nearest). ExpTest checks every FP32 input against e^x in double
// rounded to FP32 (Release: all 2^32; sanitizer builds every 31st): within
// one ulp, NaN for NaN, 0 and inf at the ends. Built with
// -ffp-contract=off (the fused steps are std::fma calls): the AVX-512,
// AVX2 and baseline code give the same bits.
//
// The functions on it keep their FP32 formulas (the float steps as
// before, only the exponential changed): sigmoid(x) = 1 / (1 + e) for x >=
// 0, e / (1 + e) below, e = e^-|x|; silu(x) = x sigmoid(x). GELU's tanh
// form 0.5 x (1 + tanh(u)) = x / (1 + e^-2u), 2u = 2 sqrt(2/pi) (x +
// 0.044715 x^3), takes its exponential in FP32 arithmetic instead (below).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_KERNELS_EXP_H
#define MIXPREC_RUNTIME_KERNELS_EXP_H

#include <cstdint>

namespace mixprec::runtime::cpu {

/// e^x rounded to FP32 (see above).
float expFloat(float x);

/// out[i] = expFloat(in[i]); in == out allowed.
void expArray(const float *in, float *out, int64_t n);

/// The logistic sigmoid in FP32 on expFloat; in == out allowed.
void sigmoidArray(const float *in, float *out, int64_t n);

/// x sigmoid(x); in == out allowed.
void siluArray(const float *in, float *out, int64_t n);

/// GELU's tanh form as x / (1 + e^-2u), 2u in FP32 as above and e^-2u in
/// FP32 arithmetic (a Taylor series to r^7 after the same range
/// reduction, in FMAs: 2.2x as fast as through expFloat, for GPT-2's GELU
/// kernels). For every FP32 input within two ulps of the formula in double
/// from the same FP32 2u, or no further from it than the formula on
/// expFloat (where the result is subnormal or 1 + e overflows), 99.53% of
/// inputs the bits of the formula on expFloat (ExpTest: all 2^32 in a
/// Release build, every 31st under a sanitizer). NaN for NaN; -inf gives
/// NaN (-inf / inf), +inf inf.
float geluTanhFloat(float x);

/// out[i] = geluTanhFloat(in[i]); in == out allowed.
void geluTanhArray(const float *in, float *out, int64_t n);

/// tanh(x) rounded to FP32: in double (an odd series below 2^-5, else
/// (1 - e) / (1 + e) with e = e^-2|x| from the same exponential), rounded
/// once; as accurate as expFloat (TanhTest: every FP32 input).
float tanhFloat(float x);

/// out[i] = tanhFloat(in[i]); in == out allowed.
void tanhArray(const float *in, float *out, int64_t n);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_KERNELS_EXP_H
