//===- HostTensor.cpp - tensors in host memory, from .npy to module inputs --===//
#include "common/HostTensor.h"

#include "common/FormatShape.h"
#include "common/numerics/Rounding.h"

#include <cstdint>
#include <cstring>

namespace mixprec::support {

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor HostTensor::makeFloat(std::vector<int64_t> shape, std::vector<float> values) {
  HostTensor t;
  t.shape = std::move(shape);
  t.floats = std::move(values);
  return t;
}

std::string formatShape(const std::vector<int64_t> &shape) { return formatShapeOf(shape); }

bool hostTensorFromNpy(const NpyArray &array, HostTensor::Kind kind,
                       const std::vector<int64_t> &shape, const std::string &path,
                       const std::string &input, HostTensor &out, std::string &error) {
  if (array.shape != shape) {
    error = path + ": input '" + input + "' has shape " + formatShape(array.shape) +
            ", the model expects " + formatShape(shape);
    return false;
  }
  out = HostTensor();
  out.kind = kind;
  out.shape = array.shape;
  int64_t n = array.numElements();
  if (n < 0 || array.data.size() != static_cast<size_t>(n) * npyDTypeSize(array.dtype)) {
    error = path + ": input '" + input + "': array data size does not match its shape";
    return false;
  }
  auto wrongDType = [&](const char *want) {
    error = path + ": input '" + input + "' must be " + want + ", got dtype " +
            npyDTypeDescr(array.dtype);
    return false;
  };
  auto readInts = [&](auto tag) {
    using T = decltype(tag);
    out.ints.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, array.data.data() + i * sizeof(T), sizeof(T));
      out.ints[i] = static_cast<int64_t>(v);
    }
  };
  switch (kind) {
  case HostTensor::Kind::Bool:
    if (array.dtype != NpyDType::Bool && array.dtype != NpyDType::U8)
      return wrongDType("a bool array");
    out.bools.assign(array.data.begin(), array.data.end());
    for (uint8_t &b : out.bools)
      b = b != 0;
    return true;
  case HostTensor::Kind::Int:
    switch (array.dtype) {
    case NpyDType::I64:
      readInts(int64_t{});
      return true;
    case NpyDType::I32:
      readInts(int32_t{});
      return true;
    case NpyDType::I8:
      readInts(int8_t{});
      return true;
    case NpyDType::U8:
      readInts(uint8_t{});
      return true;
    default:
      return wrongDType("an integer array");
    }
  case HostTensor::Kind::Float:
    if (array.dtype != NpyDType::F32 && array.dtype != NpyDType::F64 &&
        array.dtype != NpyDType::F16)
      return wrongDType("a float array");
    if (!npyToFloat32(array, out.floats, error)) {
      error = path + ": input '" + input + "': " + error;
      return false;
    }
    return true;
  }
  return false;
}

HostTensor::Kind kindOfDType(mixprec_dtype_t dtype) {
  switch (dtype) {
  case MIXPREC_DTYPE_I64:
  case MIXPREC_DTYPE_I32:
    return HostTensor::Kind::Int;
  case MIXPREC_DTYPE_BOOL:
    return HostTensor::Kind::Bool;
  default:
    return HostTensor::Kind::Float;
  }
}

bool encodeModuleInput(const mixprec_tensor_info_t &info, const std::string &path,
                 const HostTensor &t, std::vector<uint8_t> &bytes,
                 std::string &error) {
  std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  if (t.shape != dims) {
    error = path + ": input '" + std::string(info.name) + "' has shape " +
            formatShape(t.shape) + ", the module expects " + formatShape(dims);
    return false;
  }
  bytes.assign(info.byte_size, 0);
  size_t n = info.element_count;
  switch (info.dtype) {
  case MIXPREC_DTYPE_I64:
    if (n > 0) // an empty tensor's vectors may hold no storage
      std::memcpy(bytes.data(), t.ints.data(), n * sizeof(int64_t));
    return true;
  case MIXPREC_DTYPE_I32:
    for (size_t i = 0; i < n; ++i) {
      int64_t v = t.ints[i];
      if (v < INT32_MIN || v > INT32_MAX) {
        error = path + ": input '" + std::string(info.name) + "': value " + std::to_string(v) +
                " at flat index " + std::to_string(i) + " does not fit int32";
        return false;
      }
      int32_t w = static_cast<int32_t>(v);
      std::memcpy(bytes.data() + 4 * i, &w, 4);
    }
    return true;
  case MIXPREC_DTYPE_BOOL:
    if (n > 0)
      std::memcpy(bytes.data(), t.bools.data(), n);
    return true;
  default:
    numerics::encodeArray(static_cast<numerics::Format>(info.dtype), t.floats.data(),
                          bytes.data(), n);
    return true;
  }
}

} // namespace mixprec::support
