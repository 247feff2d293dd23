//===- CpuElementAccess.cpp - elements in their storage dtypes ------------===//
//
// Every tensor of the arena holds its dtype's bytes; kernels, GEMMs and
// routines read them as FP32 and write them back rounded, through these two
// functions only.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/cpu/CpuBackend.h"

#include <cmath>
#include <limits>

namespace mixprec::runtime {

using schema::DType;
using schema::OpCode;

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
  case DType::BF16: {
    const uint16_t *p = reinterpret_cast<const uint16_t *>(base) + offset;
    if (stride == 1) {
      num::decodeArray(formatOf(dtype), p, out, n);
    } else {
      const num::Format f = formatOf(dtype);
      for (int64_t i = 0; i < n; ++i)
        out[i] = num::decode(f, p[i * stride]);
    }
    return;
  }
  case DType::F8E4M3FN:
  case DType::F8E5M2: {
    const uint8_t *p = base + offset;
    if (stride == 1) {
      num::decodeArray(formatOf(dtype), p, out, n);
    } else {
      const num::Format f = formatOf(dtype);
      for (int64_t i = 0; i < n; ++i)
        out[i] = num::decode(f, p[i * stride]);
    }
    return;
  }
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
  case DType::BF16: {
    uint16_t *p = reinterpret_cast<uint16_t *>(base) + offset;
    const num::Format f = formatOf(dtype);
    if (stride == 1) {
      num::encodeArray(f, in, p, n, storeOptions(dtype));
    } else {
      for (int64_t i = 0; i < n; ++i)
        p[i * stride] = static_cast<uint16_t>(num::encode(f, in[i], storeOptions(dtype)));
    }
    return true;
  }
  case DType::F8E4M3FN:
  case DType::F8E5M2: {
    uint8_t *p = base + offset;
    const num::Format f = formatOf(dtype);
    if (stride == 1) {
      num::encodeArray(f, in, p, n, storeOptions(dtype));
    } else {
      for (int64_t i = 0; i < n; ++i)
        p[i * stride] = static_cast<uint8_t>(num::encode(f, in[i], storeOptions(dtype)));
    }
    return true;
  }
  case DType::I64: {
    int64_t *p = reinterpret_cast<int64_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i) {
      if (!fitsInteger<int64_t>(in[i]))
        return bad = in[i], false;
      p[i * stride] = static_cast<int64_t>(std::trunc(in[i]));
    }
    return true;
  }
  case DType::I32: {
    int32_t *p = reinterpret_cast<int32_t *>(base) + offset;
    for (int64_t i = 0; i < n; ++i) {
      if (!fitsInteger<int32_t>(in[i]))
        return bad = in[i], false;
      p[i * stride] = static_cast<int32_t>(std::trunc(in[i]));
    }
    return true;
  }
  case DType::Bool: {
    uint8_t *p = base + offset;
    for (int64_t i = 0; i < n; ++i)
      p[i * stride] = in[i] != 0.0f ? 1 : 0;
    return true;
  }
  }
  return true;
}

} // namespace mixprec::runtime
