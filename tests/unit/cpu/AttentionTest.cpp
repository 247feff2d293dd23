//===- AttentionTest.cpp - the attention reference (Attention.h) ----------===//
//
// Checks attention/attentionBackward against a naive double computation
// written from the header's definition (the whole score matrix first,
// masks applied to it, then the row softmax), the rounding helpers against
// the numerics library, and the backward against central finite
// differences of the double forward.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Attention.h"

#include "common/numerics/Rounding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace mixprec::runtime::cpu;
namespace num = mixprec::numerics;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Problem {
  AttentionParams p;
  std::vector<double> q, k, v, bias;
  std::array<int64_t, 4> biasStrides = {0, 0, 0, 0};
  /// Elements of the bias buffer (0: none).
  int64_t biasSize = 0;
};

std::vector<double> randomValues(size_t n, double lo, double hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(n);
  for (double &x : values)
    x = dist(rng);
  return values;
}

Problem makeProblem(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, int64_t dv,
                    bool causal, unsigned seed) {
  Problem pr;
  pr.p.batch = b;
  pr.p.heads = h;
  pr.p.seqQ = sq;
  pr.p.seqK = sk;
  pr.p.headDim = d;
  pr.p.valueDim = dv;
  pr.p.scale = 1.0 / std::sqrt(double(d));
  pr.p.causal = causal;
  pr.q = randomValues(b * h * sq * d, -2, 2, seed);
  pr.k = randomValues(b * h * sk * d, -2, 2, seed + 1);
  pr.v = randomValues(b * h * sk * dv, -1, 1, seed + 2);
  return pr;
}

/// The definition, naively: S for the whole head, then each row.
void naiveForward(const Problem &pr, std::vector<double> &out, std::vector<double> &lse) {
  const AttentionParams &p = pr.p;
  out.assign(p.batch * p.heads * p.seqQ * p.valueDim, 0.0);
  lse.assign(p.batch * p.heads * p.seqQ, 0.0);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h) {
      const int64_t bh = b * p.heads + h;
      std::vector<std::vector<double>> s(p.seqQ, std::vector<double>(p.seqK));
      for (int64_t i = 0; i < p.seqQ; ++i)
        for (int64_t j = 0; j < p.seqK; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < p.headDim; ++d)
            dot +=
                pr.q[(bh * p.seqQ + i) * p.headDim + d] * pr.k[(bh * p.seqK + j) * p.headDim + d];
          s[i][j] = p.scale * dot;
          if (pr.biasSize)
            s[i][j] += pr.bias[b * pr.biasStrides[0] + h * pr.biasStrides[1] +
                               i * pr.biasStrides[2] + j * pr.biasStrides[3]];
        }
      // The causal mask, bottom-right aligned: row i's last key is
      // i + seqK - seqQ.
      if (p.causal)
        for (int64_t i = 0; i < p.seqQ; ++i)
          for (int64_t j = std::max<int64_t>(0, i + p.seqK - p.seqQ + 1); j < p.seqK; ++j)
            s[i][j] = -kInf;
      for (int64_t i = 0; i < p.seqQ; ++i) {
        double m = -kInf;
        for (double x : s[i])
          m = std::max(m, x);
        if (m == -kInf) {
          lse[bh * p.seqQ + i] = -kInf;
          continue;
        }
        double l = 0;
        for (double x : s[i])
          l += std::exp(x - m);
        for (int64_t e = 0; e < p.valueDim; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < p.seqK; ++j)
            acc += roundAttentionP(std::exp(s[i][j] - m), p.pRounding) *
                   pr.v[(bh * p.seqK + j) * p.valueDim + e];
          out[(bh * p.seqQ + i) * p.valueDim + e] = acc / l;
        }
        lse[bh * p.seqQ + i] = m + std::log(l);
      }
    }
}

template <typename T> std::vector<T> as(const std::vector<double> &x) {
  return std::vector<T>(x.begin(), x.end());
}

/// Runs the reference in T and compares with the naive double result.
template <typename T> void expectMatchesNaive(const Problem &pr, double tol) {
  std::vector<double> wantOut, wantLse;
  naiveForward(pr, wantOut, wantLse);
  const std::vector<T> q = as<T>(pr.q), k = as<T>(pr.k), v = as<T>(pr.v), bias = as<T>(pr.bias);
  std::vector<T> out(wantOut.size(), T(-7)), lse(wantLse.size(), T(-7));
  attention<T>(q.data(), k.data(), v.data(), pr.biasSize ? bias.data() : nullptr, pr.biasStrides,
               pr.p, out.data(), lse.data());
  for (size_t n = 0; n < out.size(); ++n)
    ASSERT_NEAR(out[n], wantOut[n], tol) << "out element " << n;
  for (size_t n = 0; n < lse.size(); ++n) {
    if (wantLse[n] == -kInf) {
      ASSERT_EQ(lse[n], -std::numeric_limits<T>::infinity()) << "lse element " << n;
      continue;
    }
    ASSERT_NEAR(lse[n], wantLse[n], tol * (1 + std::fabs(wantLse[n]))) << "lse element " << n;
  }
}

TEST(Attention, MatchesNaiveDefinition) {
  const Problem pr = makeProblem(2, 3, 5, 7, 4, 3, false, 1);
  expectMatchesNaive<double>(pr, 1e-13);
  expectMatchesNaive<float>(pr, 2e-6);
}

TEST(Attention, CausalBottomRightWithSeqQDifferentFromSeqK) {
  // Sq < Sk: every row sees keys; Sq > Sk: the first Sq - Sk rows see none
  // (out 0, lse -inf).
  for (auto [sq, sk] : {std::pair<int64_t, int64_t>{4, 9}, {9, 4}, {6, 6}}) {
    const Problem pr = makeProblem(1, 2, sq, sk, 8, 5, true, 7);
    expectMatchesNaive<double>(pr, 1e-13);
    expectMatchesNaive<float>(pr, 2e-6);
    std::vector<double> out(sq * 5 * 2), lse(sq * 2);
    attention<double>(pr.q.data(), pr.k.data(), pr.v.data(), nullptr, {}, pr.p, out.data(),
                      lse.data());
    for (int64_t i = 0; i < std::max<int64_t>(0, sq - sk); ++i) {
      EXPECT_EQ(lse[i], -kInf);
      for (int64_t e = 0; e < 5; ++e)
        EXPECT_EQ(out[i * 5 + e], 0.0);
    }
  }
}

TEST(Attention, BiasBroadcastThroughStrides) {
  // A [1, H, 1, Sk] bias (per head and key) and a [Sq, Sk] one (per query
  // and key), each read as [B, H, Sq, Sk] through zero strides.
  Problem pr = makeProblem(2, 3, 4, 6, 8, 8, false, 11);
  pr.bias = randomValues(3 * 6, -3, 3, 12);
  pr.biasSize = pr.bias.size();
  pr.biasStrides = {0, 6, 0, 1};
  expectMatchesNaive<double>(pr, 1e-13);
  expectMatchesNaive<float>(pr, 4e-6);
  pr.bias = randomValues(4 * 6, -3, 3, 13);
  pr.biasSize = pr.bias.size();
  pr.biasStrides = {0, 0, 6, 1};
  pr.p.causal = true;
  expectMatchesNaive<double>(pr, 1e-13);
}

TEST(Attention, RowsWithEveryKeyMaskedGiveZeroAndMinusInfinity) {
  // A -inf bias masks whole rows (and single keys elsewhere).
  Problem pr = makeProblem(1, 1, 3, 5, 4, 4, false, 21);
  pr.bias.assign(3 * 5, 0.0);
  for (int64_t j = 0; j < 5; ++j)
    pr.bias[1 * 5 + j] = -kInf;
  pr.bias[2 * 5 + 3] = -kInf;
  pr.biasSize = pr.bias.size();
  pr.biasStrides = {0, 0, 5, 1};
  expectMatchesNaive<double>(pr, 1e-13);
  std::vector<float> out(12, 9.0f), lse(3);
  const std::vector<float> q = as<float>(pr.q), k = as<float>(pr.k), v = as<float>(pr.v),
                           bias = as<float>(pr.bias);
  attention<float>(q.data(), k.data(), v.data(), bias.data(), pr.biasStrides, pr.p, out.data(),
                   lse.data());
  EXPECT_EQ(lse[1], -std::numeric_limits<float>::infinity());
  for (int64_t e = 0; e < 4; ++e)
    EXPECT_EQ(out[4 + e], 0.0f);
  EXPECT_TRUE(std::isfinite(lse[0]) && std::isfinite(lse[2]));
}

TEST(Attention, EachProbabilityRounding) {
  // Large scores spread p over many binades; each rounding must show.
  Problem pr = makeProblem(1, 2, 5, 40, 16, 4, false, 31);
  pr.p.scale = 1.5;
  std::vector<double> unrounded, lse;
  naiveForward(pr, unrounded, lse);
  for (AttentionRounding r :
       {AttentionRounding::BF16, AttentionRounding::FP16, AttentionRounding::FP8E4M3}) {
    pr.p.pRounding = r;
    expectMatchesNaive<double>(pr, 1e-13);
    expectMatchesNaive<float>(pr, 4e-6);
    std::vector<double> rounded;
    naiveForward(pr, rounded, lse);
    double change = 0;
    for (size_t n = 0; n < rounded.size(); ++n)
      change = std::max(change, std::fabs(rounded[n] - unrounded[n]));
    EXPECT_GT(change, 1e-6) << "rounding " << int(r) << " changed nothing";
  }
}

TEST(Attention, RoundingHelpersMatchTheNumericsLibrary) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 0);
  for (int n = 0; n < 20000; ++n) {
    const float p = std::ldexp(mantissa(rng), exponent(rng)) / 2; // (0, 1]
    EXPECT_EQ(roundAttentionP(p, AttentionRounding::BF16), num::roundTo(num::Format::BF16, p));
    EXPECT_EQ(roundAttentionP(p, AttentionRounding::FP16), num::roundTo(num::Format::F16, p));
    EXPECT_EQ(roundAttentionP(p, AttentionRounding::FP8E4M3),
              num::roundTo(num::Format::F8E4M3FN, p * 256.0f, {true, false}) / 256.0f);
    EXPECT_EQ(roundAttentionP(double(p), AttentionRounding::BF16),
              double(num::roundTo(num::Format::BF16, p)));
    const float g = (n % 2 ? -1 : 1) * std::ldexp(mantissa(rng), exponent(rng) * 4 + 40);
    EXPECT_EQ(roundAttentionGradOperand(g, AttentionRounding::FP16),
              num::roundTo(num::Format::F16, g));
    EXPECT_EQ(roundAttentionGradOperand(g, AttentionRounding::FP8E4M3),
              num::roundTo(num::Format::BF16, g));
    EXPECT_EQ(roundAttentionGradOperand(g, AttentionRounding::None), g);
  }
  // Double rounds once: 0.5 + 2^-9 + 2^-41 is above BF16's midpoint
  // between 0.5 and 0.5 + 2^-8, though as a float it would be the midpoint
  // itself (and round to even, 0.5).
  EXPECT_EQ(
      roundAttentionP(0.5 + std::ldexp(1.0, -9) + std::ldexp(1.0, -41), AttentionRounding::BF16),
      0.5 + std::ldexp(1.0, -8));
}

/// The double forward's out contracted with weights w: a scalar function
/// of q, k, v whose gradient the backward gives for dOut = w.
double contracted(const Problem &pr, const std::vector<double> &w) {
  std::vector<double> out(w.size()), lse(pr.p.batch * pr.p.heads * pr.p.seqQ);
  attention<double>(pr.q.data(), pr.k.data(), pr.v.data(), pr.biasSize ? pr.bias.data() : nullptr,
                    pr.biasStrides, pr.p, out.data(), lse.data());
  double sum = 0;
  for (size_t n = 0; n < w.size(); ++n)
    sum += w[n] * out[n];
  return sum;
}

TEST(AttentionBackward, MatchesCentralFiniteDifferences) {
  for (bool causal : {false, true}) {
    Problem pr = makeProblem(1, 2, 4, 6, 3, 5, causal, 41);
    pr.bias = randomValues(4 * 6, -1, 1, 42);
    pr.biasSize = pr.bias.size();
    pr.biasStrides = {0, 0, 6, 1};
    const AttentionParams &p = pr.p;
    const std::vector<double> w = randomValues(2 * 4 * 5, -1, 1, 43);
    std::vector<double> out(w.size()), lse(2 * 4);
    attention<double>(pr.q.data(), pr.k.data(), pr.v.data(), pr.bias.data(), pr.biasStrides, p,
                      out.data(), lse.data());
    std::vector<double> dq(pr.q.size()), dk(pr.k.size()), dv(pr.v.size());
    attentionBackward<double>(pr.q.data(), pr.k.data(), pr.v.data(), pr.bias.data(), pr.biasStrides,
                              p, out.data(), lse.data(), w.data(), dq.data(), dk.data(), dv.data());
    // h = 1e-5: truncation error O(h^2) ~ 1e-10, cancellation ~ 1e-16 / h.
    const double h = 1e-5;
    auto check = [&](std::vector<double> &x, const std::vector<double> &grad, const char *what) {
      for (size_t n = 0; n < x.size(); ++n) {
        const double saved = x[n];
        x[n] = saved + h;
        const double up = contracted(pr, w);
        x[n] = saved - h;
        const double down = contracted(pr, w);
        x[n] = saved;
        EXPECT_NEAR(grad[n], (up - down) / (2 * h), 1e-8) << what << " element " << n;
      }
    };
    check(pr.q, dq, "dq");
    check(pr.k, dk, "dk");
    check(pr.v, dv, "dv");
  }
}

TEST(AttentionBackward, FloatMatchesDoubleAndMaskedRowsGiveZero) {
  // Sq > Sk with causal: the first rows see no key, their dq is 0 and they
  // add nothing to dk, dv. Without rounding, float and double differ by
  // float's rounding only: sums of at most 16 terms of size <= 4 here, so
  // well within 1e-4.
  Problem pr = makeProblem(1, 1, 7, 4, 16, 16, true, 51);
  const AttentionParams &p = pr.p;
  const std::vector<double> g = randomValues(7 * 16, -1, 1, 52);
  std::vector<double> out(7 * 16), lse(7), dq(7 * 16), dk(4 * 16), dv(4 * 16);
  attention<double>(pr.q.data(), pr.k.data(), pr.v.data(), nullptr, {}, p, out.data(), lse.data());
  attentionBackward<double>(pr.q.data(), pr.k.data(), pr.v.data(), nullptr, {}, p, out.data(),
                            lse.data(), g.data(), dq.data(), dk.data(), dv.data());
  const std::vector<float> qf = as<float>(pr.q), kf = as<float>(pr.k), vf = as<float>(pr.v),
                           of = as<float>(out), lf = as<float>(lse), gf = as<float>(g);
  std::vector<float> dqf(dq.size(), 5.0f), dkf(dk.size(), 5.0f), dvf(dv.size(), 5.0f);
  attentionBackward<float>(qf.data(), kf.data(), vf.data(), nullptr, {}, p, of.data(), lf.data(),
                           gf.data(), dqf.data(), dkf.data(), dvf.data());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t d = 0; d < 16; ++d) {
      EXPECT_EQ(dq[i * 16 + d], 0.0);
      EXPECT_EQ(dqf[i * 16 + d], 0.0f);
    }
  for (size_t n = 0; n < dq.size(); ++n)
    EXPECT_NEAR(dqf[n], dq[n], 1e-4) << n;
  for (size_t n = 0; n < dk.size(); ++n)
    EXPECT_NEAR(dkf[n], dk[n], 1e-4) << n;
  for (size_t n = 0; n < dv.size(); ++n)
    EXPECT_NEAR(dvf[n], dv[n], 1e-4) << n;
}

} // namespace
