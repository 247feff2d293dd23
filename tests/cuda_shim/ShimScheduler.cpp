//===- ShimScheduler.cpp - Runs a CUDA launch on fibers ---------------------===//
//
// The blocks of a launch run one after another on the launching OS thread;
// each CUDA thread of a block is a fiber with its own stack. A fiber runs
// until it reaches a synchronization point (__syncthreads, __syncwarp, a
// shuffle) or returns; then the next one runs. When every fiber waits or
// has finished, the scheduler releases what may go on: a warp operation
// whose lanes have all arrived, or the block barrier once every thread waits
// at it. What can never go on (a thread that exited while others wait at
// __syncthreads, a shuffle that reads a lane outside its mask, lanes that
// disagree) ends the launch with an error naming threads and source lines.
//
// Why fibers rather than an OS thread per CUDA thread: a block of 1024
// threads would need 1024 OS threads passing a baton (a futex round trip
// per switch); a fiber switch is a dozen instructions, and the order in
// which threads run is fixed, so every run gives the same result.
//
// Between two synchronization points a fiber runs alone, so a data race
// shows as a wrong result: before a missing __syncthreads, thread 0 reads
// what thread 1 has not written yet. reverseThreadOrder runs the threads
// last-first, which shows the races the first order hides.
//
//===----------------------------------------------------------------------===//
#include "tests/cuda_shim/ShimAbi.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define MIXPREC_SHIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MIXPREC_SHIM_ASAN 1
#endif
#endif
#ifdef MIXPREC_SHIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the CUDA shim switches fibers in x86-64 assembly (mixprecCudaShimSwitch): port it"
#endif

// Saves the callee-saved registers on the current stack, stores the stack
// pointer in *save, and resumes the stack `load` (saved the same way, or
// made by startFiber). The System V ABI leaves every other register to the
// caller; MXCSR and the x87 control word are the same for every fiber.
extern "C" void mixprecCudaShimSwitch(void **save, void *load);
asm(R"(
  .pushsection .text
  .p2align 4
  .globl mixprecCudaShimSwitch
  .hidden mixprecCudaShimSwitch
  .type mixprecCudaShimSwitch, @function
mixprecCudaShimSwitch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size mixprecCudaShimSwitch, .-mixprecCudaShimSwitch
  .popsection
)");

namespace mixprec::cudashim {
namespace {

/// Each fiber's stack; kernels keep little on it, AddressSanitizer's
/// redzones make frames a few times larger.
constexpr size_t kStackBytes = 256 * 1024;

/// Done: returned from the kernel (and waiting for the next block);
/// Abandoned: stopped inside the kernel by an error, never resumed.
enum class State : uint8_t { Runnable, AtBarrier, AtWarp, Done, Abandoned };

/// One CUDA thread of the running block.
struct SimThread {
  ThreadContext context;
  unsigned linear = 0;
  State state = State::Runnable;
  // Where it waits (for diagnostics).
  const char *file = nullptr;
  int line = 0;
  // The warp operation it waits in: its operands and, once released, result.
  WarpOp op = WarpOp::SyncWarp;
  unsigned mask = 0;
  uint32_t value = 0;
  int b = 0;
  int c = 0;
  uint32_t result = 0;
  // The fiber.
  void *stackPointer = nullptr;
  char *stackLow = nullptr;
  void *fakeStack = nullptr;
};

/// The fibers' stacks: one mapping, a guard page below each stack so an
/// overflow faults instead of writing into the next one.
class FiberStacks {
public:
  FiberStacks() = default;
  FiberStacks(const FiberStacks &) = delete;
  FiberStacks &operator=(const FiberStacks &) = delete;
  ~FiberStacks() {
    if (base_ == nullptr)
      return;
#ifdef MIXPREC_SHIM_ASAN
    // A fiber abandoned by a failed block leaves its frames poisoned.
    ASAN_UNPOISON_MEMORY_REGION(base_, bytes_);
#endif
    munmap(base_, bytes_);
  }

  /// Maps `count` stacks; false when the memory is not there.
  bool allocate(unsigned count) {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    bytes_ = count * (kStackBytes + page_);
    void *base = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
      return false;
    base_ = static_cast<char *>(base);
    for (unsigned i = 0; i < count; ++i)
      mprotect(base_ + i * (kStackBytes + page_), page_, PROT_NONE);
    return true;
  }

  /// The lowest usable byte of stack `i`.
  char *low(unsigned i) const { return base_ + i * (kStackBytes + page_) + page_; }

private:
  char *base_ = nullptr;
  size_t bytes_ = 0;
  size_t page_ = 0;
};

/// The launch running on this OS thread.
struct Launch {
  const KernelRecord *kernel = nullptr;
  const LaunchRequest *request = nullptr;
  std::vector<SimThread> threads;
  std::vector<unsigned> order;
  FiberStacks stacks;
  SimThread *current = nullptr;
  void *schedulerStack = nullptr;
  const void *schedulerStackBottom = nullptr;
  size_t schedulerStackSize = 0;
  /// The first failure in the running block, without the block's name.
  std::string error;
  /// Set after the last block: resumed fibers end.
  bool finishing = false;
};

thread_local Launch *tLaunch = nullptr;

/// head of this library's kernel list.
KernelRecord *gFirstKernel = nullptr;

[[noreturn]] void fatal(const char *what) {
  std::fprintf(stderr, "mixprec cuda shim: %s\n", what);
  std::abort();
}

// AddressSanitizer must be told about every stack switch, or it reports the
// fibers' frames as overflows of the OS thread's stack.
void startSwitch(void **fakeStackSave, const void *bottom, size_t size) {
#ifdef MIXPREC_SHIM_ASAN
  __sanitizer_start_switch_fiber(fakeStackSave, bottom, size);
#else
  (void)fakeStackSave, (void)bottom, (void)size;
#endif
}

void finishSwitch(void *fakeStack, const void **oldBottom, size_t *oldSize) {
#ifdef MIXPREC_SHIM_ASAN
  __sanitizer_finish_switch_fiber(fakeStack, oldBottom, oldSize);
#else
  (void)fakeStack, (void)oldBottom, (void)oldSize;
#endif
}

/// "(x,y,z)".
std::string formatIndex(const uint3 &index) {
  return "(" + std::to_string(index.x) + "," + std::to_string(index.y) + "," +
         std::to_string(index.z) + ")";
}

/// "thread (x,y,z)".
std::string threadName(const SimThread &thread) {
  return "thread " + formatIndex(thread.context.threadIdx);
}

/// The file name without its folders, and the line: "softmax.cu:42".
std::string sourceSite(const char *file, int line) {
  const char *slash = file == nullptr ? nullptr : std::strrchr(file, '/');
  std::string name = file == nullptr ? "?" : slash == nullptr ? file : slash + 1;
  return name + ":" + std::to_string(line);
}

/// "0x0000ffff".
std::string formatMask(unsigned mask) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", mask);
  return text;
}

const char *warpOpName(WarpOp op) {
  switch (op) {
  case WarpOp::SyncWarp:
    return "__syncwarp";
  case WarpOp::ShflIdx:
    return "__shfl_sync";
  case WarpOp::ShflUp:
    return "__shfl_up_sync";
  case WarpOp::ShflDown:
    return "__shfl_down_sync";
  case WarpOp::ShflXor:
    return "__shfl_xor_sync";
  }
  return "?";
}

/// What a waiting thread waits at: "__syncthreads (k.cu:12)" or
/// "__shfl_xor_sync (k.cu:20) with mask 0xffffffff".
std::string waitDescription(const SimThread &thread) {
  if (thread.state == State::AtBarrier)
    return std::string("__syncthreads (") + sourceSite(thread.file, thread.line) + ")";
  return std::string(warpOpName(thread.op)) + " (" + sourceSite(thread.file, thread.line) +
         ") with mask " + formatMask(thread.mask);
}

// ---- Fibers -------------------------------------------------------------------

/// Runs `thread` until it waits or finishes.
void resume(Launch &launch, SimThread &thread) {
  launch.current = &thread;
  void *fakeStack = nullptr;
  startSwitch(&fakeStack, thread.stackLow, kStackBytes);
  mixprecCudaShimSwitch(&launch.schedulerStack, thread.stackPointer);
  finishSwitch(fakeStack, nullptr, nullptr);
  launch.current = nullptr;
}

/// Returns to the scheduler from the running fiber; comes back when the
/// scheduler resumes it.
void yieldToScheduler(Launch &launch, SimThread &self) {
  startSwitch(&self.fakeStack, launch.schedulerStackBottom, launch.schedulerStackSize);
  mixprecCudaShimSwitch(&self.stackPointer, launch.schedulerStack);
  finishSwitch(self.fakeStack, nullptr, nullptr);
}

/// Where every fiber starts: runs the kernel as its thread in each block of
/// the launch, then returns to the scheduler for good. One fiber serves
/// every block, so AddressSanitizer's fake stack (use-after-return
/// detection) is made once per thread, not once per block.
[[noreturn]] void fiberMain() {
  Launch &launch = *tLaunch;
  SimThread &self = *launch.current;
  finishSwitch(nullptr, &launch.schedulerStackBottom, &launch.schedulerStackSize);
  while (!launch.finishing) {
    launch.kernel->invoke(launch.request->params);
    self.state = State::Done;
    yieldToScheduler(launch, self);
  }
  startSwitch(nullptr, launch.schedulerStackBottom, launch.schedulerStackSize);
  mixprecCudaShimSwitch(&self.stackPointer, launch.schedulerStack);
  __builtin_unreachable();
}

/// Lays out a fresh frame on the thread's stack that mixprecCudaShimSwitch
/// "returns" into fiberMain from, with the stack aligned as after a call.
void startFiber(SimThread &thread) {
  auto top = reinterpret_cast<uintptr_t>(thread.stackLow + kStackBytes) & ~uintptr_t{15};
  void **sp = reinterpret_cast<void **>(top);
  *--sp = nullptr;                              // fiberMain's return address
  *--sp = reinterpret_cast<void *>(&fiberMain); // where `ret` goes
  for (int i = 0; i < 6; ++i)
    *--sp = nullptr; // rbp rbx r12 r13 r14 r15
  thread.stackPointer = sp;
  thread.fakeStack = nullptr;
}

/// Makes `message` the block's error, from the running thread.
void setThreadError(Launch &launch, const SimThread &self, const std::string &message) {
  if (launch.error.empty())
    launch.error = threadName(self) + ": " + message;
}

/// Ends the running fiber after setThreadError; never returns. Nothing on
/// its stack is destroyed, so no caller of it may hold a heap object.
[[noreturn]] void abandonThread(Launch &launch, SimThread &self) {
  self.state = State::Abandoned;
  startSwitch(nullptr, launch.schedulerStackBottom, launch.schedulerStackSize);
  mixprecCudaShimSwitch(&self.stackPointer, launch.schedulerStack);
  __builtin_unreachable();
}

/// The running launch and thread; aborts when called from host code.
Launch &runningLaunch() {
  Launch *launch = tLaunch;
  if (launch == nullptr || launch->current == nullptr)
    fatal("a CUDA device function was called outside a kernel launch");
  return *launch;
}

// ---- Releasing waiting threads --------------------------------------------------

/// The lanes of the warp that starts at `warpBase` that exist in the block.
unsigned existingLanes(const Launch &launch, unsigned warpBase) {
  unsigned count = std::min<unsigned>(kWarpSize, launch.threads.size() - warpBase);
  return count == kWarpSize ? ~0u : (1u << count) - 1;
}

/// The lane a shuffle reads for `lane`, by PTX shfl.sync's rules (its own
/// lane when the source falls outside its segment). The deltas of up and
/// down are unsigned, so a huge one reads the own lane too.
unsigned shuffleSource(const SimThread &t, unsigned lane) {
  const int64_t segmask = (t.c >> 8) & 0x1f;
  const int64_t minLane = lane & segmask;
  const int64_t maxLane = minLane | (t.c & 0x1f & ~segmask);
  const int64_t b = static_cast<uint32_t>(t.b);
  int64_t j = lane;
  bool inRange = true;
  switch (t.op) {
  case WarpOp::SyncWarp:
    return lane;
  case WarpOp::ShflIdx:
    j = minLane | (b & 0x1f & ~segmask);
    inRange = j <= maxLane;
    break;
  case WarpOp::ShflUp:
    j = lane - b;
    inRange = j >= maxLane;
    break;
  case WarpOp::ShflDown:
    j = lane + b;
    inRange = j <= maxLane;
    break;
  case WarpOp::ShflXor:
    j = lane ^ b;
    inRange = j <= maxLane;
    break;
  }
  return inRange ? static_cast<unsigned>(j) : lane;
}

/// Gives every lane of `group` (all waiting at the same operation) its
/// result and lets it run; false, with the error set, when a lane reads one
/// outside the group.
bool completeWarpOp(Launch &launch, unsigned warpBase, unsigned group) {
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    if ((group >> lane & 1) == 0)
      continue;
    SimThread &t = launch.threads[warpBase + lane];
    unsigned source = shuffleSource(t, lane);
    if ((group >> source & 1) == 0) {
      bool exists = (existingLanes(launch, warpBase) >> source & 1) != 0;
      launch.error = threadName(t) + ": " + waitDescription(t) + ": lane " + std::to_string(lane) +
                     " reads lane " + std::to_string(source) +
                     (exists ? ", which is not in the mask"
                             : ", which does not exist (the block has " +
                                   std::to_string(launch.threads.size()) + " threads)");
      return false;
    }
    t.result = launch.threads[warpBase + source].value;
  }
  for (unsigned lane = 0; lane < kWarpSize; ++lane)
    if (group >> lane & 1)
      launch.threads[warpBase + lane].state = State::Runnable;
  return true;
}

/// The lane of `t`'s mask that keeps its warp operation from completing,
/// or -1 when every lane waits at the same operation with the same mask.
int blockingLane(const Launch &launch, const SimThread &t) {
  unsigned warpBase = t.linear & ~(kWarpSize - 1);
  unsigned group = t.mask & existingLanes(launch, warpBase);
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    if ((group >> lane & 1) == 0)
      continue;
    const SimThread &other = launch.threads[warpBase + lane];
    if (other.state != State::AtWarp || other.mask != t.mask || other.op != t.op)
      return static_cast<int>(lane);
  }
  return -1;
}

/// Completes every warp operation whose lanes have all arrived. Returns
/// whether any did; sets the error when one reads outside its group.
bool releaseWarpOps(Launch &launch) {
  bool released = false;
  for (SimThread &t : launch.threads) {
    if (t.state != State::AtWarp || blockingLane(launch, t) >= 0)
      continue;
    unsigned warpBase = t.linear & ~(kWarpSize - 1);
    if (!completeWarpOp(launch, warpBase, t.mask & existingLanes(launch, warpBase)))
      return false;
    released = true;
  }
  return released;
}

/// Lets every thread past __syncthreads once all of them wait at the same
/// one. Returns whether it did.
bool releaseBarrier(Launch &launch) {
  const SimThread &first = launch.threads.front();
  for (const SimThread &t : launch.threads)
    if (t.state != State::AtBarrier || t.line != first.line || std::strcmp(t.file, first.file) != 0)
      return false;
  for (SimThread &t : launch.threads)
    t.state = State::Runnable;
  return true;
}

/// Why no thread of the block can go on (every one waits or has exited).
std::string describeStall(const Launch &launch) {
  for (const SimThread &t : launch.threads) {
    if (t.state != State::AtWarp)
      continue;
    int lane = blockingLane(launch, t);
    if (lane < 0)
      continue;
    const SimThread &other = launch.threads[(t.linear & ~(kWarpSize - 1)) + lane];
    std::string why =
        other.state == State::Done ? "has exited" : "waits at " + waitDescription(other);
    return threadName(t) + " waits at " + waitDescription(t) + ", but lane " +
           std::to_string(lane) + " (" + threadName(other) + ") " + why;
  }
  const SimThread *waiting = nullptr;
  const SimThread *exited = nullptr;
  const SimThread *elsewhere = nullptr;
  for (const SimThread &t : launch.threads) {
    if (t.state == State::Done && exited == nullptr)
      exited = &t;
    if (t.state == State::AtBarrier && waiting == nullptr)
      waiting = &t;
    if (t.state == State::AtBarrier && waiting != nullptr &&
        (t.line != waiting->line || std::strcmp(t.file, waiting->file) != 0) &&
        elsewhere == nullptr)
      elsewhere = &t;
  }
  if (waiting != nullptr && exited != nullptr)
    return threadName(*waiting) + " waits at " + waitDescription(*waiting) + ", but " +
           threadName(*exited) + " has exited without reaching it";
  if (waiting != nullptr && elsewhere != nullptr)
    return "threads wait at different barriers: " + threadName(*waiting) + " at " +
           waitDescription(*waiting) + ", " + threadName(*elsewhere) + " at " +
           waitDescription(*elsewhere);
  return "no thread can go on";
}

// ---- Blocks ---------------------------------------------------------------------------

/// Runs one block to its end; false, with the error set, when it fails.
bool runBlock(Launch &launch, const uint3 &blockIdx) {
  const LaunchRequest &request = *launch.request;
  for (SimThread &t : launch.threads) {
    t.context.blockIdx = blockIdx;
    t.state = State::Runnable;
  }
  std::memset(smem, 0xff, request.dynamicSharedBytes);
  for (;;) {
    for (unsigned index : launch.order) {
      SimThread &t = launch.threads[index];
      if (t.state != State::Runnable)
        continue;
      resume(launch, t);
      if (!launch.error.empty())
        return false;
    }
    bool allDone = std::all_of(launch.threads.begin(), launch.threads.end(),
                               [](const SimThread &t) { return t.state == State::Done; });
    if (allDone)
      return true;
    if (releaseWarpOps(launch))
      continue;
    if (!launch.error.empty())
      return false;
    if (releaseBarrier(launch))
      continue;
    launch.error = describeStall(launch);
    return false;
  }
}

/// Why `request` is not a launch a GPU would accept, or "".
std::string checkRequest(const LaunchRequest &request) {
  const dim3 &g = request.grid;
  const dim3 &b = request.block;
  if (g.x == 0 || g.y == 0 || g.z == 0 || b.x == 0 || b.y == 0 || b.z == 0)
    return "the grid " + formatIndex(uint3{g.x, g.y, g.z}) + " or the block " +
           formatIndex(uint3{b.x, b.y, b.z}) + " has a zero dimension";
  if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    return "the grid " + formatIndex(uint3{g.x, g.y, g.z}) +
           " exceeds the limits (2^31-1, 65535, 65535)";
  if (b.x > 1024 || b.y > 1024 || b.z > 64 || uint64_t{b.x} * b.y * b.z > kMaxThreadsPerBlock)
    return "the block " + formatIndex(uint3{b.x, b.y, b.z}) +
           " exceeds the limits (1024, 1024, 64; 1024 threads in all)";
  if (request.dynamicSharedBytes > kMaxDynamicSharedBytes)
    return "dynamic shared memory of " + std::to_string(request.dynamicSharedBytes) +
           " bytes exceeds the limit of " + std::to_string(kMaxDynamicSharedBytes);
  return "";
}

/// Sets up the threads of a block of `request`'s shape and their stacks.
bool prepareLaunch(Launch &launch, std::string &error) {
  const dim3 &b = launch.request->block;
  unsigned count = b.x * b.y * b.z;
  if (!launch.stacks.allocate(count)) {
    error = "cannot map " + std::to_string(count) + " fiber stacks";
    return false;
  }
  launch.threads.resize(count);
  launch.order.resize(count);
  for (unsigned i = 0; i < count; ++i) {
    SimThread &t = launch.threads[i];
    t.linear = i;
    t.context.threadIdx = uint3{i % b.x, i / b.x % b.y, i / (b.x * b.y)};
    t.context.blockDim = b;
    t.context.gridDim = launch.request->grid;
    t.state = State::Done; // a fiber that waits for its first block
    t.stackLow = launch.stacks.low(i);
    startFiber(t);
    launch.order[i] = launch.request->reverseThreadOrder ? count - 1 - i : i;
  }
  return true;
}

/// Ends the fibers that wait for a next block. A fiber a failed block left
/// inside the kernel stays where it is; its stack is unmapped with the rest.
void finishFibers(Launch &launch) {
  launch.finishing = true;
  for (SimThread &t : launch.threads)
    if (t.state == State::Done)
      resume(launch, t);
}

/// Runs every block of the launch in order (x fastest); "" or the error.
std::string runLaunch(Launch &launch) {
  std::string error = checkRequest(*launch.request);
  if (!error.empty() || !prepareLaunch(launch, error))
    return error;
  const dim3 &g = launch.request->grid;
  for (unsigned z = 0; z < g.z; ++z)
    for (unsigned y = 0; y < g.y; ++y)
      for (unsigned x = 0; x < g.x; ++x)
        if (!runBlock(launch, uint3{x, y, z})) {
          finishFibers(launch);
          return "block " + formatIndex(uint3{x, y, z}) + ", " + launch.error;
        }
  finishFibers(launch);
  return "";
}

} // namespace

// ---- Entry points ---------------------------------------------------------------------

void registerKernel(KernelRecord *record) {
  record->next = gFirstKernel;
  gFirstKernel = record;
}

const KernelRecord *firstKernel() { return gFirstKernel; }

bool launchKernel(const KernelRecord *kernel, const LaunchRequest *request, char *error,
                  size_t errorSize) {
  Launch launch;
  launch.kernel = kernel;
  launch.request = request;
#ifdef MIXPREC_SHIM_ASAN
  const size_t dynamicBytes = std::min(request->dynamicSharedBytes, kMaxDynamicSharedBytes);
  ASAN_POISON_MEMORY_REGION(reinterpret_cast<char *>(smem) + dynamicBytes,
                            kMaxDynamicSharedBytes - dynamicBytes);
#endif
  tLaunch = &launch;
  std::string message = runLaunch(launch);
  tLaunch = nullptr;
#ifdef MIXPREC_SHIM_ASAN
  ASAN_UNPOISON_MEMORY_REGION(smem, kMaxDynamicSharedBytes);
#endif
  if (message.empty())
    return true;
  message = "kernel " + std::string(kernel->name) + ": " + message;
  if (errorSize > 0)
    std::snprintf(error, errorSize, "%s", message.c_str());
  return false;
}

const ThreadContext &currentContext() { return runningLaunch().current->context; }

void blockBarrier(const char *file, int line) {
  Launch &launch = runningLaunch();
  SimThread &self = *launch.current;
  self.state = State::AtBarrier;
  self.file = file;
  self.line = line;
  yieldToScheduler(launch, self);
}

uint32_t warpExchange(WarpOp op, unsigned mask, uint32_t value, int b, int c, const char *file,
                      int line) {
  Launch &launch = runningLaunch();
  SimThread &self = *launch.current;
  self.op = op;
  self.mask = mask;
  self.file = file;
  self.line = line;
  unsigned lane = self.linear % kWarpSize;
  const int width = static_cast<int>(kWarpSize) - (c >> 8);
  if ((mask >> lane & 1) == 0)
    setThreadError(launch, self,
                   waitDescription(self) + ": the mask does not include the calling lane " +
                       std::to_string(lane));
  else if (op != WarpOp::SyncWarp && (width < 1 || width > 32 || (width & (width - 1)) != 0))
    setThreadError(launch, self,
                   waitDescription(self) + ": width " + std::to_string(width) +
                       " is not a power of two from 1 to 32");
  if (!launch.error.empty())
    abandonThread(launch, self);
  self.value = value;
  self.b = b;
  self.c = c;
  self.state = State::AtWarp;
  yieldToScheduler(launch, self);
  return self.result;
}

} // namespace mixprec::cudashim
