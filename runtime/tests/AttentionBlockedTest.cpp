//===- AttentionBlockedTest.cpp - the CPU's blocked attention forward -----===//
//
// cpu_attention_blocked_tests: attentionBlocked (runtime/kernels/
// AttentionBlocked.h) against the double reference cpu::attention<double>
// on the same inputs, every output element within the bound the header
// derives (computed here from its formulas, element by element). The
// inputs have a few large keys late in each sequence, so the running max
// grows across key tiles and the rescaling matters; sequence lengths are
// no tile multiples, seqQ differs from seqK both ways, the bias is
// broadcast through zero strides, and some rows have every key masked.
// Every case also checks that the bits do not depend on how the units are
// split over calls and threads, on the run, or on the instruction set. The
// kernel's exp and round_P are checked on their own, and the GPT-2 shapes
// print the speed against cpu::attention<float>.
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/AttentionBlocked.h"

#include "common/numerics/Rounding.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace num = mixprec::numerics;
namespace cpu = mixprec::runtime::cpu;

constexpr double kU = 0x1p-24; // FP32 unit roundoff
constexpr double kEpsExp = 0x1p-23, kEtaExp = 0x1p-149;
constexpr double kInf = std::numeric_limits<double>::infinity();

/// g(k) of AttentionBlocked.h: k FP32 roundings.
double g(double k) { return k * kU / (1 - k * kU); }

/// How the bias is broadcast to [B, H, Sq, Sk].
enum class Bias {
  None,
  PerHeadKey,  ///< [1, H, 1, Sk], f32
  PerQueryKey, ///< [Sq, Sk], with row 0 and scattered keys -inf
  PerBatchRow, ///< [B, 1, Sq, 1]: one value per row (key stride 0)
  Transposed,  ///< [Sk, Sq] read as [Sq, Sk] (key stride Sq)
  Full,        ///< [B, H, Sq, Sk]
};

struct Case {
  const char *name;
  cpu::AttentionRounding rounding;
  int64_t batch, heads, seqQ, seqK, headDim, valueDim;
  bool causal;
  Bias bias;
  bool withLse = true;
};

/// round_P's (u_P, eta_P), the header's table.
std::pair<double, double> pErrors(cpu::AttentionRounding r) {
  switch (r) {
  case cpu::AttentionRounding::None:
    return {0, 0};
  case cpu::AttentionRounding::BF16:
    return {0x1p-8, 0x1p-134};
  case cpu::AttentionRounding::FP16:
    return {0x1p-11, 0x1p-25};
  case cpu::AttentionRounding::FP8E4M3:
    return {0x1p-4, 0x1p-18};
  }
  return {0, 0};
}

/// The storage format the operands of a rounding mode come from.
num::Format operandFormat(cpu::AttentionRounding r) {
  switch (r) {
  case cpu::AttentionRounding::None:
    return num::Format::F32;
  case cpu::AttentionRounding::BF16:
    return num::Format::BF16;
  case cpu::AttentionRounding::FP16:
    return num::Format::F16;
  case cpu::AttentionRounding::FP8E4M3:
    return num::Format::F8E4M3FN;
  }
  return num::Format::F32;
}

/// n values uniform in [lo, hi], stored in `f` and times `descale` (an FP8
/// operand's), as the floats the caller decodes.
std::vector<float> operand(size_t n, double lo, double hi, num::Format f, float descale,
                           std::mt19937 &rng) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<float> x(n);
  for (float &value : x)
    value = num::roundTo(f, static_cast<float>(dist(rng))) * descale;
  return x;
}

std::vector<double> widen(const std::vector<float> &x) { return {x.begin(), x.end()}; }

/// The inputs of a case, as floats (the kernel's) and doubles (the
/// reference's, the same values).
struct Problem {
  cpu::AttentionParams p;
  std::vector<float> q, k, v, bias;
  std::array<int64_t, 4> biasStrides = {0, 0, 0, 0};

  const float *biasData() const { return bias.empty() ? nullptr : bias.data(); }
};

Problem makeProblem(const Case &c) {
  Problem pr;
  cpu::AttentionParams &p = pr.p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.seqQ = c.seqQ;
  p.seqK = c.seqK;
  p.headDim = c.headDim;
  p.valueDim = c.valueDim;
  p.scale = c.headDim > 0 ? 1.0 / std::sqrt(double(c.headDim)) : 1.0;
  p.causal = c.causal;
  p.pRounding = c.rounding;
  std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffffffu);
  const num::Format f = operandFormat(c.rounding);
  const bool fp8 = f == num::Format::F8E4M3FN;
  const double range = fp8 ? 6 : 1.5;
  const int64_t B = c.batch, H = c.heads, Sq = c.seqQ, Sk = c.seqK, D = c.headDim;
  const float qd = fp8 ? 0.3f : 1.0f, kd = fp8 ? 0.45f : 1.0f, vd = fp8 ? 0.7f : 1.0f;
  pr.q = operand(B * H * Sq * D, -range, range, f, qd, rng);
  pr.k = operand(B * H * Sk * D, -range, range, f, kd, rng);
  pr.v = operand(B * H * Sk * c.valueDim, -range, range, f, vd, rng);
  // A few large keys late in each sequence, aligned with some query, so a
  // row's max grows after its first key tiles.
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t j = Sk * 2 / 3; j < Sk; j += 7)
      for (int64_t d = 0; d < D; ++d)
        pr.k[(bh * Sk + j) * D + d] =
            num::roundTo(f, static_cast<float>(std::copysign(range * (fp8 ? 3 : 6),
                                                             pr.q[(bh * Sq + j % Sq) * D + d]))) *
            kd;
  std::uniform_real_distribution<double> dist(-2, 2);
  auto fill = [&](int64_t n) {
    pr.bias.resize(n);
    for (float &x : pr.bias)
      x = static_cast<float>(dist(rng));
  };
  switch (c.bias) {
  case Bias::None:
    break;
  case Bias::PerHeadKey:
    fill(H * Sk);
    pr.biasStrides = {0, Sk, 0, 1};
    break;
  case Bias::PerQueryKey:
    fill(Sq * Sk);
    for (int64_t j = 0; j < Sk; ++j)
      pr.bias[j] = -std::numeric_limits<float>::infinity();
    for (int64_t n = Sk + 3; n < Sq * Sk; n += 11)
      pr.bias[n] = -std::numeric_limits<float>::infinity();
    pr.biasStrides = {0, 0, Sk, 1};
    break;
  case Bias::PerBatchRow:
    fill(B * Sq);
    pr.biasStrides = {Sq, 0, 1, 0};
    break;
  case Bias::Transposed:
    fill(Sk * Sq);
    pr.biasStrides = {0, 0, 1, Sq};
    break;
  case Bias::Full:
    fill(B * H * Sq * Sk);
    pr.biasStrides = {H * Sq * Sk, Sq * Sk, Sk, 1};
    break;
  }
  return pr;
}

/// Results of one forward.
struct Result {
  std::vector<float> out, lse;
};

/// Output buffers filled with a NaN, so that an element nobody writes shows.
Result blankResult(const cpu::AttentionParams &p) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {std::vector<float>(p.batch * p.heads * p.seqQ * p.valueDim, nan),
          std::vector<float>(p.batch * p.heads * p.seqQ, nan)};
}

/// Units [begin, end) with `scratch` (the caller's, of the right size).
void runUnits(const Problem &pr, Result &r, bool withLse, int64_t begin, int64_t end,
              float *scratch, cpu::AttentionIsa isa) {
  cpu::attentionBlockedOn(isa, pr.q.data(), pr.k.data(), pr.v.data(), pr.biasData(), pr.biasStrides,
                          pr.p, r.out.data(), withLse ? r.lse.data() : nullptr, begin, end,
                          scratch);
}

bool sameBits(const std::vector<float> &a, const std::vector<float> &b) {
  // (memcmp of empty vectors' null data is undefined behaviour.)
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

/// The header's bound, element by element, against the double reference.
void checkBound(const Case &c, const Problem &pr, const Result &got, bool withLse) {
  const cpu::AttentionParams &p = pr.p;
  const int64_t B = p.batch, H = p.heads, Sq = p.seqQ, Sk = p.seqK, D = p.headDim, Dv = p.valueDim;
  const std::vector<double> q = widen(pr.q), k = widen(pr.k), v = widen(pr.v),
                            bias = widen(pr.bias);
  std::vector<double> refOut(B * H * Sq * Dv), refLse(B * H * Sq);
  cpu::attention<double>(q.data(), k.data(), v.data(), bias.empty() ? nullptr : bias.data(),
                         pr.biasStrides, p, refOut.data(), refLse.data());
  const auto [uP, etaP] = pErrors(p.pRounding);
  int64_t checked = 0, rows = 0, masked = 0;
  double worstOut = 0, worstLse = 0;
  std::vector<double> s(Sk);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const int64_t bh = b * H + h, row = bh * Sq + i;
        // The row's exact scores (-inf where masked), n, T and Delta.
        double worst = 0, m = -kInf;
        int64_t n = 0, first = -1, last = -1;
        for (int64_t j = 0; j < Sk; ++j) {
          s[j] = -kInf;
          if (p.causal && j > i + Sk - Sq)
            continue;
          double dot = 0, mag = 0;
          for (int64_t d = 0; d < D; ++d) {
            const double prod = q[(bh * Sq + i) * D + d] * k[(bh * Sk + j) * D + d];
            dot += prod;
            mag += std::fabs(prod);
          }
          const double bj = bias.empty() ? 0.0
                                         : bias[b * pr.biasStrides[0] + h * pr.biasStrides[1] +
                                                i * pr.biasStrides[2] + j * pr.biasStrides[3]];
          s[j] = p.scale * dot + bj;
          if (s[j] == -kInf)
            continue;
          worst = std::max(worst, std::fabs(p.scale) * mag + std::fabs(bj));
          m = std::max(m, s[j]);
          ++n;
          if (first < 0)
            first = j;
          last = j;
        }
        if (n == 0) {
          ++masked;
          if (withLse) {
            ASSERT_EQ(got.lse[row], -std::numeric_limits<float>::infinity())
                << "masked row " << row;
          }
          for (int64_t e = 0; e < Dv; ++e)
            ASSERT_EQ(got.out[row * Dv + e], 0.0f) << "masked row " << row << " column " << e;
          continue;
        }
        const double delta = g(D + 3) * worst;
        const double T =
            double(last / cpu::kAttentionTileKeys - first / cpu::kAttentionTileKeys + 1);
        const double E = std::pow(1 + kEpsExp, T) - 1;
        const double A = n * (1 + E) * (kU / (std::exp(1.0) * (1 - kU)) + T * kEtaExp);
        const double G = std::exp(2 * delta) * (1 + E) / (1 - E);
        const double F =
            (2 * g(2 * T + 64) / (1 - g(2 * T + 64)) * (1 + kU) + kU) * (1 + uP + n * etaP);
        double l = 0;
        for (int64_t j = 0; j < Sk; ++j)
          l += s[j] == -kInf ? 0.0 : std::exp(s[j] - m);
        for (int64_t e = 0; e < Dv; ++e) {
          double vbar = 0, vmax = 0;
          for (int64_t j = 0; j < Sk; ++j)
            if (s[j] != -kInf) {
              const double vv = std::fabs(v[(bh * Sk + j) * Dv + e]);
              vbar += std::exp(s[j] - m) / l * vv;
              vmax = std::max(vmax, vv);
            }
          const double bound =
              ((1 + uP) * G - 1 + uP) * vbar + (2 * (1 + uP) * A + 2 * n * etaP + F) * vmax;
          const double want = refOut[row * Dv + e];
          const double err = std::fabs(double(got.out[row * Dv + e]) - want);
          ASSERT_LE(err, bound) << "out[" << row << ", " << e << "]: kernel "
                                << got.out[row * Dv + e] << ", reference " << want;
          if (bound > 0)
            worstOut = std::max(worstOut, err / bound);
          ++checked;
        }
        if (withLse) {
          const double L = -std::log(1 - E - A) - std::log(1 - g(2 * T + 64));
          const double bound = (1 + 2 * kU) * (delta + L) + 2 * kU * std::fabs(refLse[row]) +
                               0x1p-48 * std::log(2.0 * n);
          const double err = std::fabs(double(got.lse[row]) - refLse[row]);
          ASSERT_LE(err, bound) << "lse[" << row << "]: kernel " << got.lse[row] << ", reference "
                                << refLse[row];
          worstLse = std::max(worstLse, err / bound);
        }
        ++rows;
      }
  EXPECT_GT(rows + masked, 0);
  std::printf("%s: %lld rows, %lld elements within the bound (worst at %.3f of it; lse %.3f), "
              "%lld masked rows\n",
              c.name, (long long)rows, (long long)checked, worstOut, worstLse, (long long)masked);
}

class AttentionBlocked : public ::testing::Test {
protected:
  void run(const Case &c);
};

void AttentionBlocked::run(const Case &c) {
  SCOPED_TRACE(c.name);
  const Problem pr = makeProblem(c);
  const cpu::AttentionParams &p = pr.p;
  const int64_t units = cpu::attentionBlockedUnits(p);
  ASSERT_EQ(units, p.batch * p.heads * ((p.seqQ + 31) / 32));
  const size_t scratchFloats = cpu::attentionBlockedScratchFloats(p);

  // Every unit in one call, on the calling thread.
  Result whole = blankResult(p);
  cpu::attentionBlocked(pr.q.data(), pr.k.data(), pr.v.data(), pr.biasData(), pr.biasStrides, p,
                        whole.out.data(), c.withLse ? whole.lse.data() : nullptr);
  checkBound(c, pr, whole, c.withLse);
  if (::testing::Test::HasFatalFailure())
    return;
  if (!c.withLse) {
    for (float x : whole.lse)
      ASSERT_TRUE(std::isnan(x)) << "lse written though null";
  }

  // The same bits again; with and without lse; one unit per call in reverse
  // order on one scratch (left dirty by the previous unit, misaligned by a
  // float); two threads with a split at an odd unit.
  const cpu::AttentionIsa best = cpu::attentionBlockedIsas().back();
  Result again = blankResult(p);
  std::vector<float> scratch(scratchFloats + 1, std::nanf(""));
  runUnits(pr, again, c.withLse, 0, units, scratch.data(), best);
  EXPECT_TRUE(sameBits(again.out, whole.out) && sameBits(again.lse, whole.lse))
      << "a second run gave other bits";
  Result other = blankResult(p);
  runUnits(pr, other, !c.withLse, 0, units, scratch.data(), best);
  EXPECT_TRUE(sameBits(other.out, whole.out)) << "out depends on whether lse is written";
  Result single = blankResult(p);
  for (int64_t u = units - 1; u >= 0; --u)
    runUnits(pr, single, c.withLse, u, u + 1, scratch.data() + 1, best);
  EXPECT_TRUE(sameBits(single.out, whole.out) && sameBits(single.lse, whole.lse))
      << "one unit per call gave other bits";
  Result threaded = blankResult(p);
  const int64_t split = units / 2 | 1;
  std::vector<float> scratch2(scratchFloats);
  std::thread worker([&] {
    runUnits(pr, threaded, c.withLse, std::min(split, units), units, scratch2.data(), best);
  });
  runUnits(pr, threaded, c.withLse, 0, std::min(split, units), scratch.data(), best);
  worker.join();
  EXPECT_TRUE(sameBits(threaded.out, whole.out) && sameBits(threaded.lse, whole.lse))
      << "two threads gave other bits";

  // A unit writes its own rows only.
  const int64_t mid = units / 2;
  Result one = blankResult(p);
  runUnits(pr, one, true, mid, mid + 1, scratch.data(), best);
  const int64_t blocks = (p.seqQ + 31) / 32;
  for (int64_t row = 0; row < p.batch * p.heads * p.seqQ; ++row) {
    const int64_t unit = row / p.seqQ * blocks + row % p.seqQ / 32;
    for (int64_t e = 0; e < p.valueDim; ++e) {
      const float x = one.out[row * p.valueDim + e], y = whole.out[row * p.valueDim + e];
      ASSERT_TRUE(unit == mid ? std::memcmp(&x, &y, sizeof x) == 0 : std::isnan(x))
          << "unit " << mid << " and out row " << row;
    }
  }

  // Every instruction set this CPU runs gives the same bits.
  for (cpu::AttentionIsa isa : cpu::attentionBlockedIsas()) {
    Result r = blankResult(p);
    runUnits(pr, r, c.withLse, 0, units, scratch.data(), isa);
    EXPECT_TRUE(sameBits(r.out, whole.out) && sameBits(r.lse, whole.lse))
        << "instruction set " << static_cast<int>(isa) << " gave other bits";
  }
}

using R = cpu::AttentionRounding;

// Sequence lengths that are no tile multiples (1, 7, 63, 65, 200), seqQ !=
// seqK both ways (causal rows that see no key when seqQ > seqK), head dims
// 32, 64 and 80, every bias broadcast, masked rows, with and without lse.
TEST_F(AttentionBlocked, F32D64Causal65) {
  run({"f32_d64_causal_65x65", R::None, 1, 2, 65, 65, 64, 64, true, Bias::None});
}
TEST_F(AttentionBlocked, F32D32HeadKeyBias7x200) {
  run({"f32_d32_headkey_7x200", R::None, 2, 3, 7, 200, 32, 32, false, Bias::PerHeadKey});
}
TEST_F(AttentionBlocked, F32D80OneByOneNoLse) {
  run({"f32_d80_1x1_nolse", R::None, 1, 2, 1, 1, 80, 80, false, Bias::None, false});
}
TEST_F(AttentionBlocked, F32D32Dv80CausalQueryKeyBias) {
  run({"f32_d32_dv80_causal_querykey_63x65", R::None, 1, 1, 63, 65, 32, 80, true,
       Bias::PerQueryKey});
}
TEST_F(AttentionBlocked, Bf16D64CausalMoreQueries) {
  run({"bf16_d64_causal_200x63", R::BF16, 1, 2, 200, 63, 64, 64, true, Bias::None});
}
TEST_F(AttentionBlocked, Bf16D80QueryKeyBias) {
  run({"bf16_d80_querykey_63x200", R::BF16, 1, 2, 63, 200, 80, 80, false, Bias::PerQueryKey});
}
TEST_F(AttentionBlocked, Bf16D64CausalBatchedNoLse) {
  run({"bf16_d64_causal_7x7_nolse", R::BF16, 2, 3, 7, 7, 64, 64, true, Bias::None, false});
}
TEST_F(AttentionBlocked, Bf16D64CausalLongKeys) {
  run({"bf16_d64_causal_40x1000", R::BF16, 1, 1, 40, 1000, 64, 64, true, Bias::PerHeadKey});
}
TEST_F(AttentionBlocked, F16D80CausalOneQuery) {
  run({"f16_d80_causal_1x200", R::FP16, 2, 1, 1, 200, 80, 80, true, Bias::None});
}
TEST_F(AttentionBlocked, F16D32BatchRowBias) {
  run({"f16_d32_batchrow_200x7", R::FP16, 2, 2, 200, 7, 32, 32, false, Bias::PerBatchRow});
}
TEST_F(AttentionBlocked, F16D64CausalTransposedBias) {
  run({"f16_d64_causal_transposed_200x200", R::FP16, 1, 1, 200, 200, 64, 64, true,
       Bias::Transposed});
}
TEST_F(AttentionBlocked, Fp8D64CausalFullBias) {
  run({"fp8_d64_causal_full_65x200", R::FP8E4M3, 1, 2, 65, 200, 64, 64, true, Bias::Full});
}
TEST_F(AttentionBlocked, Fp8D32NoLse) {
  run({"fp8_d32_200x200_nolse", R::FP8E4M3, 1, 1, 200, 200, 32, 32, false, Bias::None, false});
}
TEST_F(AttentionBlocked, Fp8D80QueryKeyBias) {
  run({"fp8_d80_querykey_65x65", R::FP8E4M3, 1, 2, 65, 65, 80, 80, false, Bias::PerQueryKey});
}
// No head dim (every score the bias) and no value dim (lse only).
TEST_F(AttentionBlocked, F32NoHeadDim) {
  run({"f32_d0_querykey_40x70", R::None, 1, 2, 40, 70, 0, 16, false, Bias::PerQueryKey});
}
TEST_F(AttentionBlocked, Bf16NoValueDim) {
  run({"bf16_dv0_causal_40x70", R::BF16, 1, 2, 40, 70, 32, 0, true, Bias::None});
}
TEST_F(AttentionBlocked, Fp8D64CausalMoreQueriesOneKey) {
  run({"fp8_d64_causal_7x1", R::FP8E4M3, 1, 2, 7, 1, 64, 64, true, Bias::PerBatchRow});
}

// No keys (every row masked: out 0, lse -inf) or no queries: the
// reference's bits.
TEST(AttentionBlockedEdges, NoKeysOrQueries) {
  for (const auto &[sq, sk] : std::vector<std::pair<int64_t, int64_t>>{{5, 0}, {0, 9}}) {
    cpu::AttentionParams p;
    p.batch = 2;
    p.seqQ = sq;
    p.seqK = sk;
    p.headDim = p.valueDim = 8;
    std::mt19937 rng(7);
    const std::vector<float> q = operand(2 * sq * 8, -1, 1, num::Format::F32, 1, rng),
                             k = operand(2 * sk * 8, -1, 1, num::Format::F32, 1, rng),
                             v = operand(2 * sk * 8, -1, 1, num::Format::F32, 1, rng);
    Result got = blankResult(p), want = blankResult(p);
    cpu::attentionBlocked(q.data(), k.data(), v.data(), nullptr, {}, p, got.out.data(),
                          got.lse.data());
    cpu::attention<float>(q.data(), k.data(), v.data(), nullptr, {}, p, want.out.data(),
                          want.lse.data());
    EXPECT_TRUE(sameBits(got.out, want.out) && sameBits(got.lse, want.lse))
        << "seqQ " << sq << ", seqK " << sk;
  }
}

// The kernel's exp: within eps_e relative (eta_e absolute below FP32's
// normal range) of e^x on every 97th float of [-104, 0] and the ends, at
// most 1, exactly 1 at 0 and 0 from -104 down.
TEST(AttentionBlockedExp, WithinItsBound) {
  auto check = [](float x) {
    const double want = std::exp(double(x)), got = cpu::attentionBlockedExp(x);
    const double bound = want >= 0x1p-126 ? kEpsExp * want : kEtaExp;
    ASSERT_LE(std::fabs(got - want), bound) << "x = " << x;
    ASSERT_LE(got, 1.0) << "x = " << x;
  };
  uint32_t lowest;
  const float limit = -104.0f;
  std::memcpy(&lowest, &limit, sizeof lowest);
  for (uint64_t bits = 0x80000000u; bits <= lowest; bits += 97) {
    float x;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&x, &b, sizeof x);
    check(x);
  }
  for (float x : {-0.0f, -0x1p-149f, -0x1p-24f, -0.34657359f, -0.34657360f, -87.33654f, -87.33655f,
                  -103.97f, -104.0f})
    check(x);
  EXPECT_EQ(cpu::attentionBlockedExp(0.0f), 1.0f);
  EXPECT_EQ(cpu::attentionBlockedExp(-104.5f), 0.0f);
  EXPECT_EQ(cpu::attentionBlockedExp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(cpu::attentionBlockedExp(std::nanf(""))));
}

// The kernel's round_P is roundAttentionP<float> on [0, 1]: every 251st
// float, and around every binade's ties (the kept bits even and odd).
TEST(AttentionBlockedRoundP, SameAsReference) {
  for (R r : {R::BF16, R::FP16, R::FP8E4M3}) {
    auto check = [r](uint32_t bits) {
      float p;
      std::memcpy(&p, &bits, sizeof p);
      const float want = cpu::roundAttentionP(p, r), got = cpu::attentionBlockedRoundP(p, r);
      ASSERT_EQ(std::memcmp(&want, &got, sizeof p), 0)
          << "p = " << p << " (bits " << bits << "), rounding " << static_cast<int>(r)
          << ": kernel " << got << ", reference " << want;
    };
    for (uint32_t bits = 0; bits <= 0x3f800000u; bits += 251)
      check(bits);
    for (uint32_t exponent = 0; exponent < 127; ++exponent)
      for (uint32_t drop : {13u, 16u, 17u, 20u, 21u, 23u})
        for (uint32_t kept : {0u, 1u, 2u, 3u})
          for (int64_t low : {-1, 0, 1}) {
            const uint32_t bits =
                (exponent << 23) + (kept << drop) + static_cast<uint32_t>((1u << (drop - 1)) + low);
            if (bits <= 0x3f800000u)
              check(bits);
          }
    check(0x3f800000u);
  }
  EXPECT_EQ(cpu::attentionBlockedRoundP(0.3f, R::None), 0.3f);
}

/// The best of `reps` timings of f, in seconds.
template <typename F> double bestTime(int reps, F f) {
  double best = kInf;
  for (int n = 0; n < reps; ++n) {
    const auto start = std::chrono::steady_clock::now();
    f();
    const auto stop = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(stop - start).count());
  }
  return best;
}

/// GPT-2's attention (B = 1, H = 12, D = 64, causal) at sequence length S:
/// the bound against the double reference up to S = 256, the largest
/// difference from cpu::attention<float>, and the speed against it on this
/// thread (printed, not asserted).
void gpt2Shape(int64_t S, bool checkReference) {
  const std::string name = "gpt2_s" + std::to_string(S);
  const Case c{name.c_str(), R::None, 1, 12, S, S, 64, 64, true, Bias::None};
  const Problem pr = makeProblem(c);
  const cpu::AttentionParams &p = pr.p;
  Result blocked = blankResult(p), reference = blankResult(p);
  const int reps = S <= 256 ? 5 : 2;
  const double tBlocked = bestTime(reps * 4, [&] {
    cpu::attentionBlocked(pr.q.data(), pr.k.data(), pr.v.data(), nullptr, pr.biasStrides, p,
                          blocked.out.data(), blocked.lse.data());
  });
  const double tReference = bestTime(reps, [&] {
    cpu::attention<float>(pr.q.data(), pr.k.data(), pr.v.data(), nullptr, pr.biasStrides, p,
                          reference.out.data(), reference.lse.data());
  });
  double diff = 0, lseDiff = 0;
  for (size_t n = 0; n < blocked.out.size(); ++n)
    diff = std::max(diff, double(std::fabs(blocked.out[n] - reference.out[n])));
  for (size_t n = 0; n < blocked.lse.size(); ++n)
    lseDiff = std::max(lseDiff, double(std::fabs(blocked.lse[n] - reference.lse[n])));
  std::printf("%s causal: blocked %.3f ms, cpu::attention<float> %.3f ms: %.1fx; largest "
              "difference from it %.3g (lse %.3g)\n",
              name.c_str(), tBlocked * 1e3, tReference * 1e3, tReference / tBlocked, diff, lseDiff);
  if (checkReference)
    checkBound(c, pr, blocked, true);
}

TEST(AttentionBlockedGpt2, AgainstFloatReference) {
  for (int64_t S : {64, 128, 256, 512})
    gpt2Shape(S, S <= 256);
}

// Not run by default (seconds of the float reference): the timing at
// S = 1024, with --gtest_also_run_disabled_tests.
TEST(AttentionBlockedGpt2, DISABLED_Speed1024) { gpt2Shape(1024, false); }

} // namespace
