//===- RuntimeSession.cpp - the C API's session handles ---------------------===//
//
// Creating sessions on a backend, binding host inputs, running, and reading
// outputs.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/RuntimeHandles.h"

#include "common/numerics/Rounding.h"
#include "runtime/src/backends/cuda/CudaDriver.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

using mixprec::runtime::AlignedBytes;
using mixprec::runtime::Backend;
using mixprec::runtime::LoadedModule;
using mixprec::runtime::Status;
using mixprec::runtime::TensorDesc;
namespace rt = mixprec::runtime;
namespace schema = mixprec::schema;
namespace num = mixprec::numerics;
using namespace mixprec::runtime::capi;

namespace {

std::string shapeText(size_t rank, const int64_t *dims) {
  std::vector<int64_t> shape(dims, dims + rank);
  return rt::formatShape(shape);
}

} // namespace

namespace mixprec::runtime::capi {

/// FAILED_PRECONDITION while a run_async has not been waited for: the
/// session's memory belongs to that run.
mixprec_status_t checkNotPending(mixprec_session_t session, const char *call) {
  if (session->pending)
    return makeStatus(MIXPREC_FAILED_PRECONDITION,
                      std::string(call) + ": a run is in flight: call mixprec_session_wait "
                                          "first");
  return nullptr;
}

mixprec_status_t ioTensor(mixprec_session_t session, size_t index, const char *role,
                          const TensorDesc **out) {
  const bool input = std::string(role) == "input";
  const std::vector<uint32_t> &tensors =
      input ? session->module->inputs() : session->module->outputs();
  if (index >= tensors.size())
    return invalidArgument(std::string(role) + " index " + std::to_string(index) +
                           " out of range: the module has " + std::to_string(tensors.size()) +
                           " " + role + "s");
  *out = &session->module->tensors()[tensors[index]];
  return nullptr;
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

} // namespace mixprec::runtime::capi

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
  if (options && MIXPREC_HAS_FIELD(mixprec_session_options_t, options, num_threads)) {
    if (options->num_threads < 0 || options->num_threads > 1024)
      return invalidArgument("mixprec_session_create: num_threads " +
                             std::to_string(options->num_threads) +
                             " is out of range (0 for the default, or 1 to 1024)");
    backendOptions.numThreads = options->num_threads;
  }

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
  const TensorDesc *desc = nullptr;
  if (mixprec_status_t s = ioTensor(session, index, "input", &desc))
    return s;
  const TensorDesc &t = *desc;
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

mixprec_status_t mixprec_session_set_collective(mixprec_session_t session,
                                                const mixprec_collective_t *collective) {
  if (!session)
    return invalidArgument("set_collective: session must not be NULL");
  if (mixprec_status_t s = checkNotPending(session, "set_collective"))
    return s;
  if (!collective) {
    session->backend->setCollective(nullptr);
    return nullptr;
  }
  // The first version ended with all_reduce; all_gather came after it.
  constexpr size_t firstVersion = offsetof(mixprec_collective_t, all_gather);
  if (collective->struct_size < firstVersion)
    return invalidArgument("set_collective: struct_size " +
                           std::to_string(collective->struct_size) + " is below " +
                           std::to_string(firstVersion));
  if (!collective->all_reduce)
    return invalidArgument("set_collective: all_reduce must not be NULL");
  if (collective->world_size < 1 || collective->rank < 0 ||
      collective->rank >= collective->world_size)
    return invalidArgument("set_collective: rank " + std::to_string(collective->rank) +
                           " of world size " + std::to_string(collective->world_size) +
                           " (needs 0 <= rank < world size)");
  mixprec_collective_t copy{};
  std::memcpy(&copy, collective, std::min(collective->struct_size, sizeof copy));
  copy.struct_size = sizeof copy;
  session->backend->setCollective(&copy);
  return nullptr;
}

void *mixprec_session_stream(mixprec_session_t session) {
  return session ? session->backend->stream() : nullptr;
}

static mixprec_status_t outputTensor(mixprec_session_t session, size_t index, const char *call,
                                     const TensorDesc **out) {
  if (!session)
    return invalidArgument(std::string(call) + ": session must not be NULL");
  const TensorDesc *desc = nullptr;
  if (mixprec_status_t s = ioTensor(session, index, "output", &desc))
    return s;
  if (mixprec_status_t s = checkNotPending(session, call))
    return s;
  if (!session->ran)
    return makeStatus(MIXPREC_FAILED_PRECONDITION,
                      std::string(call) + ": the session has not run since its inputs were "
                                          "last bound");
  *out = desc;
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
