//===- PackedGemm.cpp - FP32 GEMM on a weight packed at load, AVX2 --------===//
//
// PackedGemm.h says what is computed. Loop order per call: k blocks of
// kPackedGemmDepth, then 16-column panels, then blocks of six rows: one
// panel's k block is read from the level-2 cache by every row block.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemm.h"
#include "common/numerics/Rounding.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include "runtime/kernels/Avx2Microkernel.h"
#endif

namespace mixprec::runtime::cpu {

size_t packedGemmWeightBytes(int64_t k, int64_t n, PackedFormat format) {
  return size_t(k) * size_t((n + kPackedGemmPanel - 1) / kPackedGemmPanel * kPackedGemmPanel) *
         (format == PackedFormat::F32 ? 4 : 2);
}

bool packGemmWeight(const float *b, int64_t k, int64_t n, int64_t strideK, int64_t strideN,
                    void *packed, PackedFormat format) {
#if defined(__x86_64__)
  const int *order = format == PackedFormat::BF16 ? avx2::kBf16PanelOrder : nullptr;
#else
  if (format != PackedFormat::F32) // (no kernel reads them here)
    return false;
  const int *order = nullptr;
#endif
  const int64_t panels = (n + kPackedGemmPanel - 1) / kPackedGemmPanel;
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t i = 0; i < k; ++i) {
      const size_t at = size_t((p * k + i) * kPackedGemmPanel);
      for (int64_t s = 0; s < kPackedGemmPanel; ++s) {
        const int64_t col = p * kPackedGemmPanel + (order ? order[s] : s);
        const float x = col < n ? b[i * strideK + col * strideN] : 0.0f;
        uint32_t bits;
        std::memcpy(&bits, &x, sizeof(bits));
        switch (format) {
        case PackedFormat::F32:
          static_cast<float *>(packed)[at + size_t(s)] = x;
          break;
        case PackedFormat::BF16: // exact: the low half zero
          if (bits & 0xFFFFu)
            return false;
          static_cast<uint16_t *>(packed)[at + size_t(s)] = uint16_t(bits >> 16);
          break;
        case PackedFormat::F16: { // exact, and no NaN (VCVTPH2PS quiets one)
          const uint16_t half = numerics::floatToF16(x);
          const float back = numerics::f16ToFloat(half);
          if (std::isnan(x) || std::memcmp(&back, &x, sizeof(x)) != 0)
            return false;
          static_cast<uint16_t *>(packed)[at + size_t(s)] = half;
          break;
        }
        }
      }
    }
  return true;
}

#if defined(__x86_64__)

bool packedGemmAvailable() { return avx2::cpuRuns(); }

namespace {

/// packedGemm on panels of Panel's format.
template <typename Panel>
MIXPREC_AVX2_FMA void multiplyPanels(const float *a, const typename Panel::Element *packed,
                                     float *c, int64_t k, int64_t n, int64_t rowBegin,
                                     int64_t rowEnd, int64_t colBegin, int64_t colEnd,
                                     const float *bias, const float *scale) {
  // A panel's 64-byte lines a k step: 1 (FP32) or 1/2.
  constexpr int64_t kStepBytes = kPackedGemmPanel * int64_t(sizeof(typename Panel::Element));
  for (int64_t i0 = 0; i0 < k; i0 += kPackedGemmDepth) {
    const int64_t depth = std::min(kPackedGemmDepth, k - i0);
    int64_t j0 = colBegin;
    // One row (a token at a time): four whole panels at once, eight sums
    // in flight instead of two (avx2::multiplyRowPanels; the same bits).
    constexpr int64_t kWide = 4 * kPackedGemmPanel;
    for (; rowEnd - rowBegin == 1 && j0 + kWide <= colEnd; j0 += kWide) {
      const typename Panel::Element *panel =
          packed + (j0 / kPackedGemmPanel * k + i0) * kPackedGemmPanel;
      // No lines fetched ahead: the hardware's prefetchers follow the four
      // panels' streams (fetching the next four panels too took 1 x 768 x
      // 50257 from 7.4 to 9.2 ms at FP32, weights from memory).
      avx2::multiplyRowPanels<4, Panel>(a + rowBegin * k + i0, panel, k * kPackedGemmPanel, depth,
                                        c + rowBegin * n + j0, /*accumulate=*/i0 > 0,
                                        bias && i0 + depth == k ? bias + j0 : nullptr,
                                        i0 + depth == k ? scale : nullptr);
    }
    for (; j0 < colEnd; j0 += kPackedGemmPanel) {
      const typename Panel::Element *panel =
          packed + (j0 / kPackedGemmPanel * k + i0) * kPackedGemmPanel;
      const int cols = int(std::min(kPackedGemmPanel, colEnd - j0));
      // The next panel's k block, past this tile's columns too while the
      // weight has one, fetched meanwhile.
      const bool next = j0 + kPackedGemmPanel < n;
      avx2::multiplyPanel<Panel>(
          rowEnd - rowBegin, a + rowBegin * k + i0, k, panel, depth, c + rowBegin * n + j0, n,
          /*accumulate=*/i0 > 0, cols,
          next ? reinterpret_cast<const char *>(panel + k * kPackedGemmPanel) : nullptr,
          next ? (depth * kStepBytes + 63) / 64 : 0, bias && i0 + depth == k ? bias + j0 : nullptr,
          i0 + depth == k ? scale : nullptr);
    }
  }
}

} // namespace

void packedGemm(const float *a, const void *packed, float *c, int64_t k, int64_t n,
                int64_t rowBegin, int64_t rowEnd, int64_t colBegin, int64_t colEnd,
                const float *bias, const float *scale, PackedFormat format) {
  if (k == 0) { // an empty sum (0, times the scale, plus the bias)
    const float zero = scale ? 0.0f * *scale : 0.0f;
    for (int64_t r = rowBegin; r < rowEnd; ++r)
      for (int64_t j = colBegin; j < colEnd; ++j)
        c[r * n + j] = bias ? zero + bias[j] : zero;
    return;
  }
  switch (format) {
  case PackedFormat::F32:
    return multiplyPanels<avx2::F32Panel>(a, static_cast<const float *>(packed), c, k, n, rowBegin,
                                          rowEnd, colBegin, colEnd, bias, scale);
  case PackedFormat::BF16:
    return multiplyPanels<avx2::Bf16Panel>(a, static_cast<const uint16_t *>(packed), c, k, n,
                                           rowBegin, rowEnd, colBegin, colEnd, bias, scale);
  case PackedFormat::F16:
    return multiplyPanels<avx2::F16Panel>(a, static_cast<const uint16_t *>(packed), c, k, n,
                                          rowBegin, rowEnd, colBegin, colEnd, bias, scale);
  }
}

#else // not x86-64: nothing here runs.

bool packedGemmAvailable() { return false; }
void packedGemm(const float *, const void *, float *, int64_t, int64_t, int64_t, int64_t, int64_t,
                int64_t, const float *, const float *, PackedFormat) {}

#endif

} // namespace mixprec::runtime::cpu
