#include "tests/unit/cpu/TestUtil.h"

#include <algorithm>
#include <numeric>

using namespace mixprec::runtime::cpu;
using namespace mixprec::runtime::cpu::testing;

namespace {

template <typename T> std::vector<T> iota(int64_t n, T start = T(0)) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[i] = static_cast<T>(start + static_cast<T>(i));
  return v;
}

template <typename T>
std::vector<T> refTranspose(const std::vector<T> &x, const Shape &s,
                            const std::vector<int64_t> &perm) {
  Shape os(s.size());
  for (size_t i = 0; i < s.size(); ++i)
    os[i] = s[perm[i]];
  std::vector<T> y(x.size());
  for (int64_t i = 0; i < count(os); ++i) {
    auto oi = unravel(i, os);
    std::vector<int64_t> ii(s.size());
    for (size_t d = 0; d < s.size(); ++d)
      ii[perm[d]] = oi[d];
    y[i] = x[ravel(ii, s)];
  }
  return y;
}

TEST(Transpose, AllPermutationsOfRank4) {
  const Shape s = {2, 3, 4, 5};
  std::vector<float> xf = randomFloats(count(s), -1, 1, 71);
  std::vector<int64_t> xi = iota<int64_t>(count(s), int64_t(1) << 40);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    std::vector<float> yf(xf.size());
    transpose(xf.data(), s, perm, yf.data());
    EXPECT_EQ(yf, refTranspose(xf, s, perm)) << shapeStr(perm);
    std::vector<int64_t> yi(xi.size());
    transpose(xi.data(), s, perm, yi.data());
    EXPECT_EQ(yi, refTranspose(xi, s, perm)) << shapeStr(perm);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(Transpose, LargeTiledAndOddElementSizes) {
  // Big enough for the tiled 2-D path, with ragged edges.
  struct Case {
    Shape s;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{67, 45}, {1, 0}},
      {{3, 40, 50}, {0, 2, 1}},
      {{2, 12, 33, 64}, {0, 2, 1, 3}}, // attention head split: memcpy rows
      {{2, 12, 33, 64}, {0, 1, 3, 2}}, // key transpose: tiled
      {{1, 1, 5}, {2, 0, 1}},
      {{}, {}},
  };
  for (const auto &c : cases) {
    std::vector<uint16_t> x16 = iota<uint16_t>(count(c.s), 3);
    std::vector<uint16_t> y16(x16.size());
    transpose(x16.data(), c.s, c.perm, y16.data());
    EXPECT_EQ(y16, refTranspose(x16, c.s, c.perm)) << shapeStr(c.s);
    std::vector<uint8_t> x8(x16.begin(), x16.end());
    std::vector<uint8_t> y8(x8.size());
    transpose(x8.data(), c.s, c.perm, y8.data());
    EXPECT_EQ(y8, refTranspose(x8, c.s, c.perm)) << shapeStr(c.s);
    std::vector<double> xd(x16.begin(), x16.end());
    std::vector<double> yd(xd.size());
    transpose(xd.data(), c.s, c.perm, yd.data());
    EXPECT_EQ(yd, refTranspose(xd, c.s, c.perm)) << shapeStr(c.s);
  }
}

TEST(Concat, EveryAxisIncludingEmptyInputs) {
  const Shape base = {2, 3, 4};
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    std::vector<Shape> shapes = {base, base, base};
    shapes[0][a] = 1;
    shapes[1][a] = 0;
    shapes[2][a] = 3;
    std::vector<std::vector<float>> data;
    float start = 0;
    for (const Shape &s : shapes) {
      data.push_back(iota<float>(count(s), start));
      start += 1000;
    }
    Shape os = base;
    os[a] = 4;
    std::vector<float> out(count(os), -1);
    concat<float>({data[0].data(), data[1].data(), data[2].data()}, shapes,
                  axis, out.data());
    for (int64_t i = 0; i < count(os); ++i) {
      auto idx = unravel(i, os);
      const int which = idx[a] < 1 ? 0 : 2;
      if (which == 2)
        idx[a] -= 1;
      ASSERT_EQ(out[i], data[which][ravel(idx, shapes[which])])
          << "axis " << axis << " i " << i;
    }
  }
}

TEST(Concat, Int64Rank1) {
  std::vector<int64_t> a = {1, 2}, b = {3}, c = {4, 5, 6};
  std::vector<int64_t> out(6);
  concat<int64_t>({a.data(), b.data(), c.data()}, {{2}, {1}, {3}}, 0,
                  out.data());
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
}

TEST(Slice, PositiveAndNegativeSteps) {
  const Shape s = {4, 5, 6};
  std::vector<float> x = iota<float>(count(s));
  struct Case {
    std::vector<int64_t> starts, steps;
    Shape out;
  };
  const std::vector<Case> cases = {
      {{0, 0, 0}, {1, 1, 1}, {4, 5, 6}},    // identity
      {{1, 0, 2}, {1, 1, 1}, {2, 5, 3}},    // contiguous box
      {{3, 4, 5}, {-1, -1, -1}, {4, 5, 6}}, // full reversal
      {{0, 4, 1}, {2, -2, 2}, {2, 3, 3}},   // mixed steps
      {{3, 0, 5}, {-3, 1, -5}, {2, 5, 2}},  // large negative steps
      {{0, 0, 0}, {1, 1, 1}, {4, 0, 6}},    // empty
      {{2, 1, 0}, {1, 1, 1}, {1, 1, 6}},    // single row
  };
  for (const auto &c : cases) {
    std::vector<float> out(count(c.out), -1);
    slice(x.data(), s, c.starts, c.steps, c.out, out.data());
    for (int64_t i = 0; i < count(c.out); ++i) {
      auto oi = unravel(i, c.out);
      std::vector<int64_t> ii(3);
      for (int d = 0; d < 3; ++d)
        ii[d] = c.starts[d] + oi[d] * c.steps[d];
      ASSERT_EQ(out[i], x[ravel(ii, s)])
          << shapeStr(c.starts) << shapeStr(c.steps);
    }
  }
  // int64 with a negative step on a 1-D tensor.
  std::vector<int64_t> xi = iota<int64_t>(10);
  std::vector<int64_t> yi(4);
  slice(xi.data(), {10}, {9}, {-3}, {4}, yi.data());
  EXPECT_EQ(yi, (std::vector<int64_t>{9, 6, 3, 0}));
}

TEST(Gather, AxesAndNegativeIndices) {
  const Shape ds = {3, 4, 5};
  std::vector<float> data = iota<float>(count(ds));
  struct Case {
    int64_t axis;
    std::vector<int64_t> idx;
    Shape is;
  };
  const std::vector<Case> cases = {
      {0, {2, -1, 0, -3}, {2, 2}},
      {1, {-4, 3, 1}, {3}},
      {-1, {4, -5, 2, 2, -1, 0}, {3, 2}},
      {2, {-2}, {}}, // scalar index drops the axis
      {1, {}, {0}},  // no indices
  };
  for (const auto &c : cases) {
    const int64_t a = c.axis < 0 ? c.axis + 3 : c.axis;
    Shape os(ds.begin(), ds.begin() + a);
    os.insert(os.end(), c.is.begin(), c.is.end());
    os.insert(os.end(), ds.begin() + a + 1, ds.end());
    std::vector<float> out(count(os), -1);
    ASSERT_TRUE(
        gather(data.data(), ds, c.idx.data(), c.is, c.axis, out.data()));
    for (int64_t i = 0; i < count(os); ++i) {
      auto oi = unravel(i, os);
      std::vector<int64_t> iIdx(oi.begin() + a, oi.begin() + a + c.is.size());
      int64_t j = c.idx[ravel(iIdx, c.is)];
      if (j < 0)
        j += ds[a];
      std::vector<int64_t> di(oi.begin(), oi.begin() + a);
      di.push_back(j);
      di.insert(di.end(), oi.begin() + a + c.is.size(), oi.end());
      ASSERT_EQ(out[i], data[ravel(di, ds)]) << "axis " << c.axis;
    }
  }
}

TEST(Gather, OutOfRangeFailsWithoutWriting) {
  std::vector<int64_t> data = {10, 20, 30};
  std::vector<int64_t> out(2, -1);
  for (std::vector<int64_t> idx :
       {std::vector<int64_t>{0, 3}, {-4, 0}, {1, INT64_MIN}}) {
    EXPECT_FALSE(gather(data.data(), {3}, idx.data(), {2}, 0, out.data()));
    EXPECT_EQ(out, (std::vector<int64_t>{-1, -1}));
  }
  std::vector<int64_t> ok = {-3, 2};
  EXPECT_TRUE(gather(data.data(), {3}, ok.data(), {2}, 0, out.data()));
  EXPECT_EQ(out, (std::vector<int64_t>{10, 30}));
}

TEST(Expand, BroadcastsLikeNumpy) {
  for (const auto &[s, os] :
       std::vector<std::pair<Shape, Shape>>{{{3, 1}, {2, 3, 4}},
                                            {{}, {2, 2}},
                                            {{4}, {3, 4}},
                                            {{1, 4}, {4, 4}}}) {
    std::vector<float> x = iota<float>(count(s), 1);
    std::vector<float> y(count(os));
    expand(x.data(), s, y.data(), os);
    for (int64_t i = 0; i < count(os); ++i)
      ASSERT_EQ(y[i], x[broadcastIndex(unravel(i, os), s)]);
  }
}

} // namespace
