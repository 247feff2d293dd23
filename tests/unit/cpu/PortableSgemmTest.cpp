//===- PortableSgemmTest.cpp - the SGEMM of builds without OpenBLAS -------===//
//
// portableSgemm stands in for cblas_sgemm in the runtime-only build on
// machines without OpenBLAS. Here both exist: it must equal a plain
// in-order float loop bit for bit (blocking and threads change no sum),
// and agree with OpenBLAS (detail::sgemm) within rounding.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Gemm.h"
#include "runtime/kernels/PortableSgemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace {

using mixprec::runtime::cpu::portableSgemm;

struct Case {
  bool transB;
  int64_t m, n, k, lda, ldb, ldc;
  float beta;
};

/// C = A * op(B) + beta * C, each element's products summed in order.
void referenceSgemm(const Case &t, const std::vector<float> &a, const std::vector<float> &b,
                    std::vector<float> &c) {
  for (int64_t i = 0; i < t.m; ++i)
    for (int64_t j = 0; j < t.n; ++j) {
      float sum = t.beta == 0.0f ? 0.0f : t.beta * c[i * t.ldc + j];
      for (int64_t p = 0; p < t.k; ++p)
        sum += a[i * t.lda + p] * (t.transB ? b[j * t.ldb + p] : b[p * t.ldb + j]);
      c[i * t.ldc + j] = sum;
    }
}

TEST(PortableSgemm, EqualsInOrderLoopAndAgreesWithBlas) {
  const Case cases[] = {
      {false, 1, 1, 1, 1, 1, 1, 0.0f},
      {false, 3, 5, 7, 7, 5, 5, 0.0f},
      {true, 3, 5, 7, 9, 8, 6, 1.0f},
      {false, 17, 300, 513, 520, 301, 303, 0.5f}, // crosses the K and N blocks
      {true, 19, 257, 260, 260, 261, 257, 0.0f},
      {false, 256, 256, 256, 256, 256, 256, 1.0f}, // large enough for threads
      {true, 300, 130, 200, 200, 200, 130, 0.0f},
      {false, 4, 6, 0, 1, 6, 6, 0.5f}, // K = 0: C = beta * C
  };
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Case &t : cases) {
    SCOPED_TRACE(::testing::Message() << "transB " << t.transB << " m " << t.m << " n " << t.n
                                      << " k " << t.k << " beta " << t.beta);
    std::vector<float> a(t.m * t.lda + 1), b((t.transB ? t.n : t.k) * t.ldb + 1),
        c(t.m * t.ldc + 1);
    for (float &v : a)
      v = dist(rng);
    for (float &v : b)
      v = dist(rng);
    for (float &v : c)
      v = t.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : dist(rng); // never read
    std::vector<float> expected = c, blas = c, got = c;
    referenceSgemm(t, a, b, expected);
    portableSgemm(t.transB, t.m, t.n, t.k, a.data(), t.lda, b.data(), t.ldb, got.data(), t.ldc,
                  t.beta);
    mixprec::runtime::cpu::detail::sgemm(t.transB, t.m, t.n, t.k, a.data(), t.lda, b.data(),
                                         t.ldb, blas.data(), t.ldc, t.beta);
    for (int64_t i = 0; i < t.m; ++i)
      for (int64_t j = 0; j < t.ldc; ++j) {
        const int64_t at = i * t.ldc + j;
        if (j >= t.n) { // padding between rows is never written
          ASSERT_TRUE(std::isnan(got[at]) ? std::isnan(c[at]) : got[at] == c[at]) << at;
          continue;
        }
        ASSERT_EQ(got[at], expected[at]) << "C[" << i << "," << j << "]";
        ASSERT_NEAR(got[at], blas[at], 1e-5f * (1 + t.k)) << "C[" << i << "," << j << "]";
      }
  }
}

} // namespace
