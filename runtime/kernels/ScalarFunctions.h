//===- ScalarFunctions.h - the scalar functions of the ONNX math ops -*- C++ -*-===//
//
// One definition of each element-wise function that the comparison, logic
// and activation ops compute, in FP32 (and in FP64 for the interpreter's
// FP64 mode), shared by the compiled-module CPU backend (per instruction)
// and the MLIR interpreter (per element), so the two agree bit for bit;
// the CUDA emitter prints the same formulas. Which of them computes which
// scalar function, in each consumer, is runtime/format/ScalarFns.def's
// eval column. Predicates return 1 or 0.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_SCALARFUNCTIONS_H
#define MIXPREC_RUNTIME_CPU_SCALARFUNCTIONS_H

#include <cmath>

namespace mixprec::runtime::cpu::scalar {

/// 1 or 0 for a predicate's answer.
inline float truth(bool b) { return b ? 1.0f : 0.0f; }

// Each function is written once for T = float (the backends) and T =
// double (the interpreter's FP64 mode); the float instances are the
// functions the backends have always computed.

/// Sign of x: 1, -1, +0 for either zero, NaN for NaN, as numpy.sign
/// (onnxruntime's Eigen sign gives 0 for NaN: mixprec keeps the NaN).
template <typename T> inline T sign(T x) {
  return x > T(0) ? T(1) : (x < T(0) ? T(-1) : (x == T(0) ? T(0) : x));
}

/// log(1 + exp(x)) in onnxruntime's form: exp of a non-positive argument
/// only, so it never overflows; x itself where log1p(exp(-x)) vanishes.
template <typename T> inline T softplus(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

/// x * tanh(softplus(x)).
template <typename T> inline T mish(T x) { return x * std::tanh(softplus(x)); }

/// min(max(alpha x + beta, 0), 1); NaN stays NaN.
template <typename T> inline T hardSigmoid(T x, T alpha, T beta) {
  T y = alpha * x + beta;
  return y < T(0) ? T(0) : (y > T(1) ? T(1) : y);
}

/// x * hardSigmoid(x; 1/6, 1/2), the ONNX definition.
template <typename T> inline T hardSwish(T x) {
  return x * hardSigmoid(x, T(1) / T(6), T(0.5));
}

/// x < 0 ? slope x : x (PRelu, LeakyRelu); NaN and -0 pass through.
template <typename T> inline T prelu(T x, T slope) { return x < T(0) ? slope * x : x; }

/// x < 0 ? alpha (e^x - 1) : x, with expm1 (exact near 0).
template <typename T> inline T elu(T x, T alpha) {
  return x < T(0) ? alpha * std::expm1(x) : x;
}

/// gamma (x <= 0 ? alpha (e^x - 1) : x).
template <typename T> inline T selu(T x, T alpha, T gamma) {
  return gamma * (x <= T(0) ? alpha * std::expm1(x) : x);
}

/// To the nearest integer, halves to even (the default rounding mode).
template <typename T> inline T roundHalfEven(T x) { return std::nearbyint(x); }

/// The floor remainder with the divisor's sign, as numpy.mod (npy_divmod)
/// computes it: fmod, plus y when the signs differ; a zero result takes
/// y's sign; a zero divisor gives fmod's NaN.
template <typename T> inline T floorMod(T x, T y) {
  T m = std::fmod(x, y);
  if (y == T(0))
    return m;
  if (m != T(0))
    return ((y < T(0)) != (m < T(0))) ? m + y : m;
  return std::copysign(T(0), y);
}

} // namespace mixprec::runtime::cpu::scalar

#endif // MIXPREC_RUNTIME_CPU_SCALARFUNCTIONS_H
