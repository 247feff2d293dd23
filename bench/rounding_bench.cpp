//===- rounding_bench.cpp - Throughput of mixprec_numerics conversions ----===//
//
// Single-threaded throughput, in millions of values per second, of
// encodeArray (float32 -> format), decodeArray (format -> float32),
// roundArray (float32 -> float32 as stored in the format) and of a loop over
// the scalar encode(), for F16, BF16, F8E4M3FN and F8E5M2; then of
// quantizeFp8Store (the CPU backend's FP8 quantize: scaled, encoded
// saturating and stored in one pass) from FP32 to FP8 codes and to their
// values widened to FP32, and from BF16 to their values as BF16.
//
//   rounding_bench [--values N] [--buffer M] [--reps R] [--sat] [--ftz]
//
// Every measurement converts N values (default 100M) as N/M passes over an
// M-element buffer (default 1M: 4 MB of float32, cache-resident on most
// servers, so the conversion itself is measured) and reports the best of R
// (default 3) repetitions. --buffer equal to --values measures one
// streaming pass through DRAM instead.
//
//===----------------------------------------------------------------------===//

#include "common/numerics/Rounding.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace mixprec::numerics;

namespace {

volatile uint64_t gSink; // keeps results observable

uint64_t checksum(const void *p, size_t bytes) {
  uint64_t h = 0;
  const unsigned char *b = static_cast<const unsigned char *>(p);
  for (size_t i = 0; i < bytes; i += 4096)
    h = h * 31 + b[i];
  return h;
}

/// Inputs spread over the format's whole range: random sign and mantissa,
/// exponent uniform from below the min subnormal to above the max finite,
/// so subnormal, normal and overflow paths all occur.
std::vector<float> makeInputs(Format f, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const int lo = std::max(int(std::ilogb(formatMinSubnormal(f))) - 2 + 127, 1);
  const int hi = std::min(int(std::ilogb(formatMaxFinite(f))) + 2 + 127, 254);
  std::uniform_int_distribution<int> expDist(lo, hi);
  std::vector<float> v(n);
  for (auto &x : v) {
    const uint32_t bits = (uint32_t(rng()) & 0x807fffffu) | (uint32_t(expDist(rng)) << 23);
    std::memcpy(&x, &bits, 4);
  }
  return v;
}

template <class Fn> double bestSeconds(int reps, Fn &&fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  size_t values = 100'000'000, buffer = 1'000'000;
  int reps = 3;
  RoundOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--values" && i + 1 < argc)
      values = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--buffer" && i + 1 < argc)
      buffer = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--sat")
      o.saturate = true;
    else if (a == "--ftz")
      o.flushToZero = true;
    else {
      std::fprintf(stderr,
                   "usage: rounding_bench [--values N] [--buffer M] [--reps R] [--sat] [--ftz]\n");
      return 2;
    }
  }
  buffer = std::max<size_t>(1, std::min(buffer, values));
  const size_t passes = std::max<size_t>(1, values / buffer);
  const double total = double(passes * buffer);
  std::printf("rounding_bench: %zu values per measurement (%zu passes x %zu), best of %d, "
              "saturate=%d flushToZero=%d\n",
              passes * buffer, passes, buffer, reps, o.saturate, o.flushToZero);
  std::printf("%-9s %12s %12s %12s %14s   (M values/s)\n", "format", "encode", "decode",
              "round", "scalar-encode");
  uint64_t sink = 0;
  for (Format f : {Format::F16, Format::BF16, Format::F8E4M3FN, Format::F8E5M2}) {
    const std::vector<float> in = makeInputs(f, buffer, 1234u + uint32_t(f));
    std::vector<unsigned char> enc(buffer * formatBytes(f));
    std::vector<float> out(buffer);
    const double tEnc = bestSeconds(reps, [&] {
      for (size_t p = 0; p < passes; ++p)
        encodeArray(f, in.data(), enc.data(), buffer, o);
    });
    sink += checksum(enc.data(), enc.size());
    const double tDec = bestSeconds(reps, [&] {
      for (size_t p = 0; p < passes; ++p)
        decodeArray(f, enc.data(), out.data(), buffer);
    });
    sink += checksum(out.data(), out.size() * 4);
    const double tRound = bestSeconds(reps, [&] {
      for (size_t p = 0; p < passes; ++p)
        roundArray(f, in.data(), out.data(), buffer, o);
    });
    sink += checksum(out.data(), out.size() * 4);
    // The scalar entry point (format and options dispatched per call), for
    // code that converts one value at a time.
    const double tScalar = bestSeconds(reps, [&] {
      uint32_t acc = 0;
      for (size_t p = 0; p < passes; ++p)
        for (size_t i = 0; i < buffer; ++i)
          acc += encode(f, in[i], o);
      sink += acc;
    });
    std::printf("%-9s %12.0f %12.0f %12.0f %14.0f\n", formatName(f), total / tEnc / 1e6,
                total / tDec / 1e6, total / tRound / 1e6, total / tScalar / 1e6);
    std::fflush(stdout);
  }
  // quantizeFp8Store, scale 1.5, whatever --sat/--ftz say (it saturates).
  std::printf("%-9s %12s %12s %12s   (M values/s, quantizeFp8Store)\n", "format", "f32->codes",
              "f32->f32", "bf16->bf16");
  for (Format f : {Format::F8E4M3FN, Format::F8E5M2}) {
    const std::vector<float> in = makeInputs(f, buffer, 4321u + uint32_t(f));
    std::vector<uint16_t> in16(buffer), out16(buffer);
    encodeArray(Format::BF16, in.data(), in16.data(), buffer);
    std::vector<unsigned char> codes(buffer);
    std::vector<float> out(buffer);
    auto time = [&](Format src, const void *from, Fp8Storage to, void *into, size_t bytes) {
      const double t = bestSeconds(reps, [&] {
        for (size_t p = 0; p < passes; ++p)
          quantizeFp8Store(f, src, from, 1.5f, to, into, buffer);
      });
      sink += checksum(into, bytes);
      return total / t / 1e6;
    };
    const double toCodes = time(Format::F32, in.data(), Fp8Storage::Codes, codes.data(), buffer);
    const double toF32 = time(Format::F32, in.data(), Fp8Storage::WideF32, out.data(), buffer * 4);
    const double toBf16 =
        time(Format::BF16, in16.data(), Fp8Storage::WideBF16, out16.data(), buffer * 2);
    std::printf("%-9s %12.0f %12.0f %12.0f\n", formatName(f), toCodes, toF32, toBf16);
    std::fflush(stdout);
  }
  gSink = sink;
  return 0;
}
