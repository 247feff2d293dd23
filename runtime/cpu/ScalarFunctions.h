//===- ScalarFunctions.h - the scalar functions of the ONNX math ops -*- C++ -*-===//
//
// One definition of each element-wise function that the comparison, logic
// and activation ops compute, in FP32, shared by the compiled-module CPU
// backend (per instruction) and the MLIR interpreter (per element), so the
// two agree bit for bit; the CUDA emitter prints the same formulas
// (codegen/Cuda/CudaEmitter.cpp). Predicates return 1 or 0.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_SCALARFUNCTIONS_H
#define MIXPREC_RUNTIME_CPU_SCALARFUNCTIONS_H

#include <cmath>

namespace mixprec::runtime::cpu::scalar {

/// 1 or 0 for a predicate's answer.
inline float truth(bool b) { return b ? 1.0f : 0.0f; }

/// Sign of x: 1, -1, +0 for either zero, NaN for NaN, as numpy.sign
/// (onnxruntime's Eigen sign gives 0 for NaN: mixprec keeps the NaN).
inline float sign(float x) {
  return x > 0.0f ? 1.0f : (x < 0.0f ? -1.0f : (x == 0.0f ? 0.0f : x));
}

/// log(1 + exp(x)) in onnxruntime's form: exp of a non-positive argument
/// only, so it never overflows; x itself where log1p(exp(-x)) vanishes.
inline float softplus(float x) {
  return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

/// x * tanh(softplus(x)), in FP32.
inline float mish(float x) { return x * std::tanh(softplus(x)); }

/// min(max(alpha x + beta, 0), 1); NaN stays NaN.
inline float hardSigmoid(float x, float alpha, float beta) {
  float y = alpha * x + beta;
  return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
}

/// x * hardSigmoid(x; 1/6, 1/2), the ONNX definition.
inline float hardSwish(float x) { return x * hardSigmoid(x, 1.0f / 6.0f, 0.5f); }

/// x < 0 ? slope x : x (PRelu, LeakyRelu); NaN and -0 pass through.
inline float prelu(float x, float slope) { return x < 0.0f ? slope * x : x; }

/// x < 0 ? alpha (e^x - 1) : x, with expm1 (exact near 0).
inline float elu(float x, float alpha) { return x < 0.0f ? alpha * std::expm1(x) : x; }

/// gamma (x <= 0 ? alpha (e^x - 1) : x).
inline float selu(float x, float alpha, float gamma) {
  return gamma * (x <= 0.0f ? alpha * std::expm1(x) : x);
}

/// To the nearest integer, halves to even (the default rounding mode).
inline float roundHalfEven(float x) { return std::nearbyint(x); }

/// The floor remainder with the divisor's sign, as numpy.mod (npy_divmod)
/// computes it in FP32: fmod, plus y when the signs differ; a zero result
/// takes y's sign; a zero divisor gives fmod's NaN.
inline float floorMod(float x, float y) {
  float m = std::fmod(x, y);
  if (y == 0.0f)
    return m;
  if (m != 0.0f)
    return ((y < 0.0f) != (m < 0.0f)) ? m + y : m;
  return std::copysign(0.0f, y);
}

} // namespace mixprec::runtime::cpu::scalar

#endif // MIXPREC_RUNTIME_CPU_SCALARFUNCTIONS_H
