//===- make_test_module.cpp - write the test modules as .mpk files ---------===//
//
//   make_test_module OUT.mpk [--conv] [--external] [--unsealed]
//
// Writes the MLP plan (or, with --conv, the convolutional one) of
// TestModules.h. --external puts the MLP's weights in a side file,
// weights.bin, next to OUT. Used by the embedding-example test and to seed
// the libFuzzer corpus.
//
//===----------------------------------------------------------------------===//
#include "tests/unit/runtime/TestModules.h"

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char **argv) {
  using namespace mixprec::testing;
  const char *out = nullptr;
  bool conv = false, external = false, unsealed = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--conv") == 0)
      conv = true;
    else if (std::strcmp(argv[i], "--external") == 0)
      external = true;
    else if (std::strcmp(argv[i], "--unsealed") == 0)
      unsealed = true;
    else if (!out && argv[i][0] != '-')
      out = argv[i];
    else
      out = nullptr, i = argc;
  }
  if (!out) {
    std::fprintf(stderr, "usage: make_test_module OUT.mpk [--conv] [--external] [--unsealed]\n");
    return 2;
  }
  ModuleBuilder builder = conv ? convBuilder() : mlpBuilder(external);
  builder.seal = !unsealed;
  const BuiltModule built = builder.build();
  std::string path = out;
  if (!writeFile(path, built.module)) {
    std::fprintf(stderr, "make_test_module: cannot write '%s'\n", out);
    return 1;
  }
  if (!built.sideFile.empty()) {
    size_t slash = path.find_last_of('/');
    std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
    std::string side = dir + "/" + builder.sideFilePath;
    if (!writeFile(side, built.sideFile)) {
      std::fprintf(stderr, "make_test_module: cannot write '%s'\n", side.c_str());
      return 1;
    }
  }
  return 0;
}
