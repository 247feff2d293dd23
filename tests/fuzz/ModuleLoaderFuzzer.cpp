//===- ModuleLoaderFuzzer.cpp - libFuzzer entry for the module loader ------===//
//
// Bytes -> mixprec_module_load_memory, then a CPU session that binds every
// input, runs and reads every output (ExerciseModule.h). Built by
// `scripts/build.sh --sanitize` (tests/fuzz/CMakeLists.txt); seeds:
// tests/fuzz/corpus/module (make_corpus.py). The seeded, always-on
// counterpart is tests/unit/runtime/CorruptionTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/ExerciseModule.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mixprec::fuzz::exerciseModule(data, size);
  return 0;
}
