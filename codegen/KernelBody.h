//===- KernelBody.h - facts of mpk kernel bodies every emitter needs -*- C++ -*-===//
//
// How a kernel body's values are read at each point of its iteration space
// and what its scalar constants hold, shared by the emitters of kernels
// (the module writer's expression programs and the CUDA emitter).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_KERNELBODY_H
#define MIXPREC_CODEGEN_KERNELBODY_H

#include "mlir/IR/Operation.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace mixprec::codegen {

/// Element strides that read a tensor of shape `t` at every point of the
/// iteration space `space`, broadcasting NumPy-style as the kernel body's
/// ops do (a size-1 dim, such as a row value's row dims, has stride 0).
std::vector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> t, llvm::ArrayRef<int64_t> space);

/// The value of a splat scalar constant as the FP32 a kernel computes with
/// (a bool 1 or 0, an integer its value), or nullopt when `op` is none.
std::optional<float> scalarConstantValue(mlir::Operation &op);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_KERNELBODY_H
