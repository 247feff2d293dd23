//===- NpyFuzzer.cpp - libFuzzer entry: the .npy reader --------------------===//
//
// Bytes -> parseNpy (what `--input` and `--calibrate` read). A bad file must
// end in a one-line error message (header text is quoted with
// common::quotedName); a file that parses must convert to float32 and
// survive a write and a second read unchanged (dtype, shape and bytes).
// Seeds: tests/fuzz/corpus/npy (tests/fuzz/make_corpus.py).
//
//===----------------------------------------------------------------------===//
#include "common/Npy.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

using mixprec::support::NpyArray;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  NpyArray array;
  std::string error;
  if (!mixprec::support::parseNpy(data, size, "fuzz.npy", array, error)) {
    if (error.empty() || error.find('\n') != std::string::npos)
      __builtin_trap();
    return 0;
  }
  std::vector<float> floats;
  if (!mixprec::support::npyToFloat32(array, floats, error))
    __builtin_trap();
  std::vector<uint8_t> bytes;
  if (!mixprec::support::serializeNpy(array, bytes, error))
    __builtin_trap();
  NpyArray again;
  if (!mixprec::support::parseNpy(bytes.data(), bytes.size(), "again.npy", again, error) ||
      again.dtype != array.dtype || again.shape != array.shape || again.data != array.data)
    __builtin_trap();
  return 0;
}
