//===- HostMemory.h - how much memory tensors may take on the host -*- C++ -*-===//
//
// One rule for the reference interpreter and the runtime's CPU backend: the
// tensors a run keeps live at once (the interpreter's live values, the
// backend's arena) plus its largest scratch buffer must fit in the memory
// the process can use. A run that needs more is refused up front, naming
// what needs the bytes, instead of dying in an allocation (the build has
// no exceptions: a failed std::vector allocation aborts) or being killed
// after overcommitted pages are touched.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_CPU_HOSTMEMORY_H
#define MIXPREC_RUNTIME_CPU_HOSTMEMORY_H

#include <cstdint>
#include <string>

namespace mixprec::runtime::cpu {

/// The bytes this process may use for tensors: the physical memory, or less
/// where the address-space or data-size limit (RLIMIT_AS, RLIMIT_DATA) or
/// the cgroup v2 limit (/sys/fs/cgroup/memory.max) says so. Read once.
uint64_t usableMemoryBytes();

/// "the 8589934592 bytes of memory this process may use (physical memory,
/// or its rlimit or cgroup limit)": how messages name the limit.
std::string describeUsableMemory();

/// Whether `bytes` more (with `liveBytes` already held) fit the limit and
/// can be allocated now (a probe allocation, freed at once, catches what the
/// limit does not see). Sizes that overflow never fit.
bool fitsInMemory(uint64_t liveBytes, uint64_t bytes);

} // namespace mixprec::runtime::cpu

#endif // MIXPREC_RUNTIME_CPU_HOSTMEMORY_H
