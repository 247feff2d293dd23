//===- NcclCollective.cpp - the collectives on NCCL ------------------------===//
//
// openNcclCollective and probeNccl of train/Collective.h. libnccl.so.2 and
// the CUDA driver are opened with dlopen (never linked: the trainers start
// where neither is installed); nccl.h and cuda.h give the types only. Built
// without NCCL (MIXPREC_HAVE_NCCL 0) where nccl.h was not found at
// configure time: both functions then say so.
//
// The communicator is non-blocking (ncclConfig_t.blocking = 0), so that no
// NCCL call waits for the other ranks inside the library: every operation
// is enqueued, then completed by polling ncclCommGetAsyncError and
// cuStreamQuery until the deadline, after which the communicator is
// aborted (ncclCommAbort) and the operation fails naming the rank.
//
//===----------------------------------------------------------------------===//
#include "train/Collective.h"

#if MIXPREC_HAVE_NCCL
#include <cuda.h>
#include <nccl.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#endif

namespace mixprec::trainer {

#if !MIXPREC_HAVE_NCCL

std::unique_ptr<Collective> openNcclCollective(Collective *, const std::string &, int, int, double,
                                               std::string &error) {
  error = "NCCL: mixprec was built without nccl.h (the CUDA toolkit's NCCL headers were not "
          "found at configure time)";
  return nullptr;
}

std::string probeNccl(std::string *) {
  return "NCCL: mixprec was built without nccl.h (the CUDA toolkit's NCCL headers were not "
         "found at configure time)";
}

#else

namespace {

using Clock = std::chrono::steady_clock;

/// printf into a std::string.
template <typename... Args> std::string format(const char *spec, Args... args) {
  char text[512];
  std::snprintf(text, sizeof text, spec, args...);
  return text;
}

Clock::time_point deadlineAfter(double seconds) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

/// Sleeps a little longer each call (1 us doubling up to 500 us), after a
/// few calls that only spin.
struct Backoff {
  int spins = 0;
  std::chrono::microseconds nap{1};
  void operator()() {
    if (++spins <= 200)
      return;
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(500));
  }
};

// ---- libnccl ----------------------------------------------------------------

/// libnccl's entry points, typed as nccl.h declares them.
struct NcclApi {
#define MIXPREC_NCCL_FUNCTIONS(X)                                                                  \
  X(ncclGetVersion)                                                                                \
  X(ncclGetUniqueId)                                                                               \
  X(ncclCommInitRankConfig)                                                                        \
  X(ncclCommGetAsyncError)                                                                         \
  X(ncclCommFinalize)                                                                              \
  X(ncclCommDestroy)                                                                               \
  X(ncclCommAbort)                                                                                 \
  X(ncclGetErrorString)                                                                            \
  X(ncclGetLastError)                                                                              \
  X(ncclAllReduce)                                                                                 \
  X(ncclBroadcast)                                                                                 \
  X(ncclAllGather)
#define MIXPREC_NCCL_MEMBER(name) decltype(&::name) name = nullptr;
  MIXPREC_NCCL_FUNCTIONS(MIXPREC_NCCL_MEMBER)
#undef MIXPREC_NCCL_MEMBER
  std::string path;    ///< the file loaded
  std::string version; ///< "2.28.9"
};

/// "2.28.9" for NCCL_VERSION_CODE 22809 (or 2708 before 2.9).
std::string versionString(int code) {
  int major = code >= 10000 ? code / 10000 : code / 1000;
  int minor = code >= 10000 ? code % 10000 / 100 : code % 1000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

/// Loads libnccl from `path` into `api`; "" or why not, naming the file or
/// the missing entry point.
std::string loadNcclFrom(const std::string &path, NcclApi &api) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return "cannot load " + path + ": " + (why ? why : "dlopen failed");
  }
  // Never closed: communicators and their threads live in it.
  Dl_info info{};
  void *any = dlsym(handle, "ncclGetVersion");
  api.path = any && dladdr(any, &info) && info.dli_fname ? info.dli_fname : path;
#define MIXPREC_NCCL_RESOLVE(name)                                                                 \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name));                           \
  if (!api.name)                                                                                   \
    return "'" + api.path + "' lacks " #name " (mixprec needs NCCL 2.14 or newer)";
  MIXPREC_NCCL_FUNCTIONS(MIXPREC_NCCL_RESOLVE)
#undef MIXPREC_NCCL_RESOLVE
  int code = 0;
  if (ncclResult_t r = api.ncclGetVersion(&code); r != ncclSuccess)
    return "'" + api.path + "': ncclGetVersion failed (" + api.ncclGetErrorString(r) + ")";
  api.version = versionString(code);
  return "";
}

/// libnccl from $MIXPREC_NCCL_LIBRARY, else the loader's path, else
/// /usr/local/cuda/lib64; loaded on the first successful call (failures are
/// retried: the environment may change).
std::string nccl(const NcclApi **out) {
  static std::mutex mutex;
  static NcclApi loaded;
  static bool ok = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!ok) {
    NcclApi api;
    std::string error;
    if (const char *forced = std::getenv("MIXPREC_NCCL_LIBRARY"); forced && *forced) {
      error = loadNcclFrom(forced, api);
      if (!error.empty())
        return "NCCL (MIXPREC_NCCL_LIBRARY): " + error;
    } else {
      error = loadNcclFrom("libnccl.so.2", api);
      if (!error.empty()) {
        std::string second = loadNcclFrom("/usr/local/cuda/lib64/libnccl.so.2", api);
        if (!second.empty())
          return "NCCL is not available: " + error + "; " + second +
                 " (install NCCL, or set MIXPREC_NCCL_LIBRARY to libnccl.so.2's path)";
      }
    }
    loaded = api;
    ok = true;
  }
  *out = &loaded;
  return "";
}

// ---- The CUDA driver (what the collective needs of it) ----------------------

/// The driver's entry points this file calls, named and typed as cuda.h
/// declares them (cuMemAlloc is cuMemAlloc_v2 and so on).
struct CudaApi {
#define MIXPREC_CUDA_FUNCTIONS(X)                                                                  \
  X(cuCtxGetCurrent)                                                                               \
  X(cuCtxSetCurrent)                                                                               \
  X(cuGetErrorString)                                                                              \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamQuery)                                                                                 \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemcpyHtoDAsync)                                                                             \
  X(cuMemcpyDtoHAsync)
#define MIXPREC_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  MIXPREC_CUDA_FUNCTIONS(MIXPREC_CUDA_MEMBER)
#undef MIXPREC_CUDA_MEMBER
};

using GetProcAddressFn = CUresult(CUDAAPI *)(const char *, void **, int, cuuint64_t,
                                             CUdriverProcAddressQueryResult *);

/// The driver from $MIXPREC_CUDA_DRIVER_LIBRARY or libcuda.so.1 (as the
/// runtime's CUDA backend loads it), its entry points by cuGetProcAddress;
/// loaded on the first successful call.
std::string cudaDriver(const CudaApi **out) {
  static std::mutex mutex;
  static CudaApi loaded;
  static bool ok = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (!ok) {
    const char *forced = std::getenv("MIXPREC_CUDA_DRIVER_LIBRARY");
    std::string library = forced && *forced ? forced : "libcuda.so.1";
    void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      return "no CUDA driver: cannot load " + library + ": " + (why ? why : "dlopen failed");
    }
    auto getProc = reinterpret_cast<GetProcAddressFn>(dlsym(handle, "cuGetProcAddress_v2"));
    auto init = reinterpret_cast<CUresult(CUDAAPI *)(unsigned)>(dlsym(handle, "cuInit"));
    if (!getProc || !init)
      return "'" + library + "' is not a CUDA 12 or newer driver";
    if (CUresult r = init(0); r != CUDA_SUCCESS)
      return "no CUDA driver: cuInit failed with CUresult " + std::to_string(r);
    CudaApi api;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
#define MIXPREC_CUDA_RESOLVE(name)                                                                 \
  if (getProc(#name, reinterpret_cast<void **>(&api.name), CUDA_VERSION,                           \
              CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||                              \
      !api.name || found != CU_GET_PROC_ADDRESS_SUCCESS)                                           \
    return "the CUDA driver '" + library + "' lacks " #name " for CUDA " +                         \
           std::to_string(CUDA_VERSION) + "; update the NVIDIA driver";
    MIXPREC_CUDA_FUNCTIONS(MIXPREC_CUDA_RESOLVE)
#undef MIXPREC_CUDA_RESOLVE
    loaded = api;
    ok = true;
  }
  *out = &loaded;
  return "";
}

std::string cudaError(const CudaApi &cu, CUresult r) {
  const char *text = nullptr;
  if (cu.cuGetErrorString(r, &text) != CUDA_SUCCESS || !text)
    return "CUresult " + std::to_string(r);
  return text;
}

// ---- The id, from rank 0 to the others --------------------------------------

constexpr const char *kIdMagic = "mixprec-nccl-id 1 world ";

/// Writes `id` to `path` atomically (a temporary file renamed over it).
std::string writeIdFile(const std::string &path, const ncclUniqueId &id, int worldSize) {
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  FILE *f = std::fopen(temporary.c_str(), "wb");
  if (!f)
    return "cannot write " + temporary + ": " + std::strerror(errno);
  std::string header = kIdMagic + std::to_string(worldSize) + "\n";
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(&id, 1, sizeof id, f) == sizeof id && std::fflush(f) == 0 &&
            fsync(fileno(f)) == 0;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    return "cannot write " + path + ": " + why;
  }
  return "";
}

/// Reads the id rank 0 wrote to `path`, waiting for the file until the
/// deadline.
std::string readIdFile(const std::string &path, int worldSize, double timeoutSeconds,
                       ncclUniqueId &id) {
  const std::string header = kIdMagic + std::to_string(worldSize) + "\n";
  const auto deadline = deadlineAfter(timeoutSeconds);
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::string line;
      std::getline(in, line);
      if (line + "\n" != header) {
        if (line.rfind(kIdMagic, 0) == 0)
          return path + " holds the id of a job of world size " +
                 line.substr(std::strlen(kIdMagic)) + ", this one has " + std::to_string(worldSize);
        return path + " is not an NCCL id file of mixprec";
      }
      if (in.read(reinterpret_cast<char *>(&id), sizeof id) && in.gcount() == sizeof id)
        return "";
      return path + " is truncated";
    }
    if (Clock::now() >= deadline)
      return format("rank 0 wrote no id to %s within %g s (did rank 0 start, and do the ranks "
                    "share that file system?)",
                    path.c_str(), timeoutSeconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// ---- The collective -----------------------------------------------------------

/// NCCL's type for `dtype`; false for none.
bool ncclType(mixprec_dtype_t dtype, ncclDataType_t &type) {
  switch (dtype) {
  case MIXPREC_DTYPE_F32:
    type = ncclFloat32;
    return true;
  case MIXPREC_DTYPE_F16:
    type = ncclFloat16;
    return true;
  case MIXPREC_DTYPE_BF16:
    type = ncclBfloat16;
    return true;
  case MIXPREC_DTYPE_I32:
    type = ncclInt32;
    return true;
  case MIXPREC_DTYPE_I64:
    type = ncclInt64;
    return true;
  default:
    return false;
  }
}

/// NCCL on device buffers; host-memory bootstrap operations over the MPI
/// collective it was opened with, else through a device buffer.
class NcclCollective final : public Collective {
public:
  NcclCollective(const NcclApi &nccl, const CudaApi &cu, Collective *bootstrap, int rank,
                 int worldSize, double timeoutSeconds)
      : nccl(nccl), cu(cu), bootstrap(bootstrap), rank_(rank), size_(worldSize),
        timeoutSeconds(timeoutSeconds) {}

  ~NcclCollective() override {
    // The device memory and stream belong to the context current at open.
    CUcontext previous = nullptr;
    cu.cuCtxGetCurrent(&previous);
    if (context && previous != context)
      cu.cuCtxSetCurrent(context);
    if (comm) {
      if (failed.empty() && finalize())
        nccl.ncclCommDestroy(comm);
      else
        nccl.ncclCommAbort(comm);
    }
    if (staging)
      cu.cuMemFree(staging);
    if (stream)
      cu.cuStreamDestroy(stream);
    if (context && previous != context)
      cu.cuCtxSetCurrent(previous);
  }

  /// Joins the communicator of `id`; "" or why not.
  std::string init(const ncclUniqueId &id, CUcontext current) {
    context = current;
    if (CUresult r = cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
      return prefix() + "cuStreamCreate: " + cudaError(cu, r);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t r = nccl.ncclCommInitRankConfig(&comm, size_, id, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      std::string why = ncclError(r);
      if (comm)
        nccl.ncclCommAbort(comm);
      comm = nullptr;
      return prefix() + "ncclCommInitRankConfig: " + why;
    }
    const auto deadline = deadlineAfter(timeoutSeconds);
    for (Backoff backoff;; backoff()) {
      ncclResult_t state = ncclInProgress;
      nccl.ncclCommGetAsyncError(comm, &state);
      if (state == ncclSuccess)
        return "";
      if (state != ncclInProgress || Clock::now() >= deadline) {
        std::string why = state != ncclInProgress
                              ? ncclError(state)
                              : format("the other ranks did not join within %g s", timeoutSeconds);
        nccl.ncclCommAbort(comm);
        comm = nullptr;
        return prefix() + "ncclCommInitRankConfig: " + why;
      }
    }
  }

  int rank() const override { return rank_; }
  int worldSize() const override { return size_; }
  std::string name() const override { return "nccl"; }
  bool deviceBuffers() const override { return true; }

  std::string allReduce(void *data, size_t count, mixprec_dtype_t dtype, Reduce op,
                        void *stream) override {
    ncclDataType_t type = ncclFloat32;
    std::string what =
        "all_reduce of " + std::to_string(count) + " " + mixprec_dtype_name(dtype) + " elements";
    if (!ncclType(dtype, type))
      return prefix() + what + ": not supported (f32, f16, bf16, i32 and i64 are)";
    if (op != Reduce::Sum && op != Reduce::Mean && op != Reduce::Max)
      return prefix() + what + ": unknown reduction " + std::to_string(int(op));
    // ncclAvg scales each input by 1 / world size before it adds them.
    const ncclRedOp_t ncclOp = op == Reduce::Sum ? ncclSum : op == Reduce::Mean ? ncclAvg : ncclMax;
    if (std::string refused = usable(what); !refused.empty())
      return refused;
    CUstream s = static_cast<CUstream>(stream);
    return complete(what, s, nccl.ncclAllReduce(data, data, count, type, ncclOp, comm, s));
  }

  std::string broadcast(void *data, size_t bytes, int root) override {
    if (bootstrap)
      return bootstrap->broadcast(data, bytes, root);
    std::string what =
        "broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root);
    if (root < 0 || root >= size_)
      return prefix() + what + ": no such rank";
    if (std::string refused = usable(what); !refused.empty())
      return refused;
    if (bytes == 0)
      return "";
    if (std::string e = stage(what, bytes); !e.empty())
      return e;
    if (rank_ == root)
      if (std::string e = copy(what, cu.cuMemcpyHtoDAsync(staging, data, bytes, stream));
          !e.empty())
        return e;
    void *device = reinterpret_cast<void *>(staging);
    if (std::string e = complete(
            what, stream, nccl.ncclBroadcast(device, device, bytes, ncclUint8, root, comm, stream));
        !e.empty())
      return e;
    return copyBack(what, data, staging, bytes);
  }

  std::string allGather(const void *in, void *out, size_t bytes) override {
    if (bootstrap)
      return bootstrap->allGather(in, out, bytes);
    std::string what = "all_gather of " + std::to_string(bytes) + " bytes per rank";
    if (std::string refused = usable(what); !refused.empty())
      return refused;
    if (bytes == 0)
      return "";
    const size_t total = bytes * static_cast<size_t>(size_);
    if (std::string e = stage(what, total); !e.empty())
      return e;
    CUdeviceptr mine = staging + bytes * static_cast<size_t>(rank_);
    if (std::string e = copy(what, cu.cuMemcpyHtoDAsync(mine, in, bytes, stream)); !e.empty())
      return e;
    if (std::string e = complete(what, stream,
                                 nccl.ncclAllGather(reinterpret_cast<void *>(mine),
                                                    reinterpret_cast<void *>(staging), bytes,
                                                    ncclUint8, comm, stream));
        !e.empty())
      return e;
    return copyBack(what, out, staging, total);
  }

  /// The session's device buffers, on its stream.
  std::string gatherBuffers(const void *in, void *out, size_t bytes, void *stream) override {
    std::string what = "all_gather of " + std::to_string(bytes) + " bytes per rank";
    if (std::string refused = usable(what); !refused.empty())
      return refused;
    if (bytes == 0)
      return "";
    CUstream s = static_cast<CUstream>(stream);
    return complete(what, s, nccl.ncclAllGather(in, out, bytes, ncclUint8, comm, s));
  }

  std::string barrier() override {
    if (bootstrap)
      return bootstrap->barrier();
    if (std::string refused = usable("barrier"); !refused.empty())
      return refused;
    if (std::string e = stage("barrier", sizeof(int32_t)); !e.empty())
      return e;
    void *device = reinterpret_cast<void *>(staging);
    return complete("barrier", stream,
                    nccl.ncclAllReduce(device, device, 1, ncclInt32, ncclSum, comm, stream));
  }

  void abort(int exitCode) override {
    if (comm) {
      nccl.ncclCommAbort(comm);
      comm = nullptr;
    }
    if (failed.empty())
      failed = "abort";
    // The MPI job ends every rank; a job bootstrapped through a file has
    // no launcher to do that: the caller exits, and the other ranks time
    // out.
    if (bootstrap)
      bootstrap->abort(exitCode);
  }

private:
  std::string prefix() const {
    return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": ";
  }

  std::string ncclError(ncclResult_t r) const {
    std::string text = nccl.ncclGetErrorString(r);
    const char *last = comm ? nccl.ncclGetLastError(comm) : nccl.ncclGetLastError(nullptr);
    if (last && *last)
      text += std::string(" (") + last + ")";
    return text;
  }

  /// "" where `what` may start, else why not (an earlier one failed).
  std::string usable(const std::string &what) const {
    if (failed.empty())
      return "";
    return prefix() + what + ": not started: an earlier " + failed +
           " failed and the NCCL communicator was aborted; abort the job";
  }

  /// Fails `what`: the communicator is aborted, every later operation
  /// refused.
  std::string fail(const std::string &what, const std::string &why) {
    if (comm) {
      nccl.ncclCommAbort(comm);
      comm = nullptr;
    }
    if (failed.empty())
      failed = what;
    return prefix() + what + ": " + why;
  }

  /// Completes `what`, which NCCL enqueued on `s` returning `enqueued`:
  /// waits until the communicator has no operation in progress and `s` is
  /// idle, or the deadline passes.
  std::string complete(const std::string &what, CUstream s, ncclResult_t enqueued) {
    if (enqueued != ncclSuccess && enqueued != ncclInProgress)
      return fail(what, "NCCL: " + ncclError(enqueued));
    const auto deadline = deadlineAfter(timeoutSeconds);
    for (Backoff backoff;; backoff()) {
      ncclResult_t state = ncclInProgress;
      if (ncclResult_t r = nccl.ncclCommGetAsyncError(comm, &state); r != ncclSuccess)
        return fail(what, "NCCL: " + ncclError(r));
      if (state != ncclSuccess && state != ncclInProgress)
        return fail(what, "NCCL: " + ncclError(state));
      if (state == ncclSuccess) {
        CUresult q = cu.cuStreamQuery(s);
        if (q == CUDA_SUCCESS)
          return "";
        if (q != CUDA_ERROR_NOT_READY)
          return fail(what, "CUDA: " + cudaError(cu, q));
      }
      if (Clock::now() >= deadline)
        return fail(what, format("no reply from the other ranks within %g s (a rank stopped or "
                                 "hangs); the NCCL communicator was aborted",
                                 timeoutSeconds));
    }
  }

  /// At least `bytes` of device memory in `staging`.
  std::string stage(const std::string &what, size_t bytes) {
    if (bytes <= stagingBytes)
      return "";
    if (staging)
      cu.cuMemFree(staging);
    staging = 0;
    stagingBytes = 0;
    if (CUresult r = cu.cuMemAlloc(&staging, bytes); r != CUDA_SUCCESS)
      return prefix() + what + ": cuMemAlloc of " + std::to_string(bytes) +
             " bytes: " + cudaError(cu, r);
    stagingBytes = bytes;
    return "";
  }

  std::string copy(const std::string &what, CUresult r) {
    return r == CUDA_SUCCESS ? "" : fail(what, "CUDA copy: " + cudaError(cu, r));
  }

  /// Device `from` to host `to`, completed.
  std::string copyBack(const std::string &what, void *to, CUdeviceptr from, size_t bytes) {
    if (std::string e = copy(what, cu.cuMemcpyDtoHAsync(to, from, bytes, stream)); !e.empty())
      return e;
    const auto deadline = deadlineAfter(timeoutSeconds);
    for (Backoff backoff;; backoff()) {
      CUresult q = cu.cuStreamQuery(stream);
      if (q == CUDA_SUCCESS)
        return "";
      if (q != CUDA_ERROR_NOT_READY)
        return fail(what, "CUDA: " + cudaError(cu, q));
      if (Clock::now() >= deadline)
        return fail(what, format("a device-to-host copy did not end within %g s", timeoutSeconds));
    }
  }

  /// Flushes the communicator (ncclCommFinalize) before it is destroyed;
  /// false when that fails or does not end within the timeout.
  bool finalize() {
    if (nccl.ncclCommFinalize(comm) != ncclSuccess) {
      ncclResult_t state = ncclInProgress;
      nccl.ncclCommGetAsyncError(comm, &state);
      if (state != ncclInProgress)
        return false;
    }
    const auto deadline = deadlineAfter(timeoutSeconds);
    for (Backoff backoff;; backoff()) {
      ncclResult_t state = ncclInProgress;
      if (nccl.ncclCommGetAsyncError(comm, &state) != ncclSuccess)
        return false;
      if (state == ncclSuccess)
        return true;
      if (state != ncclInProgress || Clock::now() >= deadline)
        return false;
    }
  }

  const NcclApi &nccl;
  const CudaApi &cu;
  Collective *bootstrap;
  int rank_, size_;
  double timeoutSeconds;
  ncclComm_t comm = nullptr;
  CUcontext context = nullptr; ///< current when the collective was opened
  CUstream stream = nullptr;   ///< the host-memory operations' own stream
  CUdeviceptr staging = 0;     ///< their device buffer
  size_t stagingBytes = 0;
  std::string failed; ///< the operation that failed, if one did
};

} // namespace

std::string probeNccl(std::string *version) {
  const NcclApi *api = nullptr;
  if (std::string error = nccl(&api); !error.empty())
    return error;
  if (version)
    *version = api->version;
  return "";
}

std::unique_ptr<Collective> openNcclCollective(Collective *bootstrap, const std::string &idFile,
                                               int rank, int worldSize, double timeoutSeconds,
                                               std::string &error) {
  if (bootstrap) {
    rank = bootstrap->rank();
    worldSize = bootstrap->worldSize();
  }
  const std::string who =
      "NCCL: rank " + std::to_string(rank) + " of " + std::to_string(worldSize) + ": ";
  if (worldSize < 1 || rank < 0 || rank >= worldSize) {
    error = who + "no such rank";
    return nullptr;
  }
  if (!(timeoutSeconds > 0)) {
    error = who + format("the timeout must be above 0 s, not %g", timeoutSeconds);
    return nullptr;
  }
  if (!bootstrap && idFile.empty()) {
    error = who + "neither a bootstrap collective nor an id file to exchange the unique id";
    return nullptr;
  }
  const NcclApi *api = nullptr;
  if (error = nccl(&api); !error.empty())
    return nullptr;
  const CudaApi *cu = nullptr;
  if (error = cudaDriver(&cu); !error.empty()) {
    error = who + error;
    return nullptr;
  }
  CUcontext context = nullptr;
  if (cu->cuCtxGetCurrent(&context) != CUDA_SUCCESS || !context) {
    error = who + "no current CUDA context on this thread (make the session's device current "
                  "first)";
    return nullptr;
  }

  ncclUniqueId id{};
  if (rank == 0)
    if (ncclResult_t r = api->ncclGetUniqueId(&id); r != ncclSuccess) {
      error = who + "ncclGetUniqueId: " + api->ncclGetErrorString(r);
      return nullptr;
    }
  if (bootstrap) {
    if (std::string e = bootstrap->broadcast(&id, sizeof id, 0); !e.empty()) {
      error = "NCCL: sending the unique id: " + e;
      return nullptr;
    }
  } else if (rank == 0) {
    if (std::string e = writeIdFile(idFile, id, worldSize); !e.empty()) {
      error = who + e;
      return nullptr;
    }
  } else if (std::string e = readIdFile(idFile, worldSize, timeoutSeconds, id); !e.empty()) {
    error = who + e;
    return nullptr;
  }

  auto collective =
      std::make_unique<NcclCollective>(*api, *cu, bootstrap, rank, worldSize, timeoutSeconds);
  std::string e = collective->init(id, context);
  // Every rank has read the file once the communicator exists (or the job
  // failed): rank 0 removes it, so that no later job reads a stale id.
  if (!bootstrap && rank == 0)
    std::remove(idFile.c_str());
  if (!e.empty()) {
    error = "NCCL: " + e;
    return nullptr;
  }
  error.clear();
  return collective;
}

#endif // MIXPREC_HAVE_NCCL

} // namespace mixprec::trainer
