//===- RowSumOrder.h - the CPU backend's row-sum order, for tests -*- C++ -*-===//
//
// The order in which the CPU backend's kernels sum a row (RowSum), written
// out independently of the backend's code (CpuBackend.h, kReductionLanes):
// the value at row position p into lane p % 16, each lane in position
// order, in FP32; then lane l += lane l + 8, l + 4, l + 2, l + 1.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TESTS_UNIT_RUNTIME_ROWSUMORDER_H
#define MIXPREC_TESTS_UNIT_RUNTIME_ROWSUMORDER_H

#include <cstdint>

namespace mixprec::testing {

/// The FP32 sum of at(0), ..., at(count - 1) in the CPU backend's RowSum
/// order.
template <typename At> float rowSumInLanes(int64_t count, At at) {
  float lanes[16] = {};
  for (int64_t p = 0; p < count; ++p)
    lanes[p % 16] += at(p);
  for (int width = 8; width > 0; width /= 2)
    for (int l = 0; l < width; ++l)
      lanes[l] += lanes[l + width];
  return lanes[0];
}

} // namespace mixprec::testing

#endif // MIXPREC_TESTS_UNIT_RUNTIME_ROWSUMORDER_H
