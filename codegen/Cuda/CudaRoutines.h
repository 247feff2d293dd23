//===- CudaRoutines.h - CUDA kernels for mpk.call routines ------*- C++ -*-===//
//
// Routine steps (mpk.call) the CUDA backend can run as kernels of the
// module's one CUDA program instead of on the host, each reproducing the
// CPU backend's routine (runtime/src/backends/cpu/CpuRoutineStep.cpp) bit for bit:
//
//   transpose, slice, concat  copies of raw elements (any dtype: 1, 2, 4 or
//                             8 bytes), one grid-stride loop over the output;
//   gather, gather_elements   likewise, each index negative from the end;
//                             indices the compiler cannot check (all but a
//                             constant in range) are checked at run time;
//   scatter_nd                every reduction (none, add, mul, max, min), one
//                             thread per output element walking the update
//                             tuples in order (the CPU's order of updates);
//   reduce_sum, reduce_mean   in double, in the CPU routine's order;
//   int_elementwise           the CPU routine's int64 ops;
//   fp8_scale                 one thread: num::fp8Scale's formula in double.
//
// A kernel that checks indices at run time cannot return the CPU routine's
// error: it reports the first index out of range (the lowest position, as
// the CPU routine, which checks in order, names it) into the session's
// error record (runtime/format/CudaErrorRecord.h) under its routine's
// number plus one, reads nothing outside the data and writes nothing
// outside the output; the CUDA backend fails the run with the CPU's
// message. gather_nd stays on the host (no training step has one), as does
// every other routine (convolution, pooling, normalizations, softmax,
// matmul, arg_max, topk, cumsum). A routine kernel's parameters are the
// routine's inputs, then its output, as device pointers
// (Routine.cuda.params in runtime/schema/module.fbs.in), then the error
// record when it reports into it (CudaLaunch.error_record).
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

/// Emits routine `op`, number `index` of its function (its index in the
/// module's routines), as the kernel `name`; nullopt when the routine has
/// no CUDA form (the CUDA backend then runs it on the host).
std::optional<CudaKernel> emitCudaRoutine(kernel::CallOp op, const std::string &name, size_t index);

/// One entry per mpk.call of `func`, in order (the order the module writer
/// numbers routines in): its kernel, named mp_<function>_r<index>_<first
/// source op>, or nullopt.
std::vector<std::optional<CudaKernel>> emitCudaRoutines(mlir::func::FuncOp func);

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_CUDAROUTINES_H
