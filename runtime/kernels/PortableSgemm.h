//===- PortableSgemm.h - SGEMM without a BLAS library -----------*- C++ -*-===//
//
// The CPU kernels call OpenBLAS's cblas_sgemm. Where no BLAS is installed
// (the runtime-only build on a GPU machine, whose CPU backend only serves
// as a reference), they call this instead: plain C++ the compiler
// vectorizes, cache-blocked, rows split over threads for large products.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_PORTABLESGEMM_H
#define MIXPREC_RUNTIME_CPU_PORTABLESGEMM_H

#include <cstdint>

namespace mixprec::runtime::cpu {

/// Row-major C[M,N] = A[M,K] * op(B) + beta * C with op(B) = B[K,N], or
/// B[N,K]^T when transB, as detail::sgemm. Each C element sums its K
/// products in order (p = 0, 1, ...) after scaling by beta, so results do
/// not depend on the number of threads.
void portableSgemm(bool transB, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc, float beta);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_PORTABLESGEMM_H
