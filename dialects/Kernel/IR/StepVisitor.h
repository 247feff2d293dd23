//===- StepVisitor.h - the step kinds of a planned mpk function -*- C++ -*-===//
//
// A compiled module is a sequence of steps: kernels, GEMM calls, backend
// routines and aliases. Every emitter of modules (the .mpk writer, the CUDA
// emitter) derives from StepVisitor, so a step kind added to the dialect is
// a compile error in each emitter until it handles it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_DIALECTS_KERNEL_IR_STEPVISITOR_H
#define MIXPREC_DIALECTS_KERNEL_IR_STEPVISITOR_H

#include "dialects/Kernel/IR/KernelOps.h"

namespace mixprec::kernel {

class StepVisitor {
public:
  virtual ~StepVisitor() = default;

  /// Calls the method of `op`'s step kind, or visitOther when `op` is no
  /// step; returns what that method returns.
  mlir::LogicalResult visit(mlir::Operation *op);

protected:
  virtual mlir::LogicalResult visitKernel(KernelOp op) = 0;
  virtual mlir::LogicalResult visitGemm(GemmOp op) = 0;
  virtual mlir::LogicalResult visitCall(CallOp op) = 0;
  virtual mlir::LogicalResult visitAlias(AliasOp op) = 0;
  /// A weight constant, the function's terminator, or an op the lowering
  /// should have turned into a step.
  virtual mlir::LogicalResult visitOther(mlir::Operation *op) = 0;
};

} // namespace mixprec::kernel

#endif // MIXPREC_DIALECTS_KERNEL_IR_STEPVISITOR_H
