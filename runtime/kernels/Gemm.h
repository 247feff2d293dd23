//===- Gemm.h - SGEMM wrapper shared by the kernels (internal) --*- C++ -*-===//
#ifndef MIXPREC_RUNTIME_CPU_GEMM_H
#define MIXPREC_RUNTIME_CPU_GEMM_H

#include <cstdint>

namespace mixprec::runtime::cpu::detail {

/// Row-major C[M,N] = A[M,K] * op(B) + beta * C with op(B) = B[K,N], or
/// B[N,K]^T when transB. Any of M, N, K may be zero.
void sgemm(bool transB, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
           float beta);

/// The same in FP64 (cblas_dgemm; a plain loop summing each C element's
/// products in order without BLAS), for the interpreter's FP64 mode.
void dgemm(bool transB, int64_t m, int64_t n, int64_t k, const double *a,
           int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc,
           double beta);

/// sgemm or dgemm by element type, for the kernels written once for both.
inline void gemm(bool transB, int64_t m, int64_t n, int64_t k, const float *a,
                 int64_t lda, const float *b, int64_t ldb, float *c,
                 int64_t ldc, float beta) {
  sgemm(transB, m, n, k, a, lda, b, ldb, c, ldc, beta);
}
inline void gemm(bool transB, int64_t m, int64_t n, int64_t k, const double *a,
                 int64_t lda, const double *b, int64_t ldb, double *c,
                 int64_t ldc, double beta) {
  dgemm(transB, m, n, k, a, lda, b, ldb, c, ldc, beta);
}

} // namespace mixprec::runtime::cpu::detail

#endif // MIXPREC_RUNTIME_CPU_GEMM_H
