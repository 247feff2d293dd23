//===- CudaTypes.h - element types as the emitted CUDA C++ spells them -*- C++ -*-===//
//
// The one table from an element type to its C type in the emitted code and
// the suffix of the prelude's helpers (mp_load_bf16, mp_store_e4m3, ...):
// the kernel emitter and the routine kernels both use it.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_CODEGEN_CUDA_CUDATYPES_H
#define MIXPREC_CODEGEN_CUDA_CUDATYPES_H

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace mixprec::codegen {

/// What the emitter needs to know of an element type: its C type, and the
/// helper suffix of its load, store and rounding functions.
struct DTypeInfo {
  const char *ctype;
  const char *suffix;
};

inline std::optional<DTypeInfo> dtypeInfo(mlir::Type t) {
  if (t.isF32())
    return DTypeInfo{"float", "f32"};
  if (t.isF16())
    return DTypeInfo{"__half", "f16"};
  if (t.isBF16())
    return DTypeInfo{"__nv_bfloat16", "bf16"};
  if (mlir::isa<mlir::Float8E4M3FNType>(t))
    return DTypeInfo{"__nv_fp8_storage_t", "e4m3"};
  if (mlir::isa<mlir::Float8E5M2Type>(t))
    return DTypeInfo{"__nv_fp8_storage_t", "e5m2"};
  if (t.isInteger(64))
    return DTypeInfo{"long long", "i64"};
  if (t.isInteger(32))
    return DTypeInfo{"int", "i32"};
  if (t.isInteger(1))
    return DTypeInfo{"unsigned char", "bool"};
  return std::nullopt;
}

} // namespace mixprec::codegen

#endif // MIXPREC_CODEGEN_CUDA_CUDATYPES_H
