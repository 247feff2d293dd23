//===- RoundingTest.cpp - mixprec_numerics against independent references --===//
//
// References:
//  * LLVM APFloat (IEEEhalf, BFloat, Float8E4M3FN, Float8E5M2;
//    rmNearestTiesToEven): the default (non-saturating) path must equal it
//    bit for bit, NaNs included, in both directions.
//  * CUDA's host-compiled conversion code (cuda_fp16.h, cuda_bf16.h,
//    cuda_fp8.h): __float2half_rn / __float2bfloat16_rn / __NV_NOSAT must
//    agree on every non-NaN input (CUDA returns a positive canonical NaN for
//    every NaN; we only require NaN there). The saturating path must equal
//    __nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...) bit for bit, NaNs
//    included; for F16/BF16 (no CUDA satfinite host function) it must equal
//    the CUDA _rn result with +-inf clamped to +-max.
//  * tests/unit/numerics/check_ml_dtypes.py (separate ctest) adds ml_dtypes.
//
// Each check loops over millions of inputs and counts mismatches, printing
// the first few, so a failure says what went wrong without flooding.
//
//===----------------------------------------------------------------------===//

#include "common/numerics/Rounding.h"
#include "tests/unit/FloatBits.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <llvm/ADT/APFloat.h>
#include <llvm/ADT/APInt.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cfenv>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define MIXPREC_HAVE_MXCSR 1
#endif

namespace mixprec {
namespace numerics {
// gtest prints parameters with this (found by ADL) instead of raw bytes.
void PrintTo(Format f, std::ostream *os) { *os << formatName(f); }
} // namespace numerics
} // namespace mixprec

using namespace mixprec::numerics;

namespace {

constexpr Format kNarrow[] = {Format::F16, Format::BF16, Format::F8E4M3FN, Format::F8E5M2};
constexpr Format kAll[] = {Format::F32, Format::F16, Format::BF16, Format::F8E4M3FN,
                           Format::F8E5M2};

// Sizes: 10^7 uniformly random float32 bit patterns per format (most of them
// land outside the narrow formats' range), plus 4*10^6 per format drawn with
// exponents inside the format's range where rounding actually happens.
constexpr size_t kUniformRandom = 10'000'000;
constexpr size_t kFocusedRandom = 4'000'000;
constexpr uint32_t kSeed = 0x6d697870u; // "mixp"

using mixprec::test::bitsOf;
using mixprec::test::floatOf;

unsigned widthOf(Format f) { return unsigned(formatBytes(f)) * 8; }

const llvm::fltSemantics &semanticsOf(Format f) {
  switch (f) {
  case Format::F16:
    return llvm::APFloat::IEEEhalf();
  case Format::BF16:
    return llvm::APFloat::BFloat();
  case Format::F8E4M3FN:
    return llvm::APFloat::Float8E4M3FN();
  case Format::F8E5M2:
    return llvm::APFloat::Float8E5M2();
  case Format::F32:
    break;
  }
  return llvm::APFloat::IEEEsingle();
}

// ---- References -------------------------------------------------------------

uint32_t apEncode(Format f, uint32_t xbits) {
  llvm::APFloat v(llvm::APFloat::IEEEsingle(), llvm::APInt(32, xbits));
  bool losesInfo = false;
  (void)v.convert(semanticsOf(f), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return uint32_t(v.bitcastToAPInt().getZExtValue());
}

uint32_t apDecode(Format f, uint32_t bits) {
  llvm::APFloat v(semanticsOf(f), llvm::APInt(widthOf(f), bits));
  bool losesInfo = false;
  (void)v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  EXPECT_FALSE(losesInfo) << "widening must be exact";
  return uint32_t(v.bitcastToAPInt().getZExtValue());
}

uint16_t halfBits(__half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}
uint16_t bf16Bits(__nv_bfloat16 h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

/// CUDA host conversion. sat: __NV_SATFINITE for FP8; for F16/BF16 the _rn
/// result with +-inf clamped to +-max (CUDA has no host satfinite for them).
uint32_t cudaEncode(Format f, float x, bool sat) {
  switch (f) {
  case Format::F16: {
    uint32_t b = halfBits(__float2half_rn(x));
    if (sat && (b & 0x7fffu) == 0x7c00u)
      b = (b & 0x8000u) | 0x7bffu;
    return b;
  }
  case Format::BF16: {
    uint32_t b = bf16Bits(__float2bfloat16_rn(x));
    if (sat && (b & 0x7fffu) == 0x7f80u)
      b = (b & 0x8000u) | 0x7f7fu;
    return b;
  }
  case Format::F8E4M3FN:
    return __nv_cvt_float_to_fp8(x, sat ? __NV_SATFINITE : __NV_NOSAT, __NV_E4M3);
  case Format::F8E5M2:
    return __nv_cvt_float_to_fp8(x, sat ? __NV_SATFINITE : __NV_NOSAT, __NV_E5M2);
  case Format::F32:
    break;
  }
  return bitsOf(x);
}

uint32_t cudaDecode(Format f, uint32_t bits) {
  switch (f) {
  case Format::F16: {
    __half_raw r;
    r.x = uint16_t(bits);
    return bitsOf(__half2float(__half(r)));
  }
  case Format::BF16: {
    __nv_bfloat16_raw r;
    r.x = uint16_t(bits);
    return bitsOf(__bfloat162float(__nv_bfloat16(r)));
  }
  case Format::F8E4M3FN:
  case Format::F8E5M2: {
    __half_raw r = __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t(bits),
                                           f == Format::F8E4M3FN ? __NV_E4M3 : __NV_E5M2);
    return bitsOf(__half2float(__half(r)));
  }
  case Format::F32:
    break;
  }
  return bits;
}

bool isNaNBits(Format f, uint32_t b) {
  switch (f) {
  case Format::F16:
    return (b & 0x7fffu) > 0x7c00u;
  case Format::BF16:
    return (b & 0x7fffu) > 0x7f80u;
  case Format::F8E4M3FN:
    return (b & 0x7fu) == 0x7fu;
  case Format::F8E5M2:
    return (b & 0x7fu) > 0x7cu;
  case Format::F32:
    break;
  }
  return (b & 0x7fffffffu) > 0x7f800000u;
}

uint32_t signMask(Format f) { return 1u << (widthOf(f) - 1); }
unsigned mantissaBits(Format f) {
  switch (f) {
  case Format::F16:
    return 10;
  case Format::BF16:
    return 7;
  case Format::F8E4M3FN:
    return 3;
  case Format::F8E5M2:
    return 2;
  case Format::F32:
    break;
  }
  return 23;
}
bool isSubnormalBits(Format f, uint32_t b) {
  const uint32_t mag = b & (signMask(f) - 1u);
  return mag != 0 && mag < (1u << mantissaBits(f));
}

/// flushToZero rule applied on top of a non-flushing reference result:
/// float32 subnormal input -> signed zero; subnormal result -> signed zero.
uint32_t ftzRef(Format f, uint32_t xbits, uint32_t result) {
  if ((xbits & 0x7fffffffu) < 0x00800000u || isSubnormalBits(f, result))
    return (xbits >> 31) ? signMask(f) : 0u;
  return result;
}

// ---- Inputs -------------------------------------------------------------------

void addNeighbours(std::vector<uint32_t> &v, float x, int k) {
  float lo = x, hi = x;
  v.push_back(bitsOf(x));
  for (int i = 0; i < k; ++i) {
    lo = std::nextafter(lo, -INFINITY);
    hi = std::nextafter(hi, INFINITY);
    v.push_back(bitsOf(lo));
    v.push_back(bitsOf(hi));
  }
}

/// Every float32 where some format's rounding changes: all finite values of
/// every narrow format, the midpoints between consecutive values (including
/// 0..min subnormal and max..overflow threshold), each +-2 float32 ulps;
/// float32 specials, subnormals and NaNs with many payloads. Both signs.
const std::vector<uint32_t> &boundaryInputs() {
  static const std::vector<uint32_t> inputs = [] {
    std::vector<uint32_t> v;
    for (Format f : kNarrow) {
      const uint32_t count = 1u << widthOf(f);
      std::vector<double> positives;
      for (uint32_t b = 0; b < count; ++b) {
        if (isNaNBits(f, b))
          continue;
        const float x = floatOf(apDecode(f, b));
        addNeighbours(v, x, 2);
        if (!(b & signMask(f)) && std::isfinite(x))
          positives.push_back(x);
      }
      std::sort(positives.begin(), positives.end());
      // The "next value" after max if the exponent range went on: max plus
      // one ulp of max; its midpoint with max is the overflow threshold.
      const double maxv = positives.back(), ulp = maxv - positives[positives.size() - 2];
      positives.push_back(maxv + ulp);
      for (size_t i = 0; i + 1 < positives.size(); ++i) {
        const double mid = (positives[i] + positives[i + 1]) / 2;
        const float midf = float(mid);
        EXPECT_EQ(double(midf), mid) << "midpoints are exact in float32";
        addNeighbours(v, midf, 2);
        addNeighbours(v, -midf, 2);
      }
      addNeighbours(v, float(2 * maxv), 1);
      addNeighbours(v, float(-2 * maxv), 1);
    }
    for (float x : {0.0f, INFINITY, FLT_MAX, FLT_MIN, FLT_TRUE_MIN, 1.0f, 1e-8f, 500.0f, 65504.0f,
                    65520.0f, 448.0f, 464.0f, 480.0f, 57344.0f, 61440.0f}) {
      addNeighbours(v, x, 2);
      addNeighbours(v, -x, 2);
    }
    // float32 subnormals: every 2^k, 2^k - 1, 2^k + 1 and 2^k * 3 pattern.
    for (uint32_t k = 0; k < 23; ++k) {
      for (uint32_t m : {1u << k, (1u << k) - 1u, (1u << k) + 1u, (3u << k) & 0x7fffffu}) {
        v.push_back(m);
        v.push_back(m | 0x80000000u);
      }
    }
    // NaNs: each single payload bit, each payload with one bit cleared,
    // quiet/signalling extremes and payloads that survive only partly.
    std::vector<uint32_t> payloads = {1u, 0x7fffffu, 0x400000u, 0x400001u, 0x3fffffu,
                                      0x200000u, 0x2000u, 0x1fffu, 0x10000u, 0xffffu,
                                      0x12345u, 0x654321u};
    for (uint32_t k = 0; k < 23; ++k) {
      payloads.push_back(1u << k);
      payloads.push_back(0x7fffffu & ~(1u << k));
    }
    for (uint32_t p : payloads) {
      v.push_back(0x7f800000u | p);
      v.push_back(0xff800000u | p);
    }
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  }();
  return inputs;
}

std::vector<uint32_t> uniformRandom(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> v(n);
  for (auto &x : v)
    x = uint32_t(rng());
  return v;
}

/// Random float32s whose exponent lies between (min subnormal / 8) and
/// (max finite * 8) of format f: where its rounding, underflow and overflow
/// happen. Random sign and mantissa.
std::vector<uint32_t> focusedRandom(Format f, uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  const int lo = int(std::ilogb(formatMinSubnormal(f))) - 3 + 127;
  const int hi = std::min(int(std::ilogb(formatMaxFinite(f))) + 3 + 127, 255);
  std::uniform_int_distribution<int> expDist(std::max(lo, 0), hi);
  std::vector<uint32_t> v(n);
  for (auto &x : v) {
    const uint32_t r = uint32_t(rng());
    x = (r & 0x807fffffu) | (uint32_t(expDist(rng)) << 23);
  }
  return v;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

/// Counts mismatches, keeping the first few for the failure message.
struct Mismatches {
  explicit Mismatches(const char *what) : what(what) {}
  const char *what;
  size_t count = 0;
  std::string first;
  void add(uint32_t x, uint32_t got, uint32_t want) {
    if (++count <= 8)
      first += "\n  " + std::string(what) + ": input " + hex(x) + " (" +
               std::to_string(floatOf(x)) + ") got " + hex(got) + " want " + hex(want);
  }
};

#define EXPECT_NO_MISMATCH(m) EXPECT_EQ((m).count, 0u) << (m).first

std::string formatTestName(const testing::TestParamInfo<Format> &info) {
  std::string s = formatName(info.param);
  s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return !std::isalnum(c); }), s.end());
  return s;
}

class NarrowFormat : public testing::TestWithParam<Format> {};

// ---- Decoding -------------------------------------------------------------------

TEST_P(NarrowFormat, DecodeExhaustive) {
  const Format f = GetParam();
  const uint32_t count = 1u << widthOf(f);
  Mismatches ap{"vs APFloat"}, cuda{"vs CUDA"}, scalar{"typed scalar"}, array{"decodeArray"};
  std::vector<uint8_t> raw(count * formatBytes(f));
  std::vector<float> arr(count);
  for (uint32_t b = 0; b < count; ++b)
    std::memcpy(raw.data() + b * formatBytes(f), &b, formatBytes(f)); // little-endian
  decodeArray(f, raw.data(), arr.data(), count);
  for (uint32_t b = 0; b < count; ++b) {
    const uint32_t got = bitsOf(decode(f, b));
    const uint32_t want = apDecode(f, b);
    if (got != want) // NaNs included: same sign, payload and quiet bit.
      ap.add(b, got, want);
    const uint32_t c = cudaDecode(f, b);
    // CUDA widens NaN to its canonical NaN: require only NaN there.
    if (isNaNBits(Format::F32, want) ? !isNaNBits(Format::F32, c) : c != got)
      cuda.add(b, got, c);
    uint32_t typed = 0;
    switch (f) {
    case Format::F16:
      typed = bitsOf(f16ToFloat(uint16_t(b)));
      break;
    case Format::BF16:
      typed = bitsOf(bf16ToFloat(uint16_t(b)));
      break;
    case Format::F8E4M3FN:
      typed = bitsOf(e4m3fnToFloat(uint8_t(b)));
      break;
    case Format::F8E5M2:
      typed = bitsOf(e5m2ToFloat(uint8_t(b)));
      break;
    case Format::F32:
      break;
    }
    if (typed != got)
      scalar.add(b, typed, got);
    if (bitsOf(arr[b]) != got)
      array.add(b, bitsOf(arr[b]), got);
  }
  EXPECT_NO_MISMATCH(ap);
  EXPECT_NO_MISMATCH(cuda);
  EXPECT_NO_MISMATCH(scalar);
  EXPECT_NO_MISMATCH(array);
  std::printf("[ numerics ] %s decode: %u patterns checked\n", formatName(f), count);
}

TEST_P(NarrowFormat, RoundTripEveryValue) {
  // Every non-NaN value encodes back to itself, with and without saturation
  // and (for normals and zeros) with flushToZero.
  const Format f = GetParam();
  Mismatches m{"encode(decode(b))"};
  for (uint32_t b = 0; b < (1u << widthOf(f)); ++b) {
    if (isNaNBits(f, b))
      continue;
    const float x = decode(f, b);
    if (encode(f, x) != b)
      m.add(b, encode(f, x), b);
    const bool inf = std::isinf(x);
    if (!inf && encode(f, x, {true, false}) != b)
      m.add(b, encode(f, x, {true, false}), b);
    const uint32_t flushed = isSubnormalBits(f, b) ? (b & signMask(f)) : b;
    if (!inf && encode(f, x, {true, true}) != flushed)
      m.add(b, encode(f, x, {true, true}), flushed);
    if (encode(f, x, {false, true}) != flushed)
      m.add(b, encode(f, x, {false, true}), flushed);
  }
  EXPECT_NO_MISMATCH(m);
}

// ---- Encoding -------------------------------------------------------------------

struct EncodeStats {
  size_t checked = 0;
  size_t cudaNaNBitDiffs = 0; // NaN inputs where CUDA's canonical NaN differs
};

/// Runs every encoding check on `inputs` for format f.
void checkEncode(Format f, const std::vector<uint32_t> &inputs, EncodeStats &stats) {
  Mismatches ap{"nosat vs APFloat"}, cudaNoSat{"nosat vs CUDA"}, cudaSat{"sat vs CUDA"},
      ftz{"ftz vs APFloat+rule"}, ftzSat{"sat+ftz vs CUDA+rule"}, typed{"typed scalar"},
      rounded{"roundTo"};
  for (const uint32_t xb : inputs) {
    const float x = floatOf(xb);
    const uint32_t ours = encode(f, x);
    const uint32_t want = apEncode(f, xb);
    if (ours != want)
      ap.add(xb, ours, want);

    const uint32_t c = cudaEncode(f, x, false);
    if (isNaNBits(f, want)) {
      if (!isNaNBits(f, c))
        cudaNoSat.add(xb, ours, c);
      else if (c != ours)
        ++stats.cudaNaNBitDiffs;
    } else if (c != ours) {
      cudaNoSat.add(xb, ours, c);
    }

    const uint32_t oursSat = encode(f, x, {true, false});
    const uint32_t wantSat = cudaEncode(f, x, true);
    if (oursSat != wantSat)
      cudaSat.add(xb, oursSat, wantSat);

    const uint32_t oursFtz = encode(f, x, {false, true});
    if (oursFtz != ftzRef(f, xb, want))
      ftz.add(xb, oursFtz, ftzRef(f, xb, want));
    const uint32_t oursFtzSat = encode(f, x, {true, true});
    if (oursFtzSat != ftzRef(f, xb, wantSat))
      ftzSat.add(xb, oursFtzSat, ftzRef(f, xb, wantSat));

    uint32_t t = 0;
    switch (f) {
    case Format::F16:
      t = floatToF16(x);
      break;
    case Format::BF16:
      t = floatToBF16(x);
      break;
    case Format::F8E4M3FN:
      t = floatToE4M3FN(x);
      break;
    case Format::F8E5M2:
      t = floatToE5M2(x);
      break;
    case Format::F32:
      break;
    }
    if (t != ours)
      typed.add(xb, t, ours);
    const uint32_t r = bitsOf(roundTo(f, x));
    if (r != apDecode(f, want))
      rounded.add(xb, r, apDecode(f, want));
  }
  stats.checked += inputs.size();
  EXPECT_NO_MISMATCH(ap);
  EXPECT_NO_MISMATCH(cudaNoSat);
  EXPECT_NO_MISMATCH(cudaSat);
  EXPECT_NO_MISMATCH(ftz);
  EXPECT_NO_MISMATCH(ftzSat);
  EXPECT_NO_MISMATCH(typed);
  EXPECT_NO_MISMATCH(rounded);
}

TEST_P(NarrowFormat, EncodeBoundaries) {
  const Format f = GetParam();
  EncodeStats stats;
  checkEncode(f, boundaryInputs(), stats);
  std::printf("[ numerics ] %s encode: %zu boundary inputs checked (x4 option sets); "
              "NaN inputs where CUDA's canonical NaN has other bits: %zu\n",
              formatName(f), stats.checked, stats.cudaNaNBitDiffs);
}

TEST_P(NarrowFormat, EncodeRandom) {
  const Format f = GetParam();
  EncodeStats stats;
  const uint32_t seed = kSeed + uint32_t(f);
  checkEncode(f, uniformRandom(seed, kUniformRandom), stats);
  checkEncode(f, focusedRandom(f, seed ^ 0x5eedu, kFocusedRandom), stats);
  std::printf("[ numerics ] %s encode: %zu random inputs checked (x4 option sets); "
              "NaN inputs where CUDA's canonical NaN has other bits: %zu\n",
              formatName(f), stats.checked, stats.cudaNaNBitDiffs);
}

INSTANTIATE_TEST_SUITE_P(All, NarrowFormat, testing::ValuesIn(kNarrow), formatTestName);

// ---- Anchors: the product rules in plain numbers ------------------------------
// These would catch a bug that all references somehow shared.

TEST(Anchors, NonSaturating) {
  EXPECT_EQ(roundTo(Format::F16, 65504.0f), 65504.0f);
  EXPECT_EQ(roundTo(Format::BF16, 65504.0f), 65536.0f);
  EXPECT_TRUE(std::isnan(roundTo(Format::F8E4M3FN, 65504.0f)));
  EXPECT_EQ(roundTo(Format::F8E5M2, 65504.0f), INFINITY);
  EXPECT_TRUE(std::isnan(roundTo(Format::F8E4M3FN, 500.0f)));
  EXPECT_EQ(roundTo(Format::F8E5M2, 500.0f), 512.0f);
  EXPECT_EQ(roundTo(Format::F16, 1e-8f), 0.0f);
  EXPECT_EQ(floatToBF16(1e-8f), 0x322cu); // 1.00117e-08
  EXPECT_EQ(floatToE4M3FN(464.0f), 0x7eu);  // tie to even: 448
  EXPECT_EQ(floatToE4M3FN(-465.0f), 0xffu); // -NaN
  EXPECT_EQ(floatToE4M3FN(INFINITY), 0x7fu);
  EXPECT_EQ(floatToE4M3FN(-INFINITY), 0xffu);
  EXPECT_EQ(floatToF16(65519.996f), 0x7bffu);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00u); // tie, 0x7bff odd: up to inf
  EXPECT_EQ(floatToE5M2(61440.0f), 0x7cu);
  EXPECT_EQ(floatToE5M2(-NAN), 0xfeu);
  EXPECT_EQ(floatToF16(floatOf(0xff800001u)), 0xfe00u); // sNaN quietened, sign kept
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000u);             // tie to even: 0
  EXPECT_EQ(floatToF16(0x1.000002p-25f), 0x0001u);
  EXPECT_EQ(floatToF16(0x1.8p-24f), 0x0002u); // tie between 1 and 2 ulps: even
  EXPECT_EQ(floatToE4M3FN(0x1p-10f), 0x00u);
  EXPECT_EQ(floatToE4M3FN(0x1.8p-9f), 0x02u);
  EXPECT_EQ(e4m3fnToFloat(0x01), 0x1p-9f);
  EXPECT_EQ(e5m2ToFloat(0x01), 0x1p-16f);
  EXPECT_EQ(f16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(bf16ToFloat(0x0001), 0x1p-133f);
}

TEST(Anchors, Saturating) {
  const RoundOptions sat{true, false};
  EXPECT_EQ(roundTo(Format::F8E4M3FN, 500.0f, sat), 448.0f);
  EXPECT_EQ(roundTo(Format::F8E4M3FN, -1e30f, sat), -448.0f);
  EXPECT_EQ(roundTo(Format::F8E5M2, 1e6f, sat), 57344.0f);
  EXPECT_EQ(roundTo(Format::F16, 1e6f, sat), 65504.0f);
  EXPECT_EQ(roundTo(Format::BF16, FLT_MAX, sat), 0x1.fep127f);
  // CUDA satfinite: +-inf clamps too (it is just a value beyond max).
  EXPECT_EQ(floatToE4M3FN(INFINITY, sat), 0x7eu);
  EXPECT_EQ(floatToE4M3FN(-INFINITY, sat), 0xfeu);
  EXPECT_EQ(floatToE5M2(-INFINITY, sat), 0xfbu);
  EXPECT_EQ(floatToF16(-INFINITY, sat), 0xfbffu);
  // CUDA's NaN is positive and canonical whatever the input.
  EXPECT_EQ(floatToE4M3FN(-NAN, sat), 0x7fu);
  EXPECT_EQ(floatToE5M2(-NAN, sat), 0x7fu);
  EXPECT_EQ(floatToF16(-NAN, sat), 0x7fffu);
  EXPECT_EQ(floatToBF16(-NAN, sat), 0x7fffu);
  // In range, saturation changes nothing.
  EXPECT_EQ(floatToE4M3FN(-3.3f, sat), floatToE4M3FN(-3.3f));
  EXPECT_EQ(roundTo(Format::F32, INFINITY, sat), INFINITY); // F32: no narrowing
}

TEST(Anchors, FlushToZero) {
  const RoundOptions ftz{false, true};
  EXPECT_EQ(floatToF16(0x1p-20f, ftz), 0x0000u);
  EXPECT_EQ(floatToF16(-0x1p-20f, ftz), 0x8000u);
  EXPECT_EQ(floatToF16(0x1p-14f, ftz), 0x0400u);
  // Rounds up to min normal: kept.
  EXPECT_EQ(floatToF16(0x1.ffffp-15f, ftz), 0x0400u);
  // float32 subnormal input counts as zero even where it would round to a
  // normal bf16 (0x007fffff rounds to 0x0080 without flushing).
  EXPECT_EQ(floatToBF16(floatOf(0x007fffffu)), 0x0080u);
  EXPECT_EQ(floatToBF16(floatOf(0x807fffffu), ftz), 0x8000u);
  EXPECT_EQ(bitsOf(roundTo(Format::F32, floatOf(0x80000001u), ftz)), 0x80000000u);
  EXPECT_EQ(bitsOf(roundTo(Format::F32, floatOf(0x80000001u))), 0x80000001u);
  EXPECT_EQ(floatToE4M3FN(0x1p-7f, ftz), 0x00u);
  EXPECT_EQ(floatToE5M2(-0x1p-15f, ftz), 0x80u);
  EXPECT_TRUE(std::isnan(roundTo(Format::F8E4M3FN, NAN, ftz)));
  EXPECT_EQ(roundTo(Format::F16, INFINITY, ftz), INFINITY);
}

TEST(Formats, Facts) {
  for (Format f : kAll) {
    Format parsed = Format::F32;
    EXPECT_TRUE(parseFormat(formatName(f), parsed));
    EXPECT_EQ(parsed, f);
    // max finite, min normal and min subnormal are what the encoding says.
    EXPECT_EQ(double(roundTo(f, float(formatMaxFinite(f)))), formatMaxFinite(f));
    EXPECT_EQ(double(roundTo(f, float(formatMinNormal(f)))), formatMinNormal(f));
    EXPECT_EQ(double(roundTo(f, float(formatMinSubnormal(f)))), formatMinSubnormal(f));
    EXPECT_EQ(roundTo(f, float(formatMinSubnormal(f) / 2)), 0.0f); // tie to even
    if (f != Format::F32) {
      // Well past the overflow threshold (max + half an ulp, at most max *
      // 1.125 for these formats): inf or NaN, never a finite value.
      const float beyond = float(formatMaxFinite(f)) * 1.25f;
      EXPECT_FALSE(std::fabs(roundTo(f, beyond)) <= formatMaxFinite(f)) << formatName(f);
      EXPECT_EQ(double(roundTo(f, beyond, {true, false})), formatMaxFinite(f)) << formatName(f);
      llvm::APFloat largest = llvm::APFloat::getLargest(semanticsOf(f));
      EXPECT_EQ(largest.convertToDouble(), formatMaxFinite(f));
      EXPECT_EQ(llvm::APFloat::getSmallestNormalized(semanticsOf(f)).convertToDouble(),
                formatMinNormal(f));
      EXPECT_EQ(llvm::APFloat::getSmallest(semanticsOf(f)).convertToDouble(),
                formatMinSubnormal(f));
    }
    EXPECT_EQ(formatHasInf(f), f != Format::F8E4M3FN);
  }
  EXPECT_STREQ(formatName(Format::F32), "f32");
  EXPECT_STREQ(formatName(Format::F16), "f16");
  EXPECT_STREQ(formatName(Format::BF16), "bf16");
  EXPECT_STREQ(formatName(Format::F8E4M3FN), "f8E4M3FN");
  EXPECT_STREQ(formatName(Format::F8E5M2), "f8E5M2");
  EXPECT_EQ(formatBytes(Format::F32), 4u);
  EXPECT_EQ(formatBytes(Format::F16), 2u);
  EXPECT_EQ(formatBytes(Format::BF16), 2u);
  EXPECT_EQ(formatBytes(Format::F8E4M3FN), 1u);
  EXPECT_EQ(formatBytes(Format::F8E5M2), 1u);
  Format unchanged = Format::F16;
  EXPECT_FALSE(parseFormat("f8E4M3", unchanged));
  EXPECT_FALSE(parseFormat("F16", unchanged));
  EXPECT_EQ(unchanged, Format::F16);
}

// ---- Arrays: same bits as the scalar forms ------------------------------------

/// Boundaries plus 7*10^5 uniform and focused randoms, shuffled so that
/// special values land in every vector lane position.
std::vector<float> arrayInputs() {
  std::vector<uint32_t> bits = boundaryInputs();
  for (uint32_t b : uniformRandom(kSeed ^ 0xa77a4u, 300'000))
    bits.push_back(b);
  for (Format f : kNarrow)
    for (uint32_t b : focusedRandom(f, kSeed ^ 0xa77a5u ^ uint32_t(f), 100'000))
      bits.push_back(b);
  std::shuffle(bits.begin(), bits.end(), std::mt19937(kSeed));
  std::vector<float> v(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    v[i] = floatOf(bits[i]);
  return v;
}

const RoundOptions kOptionSets[] = {{false, false}, {true, false}, {false, true}, {true, true}};

TEST(Arrays, MatchScalarForms) {
  const std::vector<float> in = arrayInputs();
  const size_t n = in.size();
  size_t checked = 0;
  for (Format f : kAll) {
    const size_t w = formatBytes(f);
    for (const RoundOptions &o : kOptionSets) {
      SCOPED_TRACE(std::string(formatName(f)) + " saturate=" + std::to_string(o.saturate) +
                   " flushToZero=" + std::to_string(o.flushToZero));
      std::vector<uint8_t> enc(n * w + 64);
      std::vector<float> rnd(n + 16), dec(n + 16);
      // Odd offsets and lengths: unaligned starts and vector loop tails.
      for (size_t start : {size_t(0), size_t(1), size_t(3)}) {
        const size_t len = n - start - (start == 1 ? 7 : 0);
        encodeArray(f, in.data() + start, enc.data() + start * w, len, o);
        roundArray(f, in.data() + start, rnd.data() + start, len, o);
        decodeArray(f, enc.data() + start * w, dec.data() + start, len);
        Mismatches me{"encodeArray"}, mr{"roundArray"}, md{"decodeArray"};
        for (size_t i = start; i < start + len; ++i) {
          const uint32_t want = encode(f, in[i], o);
          uint32_t got = 0;
          std::memcpy(&got, enc.data() + i * w, w);
          if (got != want)
            me.add(bitsOf(in[i]), got, want);
          const uint32_t wantR = bitsOf(decode(f, want));
          if (bitsOf(rnd[i]) != wantR)
            mr.add(bitsOf(in[i]), bitsOf(rnd[i]), wantR);
          if (bitsOf(dec[i]) != bitsOf(decode(f, want)))
            md.add(want, bitsOf(dec[i]), bitsOf(decode(f, want)));
        }
        EXPECT_NO_MISMATCH(me);
        EXPECT_NO_MISMATCH(mr);
        EXPECT_NO_MISMATCH(md);
        checked += len;
      }
      // In place.
      std::vector<float> inplace = in;
      roundArray(f, inplace.data(), inplace.data(), n, o);
      Mismatches mi{"roundArray in place"};
      for (size_t i = 0; i < n; ++i)
        if (bitsOf(inplace[i]) != bitsOf(roundTo(f, in[i], o)))
          mi.add(bitsOf(in[i]), bitsOf(inplace[i]), bitsOf(roundTo(f, in[i], o)));
      EXPECT_NO_MISMATCH(mi);
      checked += n;
    }
  }
  // Zero length touches nothing.
  float sentinel = 1.5f;
  roundArray(Format::F8E4M3FN, &sentinel, &sentinel, 0);
  encodeArray(Format::F16, &sentinel, &sentinel, 0);
  decodeArray(Format::BF16, &sentinel, &sentinel, 0);
  EXPECT_EQ(sentinel, 1.5f);
  std::printf("[ numerics ] arrays: %zu element conversions checked against scalar forms\n",
              checked);
}

TEST(Arrays, QuantizeFp8StoreMatchesScaleThenEncode) {
  // The CPU backend's one-pass quantize-and-store against the scalar steps
  // it fuses: the value decoded from its source format, times the scale
  // (NaN where either is not finite), encoded saturating; stored as the
  // code, its decoded value, or that value's BF16 bits (floatToBF16). Every
  // BF16 and F16 bit pattern and the float32 inputs of MatchScalarForms,
  // scales from tiny to non-finite, at unaligned starts and odd lengths.
  std::vector<uint16_t> every16(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    every16[b] = uint16_t(b);
  const std::vector<float> f32 = arrayInputs();
  RoundOptions saturating;
  saturating.saturate = true;
  const float kScales[] = {1.0f,  1.5f, 448.0f / 3.0f, 0x1p-20f, 1e-30f,
                           3e38f, 0.0f, -2.0f,         INFINITY, NAN};
  size_t checked = 0;
  for (Format f : {Format::F8E4M3FN, Format::F8E5M2})
    for (Format src : {Format::BF16, Format::F16, Format::F32})
      for (Fp8Storage to : {Fp8Storage::Codes, Fp8Storage::WideF32, Fp8Storage::WideBF16})
        for (float scale : kScales) {
          SCOPED_TRACE(std::string(formatName(f)) + " from " + formatName(src) + " to " +
                       std::to_string(int(to)) + ", scale " + std::to_string(scale));
          const bool wide16 = src != Format::F32;
          const size_t n = wide16 ? every16.size() : f32.size();
          const void *in = wide16 ? static_cast<const void *>(every16.data()) : f32.data();
          const size_t inBytes = wide16 ? 2 : 4;
          const size_t outBytes = to == Fp8Storage::Codes ? 1 : to == Fp8Storage::WideF32 ? 4 : 2;
          const bool offsets = scale == 1.5f;
          for (size_t start : offsets ? std::vector<size_t>{0, 1, 3} : std::vector<size_t>{0}) {
            std::vector<uint8_t> out(n * outBytes + 64, 0xa5);
            const size_t len = n - start - (start == 1 ? 7 : 0);
            quantizeFp8Store(f, src, static_cast<const uint8_t *>(in) + start * inBytes, scale, to,
                             out.data() + start * outBytes, len);
            Mismatches m{"quantizeFp8Store"};
            for (size_t i = start; i < start + len; ++i) {
              const float x = wide16 ? decode(src, every16[i]) : f32[i];
              const float scaled = std::isfinite(x) && std::isfinite(scale) ? x * scale : NAN;
              const uint32_t code = encode(f, scaled, saturating);
              const uint32_t want = to == Fp8Storage::Codes     ? code
                                    : to == Fp8Storage::WideF32 ? bitsOf(decode(f, code))
                                                                : floatToBF16(decode(f, code));
              uint32_t got = 0;
              std::memcpy(&got, out.data() + i * outBytes, outBytes);
              if (got != want)
                m.add(wide16 ? every16[i] : bitsOf(f32[i]), got, want);
            }
            EXPECT_NO_MISMATCH(m);
            // Nothing written past the end.
            for (size_t i = (start + len) * outBytes; i < out.size(); ++i)
              ASSERT_EQ(out[i], 0xa5) << "byte " << i << " after " << start + len << " values";
            checked += len;
          }
        }
  std::printf("[ numerics ] quantizeFp8Store: %zu values checked against the scalar steps\n",
              checked);
}

#if defined(MIXPREC_HAVE_MXCSR)
TEST(Arrays, IndependentOfFloatingPointEnvironment) {
  // A process built with -ffast-math runs with FTZ|DAZ set, and user code may
  // change the rounding mode: neither may change a single result bit.
  const std::vector<uint32_t> &bits = boundaryInputs();
  std::vector<float> in(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    in[i] = floatOf(bits[i]);
  const size_t n = in.size();
  auto run = [&](Format f, const RoundOptions &o, std::vector<uint32_t> &enc,
                 std::vector<float> &dec, std::vector<float> &rnd,
                 std::vector<float> &scalar) {
    enc.assign(n, 0);
    dec.assign(n, 0);
    rnd.assign(n, 0);
    scalar.assign(n, 0);
    std::vector<uint8_t> buf(n * formatBytes(f));
    encodeArray(f, in.data(), buf.data(), n, o);
    decodeArray(f, buf.data(), dec.data(), n);
    roundArray(f, in.data(), rnd.data(), n, o);
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(&enc[i], buf.data() + i * formatBytes(f), formatBytes(f));
      scalar[i] = roundTo(f, in[i], o);
    }
  };
  const unsigned savedCsr = _mm_getcsr();
  for (Format f : kAll) {
    for (const RoundOptions &o : kOptionSets) {
      std::vector<uint32_t> e0, e1;
      std::vector<float> d0, d1, r0, r1, s0, s1;
      run(f, o, e0, d0, r0, s0);
      for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO}) {
        _mm_setcsr(savedCsr | 0x8040u); // FTZ | DAZ
        std::fesetround(mode);
        run(f, o, e1, d1, r1, s1);
        _mm_setcsr(savedCsr);
        std::fesetround(FE_TONEAREST);
        EXPECT_EQ(e0, e1) << formatName(f);
        EXPECT_EQ(0, std::memcmp(d0.data(), d1.data(), n * 4)) << formatName(f);
        EXPECT_EQ(0, std::memcmp(r0.data(), r1.data(), n * 4)) << formatName(f);
        EXPECT_EQ(0, std::memcmp(s0.data(), s1.data(), n * 4)) << formatName(f);
      }
    }
  }
  _mm_setcsr(savedCsr);
}

TEST(Arrays, QuantizeFp8StoreIndependentOfFloatingPointEnvironment) {
  // quantizeFp8Store rounds below FP8's min normal with vroundps on AVX2
  // CPUs: the rounding mode must come from the instruction, not MXCSR. With
  // scales 1 and 2 the product is exact or rounds to the same FP8 value in
  // every mode (a float32 subnormal, flushed or not, quantizes to +-0; an
  // overflow to inf or FLT_MAX saturates), so every result must match.
  std::vector<uint16_t> every16(65536);
  for (uint32_t b = 0; b < 65536; ++b)
    every16[b] = uint16_t(b);
  const std::vector<float> f32 = arrayInputs();
  auto run = [&](Format f, Format src, Fp8Storage to, float scale) {
    const bool bf16 = src == Format::BF16;
    const size_t n = bf16 ? every16.size() : f32.size();
    std::vector<uint32_t> out(n, 0);
    quantizeFp8Store(f, src, bf16 ? static_cast<const void *>(every16.data()) : f32.data(), scale,
                     to, out.data(), n);
    return out;
  };
  const unsigned savedCsr = _mm_getcsr();
  for (Format f : {Format::F8E4M3FN, Format::F8E5M2})
    for (Format src : {Format::BF16, Format::F32})
      for (Fp8Storage to : {Fp8Storage::Codes, Fp8Storage::WideF32, Fp8Storage::WideBF16})
        for (float scale : {1.0f, 2.0f}) {
          const std::vector<uint32_t> want = run(f, src, to, scale);
          for (int mode : {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO})
            for (unsigned flags : {0u, 0x8040u}) { // FTZ | DAZ
              _mm_setcsr(savedCsr | flags);
              std::fesetround(mode);
              const std::vector<uint32_t> got = run(f, src, to, scale);
              _mm_setcsr(savedCsr);
              std::fesetround(FE_TONEAREST);
              EXPECT_TRUE(got == want)
                  << formatName(f) << " from " << formatName(src) << " to " << int(to) << ", scale "
                  << scale << ", rounding mode " << mode << ", MXCSR flags " << flags;
            }
        }
  _mm_setcsr(savedCsr);
}
#endif

// ---- Optional: all 2^32 float32 inputs ------------------------------------------
// This checks every float32 against CUDA's host code
// (non-saturating: non-NaN bit-exact, NaN as NaN with the APFloat bits rule
// checked by the tests above; saturating: bit-exact). Several minutes on two
// cores, so ctest runs it only when configured with
// -DMIXPREC_EXHAUSTIVE_FP32=ON (test `numerics.all_float32`).
TEST(ExhaustiveFp32, AllFloat32VsCuda) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<uint64_t> bad{0};
  std::atomic<uint32_t> firstBad{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      constexpr size_t kBlock = 1u << 16;
      std::vector<float> in(kBlock);
      std::vector<uint8_t> enc(kBlock * 2), encSat(kBlock * 2);
      for (uint64_t base = uint64_t(t) * kBlock; base < (1ull << 32);
           base += uint64_t(threads) * kBlock) {
        for (size_t i = 0; i < kBlock; ++i)
          in[i] = floatOf(uint32_t(base + i));
        for (Format f : kNarrow) {
          const size_t w = formatBytes(f);
          encodeArray(f, in.data(), enc.data(), kBlock);
          encodeArray(f, in.data(), encSat.data(), kBlock, {true, false});
          for (size_t i = 0; i < kBlock; ++i) {
            uint32_t ours = 0, oursSat = 0;
            std::memcpy(&ours, enc.data() + i * w, w);
            std::memcpy(&oursSat, encSat.data() + i * w, w);
            const uint32_t c = cudaEncode(f, in[i], false);
            const bool ok = isNaNBits(f, ours) ? isNaNBits(f, c) : c == ours;
            if (!ok || oursSat != cudaEncode(f, in[i], true)) {
              if (bad++ == 0)
                firstBad = uint32_t(base + i);
            }
          }
        }
      }
    });
  }
  for (auto &th : pool)
    th.join();
  EXPECT_EQ(bad.load(), 0u) << "first bad input " << hex(firstBad.load());
  std::printf("[ numerics ] exhaustive: 2^32 inputs x 4 formats x 2 modes checked\n");
}

} // namespace
