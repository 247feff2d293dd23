//===- CpuDnnlCommon.h - what the oneDNN GEMM and conv steps share -*- C++ -*-===//
//
// For CpuDnnl.cpp and CpuDnnlConv.cpp only, and only where the runtime has
// oneDNN (MIXPREC_HAVE_DNNL): dtypes to oneDNN's, its statuses in words, and
// the exact widening of FP8 (to BF16) and FP16 (to FP32) operands.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_CPUDNNLCOMMON_H
#define MIXPREC_RUNTIME_CPU_CPUDNNLCOMMON_H

#if MIXPREC_HAVE_DNNL

#include "runtime/src/backends/cpu/CpuBackend.h"

#include "common/numerics/Rounding.h"

#include <oneapi/dnnl/dnnl.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace mixprec::runtime::dnnl {

/// The oneDNN data type of a stored dtype, or undef.
inline dnnl_data_type_t typeOf(schema::DType d) {
  switch (d) {
  case schema::DType::F32:
    return dnnl_f32;
  case schema::DType::BF16:
    return dnnl_bf16;
  case schema::DType::F16:
    return dnnl_f16;
  default:
    return dnnl_data_type_undef;
  }
}

/// A oneDNN status in words.
inline std::string statusText(dnnl_status_t s) {
  switch (s) {
  case dnnl_out_of_memory:
    return "out of memory";
  case dnnl_invalid_arguments:
    return "invalid arguments";
  case dnnl_unimplemented:
    return "no implementation for this CPU";
  default:
    return "oneDNN status " + std::to_string(int(s));
  }
}

/// MIXPREC_CPU_GEMM=openblas: GEMMs and convolutions both stay on the
/// reference path (the benchmark's comparison); the reason they give.
inline const char *offByEnvironment() {
  const char *off = std::getenv("MIXPREC_CPU_GEMM");
  return off && std::strcmp(off, "openblas") == 0 ? "MIXPREC_CPU_GEMM=openblas" : nullptr;
}

inline bool isFp8(schema::DType d) {
  return d == schema::DType::F8E4M3FN || d == schema::DType::F8E5M2;
}

/// Whether BF16 operands (and FP8 ones, through BF16) run on oneDNN's BF16
/// kernels on this CPU, else widened to FP32 (exactly) for its FP32 ones:
/// BF16 where the CPU has AMX, or AVX512-BF16 dot products that outrun its
/// FP32 FMAs (AMD's; on an Intel Xeon without AMX VDPBF16PS ran at half the
/// FMA's flops, making BF16 GEMMs 2x slower than FP32 ones), decided from
/// what the CPU is (CpuDnnl.cpp), the same in every process.
/// MIXPREC_CPU_BF16=native or fp32 decides instead.
bool bf16Native();

/// The dtype oneDNN takes a stored dtype in without rounding: itself; BF16
/// for FP8 (every FP8 value is a BF16 value); FP32 for BF16 and FP8 where
/// BF16 kernels do not pay (bf16Native), and for FP16 where the CPU has no
/// FP16 kernel (`widenF16`).
inline schema::DType exactType(schema::DType d, bool widenF16) {
  if (isFp8(d) || d == schema::DType::BF16)
    return bf16Native() ? schema::DType::BF16 : schema::DType::F32;
  return d == schema::DType::F16 && widenF16 ? schema::DType::F32 : d;
}

/// Widens `n` values of `from` at `in` to `to`, exactly: FP16 (or any
/// narrow float) to FP32, FP8 to BF16 (widenFp8ToBf16: every FP8 value is
/// a BF16 value).
inline void widen(schema::DType from, schema::DType to, const void *in, int64_t n, void *out) {
  if (to == schema::DType::F32) {
    num::decodeArray(formatOf(from), in, static_cast<float *>(out), static_cast<size_t>(n));
    return;
  }
  widenFp8ToBf16(from, static_cast<const uint8_t *>(in), static_cast<uint16_t *>(out), n);
}

} // namespace mixprec::runtime::dnnl

#endif // MIXPREC_HAVE_DNNL

#endif // MIXPREC_RUNTIME_CPU_CPUDNNLCOMMON_H
