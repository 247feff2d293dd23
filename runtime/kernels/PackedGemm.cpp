//===- PackedGemm.cpp - FP32 GEMM on a weight packed at load, AVX2 --------===//
//
// PackedGemm.h says what is computed. Loop order per call: k blocks of
// kPackedGemmDepth, then 16-column panels, then blocks of six rows: one
// panel's k block is read from the level-2 cache by every row block.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemm.h"

#include <algorithm>

#if defined(__x86_64__)
#include "runtime/kernels/Avx2Microkernel.h"
#endif

namespace mixprec::runtime::cpu {

size_t packedGemmWeightFloats(int64_t k, int64_t n) {
  return size_t(k) * size_t((n + kPackedGemmPanel - 1) / kPackedGemmPanel * kPackedGemmPanel);
}

void packGemmWeight(const float *b, int64_t k, int64_t n, int64_t strideK, int64_t strideN,
                    float *packed) {
  const int64_t panels = (n + kPackedGemmPanel - 1) / kPackedGemmPanel;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t i = 0; i < k; ++i) {
      float *row = packed + (p * k + i) * kPackedGemmPanel;
      for (int64_t j = 0; j < kPackedGemmPanel; ++j) {
        const int64_t col = p * kPackedGemmPanel + j;
        row[j] = col < n ? b[i * strideK + col * strideN] : 0.0f;
      }
    }
}

#if defined(__x86_64__)

bool packedGemmAvailable() { return avx2::cpuRuns(); }

void packedGemm(const float *a, const float *packed, float *c, int64_t k, int64_t n,
                int64_t rowBegin, int64_t rowEnd, int64_t colBegin, int64_t colEnd,
                const float *bias, const float *scale) MIXPREC_AVX2_FMA;
void packedGemm(const float *a, const float *packed, float *c, int64_t k, int64_t n,
                int64_t rowBegin, int64_t rowEnd, int64_t colBegin, int64_t colEnd,
                const float *bias, const float *scale) {
  if (k == 0) { // an empty sum (0, times the scale, plus the bias)
    const float zero = scale ? 0.0f * *scale : 0.0f;
    for (int64_t r = rowBegin; r < rowEnd; ++r)
      for (int64_t j = colBegin; j < colEnd; ++j)
        c[r * n + j] = bias ? zero + bias[j] : zero;
    return;
  }
  for (int64_t i0 = 0; i0 < k; i0 += kPackedGemmDepth) {
    const int64_t depth = std::min(kPackedGemmDepth, k - i0);
    for (int64_t j0 = colBegin; j0 < colEnd; j0 += kPackedGemmPanel) {
      const float *panel = packed + (j0 / kPackedGemmPanel * k + i0) * kPackedGemmPanel;
      const int cols = int(std::min(kPackedGemmPanel, colEnd - j0));
      // The next panel's k block (one 64-byte line a k step), past this
      // tile's columns too while the weight has one, fetched meanwhile.
      const bool next = j0 + kPackedGemmPanel < n;
      avx2::multiplyPanel(
          rowEnd - rowBegin, a + rowBegin * k + i0, k, panel, depth, c + rowBegin * n + j0, n,
          /*accumulate=*/i0 > 0, cols,
          next ? reinterpret_cast<const char *>(panel + k * kPackedGemmPanel) : nullptr,
          next ? depth : 0, bias && i0 + depth == k ? bias + j0 : nullptr,
          i0 + depth == k ? scale : nullptr);
    }
  }
}

#else // not x86-64: nothing here runs.

bool packedGemmAvailable() { return false; }
void packedGemm(const float *, const float *, float *, int64_t, int64_t, int64_t, int64_t, int64_t,
                int64_t, const float *, const float *) {}

#endif

} // namespace mixprec::runtime::cpu
