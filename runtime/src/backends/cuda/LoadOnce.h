//===- LoadOnce.h - a library loaded once per process -----------*- C++ -*-===//
#ifndef MIXPREC_RUNTIME_CUDA_LOADONCE_H
#define MIXPREC_RUNTIME_CUDA_LOADONCE_H

#include "runtime/src/Status.h"

#include <memory>

namespace mixprec::runtime::cuda {

/// Runs `load(std::unique_ptr<T> &)` on the first call from this call site
/// (each lambda type is its own instantiation) and returns its status ever
/// after, with `out` set when it succeeded. Thread-safe: a function-local
/// static.
template <typename T, typename Load>
Status loadOnce(const T **out, Load load) {
  struct Loaded {
    std::unique_ptr<T> value;
    Status status;
  };
  static const Loaded loaded = [&] {
    Loaded l;
    l.status = load(l.value);
    return l;
  }();
  if (loaded.status.ok())
    *out = loaded.value.get();
  return loaded.status;
}

} // namespace mixprec::runtime::cuda

#endif // MIXPREC_RUNTIME_CUDA_LOADONCE_H
