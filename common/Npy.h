//===- Npy.h - NumPy .npy reader/writer -------------------------*- C++ -*-===//
//
// Reads and writes NumPy .npy files (format versions 1.0, 2.0, 3.0) holding
// little-endian, C-ordered arrays of the dtypes in NpyDType. Data is kept as
// raw bytes in the file's dtype, so a read followed by a write reproduces the
// array exactly (f2 stays 16-bit, f8 stays 64-bit); npyToFloat32 converts for
// consumers that want float.
//
// No exceptions: every entry point returns false and sets a one-line error
// that starts with the file name (or the name passed for in-memory buffers).
// Malformed input never causes an out-of-bounds read.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_NPY_H
#define MIXPREC_COMMON_NPY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mixprec::support {

/// descr strings: F32 '<f4', F64 '<f8', F16 '<f2', I64 '<i8', I32 '<i4',
/// I8 '|i1', U8 '|u1', Bool '|b1'.
enum class NpyDType { F32, F64, F16, I64, I32, I8, U8, Bool };

/// Bytes per element.
size_t npyDTypeSize(NpyDType t);
/// The numpy descr string, e.g. "<f4".
const char *npyDTypeDescr(NpyDType t);

struct NpyArray {
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape; // empty = 0-d (one element)
  std::vector<uint8_t> data;  // C order, little-endian, numElements() items

  int64_t numElements() const;
};

/// Parses a complete .npy image. `nameForErrors` prefixes error messages.
bool parseNpy(const uint8_t *bytes, size_t size,
              const std::string &nameForErrors, NpyArray &out,
              std::string &error);

/// Reads and parses `path`.
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

/// Serializes to .npy bytes: version 1.0, or 2.0 when the header needs more
/// than 65535 bytes; header padded so the data starts 64-byte aligned, as
/// numpy does. Fails if data.size() does not match shape and dtype.
bool serializeNpy(const NpyArray &a, std::vector<uint8_t> &bytes,
                  std::string &error);

/// Serializes and writes `path` (error names the path).
bool writeNpy(const std::string &path, const NpyArray &a, std::string &error);

/// Converts any supported dtype to float (f8 rounds, f2 widens exactly,
/// integers convert as static_cast<float>, bool -> 0/1).
bool npyToFloat32(const NpyArray &a, std::vector<float> &out,
                  std::string &error);

/// Builds an F32 array from `shape` and numElements(shape) floats.
NpyArray npyFromFloat32(const std::vector<int64_t> &shape, const float *data);

} // namespace mixprec::support

#endif // MIXPREC_COMMON_NPY_H
