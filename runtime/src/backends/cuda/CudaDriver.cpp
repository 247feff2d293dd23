//===- CudaDriver.cpp - the CUDA driver API, loaded at run time ------------===//
#include "runtime/src/backends/cuda/CudaDriver.h"

#include "runtime/src/backends/cuda/LoadOnce.h"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

namespace mixprec::runtime::cuda {
namespace {

#define MIXPREC_STRINGIZE(x) #x
#define MIXPREC_EXPANDED_NAME(x) MIXPREC_STRINGIZE(x)

/// Whether cuda.h's name for a function (`expanded`, after its macros) is
/// `written` or a version of it (`written` + "_v2"): cuGetProcAddress looks
/// a function up by that base name and returns the version for CUDA_VERSION.
/// A macro that renames (cuda.h 13: `#define cuGraphInstantiate
/// cuGraphInstantiateWithFlags`) would have the lookup return the old
/// function under the new signature; the H200 run of 2026-12-04 crashed on
/// exactly that (a 3-argument call into the 5-argument cuGraphInstantiate).
constexpr bool isBaseNameOf(const char *written, const char *expanded) {
  while (*written && *written == *expanded)
    ++written, ++expanded;
  if (*written)
    return false;
  if (!*expanded)
    return true;
  if (expanded[0] != '_' || expanded[1] != 'v' || !expanded[2])
    return false;
  for (expanded += 2; *expanded; ++expanded)
    if (*expanded < '0' || *expanded > '9')
      return false;
  return true;
}
static_assert(isBaseNameOf("cuMemAlloc", "cuMemAlloc_v2") &&
              isBaseNameOf("cuInit", "cuInit") &&
              !isBaseNameOf("cuGraphInstantiate", "cuGraphInstantiateWithFlags") &&
              !isBaseNameOf("cuMemAlloc", "cuMemAlloc_vx"));

// The table's signatures are the ones cuda.h declares, and its names the
// ones cuGetProcAddress returns those signatures for (at CUDA_VERSION).
#define MIXPREC_CU_PFN_DECL(name, ...)                                                          \
  static_assert(std::is_same_v<decltype(&::name), CUresult(CUDAAPI *)(__VA_ARGS__)>,             \
                #name ": DynamicSymbolTables.h and cuda.h disagree on the signature");          \
  static_assert(isBaseNameOf(#name, MIXPREC_EXPANDED_NAME(name)),                                \
                #name ": cuda.h maps it to another function (" MIXPREC_EXPANDED_NAME(           \
                    name) "); list that one in DynamicSymbolTables.h");
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CU_PFN_DECL

constexpr const char *kDefaultLibrary = "libcuda.so.1";

Status noGpu(const std::string &why) { return Status(MIXPREC_NO_DEVICE, "no GPU: " + why); }

/// Describes a failed cuInit the way users meet it on machines without a GPU.
Status describeInitFailure(CUresult code) {
  switch (static_cast<int>(code)) {
  case CUDA_ERROR_STUB_LIBRARY:
    return noGpu("libcuda.so.1 is the toolkit's stub library, not a driver");
  case CUDA_ERROR_NO_DEVICE:
    return noGpu("the driver reports no CUDA device");
  case 35: // the number of the runtime API's cudaErrorInsufficientDriver
    return noGpu("the installed driver is older than CUDA " + cudaVersionString(CUDA_VERSION) +
                 " needs");
  default:
    return noGpu("cuInit failed with CUresult " + std::to_string(code));
  }
}

using GetProcAddressFn = CUresult(CUDAAPI *)(const char *, void **, int, cuuint64_t,
                                             CUdriverProcAddressQueryResult *);

/// Looks up every entry point of the table, the version checked first.
Status resolveTable(void *library, const std::string &name, Driver &driver) {
  auto getProc = reinterpret_cast<GetProcAddressFn>(dlsym(library, "cuGetProcAddress_v2"));
  auto init = reinterpret_cast<CUresult(CUDAAPI *)(unsigned)>(dlsym(library, "cuInit"));
  if (!getProc || !init)
    return noGpu("'" + name + "' is not a CUDA 12 or newer driver: it lacks " +
                 (getProc ? "cuInit" : "cuGetProcAddress_v2"));
  if (CUresult status = init(0); status != CUDA_SUCCESS)
    return describeInitFailure(status);
  auto resolve = [&](const char *symbol, void **fn) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
    CUresult status = getProc(symbol, fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (status == CUDA_SUCCESS && *fn && found == CU_GET_PROC_ADDRESS_SUCCESS)
      return okStatus();
    std::string why = found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                          ? " for CUDA " + cudaVersionString(CUDA_VERSION)
                          : " (cuGetProcAddress: CUresult " + std::to_string(status) + ")";
    return noGpu("the CUDA driver '" + name + "' (CUDA " + cudaVersionString(driver.version) +
                 ") lacks " + symbol + why + "; update the NVIDIA driver");
  };
  // The version first: an old driver is the likely reason for a missing
  // entry point, and says so better.
  if (Status s = resolve("cuDriverGetVersion", reinterpret_cast<void **>(
                                                   &driver.api.cuDriverGetVersion));
      !s.ok())
    return s;
  if (driver.api.cuDriverGetVersion(&driver.version) != CUDA_SUCCESS)
    return noGpu("cuDriverGetVersion failed");
  if (driver.version / 1000 < CUDA_VERSION / 1000)
    return noGpu("the NVIDIA driver supports CUDA " + cudaVersionString(driver.version) +
                 ", mixprec needs " + cudaVersionString(CUDA_VERSION / 1000 * 1000) +
                 " or newer");
#define MIXPREC_CU_PFN_DECL(name, ...)                                                          \
  if (Status s = resolve(#name, reinterpret_cast<void **>(&driver.api.name)); !s.ok())        \
    return s;
#include "runtime/src/backends/cuda/DynamicSymbolTables.h"
#undef MIXPREC_CU_PFN_DECL
  return okStatus();
}

/// Device 0's name and compute capability; the device count.
Status describeDevices(Driver &driver) {
  const DriverSymbols &api = driver.api;
  if (api.cuDeviceGetCount(&driver.deviceCount) != CUDA_SUCCESS || driver.deviceCount <= 0)
    return noGpu("the driver reports no CUDA device");
  CUdevice device = 0;
  char name[256] = {0};
  int major = 0, minor = 0;
  if (api.cuDeviceGet(&device, 0) != CUDA_SUCCESS ||
      api.cuDeviceGetName(name, sizeof(name) - 1, device) != CUDA_SUCCESS ||
      api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) !=
          CUDA_SUCCESS ||
      api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) !=
          CUDA_SUCCESS)
    return noGpu("the driver cannot describe device 0");
  driver.deviceName = name;
  driver.smVersion = major * 10 + minor;
  return okStatus();
}

} // namespace

std::string cudaVersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string Driver::summary() const {
  return std::to_string(deviceCount) + " CUDA device(s), device 0: " + deviceName + " (sm_" +
         std::to_string(smVersion) + "), driver " + cudaVersionString(version);
}

Status loadDriver(const std::string &library, std::unique_ptr<Driver> &out) {
  // Never closed: the process keeps the driver it found (and the handles
  // the driver gave out) until it exits.
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return noGpu("cannot load '" + library + "' (no NVIDIA driver installed): " +
                 (why ? why : "dlopen failed"));
  }
  auto driver = std::make_unique<Driver>();
  driver->library = library;
  if (Status s = resolveTable(handle, library, *driver); !s.ok())
    return s;
  if (Status s = describeDevices(*driver); !s.ok())
    return s;
  out = std::move(driver);
  return okStatus();
}

Status driver(const Driver **out) {
  return loadOnce(out, [](std::unique_ptr<Driver> &loaded) {
    const char *library = std::getenv("MIXPREC_CUDA_DRIVER_LIBRARY");
    return loadDriver(library && *library ? library : kDefaultLibrary, loaded);
  });
}

} // namespace mixprec::runtime::cuda
