//===- Linalg.cpp - MatMul and Linear on OpenBLAS ------------------------===//
//
// Builds without a BLAS library define MIXPREC_NO_BLAS and multiply with
// portableSgemm (the runtime-only build on machines without OpenBLAS).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Gemm.h"
#include "runtime/kernels/Kernels.h"
#include "runtime/kernels/StridedLoop.h"

#ifdef MIXPREC_NO_BLAS
#include "runtime/kernels/PortableSgemm.h"
#else
#include <cblas.h>
#endif

#include <algorithm>
#include <cassert>
#include <climits>

namespace mixprec::runtime::cpu {

namespace detail {

namespace {

/// C = beta * C: the product of a zero-length dot product (0 for beta 0,
/// so garbage in C never leaks through as NaN).
template <typename T>
void scaleByBeta(int64_t m, int64_t n, T *c, int64_t ldc, T beta) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
}

} // namespace

// Degenerate sizes are handled here because BLAS rejects lda/ldb of 0 and
// some builds print xerbla errors for them.
void sgemm(bool transB, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc,
           float beta) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleByBeta(m, n, c, ldc, beta);
#ifdef MIXPREC_NO_BLAS
  portableSgemm(transB, m, n, k, a, lda, b, ldb, c, ldc, beta);
#else
  assert(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
         ldb <= INT_MAX && ldc <= INT_MAX && "blasint is 32-bit");
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
#endif
}

void dgemm(bool transB, int64_t m, int64_t n, int64_t k, const double *a,
           int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc,
           double beta) {
  if (m == 0 || n == 0)
    return;
  if (k == 0)
    return scaleByBeta(m, n, c, ldc, beta);
#ifdef MIXPREC_NO_BLAS
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = beta == 0.0 ? 0.0 : beta * c[i * ldc + j];
      for (int64_t p = 0; p < k; ++p)
        sum += a[i * lda + p] * (transB ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = sum;
    }
#else
  assert(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX && lda <= INT_MAX &&
         ldb <= INT_MAX && ldc <= INT_MAX && "blasint is 32-bit");
  cblas_dgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k),
              1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c,
              static_cast<int>(ldc));
#endif
}

} // namespace detail

namespace {

struct MatmulDims {
  int64_t m = 0, k = 0, n = 0;
  Shape batchA, batchB, batch;
};

bool matmulDims(const Shape &as, const Shape &bs, MatmulDims &d) {
  if (as.empty() || bs.empty())
    return false;
  d.k = as.back();
  d.m = as.size() >= 2 ? as[as.size() - 2] : 1;
  int64_t kb = bs.size() >= 2 ? bs[bs.size() - 2] : bs[0];
  d.n = bs.size() >= 2 ? bs.back() : 1;
  if (kb != d.k)
    return false;
  if (as.size() > 2)
    d.batchA.assign(as.begin(), as.end() - 2);
  if (bs.size() > 2)
    d.batchB.assign(bs.begin(), bs.end() - 2);
  shapes::ShapeOrError batch = shapes::broadcastShapes(d.batchA, d.batchB);
  d.batch = std::move(batch.shape);
  return batch.ok();
}

} // namespace

namespace {

/// matmul() in T.
template <typename T>
void matmulT(const T *a, const Shape &as, const T *b, const Shape &bs, T *out,
             const Shape &os) {
  MatmulDims d;
  bool dimsOk = matmulDims(as, bs, d);
  (void)dimsOk;
  assert(dimsOk && shapes::matmulShape(as, bs).shape == os);
  const int64_t m = d.m, n = d.n, k = d.k;
  const int64_t nb = numElements(d.batch);
  if (nb == 0 || m == 0 || n == 0)
    return;
  // A shared (unbatched) B with a fully batched A is one tall GEMM: this is
  // the common x[B,S,K] @ W[K,N] case and much faster than per-batch calls.
  if (numElements(d.batchB) == 1 && numElements(d.batchA) == nb) {
    detail::gemm(false, nb * m, n, k, a, k, b, n, out, n, T(0));
    return;
  }
  std::vector<int64_t> so = contiguousStrides(d.batch);
  std::vector<int64_t> sa = detail::broadcastStrides(d.batchA, d.batch);
  std::vector<int64_t> sb = detail::broadcastStrides(d.batchB, d.batch);
  for (size_t i = 0; i < d.batch.size(); ++i) {
    so[i] *= m * n;
    sa[i] *= m * k;
    sb[i] *= k * n;
  }
  auto plan = detail::makePlan<3>(d.batch, {&so, &sa, &sb});
  detail::forEachRow<3>(plan, {0, 0, 0},
                        [&](const std::array<int64_t, 3> &off, int64_t cnt,
                            const std::array<int64_t, 3> &st) {
                          for (int64_t j = 0; j < cnt; ++j)
                            detail::gemm(false, m, n, k,
                                         a + off[1] + j * st[1], k,
                                         b + off[2] + j * st[2], n,
                                         out + off[0] + j * st[0], n, T(0));
                        });
}

/// linear() in T.
template <typename T>
void linearT(const T *x, const Shape &xs, const T *w, const Shape &ws,
             bool transposeW, const T *bias, const Shape &biasShape, T *out,
             const Shape &os) {
  assert(!xs.empty() && ws.size() == 2);
  const int64_t k = xs.back();
  int64_t m = 1;
  for (size_t i = 0; i + 1 < xs.size(); ++i)
    m *= xs[i];
  const int64_t n = transposeW ? ws[0] : ws[1];
  assert((transposeW ? ws[1] : ws[0]) == k);
#ifndef NDEBUG
  Shape expected(xs.begin(), xs.end() - 1);
  expected.push_back(n);
  assert(expected == os);
#endif
  T beta = 0;
  if (bias) {
    // Prefill the output with the broadcast bias and let GEMM accumulate
    // onto it (beta = 1): no second pass over the output.
    shapes::ShapeOrError full = shapes::broadcastShapes(biasShape, os);
    if (full.ok() && full.shape == os) {
      expand(bias, biasShape, out, os);
    } else {
      Shape flat2d = {m, n};
#ifndef NDEBUG
      full = shapes::broadcastShapes(biasShape, flat2d);
      assert(full.ok() && full.shape == flat2d && "bias not broadcastable to output");
#endif
      expand(bias, biasShape, out, flat2d);
    }
    beta = 1;
  }
  detail::gemm(transposeW, m, n, k, x, k, w, transposeW ? k : n, out, n, beta);
}

} // namespace

void matmul(const float *a, const Shape &as, const float *b, const Shape &bs,
            float *out, const Shape &os) {
  matmulT(a, as, b, bs, out, os);
}
void matmul(const double *a, const Shape &as, const double *b, const Shape &bs,
            double *out, const Shape &os) {
  matmulT(a, as, b, bs, out, os);
}

void linear(const float *x, const Shape &xs, const float *w, const Shape &ws,
            bool transposeW, const float *bias, const Shape &biasShape,
            float *out, const Shape &os) {
  linearT(x, xs, w, ws, transposeW, bias, biasShape, out, os);
}
void linear(const double *x, const Shape &xs, const double *w, const Shape &ws,
            bool transposeW, const double *bias, const Shape &biasShape,
            double *out, const Shape &os) {
  linearT(x, xs, w, ws, transposeW, bias, biasShape, out, os);
}

} // namespace mixprec::runtime::cpu
