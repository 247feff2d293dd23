/*===- FakeCudaDriver.c - a stand-in libcuda for the loader's tests -------===*
 *
 * Exports what the runtime's loader looks for (cuInit, cuGetProcAddress_v2)
 * so its error paths can be made without a GPU. Environment variables set
 * how it behaves:
 *   MIXPREC_FAKE_CUDA_INIT     cuInit's CUresult (default 0)
 *   MIXPREC_FAKE_CUDA_DEVICES  device count (default 1)
 *   MIXPREC_FAKE_CUDA_VERSION  cuDriverGetVersion's answer (default 13000)
 *   MIXPREC_FAKE_CUDA_MISSING  an entry point cuGetProcAddress does not find
 * Device 0 is "Fake GPU", compute capability 9.0. Entry points without a
 * fake here resolve to one that returns CUDA_ERROR_NOT_SUPPORTED; the
 * tests never call them.
 *===----------------------------------------------------------------------===*/
#include <cuda.h>

#include <stdlib.h>
#include <string.h>

static int envInt(const char *name, int fallback) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : fallback;
}

CUresult CUDAAPI cuInit(unsigned int flags) {
  (void)flags;
  return (CUresult)envInt("MIXPREC_FAKE_CUDA_INIT", 0);
}

static CUresult CUDAAPI fakeDriverGetVersion(int *version) {
  *version = envInt("MIXPREC_FAKE_CUDA_VERSION", 13000);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeDeviceGetCount(int *count) {
  *count = envInt("MIXPREC_FAKE_CUDA_DEVICES", 1);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return ordinal < envInt("MIXPREC_FAKE_CUDA_DEVICES", 1) ? CUDA_SUCCESS
                                                          : CUDA_ERROR_INVALID_DEVICE;
}

static CUresult CUDAAPI fakeDeviceGetName(char *name, int length, CUdevice device) {
  (void)device;
  strncpy(name, "Fake GPU", (size_t)length);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeDeviceGetAttribute(int *value, CUdevice_attribute attribute,
                                               CUdevice device) {
  (void)device;
  *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI notSupported(void) { return CUDA_ERROR_NOT_SUPPORTED; }

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                  cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  (void)cudaVersion;
  (void)flags;
  const char *missing = getenv("MIXPREC_FAKE_CUDA_MISSING");
  *pfn = NULL;
  if (missing && strcmp(symbol, missing) == 0) {
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  if (strcmp(symbol, "cuInit") == 0)
    *pfn = (void *)&cuInit;
  else if (strcmp(symbol, "cuDriverGetVersion") == 0)
    *pfn = (void *)&fakeDriverGetVersion;
  else if (strcmp(symbol, "cuDeviceGetCount") == 0)
    *pfn = (void *)&fakeDeviceGetCount;
  else if (strcmp(symbol, "cuDeviceGet") == 0)
    *pfn = (void *)&fakeDeviceGet;
  else if (strcmp(symbol, "cuDeviceGetName") == 0)
    *pfn = (void *)&fakeDeviceGetName;
  else if (strcmp(symbol, "cuDeviceGetAttribute") == 0)
    *pfn = (void *)&fakeDeviceGetAttribute;
  else
    *pfn = (void *)&notSupported;
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
