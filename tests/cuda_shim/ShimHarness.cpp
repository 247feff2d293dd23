//===- ShimHarness.cpp - Compile CUDA C++ for the CPU and launch it ---------===//
#include "tests/cuda_shim/ShimHarness.h"

#include "tests/cuda_shim/ShimAbi.h"
#include "common/FileIO.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

extern char **environ;

namespace mixprec::cudashim {
namespace {

namespace fs = std::filesystem;

/// The text of `source` with comments, string and character literals
/// blanked out (newlines kept), so a scan sees only code.
std::string codeOnly(const std::string &source) {
  std::string code = source;
  size_t i = 0;
  auto blankUntil = [&](size_t end) {
    for (; i < end && i < code.size(); ++i)
      if (code[i] != '\n')
        code[i] = ' ';
  };
  while (i < code.size()) {
    if (code.compare(i, 2, "//") == 0) {
      size_t end = code.find('\n', i);
      blankUntil(end == std::string::npos ? code.size() : end);
    } else if (code.compare(i, 2, "/*") == 0) {
      size_t end = code.find("*/", i + 2);
      blankUntil(end == std::string::npos ? code.size() : end + 2);
    } else if (code[i] == '"' || code[i] == '\'') {
      size_t end = i + 1;
      while (end < code.size() && code[end] != code[i] && code[end] != '\n')
        end += code[end] == '\\' ? 2 : 1;
      blankUntil(std::min(end + 1, code.size()));
    } else {
      ++i;
    }
  }
  return code;
}

bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Whether `name` is a C identifier.
bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!isIdentifierChar(c))
      return false;
  return true;
}

/// Skips spaces from `at`.
size_t skipSpace(const std::string &text, size_t at) {
  while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at])))
    ++at;
  return at;
}

/// The position after the parenthesized group that opens at `at` (or `at`
/// when none does).
size_t skipParenthesized(const std::string &text, size_t at) {
  if (at >= text.size() || text[at] != '(')
    return at;
  int depth = 0;
  for (; at < text.size(); ++at) {
    depth += text[at] == '(' ? 1 : text[at] == ')' ? -1 : 0;
    if (depth == 0)
      return at + 1;
  }
  return at;
}

/// `text` as a C string literal.
std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The compiler output's first error line, else its first line, with the
/// temporary folder's path removed.
std::string firstError(const std::string &log, const std::string &folder) {
  size_t at = log.find("error:");
  size_t begin = at == std::string::npos ? 0 : log.rfind('\n', at);
  begin = begin == std::string::npos || at == std::string::npos ? 0 : begin + 1;
  std::string line = log.substr(begin, log.find('\n', begin) - begin);
  for (size_t p; (p = line.find(folder + "/")) != std::string::npos;)
    line.erase(p, folder.size() + 1);
  return line;
}

/// The host compiler's command line for `wrapper` into `library`.
std::vector<std::string> compileCommand(const std::string &wrapper, const std::string &library,
                                        const CompileOptions &options) {
  // A sanitizer build compiles at -O0: clang -O1 took 280 s on one attention
  // program with ASan and UBSan (the object-size check most of it) and over
  // 2 minutes on an FP16 one with no sanitizer at all; at -O0 3 s, and the
  // attention cases ran in 125 s where 4 of them had taken 15 minutes.
  std::vector<std::string> argv = {MIXPREC_CUDA_SHIM_CXX,
                                   "-std=c++17",
                                   MIXPREC_CUDA_SHIM_SANITIZE ? "-O0" : "-O1",
                                   "-fPIC",
                                   "-shared",
                                   "-fvisibility=hidden"};
  // The GPU rounds a*b+c twice unless the source asks for an FMA; CUDA code
  // reads a bf16 buffer through a uint4 pointer.
  argv.insert(argv.end(), {"-ffp-contract=off", "-fno-strict-aliasing"});
  argv.insert(argv.end(),
              {"-I" MIXPREC_CUDA_SHIM_SOURCE_ROOT, "-isystem", MIXPREC_CUDA_SHIM_CUDA_INCLUDE});
  argv.insert(argv.end(), {"-x", "c++", "-include",
                           MIXPREC_CUDA_SHIM_SOURCE_ROOT "/tests/cuda_shim/CudaShim.h", wrapper});
  // The scheduler stays private to each library.
  argv.insert(argv.end(),
              {"-x", "none", MIXPREC_CUDA_SHIM_SCHEDULER, "-Wl,--exclude-libs,ALL", "-o", library});
#if MIXPREC_CUDA_SHIM_SANITIZE
  argv.insert(argv.end(), {"-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
                           "-fno-omit-frame-pointer", "-g1"});
#endif
  argv.insert(argv.end(), options.extraFlags.begin(), options.extraFlags.end());
  return argv;
}

/// Runs `argv` with its output in `logPath`; "" or why it failed to run.
std::string runCompiler(const std::vector<std::string> &argv, const std::string &logPath,
                        int &status) {
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return std::string("cannot run the host compiler ") + args[0] + ": " + std::strerror(rc);
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return std::string("cannot wait for the host compiler: ") + std::strerror(errno);
  return "";
}

/// The file the host compiler compiles: the source, then a registration
/// line for each kernel (`requested`, else those findKernelNames finds) and
/// the library's export.
bool wrapperSource(const std::string &display, const std::string &sourcePath,
                   const std::string &source, const std::vector<std::string> &requested,
                   std::string &wrapper, std::string &error) {
  std::vector<std::string> kernels = requested.empty() ? findKernelNames(source) : requested;
  if (kernels.empty()) {
    error = display + " has no kernel (no `__global__ void NAME(`)";
    return false;
  }
  wrapper = "// The CUDA shim's view of " + display + ".\n#include " + quoted(sourcePath) + "\n";
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!isIdentifier(kernels[i])) {
      error = "'" + kernels[i] + "' is not a kernel name";
      return false;
    }
    if (std::find(kernels.begin(), kernels.begin() + i, kernels[i]) == kernels.begin() + i)
      wrapper += "MIXPREC_CUDA_SHIM_KERNEL(" + kernels[i] + ")\n";
  }
  wrapper += "MIXPREC_CUDA_SHIM_LIBRARY()\n";
  return true;
}

/// Compiles `wrapperPath` into `libraryPath`; false with the compiler's
/// first error.
bool compileLibrary(const std::string &wrapperPath, const std::string &libraryPath,
                    const std::string &folder, const std::string &display,
                    const CompileOptions &options, std::string &error) {
  const std::string logPath = folder + "/compile.log";
  int status = 0;
  error = runCompiler(compileCommand(wrapperPath, libraryPath, options), logPath, status);
  if (!error.empty())
    return false;
  std::string log, readError;
  common::readRegularFile(logPath, log, readError);
  if (options.log != nullptr)
    *options.log = log;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return true;
  error = "cannot compile " + display + ": " +
          (WIFEXITED(status)
               ? firstError(log, folder)
               : "the host compiler was killed by signal " + std::to_string(WTERMSIG(status)));
  return false;
}

/// Why `record`'s parameters do not take `args`, or "".
std::string argumentMismatch(const KernelRecord &record, const KernelArgs &args) {
  auto kindName = [](char kind) {
    return kind == 'p'   ? "a pointer"
           : kind == 'i' ? "an integer"
           : kind == 'f' ? "a float"
                         : "a value";
  };
  if (args.size() != record.numParams)
    return "kernel " + std::string(record.name) + " takes " + std::to_string(record.numParams) +
           (record.numParams == 1 ? " parameter" : " parameters") + ", got " +
           std::to_string(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    char kind = record.paramKinds[i];
    if (args.bytes(i) != record.paramSizes[i] || (kind != 'o' && args.kind(i) != kind))
      return "kernel " + std::string(record.name) + ": parameter #" + std::to_string(i) + " is " +
             kindName(kind) + " of " + std::to_string(record.paramSizes[i]) + " bytes, got " +
             kindName(args.kind(i)) + " of " + std::to_string(args.bytes(i)) + " bytes";
  }
  return "";
}

/// A fresh temporary folder; "" with `error` set on failure.
std::string makeFolder(std::string &error) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec)
    base = "/tmp";
  std::string pattern = (base / "mixprec-cuda-shim-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    error = "cannot create a temporary folder in " + base.string() + ": " + std::strerror(errno);
    return "";
  }
  return pattern;
}

void removeFolder(const std::string &folder) {
  std::error_code ec;
  if (!folder.empty())
    fs::remove_all(folder, ec);
}

} // namespace

std::vector<void *> KernelArgs::params() const {
  std::vector<void *> pointers;
  for (const std::vector<unsigned char> &value : values_)
    pointers.push_back(const_cast<unsigned char *>(value.data()));
  return pointers;
}

std::vector<std::string> findKernelNames(const std::string &source) {
  const std::string code = codeOnly(source);
  std::vector<std::string> names;
  const std::string keyword = "__global__";
  for (size_t at = code.find(keyword); at != std::string::npos; at = code.find(keyword, at + 1)) {
    if ((at > 0 && isIdentifierChar(code[at - 1])) ||
        (at + keyword.size() < code.size() && isIdentifierChar(code[at + keyword.size()])))
      continue;
    // A template kernel has no one symbol to launch.
    size_t before = code.find_last_not_of(" \t\r\n", at == 0 ? 0 : at - 1);
    if (at > 0 && before != std::string::npos && code[before] == '>')
      continue;
    size_t p = skipSpace(code, at + keyword.size());
    if (code.compare(p, 4, "void") != 0 || p + 4 >= code.size() || isIdentifierChar(code[p + 4]))
      continue;
    size_t begin = skipSpace(code, p + 4), end = begin;
    while (end < code.size() && isIdentifierChar(code[end]))
      ++end;
    std::string name = code.substr(begin, end - begin);
    if (name == "__launch_bounds__") {
      begin = skipSpace(code, skipParenthesized(code, skipSpace(code, end)));
      for (end = begin; end < code.size() && isIdentifierChar(code[end]);)
        ++end;
      name = code.substr(begin, end - begin);
    }
    if (isIdentifier(name) && skipSpace(code, end) < code.size() &&
        code[skipSpace(code, end)] == '(')
      names.push_back(name);
  }
  return names;
}

Program::~Program() {
  // A sanitized build keeps the library loaded: LeakSanitizer's exit check
  // reads the dynamic TLS (smem) of every library the thread ever touched,
  // and after dlclose that block may be unmapped ("Tracer caught signal
  // 11" once a process has loaded a few dozen programs). Its file can go.
  if (handle_ != nullptr && !MIXPREC_CUDA_SHIM_SANITIZE)
    dlclose(handle_);
  removeFolder(folder_);
}

std::unique_ptr<Program> Program::compileFile(const std::string &path,
                                              const CompileOptions &options, std::string &error) {
  std::string source;
  if (!common::readRegularFile(path, source, error))
    return nullptr;
  std::error_code ec;
  fs::path absolute = fs::absolute(path, ec);
  if (ec) {
    error = path + ": " + ec.message();
    return nullptr;
  }
  std::string folder = makeFolder(error);
  if (folder.empty())
    return nullptr;
  return build(absolute.string(), source, folder, options, error);
}

std::unique_ptr<Program> Program::compileSource(const std::string &name, const std::string &source,
                                                const CompileOptions &options, std::string &error) {
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') {
    error = "the source name '" + name + "' is not a plain file name";
    return nullptr;
  }
  std::string folder = makeFolder(error);
  if (folder.empty())
    return nullptr;
  std::string path = folder + "/" + name;
  if (!common::writeFileAtomically(path, source.data(), source.size(), error)) {
    removeFolder(folder);
    return nullptr;
  }
  return build(path, source, folder, options, error);
}

std::unique_ptr<Program> Program::build(const std::string &sourcePath, const std::string &source,
                                        const std::string &folder, const CompileOptions &options,
                                        std::string &error) {
  std::unique_ptr<Program> program(new Program());
  program->folder_ = folder;
  const std::string display = fs::path(sourcePath).filename().string();
  std::string wrapper;
  if (!wrapperSource(display, sourcePath, source, options.kernels, wrapper, error))
    return nullptr;
  const std::string wrapperPath = folder + "/" + display + ".shim.cpp";
  const std::string libraryPath = folder + "/kernels.so";
  if (!common::writeFileAtomically(wrapperPath, wrapper.data(), wrapper.size(), error) ||
      !compileLibrary(wrapperPath, libraryPath, folder, display, options, error) ||
      !program->load(libraryPath, display, error))
    return nullptr;
  return program;
}

bool Program::load(const std::string &libraryPath, const std::string &display, std::string &error) {
  handle_ = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    std::string reason = dlerror();
    reason.erase(0, reason.find(": ") == std::string::npos ? 0 : reason.find(": ") + 2);
    error = "cannot load the kernels of " + display + ": " + reason +
            (reason.find("undefined symbol") != std::string::npos
                 ? " (an `extern` declaration the shim does not define? dynamic shared memory is "
                   "`extern __shared__ float smem[];`)"
                 : "");
    return false;
  }
  using GetApi = const LibraryApi *(*)();
  auto getApi = reinterpret_cast<GetApi>(dlsym(handle_, "mixprecCudaShimLibrary"));
  api_ = getApi == nullptr ? nullptr : getApi();
  if (api_ == nullptr || api_->abiVersion != kAbiVersion) {
    error = "the kernels of " + display + " were built against another CUDA shim";
    return false;
  }
  for (const KernelRecord *k = api_->firstKernel(); k != nullptr; k = k->next)
    kernels_.emplace(k->name, k);
  return true;
}

std::vector<std::string> Program::kernelNames() const {
  std::vector<std::string> names;
  for (const auto &entry : kernels_)
    names.push_back(entry.first);
  return names;
}

const KernelRecord *Program::find(const std::string &kernel, std::string &error) const {
  auto it = kernels_.find(kernel);
  if (it != kernels_.end())
    return it->second;
  error = "no kernel named " + kernel + " (the program has";
  for (const auto &entry : kernels_)
    error += " " + entry.first;
  error += ")";
  return nullptr;
}

bool Program::launch(const std::string &kernel, Dim3 grid, Dim3 block, size_t dynamicSharedBytes,
                     const KernelArgs &args, std::string &error,
                     const LaunchOptions &options) const {
  const KernelRecord *record = find(kernel, error);
  if (record == nullptr)
    return false;
  error = argumentMismatch(*record, args);
  if (!error.empty())
    return false;
  std::vector<void *> params = args.params();
  return launchRaw(kernel, grid, block, dynamicSharedBytes, params.data(), error, options);
}

bool Program::launchRaw(const std::string &kernel, Dim3 grid, Dim3 block, size_t dynamicSharedBytes,
                        void **kernelParams, std::string &error,
                        const LaunchOptions &options) const {
  const KernelRecord *record = find(kernel, error);
  if (record == nullptr)
    return false;
  LaunchRequest request{dim3(grid.x, grid.y, grid.z), dim3(block.x, block.y, block.z),
                        dynamicSharedBytes, kernelParams, options.reverseThreadOrder};
  char message[1024] = "";
  if (api_->launch(record, &request, message, sizeof message))
    return true;
  error = message;
  return false;
}

void AlignedFree::operator()(void *p) const { std::free(p); }

AlignedBuffer alignedBuffer(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 255) / 256 * 256;
  auto *data = static_cast<unsigned char *>(std::aligned_alloc(256, rounded));
  if (data == nullptr)
    return nullptr;
  std::memset(data, 0, rounded);
  return AlignedBuffer(data);
}

} // namespace mixprec::cudashim
