//===- TestUtil.h - Helpers for the CPU kernel tests ------------*- C++ -*-===//
//
// References in these tests are deliberately naive: they unravel every flat
// index into a multi-index and compute in double, sharing no code with the
// strided/coalesced machinery the kernels use.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TESTS_UNIT_CPU_TESTUTIL_H
#define MIXPREC_TESTS_UNIT_CPU_TESTUTIL_H

#include "runtime/kernels/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mixprec::runtime::cpu::testing {

using Shape = std::vector<int64_t>;

inline int64_t count(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

inline std::vector<float> randomFloats(int64_t n, float lo, float hi,
                                       uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(rng);
  return v;
}

/// Multi-index of flat index `flat` in row-major `s`.
inline std::vector<int64_t> unravel(int64_t flat, const Shape &s) {
  std::vector<int64_t> idx(s.size());
  for (size_t i = s.size(); i-- > 0;) {
    idx[i] = s[i] == 0 ? 0 : flat % s[i];
    flat = s[i] == 0 ? 0 : flat / s[i];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t> &idx, const Shape &s) {
  int64_t flat = 0;
  for (size_t i = 0; i < s.size(); ++i)
    flat = flat * s[i] + idx[i];
  return flat;
}

/// Flat index into `in` for output multi-index `outIdx` under numpy
/// broadcasting (right-aligned; size-1 dims pinned to 0).
inline int64_t broadcastIndex(const std::vector<int64_t> &outIdx,
                              const Shape &in) {
  const size_t off = outIdx.size() - in.size();
  std::vector<int64_t> idx(in.size());
  for (size_t i = 0; i < in.size(); ++i)
    idx[i] = in[i] == 1 ? 0 : outIdx[off + i];
  return ravel(idx, in);
}

inline std::string shapeStr(const Shape &s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i)
    r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

/// |got - ref| <= atol + rtol * |ref| elementwise (NaN must match NaN, inf
/// must match exactly). Stops after a few failures to keep logs readable.
inline ::testing::AssertionResult allClose(const std::vector<float> &got,
                                           const std::vector<double> &ref,
                                           double rtol, double atol) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure()
           << "size " << got.size() << " vs " << ref.size();
  int failures = 0;
  ::testing::AssertionResult res = ::testing::AssertionSuccess();
  std::string msg;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], r = ref[i];
    bool ok;
    if (std::isnan(r))
      ok = std::isnan(g);
    else if (std::isinf(r))
      ok = g == r;
    else
      ok = std::fabs(g - r) <= atol + rtol * std::fabs(r);
    if (!ok && failures++ < 5)
      msg += " [" + std::to_string(i) + "] got " + std::to_string(g) +
             " want " + std::to_string(r) + ";";
  }
  if (failures)
    return ::testing::AssertionFailure() << failures << " mismatches:" << msg;
  return res;
}

/// Per-element absolute tolerance: |got - ref| <= tol[i].
inline ::testing::AssertionResult
allCloseScaled(const std::vector<float> &got, const std::vector<double> &ref,
               const std::vector<double> &tol) {
  if (got.size() != ref.size() || tol.size() != ref.size())
    return ::testing::AssertionFailure() << "size mismatch";
  int failures = 0;
  std::string msg;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - ref[i]) <= tol[i]) && failures++ < 5)
      msg += " [" + std::to_string(i) + "] got " + std::to_string(got[i]) +
             " want " + std::to_string(ref[i]) + ";";
  if (failures)
    return ::testing::AssertionFailure() << failures << " mismatches:" << msg;
  return ::testing::AssertionSuccess();
}

} // namespace mixprec::runtime::cpu::testing

#endif // MIXPREC_TESTS_UNIT_CPU_TESTUTIL_H
