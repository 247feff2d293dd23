//===- StridedLoop.h - Coalesced strided iteration (internal) ---*- C++ -*-===//
//
// Shared by broadcasting, reductions, transpose, slice and expand: describe
// every operand by per-dim element strides over one iteration shape, merge
// dims that are jointly contiguous, and hand the innermost run to a callback.
// This keeps index arithmetic out of the per-element loops: the callback gets
// base offsets and one stride per operand for a contiguous row.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_STRIDEDLOOP_H
#define MIXPREC_RUNTIME_CPU_STRIDEDLOOP_H

#include "runtime/kernels/Kernels.h"

#include <array>
#include <cassert>
#include <cstdint>
#include <vector>

namespace mixprec::runtime::cpu::detail {

/// Strides (in elements) of `in` viewed as broadcast to `out` (right-aligned,
/// 0 on broadcast and missing leading dims).
inline std::vector<int64_t> broadcastStrides(const Shape &in,
                                             const Shape &out) {
  assert(in.size() <= out.size());
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  size_t off = out.size() - in.size();
  for (size_t i = in.size(); i-- > 0;) {
    assert(in[i] == out[off + i] || in[i] == 1);
    strides[off + i] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return strides;
}

template <int K> struct StridedPlan {
  std::vector<int64_t> dims; // outermost first; never contains 1s
  std::vector<std::array<int64_t, K>> strides;
  bool empty = false; // some dim is 0: nothing to do

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
};

/// Builds a plan over `shape` with one stride vector (aligned to `shape`) per
/// operand. Size-1 dims are dropped and adjacent dims merged when every
/// operand walks them as one contiguous run (stride[i] == stride[i+1] *
/// dim[i+1]); negative strides merge too.
template <int K>
StridedPlan<K> makePlan(const Shape &shape,
                        const std::array<const std::vector<int64_t> *, K> &st) {
  StridedPlan<K> p;
  for (int k = 0; k < K; ++k)
    assert(st[k]->size() == shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    assert(shape[i] >= 0);
    if (shape[i] == 0)
      p.empty = true;
    if (shape[i] == 1)
      continue;
    std::array<int64_t, K> s;
    for (int k = 0; k < K; ++k)
      s[k] = (*st[k])[i];
    if (!p.dims.empty()) {
      bool mergeable = true;
      for (int k = 0; k < K; ++k)
        mergeable &= p.strides.back()[k] == s[k] * shape[i];
      if (mergeable) {
        p.dims.back() *= shape[i];
        p.strides.back() = s;
        continue;
      }
    }
    p.dims.push_back(shape[i]);
    p.strides.push_back(s);
  }
  return p;
}

/// Calls fn(offsets, n, innerStrides) for each innermost run of the plan,
/// where offsets[k] is operand k's element offset of the run start (relative
/// to `base`) and innerStrides[k] its stride along the run.
template <int K, typename Fn>
void forEachRow(const StridedPlan<K> &p, const std::array<int64_t, K> &base,
                Fn &&fn) {
  if (p.empty)
    return;
  std::array<int64_t, K> off = base;
  if (p.dims.empty()) {
    std::array<int64_t, K> zero{};
    fn(off, int64_t(1), zero);
    return;
  }
  const int64_t r = p.rank();
  const int64_t n = p.dims[r - 1];
  const std::array<int64_t, K> inner = p.strides[r - 1];
  int64_t outer = 1;
  for (int64_t d = 0; d + 1 < r; ++d)
    outer *= p.dims[d];
  std::vector<int64_t> idx(r > 1 ? r - 1 : 0, 0);
  for (int64_t o = 0; o < outer; ++o) {
    fn(off, n, inner);
    // Odometer over the outer dims, updating offsets incrementally.
    for (int64_t d = r - 2; d >= 0; --d) {
      if (++idx[d] < p.dims[d]) {
        for (int k = 0; k < K; ++k)
          off[k] += p.strides[d][k];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < K; ++k)
        off[k] -= p.strides[d][k] * (p.dims[d] - 1);
    }
  }
}

/// Like forEachRow but hands out 2-D tiles: fn(offsets, rows, cols,
/// rowStrides, colStrides) for each combination of the dims outside the last
/// two. Requires rank >= 2.
template <int K, typename Fn>
void forEachMatrix(const StridedPlan<K> &p, Fn &&fn) {
  assert(p.rank() >= 2 && !p.empty);
  const int64_t r = p.rank();
  std::array<int64_t, K> off{};
  int64_t outer = 1;
  for (int64_t d = 0; d + 2 < r; ++d)
    outer *= p.dims[d];
  std::vector<int64_t> idx(r - 2, 0);
  for (int64_t o = 0; o < outer; ++o) {
    fn(off, p.dims[r - 2], p.dims[r - 1], p.strides[r - 2], p.strides[r - 1]);
    for (int64_t d = r - 3; d >= 0; --d) {
      if (++idx[d] < p.dims[d]) {
        for (int k = 0; k < K; ++k)
          off[k] += p.strides[d][k];
        break;
      }
      idx[d] = 0;
      for (int k = 0; k < K; ++k)
        off[k] -= p.strides[d][k] * (p.dims[d] - 1);
    }
  }
}

} // namespace mixprec::runtime::cpu::detail

#endif // MIXPREC_RUNTIME_CPU_STRIDEDLOOP_H
