//===- ThreadPool.h - the CPU backend's worker threads ----------*- C++ -*-===//
//
// A fixed set of threads that run the chunks of one parallel loop at a
// time: run(chunks, fn) calls fn(chunk, worker) once for every chunk in
// [0, chunks), on the calling thread (worker 0) and the pool's threads
// (workers 1..size()-1), and returns when every chunk has finished. Chunks
// are handed out in order from a shared counter, so which worker runs a
// chunk varies from run to run: callers make each chunk's result depend on
// the chunk alone (per-worker scratch only, reductions merged in an order
// that does not matter), which is how the CPU backend's results stay the
// same bits for any thread count.
//
// Where the runtime is built with OpenMP (GCC's libgomp: the runtime that
// Debian's oneDNN and OpenBLAS use), a loop is one OpenMP parallel region
// of size() threads, so the kernels and oneDNN's GEMMs share one team of
// threads instead of two sets competing for the cores (on 2 cores, a pool
// of its own beside oneDNN's spinning OpenMP threads ran 2.5x slower than
// one thread). Without OpenMP (the clang sanitizer build) the pool has
// POSIX threads of its own, made when the pool is (a thread that cannot be
// made leaves the pool smaller, never an error: the runtime has no
// exceptions), sleeping on a condition variable between loops. One loop
// runs at a time per pool; a session owns its pool and runs one step at a
// time, so no pool is shared.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_THREADPOOL_H
#define MIXPREC_RUNTIME_THREADPOOL_H

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

namespace mixprec::runtime {

class ThreadPool {
public:
  /// A pool of `threads` workers in all, the caller's thread included (at
  /// least 1).
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Workers, the calling thread included.
  int size() const { return size_; }

  /// Runs fn(chunk, worker) for every chunk in [0, chunks); returns when all
  /// have run. worker < size(); no two chunks run on one worker at once.
  void run(int64_t chunks, const std::function<void(int64_t chunk, int worker)> &fn);

  /// The default thread count: MIXPREC_NUM_THREADS, else OMP_NUM_THREADS
  /// (which oneDNN's and OpenBLAS's threads follow too), else the CPUs this
  /// process may run on.
  static int defaultThreads();

  /// OpenMP's thread count for the calling thread, which oneDNN's and
  /// OpenBLAS's threads follow: omp_get_max_threads / omp_set_num_threads,
  /// looked up in the process (Debian's oneDNN and OpenBLAS bring libgomp
  /// even where this pool does not use it); 1 / nothing without OpenMP.
  static int openMpThreads();
  static void setOpenMpThreads(int threads);

private:
  static void *threadMain(void *self);
  void work(int worker);

  int size_ = 1;
  std::vector<pthread_t> threads_; ///< without OpenMP
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0; ///< bumped per loop (under mutex_)
  bool stopping_ = false;
  int busy_ = 0; ///< pool threads still in the current loop (under mutex_)
  const std::function<void(int64_t, int)> *fn_ = nullptr;
  int64_t chunks_ = 0;
  std::atomic<int64_t> next_{0};
  /// What each pool thread starts with: the pool and its worker index.
  struct Start {
    ThreadPool *pool;
    int worker;
  };
  std::vector<Start> starts_;
};

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_THREADPOOL_H
