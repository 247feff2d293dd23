#include "tests/unit/cpu/TestUtil.h"

using namespace mixprec::runtime::cpu;
using namespace mixprec::runtime::cpu::testing;

namespace {

// Softmax reference: for every element, walk its own slice along `axis`.
std::vector<double> refSoftmax(const std::vector<float> &x, const Shape &s,
                               int64_t axis, bool log) {
  std::vector<double> ref(x.size());
  for (int64_t i = 0; i < count(s); ++i) {
    auto idx = unravel(i, s);
    double mx = -INFINITY;
    for (int64_t j = 0; j < s[axis]; ++j) {
      auto t = idx;
      t[axis] = j;
      mx = std::max(mx, double(x[ravel(t, s)]));
    }
    double sum = 0;
    for (int64_t j = 0; j < s[axis]; ++j) {
      auto t = idx;
      t[axis] = j;
      sum += std::exp(x[ravel(t, s)] - mx);
    }
    ref[i] = log ? x[i] - mx - std::log(sum) : std::exp(x[i] - mx) / sum;
  }
  return ref;
}

TEST(Softmax, EveryAxisBothFlavours) {
  const Shape s = {2, 3, 4, 5};
  std::vector<float> x = randomFloats(count(s), -4, 4, 21);
  for (int64_t axis = -4; axis < 4; ++axis) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    std::vector<float> y(x.size());
    softmax(x.data(), s, axis, y.data());
    EXPECT_TRUE(allClose(y, refSoftmax(x, s, a, false), 1e-5, 1e-7))
        << "axis " << axis;
    logSoftmax(x.data(), s, axis, y.data());
    EXPECT_TRUE(allClose(y, refSoftmax(x, s, a, true), 1e-5, 1e-6))
        << "axis " << axis;
  }
}

TEST(Softmax, LargeLogitsAreStableAndInPlaceWorks) {
  const Shape s = {3, 7};
  std::vector<float> x = randomFloats(count(s), 990, 1010, 22);
  x[3] = -1000.0f;
  std::vector<double> ref = refSoftmax(x, s, 1, false);
  std::vector<double> refLog = refSoftmax(x, s, 1, true);
  std::vector<float> y = x;
  softmax(y.data(), s, 1, y.data());
  EXPECT_TRUE(allClose(y, ref, 1e-5, 1e-30));
  y = x;
  logSoftmax(y.data(), s, -1, y.data());
  EXPECT_TRUE(allClose(y, refLog, 1e-5, 1e-4));
}

TEST(Softmax, LargeLogitsOnAnInnerAxis) {
  // The reduced axis is not innermost, so the per-column max path is used;
  // without the shift exp(1000) overflows to inf and the result is NaN.
  const Shape s = {2, 5, 3};
  std::vector<float> x = randomFloats(count(s), 995, 1005, 23);
  for (int64_t o = 0; o < 2; ++o) // first slice small: max is found later
    for (int64_t j = 0; j < 3; ++j)
      x[o * 15 + j] = 0.0f;
  std::vector<float> y(x.size());
  softmax(x.data(), s, 1, y.data());
  EXPECT_TRUE(allClose(y, refSoftmax(x, s, 1, false), 1e-5, 1e-30));
  logSoftmax(x.data(), s, -2, y.data());
  EXPECT_TRUE(allClose(y, refSoftmax(x, s, 1, true), 1e-5, 1e-4));
}

TEST(Softmax, ScalarAndSizeOneAxis) {
  float x = 3.0f, y = 0.0f;
  softmax(&x, {}, 0, &y);
  EXPECT_EQ(y, 1.0f);
  std::vector<float> v = {1, 2, 3}, out(3);
  softmax(v.data(), {3, 1}, 1, out.data());
  for (float o : out)
    EXPECT_EQ(o, 1.0f);
  logSoftmax(v.data(), {3, 1}, 1, out.data());
  for (float o : out)
    EXPECT_EQ(o, 0.0f);
}

void refLayerNorm(const std::vector<float> &x, const Shape &s, int64_t axis,
                  const float *scale, const float *bias, double eps, bool rms,
                  std::vector<double> &ref) {
  int64_t outer = 1, norm = 1;
  for (int64_t i = 0; i < int64_t(s.size()); ++i)
    (i < axis ? outer : norm) *= s[i];
  ref.resize(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    double mean = 0, var = 0, ms = 0;
    for (int64_t i = 0; i < norm; ++i)
      mean += x[o * norm + i];
    mean /= norm;
    for (int64_t i = 0; i < norm; ++i) {
      var += (x[o * norm + i] - mean) * (x[o * norm + i] - mean);
      ms += double(x[o * norm + i]) * x[o * norm + i];
    }
    var /= norm;
    ms /= norm;
    for (int64_t i = 0; i < norm; ++i) {
      const double xv = x[o * norm + i];
      double y =
          rms ? xv / std::sqrt(ms + eps) : (xv - mean) / std::sqrt(var + eps);
      if (scale)
        y *= scale[i];
      if (bias)
        y += bias[i];
      ref[o * norm + i] = y;
    }
  }
}

TEST(LayerNorm, AxesScaleBias) {
  const Shape s = {2, 3, 4, 6};
  // An offset mean exercises the centered-variance computation.
  std::vector<float> x = randomFloats(count(s), 9, 11, 31);
  for (int64_t axis : {1, 2, 3, -1, -2}) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    int64_t norm = 1;
    for (int64_t i = a; i < 4; ++i)
      norm *= s[i];
    std::vector<float> scale = randomFloats(norm, 0.5, 1.5, 32);
    std::vector<float> bias = randomFloats(norm, -1, 1, 33);
    for (bool withBias : {true, false}) {
      std::vector<float> y(x.size());
      layerNorm(x.data(), s, axis, scale.data(),
                withBias ? bias.data() : nullptr, 1e-5f, y.data());
      std::vector<double> ref;
      refLayerNorm(x, s, a, scale.data(), withBias ? bias.data() : nullptr,
                   1e-5f, false, ref);
      EXPECT_TRUE(allClose(y, ref, 1e-5, 1e-5))
          << "axis " << axis << " bias " << withBias;
    }
  }
}

TEST(LayerNorm, ConstantRowUsesEps) {
  std::vector<float> x(8, 2.0f), scale(8, 1.0f), y(8);
  layerNorm(x.data(), {1, 8}, 1, scale.data(), nullptr, 1e-5f, y.data());
  for (float v : y)
    EXPECT_EQ(v, 0.0f);
}

TEST(RmsNorm, WithAndWithoutScale) {
  const Shape s = {3, 4, 8};
  std::vector<float> x = randomFloats(count(s), -2, 2, 41);
  for (int64_t axis : {1, 2, -1}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    int64_t norm = 1;
    for (int64_t i = a; i < 3; ++i)
      norm *= s[i];
    std::vector<float> scale = randomFloats(norm, 0.5, 1.5, 42);
    for (bool withScale : {true, false}) {
      std::vector<float> y(x.size());
      rmsNorm(x.data(), s, axis, withScale ? scale.data() : nullptr, 1e-6f,
              y.data());
      std::vector<double> ref;
      refLayerNorm(x, s, a, withScale ? scale.data() : nullptr, nullptr, 1e-6f,
                   true, ref);
      EXPECT_TRUE(allClose(y, ref, 1e-5, 1e-6)) << "axis " << axis;
    }
  }
}

TEST(BatchNorm, InferenceFormula) {
  for (const Shape &s : {Shape{2, 3, 4, 5}, Shape{4, 3}, Shape{1, 3, 7}}) {
    const int64_t c = s[1];
    int64_t spatial = count(s) / (s[0] * c);
    std::vector<float> x = randomFloats(count(s), -3, 3, 51);
    std::vector<float> scale = randomFloats(c, 0.5, 2, 52);
    std::vector<float> bias = randomFloats(c, -1, 1, 53);
    std::vector<float> mean = randomFloats(c, -1, 1, 54);
    std::vector<float> var = randomFloats(c, 0.1f, 3, 55);
    std::vector<float> y(x.size());
    const float eps = 1e-3f;
    batchNormInference(x.data(), s, scale.data(), bias.data(), mean.data(),
                       var.data(), eps, y.data());
    std::vector<double> ref(x.size()), tol(x.size());
    for (int64_t i = 0; i < count(s); ++i) {
      const int64_t ch = (i / spatial) % c;
      const double inv = 1 / std::sqrt(double(var[ch]) + eps);
      ref[i] = (x[i] - double(mean[ch])) * inv * scale[ch] + bias[ch];
      // The folded x*a + b form loses a few ulps of the larger terms.
      tol[i] =
          1e-6 * (std::fabs(x[i] * inv * scale[ch]) +
                  std::fabs(mean[ch] * inv * scale[ch]) + std::fabs(bias[ch])) +
          1e-7;
    }
    EXPECT_TRUE(allCloseScaled(y, ref, tol)) << shapeStr(s);
  }
}

} // namespace
