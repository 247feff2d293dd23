//===- RuntimeHandles.h - what the C API's sources share --------*- C++ -*-===//
//
// The structs behind runtime.h's opaque handles and the helpers that the C
// API's sources share: one source per handle family (RuntimeStatus.cpp,
// RuntimeModule.cpp, RuntimeSession.cpp, RuntimeBuffer.cpp,
// RuntimeState.cpp). Argument checking lives in those sources: the C
// boundary is where NULL handles, bad options and host buffers of the wrong
// shape, dtype or size are turned into statuses, so the layers below only
// ever see consistent requests. Private to the runtime library.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_SRC_RUNTIMEHANDLES_H
#define MIXPREC_RUNTIME_SRC_RUNTIMEHANDLES_H

#include "runtime/include/mixprec/runtime.h"

#include "runtime/src/Backend.h"
#include "runtime/src/Module.h"

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

struct mixprec_status_s {
  mixprec_status_code_t code;
  std::string message;
};

struct mixprec_module_s {
  std::atomic<int> references{1};
  std::shared_ptr<const mixprec::runtime::LoadedModule> module;
  std::vector<mixprec_tensor_info_t> inputs, outputs;
  /// Named after the states (StateDesc::name), not their tensors.
  std::vector<mixprec_tensor_info_t> states;
};

struct mixprec_session_s {
  std::shared_ptr<const mixprec::runtime::LoadedModule> module;
  std::unique_ptr<mixprec::runtime::Backend> backend;
  /// Bound inputs in their tensors' dtypes, handed to the backend per run.
  std::vector<std::unique_ptr<mixprec::runtime::AlignedBytes>> staged;
  /// Inputs and outputs bound to buffers (an input has staged data or a
  /// buffer, never both).
  mixprec::runtime::Bindings bindings;
  bool ran = false;
  /// A run_async not yet waited for.
  bool pending = false;
  /// What auto chose and why, and where a CUDA session runs; "" for the
  /// CPU backend asked for by name.
  std::string backendReason;
};

struct mixprec_buffer_s {
  std::shared_ptr<mixprec::runtime::DeviceBuffer> buffer;
  mixprec_backend_t backend;
};

/// Whether an options struct of `size` bytes contains `field` (ends before
/// `size`): older callers pass smaller structs, whose missing fields keep
/// their defaults.
#define MIXPREC_HAS_FIELD(type, options, field)                                                    \
  ((options)->struct_size >= offsetof(type, field) + sizeof((options)->field))

namespace mixprec::runtime::capi {

// RuntimeStatus.cpp

/// Returned when even a status cannot be allocated; never freed.
extern mixprec_status_s kStatusOutOfMemory;
/// A new status of `code` with `message`; NULL for MIXPREC_OK.
mixprec_status_t makeStatus(mixprec_status_code_t code, std::string message);
/// `s` as a C status; NULL when it is OK.
mixprec_status_t toC(const Status &s);
/// An INVALID_ARGUMENT status with `message`.
mixprec_status_t invalidArgument(const std::string &message);

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

// RuntimeModule.cpp

/// The C info of tensor `t`; its pointers point into `t`.
mixprec_tensor_info_t describe(const TensorDesc &t);
/// The index of the `role` (input, output) named `name` among `infos`;
/// NOT_FOUND listing their names when there is none.
mixprec_status_t findByName(const std::vector<mixprec_tensor_info_t> &infos, const char *name,
                            const char *role, size_t *out_index);
/// Info `index` of `infos` (the module's `role`s) into `out_info`;
/// INVALID_ARGUMENT for a NULL module or an index out of range.
mixprec_status_t tensorInfo(mixprec_module_t module, size_t index, const char *role,
                            const std::vector<mixprec_tensor_info_t> *infos,
                            mixprec_tensor_info_t *out_info);

// RuntimeSession.cpp

/// FAILED_PRECONDITION while a run_async has not been waited for: the
/// session's memory belongs to that run.
mixprec_status_t checkNotPending(mixprec_session_t session, const char *call);

/// Sets `*out` to the tensor of the session module's input (`role`
/// "input") or output ("output") `index`; an index out of range is an error
/// naming it ("input index 3 out of range: the module has 2 inputs").
mixprec_status_t ioTensor(mixprec_session_t session, size_t index, const char *role,
                          const TensorDesc **out);
/// Sets every state of the session to its initial value.
Status resetState(mixprec_session_t session);

} // namespace mixprec::runtime::capi

#endif // MIXPREC_RUNTIME_SRC_RUNTIMEHANDLES_H
