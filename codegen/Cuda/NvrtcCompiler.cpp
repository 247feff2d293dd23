//===- NvrtcCompiler.cpp - CUDA C++ to PTX/CUBIN with NVRTC ----------------===//
#include "codegen/Cuda/NvrtcCompiler.h"

#include "common/Escape.h"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>

namespace mixprec::codegen {
namespace {

std::atomic<uint64_t> compileCount{0};

/// The log line that reports the first error, else the log's first line.
std::string firstErrorLine(const std::string &log) {
  size_t at = log.find("error");
  size_t begin = at == std::string::npos ? 0 : log.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + (at == std::string::npos ? 0 : 1);
  size_t end = log.find('\n', begin);
  return log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

/// The source line number in an NVRTC diagnostic, "k.cu(12): error: ...",
/// or 0 when it names none.
int diagnosticLineNumber(const std::string &diagnostic) {
  size_t close = diagnostic.find("): ");
  if (close == std::string::npos)
    return 0;
  size_t open = diagnostic.rfind('(', close);
  if (open == std::string::npos || open + 1 == close)
    return 0;
  int line = 0;
  for (size_t i = open + 1; i < close; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(diagnostic[i])) || line > 100000000)
      return 0;
    line = line * 10 + (diagnostic[i] - '0');
  }
  return line;
}

/// Byte offset where 1-based line `line` of `source` starts, or npos.
size_t lineStart(const std::string &source, int line) {
  size_t at = 0;
  for (int i = 1; i < line; ++i) {
    at = source.find('\n', at);
    if (at == std::string::npos)
      return std::string::npos;
    ++at;
  }
  return at;
}

/// Line `line` of `source` without its indentation, quoted and cut to a
/// readable length; "" if there is no such line.
std::string quotedSourceLine(const std::string &source, int line) {
  size_t begin = lineStart(source, line);
  if (line <= 0 || begin == std::string::npos)
    return "";
  size_t end = source.find('\n', begin);
  std::string text = source.substr(begin, end == std::string::npos ? std::string::npos
                                                                    : end - begin);
  size_t first = text.find_first_not_of(" \t\r");
  size_t last = text.find_last_not_of(" \t\r");
  text = first == std::string::npos ? "" : text.substr(first, last - first + 1);
  constexpr size_t kMaxShown = 160;
  if (text.size() > kMaxShown)
    text = text.substr(0, kMaxShown) + "...";
  return common::quotedName(text);
}

/// The name of the `__global__` function whose signature or body holds the
/// line starting at byte `offset` of `source`, or "" when it is outside
/// every kernel.
std::string kernelAt(const std::string &source, size_t offset) {
  size_t global = source.rfind("__global__", source.find('\n', offset));
  if (global == std::string::npos)
    return "";
  size_t paren = source.find('(', global);
  if (paren == std::string::npos)
    return "";
  size_t nameEnd = paren;
  while (nameEnd > global && std::isspace(static_cast<unsigned char>(source[nameEnd - 1])))
    --nameEnd;
  size_t nameBegin = nameEnd;
  while (nameBegin > global && (std::isalnum(static_cast<unsigned char>(source[nameBegin - 1])) ||
                                source[nameBegin - 1] == '_'))
    --nameBegin;
  if (nameBegin == nameEnd)
    return "";
  // Inside the body while its braces are open at `offset`.
  size_t body = source.find('{', paren);
  if (body == std::string::npos || offset < body)
    return source.substr(nameBegin, nameEnd - nameBegin);
  int depth = 0;
  for (size_t i = body; i < offset; ++i) {
    depth += source[i] == '{' ? 1 : source[i] == '}' ? -1 : 0;
    if (depth == 0)
      return "";
  }
  return source.substr(nameBegin, nameEnd - nameBegin);
}

/// "; in kernel 'k', line 12 is 'x = y;'": where a diagnostic points; that
/// kernel's name (or "") goes to `kernel`.
std::string describeErrorSite(const std::string &source, const std::string &diagnostic,
                              std::string &kernel) {
  int line = diagnosticLineNumber(diagnostic);
  std::string text = quotedSourceLine(source, line);
  if (text.empty())
    return "";
  kernel = kernelAt(source, lineStart(source, line));
  return (kernel.empty() ? "" : "; in kernel " + common::quotedName(kernel)) + "; line " +
         std::to_string(line) + " is " + text;
}

/// "sm_75, sm_80, ..." for messages.
std::string smList(const std::vector<int> &versions) {
  std::string list;
  for (int sm : versions)
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(sm);
  return list;
}

/// Why NVRTC cannot compile for `smVersion`, or "" when it can.
std::string unknownArchReason(int smVersion) {
  std::vector<int> known = nvrtcSupportedSmVersions();
  if (std::find(known.begin(), known.end(), smVersion) != known.end())
    return "";
  return "NVRTC " + nvrtcVersionString() + " does not know architecture sm_" +
         std::to_string(smVersion) + " (it knows " + smList(known) + ")";
}

/// Destroys the program on every exit path.
struct ProgramGuard {
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program)
      nvrtcDestroyProgram(&program);
  }
};

} // namespace

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

std::vector<int> nvrtcSupportedSmVersions() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0)
    return {};
  std::vector<int> versions(static_cast<size_t>(count));
  if (nvrtcGetSupportedArchs(versions.data()) != NVRTC_SUCCESS)
    return {};
  std::sort(versions.begin(), versions.end());
  return versions;
}

bool parseCudaArch(const std::string &text, int &smVersion, std::string &error) {
  const std::string shown = common::quotedName(text);
  bool digits = text.size() > 3 && text.size() <= 6 && text.compare(0, 3, "sm_") == 0 &&
                std::all_of(text.begin() + 3, text.end(),
                            [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!digits) {
    error = "--arch " + shown + ": expected sm_NN, e.g. sm_90";
    return false;
  }
  int sm = std::atoi(text.c_str() + 3);
  if (std::string reason = unknownArchReason(sm); !reason.empty()) {
    error = "--arch " + shown + ": " + reason;
    return false;
  }
  if (sm < kMinSmVersion) {
    error = "--arch " + shown + ": mixprec needs sm_" + std::to_string(kMinSmVersion) +
            " or newer (BF16 arithmetic)";
    return false;
  }
  smVersion = sm;
  return true;
}

std::vector<std::string> nvrtcArguments(const NvrtcOptions &options) {
  // sm_XX yields PTX and a CUBIN; compute_XX yields PTX only.
  std::vector<std::string> args = {
      std::string(options.cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") +
          std::to_string(options.smVersion),
      "-I" + options.cudaIncludeDir, "--std=c++17"};
  args.insert(args.end(), options.extraOptions.begin(), options.extraOptions.end());
  return args;
}

uint64_t nvrtcCompileCount() { return compileCount.load(); }

bool compileWithNvrtc(const std::string &name, const std::string &source,
                      const NvrtcOptions &options, NvrtcResult &result, std::string &error) {
  result.failedKernel.clear();
  if (std::string reason = unknownArchReason(options.smVersion); !reason.empty()) {
    error = name + ": " + reason;
    return false;
  }
  ProgramGuard guard;
  nvrtcResult status =
      nvrtcCreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (status != NVRTC_SUCCESS) {
    error = name + ": nvrtcCreateProgram failed: " + nvrtcGetErrorString(status);
    return false;
  }
  std::vector<std::string> args = nvrtcArguments(options);
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  ++compileCount;
  status = nvrtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());

  size_t logSize = 0;
  nvrtcGetProgramLogSize(guard.program, &logSize);
  result.log.assign(logSize, '\0');
  if (logSize)
    nvrtcGetProgramLog(guard.program, result.log.data());
  while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n'))
    result.log.pop_back();
  if (status != NVRTC_SUCCESS) {
    std::string diagnostic = firstErrorLine(result.log);
    error = name + ": NVRTC failed (" + nvrtcGetErrorString(status) +
            "): " + common::escapeControls(diagnostic) +
            describeErrorSite(source, diagnostic, result.failedKernel);
    return false;
  }

  size_t ptxSize = 0;
  nvrtcGetPTXSize(guard.program, &ptxSize);
  result.ptx.assign(ptxSize, '\0');
  nvrtcGetPTX(guard.program, result.ptx.data());
  if (!result.ptx.empty() && result.ptx.back() == '\0')
    result.ptx.pop_back();
  result.cubin.clear();
  if (options.cubin) {
    size_t cubinSize = 0;
    nvrtcGetCUBINSize(guard.program, &cubinSize);
    result.cubin.resize(cubinSize);
    if (cubinSize)
      nvrtcGetCUBIN(guard.program, result.cubin.data());
  }
  return true;
}

} // namespace mixprec::codegen
