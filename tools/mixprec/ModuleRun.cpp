//===- ModuleRun.cpp - mixprec run on a compiled .mpk module ---------------===//
//
// Runs a module through the embeddable runtime's C API, as an application
// would: load (verified), bind inputs, run on the chosen backend, read the
// outputs.
//
//===----------------------------------------------------------------------===//
#include "tools/mixprec/CliCommon.h"
#include "tools/mixprec/Commands.h"
#include "tools/mixprec/Options.h"

#include "codegen/ModuleWriter.h"

#include "common/Npy.h"
#include "common/Shapes.h"
#include "common/numerics/Rounding.h"

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

/// Random input for `info`: normal floats, 0/1 integers and bools.
compiler::HostTensor randomInput(const mixprec_tensor_info_t &info, std::mt19937_64 &rng) {
  compiler::HostTensor t;
  t.kind = compiler::kindOfDType(info.dtype);
  t.shape.assign(info.dims, info.dims + info.rank);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> bit(0, 1);
  for (size_t k = 0; k < info.element_count; ++k) {
    if (t.kind == compiler::HostTensor::Kind::Float)
      t.floats.push_back(normal(rng));
    else if (t.kind == compiler::HostTensor::Kind::Int)
      t.ints.push_back(bit(rng));
    else
      t.bools.push_back(static_cast<uint8_t>(bit(rng)));
  }
  return t;
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

int runCompiledModule(const std::string &path, const std::string &displayName,
                      const NamedFiles &inputFiles, uint64_t seed, const std::string &backendName,
                      const std::string &outputDir, int repeat, bool time,
                      mixprec_module_t loaded) {
  mixprec_backend_t backend = MIXPREC_BACKEND_AUTO;
  if (backendName == "cpu")
    backend = MIXPREC_BACKEND_CPU;
  else if (backendName == "cuda")
    backend = MIXPREC_BACKEND_CUDA;
  else if (backendName != "auto" && !backendName.empty()) {
    mixprec_module_release(loaded);
    return usageError("run: --backend takes cpu, cuda or auto, got '" + backendName + "'");
  }
  // A just-in-time module is the user's model under another name: errors
  // say the model, never the temporary file.
  auto named = [&](std::string message) {
    if (path != displayName)
      for (size_t at = message.find(path); at != std::string::npos;
           at = message.find(path, at + displayName.size()))
        message.replace(at, path.size(), displayName);
    return message;
  };
  if (path == displayName) {
    noteInput(path, "the module " + path);
    std::string weights = codegen::sideFilePathFor(path);
    noteInput(weights, "the module's weights " + weights);
  }

  auto loadStart = std::chrono::steady_clock::now();
  mixprec_module_t module = loaded;
  if (!module)
    if (std::string e = takeError(mixprec_module_load_file(path.c_str(), nullptr, &module));
        !e.empty())
      return fail(named(e));
  double loadMs = millisecondsSince(loadStart);
  mixprec_session_options_t options;
  mixprec_session_options_init(&options);
  options.backend = backend;
  options.num_threads = opts::threads();
  mixprec_session_t session = nullptr;
  if (std::string e = takeError(mixprec_session_create(module, &options, &session)); !e.empty()) {
    mixprec_module_release(module);
    return fail(displayName + ": " + named(e));
  }
  // Every error message is built before the handles are released: names
  // and infos point into the module.
  auto failAndRelease = [&](const std::string &message) {
    int rc = fail(named(message));
    mixprec_session_release(session);
    mixprec_module_release(module);
    return rc;
  };

  size_t inputCount = mixprec_module_input_count(module);
  std::vector<bool> given(inputCount, false);
  std::mt19937_64 rng(seed);
  std::string error;
  auto bind = [&](size_t index, const mixprec_tensor_info_t &info, const std::string &source,
                  const compiler::HostTensor &t) {
    std::vector<uint8_t> bytes;
    if (!compiler::encodeModuleInput(info, source, t, bytes, error))
      return false;
    if (std::string e = takeError(mixprec_session_bind_input(
            session, index, info.dtype, info.rank, info.dims, bytes.data(), bytes.size()));
        !e.empty()) {
      error = source + ": " + e;
      return false;
    }
    return true;
  };
  for (const auto &[name, file] : inputFiles) {
    size_t index = 0;
    if (std::string e = takeError(mixprec_module_find_input(module, name.c_str(), &index));
        !e.empty())
      return failAndRelease("--input " + name + "=" + file + ": " + e);
    if (given[index])
      return failAndRelease("--input: input '" + name + "' given twice");
    noteInput(file, "--input " + name + "=" + file);
    mixprec_tensor_info_t info;
    takeError(mixprec_module_input_info(module, index, &info));
    support::NpyArray array;
    compiler::HostTensor t;
    if (!support::readNpy(file, array, error) ||
        !hostTensorFromNpy(array, compiler::kindOfDType(info.dtype),
                           std::vector<int64_t>(info.dims, info.dims + info.rank), file, name,
                           t, error) ||
        !bind(index, info, file, t))
      return failAndRelease(error);
    given[index] = true;
  }
  for (size_t i = 0; i < inputCount; ++i) {
    if (given[i])
      continue;
    mixprec_tensor_info_t info;
    takeError(mixprec_module_input_info(module, i, &info));
    if (!inputFiles.empty())
      return failAndRelease("--input: input '" + std::string(info.name) +
                            "' not given (give every input, or none for random ones)");
    if (!bind(i, info, "<random input '" + std::string(info.name) + "'>", randomInput(info, rng)))
      return failAndRelease(error);
  }

  std::vector<double> runMs;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (std::string e = takeError(mixprec_session_run(session)); !e.empty())
      return failAndRelease(displayName + ": " + e);
    runMs.push_back(millisecondsSince(start));
  }
  if (const char *reason = mixprec_session_backend_reason(session); *reason)
    llvm::errs() << "mixprec: note: " << reason << "\n";
  if (time) {
    std::sort(runMs.begin(), runMs.end());
    llvm::errs() << llvm::format("{\"load_ms\": %.3f, \"run_ms_median\": %.3f, \"run_ms_min\": "
                                 "%.3f, \"repeat\": %d, \"backend\": \"%s\"}\n",
                                 loadMs, runMs[runMs.size() / 2], runMs.front(), repeat,
                                 mixprec_backend_name(mixprec_session_backend(session)));
  }
  size_t outputCount = mixprec_module_output_count(module);
  std::vector<std::string> names, paths;
  for (size_t i = 0; i < outputCount; ++i) {
    mixprec_tensor_info_t info;
    takeError(mixprec_module_output_info(module, i, &info));
    names.push_back(info.name);
  }
  if (!planOutputFiles(outputDir, names, paths, error))
    return failAndRelease(error);
  for (size_t i = 0; i < outputCount; ++i) {
    if (paths[i].empty())
      continue;
    mixprec_tensor_info_t info;
    takeError(mixprec_module_output_info(module, i, &info));
    const void *data = nullptr;
    size_t size = 0;
    if (std::string e = takeError(mixprec_session_output_data(session, i, &data, &size));
        !e.empty())
      return failAndRelease(e);
    if (!writeModuleOutput(info, data, paths[i], error))
      return failAndRelease(error);
    llvm::outs() << "wrote " << paths[i] << "  (" << info.name << ")\n";
  }
  mixprec_session_release(session);
  mixprec_module_release(module);
  return 0;
}

} // namespace mixprec::tools
