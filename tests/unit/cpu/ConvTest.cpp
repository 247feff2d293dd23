#include "tests/unit/cpu/TestUtil.h"

#include <limits>

using namespace mixprec::runtime::cpu;
namespace shapes = mixprec::shapes;
using namespace mixprec::runtime::cpu::testing;

namespace {

using A2 = std::array<int64_t, 2>;
using A4 = std::array<int64_t, 4>;

TEST(PooledSize, OnnxFormulaAndCeilMode) {
  // floor((5 + 0 - 3) / 2) + 1 = 2
  EXPECT_EQ(shapes::pooledSize(5, 3, 2, 0, 0, 1, false), 2);
  EXPECT_EQ(shapes::pooledSize(5, 3, 2, 0, 0, 1, true), 2);
  // 6: floor(3/2)+1 = 2, ceil -> 3 (last window starts at 4 < 6)
  EXPECT_EQ(shapes::pooledSize(6, 3, 2, 0, 0, 1, false), 2);
  EXPECT_EQ(shapes::pooledSize(6, 3, 2, 0, 0, 1, true), 3);
  // ceil would start the last window at 4 == in + padBegin: dropped.
  EXPECT_EQ(shapes::pooledSize(4, 2, 2, 0, 1, 1, true), 2);
  EXPECT_EQ(shapes::pooledSize(4, 2, 2, 0, 1, 1, false), 2);
  // With left padding the start bound moves: 4 < 4 + 1, kept.
  EXPECT_EQ(shapes::pooledSize(4, 2, 2, 1, 0, 1, true), 3);
  // Dilation: span = (3-1)*2+1 = 5 -> floor((7-5)/1)+1 = 3
  EXPECT_EQ(shapes::pooledSize(7, 3, 1, 0, 0, 2, false), 3);
  // Kernel bigger than padded input.
  EXPECT_LE(shapes::pooledSize(2, 5, 1, 0, 0, 1, false), 0);
  // Conv-style with pads: (224 + 3 + 3 - 7) / 2 + 1 = 112
  EXPECT_EQ(shapes::pooledSize(224, 7, 2, 3, 3, 1, false), 112);
}

TEST(SamePads, UpperAndLower) {
  int64_t b = -1, e = -1;
  samePads(5, 3, 2, 1, true, &b, &e); // out 3, total (2*2+3-5)=2
  EXPECT_EQ(b, 1);
  EXPECT_EQ(e, 1);
  samePads(6, 3, 2, 1, true, &b, &e); // out 3, total 1
  EXPECT_EQ(b, 0);
  EXPECT_EQ(e, 1);
  samePads(6, 3, 2, 1, false, &b, &e);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(e, 0);
  samePads(4, 1, 1, 1, true, &b, &e);
  EXPECT_EQ(b + e, 0);
}

struct ConvCase {
  Shape is;
  int64_t m, kh, kw;
  A2 strides;
  A4 pads;
  A2 dil;
  int64_t groups;
  bool bias;
};

TEST(Conv2d, MatchesDirectReference) {
  const std::vector<ConvCase> cases = {
      {{2, 4, 7, 6}, 6, 3, 3, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true},
      {{1, 3, 9, 8}, 5, 3, 2, {2, 3}, {0, 2, 1, 0}, {1, 1}, 1, false},
      {{1, 2, 9, 9}, 4, 3, 3, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1, true},
      {{2, 4, 6, 6}, 6, 3, 3, {1, 2}, {1, 0, 1, 1}, {1, 1}, 2, true},
      {{1, 6, 8, 7}, 6, 3, 3, {2, 2}, {1, 1, 1, 1}, {1, 1}, 6, true},  // dw
      {{2, 8, 5, 4}, 12, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true}, // 1x1
      {{1, 4, 5, 4}, 4, 1, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2, false},
      {{1, 3, 10, 10}, 8, 5, 5, {3, 3}, {2, 2, 2, 2}, {1, 2}, 1, true},
      {{1, 1, 3, 3}, 2, 3, 3, {1, 1}, {3, 3, 3, 3}, {1, 1}, 1, true}, // pad>k
  };
  uint32_t seed = 81;
  for (const auto &c : cases) {
    const int64_t n = c.is[0], ch = c.is[1], h = c.is[2], w = c.is[3];
    const int64_t cg = ch / c.groups, mg = c.m / c.groups;
    const int64_t oh =
        shapes::pooledSize(h, c.kh, c.strides[0], c.pads[0], c.pads[2], c.dil[0], false);
    const int64_t ow =
        shapes::pooledSize(w, c.kw, c.strides[1], c.pads[1], c.pads[3], c.dil[1], false);
    const Shape ws = {c.m, cg, c.kh, c.kw}, os = {n, c.m, oh, ow};
    std::vector<float> x = randomFloats(count(c.is), -1, 1, seed++);
    std::vector<float> wt = randomFloats(count(ws), -1, 1, seed++);
    std::vector<float> b = randomFloats(c.m, -1, 1, seed++);
    std::vector<float> out(count(os), 77.0f);
    conv2d(x.data(), c.is, wt.data(), ws, c.bias ? b.data() : nullptr,
           c.strides, c.pads, c.dil, c.groups, out.data(), os);
    std::vector<double> ref(out.size()), tol(out.size());
    for (int64_t i = 0; i < count(os); ++i) {
      auto o = unravel(i, os); // n, m, y, x
      const int64_t g = o[1] / mg;
      double s = c.bias ? b[o[1]] : 0.0, mag = std::fabs(s);
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t ky = 0; ky < c.kh; ++ky)
          for (int64_t kx = 0; kx < c.kw; ++kx) {
            const int64_t iy = o[2] * c.strides[0] + ky * c.dil[0] - c.pads[0];
            const int64_t ix = o[3] * c.strides[1] + kx * c.dil[1] - c.pads[1];
            if (iy < 0 || iy >= h || ix < 0 || ix >= w)
              continue;
            const double p =
                double(x[ravel({o[0], g * cg + ci, iy, ix}, c.is)]) *
                wt[ravel({o[1], ci, ky, kx}, ws)];
            s += p;
            mag += std::fabs(p);
          }
      ref[i] = s;
      tol[i] = 1e-5 * mag + 1e-6;
    }
    EXPECT_TRUE(allCloseScaled(out, ref, tol))
        << "input " << shapeStr(c.is) << " groups " << c.groups;
  }
}

struct PoolCase {
  Shape is;
  A2 k, strides;
  A4 pads;
  A2 dil;
  bool ceil;
};

const std::vector<PoolCase> &poolCases() {
  static const std::vector<PoolCase> cases = {
      {{1, 2, 6, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false},
      {{2, 3, 7, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
      {{1, 2, 6, 7}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true}, // overhang
      {{1, 1, 5, 5}, {3, 2}, {2, 2}, {1, 0, 1, 1}, {1, 1}, true},
      {{1, 2, 8, 8}, {2, 2}, {3, 3}, {1, 1, 0, 0}, {1, 1}, true},
      {{1, 2, 9, 9}, {3, 3}, {1, 2}, {2, 2, 2, 2}, {2, 2}, false}, // dilated
      {{1, 1, 4, 4}, {2, 2}, {2, 2}, {0, 0, 1, 1}, {1, 1}, true},
  };
  return cases;
}

Shape poolOut(const PoolCase &c) {
  return {
      c.is[0], c.is[1],
      shapes::pooledSize(c.is[2], c.k[0], c.strides[0], c.pads[0], c.pads[2], c.dil[0], c.ceil),
      shapes::pooledSize(c.is[3], c.k[1], c.strides[1], c.pads[1], c.pads[3], c.dil[1], c.ceil)};
}

TEST(MaxPool2d, PaddingNeverWins) {
  uint32_t seed = 91;
  for (const auto &c : poolCases()) {
    const Shape os = poolOut(c);
    // All-negative input: a padding value of 0 would win if it took part.
    std::vector<float> x = randomFloats(count(c.is), -5, -1, seed++);
    std::vector<float> out(count(os));
    maxPool2d(x.data(), c.is, c.k, c.strides, c.pads, c.dil, out.data(), os);
    std::vector<double> ref(out.size());
    for (int64_t i = 0; i < count(os); ++i) {
      auto o = unravel(i, os);
      double m = -INFINITY;
      for (int64_t ky = 0; ky < c.k[0]; ++ky)
        for (int64_t kx = 0; kx < c.k[1]; ++kx) {
          const int64_t iy = o[2] * c.strides[0] + ky * c.dil[0] - c.pads[0];
          const int64_t ix = o[3] * c.strides[1] + kx * c.dil[1] - c.pads[1];
          if (iy >= 0 && iy < c.is[2] && ix >= 0 && ix < c.is[3])
            m = std::max(m, double(x[ravel({o[0], o[1], iy, ix}, c.is)]));
        }
      ref[i] = m;
    }
    EXPECT_TRUE(allClose(out, ref, 0, 0)) << shapeStr(c.is);
  }
}

TEST(AvgPool2d, CountIncludePadAndCeilMode) {
  uint32_t seed = 101;
  for (const auto &c : poolCases())
    for (bool includePad : {false, true}) {
      const Shape os = poolOut(c);
      std::vector<float> x = randomFloats(count(c.is), -1, 1, seed++);
      std::vector<float> out(count(os));
      avgPool2d(x.data(), c.is, c.k, c.strides, c.pads, includePad, out.data(),
                os, c.dil);
      std::vector<double> ref(out.size());
      for (int64_t i = 0; i < count(os); ++i) {
        auto o = unravel(i, os);
        double s = 0;
        int64_t valid = 0, padded = 0;
        for (int64_t ky = 0; ky < c.k[0]; ++ky)
          for (int64_t kx = 0; kx < c.k[1]; ++kx) {
            const int64_t iy = o[2] * c.strides[0] + ky * c.dil[0] - c.pads[0];
            const int64_t ix = o[3] * c.strides[1] + kx * c.dil[1] - c.pads[1];
            // A tap counts as "padding" only inside the declared pads; taps
            // in the ceil-mode overhang beyond them never count.
            const bool inPadY = iy >= -c.pads[0] && iy < c.is[2] + c.pads[2];
            const bool inPadX = ix >= -c.pads[1] && ix < c.is[3] + c.pads[3];
            if (inPadY && inPadX)
              ++padded;
            if (iy >= 0 && iy < c.is[2] && ix >= 0 && ix < c.is[3]) {
              s += x[ravel({o[0], o[1], iy, ix}, c.is)];
              ++valid;
            }
          }
        ref[i] = valid == 0 ? 0.0 : s / double(includePad ? padded : valid);
      }
      EXPECT_TRUE(allClose(out, ref, 1e-5, 1e-6))
          << shapeStr(c.is) << " include_pad " << includePad;
    }
}

TEST(AvgPool2d, OnnxCeilExample) {
  // onnx backend test "averagepool_2d_ceil": 4x4 input, k3 s2, ceil_mode.
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i)
    x[i] = float(i + 1);
  const Shape is = {1, 1, 4, 4};
  const int64_t o = shapes::pooledSize(4, 3, 2, 0, 0, 1, true);
  ASSERT_EQ(o, 2);
  std::vector<float> y(4);
  avgPool2d(x.data(), is, {3, 3}, {2, 2}, {0, 0, 0, 0}, false, y.data(),
            {1, 1, 2, 2});
  EXPECT_EQ(y, (std::vector<float>{6.0f, 7.5f, 12.0f, 13.5f}));
}

TEST(AvgPool2d, PadsCountedOnlyWhenAsked) {
  // 2x2 of ones, k2 s1 pads 1: the corner window has one real element.
  std::vector<float> x(4, 1.0f), y(9);
  const Shape is = {1, 1, 2, 2}, os = {1, 1, 3, 3};
  avgPool2d(x.data(), is, {2, 2}, {1, 1}, {1, 1, 1, 1}, true, y.data(), os);
  EXPECT_FLOAT_EQ(y[0], 0.25f);
  EXPECT_FLOAT_EQ(y[4], 1.0f);
  avgPool2d(x.data(), is, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, y.data(), os);
  for (float v : y)
    EXPECT_FLOAT_EQ(v, 1.0f);
}

} // namespace
