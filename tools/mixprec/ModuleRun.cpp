//===- ModuleRun.cpp - mixprec run on a compiled .mpk module ---------------===//
//
// Runs a module through the embeddable runtime's C API, as an application
// would: load (verified), bind inputs, run on the chosen backend, read the
// outputs.
//
//===----------------------------------------------------------------------===//
#include "tools/mixprec/Commands.h"
#include "tools/mixprec/CliCommon.h"

#include "dialects/Graph/IR/ShapeInference.h"
#include "runtime/src/numerics/Rounding.h"
#include "runtime/src/support/Npy.h"

#include "mixprec/runtime.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

namespace mixprec::tools {
namespace {

/// Takes ownership of a status: its message, or "" when it is OK.
std::string takeError(mixprec_status_t status) {
  if (!status)
    return "";
  std::string message = mixprec_status_message(status);
  mixprec_status_free(status);
  return message.empty() ? "runtime error" : message;
}

/// Converts an .npy array into the bytes of `info`'s dtype, or fails naming
/// the file.
bool encodeInput(const mixprec_tensor_info_t &info, const std::string &path,
                 const support::NpyArray &array, std::vector<uint8_t> &bytes,
                 std::string &error) {
  std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  if (array.shape != dims) {
    error = path + ": input '" + std::string(info.name) + "' has shape " +
            graph::formatShape(array.shape) + ", the module expects " +
            graph::formatShape(dims);
    return false;
  }
  bytes.resize(info.byte_size);
  size_t n = info.element_count;
  switch (info.dtype) {
  case MIXPREC_DTYPE_I64:
  case MIXPREC_DTYPE_I32:
  case MIXPREC_DTYPE_BOOL: {
    if (array.dtype == support::NpyDType::F32 || array.dtype == support::NpyDType::F64 ||
        array.dtype == support::NpyDType::F16) {
      error = path + ": input '" + std::string(info.name) + "' must be an integer array";
      return false;
    }
    std::vector<float> asFloat;
    if (!support::npyToFloat32(array, asFloat, error))
      return false;
    for (size_t i = 0; i < n; ++i) {
      int64_t v = static_cast<int64_t>(asFloat[i]);
      if (info.dtype == MIXPREC_DTYPE_I64)
        std::memcpy(bytes.data() + 8 * i, &v, 8);
      else if (info.dtype == MIXPREC_DTYPE_I32) {
        int32_t w = static_cast<int32_t>(v);
        std::memcpy(bytes.data() + 4 * i, &w, 4);
      } else
        bytes[i] = v != 0;
    }
    return true;
  }
  default: {
    std::vector<float> values;
    if (!support::npyToFloat32(array, values, error))
      return false;
    numerics::Format f = static_cast<numerics::Format>(info.dtype);
    numerics::encodeArray(f, values.data(), bytes.data(), n);
    return true;
  }
  }
}

/// Writes an output of any module dtype as .npy (floats as float32).
bool writeModuleOutput(const mixprec_tensor_info_t &info, const void *data,
                       const std::string &path, std::string &error) {
  support::NpyArray array;
  array.shape.assign(info.dims, info.dims + info.rank);
  size_t n = info.element_count;
  switch (info.dtype) {
  case MIXPREC_DTYPE_I64:
    array.dtype = support::NpyDType::I64;
    break;
  case MIXPREC_DTYPE_I32:
    array.dtype = support::NpyDType::I32;
    break;
  case MIXPREC_DTYPE_BOOL:
    array.dtype = support::NpyDType::Bool;
    break;
  default: {
    std::vector<float> values(n);
    numerics::decodeArray(static_cast<numerics::Format>(info.dtype), data, values.data(), n);
    array = support::npyFromFloat32(array.shape, values.data());
    return support::writeNpy(path, array, error);
  }
  }
  const uint8_t *p = static_cast<const uint8_t *>(data);
  array.data.assign(p, p + info.byte_size);
  return support::writeNpy(path, array, error);
}

} // namespace

int runCompiledModule(const std::string &path, const NamedFiles &inputFiles, uint64_t seed,
                      const std::string &backendName, const std::string &outputDir, int repeat,
                      bool time) {
  mixprec_backend_t backend = MIXPREC_BACKEND_AUTO;
  if (backendName == "cpu")
    backend = MIXPREC_BACKEND_CPU;
  else if (backendName == "cuda")
    backend = MIXPREC_BACKEND_CUDA;
  else if (backendName != "auto" && !backendName.empty())
    return usageError("run: --backend takes cpu, cuda or auto, got '" + backendName + "'");

  auto loadStart = std::chrono::steady_clock::now();
  mixprec_module_t module = nullptr;
  if (std::string e = takeError(mixprec_module_load_file(path.c_str(), nullptr, &module));
      !e.empty())
    return fail(e);
  double loadMs = millisecondsSince(loadStart);
  mixprec_session_options_t options;
  mixprec_session_options_init(&options);
  options.backend = backend;
  mixprec_session_t session = nullptr;
  if (std::string e = takeError(mixprec_session_create(module, &options, &session)); !e.empty()) {
    mixprec_module_release(module);
    return fail(path + ": " + e);
  }
  auto cleanup = [&]() {
    mixprec_session_release(session);
    mixprec_module_release(module);
  };

  size_t inputCount = mixprec_module_input_count(module);
  std::vector<bool> given(inputCount, false);
  std::mt19937_64 rng(seed);
  std::string error;
  for (const auto &[name, file] : inputFiles) {
    size_t index = 0;
    if (std::string e = takeError(mixprec_module_find_input(module, name.c_str(), &index));
        !e.empty()) {
      cleanup();
      return fail("--input " + name + "=" + file + ": " + e);
    }
    if (given[index]) {
      cleanup();
      return fail("--input: input '" + name + "' given twice");
    }
    mixprec_tensor_info_t info;
    takeError(mixprec_module_input_info(module, index, &info));
    support::NpyArray array;
    std::vector<uint8_t> bytes;
    if (!support::readNpy(file, array, error) || !encodeInput(info, file, array, bytes, error)) {
      cleanup();
      return fail(error);
    }
    if (std::string e = takeError(mixprec_session_bind_input(
            session, index, info.dtype, info.rank, info.dims, bytes.data(), bytes.size()));
        !e.empty()) {
      cleanup();
      return fail(file + ": " + e);
    }
    given[index] = true;
  }
  for (size_t i = 0; i < inputCount; ++i) {
    if (given[i])
      continue;
    if (!inputFiles.empty()) {
      mixprec_tensor_info_t info;
      takeError(mixprec_module_input_info(module, i, &info));
      cleanup();
      return fail("--input: input '" + std::string(info.name) +
                  "' not given (give every input, or none for random ones)");
    }
    mixprec_tensor_info_t info;
    takeError(mixprec_module_input_info(module, i, &info));
    std::vector<float> values(info.element_count);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_int_distribution<int> bit(0, 1);
    std::vector<uint8_t> bytes(info.byte_size);
    bool integral = info.dtype == MIXPREC_DTYPE_I64 || info.dtype == MIXPREC_DTYPE_I32 ||
                    info.dtype == MIXPREC_DTYPE_BOOL;
    for (size_t k = 0; k < values.size(); ++k)
      values[k] = integral ? static_cast<float>(bit(rng)) : normal(rng);
    support::NpyArray array = support::npyFromFloat32(
        std::vector<int64_t>(info.dims, info.dims + info.rank), values.data());
    if (!encodeInput(info, "<random>", array, bytes, error) ||
        !takeError(mixprec_session_bind_input(session, i, info.dtype, info.rank, info.dims,
                                              bytes.data(), bytes.size()))
             .empty()) {
      cleanup();
      return fail("cannot bind a random input: " + error);
    }
  }

  std::vector<double> runMs;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (std::string e = takeError(mixprec_session_run(session)); !e.empty()) {
      cleanup();
      return fail(path + ": " + e);
    }
    runMs.push_back(millisecondsSince(start));
  }
  if (time) {
    std::sort(runMs.begin(), runMs.end());
    llvm::errs() << llvm::format("{\"load_ms\": %.3f, \"run_ms_median\": %.3f, \"run_ms_min\": "
                                 "%.3f, \"repeat\": %d, \"backend\": \"%s\"}\n",
                                 loadMs, runMs[runMs.size() / 2], runMs.front(), repeat,
                                 mixprec_backend_name(mixprec_session_backend(session)));
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir)) {
    cleanup();
    return fail(outputDir + ": cannot create output directory: " + ec.message());
  }
  for (size_t i = 0; i < mixprec_module_output_count(module); ++i) {
    mixprec_tensor_info_t info;
    takeError(mixprec_module_output_info(module, i, &info));
    const void *data = nullptr;
    size_t size = 0;
    if (std::string e = takeError(mixprec_session_output_data(session, i, &data, &size));
        !e.empty()) {
      cleanup();
      return fail(e);
    }
    llvm::SmallString<256> out(outputDir);
    llvm::sys::path::append(out, fileNameFor(info.name));
    if (!writeModuleOutput(info, data, out.str().str(), error)) {
      cleanup();
      return fail(error);
    }
    llvm::outs() << "wrote " << out << "  (" << info.name << ")\n";
  }
  cleanup();
  return 0;
}

} // namespace mixprec::tools
