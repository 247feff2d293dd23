//===- KernelUtils.h - what kernels are made of ----------------*- C++ -*-===//
//
// Shared by --mp-fuse and --mp-lower-to-kernels, so that what fusion groups
// is exactly what lowering can express as a kernel.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_KERNELUTILS_H
#define MIXPREC_PASSES_KERNELUTILS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mixprec::passes {

/// Whether the op computes each element from the same element of its
/// (broadcast) operands, so a kernel can run it at every point.
bool isElementwiseKernelOp(mlir::Operation *op);

/// Whether the op is a GEMM a cuBLASLt call runs (plain or FP8-scaled).
bool isGemmOp(mlir::Operation *op);

/// The cuBLASLt activation epilogue an element-wise op is ("relu" or
/// "gelu", the tanh form cuBLASLt computes), or nullopt if it is none.
std::optional<llvm::StringRef> gemmEpilogueOf(mlir::Operation *op);

/// Whether the op is a softmax, norm or reduction (any axes).
bool isReductionOp(mlir::Operation *op);

/// The number of trailing dims a row reduction runs over, or -1 if the op is
/// not a reduction over trailing dims only (then it runs as a routine).
int64_t rowReductionDims(mlir::Operation *op);

/// A rank-0 or single-element constant: a kernel takes it as an immediate.
bool isScalarConstant(mlir::Value v);

/// The graph op names a lowered op keeps (`ops`): each op's node name, else
/// its op type.
mlir::ArrayAttr namesOf(mlir::MLIRContext *ctx, llvm::ArrayRef<mlir::Operation *> ops);

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_KERNELUTILS_H
