//===- Collective.h - collectives for data-parallel training ----*- C++ -*-===//
//
// One process per device; a job of N processes (ranks) trains one model,
// each rank on its slice of every batch, the gradients summed across the
// ranks inside the compiled step (its all_reduce steps call the session's
// collective: runtime.h, mixprec_session_set_collective).
//
// Built on existing libraries, loaded at run time so that the runtime and
// the trainers start where they are absent:
//  - MPI (OpenMPI or any MPI; host buffers, the CPU backend's): through
//    the plugin libmixprec_mpi.so, which links libmpi and is itself
//    loaded with dlopen (its C table: train/collective/MpiPlugin.h);
//  - NCCL (device buffers and the session's CUstream, the CUDA backend's):
//    libnccl.so.2 through dlopen; its communicator's unique id goes from
//    rank 0 to the others over MPI or through a file, as torch.distributed
//    does (a TCP store is not built: a job either has MPI or a shared
//    file system).
//
// Every operation either completes on every rank or fails with a message
// that names this rank, the operation and what went wrong; an operation
// that waits longer than the timeout for the other ranks fails instead of
// hanging (a rank died or hangs), and abort() then ends the whole job.
//
// No LLVM or MLIR here (the runtime-only build compiles this file).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TRAIN_COLLECTIVE_H
#define MIXPREC_TRAIN_COLLECTIVE_H

#include "mixprec/runtime.h"

#include <cstddef>
#include <memory>
#include <string>

namespace mixprec::trainer {

/// Mean: the sum divided by the world size in FP32, rounded once to the
/// dtype (NCCL's ncclAvg multiplies each input by 1 / world size first:
/// the same bits for a world size that is a power of two).
enum class Reduce { Sum = MIXPREC_REDUCE_SUM, Mean = MIXPREC_REDUCE_MEAN, Max = MIXPREC_REDUCE_MAX };

/// One process's view of a data-parallel job.
class Collective {
public:
  virtual ~Collective() = default;

  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  /// "local", "mpi" or "nccl".
  virtual std::string name() const = 0;
  /// Whether allReduce takes device pointers and a CUstream (NCCL).
  virtual bool deviceBuffers() const { return false; }

  /// Reduces `count` elements of `dtype` at `data` across the ranks, in
  /// place; every rank ends with the same bits. F32, F16, BF16 (summed in
  /// FP32 per pair and rounded to nearest even where the library has no
  /// such type), I32 and I64. `stream`: the CUstream for device buffers
  /// (NCCL returns once the reduction on it has completed). "" or the error.
  /// After an error the contents of `data` are unspecified; after one that
  /// involved the other ranks (a timeout, a transport error) every later
  /// operation is refused, since the ranks are out of step: call abort().
  /// After a timeout MPI may still write `data` until the job ends.
  virtual std::string allReduce(void *data, size_t count, mixprec_dtype_t dtype, Reduce op,
                                void *stream = nullptr) = 0;
  /// `bytes` at `data` of rank `root` to every rank (host memory).
  virtual std::string broadcast(void *data, size_t bytes, int root) = 0;
  /// Every rank's `bytes` at `in` into `out` (worldSize() x bytes, in rank
  /// order; host memory).
  virtual std::string allGather(const void *in, void *out, size_t bytes) = 0;
  /// allGather of the session's buffers (the all_gather steps of a step
  /// with sharded optimizer state): device pointers on `stream` where
  /// deviceBuffers() (NCCL), else host memory as allGather.
  virtual std::string gatherBuffers(const void *in, void *out, size_t bytes, void *stream) {
    (void)stream;
    return allGather(in, out, bytes);
  }
  virtual std::string barrier() = 0;
  /// Ends every rank of the job after an error on this one (MPI_Abort), so
  /// that no rank waits for this one; returns only where there is no job.
  virtual void abort(int exitCode) { (void)exitCode; }

  /// What the session's all_reduce and all_gather steps asked of this
  /// collective through hook(): calls, bytes reduced or gathered (this
  /// rank's contribution) and the seconds spent, waiting
  /// for the other ranks included (the communication share of a step).
  struct Traffic {
    int64_t calls = 0;
    double bytes = 0, seconds = 0;
  };
  Traffic traffic() const { return traffic_; }

  /// The callback table a session takes (valid while this object lives):
  /// its all_reduce calls allReduce and, on an error, writes the message
  /// (truncated, NUL-terminated) into the caller's buffer and returns 1.
  mixprec_collective_t hook();

private:
  Traffic traffic_;
};

/// Where this process stands in the job its launcher started, from the
/// environment (mpirun: OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK}; MPICH,
/// Slurm and others: PMI_RANK/PMI_SIZE, PMIX_RANK): world size 1, rank 0
/// when no launcher started it.
struct LaunchInfo {
  int rank = 0, worldSize = 1, localRank = 0;
  std::string launcher; ///< "" (none), "openmpi", "pmi", ...
};
LaunchInfo launchInfo();

/// A job of one process: every reduction, broadcast and gather a copy.
std::unique_ptr<Collective> localCollective();

/// MPI_COMM_WORLD (initialises MPI; finalised when the last such object
/// goes, unless an operation failed or the job was aborted: then the process
/// exits without MPI_Finalize, which could wait for a dead rank) through
/// libmixprec_mpi.so: found in $MIXPREC_MPI_PLUGIN, else next to the
/// running executable, else in the folder of libmixprec_runtime, else on
/// the loader's path. Null with `error` saying which library could not be
/// loaded, or why MPI did not start. `timeoutSeconds` bounds each wait for
/// the other ranks (> 0). MPI starts once per process: open it after the
/// last one was destroyed and the call fails. Without a launcher (no
/// mpirun) Open MPI starts a job of one rank. MPI_THREAD_FUNNELED: every
/// call from the thread that opened it.
std::unique_ptr<Collective> openMpiCollective(double timeoutSeconds, std::string &error);

/// NCCL over the ranks of `bootstrap` (an MPI collective, which sends the
/// unique id from rank 0), or, without one, of the `rank` and `worldSize`
/// given, the id exchanged through `idFile` (written atomically by rank 0,
/// read by the others within `timeoutSeconds`, removed by rank 0 once the
/// communicator exists; a file left by an earlier job that failed would be
/// read as this job's: give each job its own path). Uses the CUDA device of
/// the calling thread's current context. libnccl.so.2 from
/// $MIXPREC_NCCL_LIBRARY, else the loader's path, else /usr/local/cuda/lib64;
/// the CUDA driver as the runtime loads it. Null with `error` naming the
/// library or the NCCL call that failed. The communicator is non-blocking,
/// so that each operation, and joining, can end at the timeout (then it is
/// aborted). broadcast, allGather and barrier (host memory) go over
/// `bootstrap`, which must outlive this object, or else through a device
/// buffer of this object's own stream.
std::unique_ptr<Collective> openNcclCollective(Collective *bootstrap, const std::string &idFile,
                                               int rank, int worldSize, double timeoutSeconds,
                                               std::string &error);

/// Whether libnccl loads and has every symbol the collective calls: "" (and
/// its version, "2.27.3", in `version`) or why not, naming the file or the
/// symbol. Needs no GPU. A library loaded once stays the process's (a later
/// change of $MIXPREC_NCCL_LIBRARY is not seen); failures are retried.
std::string probeNccl(std::string *version = nullptr);

} // namespace mixprec::trainer

#endif // MIXPREC_TRAIN_COLLECTIVE_H
