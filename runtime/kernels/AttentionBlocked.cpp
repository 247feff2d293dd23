//===- AttentionBlocked.cpp - Blocked attention forward for the CPU --------===//
//
// The online-softmax forward of AttentionBlocked.h. The loops are written
// for GCC's vectoriser without -ffast-math: every vector loop runs over
// independent elements (the 32 query rows of a key's scores, which the
// queries' transposed copy makes contiguous, or the columns of an
// accumulator row), never a reduction the vectoriser would have to
// reassociate, and the fixed-size loops over a register block (KB keys of
// 32 rows, kGroupRows rows of W columns) accumulate into local arrays GCC
// keeps in vector registers. The whole unit loop is inlined into one
// function per instruction set (AVX-512, AVX2, the baseline), picked once
// from the CPU's features; they differ only in KB and W, which decide how
// many values stay in registers, not which operations are done in which
// order. With -ffp-contract=off (this file's CMake options) no clone fuses
// a product into an FMA, so every clone gives the same bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/AttentionBlocked.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__GNUC__)
#define MIXPREC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MIXPREC_ALWAYS_INLINE inline
#endif

// Per-function instruction sets need GCC or Clang on x86-64.
#if defined(__x86_64__) && defined(__GNUC__)
#define MIXPREC_ATTENTION_X86 1
#endif

namespace mixprec::runtime::cpu {

namespace {

/// Query rows per unit, keys per tile, rows sharing each load of a V row.
constexpr int64_t kBlockRows = kAttentionBlockRows;
constexpr int64_t kTileKeys = kAttentionTileKeys;
constexpr int64_t kGroupRows = 4;
static_assert(kBlockRows % kGroupRows == 0 && kBlockRows % 16 == 0, "tile shapes");

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

MIXPREC_ALWAYS_INLINE uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

MIXPREC_ALWAYS_INLINE float floatOf(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

/// e^x for x <= 0 (or NaN), within eps_e relative (eta_e absolute below
/// FP32's normal range; AttentionBlocked.h), at most 1, exactly 1 at 0 and
/// 0 at -inf. Cody-Waite reduction x = n ln2 + r (ln2's high part has 9
/// bits, so n times it, and x minus that, are exact), Cephes' degree-7
/// polynomial for e^r on |r| <= ln2/2, then 2^n as two normal powers of two
/// (n down to -150): the first product is exact, the second rounds once
/// where the result is subnormal.
MIXPREC_ALWAYS_INLINE float expNonPositive(float x) {
  const float xc = x < -104.0f ? -104.0f : x;
  // Adding 1.5 * 2^23 rounds x / ln2 to an integer (to nearest even), which
  // the sum's low significand bits then hold.
  const float shifter = 12582912.0f;
  const float t = xc * 1.44269504088896341f + shifter;
  const float n = t - shifter;
  const int32_t ni = static_cast<int32_t>(bitsOf(t)) - static_cast<int32_t>(bitsOf(shifter));
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;
  const float poly = (((((1.9875691500e-4f * r + 1.3981999507e-3f) * r + 8.3334519073e-3f) * r +
                        4.1665795894e-2f) *
                           r +
                       1.6666665459e-1f) *
                          r +
                      5.0000001201e-1f) *
                         (r * r) +
                     r + 1.0f;
  const int32_t a = ni >> 1, b = ni - a;
  const float y = poly * floatOf(static_cast<uint32_t>(a + 127) << 23) *
                  floatOf(static_cast<uint32_t>(b + 127) << 23);
  const float clamped = y > 1.0f ? 1.0f : y;
  // Below -104, e^x < 2^-150 rounds to 0.
  return x < -104.0f ? 0.0f : clamped;
}

/// round_P as arithmetic GCC vectorises, the same values as
/// roundAttentionP<float> for p in [0, 1]: `drop` low significand bits
/// rounded off (to nearest even) at and above `minNormal`, and below it a
/// multiple of the format's least subnormal, (p + magic) - magic with
/// magic's ulp that quantum. FP8 E4M3 of p * 256, divided by 256, is E4M3
/// shifted 8 binades down (minimum normal 2^-14, quantum 2^-17).
struct PRounding {
  bool active = false;
  uint32_t drop = 0;
  float minNormal = 0, magic = 0;
};

PRounding pRoundingFor(AttentionRounding r) {
  switch (r) {
  case AttentionRounding::None:
    return {};
  case AttentionRounding::BF16:
    return {true, 16, 0x1p-126f, 0x1p-110f};
  case AttentionRounding::FP16:
    return {true, 13, 0x1p-14f, 0x1p-1f};
  case AttentionRounding::FP8E4M3:
    return {true, 20, 0x1p-14f, 0x1p6f};
  }
  return {};
}

MIXPREC_ALWAYS_INLINE float roundP(float p, const PRounding &r) {
  const uint32_t bits = bitsOf(p);
  const uint32_t half = (1u << (r.drop - 1)) - 1 + ((bits >> r.drop) & 1u);
  const float normal = floatOf((bits + half) & ~((1u << r.drop) - 1));
  const float subnormal = (p + r.magic) - r.magic;
  return p >= r.minNormal ? normal : subnormal;
}

/// Where one worker's scratch goes (attentionBlockedScratchFloats floats).
/// Scores and probabilities are kept transposed, a key's row of the block's
/// 32 query rows, so that the softmax runs vectorised over rows.
struct Scratch {
  float *queriesT; ///< [D][kBlockRows]: the block's queries transposed, zero past its rows
  float *scoresT;  ///< [kTileKeys][kBlockRows]: scores, then p, then round_P(p)
  float *acc;      ///< [kBlockRows][Dv]: the unnormalised output rows
  float *rowMax, *rowSum, *rescale, *reference; ///< [kBlockRows] each
};

/// Floats rounded up to a 64-byte multiple.
int64_t padded(int64_t floats) { return (floats + 15) / 16 * 16; }

Scratch carveScratch(const AttentionParams &p, float *scratch) {
  // Regions start 64-byte aligned (the caller's pointer, float-aligned, is
  // moved up to the next 64 bytes; the size has room for it).
  const uintptr_t at = reinterpret_cast<uintptr_t>(scratch);
  float *base = scratch + ((64 - at % 64) % 64) / sizeof(float);
  Scratch s;
  s.queriesT = base;
  s.scoresT = s.queriesT + p.headDim * kBlockRows;
  s.acc = s.scoresT + kTileKeys * kBlockRows;
  s.rowMax = s.acc + padded(kBlockRows * p.valueDim);
  s.rowSum = s.rowMax + kBlockRows;
  s.rescale = s.rowSum + kBlockRows;
  s.reference = s.rescale + kBlockRows;
  return s;
}

/// Everything a unit needs besides its index and scratch.
struct Problem {
  const float *q, *k, *v, *bias;
  std::array<int64_t, 4> biasStrides;
  const AttentionParams &p;
  float *out, *lse;
  PRounding rounding;
  float scale;
};

/// The block's `rows` query rows (headDim floats each) into queriesT,
/// transposed, with zeros past `rows`.
MIXPREC_ALWAYS_INLINE void transposeQueries(const float *q, int64_t rows, int64_t headDim,
                                            float *queriesT) {
  for (int64_t d = 0; d < headDim; ++d) {
    float *column = queriesT + d * kBlockRows;
    for (int64_t r = 0; r < rows; ++r)
      column[r] = q[r * headDim + d];
    for (int64_t r = rows; r < kBlockRows; ++r)
      column[r] = 0.0f;
  }
}

/// The dot products of KB keys (rows of `k`) with the block's queries into
/// their score rows, d outermost, vectorised over query rows, the KB x 32
/// sums in registers, each in order d = 0, 1, ... as the reference's (so
/// the same bits as its float scores).
template <int64_t KB>
MIXPREC_ALWAYS_INLINE void dotKeys(const float *k, int64_t headDim, const float *queriesT,
                                   float *scoresT) {
  float a[KB][kBlockRows] = {};
  for (int64_t d = 0; d < headDim; ++d) {
    const float *qd = queriesT + d * kBlockRows;
    for (int64_t j = 0; j < KB; ++j) {
      const float x = k[j * headDim + d];
      for (int64_t r = 0; r < kBlockRows; ++r)
        a[j][r] += x * qd[r];
    }
  }
  for (int64_t j = 0; j < KB; ++j)
    for (int64_t r = 0; r < kBlockRows; ++r)
      scoresT[j * kBlockRows + r] = a[j][r];
}

/// The tile's scores: dot products times the scale, plus the bias (for the
/// block's `rows` rows), -inf where causal masks.
template <int64_t KB>
MIXPREC_ALWAYS_INLINE void tileScores(const Problem &pb, int64_t b, int64_t h, int64_t i0,
                                      int64_t rows, int64_t j0, int64_t keys, const float *k,
                                      const Scratch &sc) {
  const int64_t D = pb.p.headDim;
  int64_t j = 0;
  for (; j + KB <= keys; j += KB)
    dotKeys<KB>(k + j * D, D, sc.queriesT, sc.scoresT + j * kBlockRows);
  for (; j < keys; ++j)
    dotKeys<1>(k + j * D, D, sc.queriesT, sc.scoresT + j * kBlockRows);
  for (int64_t n = 0; n < keys * kBlockRows; ++n)
    sc.scoresT[n] = pb.scale * sc.scoresT[n];
  if (pb.bias) {
    const std::array<int64_t, 4> &st = pb.biasStrides;
    for (j = 0; j < keys; ++j) {
      const float *column = pb.bias + b * st[0] + h * st[1] + i0 * st[2] + (j0 + j) * st[3];
      float *s = sc.scoresT + j * kBlockRows;
      if (st[2] == 0) {
        const float x = column[0];
        for (int64_t r = 0; r < rows; ++r)
          s[r] += x;
      } else if (st[2] == 1) {
        for (int64_t r = 0; r < rows; ++r)
          s[r] += column[r];
      } else {
        for (int64_t r = 0; r < rows; ++r)
          s[r] += column[r * st[2]];
      }
    }
  }
  if (pb.p.causal) {
    // Row i0 + r sees key j0 + j when j0 + j <= i0 + r + seqK - seqQ.
    const int64_t offset = j0 - i0 - (pb.p.seqK - pb.p.seqQ);
    for (j = 0; j < keys; ++j) {
      float *s = sc.scoresT + j * kBlockRows;
      for (int64_t r = 0; r < kBlockRows; ++r)
        s[r] = j + offset <= r ? s[r] : kNegInf;
    }
  }
}

/// The online-softmax step of every row over the tile's `keys` scores: the
/// new running max, the probabilities against it (in place, then rounded
/// with round_P), the running sum, and the factor each row's accumulator
/// takes. A row with no key seen yet keeps max -inf, sum 0 and gets p = 0
/// (its exps are taken against 0: -inf - -inf would be NaN).
MIXPREC_ALWAYS_INLINE void softmaxStep(int64_t keys, const PRounding &rounding, const Scratch &sc) {
  float tileMax[kBlockRows], tileSum[kBlockRows];
  for (int64_t r = 0; r < kBlockRows; ++r)
    tileMax[r] = kNegInf;
  for (int64_t j = 0; j < keys; ++j) {
    const float *s = sc.scoresT + j * kBlockRows;
    for (int64_t r = 0; r < kBlockRows; ++r)
      tileMax[r] = s[r] > tileMax[r] ? s[r] : tileMax[r];
  }
  for (int64_t r = 0; r < kBlockRows; ++r) {
    const float newMax = tileMax[r] > sc.rowMax[r] ? tileMax[r] : sc.rowMax[r];
    const float reference = newMax == kNegInf ? 0.0f : newMax;
    sc.rescale[r] = expNonPositive(sc.rowMax[r] - reference);
    sc.rowMax[r] = newMax;
    sc.reference[r] = reference;
    tileSum[r] = 0.0f;
  }
  for (int64_t j = 0; j < keys; ++j) {
    float *s = sc.scoresT + j * kBlockRows;
    for (int64_t r = 0; r < kBlockRows; ++r) {
      s[r] = expNonPositive(s[r] - sc.reference[r]);
      tileSum[r] += s[r];
    }
  }
  for (int64_t r = 0; r < kBlockRows; ++r)
    sc.rowSum[r] = sc.rowSum[r] * sc.rescale[r] + tileSum[r];
  if (rounding.active)
    for (int64_t n = 0; n < keys * kBlockRows; ++n)
      sc.scoresT[n] = roundP(sc.scoresT[n], rounding);
}

/// Columns [e0, e0 + W) of kGroupRows accumulator rows: acc = acc * rescale
/// + sum_j P[j][r] V[j], the tile's sum in order j = 0, 1, ... in registers.
template <int64_t W>
MIXPREC_ALWAYS_INLINE void accumulateColumns(const float *probsT, const float *v, int64_t valueDim,
                                             int64_t keys, int64_t e0, const float *rescale,
                                             float *acc) {
  float a[kGroupRows][W] = {};
  // Narrow blocks: the V row copied to a local first and both loops
  // unrolled, else GCC vectorises across the rows with shuffles and spills
  // (head dim 16: the P.V sums took 5x as long). The same operations in
  // the same order either way.
  if constexpr (W <= 16) {
    for (int64_t j = 0; j < keys; ++j) {
      const float *vj = v + j * valueDim + e0;
      float vv[W];
      for (int64_t e = 0; e < W; ++e)
        vv[e] = vj[e];
#pragma GCC unroll 4
      for (int64_t r = 0; r < kGroupRows; ++r) {
        const float x = probsT[j * kBlockRows + r];
#pragma GCC unroll 16
        for (int64_t e = 0; e < W; ++e)
          a[r][e] += x * vv[e];
      }
    }
  } else {
    for (int64_t j = 0; j < keys; ++j) {
      const float *vj = v + j * valueDim + e0;
      for (int64_t r = 0; r < kGroupRows; ++r) {
        const float x = probsT[j * kBlockRows + r];
        for (int64_t e = 0; e < W; ++e)
          a[r][e] += x * vj[e];
      }
    }
  }
  for (int64_t r = 0; r < kGroupRows; ++r) {
    float *row = acc + r * valueDim + e0;
    for (int64_t e = 0; e < W; ++e)
      row[e] = row[e] * rescale[r] + a[r][e];
  }
}

/// A group's P.V over the tile's first `keys` keys, W columns at a time,
/// then narrower blocks for the rest of the columns.
template <int64_t W>
MIXPREC_ALWAYS_INLINE void accumulateGroup(const float *probsT, const float *v, int64_t valueDim,
                                           int64_t keys, const float *rescale, float *acc) {
  int64_t e0 = 0;
  for (; e0 + W <= valueDim; e0 += W)
    accumulateColumns<W>(probsT, v, valueDim, keys, e0, rescale, acc);
  if constexpr (W > 16)
    for (; e0 + 16 <= valueDim; e0 += 16)
      accumulateColumns<16>(probsT, v, valueDim, keys, e0, rescale, acc);
  if (e0 + 8 <= valueDim) {
    accumulateColumns<8>(probsT, v, valueDim, keys, e0, rescale, acc);
    e0 += 8;
  }
  for (; e0 < valueDim; ++e0)
    accumulateColumns<1>(probsT, v, valueDim, keys, e0, rescale, acc);
}

/// Unit `unit` (head bh, query rows i0..): the row block against every key
/// tile it can see, then out and lse. KB keys' scores and W columns of the
/// accumulators are held in registers at a time.
template <int64_t KB, int64_t W>
MIXPREC_ALWAYS_INLINE void runUnit(const Problem &pb, int64_t unit, const Scratch &sc) {
  const AttentionParams &p = pb.p;
  const int64_t blocks = (p.seqQ + kBlockRows - 1) / kBlockRows;
  const int64_t bh = unit / blocks, i0 = unit % blocks * kBlockRows;
  const int64_t b = bh / p.heads, h = bh % p.heads;
  const int64_t rows = std::min(kBlockRows, p.seqQ - i0);
  const int64_t groups = (rows + kGroupRows - 1) / kGroupRows;
  const int64_t D = p.headDim, Dv = p.valueDim;
  // Causal: row i sees keys j <= i + shift; the block's last row sees most.
  const int64_t shift = p.seqK - p.seqQ;
  const int64_t keyEnd = p.causal ? std::clamp<int64_t>(i0 + rows + shift, 0, p.seqK) : p.seqK;
  const float *k = pb.k + bh * p.seqK * D;
  const float *v = pb.v + bh * p.seqK * Dv;

  transposeQueries(pb.q + (bh * p.seqQ + i0) * D, rows, D, sc.queriesT);
  for (int64_t r = 0; r < kBlockRows; ++r) {
    sc.rowMax[r] = kNegInf;
    sc.rowSum[r] = 0.0f;
  }
  std::fill(sc.acc, sc.acc + kBlockRows * Dv, 0.0f);

  for (int64_t j0 = 0; j0 < keyEnd; j0 += kTileKeys) {
    const int64_t keys = std::min(kTileKeys, keyEnd - j0);
    tileScores<KB>(pb, b, h, i0, rows, j0, keys, k + j0 * D, sc);
    softmaxStep(keys, pb.rounding, sc);
    for (int64_t g = 0; g < groups; ++g) {
      // Keys past the group's last causal key have p = 0 for all its rows.
      const int64_t last = std::min(g * kGroupRows + kGroupRows, rows) - 1;
      const int64_t groupKeys =
          p.causal ? std::clamp<int64_t>(i0 + last + shift + 1 - j0, 0, keys) : keys;
      accumulateGroup<W>(sc.scoresT + g * kGroupRows, v + j0 * Dv, Dv, groupKeys,
                         sc.rescale + g * kGroupRows, sc.acc + g * kGroupRows * Dv);
    }
  }

  for (int64_t r = 0; r < rows; ++r) {
    float *o = pb.out + (bh * p.seqQ + i0 + r) * Dv;
    const float *a = sc.acc + r * Dv;
    const float m = sc.rowMax[r], l = sc.rowSum[r];
    if (m == kNegInf) {
      // Every key masked: FlashAttention's convention, as the reference.
      std::fill(o, o + Dv, 0.0f);
      if (pb.lse)
        pb.lse[bh * p.seqQ + i0 + r] = kNegInf;
      continue;
    }
    for (int64_t e = 0; e < Dv; ++e)
      o[e] = a[e] / l;
    if (pb.lse)
      pb.lse[bh * p.seqQ + i0 + r] =
          static_cast<float>(static_cast<double>(m) + std::log(static_cast<double>(l)));
  }
}

template <int64_t KB, int64_t W>
MIXPREC_ALWAYS_INLINE void runUnits(const Problem &pb, int64_t begin, int64_t end, float *scratch) {
  const Scratch sc = carveScratch(pb.p, scratch);
  for (int64_t unit = begin; unit < end; ++unit)
    runUnit<KB, W>(pb, unit, sc);
}

// One function per instruction set, each with the whole unit loop inlined;
// the register blocks (KB keys of 32 scores, kGroupRows rows of W
// accumulator columns) fill half its vector registers.
#ifdef MIXPREC_ATTENTION_X86
__attribute__((target("avx512f"))) void runUnitsAvx512(const Problem &pb, int64_t begin,
                                                       int64_t end, float *scratch) {
  runUnits<8, 64>(pb, begin, end, scratch);
}
__attribute__((target("avx2"))) void runUnitsAvx2(const Problem &pb, int64_t begin, int64_t end,
                                                  float *scratch) {
  runUnits<3, 32>(pb, begin, end, scratch);
}
#endif
void runUnitsBaseline(const Problem &pb, int64_t begin, int64_t end, float *scratch) {
  runUnits<1, 8>(pb, begin, end, scratch);
}

/// The best instruction set this CPU runs.
AttentionIsa bestIsa() {
#ifdef MIXPREC_ATTENTION_X86
  if (__builtin_cpu_supports("avx512f"))
    return AttentionIsa::Avx512;
  if (__builtin_cpu_supports("avx2"))
    return AttentionIsa::Avx2;
#endif
  return AttentionIsa::Baseline;
}

} // namespace

float attentionBlockedExp(float x) { return expNonPositive(x); }

float attentionBlockedRoundP(float p, AttentionRounding r) {
  const PRounding rounding = pRoundingFor(r);
  return rounding.active ? roundP(p, rounding) : p;
}

int64_t attentionBlockedUnits(const AttentionParams &p) {
  return p.batch * p.heads * ((p.seqQ + kBlockRows - 1) / kBlockRows);
}

size_t attentionBlockedScratchFloats(const AttentionParams &p) {
  // 16 floats of slack to align the regions (carveScratch).
  return static_cast<size_t>(p.headDim * kBlockRows + kTileKeys * kBlockRows +
                             padded(kBlockRows * p.valueDim) + 4 * kBlockRows + 16);
}

std::vector<AttentionIsa> attentionBlockedIsas() {
  std::vector<AttentionIsa> isas = {AttentionIsa::Baseline};
#ifdef MIXPREC_ATTENTION_X86
  if (__builtin_cpu_supports("avx2"))
    isas.push_back(AttentionIsa::Avx2);
  if (__builtin_cpu_supports("avx512f"))
    isas.push_back(AttentionIsa::Avx512);
#endif
  return isas;
}

void attentionBlockedOn(AttentionIsa isa, const float *q, const float *k, const float *v,
                        const float *bias, const std::array<int64_t, 4> &biasStrides,
                        const AttentionParams &p, float *out, float *lse, int64_t unitBegin,
                        int64_t unitEnd, float *scratch) {
  const float scale = static_cast<float>(p.scale);
  const Problem pb{q, k, v, bias, biasStrides, p, out, lse, pRoundingFor(p.pRounding), scale};
  switch (isa) {
#ifdef MIXPREC_ATTENTION_X86
  case AttentionIsa::Avx512:
    runUnitsAvx512(pb, unitBegin, unitEnd, scratch);
    return;
  case AttentionIsa::Avx2:
    runUnitsAvx2(pb, unitBegin, unitEnd, scratch);
    return;
#endif
  default:
    runUnitsBaseline(pb, unitBegin, unitEnd, scratch);
    return;
  }
}

void attentionBlocked(const float *q, const float *k, const float *v, const float *bias,
                      const std::array<int64_t, 4> &biasStrides, const AttentionParams &p,
                      float *out, float *lse, int64_t unitBegin, int64_t unitEnd, float *scratch) {
  static const AttentionIsa isa = bestIsa();
  attentionBlockedOn(isa, q, k, v, bias, biasStrides, p, out, lse, unitBegin, unitEnd, scratch);
}

void attentionBlocked(const float *q, const float *k, const float *v, const float *bias,
                      const std::array<int64_t, 4> &biasStrides, const AttentionParams &p,
                      float *out, float *lse) {
  std::vector<float> scratch(attentionBlockedScratchFloats(p));
  attentionBlocked(q, k, v, bias, biasStrides, p, out, lse, 0, attentionBlockedUnits(p),
                   scratch.data());
}

} // namespace mixprec::runtime::cpu
