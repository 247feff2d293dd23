//===- BytecodeGuard.cpp - reading untrusted MLIR bytecode ----------------===//
#include "compiler/Compile/BytecodeGuard.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cerrno>
#include <csignal>
#include <cstdio>

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define MIXPREC_SANITIZED 1
#endif
#endif
#if !defined(MIXPREC_SANITIZED) && defined(__SANITIZE_ADDRESS__)
#define MIXPREC_SANITIZED 1
#endif
#ifndef MIXPREC_SANITIZED
#define MIXPREC_SANITIZED 0
#endif
#if MIXPREC_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir;

namespace mixprec::compiler {
namespace {

/// The process's virtual memory in bytes (/proc/self/statm), or 0.
uint64_t virtualMemoryBytes() {
  unsigned long pages = 0;
  FILE *statm = std::fopen("/proc/self/statm", "r");
  if (!statm)
    return 0;
  if (std::fscanf(statm, "%lu", &pages) != 1)
    pages = 0;
  std::fclose(statm);
  return uint64_t(pages) * uint64_t(sysconf(_SC_PAGESIZE));
}

} // namespace

std::string bytecodeReaderFailure(const std::string &path, llvm::StringRef bytes,
                                  llvm::function_ref<void(MLIRContext &)> prepare) {
  uint64_t limit = virtualMemoryBytes() + 16 * uint64_t(bytes.size()) + (uint64_t(1) << 30);
  pid_t pid = fork();
  if (pid < 0)
    return ""; // cannot check: the real read goes ahead
  if (pid == 0) {
    int devNull = open("/dev/null", O_WRONLY);
    if (devNull >= 0)
      dup2(devNull, STDERR_FILENO); // LLVM's "out of memory" line is the parent's to say
#if MIXPREC_SANITIZED
    // In a sanitizer build the child's death is expected too: its report goes
    // to the silenced stderr, not to the log files that make CI fail.
    __sanitizer_set_report_path("stderr");
#endif
    struct rlimit rl = {limit, limit};
    setrlimit(RLIMIT_AS, &rl);
    MLIRContext context(MLIRContext::Threading::DISABLED);
    prepare(context);
    context.getDiagEngine().registerHandler([](Diagnostic &) { return success(); });
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBuffer(bytes, path, /*RequiresNullTerminator=*/false),
        llvm::SMLoc());
    (void)parseSourceFile<ModuleOp>(sourceMgr, &context);
    _exit(0); // no atexit handlers, no flush of the parent's buffers
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return "";
  if (!WIFSIGNALED(status))
    return "";
  return "the MLIR bytecode reader failed on it (signal " + std::to_string(WTERMSIG(status)) +
         (WTERMSIG(status) == SIGABRT ? ", out of memory or a damaged entry"
                                      : ", a damaged entry") +
         "): the file is damaged or was not written by mixprec";
}

} // namespace mixprec::compiler
