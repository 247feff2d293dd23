//===- Avx2Microkernel.h - the AVX2 6 x 16 FP32 multiply-add block -*- C++ -*-===//
//
// Internal to the kernels that include it (Winograd.cpp, PackedGemm.cpp;
// Erf.cpp for cpuRuns):
// an R x 16 block of C (R <= 6 rows, two vectors of 8 columns each) kept in
// twelve registers over k steps, one fused multiply-add per register per
// step, each row's value broadcast from A, the 16 columns of B loaded from
// a panel of 16 floats per step: the textbook AVX2 GEMM micro-kernel. Each
// element of C is summed in k order, starting from 0 or (`accumulate`)
// from the value C holds, so blocks of k summed one after another give the
// bits of one block. The panel may instead hold B's values as BF16 or FP16
// (16 halves a step, Bf16Panel and F16Panel below), widened to FP32 in the
// registers as each step loads them: exact, so the same products and sums,
// the same bits, as a panel of the widened floats, with half the bytes to
// read. x86-64 only; the caller checks the CPU (cpuRuns: AVX2, FMA, F16C).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_AVX2MICROKERNEL_H
#define MIXPREC_RUNTIME_CPU_AVX2MICROKERNEL_H

#if defined(__x86_64__)

#include <immintrin.h>

#include <cstdint>
#include <cstring>

// The instruction sets the code here takes (cpuRuns checks them), for
// functions (MIXPREC_AVX2_FMA) and for the lambdas inlined into them.
#define MIXPREC_AVX2_TARGET target("avx2,fma,f16c")
#define MIXPREC_AVX2_FMA __attribute__((MIXPREC_AVX2_TARGET))

namespace mixprec::runtime::cpu::avx2 {

/// Whether this CPU runs the code here (AVX2, FMA and F16C: every AVX2 CPU
/// has F16C).
inline bool cpuRuns() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
}

/// A panel of 16 FP32 columns a k step.
struct F32Panel {
  using Element = float;
  MIXPREC_AVX2_FMA static void load(const float *row, __m256 &w0, __m256 &w1) {
    w0 = _mm256_loadu_ps(row);
    w1 = _mm256_loadu_ps(row + 8);
  }
};

/// A panel of 16 BF16 columns a k step, in the order of kBf16PanelOrder: an
/// FP32 value is its BF16 bits in the upper half, so unpacking the 16
/// halves' low and high quarters of each 128-bit lane with zeros below
/// gives columns 0-7 and 8-15.
struct Bf16Panel {
  using Element = uint16_t;
  MIXPREC_AVX2_FMA static void load(const uint16_t *row, __m256 &w0, __m256 &w1) {
    const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(row));
    w0 = _mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), halves));
    w1 = _mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), halves));
  }
};

/// Bf16Panel's order: the column stored at position s of a k step.
constexpr int kBf16PanelOrder[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};

/// A panel of 16 FP16 columns a k step, in column order (VCVTPH2PS: exact).
struct F16Panel {
  using Element = uint16_t;
  MIXPREC_AVX2_FMA static void load(const uint16_t *row, __m256 &w0, __m256 &w1) {
    w0 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(row)));
    w1 = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(row + 8)));
  }
};

/// step(i) for i in [0, k), meanwhile fetching the `prefetchLines` 64-byte
/// lines from `prefetch` on into the level-2 cache: in chunks of 8 steps,
/// as many lines a chunk as spreads them over all of k (one a chunk where
/// they are fewer than the chunks).
template <typename Step>
MIXPREC_AVX2_FMA inline __attribute__((always_inline)) void
stepsFetching(int64_t k, const char *prefetch, int64_t prefetchLines, Step &&step) {
  int64_t i = 0;
  if (prefetchLines > 0) {
    constexpr int64_t kChunk = 8;
    const int64_t chunks = k / kChunk;
    const int64_t perChunk = chunks > 0 ? (prefetchLines + chunks - 1) / chunks : 0;
    for (int64_t chunk = 0, line = 0; chunk < chunks; ++chunk) {
      for (int64_t p = 0; p < perChunk && line < prefetchLines; ++p, ++line)
        _mm_prefetch(prefetch + line * 64, _MM_HINT_T1);
      for (const int64_t end = i + kChunk; i < end; ++i)
        step(i);
    }
  }
  for (; i < k; ++i)
    step(i);
}

/// C[r][j] (+)= sum over i < k of a[r * lda + i] * B[i][j], for r < R and
/// j < cols (cols <= 16; C's other columns untouched), C's rows ldc apart;
/// B's row i the 16 values of the Panel at b + i * 16 (F32Panel: b[i * 16 +
/// j]). Meanwhile the `prefetchLines` 64-byte lines from `prefetch`
/// on are fetched into the level-2 cache, spread over the k steps (a share
/// of the next panel of B: multiplyPanel); no effect on C. `scale` (null:
/// none; one float), then `bias` (null: none; `cols` floats): each row's
/// sum multiplied by *scale, then bias[j] added, once k is done (one FP32
/// multiplication, one FP32 addition, as passes over C after would make:
/// this file is built without contraction into fused multiply-adds).
template <int R, typename Panel = F32Panel>
MIXPREC_AVX2_FMA inline void
multiplyBlock(const float *a, int64_t lda, const typename Panel::Element *b, int64_t k, float *c,
              int64_t ldc, bool accumulate, int cols, const char *prefetch = nullptr,
              int64_t prefetchLines = 0, const float *bias = nullptr,
              const float *scale = nullptr) {
  static_assert(R >= 1 && R <= 6, "one to six rows");
  // Twelve named accumulators (an array of them GCC keeps in memory,
  // storing it every step); rows past R unused.
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  if (accumulate) {
    float rows[6][16] = {};
    for (int r = 0; r < R; ++r)
      std::memcpy(rows[r], c + r * ldc, size_t(cols) * sizeof(float));
#define MIXPREC_AVX2_LOAD_ROW(r)                                                                   \
  if constexpr (R > r) {                                                                           \
    c##r##0 = _mm256_loadu_ps(rows[r]);                                                            \
    c##r##1 = _mm256_loadu_ps(rows[r] + 8);                                                        \
  }
    MIXPREC_AVX2_LOAD_ROW(0)
    MIXPREC_AVX2_LOAD_ROW(1)
    MIXPREC_AVX2_LOAD_ROW(2)
    MIXPREC_AVX2_LOAD_ROW(3)
    MIXPREC_AVX2_LOAD_ROW(4)
    MIXPREC_AVX2_LOAD_ROW(5)
#undef MIXPREC_AVX2_LOAD_ROW
  }
  // One k step: C's R x 16 block += A's column i times B's row i.
#define MIXPREC_AVX2_ROW(r)                                                                        \
  if constexpr (R > r) {                                                                           \
    const __m256 x = _mm256_broadcast_ss(a + r * lda + i);                                         \
    c##r##0 = _mm256_fmadd_ps(x, w0, c##r##0);                                                     \
    c##r##1 = _mm256_fmadd_ps(x, w1, c##r##1);                                                     \
  }
#define MIXPREC_AVX2_STEP                                                                          \
  {                                                                                                \
    __m256 w0, w1;                                                                                 \
    Panel::load(b + i * 16, w0, w1);                                                               \
    MIXPREC_AVX2_ROW(0)                                                                            \
    MIXPREC_AVX2_ROW(1)                                                                            \
    MIXPREC_AVX2_ROW(2)                                                                            \
    MIXPREC_AVX2_ROW(3)                                                                            \
    MIXPREC_AVX2_ROW(4)                                                                            \
    MIXPREC_AVX2_ROW(5)                                                                            \
  }
  auto step = [&](int64_t i) __attribute__((always_inline, MIXPREC_AVX2_TARGET)){MIXPREC_AVX2_STEP};
  stepsFetching(k, prefetch, prefetchLines, step);
#undef MIXPREC_AVX2_STEP
#undef MIXPREC_AVX2_ROW
  if (scale) {
    const __m256 f = _mm256_set1_ps(*scale);
#define MIXPREC_AVX2_SCALE_ROW(r)                                                                  \
  if constexpr (R > r) {                                                                           \
    c##r##0 = _mm256_mul_ps(c##r##0, f);                                                           \
    c##r##1 = _mm256_mul_ps(c##r##1, f);                                                           \
  }
    MIXPREC_AVX2_SCALE_ROW(0)
    MIXPREC_AVX2_SCALE_ROW(1)
    MIXPREC_AVX2_SCALE_ROW(2)
    MIXPREC_AVX2_SCALE_ROW(3)
    MIXPREC_AVX2_SCALE_ROW(4)
    MIXPREC_AVX2_SCALE_ROW(5)
#undef MIXPREC_AVX2_SCALE_ROW
  }
  if (bias) {
    float padded[16] = {};
    std::memcpy(padded, bias, size_t(cols) * sizeof(float));
    const __m256 b0 = _mm256_loadu_ps(padded), b1 = _mm256_loadu_ps(padded + 8);
#define MIXPREC_AVX2_BIAS_ROW(r)                                                                   \
  if constexpr (R > r) {                                                                           \
    c##r##0 = _mm256_add_ps(c##r##0, b0);                                                          \
    c##r##1 = _mm256_add_ps(c##r##1, b1);                                                          \
  }
    MIXPREC_AVX2_BIAS_ROW(0)
    MIXPREC_AVX2_BIAS_ROW(1)
    MIXPREC_AVX2_BIAS_ROW(2)
    MIXPREC_AVX2_BIAS_ROW(3)
    MIXPREC_AVX2_BIAS_ROW(4)
    MIXPREC_AVX2_BIAS_ROW(5)
#undef MIXPREC_AVX2_BIAS_ROW
  }
  const __m256 out[6][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
  for (int r = 0; r < R; ++r) {
    if (cols == 16) {
      _mm256_storeu_ps(c + r * ldc, out[r][0]);
      _mm256_storeu_ps(c + r * ldc + 8, out[r][1]);
    } else {
      float row[16];
      _mm256_storeu_ps(row, out[r][0]);
      _mm256_storeu_ps(row + 8, out[r][1]);
      std::memcpy(c + r * ldc, row, size_t(cols) * sizeof(float));
    }
  }
}

/// multiplyBlock for `rows` rows, 1 to 6 (a table of the six).
template <typename Panel = F32Panel>
MIXPREC_AVX2_FMA inline void
multiplyRows(int rows, const float *a, int64_t lda, const typename Panel::Element *b, int64_t k,
             float *c, int64_t ldc, bool accumulate, int cols, const char *prefetch = nullptr,
             int64_t prefetchLines = 0, const float *bias = nullptr, const float *scale = nullptr) {
  using Block = void (*)(const float *, int64_t, const typename Panel::Element *, int64_t, float *,
                         int64_t, bool, int, const char *, int64_t, const float *, const float *);
  static const Block kBlocks[7] = {nullptr,
                                   multiplyBlock<1, Panel>,
                                   multiplyBlock<2, Panel>,
                                   multiplyBlock<3, Panel>,
                                   multiplyBlock<4, Panel>,
                                   multiplyBlock<5, Panel>,
                                   multiplyBlock<6, Panel>};
  kBlocks[rows](a, lda, b, k, c, ldc, accumulate, cols, prefetch, prefetchLines, bias, scale);
}

/// One row of C against P whole panels side by side (columns 16 P), the
/// panels `panelStride` elements apart: c[j] (+)= sum over i < k of a[i] *
/// B[i][j], j < 16 P, then times *scale, plus bias[j], as multiplyBlock<1>
/// computes each panel's 16 (the same bits). multiplyBlock<1> keeps two
/// sums, each a chain of dependent multiply-adds (4 cycles each on Zen 3:
/// a fourth of the FMA units' rate); 2 P chains here. No lines are fetched
/// ahead (PackedGemm.cpp: the hardware follows the P streams).
template <int P, typename Panel = F32Panel>
MIXPREC_AVX2_FMA inline void multiplyRowPanels(const float *a, const typename Panel::Element *b,
                                               int64_t panelStride, int64_t k, float *c,
                                               bool accumulate, const float *bias = nullptr,
                                               const float *scale = nullptr) {
  static_assert(P >= 1 && P <= 4, "one to four panels");
  __m256 acc[P][2];
  for (int q = 0; q < P; ++q)
    for (int h = 0; h < 2; ++h)
      acc[q][h] = accumulate ? _mm256_loadu_ps(c + 16 * q + 8 * h) : _mm256_setzero_ps();
  auto step = [&](int64_t i) __attribute__((always_inline, MIXPREC_AVX2_TARGET)) {
    const __m256 x = _mm256_broadcast_ss(a + i);
#pragma GCC unroll 4
    for (int q = 0; q < P; ++q) {
      __m256 w0, w1;
      Panel::load(b + q * panelStride + i * 16, w0, w1);
      acc[q][0] = _mm256_fmadd_ps(x, w0, acc[q][0]);
      acc[q][1] = _mm256_fmadd_ps(x, w1, acc[q][1]);
    }
  };
  stepsFetching(k, nullptr, 0, step);
  for (int q = 0; q < P; ++q)
    for (int h = 0; h < 2; ++h) {
      if (scale)
        acc[q][h] = _mm256_mul_ps(acc[q][h], _mm256_set1_ps(*scale));
      if (bias)
        acc[q][h] = _mm256_add_ps(acc[q][h], _mm256_loadu_ps(bias + 16 * q + 8 * h));
      _mm256_storeu_ps(c + 16 * q + 8 * h, acc[q][h]);
    }
}

/// The rows of the next block of a walk over `left` more rows: six, but
/// where the rest would leave a block of 1 to 3 rows (few registers: its
/// sums wait on the multiply-add's latency) the last 7 to 9 as two blocks
/// of 3 to 5. (Each element's sum is the same in any block.)
inline int blockRows(int64_t left) {
  return left >= 10 ? 6 : left > 6 ? int((left + 1) / 2) : int(left);
}

/// C's rows [0, rows) (ldc apart) for one panel of B, from A's (lda apart),
/// block by block of blockRows rows (multiplyRows), while the `nextLines`
/// 64-byte lines from `next` (the caller's next panel; null: none) are
/// fetched into the level-2 cache, each block taking its rows' share: a
/// panel read from memory by its first block alone made the GEMMs of a
/// model, whose weights are not cached, 7-10% slower (PackedGemm.h).
template <typename Panel = F32Panel>
MIXPREC_AVX2_FMA inline void
multiplyPanel(int64_t rows, const float *a, int64_t lda, const typename Panel::Element *b,
              int64_t k, float *c, int64_t ldc, bool accumulate, int cols, const char *next,
              int64_t nextLines, const float *bias = nullptr, const float *scale = nullptr) {
  for (int64_t r = 0, n = 0; r < rows; r += n) {
    n = blockRows(rows - r);
    const int64_t from = nextLines * r / rows, to = nextLines * (r + n) / rows;
    multiplyRows<Panel>(int(n), a + r * lda, lda, b, k, c + r * ldc, ldc, accumulate, cols,
                        next ? next + from * 64 : nullptr, to - from, bias, scale);
  }
}

} // namespace mixprec::runtime::cpu::avx2

#endif // __x86_64__

#endif // MIXPREC_RUNTIME_CPU_AVX2MICROKERNEL_H
