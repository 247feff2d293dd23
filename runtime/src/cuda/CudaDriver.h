//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// mixprec never links libcuda: binaries must start, and report "no GPU"
// cleanly, on machines without a driver. The driver is opened with
// dlopen("libcuda.so.1") and its entry points found with cuGetProcAddress.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_CUDADRIVER_H
#define MIXPREC_RUNTIME_CUDA_CUDADRIVER_H

#include <string>

namespace mixprec::runtime::cuda {

/// What a probe of the CUDA driver found.
struct DriverProbe {
  bool available = false;  ///< a driver loaded and cuInit succeeded
  int deviceCount = 0;     ///< devices visible to the driver
  int driverVersion = 0;   ///< e.g. 13000 for CUDA 13.0
  std::string deviceName;  ///< name of device 0, when there is one
  std::string message;     ///< why not available ("no GPU: ..."), or a summary
};

/// Loads the driver (once) and queries it. Never crashes: a missing
/// library, a stub library or no device is reported in `message`.
DriverProbe probeDriver();

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_CUDADRIVER_H
