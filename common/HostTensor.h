//===- HostTensor.h - tensors in host memory, from .npy to module inputs -*- C++ -*-===//
//
// The host-side tensor the interpreter computes on and the tools, the
// trainer and the Python package feed the runtime from, with the one rule
// that turns an .npy array into a graph input's values and those into a
// module input's bytes. No LLVM: the runtime-only tools use it too.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_HOSTTENSOR_H
#define MIXPREC_COMMON_HOSTTENSOR_H

#include "common/Npy.h"
#include "mixprec/runtime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::support {

/// A tensor in host memory. Float tensors of any storage dtype hold their
/// values as float32 (exactly representable: they were rounded on store),
/// or, in the interpreter's FP64 mode, as double in `doubles` (`floats`
/// then empty); integer tensors hold int64; bool tensors hold 0/1 bytes.
struct HostTensor {
  enum class Kind { Float, Int, Bool };
  Kind kind = Kind::Float;
  std::vector<int64_t> shape;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<uint8_t> bools;
  std::vector<double> doubles;

  int64_t numElements() const;
  static HostTensor makeFloat(std::vector<int64_t> shape, std::vector<float> values);
};

/// "[2, 3]" (the spelling every shape message uses).
std::string formatShape(const std::vector<int64_t> &shape);

/// Converts an .npy array into the values an input of `kind` takes, by the
/// one rule both the interpreter and the runtime use: float inputs take
/// float16/32/64 arrays; integer inputs integer arrays (exact, as int64);
/// bool inputs bool arrays (uint8 0/1 too). The shape must be `shape`.
/// Fails naming `path` and `input`.
bool hostTensorFromNpy(const NpyArray &array, HostTensor::Kind kind,
                       const std::vector<int64_t> &shape, const std::string &path,
                       const std::string &input, HostTensor &out, std::string &error);

/// The kind of host tensor an input of module dtype `dtype` takes.
HostTensor::Kind kindOfDType(mixprec_dtype_t dtype);

/// Encodes a host tensor as the bytes of a module input `info`'s dtype,
/// checking its shape (errors name `path` and the input). Integers travel
/// as integers (never through float); a value that does not fit int32 fails.
bool encodeModuleInput(const mixprec_tensor_info_t &info, const std::string &path,
                       const HostTensor &t, std::vector<uint8_t> &bytes, std::string &error);

} // namespace mixprec::support

#endif // MIXPREC_COMMON_HOSTTENSOR_H
