/*===- FakeCudaDriver.c - a stand-in libcuda for the loader's tests -------===*
 *
 * Exports what the runtime's loader looks for (cuInit, cuGetProcAddress_v2)
 * so its error paths can be made without a GPU. Environment variables set
 * how it behaves:
 *   MIXPREC_FAKE_CUDA_INIT     cuInit's CUresult (default 0)
 *   MIXPREC_FAKE_CUDA_DEVICES  device count (default 1)
 *   MIXPREC_FAKE_CUDA_VERSION  cuDriverGetVersion's answer (default 13000)
 *   MIXPREC_FAKE_CUDA_MISSING  an entry point cuGetProcAddress does not find
 *   MIXPREC_FAKE_CUDA_MEMORY   bytes of device memory (default 1 GiB): a
 *                              cuMemAlloc beyond what is left fails with
 *                              CUDA_ERROR_OUT_OF_MEMORY
 *   MIXPREC_FAKE_CUDA_REPORT   "FUNCTION PARAM TAG POSITION VALUE": a launch
 *                              of FUNCTION reports, as a routine kernel does
 *                              (runtime/format/CudaErrorRecord.h), the index
 *                              VALUE at POSITION under TAG into the error
 *                              record its parameter #PARAM points to
 * Device 0 is "Fake GPU", compute capability 9.0. Its "device memory" is
 * host memory, and copies, memsets and stream waits do what they say at
 * once, so the CUDA backend's sessions, buffers and host routine steps run
 * on it; kernel launches do nothing (but report as asked), stream capture
 * is not supported.
 * Entry points without a fake here resolve to one that returns
 * CUDA_ERROR_NOT_SUPPORTED.
 *===----------------------------------------------------------------------===*/
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
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

static CUresult CUDAAPI fakeGetErrorName(CUresult error, const char **name) {
  switch (error) {
  case CUDA_ERROR_OUT_OF_MEMORY:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return CUDA_SUCCESS;
  case CUDA_ERROR_NOT_SUPPORTED:
    *name = "CUDA_ERROR_NOT_SUPPORTED";
    return CUDA_SUCCESS;
  default:
    *name = NULL;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

static CUresult CUDAAPI fakeGetErrorString(CUresult error, const char **text) {
  *text = error == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : NULL;
  return *text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Handles the fake hands out: any distinct non-null values. */
static CUresult CUDAAPI fakeHandle(void **handle) {
  static char handles[1];
  *handle = handles;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakePrimaryCtxRetain(CUcontext *context, CUdevice device) {
  (void)device;
  return fakeHandle((void **)context);
}

static CUresult CUDAAPI fakeStreamCreate(CUstream *stream, unsigned int flags) {
  (void)flags;
  return fakeHandle((void **)stream);
}

static CUresult CUDAAPI fakeModuleLoadData(CUmodule *module, const void *image) {
  (void)image;
  return fakeHandle((void **)module);
}

/* A function is its name, kept in a table the process never frees (the
 * handles outlive modules in no test, and a table is no leak). */
static char functionNames[256][128];
static size_t functionCount;

static CUresult CUDAAPI fakeModuleGetFunction(CUfunction *function, CUmodule module,
                                              const char *name) {
  (void)module;
  for (size_t i = 0; i < functionCount; ++i)
    if (strcmp(functionNames[i], name) == 0) {
      *function = (CUfunction)functionNames[i];
      return CUDA_SUCCESS;
    }
  if (functionCount == 256 || strlen(name) >= 128)
    return CUDA_ERROR_NOT_SUPPORTED;
  strcpy(functionNames[functionCount], name);
  *function = (CUfunction)functionNames[functionCount++];
  return CUDA_SUCCESS;
}

/* The error record's layout (runtime/format/CudaErrorRecord.h). */
struct ErrorRecord {
  unsigned tag;
  unsigned reserved;
  unsigned long long position; /* complemented: the lowest position wins */
  unsigned long long value;
};

/* Does what MIXPREC_FAKE_CUDA_REPORT asks of a launch of `function`, with
 * the device's semantics: the first tag stays, the lowest position and its
 * value are kept. */
static CUresult CUDAAPI fakeLaunchKernel(CUfunction function, unsigned gridX, unsigned gridY,
                                         unsigned gridZ, unsigned blockX, unsigned blockY,
                                         unsigned blockZ, unsigned sharedBytes, CUstream stream,
                                         void **params, void **extra) {
  (void)gridX, (void)gridY, (void)gridZ, (void)blockX, (void)blockY, (void)blockZ;
  (void)sharedBytes, (void)stream, (void)extra;
  const char *report = getenv("MIXPREC_FAKE_CUDA_REPORT");
  char name[128];
  int param = 0;
  unsigned tag = 0;
  long long position = 0, value = 0;
  if (!report ||
      sscanf(report, "%127s %d %u %lld %lld", name, &param, &tag, &position, &value) != 5 ||
      strcmp(name, (const char *)function) != 0)
    return CUDA_SUCCESS;
  struct ErrorRecord *record =
      (struct ErrorRecord *)(uintptr_t) * (const CUdeviceptr *)params[param];
  if (record->tag != 0 && record->tag != tag)
    return CUDA_SUCCESS;
  record->tag = tag;
  if (~(unsigned long long)position > record->position) {
    record->position = ~(unsigned long long)position;
    record->value = (unsigned long long)value;
  }
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI succeed(void) { return CUDA_SUCCESS; }

/* Device memory: host memory with a header holding its size, counted
 * against MIXPREC_FAKE_CUDA_MEMORY. */
static size_t allocated;

static size_t memoryBytes(void) {
  const char *value = getenv("MIXPREC_FAKE_CUDA_MEMORY");
  return value && *value ? (size_t)strtoull(value, NULL, 10) : (size_t)1 << 30;
}

static CUresult CUDAAPI fakeMemGetInfo(size_t *free, size_t *total) {
  *total = memoryBytes();
  *free = *total - allocated;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeMemAlloc(CUdeviceptr *pointer, size_t bytes) {
  if (bytes > memoryBytes() - allocated)
    return CUDA_ERROR_OUT_OF_MEMORY;
  size_t *block = malloc(bytes + 16);
  if (!block)
    return CUDA_ERROR_OUT_OF_MEMORY;
  block[0] = bytes;
  allocated += bytes;
  *pointer = (CUdeviceptr)(uintptr_t)((char *)block + 16);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeMemFree(CUdeviceptr pointer) {
  size_t *block = (size_t *)((char *)(uintptr_t)pointer - 16);
  allocated -= block[0];
  free(block);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeMemcpyHtoD(CUdeviceptr to, const void *from, size_t bytes,
                                       CUstream stream) {
  (void)stream;
  memcpy((void *)(uintptr_t)to, from, bytes);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeMemcpyDtoH(void *to, CUdeviceptr from, size_t bytes,
                                       CUstream stream) {
  (void)stream;
  memcpy(to, (const void *)(uintptr_t)from, bytes);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeMemcpyDtoD(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                                       CUstream stream) {
  (void)stream;
  memmove((void *)(uintptr_t)to, (const void *)(uintptr_t)from, bytes);
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI fakeMemsetD8(CUdeviceptr to, unsigned char value, size_t bytes,
                                     CUstream stream) {
  (void)stream;
  memset((void *)(uintptr_t)to, value, bytes);
  return CUDA_SUCCESS;
}

/* The fakes by name; every other entry point is notSupported. */
static const struct {
  const char *name;
  void *function;
} kFakes[] = {
    {"cuGetErrorName", (void *)&fakeGetErrorName},
    {"cuGetErrorString", (void *)&fakeGetErrorString},
    {"cuDevicePrimaryCtxRetain", (void *)&fakePrimaryCtxRetain},
    {"cuDevicePrimaryCtxRelease", (void *)&succeed},
    {"cuCtxSetCurrent", (void *)&succeed},
    {"cuCtxSynchronize", (void *)&succeed},
    {"cuStreamCreate", (void *)&fakeStreamCreate},
    {"cuStreamDestroy", (void *)&succeed},
    {"cuStreamSynchronize", (void *)&succeed},
    {"cuModuleLoadData", (void *)&fakeModuleLoadData},
    {"cuModuleUnload", (void *)&succeed},
    {"cuModuleGetFunction", (void *)&fakeModuleGetFunction},
    {"cuLaunchKernel", (void *)&fakeLaunchKernel},
    {"cuMemGetInfo", (void *)&fakeMemGetInfo},
    {"cuMemAlloc", (void *)&fakeMemAlloc},
    {"cuMemFree", (void *)&fakeMemFree},
    {"cuMemcpyHtoDAsync", (void *)&fakeMemcpyHtoD},
    {"cuMemcpyDtoHAsync", (void *)&fakeMemcpyDtoH},
    {"cuMemcpyDtoDAsync", (void *)&fakeMemcpyDtoD},
    {"cuMemsetD8Async", (void *)&fakeMemsetD8},
};

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
  for (size_t i = 0; !*pfn && i < sizeof(kFakes) / sizeof(kFakes[0]); ++i)
    if (strcmp(symbol, kFakes[i].name) == 0)
      *pfn = kFakes[i].function;
  if (!*pfn)
    *pfn = (void *)&notSupported;
  *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
