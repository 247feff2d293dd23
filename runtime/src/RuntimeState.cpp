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
