//===- Evaluator.h - the value environment of the interpreter ---*- C++ -*-===//
//
// The interpreter runs one op at a time over an environment of host
// tensors. An op's reference semantics (ReferenceOpInterface, or its
// ScalarFn for element-wise ops) reads its operands from an Evaluator and
// stores its results there; the Evaluator rounds float results to their
// storage dtype and refuses an op whose results do not fit in memory.
//
// In the FP64 mode the Evaluator holds float tensors as double and never
// rounds them. Reference models are written once, templated on the float
// element type T (float or double: ReferenceModel::evaluate picks it from
// the mode), and reach values through values<T>, alloc<T> and setFloat.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_INTERPRETER_EVALUATOR_H
#define MIXPREC_COMPILER_INTERPRETER_EVALUATOR_H

#include "compiler/Interpreter/Interpreter.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace mixprec::compiler {

/// Names an op for diagnostics: "mp.gather 'embed'" or "mp.gather at file:1:2".
std::string describeOp(mlir::Operation *op);

/// The shape of a ranked tensor value.
std::vector<int64_t> shapeOf(mlir::Value v);

/// The element type of a ranked tensor value.
mlir::Type elementTypeOf(mlir::Value v);

/// Rounds float values in place to the storage dtype `elementType` (FP8
/// saturating, F16/BF16 overflowing to inf); F32 and non-float types keep them.
void roundToStorage(mlir::Type elementType, std::vector<float> &values);

/// The value of a constant op (ConstantLike with a tensor value), or null.
mlir::ElementsAttr constantValueOf(mlir::Operation *op);

/// Decodes a constant attribute into a host tensor of its storage dtype;
/// with `wide` (the FP64 mode) float values go into `doubles`, widened
/// exactly from any float dtype. Fails, setting `error`, for anything but a
/// dense attribute.
bool decodeConstant(mlir::ElementsAttr attr, HostTensor &out, std::string &error,
                    bool wide = false);

/// Bytes a tensor of `type` holds in host memory (floats as float32, or
/// double when `wide`; integers as int64, bools as bytes; see HostTensor);
/// UINT64_MAX when its size does not fit in 64 bits.
uint64_t hostBytesOf(mlir::Type type, bool wide = false);

/// The float storage of a host tensor for element type T: `floats` for
/// float, `doubles` for double (the FP64 mode).
template <typename T> std::vector<T> &floatStorage(HostTensor &t) {
  if constexpr (std::is_same_v<T, float>)
    return t.floats;
  else
    return t.doubles;
}
template <typename T> const std::vector<T> &floatStorage(const HostTensor &t) {
  return floatStorage<T>(const_cast<HostTensor &>(t));
}

/// a + b and a * b, UINT64_MAX on overflow; UINT64_MAX (too many bytes)
/// times anything stays UINT64_MAX.
uint64_t addBytes(uint64_t a, uint64_t b);
uint64_t mulBytes(uint64_t a, uint64_t b);

/// Evaluates ops one by one over a value environment. Graph constants are
/// read in place from `constants`, never copied into the environment.
class Evaluator {
public:
  /// `wide`: the FP64 mode (float tensors held and computed in double).
  Evaluator(llvm::DenseMap<mlir::Value, HostTensor> &env,
            const llvm::DenseMap<mlir::Value, HostTensor> &constants, bool wide = false);

  /// Whether float tensors are held and computed in double (the FP64 mode).
  bool computesInDouble() const { return wide; }

  /// Computes the results of `op` into the environment. On failure error()
  /// says why (without naming `op`: the caller does).
  mlir::LogicalResult execute(mlir::Operation *op);

  /// Why the last failure happened.
  const std::string &error() const { return lastError; }

  /// Records `message` as the error and returns failure.
  mlir::LogicalResult fail(std::string message);

  /// The tensor `v` holds (an operand's value).
  const HostTensor &get(mlir::Value v) const;

  /// The float values of `v`.
  const float *floats(mlir::Value v) const { return get(v).floats.data(); }

  /// The float values of `v` as T (double in the FP64 mode).
  template <typename T> const T *values(mlir::Value v) const {
    return floatStorage<T>(get(v)).data();
  }

  /// Zeros for every element of the float result `result`.
  std::vector<float> allocFloats(mlir::Value result) const { return alloc<float>(result); }
  template <typename T> std::vector<T> alloc(mlir::Value result) const {
    return std::vector<T>(numElementsOf(result));
  }

  /// Stores a float result, rounding it to the result's storage dtype.
  void setFloat(mlir::Value result, std::vector<float> values);
  /// Stores a float result of the FP64 mode as is (no storage rounding).
  void setFloat(mlir::Value result, std::vector<double> values);

  /// Stores a result as is (data movement: the values are already stored).
  void set(mlir::Value result, HostTensor tensor);

  /// Drops `v` from the environment (a fusion's internal values).
  void erase(mlir::Value v) { env.erase(v); }

  /// A GEMM operand as `gemm` reads it: a TF32 GEMM rounds FP32 operands
  /// to TF32 into `scratch` first; other dtypes were rounded when stored.
  const float *gemmOperand(mlir::Operation *gemm, mlir::Value v,
                           std::vector<float> &scratch) const;
  /// In the FP64 mode the operand as stored: no TF32 rounding.
  const double *gemmOperand(mlir::Operation *, mlir::Value v, std::vector<double> &) const {
    return values<double>(v);
  }

private:
  /// The element count of the ranked tensor value `v`.
  static int64_t numElementsOf(mlir::Value v);

  /// Refuses, before allocating, an op whose results and scratch do not
  /// fit beside the live tensors (cpu::fitsInMemory, the CPU backend's
  /// rule for its arena).
  mlir::LogicalResult checkMemory(mlir::Operation *op);

  llvm::DenseMap<mlir::Value, HostTensor> &env;
  const llvm::DenseMap<mlir::Value, HostTensor> &constants;
  uint64_t constantBytes = 0;
  bool wide = false;
  std::string lastError;
};

/// Computes an element-wise op from its scalar function (ElementwiseOpInterface).
mlir::LogicalResult evaluateElementwise(mlir::Operation *op, Evaluator &evaluator);

/// Whether the interpreter can run `op`: a constant, a terminator, an
/// element-wise op or an op with reference semantics.
bool hasReferenceSemantics(mlir::Operation *op);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_INTERPRETER_EVALUATOR_H
