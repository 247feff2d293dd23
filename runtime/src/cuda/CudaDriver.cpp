//===- CudaDriver.cpp - the CUDA driver API, loaded at run time ------------===//
#include "runtime/src/cuda/CudaDriver.h"

#include <cuda.h>
#include <dlfcn.h>

namespace mixprec::runtime::cuda {
namespace {

/// Describes a CUresult the way users meet it on machines without a GPU.
std::string describeInitFailure(int code) {
  switch (code) {
  case 34: // CUDA_ERROR_STUB_LIBRARY
    return "no GPU: libcuda.so.1 is the toolkit's stub library, not a driver";
  case 100: // CUDA_ERROR_NO_DEVICE
    return "no GPU: the driver reports no CUDA device";
  case 35: // CUDA_ERROR_INSUFFICIENT_DRIVER
    return "no GPU: the installed driver is older than CUDA 13 needs";
  default:
    return "no GPU: cuInit failed with CUresult " + std::to_string(code);
  }
}

DriverProbe probeOnce() {
  DriverProbe probe;
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    probe.message = "no GPU: cannot load libcuda.so.1 (no NVIDIA driver installed)";
    return probe;
  }
  using InitFn = CUresult (*)(unsigned);
  using GetProcFn = CUresult (*)(const char *, void **, int, cuuint64_t,
                                 CUdriverProcAddressQueryResult *);
  auto init = reinterpret_cast<InitFn>(dlsym(library, "cuInit"));
  auto getProc = reinterpret_cast<GetProcFn>(dlsym(library, "cuGetProcAddress_v2"));
  if (!init || !getProc) {
    probe.message = "no GPU: libcuda.so.1 lacks cuInit/cuGetProcAddress_v2";
    return probe;
  }
  CUresult status = init(0);
  if (status != CUDA_SUCCESS) {
    probe.message = describeInitFailure(status);
    return probe;
  }
  auto lookup = [&](const char *symbol, void **fn) {
    CUdriverProcAddressQueryResult found;
    return getProc(symbol, fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) ==
               CUDA_SUCCESS &&
           *fn;
  };
  void *getCount = nullptr, *getVersion = nullptr, *getDevice = nullptr, *getName = nullptr;
  if (!lookup("cuDeviceGetCount", &getCount) || !lookup("cuDriverGetVersion", &getVersion) ||
      !lookup("cuDeviceGet", &getDevice) || !lookup("cuDeviceGetName", &getName)) {
    probe.message = "no GPU: the driver lacks basic device queries";
    return probe;
  }
  reinterpret_cast<CUresult (*)(int *)>(getVersion)(&probe.driverVersion);
  reinterpret_cast<CUresult (*)(int *)>(getCount)(&probe.deviceCount);
  if (probe.deviceCount <= 0) {
    probe.message = "no GPU: the driver reports no CUDA device";
    return probe;
  }
  CUdevice device = 0;
  char name[256] = {0};
  if (reinterpret_cast<CUresult (*)(CUdevice *, int)>(getDevice)(&device, 0) == CUDA_SUCCESS)
    reinterpret_cast<CUresult (*)(char *, int, CUdevice)>(getName)(name, sizeof(name), device);
  probe.deviceName = name;
  probe.available = true;
  probe.message = std::to_string(probe.deviceCount) + " CUDA device(s), device 0: " +
                  probe.deviceName + ", driver " + std::to_string(probe.driverVersion);
  return probe;
}

} // namespace

DriverProbe probeDriver() {
  static const DriverProbe probe = probeOnce();
  return probe;
}

} // namespace mixprec::runtime::cuda
