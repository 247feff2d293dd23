//===- BlockScalingTest.cpp - FP8 block scaling against references --------===//
//
// The block scale rules over every BF16 bit pattern as amax (and random
// float32 ones) against their definition checked in exact arithmetic, and
// the block-scaled GEMM against APFloat quad precision (113 bits: every
// block sum of FP8 products is exact there) rounded once to float.
//
//===----------------------------------------------------------------------===//
#include "common/numerics/BlockScaling.h"
#include "tests/unit/FloatBits.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace num = mixprec::numerics;
using num::BlockRecipe;
using num::Format;

namespace {

using mixprec::test::bitsOf;
float fromBits(uint32_t b) { return mixprec::test::floatOf(b); }

/// Whether `s` is a power of two (normal or subnormal float).
bool isPowerOfTwo(float s) {
  int e;
  return s > 0 && std::frexp(s, &e) == 0.5f;
}

/// The Block rule checked from its definition: s = 2^e is the largest power
/// of two with s * amax * 2^margin <= fp8_max (every product exact in double).
void expectBlockRule(Format f, float amax, int64_t margin) {
  float s = num::blockScale(f, BlockRecipe::Block, amax, margin);
  SCOPED_TRACE(::testing::Message() << "amax " << amax << " margin " << margin);
  if (!std::isfinite(amax)) {
    EXPECT_TRUE(std::isnan(s));
    return;
  }
  if (amax == 0) {
    EXPECT_EQ(s, 1.0f);
    return;
  }
  ASSERT_TRUE(isPowerOfTwo(s)) << s;
  const double max = num::formatMaxFinite(f), a = std::fabs(double(amax)) * std::ldexp(1.0, int(margin));
  if (s == std::ldexp(1.0f, 127)) { // the clamp
    EXPECT_LE(double(s) * a, max);
    return;
  }
  EXPECT_LE(double(s) * a, max);
  EXPECT_GT(2.0 * double(s) * a, max);
}

/// The Mx rule from its definition (Transformer Engine's): the inverse of
/// the E8M0 scale 2^ceil(log2(amax / fp8_max)), i.e. 2^-ceil(...), found
/// here by ilogb and an exact comparison, clamped to E8M0's [2^-127, 2^127].
void expectMxRule(Format f, float amax, int64_t margin) {
  float s = num::blockScale(f, BlockRecipe::Mx, amax, margin);
  SCOPED_TRACE(::testing::Message() << "amax " << amax);
  if (!std::isfinite(amax)) {
    EXPECT_TRUE(std::isnan(s));
    return;
  }
  if (amax == 0) {
    EXPECT_EQ(s, 1.0f);
    return;
  }
  // ceil(log2 r) for r = amax / fp8_max (exact in long double: 24 + 3 bits).
  const long double r = static_cast<long double>(amax) / num::formatMaxFinite(f);
  long c = std::ilogb(r);
  if (std::ldexp(1.0L, int(c)) < r)
    ++c;
  long e = std::max(-127L, std::min(127L, -c - long(margin)));
  EXPECT_EQ(bitsOf(s), bitsOf(std::ldexp(1.0f, int(e))));
}

TEST(BlockScale, EveryBf16AmaxFollowsTheRules) {
  for (Format f : {Format::F8E4M3FN, Format::F8E5M2})
    for (int64_t margin : {0, 1, 3})
      for (uint32_t bits = 0; bits < 0x10000; ++bits) {
        float amax = std::fabs(fromBits(bits << 16));
        expectBlockRule(f, amax, margin);
        expectMxRule(f, amax, margin);
        if (HasFailure())
          return;
      }
}

TEST(BlockScale, RandomFloat32AmaxFollowsTheRules) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000000; ++i) {
    float amax = std::fabs(fromBits(rng()));
    for (Format f : {Format::F8E4M3FN, Format::F8E5M2}) {
      expectBlockRule(f, amax, 0);
      expectMxRule(f, amax, 0);
    }
    if (HasFailure())
      return;
  }
}

TEST(BlockScale, QuantizedBlocksFitTheFormat) {
  // With the Block rule, the block's amax lands in (fp8_max / 2, fp8_max]
  // before rounding (224 after it at worst):
  // nothing saturates and the top binade is used.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  num::BlockLayout l{2, 5, 300, 1, 128};
  std::vector<float> x(size_t(l.batch * l.rows * l.cols)), scales(size_t(l.scaleCount())),
      q(x.size());
  for (float &v : x)
    v = normal(rng) * std::exp(3.0f * normal(rng));
  num::computeBlockScales(Format::F8E4M3FN, BlockRecipe::Block, 0, l, x.data(), scales.data());
  num::blockQuantize(Format::F8E4M3FN, l, x.data(), scales.data(), q.data());
  for (int64_t r = 0; r < l.batch * l.rows; ++r)
    for (int64_t j = 0; j < l.scaleCols(); ++j) {
      float amaxQ = 0;
      for (int64_t c = j * 128; c < std::min<int64_t>(l.cols, (j + 1) * 128); ++c)
        amaxQ = std::max(amaxQ, std::fabs(q[size_t(r * l.cols + c)]));
      EXPECT_GE(amaxQ, 224.0f); // (224, 448] before rounding to E4M3
      EXPECT_LE(amaxQ, 448.0f);
    }
  // An inf poisons its block only.
  x[10] = INFINITY;
  num::computeBlockScales(Format::F8E4M3FN, BlockRecipe::Block, 0, l, x.data(), scales.data());
  num::blockQuantize(Format::F8E4M3FN, l, x.data(), scales.data(), q.data());
  EXPECT_TRUE(std::isnan(scales[0]));
  EXPECT_TRUE(std::isnan(q[0]) && std::isnan(q[127]));
  EXPECT_FALSE(std::isnan(q[128]));
}

TEST(BlockScale, ScaleShapeRoundsUp) {
  EXPECT_EQ(num::blockScaleShape({4, 7, 300}, 1, 128), (std::vector<int64_t>{4, 7, 3}));
  EXPECT_EQ(num::blockScaleShape({257, 128}, 128, 128), (std::vector<int64_t>{3, 1}));
}

/// The block-scaled GEMM in APFloat: each block's sum exact in quad
/// precision, rounded once to float, then scaled and accumulated in float
/// exactly as the header says.
std::vector<float> referenceGemm(const std::vector<float> &a, const std::vector<float> &sa,
                                 int64_t aBlockRows, const std::vector<float> &b,
                                 const std::vector<float> &sb, int64_t bBlockRows, int64_t kBlock,
                                 int64_t m, int64_t n, int64_t k, float shift) {
  const int64_t blocks = (k + kBlock - 1) / kBlock;
  std::vector<float> out(size_t(m * n));
  bool lost;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (int64_t kb = 0; kb < blocks; ++kb) {
        llvm::APFloat sum(llvm::APFloat::IEEEquad(), 0);
        bool finite = true;
        for (int64_t c = kb * kBlock; c < std::min(k, (kb + 1) * kBlock); ++c) {
          float x = a[size_t(i * k + c)], y = b[size_t(j * k + c)];
          finite = finite && std::isfinite(x) && std::isfinite(y);
          llvm::APFloat p{static_cast<double>(x)};
          p.convert(llvm::APFloat::IEEEquad(), llvm::APFloat::rmNearestTiesToEven, &lost);
          llvm::APFloat q{static_cast<double>(y)};
          q.convert(llvm::APFloat::IEEEquad(), llvm::APFloat::rmNearestTiesToEven, &lost);
          p.multiply(q, llvm::APFloat::rmNearestTiesToEven);
          sum.add(p, llvm::APFloat::rmNearestTiesToEven);
        }
        // The exact sum times 2^(shiftA + shiftB) is the integer the
        // library rounds; the power of two commutes with the rounding.
        sum = llvm::scalbn(sum, -int(std::log2(shift)), llvm::APFloat::rmNearestTiesToEven);
        sum.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &lost);
        float p = sum.convertToFloat();
        float term = finite ? ((p * shift) / sa[size_t((i / aBlockRows) * blocks + kb)]) /
                                  sb[size_t((j / bBlockRows) * blocks + kb)]
                            : NAN;
        acc = acc + term;
      }
      out[size_t(i * n + j)] = acc;
    }
  return out;
}

void checkGemm(Format fa, Format fb, int64_t aBlockRows, int64_t bBlockRows, int64_t kBlock,
               BlockRecipe recipe, int64_t m, int64_t n, int64_t k, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto operand = [&](Format f, int64_t rows, int64_t blockRows, std::vector<float> &q,
                     std::vector<float> &s) {
    num::BlockLayout l{1, rows, k, blockRows, kBlock};
    std::vector<float> x(size_t(rows * k));
    for (float &v : x) // wide dynamic range, outliers, exact zeros
      v = (rng() % 17 == 0) ? 0.0f : normal(rng) * std::exp(4.0f * normal(rng));
    s.resize(size_t(l.scaleCount()));
    q.resize(x.size());
    num::computeBlockScales(f, recipe, 0, l, x.data(), s.data());
    num::blockQuantize(f, l, x.data(), s.data(), q.data());
  };
  std::vector<float> qa, sa, qb, sb;
  operand(fa, m, aBlockRows, qa, sa);
  operand(fb, n, bBlockRows, qb, sb);
  std::vector<float> out(size_t(m * n));
  num::blockScaledGemm(fa, qa.data(), sa.data(), aBlockRows, fb, qb.data(), sb.data(), bBlockRows,
                       kBlock, m, n, k, out.data());
  int shiftA = fa == Format::F8E5M2 ? 16 : 9, shiftB = fb == Format::F8E5M2 ? 16 : 9;
  float shift = std::ldexp(1.0f, -(shiftA + shiftB));
  std::vector<float> ref =
      referenceGemm(qa, sa, aBlockRows, qb, sb, bBlockRows, kBlock, m, n, k, shift);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(bitsOf(out[i]), bitsOf(ref[i])) << "element " << i << ": " << out[i] << " vs "
                                              << ref[i];
}

TEST(BlockScaledGemm, MatchesQuadPrecisionReferenceBitForBit) {
  // 1 x 128 activations against 128 x 128 weights, partial blocks at every edge.
  checkGemm(Format::F8E4M3FN, Format::F8E4M3FN, 1, 128, 128, BlockRecipe::Block, 9, 131, 300, 1);
  // Hybrid: an E5M2 gradient against E4M3 weights.
  checkGemm(Format::F8E5M2, Format::F8E4M3FN, 1, 128, 128, BlockRecipe::Block, 7, 20, 257, 2);
  // Both E5M2 (the __int128 sums).
  checkGemm(Format::F8E5M2, Format::F8E5M2, 1, 1, 128, BlockRecipe::Block, 5, 6, 200, 3);
  // MXFP8: 1 x 32 both sides.
  checkGemm(Format::F8E4M3FN, Format::F8E4M3FN, 1, 1, 32, BlockRecipe::Mx, 8, 12, 100, 4);
}

TEST(BlockScaledGemm, OrderInsideABlockDoesNotMatter) {
  // Reversing k inside each block leaves every result identical (exact sums).
  const int64_t m = 3, n = 4, k = 128;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(m * k), b(n * k), sa(m, 1.0f), sb(1, 1.0f);
  for (float &v : a)
    v = num::quantizeFp8(Format::F8E4M3FN, normal(rng) * std::exp(5.0f * normal(rng)), 1.0f);
  for (float &v : b)
    v = num::quantizeFp8(Format::F8E4M3FN, normal(rng) * std::exp(5.0f * normal(rng)), 1.0f);
  std::vector<float> out(m * n), reversed(m * n);
  num::blockScaledGemm(Format::F8E4M3FN, a.data(), sa.data(), 1, Format::F8E4M3FN, b.data(),
                       sb.data(), 128, 128, m, n, k, out.data());
  for (int64_t r = 0; r < m; ++r)
    std::reverse(a.begin() + r * k, a.begin() + (r + 1) * k);
  for (int64_t r = 0; r < n; ++r)
    std::reverse(b.begin() + r * k, b.begin() + (r + 1) * k);
  num::blockScaledGemm(Format::F8E4M3FN, a.data(), sa.data(), 1, Format::F8E4M3FN, b.data(),
                       sb.data(), 128, 128, m, n, k, reversed.data());
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(bitsOf(out[i]), bitsOf(reversed[i]));
}

TEST(BlockScaledGemm, NonFiniteBlockGivesNaN) {
  std::vector<float> a(256, 1.0f), b(256, 1.0f), sa(2, 1.0f), sb(2, 1.0f), out(1);
  a[200] = NAN;
  num::blockScaledGemm(Format::F8E4M3FN, a.data(), sa.data(), 1, Format::F8E4M3FN, b.data(),
                       sb.data(), 1, 128, 1, 1, 256, out.data());
  EXPECT_TRUE(std::isnan(out[0]));
  a[200] = 1.0f;
  num::blockScaledGemm(Format::F8E4M3FN, a.data(), sa.data(), 1, Format::F8E4M3FN, b.data(),
                       sb.data(), 1, 128, 1, 1, 256, out.data());
  EXPECT_EQ(out[0], 256.0f);
}

} // namespace
