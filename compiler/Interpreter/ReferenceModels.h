//===- ReferenceModels.h - external models of ReferenceOpInterface -*- C++ -*-===//
//
// Private to the interpreter library. Each op family's file defines one
// small model per op and attaches them (GemmReference.cpp, ...);
// ReferenceModels.cpp registers every family with the mp dialect.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_INTERPRETER_REFERENCEMODELS_H
#define MIXPREC_COMPILER_INTERPRETER_REFERENCEMODELS_H

#include "compiler/Interpreter/Evaluator.h"
#include "compiler/Interpreter/ReferenceOpInterface.h"

#include "runtime/kernels/Kernels.h"

#include "mlir/IR/MLIRContext.h"

#include <array>

namespace mixprec::compiler {

/// The model of op `OpT`: `Derived::run<T>(OpT, Evaluator &)` computes it
/// with float tensors held as T, float (the FP32 mode) or double (the FP64
/// mode). A model whose kernel allocates scratch defines getScratchBytes too.
template <typename Derived, typename OpT>
struct ReferenceModel : ReferenceOpInterface::ExternalModel<Derived, OpT> {
  mlir::LogicalResult evaluate(mlir::Operation *op, Evaluator &evaluator) const {
    if (evaluator.computesInDouble())
      return Derived::template run<double>(mlir::cast<OpT>(op), evaluator);
    return Derived::template run<float>(mlir::cast<OpT>(op), evaluator);
  }
};

/// An op's float attribute (an epsilon) as T: exactly as the IR holds it.
template <typename T> T floatAttrAs(const llvm::APFloat &value) {
  if constexpr (std::is_same_v<T, float>)
    return value.convertToFloat();
  else
    return value.convertToDouble();
}

/// Attaches the models of one op family to the ops of a loaded mp dialect.
void attachGemmReferenceModels(mlir::MLIRContext *ctx);
void attachReductionReferenceModels(mlir::MLIRContext *ctx);
void attachDataMovementReferenceModels(mlir::MLIRContext *ctx);
void attachScalingAndFusionReferenceModels(mlir::MLIRContext *ctx);
void attachIndexingReferenceModels(mlir::MLIRContext *ctx);

/// The first 2 or 4 values of a dense i64 array attribute, as the CPU
/// kernels take them.
inline std::array<int64_t, 2> pairOf(llvm::ArrayRef<int64_t> v) { return {v[0], v[1]}; }
inline std::array<int64_t, 4> quadOf(llvm::ArrayRef<int64_t> v) {
  return {v[0], v[1], v[2], v[3]};
}

/// The N-D window of a convolution (no kernel: the weight's) or pooling
/// op, as the CPU kernels take it.
inline runtime::cpu::Window windowOf(llvm::ArrayRef<int64_t> kernel,
                                     llvm::ArrayRef<int64_t> strides,
                                     llvm::ArrayRef<int64_t> pads,
                                     llvm::ArrayRef<int64_t> dilations) {
  return {{kernel.begin(), kernel.end()},
          {strides.begin(), strides.end()},
          {pads.begin(), pads.end()},
          {dilations.begin(), dilations.end()}};
}

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_INTERPRETER_REFERENCEMODELS_H
