//===- KernelOps.h - the mpk kernel dialect ---------------------*- C++ -*-===//
#ifndef MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H
#define MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Kernel/IR/KernelDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/Kernel/IR/KernelOps.h.inc"

#endif // MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H
