//===- PortableSgemm.cpp - SGEMM without a BLAS library --------------------===//
#include "runtime/kernels/PortableSgemm.h"

#include <algorithm>
#include <thread>
#include <vector>

namespace mixprec::runtime::cpu {
namespace {

// A block of op(B) (kBlockK x kBlockN floats, 256 KiB) stays in L2 while
// every row of a thread's share streams past it.
constexpr int64_t kBlockK = 256;
constexpr int64_t kBlockN = 256;
/// Products smaller than this many multiply-adds run on one thread.
constexpr double kThreadedWork = 1 << 22;

/// C rows [rowBegin, rowEnd) with op(B) given row-major as bk[K,N].
void multiplyRows(int64_t rowBegin, int64_t rowEnd, int64_t n, int64_t k, const float *a,
                  int64_t lda, const float *bk, int64_t ldbk, float *c, int64_t ldc,
                  float beta) {
  for (int64_t i = rowBegin; i < rowEnd; ++i) {
    float *ci = c + i * ldc;
    for (int64_t j = 0; j < n; ++j)
      ci[j] = beta == 0.0f ? 0.0f : beta * ci[j];
  }
  for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
    const int64_t j1 = std::min(n, j0 + kBlockN);
    for (int64_t p0 = 0; p0 < k; p0 += kBlockK) {
      const int64_t p1 = std::min(k, p0 + kBlockK);
      for (int64_t i = rowBegin; i < rowEnd; ++i) {
        float *ci = c + i * ldc;
        const float *ai = a + i * lda;
        for (int64_t p = p0; p < p1; ++p) {
          const float aip = ai[p];
          const float *bp = bk + p * ldbk;
          for (int64_t j = j0; j < j1; ++j)
            ci[j] += aip * bp[j];
        }
      }
    }
  }
}

/// How many threads a product of this size is worth.
int threadsFor(int64_t m, int64_t n, int64_t k) {
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (work < kThreadedWork)
    return 1;
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(cores, m / 8)));
}

} // namespace

void portableSgemm(bool transB, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                   const float *b, int64_t ldb, float *c, int64_t ldc, float beta) {
  if (m <= 0 || n <= 0)
    return;
  // op(B) row-major: B itself, or B^T packed once.
  std::vector<float> packed;
  const float *bk = b;
  int64_t ldbk = ldb;
  if (transB) {
    packed.resize(static_cast<size_t>(k) * static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        packed[p * n + j] = b[j * ldb + p];
    bk = packed.data();
    ldbk = n;
  }
  const int threads = threadsFor(m, n, k);
  if (threads == 1) {
    multiplyRows(0, m, n, k, a, lda, bk, ldbk, c, ldc, beta);
    return;
  }
  std::vector<std::thread> workers;
  const int64_t share = (m + threads - 1) / threads;
  for (int64_t begin = 0; begin < m; begin += share)
    workers.emplace_back(multiplyRows, begin, std::min(m, begin + share), n, k, a, lda, bk, ldbk,
                         c, ldc, beta);
  for (std::thread &worker : workers)
    worker.join();
}

} // namespace mixprec::runtime::cpu
