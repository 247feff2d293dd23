//===- DriverProbe.cpp - the driver finds a device (GPU machines) ----------===//
#include "runtime/src/cuda/CudaDriver.h"

#include <cstdio>

int main() {
  mixprec::runtime::cuda::DriverProbe probe = mixprec::runtime::cuda::probeDriver();
  if (!probe.available) {
    std::printf("SKIP: %s\n", probe.message.c_str());
    return 77;
  }
  std::printf("%s\n", probe.message.c_str());
  return probe.deviceCount > 0 && !probe.deviceName.empty() ? 0 : 1;
}
