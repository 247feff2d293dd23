//===- Attention.cpp - Scaled dot-product attention reference -------------===//
//
// The plain O(Sq * Sk) definition of Attention.h, one query row at a time,
// every sum in T. It is the specification the CUDA kernels are checked
// against, so it follows the header's formulas literally and in order.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Attention.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <vector>

namespace mixprec::runtime::cpu {

namespace {

/// A floating-point format of the tensor-core operands: significand bits
/// (the implicit one included), the least normal exponent, the largest
/// finite value, and whether a larger value saturates to it (FP8 E4M3, as
/// cvt.satfinite) instead of rounding to infinity.
struct Format {
  int bits;
  int minExp;
  double maxFinite;
  bool saturate;
};

constexpr Format kBF16{8, -126, 3.38953138925153547590e38, false};
constexpr Format kFP16{11, -14, 65504.0, false};
constexpr Format kE4M3{4, -6, 448.0, true};

/// x rounded once, to nearest even, to `f` (subnormals included): the
/// quantum of x's binade (of the least normal binade below it) divides x
/// exactly, as it is a power of two, so nearbyint does the one rounding.
template <typename T> T roundTo(T x, const Format &f) {
  if (x == 0 || !std::isfinite(x))
    return x;
  const int e = std::max(std::ilogb(x), f.minExp);
  const T quantum = std::ldexp(T(1), e - (f.bits - 1));
  const T r = std::nearbyint(x / quantum) * quantum;
  if (std::fabs(r) > f.maxFinite)
    return std::copysign(f.saturate ? T(f.maxFinite) : std::numeric_limits<T>::infinity(), x);
  return r;
}

/// The element of [B,H,Sq,Sk] the bias holds for (b, h, i, j).
template <typename T>
T biasAt(const T *bias, const std::array<int64_t, 4> &strides, int64_t b, int64_t h, int64_t i,
         int64_t j) {
  return bias[b * strides[0] + h * strides[1] + i * strides[2] + j * strides[3]];
}

/// Row i's scores of head (b, h) into s (seqK entries), masked ones -inf.
template <typename T>
void scoreRow(const T *q, const T *k, const T *bias, const std::array<int64_t, 4> &biasStrides,
              const AttentionParams &p, int64_t b, int64_t h, int64_t i, std::vector<T> &s) {
  const int64_t bh = b * p.heads + h;
  const T *qi = q + (bh * p.seqQ + i) * p.headDim;
  for (int64_t j = 0; j < p.seqK; ++j) {
    if (p.causal && j > i + (p.seqK - p.seqQ)) {
      s[j] = -std::numeric_limits<T>::infinity();
      continue;
    }
    const T *kj = k + (bh * p.seqK + j) * p.headDim;
    T dot = 0;
    for (int64_t d = 0; d < p.headDim; ++d)
      dot += qi[d] * kj[d];
    s[j] = static_cast<T>(p.scale) * dot;
    if (bias)
      s[j] += biasAt(bias, biasStrides, b, h, i, j);
  }
}

} // namespace

template <typename T> T roundAttentionP(T p, AttentionRounding r) {
  switch (r) {
  case AttentionRounding::None:
    return p;
  case AttentionRounding::BF16:
    return roundTo(p, kBF16);
  case AttentionRounding::FP16:
    return roundTo(p, kFP16);
  case AttentionRounding::FP8E4M3:
    return roundTo(p * T(256), kE4M3) / T(256);
  }
  return p;
}

template <typename T> T roundAttentionGradOperand(T x, AttentionRounding r) {
  switch (r) {
  case AttentionRounding::None:
    return x;
  case AttentionRounding::BF16:
  case AttentionRounding::FP8E4M3:
    return roundTo(x, kBF16);
  case AttentionRounding::FP16:
    return roundTo(x, kFP16);
  }
  return x;
}

template <typename T>
void attention(const T *q, const T *k, const T *v, const T *bias,
               const std::array<int64_t, 4> &biasStrides, const AttentionParams &p, T *out,
               T *lse) {
  assert(p.batch >= 0 && p.heads >= 0 && p.seqQ >= 0 && p.seqK >= 0 && "negative extent");
  const T negInf = -std::numeric_limits<T>::infinity();
  std::vector<T> s(p.seqK), acc(p.valueDim);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t bh = b * p.heads + h;
      for (int64_t i = 0; i < p.seqQ; ++i) {
        scoreRow(q, k, bias, biasStrides, p, b, h, i, s);
        T m = negInf;
        for (int64_t j = 0; j < p.seqK; ++j)
          m = s[j] > m ? s[j] : m;
        T *o = out + (bh * p.seqQ + i) * p.valueDim;
        T *rowLse = lse ? lse + bh * p.seqQ + i : nullptr;
        if (m == negInf) {
          // Every key masked: FlashAttention's convention.
          for (int64_t e = 0; e < p.valueDim; ++e)
            o[e] = 0;
          if (rowLse)
            *rowLse = negInf;
          continue;
        }
        T l = 0;
        std::fill(acc.begin(), acc.end(), T(0));
        for (int64_t j = 0; j < p.seqK; ++j) {
          if (s[j] == negInf)
            continue;
          const T pj = std::exp(s[j] - m);
          l += pj;
          const T rp = roundAttentionP(pj, p.pRounding);
          const T *vj = v + (bh * p.seqK + j) * p.valueDim;
          for (int64_t e = 0; e < p.valueDim; ++e)
            acc[e] += rp * vj[e];
        }
        for (int64_t e = 0; e < p.valueDim; ++e)
          o[e] = acc[e] / l;
        if (rowLse)
          *rowLse = m + std::log(l);
      }
    }
}

template <typename T>
void attentionBackward(const T *q, const T *k, const T *v, const T *bias,
                       const std::array<int64_t, 4> &biasStrides, const AttentionParams &p,
                       const T *out, const T *lse, const T *dOut, T *dq, T *dk, T *dv) {
  const T negInf = -std::numeric_limits<T>::infinity();
  const T scale = static_cast<T>(p.scale);
  std::vector<T> s(p.seqK), ds(p.seqK), gOut(p.valueDim);
  std::fill(dk, dk + p.batch * p.heads * p.seqK * p.headDim, T(0));
  std::fill(dv, dv + p.batch * p.heads * p.seqK * p.valueDim, T(0));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t bh = b * p.heads + h;
      for (int64_t i = 0; i < p.seqQ; ++i) {
        scoreRow(q, k, bias, biasStrides, p, b, h, i, s);
        const T *o = out + (bh * p.seqQ + i) * p.valueDim;
        const T *g = dOut + (bh * p.seqQ + i) * p.valueDim;
        const T *qi = q + (bh * p.seqQ + i) * p.headDim;
        const T li = lse[bh * p.seqQ + i];
        T delta = 0;
        for (int64_t e = 0; e < p.valueDim; ++e) {
          delta += g[e] * o[e];
          gOut[e] = roundAttentionGradOperand(g[e], p.pRounding);
        }
        for (int64_t j = 0; j < p.seqK; ++j) {
          // A masked score, or a row with every key masked (lse -inf), has
          // p = 0 (exp(-inf - -inf) would be NaN).
          const T pij = s[j] == negInf || li == negInf ? T(0) : std::exp(s[j] - li);
          const T *vj = v + (bh * p.seqK + j) * p.valueDim;
          T *dvj = dv + (bh * p.seqK + j) * p.valueDim;
          const T rp = roundAttentionGradOperand(pij, p.pRounding);
          T dp = 0;
          for (int64_t e = 0; e < p.valueDim; ++e) {
            dvj[e] += rp * gOut[e];
            dp += gOut[e] * vj[e];
          }
          ds[j] = roundAttentionGradOperand(pij * (dp - delta), p.pRounding);
        }
        T *dqi = dq + (bh * p.seqQ + i) * p.headDim;
        for (int64_t d = 0; d < p.headDim; ++d) {
          T acc = 0;
          for (int64_t j = 0; j < p.seqK; ++j)
            acc += ds[j] * k[(bh * p.seqK + j) * p.headDim + d];
          dqi[d] = scale * acc;
        }
        // dk is accumulated unscaled and scaled once below, as dq is.
        for (int64_t j = 0; j < p.seqK; ++j) {
          T *dkj = dk + (bh * p.seqK + j) * p.headDim;
          for (int64_t d = 0; d < p.headDim; ++d)
            dkj[d] += ds[j] * qi[d];
        }
      }
    }
  for (int64_t n = 0, e = p.batch * p.heads * p.seqK * p.headDim; n < e; ++n)
    dk[n] *= scale;
}

#define MIXPREC_ATTENTION_INSTANTIATE(T)                                                           \
  template T roundAttentionP<T>(T, AttentionRounding);                                             \
  template T roundAttentionGradOperand<T>(T, AttentionRounding);                                   \
  template void attention<T>(const T *, const T *, const T *, const T *,                           \
                             const std::array<int64_t, 4> &, const AttentionParams &, T *, T *);   \
  template void attentionBackward<T>(const T *, const T *, const T *, const T *,                   \
                                     const std::array<int64_t, 4> &, const AttentionParams &,      \
                                     const T *, const T *, const T *, T *, T *, T *);
MIXPREC_ATTENTION_INSTANTIATE(float)
MIXPREC_ATTENTION_INSTANTIATE(double)
#undef MIXPREC_ATTENTION_INSTANTIATE

} // namespace mixprec::runtime::cpu
