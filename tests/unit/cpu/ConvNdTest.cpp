// N-D convolution, transposed convolution and pooling (1 to 3 spatial dims)
// against direct loops over the ONNX definitions.
#include "tests/unit/cpu/TestUtil.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mixprec::runtime::cpu;
namespace shapes = mixprec::shapes;
using namespace mixprec::runtime::cpu::testing;

namespace {

using V = std::vector<int64_t>;

/// Every multi-index of `sizes`, row-major.
std::vector<V> allIndices(const V &sizes) {
  std::vector<V> out;
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(unravel(i, sizes));
  return out;
}

/// in + a leading [n, c].
Shape withNC(int64_t n, int64_t c, const V &spatial) {
  Shape s{n, c};
  s.insert(s.end(), spatial.begin(), spatial.end());
  return s;
}

struct ConvNdCase {
  V in, kernel, strides, pads, dil, outPad;
  int64_t n, c, m, groups;
  bool bias;
};

const std::vector<ConvNdCase> &convCases() {
  static const std::vector<ConvNdCase> cases = {
      {{9}, {3}, {2}, {1, 2}, {2}, {1}, 2, 4, 6, 2, true},
      {{7}, {1}, {1}, {0, 0}, {1}, {0}, 1, 3, 5, 1, false},
      {{5, 6, 4}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 1, 2, 4, 1,
       true},
      {{7, 6, 8}, {3, 2, 3}, {2, 1, 2}, {1, 0, 1, 0, 1, 1}, {1, 2, 1}, {1, 0, 1}, 2, 4, 6, 2,
       true},
      {{4, 5, 3}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1, 3, 2, 1,
       false}, // 1x1x1: the direct path
      {{6, 5}, {3, 2}, {3, 2}, {1, 0, 2, 1}, {1, 2}, {2, 1}, 1, 4, 4, 4, true}, // depthwise
  };
  return cases;
}

TEST(ConvNd, MatchesDirectReference) {
  uint32_t seed = 201;
  for (const ConvNdCase &c : convCases()) {
    const size_t dims = c.in.size();
    const int64_t cg = c.c / c.groups, mg = c.m / c.groups;
    V out;
    for (size_t s = 0; s < dims; ++s)
      out.push_back(shapes::pooledSize(c.in[s], c.kernel[s], c.strides[s], c.pads[s],
                                       c.pads[dims + s], c.dil[s], false));
    const Shape is = withNC(c.n, c.c, c.in), ws = withNC(c.m, cg, c.kernel),
                os = withNC(c.n, c.m, out);
    std::vector<float> x = randomFloats(count(is), -1, 1, seed++);
    std::vector<float> w = randomFloats(count(ws), -1, 1, seed++);
    std::vector<float> b = randomFloats(c.m, -1, 1, seed++);
    std::vector<float> y(count(os), 77.0f);
    conv(x.data(), is, w.data(), ws, c.bias ? b.data() : nullptr,
         Window{{}, c.strides, c.pads, c.dil}, c.groups, y.data(), os);
    std::vector<double> ref(y.size()), tol(y.size());
    for (int64_t i = 0; i < count(os); ++i) {
      V o = unravel(i, os);
      const int64_t g = o[1] / mg;
      double sum = c.bias ? b[o[1]] : 0.0, mag = std::fabs(sum);
      for (int64_t ci = 0; ci < cg; ++ci)
        for (const V &k : allIndices(c.kernel)) {
          V xi{o[0], g * cg + ci}, wi{o[1], ci};
          bool inside = true;
          for (size_t s = 0; s < dims; ++s) {
            int64_t q = o[2 + s] * c.strides[s] + k[s] * c.dil[s] - c.pads[s];
            inside = inside && q >= 0 && q < c.in[s];
            xi.push_back(q);
            wi.push_back(k[s]);
          }
          if (!inside)
            continue;
          const double p = double(x[ravel(xi, is)]) * w[ravel(wi, ws)];
          sum += p;
          mag += std::fabs(p);
        }
      ref[i] = sum;
      tol[i] = 1e-5 * mag + 1e-6;
    }
    EXPECT_TRUE(allCloseScaled(y, ref, tol)) << "input " << shapeStr(is);
  }
}

TEST(ConvTransposeNd, MatchesScatterDefinition) {
  uint32_t seed = 301;
  for (const ConvNdCase &c : convCases()) {
    const size_t dims = c.in.size();
    const int64_t cg = c.c / c.groups, mg = c.m / c.groups;
    V out;
    for (size_t s = 0; s < dims; ++s)
      out.push_back(shapes::transposedSize(c.in[s], c.kernel[s], c.strides[s], c.pads[s],
                                           c.pads[dims + s], c.dil[s], c.outPad[s]));
    const Shape is = withNC(c.n, c.c, c.in), ws = withNC(c.c, mg, c.kernel),
                os = withNC(c.n, c.m, out);
    std::vector<float> x = randomFloats(count(is), -1, 1, seed++);
    std::vector<float> w = randomFloats(count(ws), -1, 1, seed++);
    std::vector<float> b = randomFloats(c.m, -1, 1, seed++);
    std::vector<float> y(count(os), 77.0f);
    convTranspose(x.data(), is, w.data(), ws, c.bias ? b.data() : nullptr,
                  Window{{}, c.strides, c.pads, c.dil}, c.groups, y.data(), os);
    // y[n, m, o] = bias[m] + sum x[n, c, i] * w[c, m % mg, k] over the
    // (i, k) with o = i * stride + k * dilation - pad, c in m's group.
    std::vector<double> ref(y.size(), 0.0), mag(y.size(), 0.0);
    for (int64_t i = 0; i < count(os); ++i) {
      V o = unravel(i, os);
      ref[i] = c.bias ? b[o[1]] : 0.0;
      mag[i] = std::fabs(ref[i]);
    }
    for (int64_t i = 0; i < count(is); ++i) {
      V xi = unravel(i, is);
      const int64_t g = xi[1] / cg;
      for (int64_t mm = 0; mm < mg; ++mm)
        for (const V &k : allIndices(c.kernel)) {
          V oi{xi[0], g * mg + mm}, wi{xi[1], mm};
          bool inside = true;
          for (size_t s = 0; s < dims; ++s) {
            int64_t q = xi[2 + s] * c.strides[s] + k[s] * c.dil[s] - c.pads[s];
            inside = inside && q >= 0 && q < out[s];
            oi.push_back(q);
            wi.push_back(k[s]);
          }
          if (!inside)
            continue;
          const double p = double(x[i]) * w[ravel(wi, ws)];
          ref[ravel(oi, os)] += p;
          mag[ravel(oi, os)] += std::fabs(p);
        }
    }
    std::vector<double> tol(y.size());
    for (size_t i = 0; i < tol.size(); ++i)
      tol[i] = 1e-5 * mag[i] + 1e-6;
    EXPECT_TRUE(allCloseScaled(y, ref, tol)) << "input " << shapeStr(is);
  }
}

struct PoolNdCase {
  V in, kernel, strides, pads, dil;
  bool ceil;
};

const std::vector<PoolNdCase> &poolCases() {
  static const std::vector<PoolNdCase> cases = {
      {{11}, {3}, {2}, {1, 1}, {1}, false},
      {{12}, {2}, {3}, {0, 0}, {2}, true},
      {{6, 7, 5}, {2, 3, 2}, {2, 2, 1}, {0, 1, 0, 1, 1, 0}, {1, 1, 1}, false},
      {{7, 6, 8}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}, {2, 1, 2}, true},
      {{4, 4, 4}, {2, 2, 2}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {2, 2, 2}, true},
      {{5, 7}, {3, 3}, {2, 1}, {1, 1, 2, 0}, {2, 1}, true},
  };
  return cases;
}

/// The window taps of output `o`: their input coordinates, and whether each
/// lies inside the input and inside the padded extent.
struct Tap {
  V at;
  bool inside, inPadded;
};

std::vector<Tap> tapsOf(const PoolNdCase &c, const V &o) {
  const size_t dims = c.in.size();
  std::vector<Tap> taps;
  for (const V &k : allIndices(c.kernel)) {
    Tap t{{}, true, true};
    for (size_t s = 0; s < dims; ++s) {
      int64_t q = o[2 + s] * c.strides[s] + k[s] * c.dil[s] - c.pads[s];
      t.at.push_back(q);
      t.inside = t.inside && q >= 0 && q < c.in[s];
      t.inPadded = t.inPadded && q >= -c.pads[s] && q < c.in[s] + c.pads[dims + s];
    }
    taps.push_back(t);
  }
  return taps;
}

Shape poolOut(const PoolNdCase &c, int64_t n, int64_t ch) {
  const size_t dims = c.in.size();
  V out;
  for (size_t s = 0; s < dims; ++s)
    out.push_back(shapes::pooledSize(c.in[s], c.kernel[s], c.strides[s], c.pads[s],
                                     c.pads[dims + s], c.dil[s], c.ceil));
  return withNC(n, ch, out);
}

TEST(MaxPoolNd, ValuesAndIndicesRowAndColumnMajor) {
  uint32_t seed = 401;
  for (const PoolNdCase &c : poolCases()) {
    const Shape is = withNC(2, 3, c.in), os = poolOut(c, 2, 3);
    const size_t dims = c.in.size();
    // All-negative input: a padding value of 0 would win if it took part.
    std::vector<float> x = randomFloats(count(is), -5, -1, seed++);
    for (bool columnMajor : {false, true}) {
      std::vector<float> y(count(os));
      std::vector<int64_t> idx(count(os), -7);
      maxPool(x.data(), is, Window{c.kernel, c.strides, c.pads, c.dil}, y.data(), os,
              idx.data(), columnMajor);
      std::vector<double> ref(y.size());
      std::vector<int64_t> refIdx(y.size());
      for (int64_t i = 0; i < count(os); ++i) {
        V o = unravel(i, os);
        double best = -INFINITY;
        V at;
        for (const Tap &t : tapsOf(c, o)) {
          if (!t.inside)
            continue;
          V xi{o[0], o[1]};
          xi.insert(xi.end(), t.at.begin(), t.at.end());
          double v = x[ravel(xi, is)];
          if (v > best) {
            best = v;
            at = t.at;
          }
        }
        ref[i] = best;
        // ONNX: the flat index in the whole input; the spatial part with
        // the last dim fastest, or the first (storage_order 1).
        int64_t spatial = 0;
        for (size_t s = 0; s < dims; ++s) {
          size_t d = columnMajor ? dims - 1 - s : s;
          spatial = spatial * c.in[d] + at[d];
        }
        refIdx[i] = (o[0] * is[1] + o[1]) * (count(is) / (is[0] * is[1])) + spatial;
      }
      EXPECT_TRUE(allClose(y, ref, 0, 0)) << shapeStr(is);
      EXPECT_EQ(idx, refIdx) << shapeStr(is) << " column-major " << columnMajor;
    }
  }
}

TEST(AvgPoolNd, CountIncludePadDilationsAndCeilMode) {
  uint32_t seed = 501;
  for (const PoolNdCase &c : poolCases())
    for (bool includePad : {false, true}) {
      const Shape is = withNC(1, 2, c.in), os = poolOut(c, 1, 2);
      std::vector<float> x = randomFloats(count(is), -1, 1, seed++);
      std::vector<float> y(count(os));
      avgPool(x.data(), is, Window{c.kernel, c.strides, c.pads, c.dil}, includePad, y.data(),
              os);
      std::vector<double> ref(y.size());
      for (int64_t i = 0; i < count(os); ++i) {
        V o = unravel(i, os);
        double sum = 0;
        int64_t valid = 0, padded = 0;
        for (const Tap &t : tapsOf(c, o)) {
          // Taps in the ceil-mode overhang beyond the pads never count.
          padded += t.inPadded;
          if (!t.inside)
            continue;
          V xi{o[0], o[1]};
          xi.insert(xi.end(), t.at.begin(), t.at.end());
          sum += x[ravel(xi, is)];
          ++valid;
        }
        ref[i] = valid == 0 ? 0.0 : sum / double(includePad ? padded : valid);
      }
      EXPECT_TRUE(allClose(y, ref, 1e-5, 1e-6))
          << shapeStr(is) << " include_pad " << includePad;
    }
}

// 2-D max and average pooling take a direct path (forEachWindow2d) unless
// indices are asked for; it must give the generic N-D path's bits: the
// same taps in the same order (ties of -0 and +0 included), NaN
// propagation, divisors. The generic path runs the same window as 3-D with
// a trailing dim of 1.
TEST(Pool2d, DirectPathIsTheGenericPathBitForBit) {
  uint32_t seed = 601;
  std::vector<PoolNdCase> cases = {
      {{112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false}, // ResNet's max pool
      {{9, 10}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {{9, 10}, {3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 1}, true},
      {{4, 17}, {4, 5}, {3, 4}, {2, 2, 2, 2}, {1, 3}, true},
      {{1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false}};
  for (const PoolNdCase &c : poolCases())
    if (c.in.size() == 2)
      cases.push_back(c);
  for (const PoolNdCase &c : cases) {
    const Shape is = withNC(2, 3, c.in), os = poolOut(c, 2, 3);
    Shape is3 = is, os3 = os;
    is3.push_back(1);
    os3.push_back(1);
    const Window w2{c.kernel, c.strides, c.pads, c.dil};
    const Window w3{{c.kernel[0], c.kernel[1], 1},
                    {c.strides[0], c.strides[1], 1},
                    {c.pads[0], c.pads[1], 0, c.pads[2], c.pads[3], 0},
                    {c.dil[0], c.dil[1], 1}};
    std::vector<float> x = randomFloats(count(is), -3, 3, seed++);
    // Ties of -0 and +0 at the start: which tap wins decides the sign.
    for (size_t i = 0; i < std::min<size_t>(x.size() / 4, 700); ++i)
      x[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? 0.0f : -1.0f;
    x[x.size() / 3] = NAN;
    x[x.size() / 2] = -INFINITY;
    std::vector<float> y2(count(os)), y3(count(os));
    maxPool(x.data(), is, w2, y2.data(), os, nullptr, false);
    maxPool(x.data(), is3, w3, y3.data(), os3, nullptr, false);
    EXPECT_EQ(std::memcmp(y2.data(), y3.data(), y2.size() * 4), 0) << "max " << shapeStr(is);
    for (bool includePad : {false, true}) {
      avgPool(x.data(), is, w2, includePad, y2.data(), os);
      avgPool(x.data(), is3, w3, includePad, y3.data(), os3);
      EXPECT_EQ(std::memcmp(y2.data(), y3.data(), y2.size() * 4), 0)
          << "avg " << shapeStr(is) << " include_pad " << includePad;
    }
  }
}

// The max pool over a channels-last input (the CPU backend's path between
// oneDNN convolutions kept in nhwc): every output the same taps in the same
// order, so maxPool's bits, written channels-last or plain, for any split
// of the output rows; channel counts off the vector width.
TEST(Pool2d, ChannelsLastIsTheDirectPathBitForBit) {
  uint32_t seed = 907;
  const std::vector<PoolNdCase> cases = {
      {{112, 112}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false}, // ResNet's max pool
      {{9, 10}, {2, 2}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      {{9, 10}, {3, 2}, {2, 3}, {1, 0, 2, 1}, {2, 1}, true},
      {{4, 17}, {4, 5}, {3, 4}, {2, 2, 2, 2}, {1, 3}, true},
      {{3, 3}, {2, 2}, {3, 3}, {0, 0, 3, 3}, {1, 1}, true}, // windows all padding: -inf
      {{1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, false},
      // Rows of whole windows four positions at a time (8 and 16 channels),
      // dilated, and the positions left over at each end.
      {{9, 31}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
      {{10, 40}, {2, 3}, {2, 3}, {0, 2, 1, 0}, {2, 2}, false}};
  for (const PoolNdCase &c : cases)
    for (int64_t channels : {1, 8, 16, 19, 64}) {
      const int64_t n = c.in[0] == 112 ? 1 : 2;
      const Shape is = withNC(n, channels, c.in), os = poolOut(c, n, channels);
      const Window w{c.kernel, c.strides, c.pads, c.dil};
      std::vector<float> x = randomFloats(count(is), -3, 3, seed++);
      for (size_t i = 0; i < std::min<size_t>(x.size() / 4, 700); ++i)
        x[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? 0.0f : -1.0f;
      x[x.size() / 3] = NAN;
      x[x.size() / 2] = -INFINITY;
      x[x.size() - 1] = INFINITY;
      std::vector<float> want(count(os));
      maxPool(x.data(), is, w, want.data(), os, nullptr, false);
      // x and the expected output as [N, H, W, C].
      const int64_t plane = is[2] * is[3], outPlane = os[2] * os[3];
      std::vector<float> xl(x.size()), wantLast(want.size());
      for (int64_t b = 0; b < n; ++b)
        for (int64_t ch = 0; ch < channels; ++ch) {
          for (int64_t p = 0; p < plane; ++p)
            xl[(b * plane + p) * channels + ch] = x[(b * channels + ch) * plane + p];
          for (int64_t p = 0; p < outPlane; ++p)
            wantLast[(b * outPlane + p) * channels + ch] = want[(b * channels + ch) * outPlane + p];
        }
      const int64_t rows = n * os[2];
      for (bool lastOut : {true, false})
        for (int64_t parts : {int64_t(1), int64_t(3)}) {
          std::vector<float> got(want.size(), 42.0f);
          for (int64_t i = 0; i < parts; ++i)
            maxPool2dChannelsLast(xl.data(), is, w, got.data(), os, lastOut, rows * i / parts,
                                  rows * (i + 1) / parts);
          const std::vector<float> &expect = lastOut ? wantLast : want;
          EXPECT_EQ(std::memcmp(got.data(), expect.data(), got.size() * 4), 0)
              << shapeStr(is) << (lastOut ? " channels-last" : " plain") << " out, " << parts
              << " part(s)";
        }
    }
}

TEST(ConvTransposeNd, OnnxExample) {
  // onnx backend test "convtranspose": x 3x3 of 0..8, w 2 kernels of ones.
  std::vector<float> x(9), w(18, 1.0f), y(50);
  for (int i = 0; i < 9; ++i)
    x[i] = float(i);
  convTranspose(x.data(), {1, 1, 3, 3}, w.data(), {1, 2, 3, 3}, nullptr,
                Window{{}, {1, 1}, {0, 0, 0, 0}, {1, 1}}, 1, y.data(), {1, 2, 5, 5});
  const std::vector<float> plane = {0,  1,  3,  3,  2,  3,  8,  15, 12, 7,  9,  21, 36,
                                    27, 15, 9,  20, 33, 24, 13, 6,  13, 21, 15, 8};
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 25), plane);
  EXPECT_EQ(std::vector<float>(y.begin() + 25, y.end()), plane);
}

} // namespace
