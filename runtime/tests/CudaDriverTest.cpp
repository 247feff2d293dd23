//===- CudaDriverTest.cpp - the driver probe never crashes ----------------===//
//
// Runs without a GPU: the probe must report "no GPU" cleanly (no driver, the
// toolkit's stub library, no device) instead of crashing.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cuda/CudaDriver.h"

#include <gtest/gtest.h>

namespace {

TEST(CudaDriver, ProbeReportsStatusWithoutCrashing) {
  mixprec::runtime::cuda::DriverProbe probe = mixprec::runtime::cuda::probeDriver();
  EXPECT_FALSE(probe.message.empty());
  if (probe.available)
    EXPECT_GT(probe.deviceCount, 0) << probe.message;
  else
    EXPECT_EQ(probe.message.rfind("no GPU: ", 0), 0u) << probe.message;
}

} // namespace
