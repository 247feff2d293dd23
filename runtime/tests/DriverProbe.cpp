//===- DriverProbe.cpp - the driver finds a device (GPU machines) ----------===//
//
// ctest label `gpu`: exits 77 (skip) with the reason where no driver or
// device is found. Otherwise it calls through the symbol tables the way the
// CUDA backend will: a context, a device buffer set and read back, and a
// cuBLASLt handle (MIXPREC_CUBLASLT_LIBRARY names cuBLASLt where it is
// outside the loader's path, as in PyTorch's wheels).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cuda/CublasLt.h"
#include "runtime/src/backends/cuda/CudaDriver.h"

#include <cstdio>
#include <vector>

namespace cuda = mixprec::runtime::cuda;

namespace {

/// Prints `what` failed with `code` and its name; returns 1.
int failed(const cuda::Driver &driver, const char *what, CUresult code) {
  const char *name = "unknown";
  driver.api.cuGetErrorName(code, &name);
  std::printf("FAIL: %s: %s (%d)\n", what, name, static_cast<int>(code));
  return 1;
}

/// Sets a device buffer to 0x5a and reads it back.
int checkMemory(const cuda::Driver &driver) {
  const cuda::DriverSymbols &api = driver.api;
  CUdevice device = 0;
  CUcontext context = nullptr;
  if (CUresult r = api.cuDeviceGet(&device, 0); r != CUDA_SUCCESS)
    return failed(driver, "cuDeviceGet", r);
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&context, device); r != CUDA_SUCCESS)
    return failed(driver, "cuDevicePrimaryCtxRetain", r);
  int status = 0;
  CUdeviceptr buffer = 0;
  constexpr size_t kBytes = 1 << 20;
  std::vector<unsigned char> host(kBytes, 0);
  size_t freeBytes = 0, totalBytes = 0;
  if (CUresult r = api.cuCtxSetCurrent(context); r != CUDA_SUCCESS)
    status = failed(driver, "cuCtxSetCurrent", r);
  else if (CUresult r = api.cuMemGetInfo(&freeBytes, &totalBytes); r != CUDA_SUCCESS)
    status = failed(driver, "cuMemGetInfo", r);
  else if (CUresult r = api.cuMemAlloc(&buffer, kBytes); r != CUDA_SUCCESS)
    status = failed(driver, "cuMemAlloc", r);
  else if (CUresult r = api.cuMemsetD8Async(buffer, 0x5a, kBytes, nullptr); r != CUDA_SUCCESS)
    status = failed(driver, "cuMemsetD8Async", r);
  else if (CUresult r = api.cuMemcpyDtoHAsync(host.data(), buffer, kBytes, nullptr);
           r != CUDA_SUCCESS)
    status = failed(driver, "cuMemcpyDtoHAsync", r);
  else if (CUresult r = api.cuStreamSynchronize(nullptr); r != CUDA_SUCCESS)
    status = failed(driver, "cuStreamSynchronize", r);
  for (size_t i = 0; status == 0 && i < kBytes; ++i)
    if (host[i] != 0x5a) {
      std::printf("FAIL: byte %zu read back as %d, set to 0x5a\n", i, host[i]);
      status = 1;
    }
  if (buffer)
    api.cuMemFree(buffer);
  api.cuDevicePrimaryCtxRelease(device);
  if (status == 0)
    std::printf("device memory: %zu of %zu bytes free; 1 MiB set and read back\n", freeBytes,
                totalBytes);
  return status;
}

/// Creates and destroys a cuBLASLt handle.
int checkCublasLt() {
  const cuda::CublasLt *lt = nullptr;
  if (mixprec::runtime::Status s = cuda::cublasLt(&lt); !s.ok()) {
    std::printf("FAIL: %s\n", s.message().c_str());
    return 1;
  }
  cublasLtHandle_t handle = nullptr;
  if (cublasStatus_t r = lt->api.cublasLtCreate(&handle); r != CUBLAS_STATUS_SUCCESS) {
    std::printf("FAIL: cublasLtCreate: %s\n", lt->api.cublasLtGetStatusName(r));
    return 1;
  }
  lt->api.cublasLtDestroy(handle);
  std::printf("cuBLASLt %zu from %s: handle created\n", lt->version, lt->library.c_str());
  return 0;
}

} // namespace

int main() {
  const cuda::Driver *driver = nullptr;
  if (mixprec::runtime::Status s = cuda::driver(&driver); !s.ok()) {
    std::printf("SKIP: %s\n", s.message().c_str());
    return 77;
  }
  std::printf("%s\n", driver->summary().c_str());
  if (driver->deviceName.empty() || driver->smVersion < 50)
    return 1;
  if (int status = checkMemory(*driver))
    return status;
  return checkCublasLt();
}
