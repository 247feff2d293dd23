//===- Interpreter.h - reference execution of mp graphs ---------*- C++ -*-===//
//
// Runs a `func.func` of mp ops on the CPU. Values are computed in FP32 and
// rounded to their storage dtype wherever the IR stores one (a bf16 tensor
// holds only bf16 values), so an FP32 graph gives the FP32 reference and an
// annotated graph gives what its precision plan computes. GEMMs run through
// OpenBLAS on the (already rounded) operands and accumulate in FP32.
//
// What each op computes is its reference semantics: element-wise ops by
// their scalar function (ElementwiseOpInterface), the others through
// ReferenceOpInterface, whose implementations this library attaches to the
// mp ops. Whoever creates a context that runs the interpreter calls
// registerReferenceExternalModels on it.
//
// The FP64 mode (interpretF64, Interpreter::Mode::Fp64) runs the same op
// semantics with every float tensor held and computed in double, never
// rounded to a storage dtype: the reference that finite-difference gradient
// checks need. Integer and bool tensors behave as in the FP32 mode. What
// the precision-specific ops do there:
//  * casts between float types are identities; int <-> float as always;
//  * TF32 GEMMs multiply the double operands (no TF32 rounding);
//  * mp.quantize is x * scale and mp.dequantize x / scale, in double, with
//    no FP8 grid and no saturation (inf and NaN follow IEEE arithmetic);
//  * mp.amax is max |x| in double (NaN anywhere gives NaN);
//  * mp.fp8_scale is numerics::fp8ScaleExact, the same rule in double
//    without the clamp to float range;
//  * mp.scaled_matmul / mp.scaled_linear multiply in double, then by
//    (1/scale_a)(1/scale_b) and add the bias, as in FP32;
//  * an integer mp.pow with a float exponent is refused (its kernel reads
//    the exponent as float).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_INTERPRETER_INTERPRETER_H
#define MIXPREC_COMPILER_INTERPRETER_INTERPRETER_H

#include "common/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mixprec::compiler {

/// Adds the reference semantics of the mp ops (ReferenceOpInterface
/// external models) to `registry`, for contexts the interpreter runs in.
void registerReferenceExternalModels(mlir::DialectRegistry &registry);
/// The same for an existing context, whose mp dialect may already be loaded.
void registerReferenceExternalModels(mlir::MLIRContext &context);

using support::HostTensor;

/// The kind of host tensor that holds values of `elementType` (i1: Bool,
/// other integers: Int, floats: Float).
HostTensor::Kind kindOfType(mlir::Type elementType);

/// What a graph input or output is: its name, shape and element type.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  mlir::Type elementType;
};

/// The named inputs and outputs of a graph function.
struct GraphSignature {
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
};

/// Reads the `mp.name` argument and result attributes (falling back to
/// "input_<i>" / "output_<i>").
GraphSignature getSignature(mlir::func::FuncOp func);

/// Finds the function to run: `@main`, or the module's only function.
mlir::func::FuncOp findEntryFunction(mlir::ModuleOp module, std::string &error);

/// Executes a graph function. Constants are decoded once, by prepare().
class Interpreter {
public:
  /// Fp32: float values computed in FP32 and rounded to their storage
  /// dtype. Fp64: computed and kept in double (float inputs and outputs in
  /// HostTensor::doubles); see the file comment.
  enum class Mode { Fp32, Fp64 };

  explicit Interpreter(mlir::func::FuncOp func, Mode mode = Mode::Fp32)
      : func(func), mode(mode) {}

  /// Checks every op has reference semantics and decodes constants. Returns
  /// false and sets `error` (naming the op) otherwise.
  bool prepare(std::string &error);

  /// Runs on inputs in signature order; fills outputs in signature order.
  /// Fails, naming the op, on a run-time error (e.g. a gather index out of
  /// range) or on inputs that do not match the signature.
  bool run(const std::vector<HostTensor> &inputs, std::vector<HostTensor> &outputs,
           std::string &error);

  /// Called after each op (constants and casts included) with its results,
  /// before they may be freed: calibration and shadow comparison hook in here.
  using Observer = std::function<void(mlir::Operation *, llvm::ArrayRef<const HostTensor *>)>;
  void setObserver(Observer observer) { this->observer = std::move(observer); }

private:
  Observer observer;
  mlir::func::FuncOp func;
  Mode mode;
  llvm::DenseMap<mlir::Value, HostTensor> constants;
  bool prepared = false;
};

/// A tensor for the FP64 mode: float tensors' values in `values`, integer and
/// bool tensors' values as exact doubles too (|v| < 2^53 checked, else error).
struct HostTensorF64 {
  std::vector<int64_t> shape;
  std::vector<double> values;
};

/// Runs `func` (an mp-dialect func.func, the same ops `Interpreter` accepts)
/// with every float op computed and kept in double (Interpreter::Mode::Fp64).
/// Inputs in argument order; the element type of each argument says how its
/// values are read (float: as is; integer/bool: must be integral, bool 0 or
/// 1, within the integer type's range). Constants are read from the IR and
/// widened exactly. Outputs in result order. Fails with a message naming the
/// op (or the input or output at fault).
mlir::FailureOr<std::vector<HostTensorF64>>
interpretF64(mlir::func::FuncOp func, llvm::ArrayRef<HostTensorF64> inputs, std::string &error);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_INTERPRETER_INTERPRETER_H
