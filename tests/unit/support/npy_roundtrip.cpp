//===- npy_roundtrip.cpp - Read a .npy and write it back ------------------===//
//
// Test driver for check_npy.py: `npy_roundtrip IN OUT` parses IN with the
// runtime's reader and re-serializes it to OUT, printing "<descr> <shape>".
// Any failure prints the library's one-line error and exits 1.
//
//===----------------------------------------------------------------------===//

#include "common/Npy.h"

#include <cstdio>
#include <string>

using namespace mixprec::support;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN.npy OUT.npy\n", argv[0]);
    return 2;
  }
  NpyArray a;
  std::string error;
  if (!readNpy(argv[1], a, error) || !writeNpy(argv[2], a, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::string shape = "(";
  for (size_t i = 0; i < a.shape.size(); ++i)
    shape += (i ? "," : "") + std::to_string(a.shape[i]);
  std::printf("%s %s)\n", npyDTypeDescr(a.dtype), shape.c_str());
  return 0;
}
