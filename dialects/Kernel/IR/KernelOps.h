//===- KernelOps.h - the mpk kernel dialect ---------------------*- C++ -*-===//
#ifndef MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H
#define MIXPREC_DIALECTS_KERNEL_IR_KERNELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/Graph/IR/GraphInterfaces.h"

#include "dialects/Kernel/IR/KernelDialect.h.inc"
#include "dialects/Kernel/IR/KernelEnums.h.inc"

namespace mixprec::kernel {
/// Parameter syntax of the routine options (KernelAttrs.td): `[1, 0]` (also
/// `[]`), `true`/`false`, and an f32 value that parses back bit for bit.
mlir::FailureOr<llvm::SmallVector<int64_t>> parseIntList(mlir::AsmParser &parser);
void printIntList(mlir::AsmPrinter &printer, llvm::ArrayRef<int64_t> values);
mlir::FailureOr<bool> parseBoolKeyword(mlir::AsmParser &parser);
mlir::FailureOr<llvm::APFloat> parseF32(mlir::AsmParser &parser);
} // namespace mixprec::kernel

#include "dialects/Kernel/IR/KernelAttrInterfaces.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/Kernel/IR/KernelAttrs.h.inc"

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
