//===- HostMemory.cpp - how much memory tensors may take on the host -------===//
#include "runtime/kernels/HostMemory.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sys/resource.h>
#include <unistd.h>

namespace mixprec::runtime::cpu {
namespace {

/// The cgroup v2 memory limit of this process's cgroup namespace root (a
/// container's limit), or UINT64_MAX when there is none or it is "max".
uint64_t cgroupLimit() {
  std::FILE *f = std::fopen("/sys/fs/cgroup/memory.max", "r");
  if (!f)
    return UINT64_MAX;
  unsigned long long value = 0;
  const bool numeric = std::fscanf(f, "%llu", &value) == 1;
  std::fclose(f);
  return numeric && value > 0 ? static_cast<uint64_t>(value) : UINT64_MAX;
}

uint64_t computeUsableMemory() {
  uint64_t limit = UINT64_MAX;
  const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages > 0 && pageSize > 0)
    limit = static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
  for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
    struct rlimit rl;
    if (getrlimit(resource, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      limit = std::min<uint64_t>(limit, rl.rlim_cur);
  }
  return std::min(limit, cgroupLimit());
}

} // namespace

uint64_t usableMemoryBytes() {
  static const uint64_t bytes = computeUsableMemory();
  return bytes;
}

std::string describeUsableMemory() {
  return "the " + std::to_string(usableMemoryBytes()) +
         " bytes of memory this process may use (physical memory, or its rlimit or cgroup "
         "limit)";
}

bool fitsInMemory(uint64_t liveBytes, uint64_t bytes) {
  const uint64_t limit = usableMemoryBytes();
  if (bytes > limit || liveBytes > limit - bytes)
    return false;
  void *probe = std::malloc(bytes == 0 ? 1 : bytes);
  std::free(probe);
  return probe != nullptr;
}

} // namespace mixprec::runtime::cpu
