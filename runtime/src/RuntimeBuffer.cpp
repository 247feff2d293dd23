//===- RuntimeBuffer.cpp - the C API's buffer handles -----------------------===//
//
// Backend memory a session allocates, host copies into and out of it, and
// binding it as a session's input or output.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/RuntimeHandles.h"

#include <memory>
#include <new>
#include <string>

using mixprec::runtime::Status;
using mixprec::runtime::TensorDesc;
namespace rt = mixprec::runtime;
using namespace mixprec::runtime::capi;

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
  const TensorDesc *desc = nullptr;
  if (mixprec_status_t s = ioTensor(session, index, "input", &desc))
    return s;
  const TensorDesc &t = *desc;
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
  const TensorDesc *desc = nullptr;
  if (mixprec_status_t s = ioTensor(session, index, "output", &desc))
    return s;
  const TensorDesc &t = *desc;
  if (buffer) {
    if (mixprec_status_t s = checkBinding(session, buffer, t, "output '" + t.name + "'"))
      return s;
    session->bindings.outputs[index] = buffer->buffer;
  } else {
    session->bindings.outputs[index].reset();
  }
  return nullptr;
}
