//===- CollectiveNcclGpuTest.cpp - NCCL on a device, one rank ------------===//
//
// ctest collective_nccl_gpu (label gpu): one rank bootstrapped through an
// id file (written by rank 0, removed once the communicator exists);
// all-reduces of device buffers (cuMemAlloc through the dlopen'ed driver) on
// a stream of this test, the session's hook with a device pointer, and the
// host-memory broadcast, all-gather and barrier through the collective's
// own device buffer. Exits 77, saying why, without a driver, a GPU, or NCCL.
//
//===----------------------------------------------------------------------===//
#include "common/numerics/Rounding.h"
#include "train/Collective.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace mixprec::trainer;

namespace {

// The few driver entry points the test calls, declared here (the test needs
// no cuda.h): CUresult is an int, handles are pointers, CUdeviceptr 64 bits.
using CUdeviceptr = unsigned long long;
struct Driver {
  int (*cuInit)(unsigned);
  int (*cuDeviceGetCount)(int *);
  int (*cuDeviceGet)(int *, int);
  int (*cuDevicePrimaryCtxRetain)(void **, int);
  int (*cuCtxSetCurrent)(void *);
  int (*cuMemAlloc)(CUdeviceptr *, size_t);
  int (*cuMemFree)(CUdeviceptr);
  int (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  int (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  int (*cuStreamCreate)(void **, unsigned);
  int (*cuStreamSynchronize)(void *);
  int (*cuStreamDestroy)(void *);
};

int failures = 0;

void check(bool ok, const std::string &what) {
  if (ok)
    return;
  ++failures;
  std::printf("FAIL: %s\n", what.c_str());
}

/// Loads the driver; "" or why the test skips.
std::string loadDriver(Driver &d) {
  const char *forced = std::getenv("MIXPREC_CUDA_DRIVER_LIBRARY");
  std::string library = forced && *forced ? forced : "libcuda.so.1";
  void *h = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return "no CUDA driver (" + library + "): " + dlerror();
  struct {
    const char *name;
    void **fn;
  } symbols[] = {{"cuInit", (void **)&d.cuInit},
                 {"cuDeviceGetCount", (void **)&d.cuDeviceGetCount},
                 {"cuDeviceGet", (void **)&d.cuDeviceGet},
                 {"cuDevicePrimaryCtxRetain", (void **)&d.cuDevicePrimaryCtxRetain},
                 {"cuCtxSetCurrent", (void **)&d.cuCtxSetCurrent},
                 {"cuMemAlloc_v2", (void **)&d.cuMemAlloc},
                 {"cuMemFree_v2", (void **)&d.cuMemFree},
                 {"cuMemcpyHtoD_v2", (void **)&d.cuMemcpyHtoD},
                 {"cuMemcpyDtoH_v2", (void **)&d.cuMemcpyDtoH},
                 {"cuStreamCreate", (void **)&d.cuStreamCreate},
                 {"cuStreamSynchronize", (void **)&d.cuStreamSynchronize},
                 {"cuStreamDestroy_v2", (void **)&d.cuStreamDestroy}};
  for (auto &s : symbols)
    if (!(*s.fn = dlsym(h, s.name)))
      return library + " lacks " + s.name;
  if (int r = d.cuInit(0))
    return "cuInit failed with CUresult " + std::to_string(r) + " (no GPU, or the stub library)";
  int count = 0;
  if (d.cuDeviceGetCount(&count) || count < 1)
    return "the driver sees no GPU";
  return "";
}

/// Uploads `host`, all-reduces it on `stream` as `dtype`, and downloads it.
template <typename T>
std::vector<T> reduceOnDevice(const Driver &d, Collective &c, void *stream, std::vector<T> host,
                              mixprec_dtype_t dtype, Reduce op, std::string &error) {
  CUdeviceptr p = 0;
  size_t bytes = host.size() * sizeof(T);
  if (d.cuMemAlloc(&p, bytes) || d.cuMemcpyHtoD(p, host.data(), bytes)) {
    error = "cuMemAlloc or cuMemcpyHtoD failed";
    return {};
  }
  error = c.allReduce(reinterpret_cast<void *>(p), host.size(), dtype, op, stream);
  std::vector<T> back(host.size());
  if (d.cuStreamSynchronize(stream) || d.cuMemcpyDtoH(back.data(), p, bytes))
    error += " (cuMemcpyDtoH failed)";
  d.cuMemFree(p);
  return back;
}

} // namespace

int main() {
  Driver d{};
  if (std::string why = loadDriver(d); !why.empty()) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  std::string version;
  if (std::string why = probeNccl(&version); !why.empty()) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  std::printf("NCCL %s\n", version.c_str());
  int device = 0;
  void *context = nullptr;
  if (d.cuDeviceGet(&device, 0) || d.cuDevicePrimaryCtxRetain(&context, device) ||
      d.cuCtxSetCurrent(context)) {
    std::printf("FAIL: cannot make device 0's primary context current\n");
    return 1;
  }

  char idFile[] = "/tmp/mixprec-nccl-id-XXXXXX";
  int fd = mkstemp(idFile);
  if (fd >= 0)
    close(fd), unlink(idFile); // a fresh name, no file: rank 0 writes it
  std::string error;
  auto c = openNcclCollective(nullptr, idFile, 0, 1, 60, error);
  if (!c) {
    std::printf("FAIL: openNcclCollective: %s\n", error.c_str());
    return 1;
  }
  check(c->name() == "nccl" && c->deviceBuffers() && c->rank() == 0 && c->worldSize() == 1,
        "the collective's facts");
  check(access(idFile, F_OK) != 0, "rank 0 removes the id file once the communicator exists");

  void *stream = nullptr;
  if (d.cuStreamCreate(&stream, 0)) {
    std::printf("FAIL: cuStreamCreate\n");
    return 1;
  }
  std::vector<float> f(4096);
  for (size_t i = 0; i < f.size(); ++i)
    f[i] = float(i) - 2000.5f;
  check(reduceOnDevice(d, *c, stream, f, MIXPREC_DTYPE_F32, Reduce::Sum, error) == f &&
            error.empty(),
        "f32 sum of one rank is its input: " + error);
  check(reduceOnDevice(d, *c, stream, f, MIXPREC_DTYPE_F32, Reduce::Max, error) == f &&
            error.empty(),
        "f32 max: " + error);
  check(reduceOnDevice(d, *c, stream, f, MIXPREC_DTYPE_F32, Reduce::Mean, error) == f &&
            error.empty(),
        "f32 mean (ncclAvg) of one rank: " + error);
  std::vector<uint16_t> b(1000);
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = mixprec::numerics::floatToBF16(float(i) * 0.37f - 100.f);
  check(reduceOnDevice(d, *c, stream, b, MIXPREC_DTYPE_BF16, Reduce::Sum, error) == b &&
            error.empty(),
        "bf16 sum: " + error);
  std::vector<uint16_t> h(1000);
  for (size_t i = 0; i < h.size(); ++i)
    h[i] = mixprec::numerics::floatToF16(float(i) * -0.37f + 100.f);
  check(reduceOnDevice(d, *c, stream, h, MIXPREC_DTYPE_F16, Reduce::Max, error) == h &&
            error.empty(),
        "f16 max: " + error);
  std::vector<int64_t> l = {(int64_t(1) << 60) + 1, -3, 5};
  check(reduceOnDevice(d, *c, stream, l, MIXPREC_DTYPE_I64, Reduce::Sum, error) == l &&
            error.empty(),
        "i64 sum: " + error);
  std::vector<int32_t> n = {-7, 9};
  check(reduceOnDevice(d, *c, stream, n, MIXPREC_DTYPE_I32, Reduce::Max, error) == n &&
            error.empty(),
        "i32 max: " + error);

  // The session's hook with a device pointer and the stream.
  mixprec_collective_t hook = c->hook();
  check(hook.device_buffers == 1 && hook.world_size == 1, "the hook's facts");
  CUdeviceptr p = 0;
  float one[2] = {1.25f, -8.f}, back[2] = {0, 0};
  char message[256] = "";
  if (!d.cuMemAlloc(&p, sizeof one) && !d.cuMemcpyHtoD(p, one, sizeof one)) {
    int status = hook.all_reduce(hook.context, reinterpret_cast<void *>(p), 2, MIXPREC_DTYPE_F32,
                                 MIXPREC_REDUCE_SUM, stream, message, sizeof message);
    d.cuStreamSynchronize(stream);
    d.cuMemcpyDtoH(back, p, sizeof back);
    check(status == 0 && back[0] == 1.25f && back[1] == -8.f,
          std::string("the hook's all_reduce: ") + message);
    status = hook.all_reduce(hook.context, reinterpret_cast<void *>(p), 2, MIXPREC_DTYPE_BOOL,
                             MIXPREC_REDUCE_SUM, stream, message, sizeof message);
    check(status != 0 && std::strstr(message, "rank 0 of 1: all_reduce of 2 bool elements"),
          std::string("an unsupported dtype: ") + message);
    d.cuMemFree(p);
  }

  // Host memory through the collective's device buffer.
  char data[100];
  for (int i = 0; i < 100; ++i)
    data[i] = char(i * 3);
  error = c->broadcast(data, sizeof data, 0);
  bool same = true;
  for (int i = 0; i < 100; ++i)
    same = same && data[i] == char(i * 3);
  check(error.empty() && same, "host broadcast: " + error);
  char gathered[100] = {0};
  error = c->allGather(data, gathered, sizeof data);
  check(error.empty() && std::memcmp(data, gathered, sizeof data) == 0,
        "host all_gather: " + error);
  error = c->barrier();
  check(error.empty(), "barrier: " + error);

  d.cuStreamDestroy(stream);
  c.reset();
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
