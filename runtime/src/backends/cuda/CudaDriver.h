//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// mixprec never links libcuda: libmixprec_runtime.so must load, and run on
// the CPU, on machines without a driver. The driver is opened with
// dlopen("libcuda.so.1") and every entry point of DynamicSymbolTables.h is
// found with cuGetProcAddress, once per process.
//
// MIXPREC_CUDA_DRIVER_LIBRARY names another library to open instead (a
// driver outside the loader's path, or, in tests, a fake driver or a name
// that does not exist, to run as if no driver were installed).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CUDA_CUDADRIVER_H
#define MIXPREC_RUNTIME_CUDA_CUDADRIVER_H

#include "runtime/src/Status.h"

#include <cuda.h>

#include <memory>
#include <string>

namespace mixprec::runtime::cuda {

/// The driver's entry points: one member per MIXPREC_CU_PFN_DECL line, named
/// and typed as cuda.h declares the function (so `api.cuMemAlloc(...)`
/// calls the cuMemAlloc_v2 that cuda.h maps it to).
struct DriverSymbols {
#define MIXPREC_CU_PFN_DECL(name, ...) CUresult(CUDAAPI *name)(__VA_ARGS__) = nullptr;
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CU_PFN_DECL
};

/// A loaded and initialized driver that sees at least one device.
struct Driver {
  DriverSymbols api;
  std::string library; ///< what was opened ("libcuda.so.1")
  int version = 0;     ///< CUDA version the driver supports, e.g. 13000
  int deviceCount = 0;
  std::string deviceName; ///< device 0's
  int smVersion = 0;      ///< device 0's compute capability, e.g. 90
  /// "1 CUDA device(s), device 0: NVIDIA H200 (sm_90), driver 13.0"
  std::string summary() const;
};

/// Opens `library` and loads the driver from it, each call anew (tests).
/// MIXPREC_NO_DEVICE, with a message starting "no GPU: ", when the library
/// cannot be opened or is not a driver, is the toolkit's stub, sees no
/// device, is older than the headers' CUDA version, or lacks an entry point
/// of the table (the message names it).
Status loadDriver(const std::string &library, std::unique_ptr<Driver> &out);

/// The process's driver, loaded once (from MIXPREC_CUDA_DRIVER_LIBRARY or
/// libcuda.so.1): `out` is set on success, else the status says why.
Status driver(const Driver **out);

/// "13.0" for 13000.
std::string cudaVersionString(int version);

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_CUDADRIVER_H
