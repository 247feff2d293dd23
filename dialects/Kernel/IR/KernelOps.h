//===- KernelOps.h - the mpk kernel dialect ---------------------*- C++ -*-===//
#ifndef MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H
#define MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Graph/IR/GraphInterfaces.h"
#include "dialects/Kernel/IR/KernelEnums.h.inc"

#include "dialects/Kernel/IR/KernelDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/Kernel/IR/KernelOps.h.inc"

namespace mixprec::kernel {

/// Whether `op` may sit in an mpk.kernel body: one instruction of an
/// expression program (an element-wise op of one instruction, a scalar
/// constant, a row primitive, the yield). Softmax, norms, reductions and
/// silu are decomposed into these by --mp-lower-to-kernels.
bool isKernelInstruction(mlir::Operation *op);

} // namespace mixprec::kernel

#endif // MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H
