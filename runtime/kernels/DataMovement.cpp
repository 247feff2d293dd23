//===- DataMovement.cpp - Transpose, Concat, Slice, Gather, Expand --------===//
//
// These kernels only move bytes, so they are written once per element size
// (1/2/4/8/16 bytes) and shared by every element type through the templates
// in Kernels.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/Kernels.h"
#include "runtime/kernels/StridedLoop.h"

#include <algorithm>
#include <cassert>
#include <cstring>

namespace mixprec::runtime::cpu::detail {

namespace {

struct Bytes16 {
  unsigned char b[16];
};

// Invokes fn(U{}) with an unsigned type of exactly `elemSize` bytes.
template <typename Fn> void dispatchElemSize(size_t elemSize, Fn &&fn) {
  switch (elemSize) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  case 8:
    return fn(uint64_t{});
  case 16:
    return fn(Bytes16{});
  default:
    assert(false && "unsupported element size");
  }
}

// Copies one run of n elements; dst is contiguous.
template <typename U>
inline void copyRun(U *dst, const U *src, int64_t n, int64_t srcStride) {
  if (srcStride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(U));
  } else if (srcStride == 0) {
    std::fill(dst, dst + n, src[0]);
  } else {
    for (int64_t i = 0; i < n; ++i)
      dst[i] = src[i * srcStride];
  }
}

// Copies `src` (described per output dim by `srcStrides`, starting at
// `srcBase`) into the contiguous `dst` of shape `os`.
template <typename U>
void stridedCopy(const U *src, int64_t srcBase,
                 const std::vector<int64_t> &srcStrides, const Shape &os,
                 U *dst) {
  std::vector<int64_t> dstStrides = contiguousStrides(os);
  auto plan = makePlan<2>(os, {&dstStrides, &srcStrides});
  if (plan.empty)
    return;
  const int64_t r = plan.rank();
  // Transpose-like tail (the source is contiguous along the second-to-last
  // dim but not the last): copy in square tiles so neither side streams
  // through memory with a large stride.
  if (r >= 2 && plan.strides[r - 1][1] != 1 && plan.strides[r - 1][1] != 0 &&
      plan.strides[r - 2][1] == 1 && plan.dims[r - 1] >= 8 &&
      plan.dims[r - 2] >= 8) {
    constexpr int64_t kTile = 32;
    forEachMatrix<2>(plan, [&](const std::array<int64_t, 2> &off, int64_t rows,
                               int64_t cols, const std::array<int64_t, 2> &rs,
                               const std::array<int64_t, 2> &cs) {
      U *d = dst + off[0];
      const U *s = src + srcBase + off[1];
      for (int64_t i0 = 0; i0 < rows; i0 += kTile)
        for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
          const int64_t i1 = std::min(rows, i0 + kTile);
          const int64_t j1 = std::min(cols, j0 + kTile);
          for (int64_t j = j0; j < j1; ++j)
            for (int64_t i = i0; i < i1; ++i)
              d[i * rs[0] + j * cs[0]] = s[i * rs[1] + j * cs[1]];
        }
    });
    return;
  }
  forEachRow<2>(plan, {0, srcBase},
                [&](const std::array<int64_t, 2> &off, int64_t n,
                    const std::array<int64_t, 2> &st) {
                  assert(st[0] == 1 || n == 1);
                  copyRun(dst + off[0], src + off[1], n, st[1]);
                });
}

} // namespace

void transposeRaw(const void *in, const Shape &s,
                  const std::vector<int64_t> &perm, void *out,
                  size_t elemSize) {
  const size_t rank = s.size();
  assert(perm.size() == rank);
#ifndef NDEBUG
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    assert(p >= 0 && static_cast<size_t>(p) < rank && !seen[p]);
    seen[p] = true;
  }
#endif
  std::vector<int64_t> inStrides = contiguousStrides(s);
  Shape os(rank);
  std::vector<int64_t> srcStrides(rank);
  for (size_t i = 0; i < rank; ++i) {
    os[i] = s[perm[i]];
    srcStrides[i] = inStrides[perm[i]];
  }
  dispatchElemSize(elemSize, [&](auto tag) {
    using U = decltype(tag);
    stridedCopy(static_cast<const U *>(in), 0, srcStrides, os,
                static_cast<U *>(out));
  });
}

void sliceRaw(const void *in, const Shape &s,
              const std::vector<int64_t> &starts,
              const std::vector<int64_t> &steps, const Shape &outShape,
              void *out, size_t elemSize) {
  const size_t rank = s.size();
  assert(starts.size() == rank && steps.size() == rank &&
         outShape.size() == rank);
  std::vector<int64_t> inStrides = contiguousStrides(s);
  std::vector<int64_t> srcStrides(rank);
  int64_t base = 0;
  for (size_t d = 0; d < rank; ++d) {
    assert(steps[d] != 0 && outShape[d] >= 0);
    if (outShape[d] > 0) {
      const int64_t last = starts[d] + (outShape[d] - 1) * steps[d];
      (void)last;
      assert(starts[d] >= 0 && starts[d] < s[d] && "slice start out of range");
      assert(last >= 0 && last < s[d] && "slice end out of range");
    }
    base += starts[d] * inStrides[d];
    srcStrides[d] = steps[d] * inStrides[d];
  }
  if (numElements(outShape) == 0)
    return;
  dispatchElemSize(elemSize, [&](auto tag) {
    using U = decltype(tag);
    stridedCopy(static_cast<const U *>(in), base, srcStrides, outShape,
                static_cast<U *>(out));
  });
}

void expandRaw(const void *in, const Shape &s, void *out, const Shape &os,
               size_t elemSize) {
  std::vector<int64_t> srcStrides = broadcastStrides(s, os);
  dispatchElemSize(elemSize, [&](auto tag) {
    using U = decltype(tag);
    stridedCopy(static_cast<const U *>(in), 0, srcStrides, os,
                static_cast<U *>(out));
  });
}

void concatRaw(const std::vector<const void *> &ins,
               const std::vector<Shape> &shapes, int64_t axis, void *out,
               size_t elemSize) {
  assert(!ins.empty() && ins.size() == shapes.size());
  const int64_t rank = static_cast<int64_t>(shapes[0].size());
  axis = normalizeAxis(axis, rank);
  assert(axis >= 0 && "concat axis out of range");
  int64_t outer = 1, inner = 1, total = 0;
  for (int64_t i = 0; i < axis; ++i)
    outer *= shapes[0][i];
  for (int64_t i = axis + 1; i < rank; ++i)
    inner *= shapes[0][i];
  for (const Shape &sh : shapes) {
    assert(static_cast<int64_t>(sh.size()) == rank);
#ifndef NDEBUG
    for (int64_t i = 0; i < rank; ++i)
      assert(i == axis || sh[i] == shapes[0][i]);
#endif
    total += sh[axis];
  }
  const size_t outRow = static_cast<size_t>(total * inner) * elemSize;
  auto *dst = static_cast<unsigned char *>(out);
  size_t colOffset = 0;
  // Input-major order reads each input once, sequentially.
  for (size_t k = 0; k < ins.size(); ++k) {
    const size_t chunk =
        static_cast<size_t>(shapes[k][axis] * inner) * elemSize;
    const auto *src = static_cast<const unsigned char *>(ins[k]);
    if (chunk != 0)
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(dst + o * outRow + colOffset, src + o * chunk, chunk);
    colOffset += chunk;
  }
}

bool gatherRaw(const void *data, const Shape &ds, const int64_t *idx,
               const Shape &is, int64_t axis, void *out, size_t elemSize) {
  const int64_t rank = static_cast<int64_t>(ds.size());
  axis = normalizeAxis(axis, rank);
  assert(axis >= 0 && "gather axis out of range");
  const int64_t axisDim = ds[axis];
  const int64_t nIdx = numElements(is);
  // Validate everything first so a bad index leaves `out` untouched.
  for (int64_t i = 0; i < nIdx; ++i)
    if (idx[i] < -axisDim || idx[i] >= axisDim)
      return false;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= ds[i];
  for (int64_t i = axis + 1; i < rank; ++i)
    inner *= ds[i];
  const size_t chunk = static_cast<size_t>(inner) * elemSize;
  const auto *src = static_cast<const unsigned char *>(data);
  auto *dst = static_cast<unsigned char *>(out);
  if (chunk == 0)
    return true;
  for (int64_t o = 0; o < outer; ++o) {
    const unsigned char *block = src + o * axisDim * chunk;
    for (int64_t i = 0; i < nIdx; ++i) {
      const int64_t j = idx[i] < 0 ? idx[i] + axisDim : idx[i];
      std::memcpy(dst, block + j * chunk, chunk);
      dst += chunk;
    }
  }
  return true;
}

} // namespace mixprec::runtime::cpu::detail
