//===- ModuleLoaderFuzzer.cpp - libFuzzer entry for the module loader ------===//
//
// Build with -DMIXPREC_BUILD_FUZZERS=ON and clang (libFuzzer):
//   CC=clang CXX=clang++ cmake ... -DMIXPREC_BUILD_FUZZERS=ON
//   ninja mixprec_module_fuzzer
//   ./tests/fuzz/mixprec_module_fuzzer corpus/   # seed with make_test_module output
// The seeded, always-on counterpart is tests/unit/runtime/CorruptionTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/ExerciseModule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mixprec::fuzz::exerciseModule(data, size);
  return 0;
}
