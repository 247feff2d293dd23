//===- KernelEnums.td - enumerations of the mpk dialect -------------------===//
#ifndef MIXPREC_KERNEL_ENUMS
#define MIXPREC_KERNEL_ENUMS

include "mlir/IR/EnumAttr.td"

// What mpk.row_reduce computes over a kernel's row (the expression
// program's RowSum and RowMax).
def MPK_RowReduceKind : I32EnumAttr<"RowReduceKind", "the reduction of mpk.row_reduce", [
    I32EnumAttrCase<"sum", 0>,   // FP32 accumulation in row order; empty row: 0
    I32EnumAttrCase<"max", 1>,   // empty row: -inf
  ]> {
  let cppNamespace = "::mixprec::kernel";
}

#endif // MIXPREC_KERNEL_ENUMS
