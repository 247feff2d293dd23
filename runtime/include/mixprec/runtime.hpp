//===- mixprec/runtime.hpp - C++ wrapper of the runtime C API ---*- C++ -*-===//
//
// Header-only RAII over <mixprec/runtime.h>. No exceptions (mixprec builds
// with -fno-exceptions): fallible calls return a mixprec::Status, which owns
// the C status and frees it. Thread safety is that of the C handles: a
// Module may be shared between threads, a Session is used by one thread at a
// time.
//
//   mixprec::Module module;
//   mixprec::Status s = mixprec::Module::load("model.mpk", module);
//   if (!s.ok()) { std::fprintf(stderr, "%s\n", s.message()); return 1; }
//   mixprec::Session session;
//   s = mixprec::Session::create(module, session);
//   s = session.bindInput("x", {4, 16}, input.data());  // f32 host data
//   s = session.run();
//   std::vector<float> y;
//   s = session.copyOutput(0, y);
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_HPP
#define MIXPREC_RUNTIME_HPP

#include "mixprec/runtime.h"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace mixprec {

/// A status from the C API: ok() for success, else a code and a message.
class Status {
public:
  Status() = default;
  /// Takes ownership of `status` (NULL = OK).
  explicit Status(mixprec_status_t status) : status_(status) {}
  Status(Status &&other) noexcept : status_(other.status_) { other.status_ = nullptr; }
  Status &operator=(Status &&other) noexcept {
    std::swap(status_, other.status_);
    return *this;
  }
  Status(const Status &) = delete;
  Status &operator=(const Status &) = delete;
  ~Status() { mixprec_status_free(status_); }

  bool ok() const { return status_ == nullptr; }
  mixprec_status_code_t code() const { return mixprec_status_code(status_); }
  const char *codeName() const { return mixprec_status_code_name(code()); }
  const char *message() const { return mixprec_status_message(status_); }

private:
  mixprec_status_t status_ = nullptr;
};

/// A loaded, verified module. Copies share the module (reference counted).
class Module {
public:
  Module() = default;
  Module(const Module &other) : module_(other.module_) { mixprec_module_retain(module_); }
  Module(Module &&other) noexcept : module_(other.module_) { other.module_ = nullptr; }
  Module &operator=(Module other) {
    std::swap(module_, other.module_);
    return *this;
  }
  ~Module() { mixprec_module_release(module_); }

  static Status load(const char *path, Module &out,
                     const mixprec_load_options_t *options = nullptr) {
    mixprec_module_t module = nullptr;
    Status s(mixprec_module_load_file(path, options, &module));
    if (s.ok())
      out.reset(module);
    return s;
  }
  static Status loadFromMemory(const void *data, size_t size, Module &out,
                               const mixprec_load_options_t *options = nullptr) {
    mixprec_module_t module = nullptr;
    Status s(mixprec_module_load_memory(data, size, options, &module));
    if (s.ok())
      out.reset(module);
    return s;
  }

  bool valid() const { return module_ != nullptr; }
  mixprec_module_t handle() const { return module_; }
  uint32_t schemaVersion() const { return mixprec_module_schema_version(module_); }
  const char *producer() const { return mixprec_module_producer(module_); }
  size_t inputCount() const { return mixprec_module_input_count(module_); }
  size_t outputCount() const { return mixprec_module_output_count(module_); }
  Status inputInfo(size_t index, mixprec_tensor_info_t &info) const {
    return Status(mixprec_module_input_info(module_, index, &info));
  }
  Status outputInfo(size_t index, mixprec_tensor_info_t &info) const {
    return Status(mixprec_module_output_info(module_, index, &info));
  }
  Status findInput(const char *name, size_t &index) const {
    return Status(mixprec_module_find_input(module_, name, &index));
  }
  Status findOutput(const char *name, size_t &index) const {
    return Status(mixprec_module_find_output(module_, name, &index));
  }
  /// State kept across runs (schema v3): not among the inputs and outputs.
  size_t stateCount() const { return mixprec_module_state_count(module_); }
  Status stateInfo(size_t index, mixprec_tensor_info_t &info) const {
    return Status(mixprec_module_state_info(module_, index, &info));
  }

private:
  void reset(mixprec_module_t module) {
    mixprec_module_release(module_);
    module_ = module;
  }
  mixprec_module_t module_ = nullptr;
};

class Session;

/// Memory of a session's backend (device memory on CUDA, host memory on the
/// CPU backend), bound in place of host inputs and outputs. Move-only.
class Buffer {
public:
  Buffer() = default;
  Buffer(Buffer &&other) noexcept : buffer_(other.buffer_) { other.buffer_ = nullptr; }
  Buffer &operator=(Buffer &&other) noexcept {
    std::swap(buffer_, other.buffer_);
    return *this;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  ~Buffer() { mixprec_buffer_release(buffer_); }

  /// `byteSize` bytes of `session`'s backend memory, set to zero.
  static Status create(const Session &session, size_t byteSize, Buffer &out);

  bool valid() const { return buffer_ != nullptr; }
  mixprec_buffer_t handle() const { return buffer_; }
  size_t size() const { return mixprec_buffer_size(buffer_); }
  /// A CUdeviceptr on CUDA, a host address on the CPU backend.
  uint64_t deviceAddress() const { return mixprec_buffer_device_address(buffer_); }
  mixprec_backend_t backend() const { return mixprec_buffer_backend(buffer_); }
  Status copyFromHost(const void *data, size_t byteSize, size_t offset = 0) {
    return Status(mixprec_buffer_copy_from_host(buffer_, offset, data, byteSize));
  }
  Status copyToHost(void *data, size_t byteSize, size_t offset = 0) const {
    return Status(mixprec_buffer_copy_to_host(buffer_, offset, data, byteSize));
  }

private:
  mixprec_buffer_t buffer_ = nullptr;
};

/// A module instantiated on a backend. Move-only; one thread at a time.
class Session {
public:
  Session() = default;
  Session(Session &&other) noexcept
      : module_(std::move(other.module_)), session_(other.session_) {
    other.session_ = nullptr;
  }
  Session &operator=(Session &&other) noexcept {
    std::swap(module_, other.module_);
    std::swap(session_, other.session_);
    return *this;
  }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;
  ~Session() { mixprec_session_release(session_); }

  static Status create(const Module &module, Session &out,
                       mixprec_backend_t backend = MIXPREC_BACKEND_AUTO) {
    mixprec_session_options_t options;
    mixprec_session_options_init(&options);
    options.backend = backend;
    return create(module, out, options);
  }
  static Status create(const Module &module, Session &out,
                       const mixprec_session_options_t &options) {
    mixprec_session_t session = nullptr;
    Status s(mixprec_session_create(module.handle(), &options, &session));
    if (s.ok()) {
      mixprec_session_release(out.session_);
      out.session_ = session;
      out.module_ = module;
    }
    return s;
  }

  bool valid() const { return session_ != nullptr; }
  mixprec_session_t handle() const { return session_; }
  mixprec_backend_t backend() const { return mixprec_session_backend(session_); }
  /// What MIXPREC_BACKEND_AUTO chose and why; "" for a backend asked for by name.
  const char *backendReason() const { return mixprec_session_backend_reason(session_); }

  /// By position (a separate name: a literal 0 would be ambiguous with the
  /// by-name overloads).
  Status bindInputAt(size_t index, mixprec_dtype_t dtype, const std::vector<int64_t> &dims,
                     const void *data, size_t byteSize) {
    return Status(mixprec_session_bind_input(session_, index, dtype, dims.size(), dims.data(),
                                             data, byteSize));
  }
  Status bindInput(const char *name, mixprec_dtype_t dtype, const std::vector<int64_t> &dims,
                   const void *data, size_t byteSize) {
    return Status(mixprec_session_bind_input_by_name(session_, name, dtype, dims.size(),
                                                     dims.data(), data, byteSize));
  }
  /// F32 host data of shape `dims` (rounded to the input's float dtype).
  Status bindInput(const char *name, const std::vector<int64_t> &dims, const float *data) {
    size_t count = 1;
    for (int64_t d : dims)
      count *= d < 0 ? 0 : static_cast<size_t>(d);
    return bindInput(name, MIXPREC_DTYPE_F32, dims, data, count * sizeof(float));
  }

  Status run() { return Status(mixprec_session_run(session_)); }
  /// Starts a run on the session's stream; wait() returns its status.
  Status runAsync() { return Status(mixprec_session_run_async(session_)); }
  Status wait() { return Status(mixprec_session_wait(session_)); }
  /// A CUstream on the CUDA backend; nullptr on the CPU backend.
  void *stream() const { return mixprec_session_stream(session_); }

  /// Input or output `index` read from / written to `buffer` on the device.
  Status bindInputBuffer(size_t index, const Buffer &buffer) {
    return Status(mixprec_session_bind_input_buffer(session_, index, buffer.handle()));
  }
  Status bindOutputBuffer(size_t index, const Buffer &buffer) {
    return Status(mixprec_session_bind_output_buffer(session_, index, buffer.handle()));
  }
  Status unbindOutputBuffer(size_t index) {
    return Status(mixprec_session_bind_output_buffer(session_, index, nullptr));
  }

  /// Output `index` in its own dtype; valid until the next bind or run.
  Status outputData(size_t index, const void *&data, size_t &byteSize) const {
    return Status(mixprec_session_output_data(session_, index, &data, &byteSize));
  }
  Status copyOutput(size_t index, mixprec_dtype_t dtype, void *buffer, size_t byteSize) const {
    return Status(mixprec_session_copy_output(session_, index, dtype, buffer, byteSize));
  }
  /// Output `index` of a float dtype, decoded to FP32.
  Status copyOutput(size_t index, std::vector<float> &out) const {
    mixprec_tensor_info_t info;
    Status s = module_.outputInfo(index, info);
    if (!s.ok())
      return s;
    out.resize(info.element_count);
    return copyOutput(index, MIXPREC_DTYPE_F32, out.data(), out.size() * sizeof(float));
  }

  /// State `name` in its own dtype (exactly its byte size).
  Status readState(const char *name, void *buffer, size_t byteSize) const {
    return Status(mixprec_session_read_state(session_, name, buffer, byteSize));
  }
  Status writeState(const char *name, const void *data, size_t byteSize) {
    return Status(mixprec_session_write_state(session_, name, data, byteSize));
  }
  /// Every state back to its initial value.
  Status resetState() { return Status(mixprec_session_reset_state(session_)); }
  /// The collective the module's all_reduce steps call (null: none; a job
  /// of one process). Copied; its context must outlive the runs.
  Status setCollective(const mixprec_collective_t *collective) {
    return Status(mixprec_session_set_collective(session_, collective));
  }
  /// Every state and the application's `userBytes` of `userBlob`, written
  /// atomically to `path`.
  Status saveCheckpoint(const char *path, const void *userBlob = nullptr, size_t userBytes = 0) {
    return Status(mixprec_session_save_checkpoint(session_, path, userBlob, userBytes));
  }
  /// Every state from `path` (checked first: on error nothing changes), its
  /// user blob into `userBlob` (`capacity` bytes, its size to `userBytes`).
  Status loadCheckpoint(const char *path, void *userBlob, size_t capacity, size_t &userBytes) {
    return Status(
        mixprec_session_load_checkpoint(session_, path, userBlob, capacity, &userBytes));
  }
  Status loadCheckpoint(const char *path) {
    return Status(mixprec_session_load_checkpoint(session_, path, nullptr, 0, nullptr));
  }
  /// A checkpoint's user blob, without loading its states
  /// (mixprec_checkpoint_read_user_blob).
  static Status readCheckpointUserBlob(const char *path, void *userBlob, size_t capacity,
                                       size_t &userBytes) {
    return Status(mixprec_checkpoint_read_user_blob(path, userBlob, capacity, &userBytes));
  }
  /// mixprec_checkpoint_write.
  static Status writeCheckpoint(const char *path, const mixprec_checkpoint_state_t *states,
                                size_t count, const void *userBlob = nullptr,
                                size_t userBytes = 0) {
    return Status(mixprec_checkpoint_write(path, states, count, userBlob, userBytes));
  }
  /// mixprec_checkpoint_read_states with a callable taking the state
  /// (returning false stops the reading).
  template <typename F> static Status readCheckpointStates(const char *path, F visit) {
    return Status(mixprec_checkpoint_read_states(
        path,
        [](void *context, const mixprec_checkpoint_state_t *state) -> int {
          return (*static_cast<F *>(context))(*state) ? 0 : 1;
        },
        &visit));
  }

private:
  Module module_; ///< for output shapes
  mixprec_session_t session_ = nullptr;
};

inline Status Buffer::create(const Session &session, size_t byteSize, Buffer &out) {
  mixprec_buffer_t buffer = nullptr;
  Status s(mixprec_buffer_create(session.handle(), byteSize, &buffer));
  if (s.ok()) {
    mixprec_buffer_release(out.buffer_);
    out.buffer_ = buffer;
  }
  return s;
}

} // namespace mixprec

#endif // MIXPREC_RUNTIME_HPP
