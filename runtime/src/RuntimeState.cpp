//===- RuntimeState.cpp - the C API's state and checkpoints -----------------===//
//
// A session's state tensors by name, and saving and loading them as
// checkpoints (Checkpoint.h).
//
//===----------------------------------------------------------------------===//
#include "runtime/src/RuntimeHandles.h"

#include "runtime/src/Checkpoint.h"

#include <cstring>
#include <string>

using mixprec::runtime::LoadedModule;
using mixprec::runtime::Status;
using mixprec::runtime::TensorDesc;
namespace rt = mixprec::runtime;
using namespace mixprec::runtime::capi;

namespace {

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

mixprec_status_t mixprec_checkpoint_write(const char *path,
                                          const mixprec_checkpoint_state_t *states, size_t count,
                                          const void *user_blob, size_t user_bytes) {
  if (!path || (count && !states) || (user_bytes && !user_blob))
    return invalidArgument("checkpoint_write: path, states (when count is not 0) and user_blob "
                           "(when user_bytes is not 0) must not be NULL");
  std::vector<rt::CheckpointState> list;
  for (size_t i = 0; i < count; ++i) {
    const mixprec_tensor_info_t &info = states[i].info;
    const std::string which = "checkpoint_write: state #" + std::to_string(i);
    if (!info.name || !*info.name)
      return invalidArgument(which + " has no name");
    const std::string name = info.name;
    for (const rt::CheckpointState &earlier : list)
      if (earlier.name == name)
        return invalidArgument(which + ": two states are named '" + name + "'");
    if (info.dtype < 0 || info.dtype > MIXPREC_DTYPE_BOOL)
      return invalidArgument(which + " '" + name + "' has an unknown dtype " +
                             std::to_string(info.dtype));
    if (info.rank > 8 || (info.rank && !info.dims))
      return invalidArgument(which + " '" + name + "': rank " + std::to_string(info.rank) +
                             " (at most 8, with dims)");
    std::vector<int64_t> shape(info.dims, info.dims + info.rank);
    int64_t elements = 0;
    if (!rt::shapeElements(shape, elements))
      return invalidArgument(which + " '" + name + "': a dim out of range");
    const uint64_t bytes = uint64_t(elements) * mixprec_dtype_size(info.dtype);
    if (info.element_count != size_t(elements) || info.byte_size != bytes ||
        (bytes && !states[i].data))
      return invalidArgument(
          which + " '" + name + "': element_count " + std::to_string(info.element_count) +
          " and byte_size " + std::to_string(info.byte_size) + " must be the shape's (" +
          std::to_string(elements) + ", " + std::to_string(bytes) + "), with data");
    list.push_back({name, static_cast<mixprec::schema::DType>(info.dtype), std::move(shape),
                    states[i].data, bytes});
  }
  return toC(rt::writeCheckpoint(path, list, user_blob, user_bytes));
}

mixprec_status_t mixprec_checkpoint_read_states(const char *path, mixprec_checkpoint_visit_t visit,
                                                void *context) {
  if (!path || !visit)
    return invalidArgument("checkpoint_read_states: path and visit must not be NULL");
  return toC(rt::readCheckpointStates(path, [&](const rt::CheckpointState &s) {
    mixprec_checkpoint_state_t state{};
    state.info.name = s.name.c_str();
    state.info.dtype = static_cast<mixprec_dtype_t>(s.dtype);
    state.info.rank = s.shape.size();
    state.info.dims = s.shape.data();
    state.info.element_count = static_cast<size_t>(s.bytes / mixprec_dtype_size(state.info.dtype));
    state.info.byte_size = static_cast<size_t>(s.bytes);
    state.data = s.data;
    if (visit(context, &state) == 0)
      return rt::okStatus();
    return rt::Status(MIXPREC_EXECUTION_ERROR, "checkpoint '" + std::string(path) +
                                                   "': reading it stopped at state '" + s.name +
                                                   "'");
  }));
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
