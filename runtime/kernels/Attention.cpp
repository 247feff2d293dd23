//===- Attention.cpp - Scaled dot-product attention reference -------------===//
//
// Attention.h's definition, row by row: the scores of one query row in T,
// their maximum, the probabilities and their sum, then P.V with P rounded
// as the tensor-core kernels round it.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Attention.h"

#include "common/numerics/Rounding.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace mixprec::runtime::cpu {
namespace {

/// p rounded as the P.V product's operand (T = double: FP64 mode, kept).
template <typename T> T roundP(T p, AttentionRounding r) {
  if constexpr (std::is_same_v<T, double>)
    return p;
  namespace num = mixprec::numerics;
  switch (r) {
  case AttentionRounding::BF16:
    return num::roundTo(num::Format::BF16, p);
  case AttentionRounding::FP16:
    return num::roundTo(num::Format::F16, p);
  case AttentionRounding::FP8E4M3:
    // p <= 1, so p * 256 <= 256 stays below E4M3's 448 (and both scalings
    // are exact powers of two).
    return num::roundTo(num::Format::F8E4M3FN, p * 256.0f) / 256.0f;
  case AttentionRounding::None:
    break;
  }
  return p;
}

/// The bias element of (b, h, i, j), or 0 without a bias.
template <typename T>
T biasAt(const T *bias, const std::array<int64_t, 4> &s, int64_t b, int64_t h, int64_t i,
         int64_t j) {
  return bias ? bias[b * s[0] + h * s[1] + i * s[2] + j * s[3]] : T(0);
}

/// The scores of query row i of head (b, h) into `s` (masked: -inf); returns
/// their maximum.
template <typename T>
T rowScores(const T *q, const T *k, const T *bias, const std::array<int64_t, 4> &biasStrides,
            const AttentionParams &p, int64_t b, int64_t h, int64_t i, std::vector<T> &s) {
  const int64_t head = b * p.heads + h;
  const T *qi = q + (head * p.seqQ + i) * p.headDim;
  const T scale = static_cast<T>(p.scale);
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < p.seqK; ++j) {
    if (p.causal && j > i + (p.seqK - p.seqQ)) {
      s[j] = -std::numeric_limits<T>::infinity();
      continue;
    }
    const T *kj = k + (head * p.seqK + j) * p.headDim;
    T dot = 0;
    for (int64_t d = 0; d < p.headDim; ++d)
      dot += qi[d] * kj[d];
    s[j] = scale * dot + biasAt(bias, biasStrides, b, h, i, j);
    m = std::max(m, s[j]);
  }
  return m;
}

} // namespace

template <typename T>
void attention(const T *q, const T *k, const T *v, const T *bias,
               const std::array<int64_t, 4> &biasStrides, const AttentionParams &p, T *out,
               T *lse) {
  std::vector<T> s(p.seqK), acc(p.valueDim);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < p.seqQ; ++i) {
        const int64_t head = b * p.heads + h, row = head * p.seqQ + i;
        const T m = rowScores(q, k, bias, biasStrides, p, b, h, i, s);
        T *o = out + row * p.valueDim;
        if (m == -std::numeric_limits<T>::infinity()) { // every key masked
          std::fill(o, o + p.valueDim, T(0));
          if (lse)
            lse[row] = m;
          continue;
        }
        T l = 0;
        std::fill(acc.begin(), acc.end(), T(0));
        for (int64_t j = 0; j < p.seqK; ++j) {
          const T pj = std::exp(s[j] - m);
          l += pj;
          const T pr = roundP(pj, p.pRounding);
          const T *vj = v + (head * p.seqK + j) * p.valueDim;
          for (int64_t e = 0; e < p.valueDim; ++e)
            acc[e] += pr * vj[e];
        }
        for (int64_t e = 0; e < p.valueDim; ++e)
          o[e] = acc[e] / l;
        if (lse)
          lse[row] = m + std::log(l);
      }
}

template <typename T>
void attentionBackward(const T *q, const T *k, const T *v, const T *bias,
                       const std::array<int64_t, 4> &biasStrides, const AttentionParams &p,
                       const T *out, const T *lse, const T *dOut, T *dq, T *dk, T *dv) {
  const T scale = static_cast<T>(p.scale);
  std::fill(dq, dq + p.batch * p.heads * p.seqQ * p.headDim, T(0));
  std::fill(dk, dk + p.batch * p.heads * p.seqK * p.headDim, T(0));
  std::fill(dv, dv + p.batch * p.heads * p.seqK * p.valueDim, T(0));
  std::vector<T> s(p.seqK);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < p.seqQ; ++i) {
        const int64_t head = b * p.heads + h, row = head * p.seqQ + i;
        if (lse[row] == -std::numeric_limits<T>::infinity())
          continue; // every key masked: out is 0 whatever q, k, v are
        rowScores(q, k, bias, biasStrides, p, b, h, i, s);
        const T *go = dOut + row * p.valueDim, *o = out + row * p.valueDim;
        T dsum = 0; // D[i]
        for (int64_t e = 0; e < p.valueDim; ++e)
          dsum += go[e] * o[e];
        const T *qi = q + row * p.headDim;
        T *dqi = dq + row * p.headDim;
        for (int64_t j = 0; j < p.seqK; ++j) {
          const T pj = std::exp(s[j] - lse[row]);
          if (pj == T(0))
            continue;
          const T *vj = v + (head * p.seqK + j) * p.valueDim;
          T *dvj = dv + (head * p.seqK + j) * p.valueDim;
          const T pr = roundP(pj, p.pRounding);
          T dp = 0;
          for (int64_t e = 0; e < p.valueDim; ++e) {
            dvj[e] += pr * go[e];
            dp += go[e] * vj[e];
          }
          const T ds = pj * (dp - dsum);
          const T *kj = k + (head * p.seqK + j) * p.headDim;
          T *dkj = dk + (head * p.seqK + j) * p.headDim;
          for (int64_t d = 0; d < p.headDim; ++d) {
            dqi[d] += scale * ds * kj[d];
            dkj[d] += scale * ds * qi[d];
          }
        }
      }
}

template void attention<float>(const float *, const float *, const float *, const float *,
                               const std::array<int64_t, 4> &, const AttentionParams &, float *,
                               float *);
template void attention<double>(const double *, const double *, const double *, const double *,
                                const std::array<int64_t, 4> &, const AttentionParams &, double *,
                                double *);
template void attentionBackward<float>(const float *, const float *, const float *, const float *,
                                       const std::array<int64_t, 4> &, const AttentionParams &,
                                       const float *, const float *, const float *, float *,
                                       float *, float *);
template void attentionBackward<double>(const double *, const double *, const double *,
                                        const double *, const std::array<int64_t, 4> &,
                                        const AttentionParams &, const double *, const double *,
                                        const double *, double *, double *, double *);

} // namespace mixprec::runtime::cpu
