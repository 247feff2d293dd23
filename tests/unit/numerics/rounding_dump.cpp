//===- rounding_dump.cpp - Raw-file front end for check_ml_dtypes.py -----===//
//
// Lets a script compare mixprec_numerics with another implementation
// (ml_dtypes) without Python bindings:
//
//   rounding_dump encode <format> <mode> <in.f32> <out.bin>
//       in.f32: little-endian float32 values; out.bin: one element of
//       formatBytes(format) bytes per input (encodeArray).
//       mode: nosat | sat | ftz | satftz
//   rounding_dump decode <format> <in.bin> <out.f32>
//       the inverse direction (decodeArray).
//
// <format> is the MLIR spelling: f32, f16, bf16, f8E4M3FN, f8E5M2.
//
//===----------------------------------------------------------------------===//

#include "common/numerics/Rounding.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace mixprec::numerics;

namespace {

bool readFile(const char *path, std::vector<unsigned char> &out) {
  std::FILE *f = std::fopen(path, "rb");
  if (!f)
    return false;
  out.clear();
  unsigned char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.insert(out.end(), buf, buf + got);
  const bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

bool writeFile(const char *path, const void *data, size_t size) {
  std::FILE *f = std::fopen(path, "wb");
  if (!f)
    return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

int usage() {
  std::fprintf(stderr, "usage: rounding_dump encode <format> <nosat|sat|ftz|satftz> <in.f32> "
                       "<out.bin>\n       rounding_dump decode <format> <in.bin> <out.f32>\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  const std::string cmd = argv[1];
  if (!((cmd == "encode" && argc == 6) || (cmd == "decode" && argc == 5)))
    return usage();
  Format f;
  if (!parseFormat(argv[2], f)) {
    std::fprintf(stderr, "rounding_dump: unknown format '%s'\n", argv[2]);
    return 2;
  }
  const size_t w = formatBytes(f);
  std::vector<unsigned char> in;
  const char *inPath = argv[argc - 2], *outPath = argv[argc - 1];
  if (!readFile(inPath, in)) {
    std::fprintf(stderr, "rounding_dump: cannot read %s\n", inPath);
    return 1;
  }
  if (cmd == "encode") {
    const std::string mode = argv[3];
    RoundOptions o;
    if (mode == "sat" || mode == "satftz")
      o.saturate = true;
    if (mode == "ftz" || mode == "satftz")
      o.flushToZero = true;
    if (mode != "nosat" && mode != "sat" && mode != "ftz" && mode != "satftz")
      return usage();
    if (in.size() % 4) {
      std::fprintf(stderr, "rounding_dump: %s is not a float32 array\n", inPath);
      return 1;
    }
    const size_t n = in.size() / 4;
    std::vector<float> values(n);
    std::memcpy(values.data(), in.data(), in.size());
    std::vector<unsigned char> out(n * w);
    encodeArray(f, values.data(), out.data(), n, o);
    if (!writeFile(outPath, out.data(), out.size())) {
      std::fprintf(stderr, "rounding_dump: cannot write %s\n", outPath);
      return 1;
    }
    return 0;
  }
  if (in.size() % w) {
    std::fprintf(stderr, "rounding_dump: %s is not a %s array\n", inPath, formatName(f));
    return 1;
  }
  const size_t n = in.size() / w;
  std::vector<float> out(n);
  decodeArray(f, in.data(), out.data(), n);
  if (!writeFile(outPath, out.data(), n * sizeof(float))) {
    std::fprintf(stderr, "rounding_dump: cannot write %s\n", outPath);
    return 1;
  }
  return 0;
}
