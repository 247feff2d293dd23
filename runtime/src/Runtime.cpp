//===- Runtime.cpp - the C API over modules, sessions and backends --------===//
//
// Argument checking lives here: the C boundary is where NULL handles, bad
// options and host buffers of the wrong shape, dtype or size are turned into
// statuses, so the layers below only ever see consistent requests.
//
//===----------------------------------------------------------------------===//
#include "runtime/include/mixprec/runtime.h"

#include "common/numerics/Rounding.h"
#include "runtime/src/Backend.h"
#include "runtime/src/Checkpoint.h"
#include "runtime/src/Module.h"
#include "runtime/src/backends/cuda/CudaDriver.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#ifndef MIXPREC_RUNTIME_VERSION
#error "MIXPREC_RUNTIME_VERSION must be defined by the build"
#endif

using mixprec::runtime::AlignedBytes;
using mixprec::runtime::Backend;
using mixprec::runtime::LoadedModule;
using mixprec::runtime::Status;
using mixprec::runtime::TensorDesc;
namespace rt = mixprec::runtime;
namespace schema = mixprec::schema;
namespace num = mixprec::numerics;

struct mixprec_status_s {
  mixprec_status_code_t code;
  std::string message;
};

struct mixprec_module_s {
  std::atomic<int> references{1};
  std::shared_ptr<const LoadedModule> module;
  std::vector<mixprec_tensor_info_t> inputs, outputs;
  /// Named after the states (StateDesc::name), not their tensors.
  std::vector<mixprec_tensor_info_t> states;
};

struct mixprec_session_s {
  std::shared_ptr<const LoadedModule> module;
  std::unique_ptr<Backend> backend;
  /// Bound inputs in their tensors' dtypes, handed to the backend per run.
  std::vector<std::unique_ptr<AlignedBytes>> staged;
  /// Inputs and outputs bound to buffers (an input has staged data or a
  /// buffer, never both).
  rt::Bindings bindings;
  bool ran = false;
  /// A run_async not yet waited for.
  bool pending = false;
  /// What auto chose and why, and where a CUDA session runs; "" for the
  /// CPU backend asked for by name.
  std::string backendReason;
};

struct mixprec_buffer_s {
  std::shared_ptr<rt::DeviceBuffer> buffer;
  mixprec_backend_t backend;
};

namespace {

/// Returned when even a status cannot be allocated; never freed.
mixprec_status_s kStatusOutOfMemory{MIXPREC_OUT_OF_MEMORY,
                                    "out of memory (while reporting an error)"};

mixprec_status_t makeStatus(mixprec_status_code_t code, std::string message) {
  if (code == MIXPREC_OK)
    return nullptr;
  auto *status = new (std::nothrow) mixprec_status_s{code, std::move(message)};
  return status ? status : &kStatusOutOfMemory;
}

mixprec_status_t toC(const Status &s) {
  return s.ok() ? nullptr : makeStatus(s.code(), s.message());
}

mixprec_status_t invalidArgument(const std::string &message) {
  return makeStatus(MIXPREC_INVALID_ARGUMENT, message);
}

/// Whether an options struct of `size` bytes contains `field` (ends before
/// `size`): older callers pass smaller structs, whose missing fields keep
/// their defaults.
#define MIXPREC_HAS_FIELD(type, options, field)                                                    \
  ((options)->struct_size >= offsetof(type, field) + sizeof((options)->field))

/// Checks the struct_size of caller-provided options.
template <typename Options>
mixprec_status_t checkOptionsSize(const Options *options, const char *what, const char *init) {
  if (!options)
    return nullptr;
  if (options->struct_size == 0)
    return invalidArgument(std::string(what) + ".struct_size is 0: initialize it with " + init);
  if (options->struct_size > sizeof(Options))
    return invalidArgument(std::string(what) + ".struct_size " +
                           std::to_string(options->struct_size) + " is larger than this "
                           "runtime's (" + std::to_string(sizeof(Options)) +
                           "): built against a newer mixprec/runtime.h");
  return nullptr;
}

mixprec_status_t toLoadOptions(const mixprec_load_options_t *options, rt::LoadOptions &out) {
  if (mixprec_status_t s = checkOptionsSize(options, "mixprec_load_options_t",
                                            "MIXPREC_LOAD_OPTIONS_INIT"))
    return s;
  if (!options)
    return nullptr;
  if (MIXPREC_HAS_FIELD(mixprec_load_options_t, options, side_file_dir) &&
      options->side_file_dir)
    out.sideFileDir = options->side_file_dir;
  if (MIXPREC_HAS_FIELD(mixprec_load_options_t, options, side_file_size)) {
    out.sideFileData = options->side_file_data;
    out.sideFileSize = options->side_file_size;
    if (!out.sideFileData && out.sideFileSize)
      return invalidArgument("side_file_data is NULL but side_file_size is " +
                             std::to_string(out.sideFileSize));
  }
  return nullptr;
}

mixprec_tensor_info_t describe(const TensorDesc &t) {
  mixprec_tensor_info_t info;
  info.name = t.name.c_str();
  info.dtype = static_cast<mixprec_dtype_t>(t.dtype);
  info.rank = t.shape.size();
  info.dims = t.shape.data();
  info.element_count = static_cast<size_t>(t.elements);
  info.byte_size = static_cast<size_t>(t.bytes);
  return info;
}

mixprec_status_t finishLoad(const Status &s, std::shared_ptr<const LoadedModule> loaded,
                            mixprec_module_t *out_module) {
  if (!s.ok())
    return toC(s);
  auto *module = new (std::nothrow) mixprec_module_s();
  if (!module)
    return makeStatus(MIXPREC_OUT_OF_MEMORY, "cannot allocate a module handle");
  module->module = std::move(loaded);
  for (uint32_t t : module->module->inputs())
    module->inputs.push_back(describe(module->module->tensors()[t]));
  for (uint32_t t : module->module->outputs())
    module->outputs.push_back(describe(module->module->tensors()[t]));
  for (const rt::StateDesc &state : module->module->states()) {
    module->states.push_back(describe(module->module->tensors()[state.tensor]));
    module->states.back().name = state.name.c_str();
  }
  *out_module = module;
  return nullptr;
}

/// "x, mask" (the names a lookup could have matched).
std::string nameList(const std::vector<mixprec_tensor_info_t> &infos) {
  std::string list;
  for (const mixprec_tensor_info_t &info : infos)
    list += (list.empty() ? "" : ", ") + std::string(info.name);
  return list.empty() ? "(none)" : list;
}

mixprec_status_t findByName(const std::vector<mixprec_tensor_info_t> &infos, const char *name,
                            const char *role, size_t *out_index) {
  if (!name || !out_index)
    return invalidArgument(std::string("find_") + role + ": name and out_index must not be NULL");
  for (size_t i = 0; i < infos.size(); ++i)
    if (std::strcmp(infos[i].name, name) == 0) {
      *out_index = i;
      return nullptr;
    }
  return makeStatus(MIXPREC_NOT_FOUND, std::string("no ") + role + " named '" + name +
                                           "'; the module's " + role + "s are: " +
                                           nameList(infos));
}

/// FAILED_PRECONDITION while a run_async has not been waited for: the
/// session's memory belongs to that run.
mixprec_status_t checkNotPending(mixprec_session_t session, const char *call) {
  if (session->pending)
    return makeStatus(MIXPREC_FAILED_PRECONDITION,
                      std::string(call) + ": a run is in flight: call mixprec_session_wait "
                                          "first");
  return nullptr;
}

std::string shapeText(size_t rank, const int64_t *dims) {
  std::vector<int64_t> shape(dims, dims + rank);
  return rt::formatShape(shape);
}

/// Sets every state of the session to its initial value.
Status resetState(mixprec_session_t session) {
  const LoadedModule &module = *session->module;
  for (const rt::StateDesc &state : module.states())
    if (Status s = session->backend->setInput(state.tensor, state.initial,
                                              module.tensors()[state.tensor].bytes);
        !s.ok())
      return s.withContext("state '" + state.name + "': ");
  return Status();
}

/// The state of the session's module named `name`, for `call`: NOT_FOUND
/// listing the states; checks the session is not running and `byte_size`
/// is the state's.
mixprec_status_t findState(mixprec_session_t session, const char *name, size_t byte_size,
                           const void *data, const char *call, const rt::StateDesc **out) {
  if (!session || !name)
    return invalidArgument(std::string(call) + ": session and name must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, call))
    return s;
  const LoadedModule &module = *session->module;
  std::string names;
  for (const rt::StateDesc &state : module.states()) {
    if (state.name == name) {
      const TensorDesc &t = module.tensors()[state.tensor];
      if (byte_size != t.bytes)
        return makeStatus(MIXPREC_SHAPE_MISMATCH,
                          std::string(call) + ": state '" + name + "' is " +
                              rt::formatShape(t.shape) + " " + rt::dtypeName(t.dtype) + " (" +
                              std::to_string(t.bytes) + " bytes), " +
                              std::to_string(byte_size) + " bytes given");
      if (byte_size && !data)
        return invalidArgument(std::string(call) + ": state '" + name +
                               "': the data pointer is NULL");
      *out = &state;
      return nullptr;
    }
    names += (names.empty() ? "" : ", ") + state.name;
  }
  return makeStatus(MIXPREC_NOT_FOUND, std::string(call) + ": no state named '" + name +
                                           "'; the module's states are: " +
                                           (names.empty() ? "(none)" : names));
}

} // namespace

//===----------------------------------------------------------------------===//
// Versions, status, names
//===----------------------------------------------------------------------===//

const char *mixprec_runtime_version(void) { return MIXPREC_RUNTIME_VERSION; }

uint32_t mixprec_schema_version(void) { return rt::kSchemaVersion; }

mixprec_status_code_t mixprec_status_code(mixprec_status_t status) {
  return status ? status->code : MIXPREC_OK;
}

const char *mixprec_status_message(mixprec_status_t status) {
  return status ? status->message.c_str() : "OK";
}

void mixprec_status_free(mixprec_status_t status) {
  if (status != &kStatusOutOfMemory)
    delete status;
}

const char *mixprec_status_code_name(mixprec_status_code_t code) {
  switch (code) {
  case MIXPREC_OK:
    return "OK";
  case MIXPREC_INVALID_ARGUMENT:
    return "INVALID_ARGUMENT";
  case MIXPREC_INVALID_MODULE:
    return "INVALID_MODULE";
  case MIXPREC_UNSUPPORTED_VERSION:
    return "UNSUPPORTED_VERSION";
  case MIXPREC_SIDE_FILE_ERROR:
    return "SIDE_FILE_ERROR";
  case MIXPREC_SHAPE_MISMATCH:
    return "SHAPE_MISMATCH";
  case MIXPREC_DTYPE_MISMATCH:
    return "DTYPE_MISMATCH";
  case MIXPREC_NOT_FOUND:
    return "NOT_FOUND";
  case MIXPREC_NO_DEVICE:
    return "NO_DEVICE";
  case MIXPREC_UNIMPLEMENTED:
    return "UNIMPLEMENTED";
  case MIXPREC_IO_ERROR:
    return "IO_ERROR";
  case MIXPREC_OUT_OF_MEMORY:
    return "OUT_OF_MEMORY";
  case MIXPREC_FAILED_PRECONDITION:
    return "FAILED_PRECONDITION";
  case MIXPREC_EXECUTION_ERROR:
    return "EXECUTION_ERROR";
  case MIXPREC_INTERNAL:
    return "INTERNAL";
  }
  return "UNKNOWN";
}

const char *mixprec_dtype_name(mixprec_dtype_t dtype) {
  if (mixprec_dtype_size(dtype) == 0)
    return "unknown";
  return rt::dtypeName(static_cast<schema::DType>(dtype));
}

size_t mixprec_dtype_size(mixprec_dtype_t dtype) {
  if (dtype < 0 || dtype > MIXPREC_DTYPE_BOOL)
    return 0;
  return rt::dtypeSize(static_cast<schema::DType>(dtype));
}

const char *mixprec_backend_name(mixprec_backend_t backend) {
  switch (backend) {
  case MIXPREC_BACKEND_AUTO:
    return "auto";
  case MIXPREC_BACKEND_CPU:
    return "cpu";
  case MIXPREC_BACKEND_CUDA:
    return "cuda";
  }
  return "unknown";
}

mixprec_status_t mixprec_cuda_device_sm_version(int *sm_version) {
  if (!sm_version)
    return invalidArgument("mixprec_cuda_device_sm_version: sm_version is NULL");
  const rt::cuda::Driver *driver = nullptr;
  if (Status s = rt::cuda::driver(&driver); !s.ok())
    return toC(s);
  *sm_version = driver->smVersion;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Modules
//===----------------------------------------------------------------------===//

void mixprec_load_options_init(mixprec_load_options_t *options) {
  if (options)
    *options = mixprec_load_options_t MIXPREC_LOAD_OPTIONS_INIT;
}

mixprec_status_t mixprec_module_load_file(const char *path, const mixprec_load_options_t *options,
                                          mixprec_module_t *out_module) {
  if (!path || !out_module)
    return invalidArgument("mixprec_module_load_file: path and out_module must not be NULL");
  rt::LoadOptions loadOptions;
  if (mixprec_status_t s = toLoadOptions(options, loadOptions))
    return s;
  std::shared_ptr<const LoadedModule> loaded;
  Status s = LoadedModule::loadFile(path, loadOptions, loaded);
  return finishLoad(s, std::move(loaded), out_module);
}

mixprec_status_t mixprec_module_load_memory(const void *data, size_t size,
                                            const mixprec_load_options_t *options,
                                            mixprec_module_t *out_module) {
  if ((!data && size) || !out_module)
    return invalidArgument("mixprec_module_load_memory: data and out_module must not be NULL");
  rt::LoadOptions loadOptions;
  if (mixprec_status_t s = toLoadOptions(options, loadOptions))
    return s;
  std::shared_ptr<const LoadedModule> loaded;
  Status s = LoadedModule::loadMemory(data, size, loadOptions, loaded);
  return finishLoad(s, std::move(loaded), out_module);
}

void mixprec_module_retain(mixprec_module_t module) {
  if (module)
    module->references.fetch_add(1, std::memory_order_relaxed);
}

void mixprec_module_release(mixprec_module_t module) {
  if (module && module->references.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete module;
}

uint32_t mixprec_module_schema_version(mixprec_module_t module) {
  return module ? module->module->version() : 0;
}

const char *mixprec_module_producer(mixprec_module_t module) {
  return module ? module->module->producer().c_str() : "";
}

size_t mixprec_module_input_count(mixprec_module_t module) {
  return module ? module->inputs.size() : 0;
}

size_t mixprec_module_output_count(mixprec_module_t module) {
  return module ? module->outputs.size() : 0;
}

static mixprec_status_t tensorInfo(mixprec_module_t module, size_t index, const char *role,
                                   const std::vector<mixprec_tensor_info_t> *infos,
                                   mixprec_tensor_info_t *out_info) {
  if (!module || !out_info)
    return invalidArgument(std::string(role) + "_info: module and out_info must not be NULL");
  if (index >= infos->size())
    return invalidArgument(std::string(role) + " index " + std::to_string(index) +
                           " out of range: the module has " + std::to_string(infos->size()) +
                           " " + role + "s");
  *out_info = (*infos)[index];
  return nullptr;
}

mixprec_status_t mixprec_module_input_info(mixprec_module_t module, size_t index,
                                           mixprec_tensor_info_t *out_info) {
  return tensorInfo(module, index, "input", module ? &module->inputs : nullptr, out_info);
}

mixprec_status_t mixprec_module_output_info(mixprec_module_t module, size_t index,
                                            mixprec_tensor_info_t *out_info) {
  return tensorInfo(module, index, "output", module ? &module->outputs : nullptr, out_info);
}

mixprec_status_t mixprec_module_find_input(mixprec_module_t module, const char *name,
                                           size_t *out_index) {
  if (!module)
    return invalidArgument("find_input: module must not be NULL");
  return findByName(module->inputs, name, "input", out_index);
}

mixprec_status_t mixprec_module_find_output(mixprec_module_t module, const char *name,
                                            size_t *out_index) {
  if (!module)
    return invalidArgument("find_output: module must not be NULL");
  return findByName(module->outputs, name, "output", out_index);
}

//===----------------------------------------------------------------------===//
// Sessions
//===----------------------------------------------------------------------===//

void mixprec_session_options_init(mixprec_session_options_t *options) {
  if (options)
    *options = mixprec_session_options_t MIXPREC_SESSION_OPTIONS_INIT;
}

mixprec_status_t mixprec_session_create(mixprec_module_t module,
                                        const mixprec_session_options_t *options,
                                        mixprec_session_t *out_session) {
  if (!module || !out_session)
    return invalidArgument("mixprec_session_create: module and out_session must not be NULL");
  if (mixprec_status_t s = checkOptionsSize(options, "mixprec_session_options_t",
                                            "MIXPREC_SESSION_OPTIONS_INIT"))
    return s;
  mixprec_backend_t backend = MIXPREC_BACKEND_AUTO;
  rt::BackendOptions backendOptions;
  if (options && MIXPREC_HAS_FIELD(mixprec_session_options_t, options, backend))
    backend = options->backend;
  if (options && MIXPREC_HAS_FIELD(mixprec_session_options_t, options, max_memory_bytes))
    backendOptions.maxMemoryBytes = options->max_memory_bytes;
  if (options && MIXPREC_HAS_FIELD(mixprec_session_options_t, options, disable_cuda_graphs))
    backendOptions.cudaGraphs = options->disable_cuda_graphs == 0;

  std::unique_ptr<Backend> instance;
  Status s;
  std::string reason;
  switch (backend) {
  case MIXPREC_BACKEND_CPU:
    s = rt::createCpuBackend(module->module, backendOptions, instance);
    break;
  case MIXPREC_BACKEND_CUDA:
    s = rt::createCudaBackend(module->module, backendOptions, instance);
    break;
  case MIXPREC_BACKEND_AUTO:
    // CUDA when it can run the module; any reason it cannot means CPU.
    s = rt::createCudaBackend(module->module, backendOptions, instance);
    if (s.ok()) {
      reason = "auto chose the CUDA backend: " + instance->description();
    } else {
      reason = "auto chose the CPU backend: " + s.message();
      s = rt::createCpuBackend(module->module, backendOptions, instance);
    }
    break;
  default:
    return invalidArgument("unknown backend " + std::to_string(static_cast<int>(backend)) +
                           " (expected MIXPREC_BACKEND_AUTO, _CPU or _CUDA)");
  }
  if (!s.ok())
    return toC(s);
  auto *session = new (std::nothrow) mixprec_session_s();
  if (!session)
    return makeStatus(MIXPREC_OUT_OF_MEMORY, "cannot allocate a session");
  session->module = module->module;
  session->backend = std::move(instance);
  session->staged.resize(session->module->inputs().size());
  session->bindings.inputs.resize(session->module->inputs().size());
  session->bindings.outputs.resize(session->module->outputs().size());
  session->backendReason = reason.empty() && backend == MIXPREC_BACKEND_CUDA
                              ? session->backend->description()
                              : std::move(reason);
  if (Status s = resetState(session); !s.ok()) {
    delete session;
    return toC(s);
  }
  *out_session = session;
  return nullptr;
}

void mixprec_session_release(mixprec_session_t session) { delete session; }

mixprec_backend_t mixprec_session_backend(mixprec_session_t session) {
  return session ? session->backend->kind() : MIXPREC_BACKEND_AUTO;
}

const char *mixprec_session_backend_reason(mixprec_session_t session) {
  return session ? session->backendReason.c_str() : "";
}

mixprec_status_t mixprec_session_bind_input(mixprec_session_t session, size_t index,
                                            mixprec_dtype_t dtype, size_t rank,
                                            const int64_t *dims, const void *data,
                                            size_t byte_size) {
  if (!session)
    return invalidArgument("bind_input: session must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "bind_input"))
    return s;
  const std::vector<uint32_t> &inputs = session->module->inputs();
  if (index >= inputs.size())
    return invalidArgument("input index " + std::to_string(index) +
                           " out of range: the module has " + std::to_string(inputs.size()) +
                           " inputs");
  const TensorDesc &t = session->module->tensors()[inputs[index]];
  const std::string what = "input '" + t.name + "'";
  if ((rank && !dims) || (byte_size && !data))
    return invalidArgument(what + ": dims and data must not be NULL");
  const size_t elementSize = mixprec_dtype_size(dtype);
  if (elementSize == 0)
    return invalidArgument(what + ": unknown dtype " + std::to_string(static_cast<int>(dtype)));
  const auto given = static_cast<schema::DType>(dtype);
  const bool convert = given != t.dtype;
  if (convert && !(given == schema::DType::F32 && rt::isFloatDType(t.dtype)))
    return makeStatus(MIXPREC_DTYPE_MISMATCH,
                      what + " is " + rt::dtypeName(t.dtype) + ", the bound data is " +
                          rt::dtypeName(given) +
                          (rt::isFloatDType(t.dtype) ? " (f32 data may also be bound: it is "
                                                       "rounded to the input's dtype)"
                                                     : ""));
  if (rank != t.shape.size() || !std::equal(t.shape.begin(), t.shape.end(), dims))
    return makeStatus(MIXPREC_SHAPE_MISMATCH, what + " has shape " + rt::formatShape(t.shape) +
                                                  ", the bound data has " +
                                                  shapeText(rank, dims));
  const uint64_t expected = static_cast<uint64_t>(t.elements) * elementSize;
  if (byte_size != expected)
    return makeStatus(MIXPREC_SHAPE_MISMATCH,
                      what + ": " + std::to_string(byte_size) + " bytes given, " +
                          rt::formatShape(t.shape) + " " + rt::dtypeName(given) + " needs " +
                          std::to_string(expected));

  auto staged = std::unique_ptr<AlignedBytes>(new (std::nothrow) AlignedBytes());
  if (!staged || !staged->allocate(t.bytes))
    return makeStatus(MIXPREC_OUT_OF_MEMORY,
                      what + ": cannot allocate " + std::to_string(t.bytes) + " bytes");
  if (!convert) {
    if (t.bytes)
      std::memcpy(staged->data(), data, t.bytes);
  } else {
    // f32 into a narrower float input: the compiled graph's input cast.
    // Float DType values equal numerics::Format's (both stable, 0..4).
    const auto format = static_cast<num::Format>(t.dtype);
    num::RoundOptions round;
    round.saturate = t.dtype == schema::DType::F8E4M3FN || t.dtype == schema::DType::F8E5M2;
    const float *values = static_cast<const float *>(data);
    AlignedBytes aligned; // host buffers need not be float-aligned
    if (reinterpret_cast<uintptr_t>(data) % alignof(float) != 0) {
      if (!aligned.allocate(byte_size))
        return makeStatus(MIXPREC_OUT_OF_MEMORY,
                          what + ": cannot allocate " + std::to_string(byte_size) + " bytes");
      std::memcpy(aligned.data(), data, byte_size);
      values = reinterpret_cast<const float *>(aligned.data());
    }
    num::encodeArray(format, values, staged->data(), static_cast<size_t>(t.elements), round);
  }
  session->staged[index] = std::move(staged);
  session->bindings.inputs[index].reset();
  session->ran = false;
  return nullptr;
}

mixprec_status_t mixprec_session_bind_input_by_name(mixprec_session_t session, const char *name,
                                                    mixprec_dtype_t dtype, size_t rank,
                                                    const int64_t *dims, const void *data,
                                                    size_t byte_size) {
  if (!session)
    return invalidArgument("bind_input_by_name: session must not be NULL");
  std::vector<mixprec_tensor_info_t> infos;
  for (uint32_t t : session->module->inputs())
    infos.push_back(describe(session->module->tensors()[t]));
  size_t index = 0;
  if (mixprec_status_t s = findByName(infos, name, "input", &index))
    return s;
  return mixprec_session_bind_input(session, index, dtype, rank, dims, data, byte_size);
}

mixprec_status_t mixprec_session_run_async(mixprec_session_t session) {
  if (!session)
    return invalidArgument("run: session must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "run"))
    return s;
  const std::vector<uint32_t> &inputs = session->module->inputs();
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!session->staged[i] && !session->bindings.inputs[i])
      return makeStatus(MIXPREC_FAILED_PRECONDITION,
                        "input '" + session->module->tensors()[inputs[i]].name +
                            "' is not bound");
  session->ran = false;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (session->staged[i])
      if (Status s = session->backend->setInput(inputs[i], session->staged[i]->data(),
                                                session->staged[i]->size());
          !s.ok())
        return toC(s);
  if (Status s = session->backend->launch(session->bindings); !s.ok())
    return toC(s);
  session->pending = true;
  return nullptr;
}

mixprec_status_t mixprec_session_wait(mixprec_session_t session) {
  if (!session)
    return invalidArgument("wait: session must not be NULL");
  if (!session->pending)
    return nullptr;
  session->pending = false;
  if (Status s = session->backend->wait(); !s.ok())
    return toC(s);
  session->ran = true;
  return nullptr;
}

mixprec_status_t mixprec_session_run(mixprec_session_t session) {
  if (mixprec_status_t s = mixprec_session_run_async(session))
    return s;
  return mixprec_session_wait(session);
}

void *mixprec_session_stream(mixprec_session_t session) {
  return session ? session->backend->stream() : nullptr;
}

static mixprec_status_t outputTensor(mixprec_session_t session, size_t index, const char *call,
                                     const TensorDesc **out) {
  if (!session)
    return invalidArgument(std::string(call) + ": session must not be NULL");
  const std::vector<uint32_t> &outputs = session->module->outputs();
  if (index >= outputs.size())
    return invalidArgument("output index " + std::to_string(index) +
                           " out of range: the module has " + std::to_string(outputs.size()) +
                           " outputs");
  if (mixprec_status_t s = checkNotPending(session, call))
    return s;
  if (!session->ran)
    return makeStatus(MIXPREC_FAILED_PRECONDITION,
                      std::string(call) + ": the session has not run since its inputs were "
                                          "last bound");
  *out = &session->module->tensors()[outputs[index]];
  return nullptr;
}

mixprec_status_t mixprec_session_output_data(mixprec_session_t session, size_t index,
                                             const void **out_data, size_t *out_byte_size) {
  const TensorDesc *t = nullptr;
  if (mixprec_status_t s = outputTensor(session, index, "output_data", &t))
    return s;
  if (!out_data)
    return invalidArgument("output_data: out_data must not be NULL");
  const void *data = nullptr;
  if (Status s = session->backend->readTensor(session->module->outputs()[index], &data);
      !s.ok())
    return toC(s);
  *out_data = data;
  if (out_byte_size)
    *out_byte_size = static_cast<size_t>(t->bytes);
  return nullptr;
}

mixprec_status_t mixprec_session_copy_output(mixprec_session_t session, size_t index,
                                             mixprec_dtype_t dtype, void *buffer,
                                             size_t byte_size) {
  const TensorDesc *t = nullptr;
  if (mixprec_status_t s = outputTensor(session, index, "copy_output", &t))
    return s;
  const std::string what = "output '" + t->name + "'";
  const auto want = static_cast<schema::DType>(dtype);
  const bool decode = want != t->dtype;
  if (mixprec_dtype_size(dtype) == 0)
    return invalidArgument(what + ": unknown dtype " + std::to_string(static_cast<int>(dtype)));
  if (decode && !(want == schema::DType::F32 && rt::isFloatDType(t->dtype)))
    return makeStatus(MIXPREC_DTYPE_MISMATCH,
                      what + " is " + rt::dtypeName(t->dtype) + ", cannot copy it as " +
                          rt::dtypeName(want) +
                          (rt::isFloatDType(t->dtype) ? " (f32 or the output's own dtype)" : ""));
  const uint64_t expected = static_cast<uint64_t>(t->elements) * mixprec_dtype_size(dtype);
  if (byte_size != expected)
    return makeStatus(MIXPREC_SHAPE_MISMATCH,
                      what + ": buffer of " + std::to_string(byte_size) + " bytes, " +
                          rt::formatShape(t->shape) + " " + rt::dtypeName(want) + " needs " +
                          std::to_string(expected));
  if (byte_size && !buffer)
    return invalidArgument(what + ": buffer must not be NULL");
  const void *data = nullptr;
  if (Status s = session->backend->readTensor(session->module->outputs()[index], &data);
      !s.ok())
    return toC(s);
  if (!decode) {
    if (byte_size)
      std::memcpy(buffer, data, byte_size);
    return nullptr;
  }
  const auto format = static_cast<num::Format>(t->dtype);
  const size_t width = rt::dtypeSize(t->dtype);
  const auto *bytes = static_cast<const uint8_t *>(data);
  auto *out = static_cast<uint8_t *>(buffer);
  for (int64_t i = 0; i < t->elements; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, bytes + i * width, width); // little-endian hosts
    const float value = num::decode(format, bits);
    std::memcpy(out + i * sizeof(float), &value, sizeof(float));
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

mixprec_status_t mixprec_buffer_create(mixprec_session_t session, size_t byte_size,
                                       mixprec_buffer_t *out_buffer) {
  if (!session || !out_buffer)
    return invalidArgument("mixprec_buffer_create: session and out_buffer must not be NULL");
  auto *buffer = new (std::nothrow) mixprec_buffer_s();
  if (!buffer)
    return makeStatus(MIXPREC_OUT_OF_MEMORY, "cannot allocate a buffer handle");
  buffer->backend = session->backend->kind();
  if (Status s = session->backend->allocate(byte_size, buffer->buffer); !s.ok()) {
    delete buffer;
    return toC(s);
  }
  *out_buffer = buffer;
  return nullptr;
}

void mixprec_buffer_release(mixprec_buffer_t buffer) { delete buffer; }

size_t mixprec_buffer_size(mixprec_buffer_t buffer) {
  return buffer ? buffer->buffer->size() : 0;
}

uint64_t mixprec_buffer_device_address(mixprec_buffer_t buffer) {
  return buffer ? buffer->buffer->address() : 0;
}

mixprec_backend_t mixprec_buffer_backend(mixprec_buffer_t buffer) {
  return buffer ? buffer->backend : MIXPREC_BACKEND_AUTO;
}

/// Checks a host copy's arguments against the buffer: `offset` and `bytes`
/// inside it, `data` non-NULL when bytes are copied.
static mixprec_status_t checkCopy(mixprec_buffer_t buffer, size_t offset, const void *data,
                                  size_t byte_size, const char *call) {
  if (!buffer)
    return invalidArgument(std::string(call) + ": buffer must not be NULL");
  if (byte_size && !data)
    return invalidArgument(std::string(call) + ": data must not be NULL");
  const size_t size = buffer->buffer->size();
  if (offset > size || byte_size > size - offset)
    return makeStatus(MIXPREC_SHAPE_MISMATCH,
                      std::string(call) + ": " + std::to_string(byte_size) + " bytes at offset " +
                          std::to_string(offset) + " do not fit the buffer's " +
                          std::to_string(size) + " bytes");
  return nullptr;
}

mixprec_status_t mixprec_buffer_copy_from_host(mixprec_buffer_t buffer, size_t offset,
                                               const void *data, size_t byte_size) {
  if (mixprec_status_t s = checkCopy(buffer, offset, data, byte_size, "buffer_copy_from_host"))
    return s;
  return toC(buffer->buffer->copyFromHost(offset, data, byte_size));
}

mixprec_status_t mixprec_buffer_copy_to_host(mixprec_buffer_t buffer, size_t offset, void *data,
                                             size_t byte_size) {
  if (mixprec_status_t s = checkCopy(buffer, offset, data, byte_size, "buffer_copy_to_host"))
    return s;
  return toC(buffer->buffer->copyToHost(offset, data, byte_size));
}

/// Checks that `buffer` can stand for tensor `t` ("input 'x'") of `session`:
/// made by this session, exactly the tensor's byte size.
static mixprec_status_t checkBinding(mixprec_session_t session, mixprec_buffer_t buffer,
                                     const TensorDesc &t, const std::string &what) {
  if (!buffer)
    return invalidArgument(what + ": buffer must not be NULL");
  if (buffer->buffer->owner() != session->backend.get())
    return invalidArgument(
        what + ": the buffer was created by another session (on the " +
        mixprec_backend_name(buffer->backend) + " backend; this session runs on " +
        mixprec_backend_name(session->backend->kind()) +
        "): bind buffers created with this session's mixprec_buffer_create");
  if (buffer->buffer->size() != t.bytes)
    return makeStatus(MIXPREC_SHAPE_MISMATCH,
                      what + " is " + rt::formatShape(t.shape) + " " + rt::dtypeName(t.dtype) +
                          " (" + std::to_string(t.bytes) + " bytes), the buffer has " +
                          std::to_string(buffer->buffer->size()) + " bytes");
  return nullptr;
}

mixprec_status_t mixprec_session_bind_input_buffer(mixprec_session_t session, size_t index,
                                                   mixprec_buffer_t buffer) {
  if (!session)
    return invalidArgument("bind_input_buffer: session must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "bind_input_buffer"))
    return s;
  const std::vector<uint32_t> &inputs = session->module->inputs();
  if (index >= inputs.size())
    return invalidArgument("input index " + std::to_string(index) +
                           " out of range: the module has " + std::to_string(inputs.size()) +
                           " inputs");
  const TensorDesc &t = session->module->tensors()[inputs[index]];
  if (mixprec_status_t s = checkBinding(session, buffer, t, "input '" + t.name + "'"))
    return s;
  session->bindings.inputs[index] = buffer->buffer;
  session->staged[index].reset();
  session->ran = false;
  return nullptr;
}

mixprec_status_t mixprec_session_bind_output_buffer(mixprec_session_t session, size_t index,
                                                    mixprec_buffer_t buffer) {
  if (!session)
    return invalidArgument("bind_output_buffer: session must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "bind_output_buffer"))
    return s;
  const std::vector<uint32_t> &outputs = session->module->outputs();
  if (index >= outputs.size())
    return invalidArgument("output index " + std::to_string(index) +
                           " out of range: the module has " + std::to_string(outputs.size()) +
                           " outputs");
  const TensorDesc &t = session->module->tensors()[outputs[index]];
  if (buffer) {
    if (mixprec_status_t s = checkBinding(session, buffer, t, "output '" + t.name + "'"))
      return s;
    session->bindings.outputs[index] = buffer->buffer;
  } else {
    session->bindings.outputs[index].reset();
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// State and checkpoints
//===----------------------------------------------------------------------===//

size_t mixprec_module_state_count(mixprec_module_t module) {
  return module ? module->states.size() : 0;
}

mixprec_status_t mixprec_module_state_info(mixprec_module_t module, size_t index,
                                           mixprec_tensor_info_t *out_info) {
  return tensorInfo(module, index, "state", module ? &module->states : nullptr, out_info);
}

mixprec_status_t mixprec_session_read_state(mixprec_session_t session, const char *name,
                                            void *buffer, size_t byte_size) {
  const rt::StateDesc *state = nullptr;
  if (mixprec_status_t s = findState(session, name, byte_size, buffer, "read_state", &state))
    return s;
  const void *data = nullptr;
  if (Status s = session->backend->readTensor(state->tensor, &data); !s.ok())
    return toC(s);
  if (byte_size)
    std::memcpy(buffer, data, byte_size);
  return nullptr;
}

mixprec_status_t mixprec_session_write_state(mixprec_session_t session, const char *name,
                                             const void *data, size_t byte_size) {
  const rt::StateDesc *state = nullptr;
  if (mixprec_status_t s = findState(session, name, byte_size, data, "write_state", &state))
    return s;
  return toC(session->backend->setInput(state->tensor, data, byte_size));
}

mixprec_status_t mixprec_session_reset_state(mixprec_session_t session) {
  if (!session)
    return invalidArgument("reset_state: session must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "reset_state"))
    return s;
  return toC(resetState(session));
}

mixprec_status_t mixprec_session_save_checkpoint(mixprec_session_t session, const char *path,
                                                 const void *user_blob, size_t user_bytes) {
  if (!session || !path || (user_bytes && !user_blob))
    return invalidArgument("save_checkpoint: session, path and user_blob (when user_bytes is "
                           "not 0) must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "save_checkpoint"))
    return s;
  return toC(rt::saveCheckpoint(*session->module, *session->backend, path, user_blob,
                                user_bytes));
}

mixprec_status_t mixprec_checkpoint_read_user_blob(const char *path, void *user_blob_out,
                                                   size_t capacity, size_t *user_bytes) {
  if (!path)
    return invalidArgument("checkpoint_read_user_blob: path must not be NULL");
  return toC(rt::readCheckpointUserBlob(path, user_blob_out, capacity, user_bytes));
}

mixprec_status_t mixprec_session_load_checkpoint(mixprec_session_t session, const char *path,
                                                 void *user_blob_out, size_t capacity,
                                                 size_t *user_bytes) {
  if (!session || !path)
    return invalidArgument("load_checkpoint: session and path must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "load_checkpoint"))
    return s;
  return toC(rt::loadCheckpoint(*session->module, *session->backend, path, user_blob_out,
                                capacity, user_bytes));
}
