//===- Indexing.cpp - GatherElements, GatherND, ArgMax, TopK, CumSum ------===//
#include "runtime/kernels/Indexing.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <numeric>
#include <type_traits>

namespace mixprec::runtime::cpu {
namespace {

/// Product of dims [begin, end) of `s`.
int64_t span(const Shape &s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end && d < s.size(); ++d)
    p *= s[d];
  return p;
}

/// The three extents of a tensor around `axis`: before, on and after it.
struct AxisSplit {
  int64_t outer, dim, inner;
};
AxisSplit splitAt(const Shape &s, int64_t axis) {
  return {span(s, 0, axis), s[axis], span(s, axis + 1, s.size())};
}

/// Whether `i` indexes a dim of `size` (negative counting from the end).
bool inRange(int64_t i, int64_t size) { return i >= -size && i < size; }

/// a + b and a * b; integers wrap (two's complement, computed unsigned), as
/// the CUDA kernel's do.
template <typename T> T combineAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}
template <typename T> T combineMul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) *
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a * b;
}

} // namespace

BadIndex gatherElementsRaw(const void *data, const Shape &ds, const int64_t *idx, const Shape &is,
                           int64_t axis, void *out, size_t elemSize) {
  assert(ds.size() == is.size() && axis >= 0 && axis < static_cast<int64_t>(ds.size()));
  const int64_t n = numElements(is), size = ds[axis];
  // Validate everything first so a bad index leaves `out` untouched.
  for (int64_t i = 0; i < n; ++i)
    if (!inRange(idx[i], size))
      return {i, idx[i], axis, size};
  const std::vector<int64_t> dataStrides = contiguousStrides(ds);
  const int64_t rank = static_cast<int64_t>(is.size());
  std::vector<int64_t> pos(rank, 0);
  const auto *src = static_cast<const unsigned char *>(data);
  auto *dst = static_cast<unsigned char *>(out);
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t at = d == axis ? (idx[i] < 0 ? idx[i] + size : idx[i]) : pos[d];
      offset += at * dataStrides[d];
    }
    std::memcpy(dst + i * elemSize, src + offset * elemSize, elemSize);
    for (int64_t d = rank - 1; d >= 0 && ++pos[d] == is[d]; --d)
      pos[d] = 0;
  }
  return {};
}

BadIndex gatherNdRaw(const void *data, const Shape &ds, const int64_t *idx, const Shape &is,
                     int64_t batchDims, void *out, size_t elemSize) {
  const size_t b = static_cast<size_t>(batchDims);
  const int64_t m = is.back();
  const int64_t batches = span(ds, 0, b);
  const int64_t tuples = span(is, b, is.size() - 1); // index tuples per batch
  const int64_t slice = span(ds, b + m, ds.size());  // elements each tuple picks
  const int64_t block = span(ds, b, ds.size());      // data elements per batch
  // Element strides of the dims a tuple indexes, within one batch's block.
  std::vector<int64_t> strides(m);
  for (int64_t j = 0; j < m; ++j)
    strides[j] = span(ds, b + j + 1, ds.size());
  const int64_t n = batches * tuples;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t j = 0; j < m; ++j)
      if (!inRange(idx[t * m + j], ds[b + j]))
        return {t * m + j, idx[t * m + j], static_cast<int64_t>(b + j), ds[b + j]};
  const auto *src = static_cast<const unsigned char *>(data);
  auto *dst = static_cast<unsigned char *>(out);
  const size_t chunk = static_cast<size_t>(slice) * elemSize;
  if (chunk == 0)
    return {};
  for (int64_t t = 0; t < n; ++t) {
    int64_t offset = (t / std::max<int64_t>(tuples, 1)) * block;
    for (int64_t j = 0; j < m; ++j) {
      int64_t i = idx[t * m + j];
      offset += (i < 0 ? i + ds[b + j] : i) * strides[j];
    }
    std::memcpy(dst + t * chunk, src + offset * elemSize, chunk);
  }
  return {};
}

template <typename T>
void argReduce(const T *in, const Shape &s, int64_t axis, bool isMax, bool selectLast,
               int64_t *out) {
  const AxisSplit a = splitAt(s, axis);
  assert(a.dim > 0 && "argmax over an empty axis");
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i) {
      const T *line = in + o * a.dim * a.inner + i;
      int64_t best = 0;
      for (int64_t j = 1; j < a.dim; ++j) {
        T v = line[j * a.inner], b = line[best * a.inner];
        bool better = isMax ? (selectLast ? v >= b : v > b) : (selectLast ? v <= b : v < b);
        if (better)
          best = j;
      }
      out[o * a.inner + i] = best;
    }
}

template <typename T>
void topK(const T *in, const Shape &s, int64_t axis, int64_t k, bool largest, T *values,
          int64_t *indices) {
  const AxisSplit a = splitAt(s, axis);
  assert(k >= 0 && k <= a.dim);
  std::vector<int64_t> order(a.dim);
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i) {
      const T *line = in + o * a.dim * a.inner + i;
      std::iota(order.begin(), order.end(), int64_t(0));
      // Ties: the lower index first (onnxruntime's order).
      auto before = [&](int64_t x, int64_t y) {
        T vx = line[x * a.inner], vy = line[y * a.inner];
        if (vx != vy)
          return largest ? vx > vy : vx < vy;
        return x < y;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        int64_t at = (o * k + j) * a.inner + i;
        values[at] = line[order[j] * a.inner];
        indices[at] = order[j];
      }
    }
}

template <typename T>
void cumSum(const T *in, const Shape &s, int64_t axis, bool exclusive, bool reverse, T *out) {
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  const AxisSplit a = splitAt(s, axis);
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t i = 0; i < a.inner; ++i) {
      const int64_t base = o * a.dim * a.inner + i;
      Acc sum = 0;
      for (int64_t step = 0; step < a.dim; ++step) {
        int64_t j = reverse ? a.dim - 1 - step : step;
        T v = in[base + j * a.inner];
        if (!exclusive)
          sum += v;
        out[base + j * a.inner] = static_cast<T>(sum);
        if (exclusive)
          sum += v;
      }
    }
}

template <typename T>
BadIndex scatterNd(const T *data, const Shape &ds, const int64_t *idx, const Shape &is,
                   const T *updates, ScatterReduction reduction, T *out) {
  const int64_t m = is.back();
  const int64_t tuples = span(is, 0, is.size() - 1);
  const int64_t slice = span(ds, m, ds.size());
  for (int64_t t = 0; t < tuples; ++t)
    for (int64_t j = 0; j < m; ++j)
      if (!inRange(idx[t * m + j], ds[j]))
        return {t * m + j, idx[t * m + j], j, ds[j]};
  const int64_t n = numElements(ds);
  if (out != data)
    std::copy(data, data + n, out);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t j = 0; j < m; ++j) {
      int64_t i = idx[t * m + j];
      offset += (i < 0 ? i + ds[j] : i) * span(ds, j + 1, ds.size());
    }
    T *dst = out + offset;
    const T *src = updates + t * slice;
    for (int64_t e = 0; e < slice; ++e) {
      switch (reduction) {
      case ScatterReduction::None:
        dst[e] = src[e];
        break;
      case ScatterReduction::Add:
        dst[e] = combineAdd(dst[e], src[e]);
        break;
      case ScatterReduction::Mul:
        dst[e] = combineMul(dst[e], src[e]);
        break;
      case ScatterReduction::Max:
        dst[e] = std::max(dst[e], src[e]);
        break;
      case ScatterReduction::Min:
        dst[e] = std::min(dst[e], src[e]);
        break;
      }
    }
  }
  return {};
}

template BadIndex scatterNd<float>(const float *, const Shape &, const int64_t *, const Shape &,
                                   const float *, ScatterReduction, float *);
template BadIndex scatterNd<int64_t>(const int64_t *, const Shape &, const int64_t *,
                                     const Shape &, const int64_t *, ScatterReduction, int64_t *);
template void argReduce<float>(const float *, const Shape &, int64_t, bool, bool, int64_t *);
template void argReduce<int64_t>(const int64_t *, const Shape &, int64_t, bool, bool, int64_t *);
template void topK<float>(const float *, const Shape &, int64_t, int64_t, bool, float *,
                          int64_t *);
template void topK<int64_t>(const int64_t *, const Shape &, int64_t, int64_t, bool, int64_t *,
                            int64_t *);
template void cumSum<float>(const float *, const Shape &, int64_t, bool, bool, float *);
template void cumSum<int64_t>(const int64_t *, const Shape &, int64_t, bool, bool, int64_t *);
// The interpreter's FP64 mode.
template BadIndex scatterNd<double>(const double *, const Shape &, const int64_t *, const Shape &,
                                    const double *, ScatterReduction, double *);
template void argReduce<double>(const double *, const Shape &, int64_t, bool, bool, int64_t *);
template void topK<double>(const double *, const Shape &, int64_t, int64_t, bool, double *,
                           int64_t *);
template void cumSum<double>(const double *, const Shape &, int64_t, bool, bool, double *);

} // namespace mixprec::runtime::cpu
