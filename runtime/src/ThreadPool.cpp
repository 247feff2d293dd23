//===- ThreadPool.cpp - the CPU backend's worker threads ------------------===//
#include "runtime/src/ThreadPool.h"

#include <dlfcn.h>
#include <sched.h>
#ifdef MIXPREC_HAVE_OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <cstdlib>

namespace mixprec::runtime {

namespace {

/// A positive thread count from environment variable `name`, else 0.
int threadsFromEnv(const char *name) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return 0;
  char *end = nullptr;
  const long n = std::strtol(text, &end, 10);
  // OMP_NUM_THREADS may list counts per nesting level ("4,2"): the first.
  if (end == text || (*end != '\0' && *end != ','))
    return 0;
  return n > 0 ? static_cast<int>(std::min<long>(n, 1024)) : 0;
}

} // namespace

int ThreadPool::openMpThreads() {
  static auto get = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  return get ? get() : 1;
}

void ThreadPool::setOpenMpThreads(int threads) {
  static auto set = reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (set)
    set(threads);
}

int ThreadPool::defaultThreads() {
  if (int n = threadsFromEnv("MIXPREC_NUM_THREADS"))
    return n;
  if (int n = threadsFromEnv("OMP_NUM_THREADS"))
    return n;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return 1;
}

ThreadPool::ThreadPool(int threads) {
  size_ = std::max(threads, 1);
#ifndef MIXPREC_HAVE_OPENMP // else loops are OpenMP parallel regions
  const int extra = size_ - 1;
  // Reserved first: threads hold pointers into starts_.
  starts_.reserve(extra);
  threads_.reserve(extra);
  for (int i = 0; i < extra; ++i) {
    starts_.push_back(Start{this, i + 1});
    pthread_t thread;
    if (pthread_create(&thread, nullptr, &ThreadPool::threadMain, &starts_.back()) != 0) {
      starts_.pop_back();
      break; // a smaller pool
    }
    threads_.push_back(thread);
  }
  size_ = static_cast<int>(threads_.size()) + 1;
#endif
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (pthread_t thread : threads_)
    pthread_join(thread, nullptr);
}

void *ThreadPool::threadMain(void *arg) {
  const Start *start = static_cast<const Start *>(arg);
  ThreadPool *pool = start->pool;
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(pool->mutex_);
      pool->wake_.wait(lock, [&] { return pool->stopping_ || pool->generation_ != seen; });
      if (pool->stopping_)
        return nullptr;
      seen = pool->generation_;
    }
    pool->work(start->worker);
    {
      std::lock_guard<std::mutex> lock(pool->mutex_);
      if (--pool->busy_ == 0)
        pool->done_.notify_one();
    }
  }
}

void ThreadPool::work(int worker) {
  for (int64_t chunk = next_.fetch_add(1, std::memory_order_relaxed); chunk < chunks_;
       chunk = next_.fetch_add(1, std::memory_order_relaxed))
    (*fn_)(chunk, worker);
}

void ThreadPool::run(int64_t chunks, const std::function<void(int64_t chunk, int worker)> &fn) {
  if (chunks <= 0)
    return;
  if (size_ == 1 || chunks == 1) {
    for (int64_t chunk = 0; chunk < chunks; ++chunk)
      fn(chunk, 0);
    return;
  }
#ifdef MIXPREC_HAVE_OPENMP
  // A team smaller than asked for (nested parallelism, thread limits) just
  // takes more chunks per thread.
  const int team = static_cast<int>(std::min<int64_t>(size_, chunks));
  std::atomic<int64_t> next{0};
#pragma omp parallel num_threads(team)
  {
    const int worker = omp_get_thread_num();
    for (int64_t chunk = next.fetch_add(1, std::memory_order_relaxed); chunk < chunks;
         chunk = next.fetch_add(1, std::memory_order_relaxed))
      fn(chunk, worker);
  }
  return;
#endif
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    chunks_ = chunks;
    next_.store(0, std::memory_order_relaxed);
    busy_ = static_cast<int>(threads_.size());
    ++generation_;
  }
  wake_.notify_all();
  work(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_ == 0; });
  fn_ = nullptr;
}

} // namespace mixprec::runtime
