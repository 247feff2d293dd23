//===- ConstantFolding.h - mp ops folded by their reference semantics -*- C++ -*-===//
//
// Constant folding of an mp op whose operands are all constants, computed
// by the interpreter's reference semantics (ElementwiseOpInterface's scalar
// function, ReferenceOpInterface): what an op folds to at compile time is
// what the interpreter computes at run time, floats in FP32 and rounded to
// the result's storage dtype, integers in int64 arithmetic (wrapping) and
// kept in their dtype. `--mp-fold-constants` and the ONNX importer fold
// with it; the dialect itself cannot (it must not depend on the CPU
// kernels), so its ODS folders keep to what needs no evaluation.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_INTERPRETER_CONSTANTFOLDING_H
#define MIXPREC_COMPILER_INTERPRETER_CONSTANTFOLDING_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace mixprec::compiler {

/// Element-count limits of one fold, so that a model cannot make folding
/// hold unbounded memory. An op that computes on floats, or moves integers,
/// folds up to `runTime` elements per result (a larger one is left to run
/// time, where it has a kernel); an op on integers and bools only (shape
/// arithmetic, masks) up to `compileTime`.
struct ConstantFoldLimits {
  int64_t runTime = int64_t(1) << 22;
  int64_t compileTime = int64_t(1) << 24;
};

/// The most elements a result of `op` may have to be folded, given its
/// constant operands: 0 when `op` is never folded. Data movement of float
/// constants (mp.transpose, mp.reshape, mp.gather... of weights) is never
/// folded: the layout of a weight is the compiler's (a transposed weight
/// becomes a GEMM's transpose flag, an embedding lookup stays a gather of
/// the one stored table), and folding would store each moved copy again.
int64_t foldLimitOf(mlir::Operation *op, llvm::ArrayRef<mlir::DenseElementsAttr> operands,
                    const ConstantFoldLimits &limits);

/// The results of `op` computed from `operands` (one dense constant per
/// operand) by its reference semantics. Fails when `op` cannot be folded:
/// it has side effects, regions or no reference semantics, or a result has
/// more than `maxElements` elements; `error` is then empty. Fails with
/// `error` set (without naming the op) when the evaluation itself fails
/// (an index out of range): the op would fail at run time too.
mlir::FailureOr<llvm::SmallVector<mlir::DenseElementsAttr, 1>>
evaluateOnConstants(mlir::Operation *op, llvm::ArrayRef<mlir::DenseElementsAttr> operands,
                    int64_t maxElements, std::string &error);

/// evaluateOnConstants of `op` on the values of the constant ops that
/// define its operands, within foldLimitOf. Fails, `error` empty, when an
/// operand is not a dense constant or the policy leaves `op` alone.
mlir::FailureOr<llvm::SmallVector<mlir::DenseElementsAttr, 1>>
foldConstantOp(mlir::Operation *op, const ConstantFoldLimits &limits, std::string &error);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_INTERPRETER_CONSTANTFOLDING_H
