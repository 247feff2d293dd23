//===- IntElementwise.h - exact integer element-wise ops --------*- C++ -*-===//
//
// The integer (i32, i64) and bool element-wise ops of ONNX, computed in
// int64 arithmetic so that no value passes through float: shape arithmetic,
// positions, masks and indices computed at run time are exact over the whole
// int64 range, not only to 2^24 as FP32 registers would be. The CPU
// backend's int_elementwise routine and the reference interpreter both call
// intElementwise(), so the two give the same answers bit for bit.
//
// Semantics (ONNX, as numpy and onnxruntime compute them):
//  * Add, Sub, Mul, Neg, Abs wrap like two's complement (computed in uint64:
//    no signed-overflow UB); Abs(INT64_MIN) and Neg(INT64_MIN) are INT64_MIN.
//  * Div truncates toward zero (C, onnxruntime; the ONNX reference's Div);
//    INT64_MIN / -1 wraps to INT64_MIN. Division by zero gives 0 (numpy's
//    integer answer; onnxruntime traps): defined, never a crash.
//  * Mod is the floor remainder with the divisor's sign (numpy.mod, ONNX
//    Mod fmod=0); Fmod the C remainder with the dividend's sign (fmod=1).
//    A zero divisor gives 0 (numpy), INT64_MIN % -1 gives 0.
//  * Pow with an integer exponent: exponentiation by squaring, wrapping;
//    a negative exponent gives 1 for base 1, +-1 for base -1 (by parity)
//    and 0 otherwise (the truncated real power; 0 for base 0, which has
//    none). Pow with a float exponent: pow() in double of the base and the
//    exponent, truncated toward zero (the ONNX reference:
//    numpy.power(int64, float32) is float64, then astype(int64)); NaN gives
//    0 and values out of int64's range saturate.
//  * Max, Min; Select (condition != 0 ? lhs : rhs); Equal, Less,
//    LessOrEqual, Greater, GreaterOrEqual give 1 or 0.
//  * Cast between integer types: the caller stores the int64 result in the
//    output dtype (storeInts: i32 keeps the low 32 bits, bool is != 0).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_INTELEMENTWISE_H
#define MIXPREC_RUNTIME_CPU_INTELEMENTWISE_H

#include "runtime/kernels/Kernels.h"

#include <cstdint>

namespace mixprec::runtime::cpu {

/// The integer element-wise ops. The numbers are stored in modules (the
/// schema's IntElementwiseOptions.op): append only.
enum class IntOp : int64_t {
  Add = 0,
  Sub = 1,
  Mul = 2,
  Div = 3,
  Mod = 4,
  Fmod = 5,
  Pow = 6,
  Max = 7,
  Min = 8,
  Neg = 9,
  Abs = 10,
  Select = 11,
  Equal = 12,
  Less = 13,
  LessOrEqual = 14,
  Greater = 15,
  GreaterOrEqual = 16,
  Cast = 17,
};

/// The largest IntOp number.
constexpr int64_t kLastIntOp = static_cast<int64_t>(IntOp::Cast);

/// How many operands `op` takes (1, 2 or 3).
int intOpArity(IntOp op);

/// The op's name ("add", "greater_or_equal"), for messages.
const char *intOpName(IntOp op);

/// One operand: int64 values, or (Pow's exponent only) float values.
struct IntOperand {
  const int64_t *ints = nullptr;
  const float *floats = nullptr; ///< a float exponent; then `ints` is null
  Shape shape;
};

/// out = op(operands...) at every point of `outShape`, each operand
/// broadcast to it NumPy-style (the caller checks that they broadcast).
/// `out` must not alias an operand.
void intElementwise(IntOp op, const IntOperand *operands, int count, int64_t *out,
                    const Shape &outShape);

/// The scalar functions themselves, for tests and constant folding.
namespace intscalar {
int64_t add(int64_t a, int64_t b);
int64_t sub(int64_t a, int64_t b);
int64_t mul(int64_t a, int64_t b);
int64_t div(int64_t a, int64_t b);
int64_t mod(int64_t a, int64_t b);
int64_t fmod(int64_t a, int64_t b);
int64_t pow(int64_t base, int64_t exponent);
int64_t powFloat(int64_t base, double exponent);
int64_t neg(int64_t a);
int64_t abs(int64_t a);
} // namespace intscalar

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_INTELEMENTWISE_H
