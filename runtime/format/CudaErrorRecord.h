//===- CudaErrorRecord.h - run-time errors of CUDA routine kernels -*- C++ -*-===//
//
// A routine kernel whose inputs can make the CPU routine fail (an index out
// of range in gather, gather_elements or scatter_nd) cannot return a status:
// it writes what went wrong into one small record in device memory, which
// the CUDA backend clears before each run and reads back before any host
// step and at the end of the run (runtime/src/backends/cuda/CudaBackend.h).
// The record's layout is written once, below, as a macro: the host compiles
// it as a struct, and the CUDA emitter prints its text into the prelude of
// every program (kCudaErrorRecordSource), with the device function that
// reports an error.
//
// Reporting is deterministic, so that the CUDA backend's message names the
// element the CPU routine (which checks its indices in order) names:
//  - `tag` is the number of the first routine that failed (its index in
//    Module.routines plus one), set once with atomicCAS from 0: kernels of
//    later routines of the same run leave a claimed record alone;
//  - `position` holds the complement of the lowest failing position of the
//    indices (atomicMax on complements keeps the lowest; 0 means none);
//  - `value` is the index at that position. Every reporting thread, after
//    its atomicMax, stores the value at the position the record holds and
//    repeats until the position it read is unchanged: the position only
//    grows in complement, so the last store is of the lowest position's
//    value (the value is read from the indices, which no thread writes).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_FORMAT_CUDAERRORRECORD_H
#define MIXPREC_RUNTIME_FORMAT_CUDAERRORRECORD_H

#include <cstdint>
#include <string>

// The record, for both compilers: 24 bytes, 8-aligned.
#define MIXPREC_CUDA_ERROR_RECORD_STRUCT                                                           \
  struct MpErrorRecord {                                                                           \
    unsigned tag;                                                                                  \
    unsigned reserved;                                                                             \
    unsigned long long position;                                                                   \
    unsigned long long value;                                                                      \
  };

// The device side: mp_report_index(record, tag, position, indices, wide)
// reports the index at `position` of `indices` (int64 when `wide`, else
// int32) as out of range for routine `tag`.
#define MIXPREC_CUDA_ERROR_RECORD_DEVICE                                                           \
  __device__ __forceinline__ long long mp_index_at(const void *indices, bool wide, long long at) { \
    return wide ? ((const long long *)indices)[at] : (long long)((const int *)indices)[at];        \
  }                                                                                                \
  __device__ void mp_report_index(MpErrorRecord *record, unsigned tag, long long position,         \
                                  const void *indices, bool wide) {                                \
    const unsigned claimed = atomicCAS(&record->tag, 0u, tag);                                     \
    if (claimed != 0u && claimed != tag)                                                           \
      return;                                                                                      \
    atomicMax(&record->position, ~(unsigned long long)position);                                   \
    __threadfence();                                                                               \
    for (;;) {                                                                                     \
      const unsigned long long key = atomicMax(&record->position, 0ull);                           \
      atomicExch(&record->value, (unsigned long long)mp_index_at(indices, wide, (long long)~key)); \
      __threadfence();                                                                             \
      if (atomicMax(&record->position, 0ull) == key)                                               \
        return;                                                                                    \
    }                                                                                              \
  }

#define MIXPREC_CUDA_ERROR_RECORD_TEXT2(...) #__VA_ARGS__
#define MIXPREC_CUDA_ERROR_RECORD_TEXT(...) MIXPREC_CUDA_ERROR_RECORD_TEXT2(__VA_ARGS__)

namespace mixprec::runtime {

MIXPREC_CUDA_ERROR_RECORD_STRUCT
static_assert(sizeof(MpErrorRecord) == 24, "the record's layout is the device's");

/// The record as CUDA C++ (one line each), for the emitter's prelude.
// clang-format off
inline const char *const kCudaErrorRecordSource =
    "// Run-time errors of routine kernels (runtime/format/CudaErrorRecord.h).\n"
    MIXPREC_CUDA_ERROR_RECORD_TEXT(MIXPREC_CUDA_ERROR_RECORD_STRUCT) "\n"
    MIXPREC_CUDA_ERROR_RECORD_TEXT(MIXPREC_CUDA_ERROR_RECORD_DEVICE) "\n";
// clang-format on

/// The execution error of an index out of range, as the CPU backend words
/// it: "<op>: index V is out of range for dim D of size S", with "(element
/// P of the indices)" after V when `withPosition` (gather_elements,
/// gather_nd, scatter_nd; gather names only the index).
std::string indexOutOfRangeMessage(const std::string &op, int64_t value, bool withPosition,
                                   int64_t position, int64_t dim, int64_t size);

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_FORMAT_CUDAERRORRECORD_H
