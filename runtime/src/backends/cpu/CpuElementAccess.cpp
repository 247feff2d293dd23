//===- CpuElementAccess.cpp - elements in their storage dtypes ------------===//
//
// Every tensor of the arena holds its dtype's bytes; kernels, GEMMs and
// routines read them as FP32 and write them back rounded, through these two
// functions only.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"

#include <array>
#include <cassert>
#include <cmath>
#include <limits>

namespace mixprec::runtime {

using schema::DType;

namespace {

/// Decodes `n` narrow floats (16- or 8-bit patterns) at `p[i*stride]`.
template <typename Bits>
void decodeRun(num::Format format, const Bits *p, int64_t stride, int64_t n, float *out) {
  if (stride == 1) {
    num::decodeArray(format, p, out, n);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = num::decode(format, p[i * stride]);
}

/// Encodes `n` floats, rounded to the narrow `dtype`, to `p[i*stride]`.
template <typename Bits>
void encodeRun(DType dtype, const float *in, Bits *p, int64_t stride, int64_t n) {
  const num::Format format = formatOf(dtype);
  if (stride == 1) {
    num::encodeArray(format, in, p, n, storeOptions(dtype));
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    p[i * stride] = static_cast<Bits>(num::encode(format, in[i], storeOptions(dtype)));
}

} // namespace

/// Reads `n` elements at `base[offset + i*stride]` as floats.
void loadRun(DType dtype, const uint8_t *base, int64_t offset, int64_t stride, int64_t n,
             float *out) {
  switch (dtype) {
  case DType::F32: {
    const float *p = reinterpret_cast<const float *>(base) + offset;
    if (stride == 1)
      std::memcpy(out, p, n * sizeof(float));
    else
      for (int64_t i = 0; i < n; ++i)
        out[i] = p[i * stride];
    return;
  }
  case DType::F16:
  case DType::BF16:
    return decodeRun(formatOf(dtype), reinterpret_cast<const uint16_t *>(base) + offset, stride,
                     n, out);
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    return decodeRun(formatOf(dtype), base + offset, stride, n, out);
  case DType::I64: {
    const int64_t *p = reinterpret_cast<const int64_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(p[i * stride]);
    return;
  }
  case DType::I32: {
    const int32_t *p = reinterpret_cast<const int32_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = static_cast<float>(p[i * stride]);
    return;
  }
  case DType::Bool: {
    const uint8_t *p = base + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = p[i * stride] != 0 ? 1.0f : 0.0f;
    return;
  }
  }
}

/// Whether a float converts to the integer type: finite, truncated value in
/// range (the interpreter refuses the rest, and so does the backend).
template <typename Int> bool fitsInteger(float v) {
  const double t = std::trunc(static_cast<double>(v));
  return std::isfinite(t) && t >= static_cast<double>(std::numeric_limits<Int>::min()) &&
         t < -static_cast<double>(std::numeric_limits<Int>::min());
}

/// Writes `n` floats truncated to `p[i*stride]`; false, writing nothing
/// further, at a value `Int` cannot hold (`bad`).
template <typename Int>
bool storeIntegers(Int *p, int64_t stride, int64_t n, const float *in, float &bad) {
  for (int64_t i = 0; i < n; ++i) {
    if (!fitsInteger<Int>(in[i]))
      return bad = in[i], false;
    p[i * stride] = static_cast<Int>(std::trunc(in[i]));
  }
  return true;
}

/// Writes `n` floats to `base[offset + i*stride]` in `dtype`, rounding.
/// Returns false, writing nothing further, at a value an integer dtype
/// cannot hold; `bad` is that value.
bool storeRun(DType dtype, uint8_t *base, int64_t offset, int64_t stride, int64_t n,
              const float *in, float &bad) {
  // Stride 0 writes one element over and over: only the last write stays.
  if (stride == 0 && n > 1) {
    in += n - 1;
    n = 1;
  }
  switch (dtype) {
  case DType::F32: {
    float *p = reinterpret_cast<float *>(base) + offset;
    if (stride == 1)
      std::memcpy(p, in, n * sizeof(float));
    else
      for (int64_t i = 0; i < n; ++i)
        p[i * stride] = in[i];
    return true;
  }
  case DType::F16:
  case DType::BF16:
    encodeRun(dtype, in, reinterpret_cast<uint16_t *>(base) + offset, stride, n);
    return true;
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    encodeRun(dtype, in, base + offset, stride, n);
    return true;
  case DType::I64:
    return storeIntegers(reinterpret_cast<int64_t *>(base) + offset, stride, n, in, bad);
  case DType::I32:
    return storeIntegers(reinterpret_cast<int32_t *>(base) + offset, stride, n, in, bad);
  case DType::Bool: {
    uint8_t *p = base + offset;
    for (int64_t i = 0; i < n; ++i)
      p[i * stride] = in[i] != 0.0f ? 1 : 0;
    return true;
  }
  }
  return true;
}

void widenFp8ToBf16(DType dtype, const uint8_t *in, uint16_t *out, int64_t n) {
  if (dtype == DType::F8E4M3FN) { // in vector lanes
    num::widenE4M3FNToBF16(in, out, static_cast<size_t>(n));
    return;
  }
  static const auto table = [] { // E5M2: its 256 codes, made once
    std::array<uint16_t, 256> t;
    for (int c = 0; c < 256; ++c)
      t[c] = num::floatToBF16(num::decode(num::Format::F8E5M2, uint32_t(c)));
    return t;
  }();
  for (int64_t i = 0; i < n; ++i)
    out[i] = table[in[i]];
}

void storeRunWide(DType dtype, DType wide, uint8_t *base, int64_t offset, int64_t stride, int64_t n,
                  const float *in) {
  if (stride == 0 && n > 1) { // only the last write stays
    in += n - 1;
    n = 1;
  }
  // FP32 wide: rounded as storeRun encodes, to the value its code decodes
  // to (numerics::roundArray, decode(encode(x)) in one pass: the same
  // bits). BF16 wide (FP8 only): encoded as storeRun encodes (the same
  // codes), in pieces that stay in L1, then widened exactly.
  constexpr int64_t kPiece = 512;
  alignas(64) float values[kPiece];
  uint8_t codes[kPiece];
  uint16_t bits[kPiece];
  uint16_t *halves = reinterpret_cast<uint16_t *>(base) + offset;
  float *floats = reinterpret_cast<float *>(base) + offset;
  for (int64_t begin = 0; begin < n; begin += kPiece) {
    const int64_t m = std::min(kPiece, n - begin);
    if (wide == DType::F32) {
      float *to = stride == 1 ? floats + begin : values;
      num::roundArray(formatOf(dtype), in + begin, to, static_cast<size_t>(m), storeOptions(dtype));
      for (int64_t i = 0; stride != 1 && i < m; ++i)
        floats[(begin + i) * stride] = values[i];
      continue;
    }
    assert(dtype == DType::F8E4M3FN || dtype == DType::F8E5M2);
    encodeRun(dtype, in + begin, codes, 1, m);
    uint16_t *to = stride == 1 ? halves + begin : bits;
    widenFp8ToBf16(dtype, codes, to, m);
    for (int64_t i = 0; stride != 1 && i < m; ++i)
      halves[(begin + i) * stride] = to[i];
  }
}

} // namespace mixprec::runtime
