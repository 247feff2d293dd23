//===- CudaRoutines.h - CUDA kernels for mpk.call routines ------*- C++ -*-===//
//
// Routine steps (mpk.call) the CUDA backend can run as kernels of the
// module's one CUDA program instead of on the host, each reproducing the
// CPU backend's routine (runtime/src/backends/cpu/CpuRoutineStep.cpp) bit for bit:
//
//   transpose, slice, concat  copies of raw elements (any dtype: 1, 2, 4 or
//                             8 bytes), one grid-stride loop over the output;
//   gather                    likewise, when its indices are a constant the
//                             emitter checks in range (the CPU routine fails
//                             the run on an out-of-range index, which a
//                             kernel cannot report: indices computed at run
//                             time keep the routine on the host);
//   fp8_scale                 one thread: num::fp8Scale's formula in double.
//
// Every other routine (convolution, pooling, normalizations, reductions,
// softmax, matmul) has no CUDA form here and stays on the host. A routine
// kernel's parameters are the routine's inputs, then its output, as device
// pointers (Routine.cuda.params in runtime/schema/module.fbs.in).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_CUDAROUTINES_H
#define MIXPREC_CODEGEN_CUDA_CUDAROUTINES_H

#include "codegen/Cuda/CudaEmitter.h"

#include <optional>
#include <string>
#include <vector>

namespace mixprec::kernel {
class CallOp;
}

namespace mixprec::codegen {

/// Emits routine `op` as the kernel `name`; nullopt when the routine has no
/// CUDA form (the CUDA backend then runs it on the host).
std::optional<CudaKernel> emitCudaRoutine(kernel::CallOp op, const std::string &name);

/// One entry per mpk.call of `func`, in order (the order the module writer
/// numbers routines in): its kernel, named mp_<function>_r<index>_<first
/// source op>, or nullopt.
std::vector<std::optional<CudaKernel>> emitCudaRoutines(mlir::func::FuncOp func);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_CUDAROUTINES_H
