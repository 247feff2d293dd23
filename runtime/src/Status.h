//===- Status.h - error status inside the runtime ---------------*- C++ -*-===//
//
// The C API's status codes with a message, as a value type. The runtime is
// built without exceptions: every fallible function returns a Status, and
// the C layer turns it into a mixprec_status_t at the boundary.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_RUNTIME_STATUS_H
#define MIXPREC_RUNTIME_STATUS_H

#include "runtime/include/mixprec/runtime.h"

#include <string>
#include <utility>

namespace mixprec::runtime {

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(mixprec_status_code_t code, std::string message)
      : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == MIXPREC_OK; }
  mixprec_status_code_t code() const { return code_; }
  const std::string &message() const { return message_; }

  /// The same error with `context` in front ("kernel 'k': " + message).
  Status withContext(const std::string &context) const {
    return ok() ? *this : Status(code_, context + message_);
  }

private:
  mixprec_status_code_t code_ = MIXPREC_OK;
  std::string message_;
};

inline Status okStatus() { return Status(); }
inline Status invalidModule(std::string message) {
  return Status(MIXPREC_INVALID_MODULE, "invalid module: " + std::move(message));
}

} // namespace mixprec::runtime

#endif // MIXPREC_RUNTIME_STATUS_H
