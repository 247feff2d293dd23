//===- MpiPlugin.cpp - libmixprec_mpi.so: the collectives on MPI ----------===//
//
// The MPI side of train/Collective.h, behind the C table of MpiPlugin.h.
// Each operation is started non-blocking (MPI_Iallreduce, MPI_Ibcast,
// MPI_Iallgather, MPI_Ibarrier) on a duplicate of MPI_COMM_WORLD and
// completed by polling MPI_Test until the communicator's deadline, so that
// a rank that died or hangs makes the others fail with a message instead of
// waiting for ever.
//
// Floating-point reductions are user-defined MPI_Ops: F16 and BF16 have no
// MPI type (they travel as 2-byte contiguous elements, are widened to FP32
// per pair and rounded back to nearest even by common/numerics), and for
// every float type the operation gives the same bits whatever the order of
// its operands (a NaN result is the canonical quiet NaN, max prefers +0 to
// -0), so every rank ends with the same bits. Integers use MPI_SUM/MPI_MAX.
// A mean is a sum divided by the world size afterwards.
//
//===----------------------------------------------------------------------===//
#include "train/collective/MpiPlugin.h"

#include "common/numerics/Rounding.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace numerics = mixprec::numerics;

/// The most elements (or bytes) one MPI call moves: MPI counts are ints.
constexpr size_t kMaxChunk = size_t(1) << 30;

/// The process's MPI, shared by every communicator this plugin opened.
struct Process {
  int open = 0;                          ///< communicators open now
  bool startedMpi = false;               ///< this plugin called MPI_Init_thread
  bool finalized = false;                ///< this plugin called MPI_Finalize
  bool noFinalize = false;               ///< a communicator kept a request MPI never completed
  MPI_Datatype half = MPI_DATATYPE_NULL; ///< 2 contiguous bytes (F16, BF16)
  MPI_Op ops[3][2] = {};                 ///< [F32, F16, BF16][sum, max], user-defined
};
Process process;

/// One communicator: what `open` returns.
struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  double timeoutSeconds = 60;
  /// The operation that failed (it times out or MPI reported an error):
  /// every later one is refused, since the ranks are out of step.
  std::string failed;
  /// A timed-out operation's request, still in MPI's hands (its buffer
  /// too: the caller's, or one of `keepAlive`).
  MPI_Request pending = MPI_REQUEST_NULL;
  /// This plugin's own buffers of the timed-out operation.
  std::vector<std::vector<char>> keepAlive;
  bool aborted = false;
};

/// printf into a std::string.
template <typename... Args> std::string format(const char *spec, Args... args) {
  char text[512];
  std::snprintf(text, sizeof text, spec, args...);
  return text;
}

/// Copies `message` into the caller's buffer (truncated, NUL-terminated); 1.
int fail(const std::string &message, char *error, size_t errorSize) {
  if (error && errorSize) {
    size_t n = std::min(message.size(), errorSize - 1);
    std::memcpy(error, message.data(), n);
    error[n] = '\0';
  }
  return 1;
}

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(std::max(length, 0)));
}

std::string prefix(const Comm &c) {
  return "rank " + std::to_string(c.rank) + " of " + std::to_string(c.size) + ": ";
}

const char *dtypeName(mixprec_dtype_t dtype) {
  switch (dtype) {
  case MIXPREC_DTYPE_F32:
    return "f32";
  case MIXPREC_DTYPE_F16:
    return "f16";
  case MIXPREC_DTYPE_BF16:
    return "bf16";
  case MIXPREC_DTYPE_I32:
    return "i32";
  case MIXPREC_DTYPE_I64:
    return "i64";
  case MIXPREC_DTYPE_F8E4M3FN:
    return "f8E4M3FN";
  case MIXPREC_DTYPE_F8E5M2:
    return "f8E5M2";
  case MIXPREC_DTYPE_BOOL:
    return "bool";
  default:
    return "unknown";
  }
}

// ---- Floating-point operations, the same bits in either operand order -------

/// The quiet NaN every rank's float reduction gives for a NaN result.
inline float canonicalNaN() { return std::numeric_limits<float>::quiet_NaN(); }

/// a + b, with a NaN result made canonical (NaN + NaN keeps the first
/// operand's payload on x86, so the order would show in the bits).
inline float orderFreeSum(float a, float b) {
  float r = a + b;
  return r == r ? r : canonicalNaN();
}

/// max(a, b): NaN when either is NaN, +0 over -0.
inline float orderFreeMax(float a, float b) {
  if (a != a || b != b)
    return canonicalNaN();
  if (a == b)
    return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

template <bool Max> void f32Op(void *in, void *inout, int *len, MPI_Datatype *) {
  const float *a = static_cast<const float *>(in);
  float *b = static_cast<float *>(inout);
  for (int i = 0, n = *len; i < n; ++i)
    b[i] = Max ? orderFreeMax(a[i], b[i]) : orderFreeSum(a[i], b[i]);
}

/// F16 or BF16 elements, widened to FP32 per pair (exact), combined, and
/// rounded back to nearest even with the product's one rounding function.
template <numerics::Format F, bool Max>
void halfOp(void *in, void *inout, int *len, MPI_Datatype *) {
  constexpr int kBlock = 512;
  float a[kBlock], b[kBlock];
  const uint16_t *x = static_cast<const uint16_t *>(in);
  uint16_t *y = static_cast<uint16_t *>(inout);
  for (int i = 0, n = *len; i < n; i += kBlock) {
    int k = std::min(kBlock, n - i);
    numerics::decodeArray(F, x + i, a, static_cast<size_t>(k));
    numerics::decodeArray(F, y + i, b, static_cast<size_t>(k));
    for (int j = 0; j < k; ++j)
      b[j] = Max ? orderFreeMax(a[j], b[j]) : orderFreeSum(a[j], b[j]);
    numerics::encodeArray(F, b, y + i, static_cast<size_t>(k));
  }
}

/// Creates the 2-byte type and the user-defined operations once per
/// process (after MPI_Init).
int createTypesAndOps(std::string &why) {
  if (process.half != MPI_DATATYPE_NULL)
    return MPI_SUCCESS;
  MPI_User_function *fns[3][2] = {
      {f32Op<false>, f32Op<true>},
      {halfOp<numerics::Format::F16, false>, halfOp<numerics::Format::F16, true>},
      {halfOp<numerics::Format::BF16, false>, halfOp<numerics::Format::BF16, true>}};
  int rc = MPI_Type_contiguous(2, MPI_BYTE, &process.half);
  if (rc == MPI_SUCCESS)
    rc = MPI_Type_commit(&process.half);
  for (int t = 0; t < 3 && rc == MPI_SUCCESS; ++t)
    for (int o = 0; o < 2 && rc == MPI_SUCCESS; ++o)
      rc = MPI_Op_create(fns[t][o], /*commute=*/1, &process.ops[t][o]);
  if (rc != MPI_SUCCESS)
    why = "creating the F16/BF16 type and the reduction operations: " + mpiErrorString(rc);
  return rc;
}

/// Completes `request` by polling MPI_Test until done or the deadline.
/// "" or the reason (the caller names the rank and operation).
std::string wait(Comm &c, MPI_Request &request) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(c.timeoutSeconds));
  int spins = 0;
  auto nap = std::chrono::microseconds(1);
  for (;;) {
    int done = 0;
    int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
      return mpiErrorString(rc);
    if (done)
      return "";
    if (Clock::now() >= deadline) {
      c.pending = request;
      return format("no reply from the other ranks within %g s (a rank stopped or hangs)",
                    c.timeoutSeconds);
    }
    // Spin briefly (small reductions complete in microseconds), then back
    // off so that waiting ranks leave the cores to the others.
    if (++spins > 200) {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(500));
    }
  }
}

/// Fails `what` on `c`: refused from now on; the message names the rank.
int failOp(Comm &c, const std::string &what, const std::string &why, char *error,
           size_t errorSize) {
  if (c.failed.empty())
    c.failed = what + " (" + why + ")";
  return fail(prefix(c) + what + ": " + why, error, errorSize);
}

/// Whether `what` may start: not after a failed operation.
bool usable(Comm &c, const std::string &what, char *error, size_t errorSize) {
  if (c.aborted)
    return !fail(prefix(c) + what + ": the job was aborted", error, errorSize);
  if (!c.failed.empty())
    return !fail(prefix(c) + what + ": not started: an earlier " + c.failed +
                     " failed and the ranks are out of step; abort the job",
                 error, errorSize);
  return true;
}

/// Starts (`start` returns an MPI code and fills the request) and
/// completes one non-blocking operation; 0 or 1 with the error written.
template <typename Start>
int run(Comm &c, const std::string &what, Start start, char *error, size_t errorSize) {
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = start(request);
  if (rc != MPI_SUCCESS)
    return failOp(c, what, mpiErrorString(rc), error, errorSize);
  std::string why = wait(c, request);
  if (!why.empty())
    return failOp(c, what, why, error, errorSize);
  return 0;
}

// ---- The table's functions ------------------------------------------------

void *openComm(double timeoutSeconds, char *error, size_t errorSize) {
  if (!(timeoutSeconds > 0)) {
    fail(format("MPI: the timeout must be above 0 s, not %g", timeoutSeconds), error, errorSize);
    return nullptr;
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized || process.finalized) {
    fail("MPI: already finalised in this process (MPI starts once per process: keep one "
         "collective open for the whole run)",
         error, errorSize);
    return nullptr;
  }
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
      fail("MPI: MPI_Init_thread failed: " + mpiErrorString(rc), error, errorSize);
      return nullptr;
    }
    process.startedMpi = true;
  }
  std::string why;
  if (createTypesAndOps(why) != MPI_SUCCESS) {
    fail("MPI: " + why, error, errorSize);
    return nullptr;
  }
  Comm *c = new Comm;
  c->timeoutSeconds = timeoutSeconds;
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_rank(c->comm, &c->rank);
  if (rc == MPI_SUCCESS)
    rc = MPI_Comm_size(c->comm, &c->size);
  if (rc != MPI_SUCCESS) {
    fail("MPI: duplicating MPI_COMM_WORLD failed: " + mpiErrorString(rc), error, errorSize);
    delete c;
    return nullptr;
  }
  ++process.open;
  return c;
}

void closeComm(void *comm) {
  Comm *c = static_cast<Comm *>(comm);
  if (!c)
    return;
  // After a failure MPI_Finalize could wait for ever on a rank that
  // stopped: leave MPI running (the process exits without finalising, and
  // the launcher ends the job). The one exception: an operation that timed
  // out and that the late ranks have joined since.
  bool clean = c->failed.empty();
  if (c->pending != MPI_REQUEST_NULL) {
    clean = wait(*c, c->pending).empty();
    if (clean)
      c->pending = MPI_REQUEST_NULL;
  }
  if (!clean)
    process.noFinalize = true;
  else if (!c->aborted)
    MPI_Comm_free(&c->comm);
  bool aborted = c->aborted;
  delete c;
  if (--process.open == 0 && process.startedMpi && !process.noFinalize && !aborted) {
    for (auto &ops : process.ops)
      for (MPI_Op &op : ops)
        if (op != MPI_OP_NULL)
          MPI_Op_free(&op);
    MPI_Type_free(&process.half);
    MPI_Finalize();
    process.finalized = true;
  }
}

int rankOf(void *comm) { return static_cast<Comm *>(comm)->rank; }
int sizeOf(void *comm) { return static_cast<Comm *>(comm)->size; }

const char *libraryVersion() {
  static char text[MPI_MAX_LIBRARY_VERSION_STRING + 1] = {0};
  if (!text[0]) {
    int length = 0;
    if (MPI_Get_library_version(text, &length) != MPI_SUCCESS)
      std::strcpy(text, "unknown MPI");
    text[std::strcspn(text, "\n")] = '\0';
  }
  return text;
}

/// Reduces `count` elements of `elementBytes` at `data` in place, in
/// chunks of at most kMaxChunk; 0 or 1 with the error written.
int reduceInPlace(Comm &c, const std::string &what, void *data, size_t count, size_t elementBytes,
                  MPI_Datatype type, MPI_Op op, char *error, size_t errorSize) {
  char *bytes = static_cast<char *>(data);
  // Nothing to reduce is nothing to send on every rank alike (the counts
  // agree, or MPI's behaviour would be undefined anyway).
  for (size_t done = 0; done < count;) {
    int n = static_cast<int>(std::min(count - done, kMaxChunk));
    char *at = bytes + done * elementBytes;
    if (run(
            c, what,
            [&](MPI_Request &r) {
              return MPI_Iallreduce(MPI_IN_PLACE, at, n, type, op, c.comm, &r);
            },
            error, errorSize))
      return 1;
    done += static_cast<size_t>(n);
  }
  return 0;
}

/// Keeps `buffer` alive while MPI may still write it (a timed-out
/// operation's).
void keepIfPending(Comm &c, std::vector<char> &buffer) {
  if (c.pending != MPI_REQUEST_NULL)
    c.keepAlive.push_back(std::move(buffer));
}

int allReduce(void *comm, void *data, size_t count, mixprec_dtype_t dtype, mixprec_reduce_op_t op,
              char *error, size_t errorSize) {
  Comm &c = *static_cast<Comm *>(comm);
  std::string what =
      "all_reduce of " + std::to_string(count) + " " + dtypeName(dtype) + " elements";
  if (!usable(c, what, error, errorSize))
    return 1;
  if (op != MIXPREC_REDUCE_SUM && op != MIXPREC_REDUCE_MEAN && op != MIXPREC_REDUCE_MAX)
    return fail(prefix(c) + what + ": unknown reduction " + std::to_string(op), error, errorSize);
  const bool isMax = op == MIXPREC_REDUCE_MAX, isMean = op == MIXPREC_REDUCE_MEAN;
  MPI_Datatype type = MPI_DATATYPE_NULL;
  MPI_Op mpiOp = MPI_OP_NULL;
  size_t elementBytes = 0;
  switch (dtype) {
  case MIXPREC_DTYPE_F32:
    type = MPI_FLOAT, mpiOp = process.ops[0][isMax], elementBytes = 4;
    break;
  case MIXPREC_DTYPE_F16:
    type = process.half, mpiOp = process.ops[1][isMax], elementBytes = 2;
    break;
  case MIXPREC_DTYPE_BF16:
    type = process.half, mpiOp = process.ops[2][isMax], elementBytes = 2;
    break;
  case MIXPREC_DTYPE_I32:
    type = MPI_INT32_T, mpiOp = isMax ? MPI_MAX : MPI_SUM, elementBytes = 4;
    break;
  case MIXPREC_DTYPE_I64:
    type = MPI_INT64_T, mpiOp = isMax ? MPI_MAX : MPI_SUM, elementBytes = 8;
    break;
  default:
    return fail(prefix(c) + what + ": not supported (f32, f16, bf16, i32 and i64 are)", error,
                errorSize);
  }
  if (count && !data)
    return fail(prefix(c) + what + ": null buffer", error, errorSize);

  const float worldSize = static_cast<float>(c.size);
  if (isMean && (dtype == MIXPREC_DTYPE_F16 || dtype == MIXPREC_DTYPE_BF16)) {
    // The mean rounds once: summed in FP32 (a widened copy), divided, and
    // only then rounded to the dtype. `data` is untouched on a failure.
    const numerics::Format format =
        dtype == MIXPREC_DTYPE_F16 ? numerics::Format::F16 : numerics::Format::BF16;
    std::vector<char> wide(count * sizeof(float));
    float *values = reinterpret_cast<float *>(wide.data());
    numerics::decodeArray(format, data, values, count);
    if (reduceInPlace(c, what, values, count, sizeof(float), MPI_FLOAT, process.ops[0][0], error,
                      errorSize)) {
      keepIfPending(c, wide);
      return 1;
    }
    for (size_t i = 0; i < count; ++i)
      values[i] /= worldSize;
    numerics::encodeArray(format, values, data, count);
    return 0;
  }
  if (reduceInPlace(c, what, data, count, elementBytes, type, mpiOp, error, errorSize))
    return 1;
  if (isMean) {
    // FP32: the sum divided by the world size, rounded once; integers:
    // truncated toward zero.
    if (dtype == MIXPREC_DTYPE_F32)
      for (float *x = static_cast<float *>(data), *end = x + count; x < end; ++x)
        *x /= worldSize;
    else if (dtype == MIXPREC_DTYPE_I32)
      for (int32_t *x = static_cast<int32_t *>(data), *end = x + count; x < end; ++x)
        *x /= c.size;
    else
      for (int64_t *x = static_cast<int64_t *>(data), *end = x + count; x < end; ++x)
        *x /= c.size;
  }
  return 0;
}

int broadcast(void *comm, void *data, size_t bytes, int root, char *error, size_t errorSize) {
  Comm &c = *static_cast<Comm *>(comm);
  std::string what =
      "broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root);
  if (!usable(c, what, error, errorSize))
    return 1;
  if (root < 0 || root >= c.size)
    return fail(prefix(c) + what + ": no such rank", error, errorSize);
  if (bytes && !data)
    return fail(prefix(c) + what + ": null buffer", error, errorSize);
  char *at = static_cast<char *>(data);
  for (size_t done = 0; done < bytes;) {
    int n = static_cast<int>(std::min(bytes - done, kMaxChunk));
    if (run(
            c, what,
            [&](MPI_Request &r) { return MPI_Ibcast(at + done, n, MPI_BYTE, root, c.comm, &r); },
            error, errorSize))
      return 1;
    done += static_cast<size_t>(n);
  }
  return 0;
}

int allGather(void *comm, const void *in, void *out, size_t bytes, char *error, size_t errorSize) {
  Comm &c = *static_cast<Comm *>(comm);
  std::string what = "all_gather of " + std::to_string(bytes) + " bytes per rank";
  if (!usable(c, what, error, errorSize))
    return 1;
  if (bytes && (!in || !out))
    return fail(prefix(c) + what + ": null buffer", error, errorSize);
  const size_t total = bytes * static_cast<size_t>(c.size);
  char *o = static_cast<char *>(out);
  const char *i = static_cast<const char *>(in);
  // MPI forbids overlapping buffers except for this rank's own slot.
  const bool inPlace = i == o + bytes * static_cast<size_t>(c.rank);
  std::vector<char> copy;
  if (!inPlace && bytes && i < o + total && o < i + bytes) {
    copy.assign(i, i + bytes);
    i = copy.data();
  }
  if (bytes <= kMaxChunk) {
    if (!run(
            c, what,
            [&](MPI_Request &r) {
              int n = static_cast<int>(bytes);
              return MPI_Iallgather(inPlace ? MPI_IN_PLACE : i, n, MPI_BYTE, o, n, MPI_BYTE, c.comm,
                                    &r);
            },
            error, errorSize))
      return 0;
    keepIfPending(c, copy);
    return 1;
  }
  // Beyond an int's count: chunk by chunk through a staging buffer, each
  // rank's piece then moved to its slot.
  if (inPlace) {
    copy.assign(i, i + bytes);
    i = copy.data();
  }
  std::vector<char> staged(kMaxChunk * static_cast<size_t>(c.size));
  for (size_t done = 0; done < bytes;) {
    size_t n = std::min(bytes - done, kMaxChunk);
    if (run(
            c, what,
            [&](MPI_Request &r) {
              return MPI_Iallgather(i + done, static_cast<int>(n), MPI_BYTE, staged.data(),
                                    static_cast<int>(n), MPI_BYTE, c.comm, &r);
            },
            error, errorSize)) {
      keepIfPending(c, copy);
      keepIfPending(c, staged);
      return 1;
    }
    for (int r = 0; r < c.size; ++r)
      std::memcpy(o + static_cast<size_t>(r) * bytes + done, staged.data() + r * n, n);
    done += n;
  }
  return 0;
}

int barrier(void *comm, char *error, size_t errorSize) {
  Comm &c = *static_cast<Comm *>(comm);
  if (!usable(c, "barrier", error, errorSize))
    return 1;
  return run(
      c, "barrier", [&](MPI_Request &r) { return MPI_Ibarrier(c.comm, &r); }, error, errorSize);
}

void abortJob(void *comm, int exitCode) {
  Comm &c = *static_cast<Comm *>(comm);
  c.aborted = true;
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(c.comm != MPI_COMM_NULL ? c.comm : MPI_COMM_WORLD, exitCode);
}

const mixprec_mpi_plugin_t kTable = {
    MIXPREC_MPI_PLUGIN_ABI,
    sizeof(mixprec_mpi_plugin_t),
    openComm,
    closeComm,
    rankOf,
    sizeOf,
    libraryVersion,
    allReduce,
    broadcast,
    allGather,
    barrier,
    abortJob,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const mixprec_mpi_plugin_t *
mixprec_mpi_plugin(void) {
  return &kTable;
}
