//===- Collective.cpp - collectives for data-parallel training -------------===//
//
// The session's hook, the launcher's facts, the one-process collective and
// the MPI collective, which loads libmixprec_mpi.so (train/collective/
// MpiPlugin.h) with dlopen so that nothing here links libmpi. NCCL lives in
// train/collective/NcclCollective.cpp.
//
//===----------------------------------------------------------------------===//
#include "train/Collective.h"

#include "train/collective/MpiPlugin.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace mixprec::trainer {
namespace {

/// The bytes an error message of the plugin may take.
constexpr size_t kErrorBytes = 2048;

/// printf into a std::string.
template <typename... Args> std::string format(const char *spec, Args... args) {
  char text[512];
  std::snprintf(text, sizeof text, spec, args...);
  return text;
}

/// "rank 0 of 1: ".
std::string rankPrefix(int rank, int worldSize) {
  return "rank " + std::to_string(rank) + " of " + std::to_string(worldSize) + ": ";
}

/// Copies `message` into a C caller's buffer: truncated, NUL-terminated.
void writeError(const std::string &message, char *error, size_t errorSize) {
  if (!error || !errorSize)
    return;
  size_t n = std::min(message.size(), errorSize - 1);
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

/// Whether a reduction takes `dtype`.
bool reducible(mixprec_dtype_t dtype) {
  switch (dtype) {
  case MIXPREC_DTYPE_F32:
  case MIXPREC_DTYPE_F16:
  case MIXPREC_DTYPE_BF16:
  case MIXPREC_DTYPE_I32:
  case MIXPREC_DTYPE_I64:
    return true;
  default:
    return false;
  }
}

/// "all_reduce of 3 f32 elements" (the runtime's dtype names).
std::string describeAllReduce(size_t count, mixprec_dtype_t dtype) {
  return "all_reduce of " + std::to_string(count) + " " + mixprec_dtype_name(dtype) + " elements";
}

// ---- The launcher's facts ---------------------------------------------------

/// The environment variable `name` as a non-negative int; false when it is
/// unset or not a plain decimal number.
bool envInt(const char *name, int &out) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return false;
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno || *end || value < 0 || value > INT_MAX)
    return false;
  out = static_cast<int>(value);
  return true;
}

/// Fills `info` from one launcher's variables; false when they are absent
/// or inconsistent (then `info` is left alone).
bool fromLauncher(const char *launcher, const char *rankVar, const char *sizeVar,
                  const char *localRankVar, LaunchInfo &info) {
  int rank = 0, size = 0, localRank = 0;
  if (!envInt(rankVar, rank) || !envInt(sizeVar, size) || size < 1 || rank >= size)
    return false;
  if (!localRankVar || !envInt(localRankVar, localRank))
    localRank = 0;
  info.rank = rank;
  info.worldSize = size;
  info.localRank = localRank;
  info.launcher = launcher;
  return true;
}

// ---- The one-process collective ---------------------------------------------

/// World size 1: every reduction of one rank (a mean too) is its input.
class LocalCollective final : public Collective {
public:
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  std::string name() const override { return "local"; }

  std::string allReduce(void *data, size_t count, mixprec_dtype_t dtype, Reduce op,
                        void *) override {
    std::string what = describeAllReduce(count, dtype);
    if (!reducible(dtype))
      return rankPrefix(0, 1) + what + ": not supported (f32, f16, bf16, i32 and i64 are)";
    if (op != Reduce::Sum && op != Reduce::Mean && op != Reduce::Max)
      return rankPrefix(0, 1) + what + ": unknown reduction " + std::to_string(int(op));
    if (count && !data)
      return rankPrefix(0, 1) + what + ": null buffer";
    return "";
  }

  std::string broadcast(void *data, size_t bytes, int root) override {
    if (root != 0)
      return rankPrefix(0, 1) + "broadcast of " + std::to_string(bytes) + " bytes from rank " +
             std::to_string(root) + ": no such rank";
    (void)data;
    return "";
  }

  std::string allGather(const void *in, void *out, size_t bytes) override {
    if (bytes && (!in || !out))
      return rankPrefix(0, 1) + "all_gather of " + std::to_string(bytes) +
             " bytes per rank: null buffer";
    if (bytes && in != out)
      std::memmove(out, in, bytes);
    return "";
  }

  std::string barrier() override { return ""; }
};

// ---- MPI through libmixprec_mpi.so ------------------------------------------

constexpr const char *kMpiPluginName = "libmixprec_mpi.so";

/// The folder of `path` ("" for none).
std::string folderOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

/// The running executable's folder (/proc/self/exe), or "".
std::string executableFolder() {
  char path[PATH_MAX + 1];
  ssize_t n = readlink("/proc/self/exe", path, PATH_MAX);
  if (n <= 0)
    return "";
  return folderOf(std::string(path, static_cast<size_t>(n)));
}

/// The folder of the libmixprec_runtime this process uses, or "". dlsym
/// finds the library's own definition even where the executable has a PLT
/// entry for the function.
std::string runtimeFolder() {
  void *symbol = dlsym(RTLD_DEFAULT, "mixprec_dtype_size");
  if (!symbol) // (a reference also keeps the linker from dropping the runtime)
    symbol = reinterpret_cast<void *>(&mixprec_dtype_size);
  Dl_info info{};
  if (!symbol || !dladdr(symbol, &info) || !info.dli_fname)
    return "";
  return folderOf(info.dli_fname);
}

/// A loaded plugin: its table and where it came from.
struct MpiPlugin {
  const mixprec_mpi_plugin_t *table = nullptr;
  std::string path;
};

/// Opens the plugin at `path` (a file that exists, or a bare name for the
/// loader's path) and checks its table. RTLD_GLOBAL: Open MPI's components,
/// which libmpi loads with dlopen, look for libmpi's symbols in the global
/// scope (mpi4py loads libmpi so for the same reason).
std::string openPlugin(const std::string &path, MpiPlugin &out) {
  void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *why = dlerror();
    return why ? why : "dlopen failed";
  }
  // Never closed: MPI does not survive being unloaded.
  auto entry =
      reinterpret_cast<mixprec_mpi_plugin_entry_t>(dlsym(handle, MIXPREC_MPI_PLUGIN_ENTRY));
  if (!entry)
    return "'" + path + "' is not the MPI plugin: it lacks " MIXPREC_MPI_PLUGIN_ENTRY;
  const mixprec_mpi_plugin_t *table = entry();
  if (!table || table->abi_version != MIXPREC_MPI_PLUGIN_ABI ||
      table->struct_size < sizeof(mixprec_mpi_plugin_t))
    return "'" + path + "' is another version of the MPI plugin (table version " +
           std::to_string(table ? table->abi_version : 0) + ", this program needs " +
           std::to_string(MIXPREC_MPI_PLUGIN_ABI) + "): rebuild it with this mixprec";
  Dl_info info{};
  out.table = table;
  out.path =
      dladdr(reinterpret_cast<void *>(entry), &info) && info.dli_fname ? info.dli_fname : path;
  return "";
}

/// Opens the plugin file at `path`, which exists: a failure says which file
/// and why (most likely libmpi missing).
std::string openPluginFile(const std::string &path, MpiPlugin &out) {
  std::string why = openPlugin(path, out);
  if (why.empty())
    return "";
  return "cannot load the MPI plugin " + path + ": " + why +
         " (is MPI installed? Debian: apt-get install openmpi-bin)";
}

/// Finds and loads the plugin where Collective.h says; "" or why not.
std::string findPlugin(MpiPlugin &out) {
  if (const char *forced = std::getenv("MIXPREC_MPI_PLUGIN"); forced && *forced) {
    if (access(forced, F_OK) != 0)
      return std::string("cannot load the MPI plugin MIXPREC_MPI_PLUGIN=") + forced + ": " +
             std::strerror(errno);
    return openPluginFile(forced, out);
  }
  std::string looked;
  for (const std::string &folder : {executableFolder(), runtimeFolder()}) {
    if (folder.empty())
      continue;
    std::string path = folder + "/" + kMpiPluginName;
    if (access(path.c_str(), F_OK) == 0)
      return openPluginFile(path, out);
    looked += folder + ", ";
  }
  std::string why = openPlugin(kMpiPluginName, out);
  if (why.empty())
    return "";
  return std::string("MPI is not available: ") + kMpiPluginName + " is neither in " + looked +
         "nor on the loader's path (" + why +
         "); build mixprec with MPI (Debian: apt-get install libopenmpi-dev) or set "
         "MIXPREC_MPI_PLUGIN to the plugin's path";
}

/// The plugin, loaded on the first successful call; failures are retried.
std::string mpiPlugin(MpiPlugin &out) {
  static std::mutex mutex;
  static MpiPlugin loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded.table) {
    MpiPlugin found;
    if (std::string error = findPlugin(found); !error.empty())
      return error;
    loaded = found;
  }
  out = loaded;
  return "";
}

/// MPI_COMM_WORLD (a duplicate) through the plugin's table.
class MpiCollective final : public Collective {
public:
  MpiCollective(const mixprec_mpi_plugin_t &table, void *comm)
      : t(table), comm(comm), rank_(table.rank(comm)), size_(table.world_size(comm)) {}
  ~MpiCollective() override { t.close(comm); }

  int rank() const override { return rank_; }
  int worldSize() const override { return size_; }
  std::string name() const override { return "mpi"; }

  std::string allReduce(void *data, size_t count, mixprec_dtype_t dtype, Reduce op,
                        void *) override {
    char error[kErrorBytes];
    return result(t.all_reduce(comm, data, count, dtype, static_cast<mixprec_reduce_op_t>(op),
                               error, sizeof error),
                  error);
  }
  std::string broadcast(void *data, size_t bytes, int root) override {
    char error[kErrorBytes];
    return result(t.broadcast(comm, data, bytes, root, error, sizeof error), error);
  }
  std::string allGather(const void *in, void *out, size_t bytes) override {
    char error[kErrorBytes];
    return result(t.all_gather(comm, in, out, bytes, error, sizeof error), error);
  }
  std::string barrier() override {
    char error[kErrorBytes];
    return result(t.barrier(comm, error, sizeof error), error);
  }
  void abort(int exitCode) override { t.abort(comm, exitCode); }

private:
  /// "" for 0, else the plugin's message.
  static std::string result(int status, const char *error) {
    return status == 0 ? std::string() : std::string(error);
  }

  const mixprec_mpi_plugin_t &t;
  void *comm;
  int rank_, size_;
};

} // namespace

mixprec_collective_t Collective::hook() {
  mixprec_collective_t h{};
  h.struct_size = sizeof h;
  h.context = this;
  h.rank = rank();
  h.world_size = worldSize();
  h.device_buffers = deviceBuffers() ? 1 : 0;
  h.all_reduce = [](void *context, void *data, size_t count, mixprec_dtype_t dtype,
                    mixprec_reduce_op_t op, void *stream, char *error, size_t errorSize) -> int {
    auto *self = static_cast<Collective *>(context);
    if (op != MIXPREC_REDUCE_SUM && op != MIXPREC_REDUCE_MEAN && op != MIXPREC_REDUCE_MAX) {
      writeError(rankPrefix(self->rank(), self->worldSize()) + "all_reduce: unknown reduction " +
                     std::to_string(op),
                 error, errorSize);
      return 1;
    }
    auto start = std::chrono::steady_clock::now();
    std::string message = self->allReduce(data, count, dtype, static_cast<Reduce>(op), stream);
    Traffic &t = self->traffic_;
    t.calls += 1;
    t.bytes += double(count) * double(mixprec_dtype_size(dtype));
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (message.empty())
      return 0;
    writeError(message, error, errorSize);
    return 1;
  };
  h.all_gather = [](void *context, const void *send, void *recv, size_t count,
                    mixprec_dtype_t dtype, void *stream, char *error, size_t errorSize) -> int {
    auto *self = static_cast<Collective *>(context);
    const double bytes = double(count) * double(mixprec_dtype_size(dtype));
    auto start = std::chrono::steady_clock::now();
    std::string message =
        self->gatherBuffers(send, recv, count * mixprec_dtype_size(dtype), stream);
    Traffic &t = self->traffic_;
    t.calls += 1;
    t.bytes += bytes;
    t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (message.empty())
      return 0;
    writeError(message, error, errorSize);
    return 1;
  };
  return h;
}

LaunchInfo launchInfo() {
  LaunchInfo info;
  if (fromLauncher("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                   "OMPI_COMM_WORLD_LOCAL_RANK", info))
    return info;
  // MPICH's and Intel MPI's Hydra, Slurm's srun --mpi=pmi2.
  if (fromLauncher("pmi", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", info)) {
    if (!std::getenv("MPI_LOCALRANKID"))
      envInt("SLURM_LOCALID", info.localRank);
    return info;
  }
  // PMIx without Open MPI's variables (srun --mpi=pmix): the size from Slurm.
  if (fromLauncher("pmix", "PMIX_RANK", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID", info))
    return info;
  return info;
}

std::unique_ptr<Collective> localCollective() { return std::make_unique<LocalCollective>(); }

std::unique_ptr<Collective> openMpiCollective(double timeoutSeconds, std::string &error) {
  if (!(timeoutSeconds > 0)) {
    error = format("MPI: the timeout must be above 0 s, not %g", timeoutSeconds);
    return nullptr;
  }
  MpiPlugin plugin;
  if (error = mpiPlugin(plugin); !error.empty())
    return nullptr;
  char message[kErrorBytes] = {0};
  void *comm = plugin.table->open(timeoutSeconds, message, sizeof message);
  if (!comm) {
    error = std::string(message) + " (plugin " + plugin.path + ", " +
            plugin.table->library_version() + ")";
    return nullptr;
  }
  error.clear();
  return std::make_unique<MpiCollective>(*plugin.table, comm);
}

} // namespace mixprec::trainer
