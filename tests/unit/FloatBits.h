//===- FloatBits.h - a float's bits and back, for the unit tests -*- C++ -*-===//
//
// The tests compare floats bit for bit (NaN payloads, the sign of zero):
// one definition of the two conversions for every suite.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_TESTS_UNIT_FLOATBITS_H
#define MIXPREC_TESTS_UNIT_FLOATBITS_H

#include <cstdint>
#include <cstring>

namespace mixprec::test {

/// The IEEE binary32 bits of `x`.
inline uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// The float whose bits are `b`.
inline float floatOf(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

} // namespace mixprec::test

#endif // MIXPREC_TESTS_UNIT_FLOATBITS_H
