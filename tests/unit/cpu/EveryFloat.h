//===- EveryFloat.h - every FP32 input of a function, on two threads -*- C++ -*-===//
//
// The exhaustive sweeps of ErfTest and ExpTest: every FP32 bit pattern
// (every 257th in a sanitizer build, where a full sweep would take
// minutes and every 31st still took 2 of CI's: 16.7 million inputs reach
// every code path the sanitizers check), in blocks, half of them on a
// second thread.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TESTS_UNIT_CPU_EVERYFLOAT_H
#define MIXPREC_TESTS_UNIT_CPU_EVERYFLOAT_H

#include "tests/unit/FloatBits.h"

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace mixprec::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr uint64_t kEveryFloatStride = 257;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
constexpr uint64_t kEveryFloatStride = 257;
#else
constexpr uint64_t kEveryFloatStride = 1;
#endif
#else
constexpr uint64_t kEveryFloatStride = 1;
#endif

/// The most values a block holds.
constexpr size_t kEveryFloatBlock = size_t(1) << 16;

/// Calls block(xs, n, part) for consecutive blocks of the sweep: n <=
/// kEveryFloatBlock values at xs; part 0 for the lower half of the bit
/// patterns (on a second thread), 1 for the upper half (on this one), so
/// that a test keeps its results and scratch per part.
template <typename Block> void forEveryFloat(Block &&block) {
  auto sweep = [&](uint64_t begin, uint64_t end, int part) {
    std::vector<float> xs(kEveryFloatBlock);
    for (uint64_t b = begin; b < end;) {
      size_t n = 0;
      for (; n < kEveryFloatBlock && b < end; ++n, b += kEveryFloatStride)
        xs[n] = floatOf(static_cast<uint32_t>(b));
      block(static_cast<const float *>(xs.data()), n, part);
    }
  };
  constexpr uint64_t kAll = uint64_t(1) << 32;
  constexpr uint64_t kHalf = (kAll / 2 / kEveryFloatStride) * kEveryFloatStride;
  std::thread other(sweep, 0, kHalf, 0);
  sweep(kHalf, kAll, 1);
  other.join();
}

} // namespace mixprec::test

#endif // MIXPREC_TESTS_UNIT_CPU_EVERYFLOAT_H
