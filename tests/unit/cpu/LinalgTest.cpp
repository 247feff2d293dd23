#include "tests/unit/cpu/TestUtil.h"

using namespace mixprec::runtime::cpu;
using namespace mixprec::runtime::cpu::testing;

namespace {

// numpy matmul written out: promote 1-D operands, broadcast batch dims by
// explicit index arithmetic, then drop the promoted dims from the result.
void refMatmul(const std::vector<float> &a, Shape as,
               const std::vector<float> &b, Shape bs, std::vector<double> &ref,
               std::vector<double> &tol, Shape &os) {
  const bool aVec = as.size() == 1, bVec = bs.size() == 1;
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  ASSERT_EQ(bs[bs.size() - 2], k);
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  mixprec::shapes::ShapeOrError joined = mixprec::shapes::broadcastShapes(ab, bb);
  ASSERT_TRUE(joined.ok());
  Shape batch = joined.shape;
  os = batch;
  if (!aVec)
    os.push_back(m);
  if (!bVec)
    os.push_back(n);
  const int64_t nb = count(batch);
  ref.assign(nb * m * n, 0.0);
  tol.assign(nb * m * n, 0.0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    auto idx = unravel(bi, batch);
    const int64_t aOff = broadcastIndex(idx, ab) * m * k;
    const int64_t bOff = broadcastIndex(idx, bb) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double prod = double(a[aOff + i * k + p]) * b[bOff + p * n + j];
          s += prod;
          mag += std::fabs(prod);
        }
        ref[(bi * m + i) * n + j] = s;
        // float accumulation error grows with the magnitudes summed.
        tol[(bi * m + i) * n + j] = 1e-5 * mag + 1e-6;
      }
  }
}

TEST(Matmul, ShapesAndValues) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{3}, {3}},                // dot -> scalar
      {{3}, {3, 4}},             // vector @ matrix
      {{2, 3}, {3}},             // matrix @ vector
      {{5, 7}, {7, 4}},          // plain 2-D
      {{2, 5, 7}, {7, 4}},       // batched A, shared B (one tall GEMM)
      {{5, 7}, {3, 7, 4}},       // shared A, batched B
      {{2, 5, 7}, {2, 7, 4}},    // matching batch
      {{2, 1, 5, 7}, {3, 7, 4}}, // broadcast batch -> [2,3,5,4]
      {{1, 3, 5, 7}, {2, 1, 7, 4}},
      {{4}, {2, 4, 3}}, // 1-D with batched B
      {{2, 3, 4}, {4}}, // batched A with 1-D B
      {{1, 2, 3}, {3, 2}},
      {{2, 0, 3}, {3, 4}},  // empty M
      {{64, 48}, {48, 80}}, // big enough for a real BLAS kernel path
  };
  uint32_t seed = 11;
  for (const auto &[as, bs] : cases) {
    std::vector<float> a = randomFloats(count(as), -1, 1, seed++);
    std::vector<float> b = randomFloats(count(bs), -1, 1, seed++);
    std::vector<double> ref, tol;
    Shape os;
    refMatmul(a, as, b, bs, ref, tol, os);
    mixprec::shapes::ShapeOrError expected = mixprec::shapes::matmulShape(as, bs);
    EXPECT_TRUE(expected.ok()) << expected.error;
    EXPECT_EQ(expected.shape, os);
    std::vector<float> out(count(os), 123.0f);
    matmul(a.data(), as, b.data(), bs, out.data(), os);
    EXPECT_TRUE(allCloseScaled(out, ref, tol))
        << shapeStr(as) << " @ " << shapeStr(bs);
  }
}

TEST(Matmul, ZeroKGivesZeros) {
  std::vector<float> out(6, 5.0f);
  float dummy = 0;
  matmul(&dummy, {2, 0}, &dummy, {0, 3}, out.data(), {2, 3});
  for (float v : out)
    EXPECT_EQ(v, 0.0f);
}

TEST(Linear, TransposesAndBiasForms) {
  const int64_t k = 9, n = 5;
  struct Case {
    Shape xs;
    Shape biasShape; // empty vector + noBias => no bias
    bool noBias;
  };
  const std::vector<Case> cases = {
      {{4, k}, {}, true},
      {{4, k}, {n}, false},
      {{4, k}, {1, n}, false},
      {{4, k}, {4, n}, false},
      {{4, k}, {4, 1}, false},
      {{4, k}, {}, false}, // scalar bias
      {{4, k}, {1}, false},
      {{2, 3, k}, {n}, false},
      {{2, 3, k}, {6, n}, false}, // [M, N] with M = flattened batch
      {{2, 3, k}, {6, 1}, false},
      {{2, 3, k}, {3, 1}, false}, // numpy-broadcast against [2,3,N]
      {{k}, {n}, false},          // 1-D input
  };
  uint32_t seed = 50;
  for (const auto &c : cases)
    for (bool transW : {false, true}) {
      const int64_t m = count(c.xs) / k;
      Shape ws = transW ? Shape{n, k} : Shape{k, n};
      Shape os(c.xs.begin(), c.xs.end() - 1);
      os.push_back(n);
      std::vector<float> x = randomFloats(count(c.xs), -1, 1, seed++);
      std::vector<float> w = randomFloats(n * k, -1, 1, seed++);
      std::vector<float> bias =
          randomFloats(c.noBias ? 0 : count(c.biasShape), -1, 1, seed++);
      std::vector<float> out(m * n, -3.0f);
      linear(x.data(), c.xs, w.data(), ws, transW,
             c.noBias ? nullptr : bias.data(), c.biasShape, out.data(), os);
      std::vector<double> ref(m * n), tol(m * n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0, mag = 0;
          for (int64_t p = 0; p < k; ++p) {
            const double wv = transW ? w[j * k + p] : w[p * n + j];
            s += x[i * k + p] * wv;
            mag += std::fabs(x[i * k + p] * wv);
          }
          if (!c.noBias) {
            double bv;
            const Shape &bsh = c.biasShape;
            if (count(bsh) == 1)
              bv = bias[0];
            else if (bsh == Shape{m, 1})
              bv = bias[i];
            else if (count(bsh) == m * n)
              bv = bias[i * n + j];
            else if (bsh == Shape{3, 1})
              bv = bias[i % 3];
            else
              bv = bias[j];
            s += bv;
            mag += std::fabs(bv);
          }
          ref[i * n + j] = s;
          tol[i * n + j] = 1e-5 * mag + 1e-6;
        }
      EXPECT_TRUE(allCloseScaled(out, ref, tol))
          << shapeStr(c.xs) << " bias "
          << (c.noBias ? "none" : shapeStr(c.biasShape)) << " transW "
          << transW;
    }
}

} // namespace
