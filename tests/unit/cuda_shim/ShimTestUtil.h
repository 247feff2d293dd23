//===- ShimTestUtil.h - Helpers of the CUDA shim tests ----------*- C++ -*-===//
#ifndef MIXPREC_TESTS_UNIT_CUDA_SHIM_SHIMTESTUTIL_H
#define MIXPREC_TESTS_UNIT_CUDA_SHIM_SHIMTESTUTIL_H

#include "tests/cuda_shim/ShimHarness.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mixprec::cudashim::test {

/// The kernels of tests/unit/cuda_shim/kernels/FILE, compiled once per
/// process; null, with the test failed, when they do not compile.
inline const Program *kernels(const std::string &file) {
  static std::map<std::string, std::unique_ptr<Program>> programs;
  auto it = programs.find(file);
  if (it != programs.end())
    return it->second.get();
  std::string error, log;
  CompileOptions options;
  options.log = &log;
  std::unique_ptr<Program> program =
      Program::compileFile(MIXPREC_CUDA_SHIM_TEST_KERNELS "/" + file, options, error);
  if (program == nullptr) {
    ADD_FAILURE() << error << "\n" << log;
    return nullptr;
  }
  return programs.emplace(file, std::move(program)).first->second.get();
}

/// A 256-byte aligned array of `count` T, as a device buffer would be.
template <typename T> class Buffer {
public:
  explicit Buffer(size_t count) : count_(count), raw_(alignedBuffer(count * sizeof(T))) {}
  explicit Buffer(const std::vector<T> &values) : Buffer(values.size()) {
    if (!values.empty())
      std::memcpy(data(), values.data(), values.size() * sizeof(T));
  }
  T *data() const { return reinterpret_cast<T *>(raw_.get()); }
  T &operator[](size_t i) const { return data()[i]; }
  size_t size() const { return count_; }
  std::vector<T> values() const { return std::vector<T>(data(), data() + count_); }

private:
  size_t count_;
  AlignedBuffer raw_;
};

/// The bits of a float.
inline uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

/// A float from its bits.
inline float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/// How many representable values of a `width`-bit sign-magnitude float
/// format lie between the patterns a and b (0 when equal; +0 and -0 are 0
/// apart).
inline uint64_t ulpDistance(uint32_t a, uint32_t b, int width) {
  auto ordered = [width](uint32_t bits) {
    const uint32_t sign = 1u << (width - 1);
    const int64_t magnitude = bits & (sign - 1);
    return (bits & sign) != 0 ? -magnitude : magnitude;
  };
  const int64_t d = ordered(a) - ordered(b);
  return static_cast<uint64_t>(d < 0 ? -d : d);
}

} // namespace mixprec::cudashim::test

#endif // MIXPREC_TESTS_UNIT_CUDA_SHIM_SHIMTESTUTIL_H
