//===- NvrtcCompiler.cpp - CUDA C++ to PTX/CUBIN with NVRTC ----------------===//
#include "codegen/NvrtcCompiler.h"

#include <nvrtc.h>

namespace mixprec::codegen {
namespace {

/// Returns the first line of the log that reports an error, else its first line.
std::string firstErrorLine(const std::string &log) {
  size_t at = log.find("error");
  size_t begin = at == std::string::npos ? 0 : log.rfind('\n', at);
  begin = begin == std::string::npos ? 0 : begin + (at == std::string::npos ? 0 : 1);
  size_t end = log.find('\n', begin);
  return log.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
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

bool compileWithNvrtc(const std::string &name, const std::string &source,
                      const NvrtcOptions &options, NvrtcResult &result, std::string &error) {
  ProgramGuard guard;
  nvrtcResult status =
      nvrtcCreateProgram(&guard.program, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (status != NVRTC_SUCCESS) {
    error = name + ": nvrtcCreateProgram failed: " + nvrtcGetErrorString(status);
    return false;
  }
  // sm_XX yields PTX and a CUBIN; compute_XX yields PTX only.
  std::vector<std::string> args = {
      std::string(options.cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") +
          std::to_string(options.smVersion),
      "-I" + options.cudaIncludeDir, "--std=c++17"};
  args.insert(args.end(), options.extraOptions.begin(), options.extraOptions.end());
  std::vector<const char *> argv;
  for (const std::string &a : args)
    argv.push_back(a.c_str());
  status = nvrtcCompileProgram(guard.program, static_cast<int>(argv.size()), argv.data());

  size_t logSize = 0;
  nvrtcGetProgramLogSize(guard.program, &logSize);
  result.log.assign(logSize, '\0');
  if (logSize)
    nvrtcGetProgramLog(guard.program, result.log.data());
  while (!result.log.empty() && (result.log.back() == '\0' || result.log.back() == '\n'))
    result.log.pop_back();
  if (status != NVRTC_SUCCESS) {
    error = name + ": NVRTC failed (" + nvrtcGetErrorString(status) + "): " +
            firstErrorLine(result.log);
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
