//===- Rounding.cpp - Exact float32 <-> F16/BF16/FP8 conversion -----------===//
//
// Implementation notes
// --------------------
// Encoding is integer-only so the result cannot depend on the FP
// environment: a process linked with -ffast-math sets FTZ/DAZ in MXCSR at
// startup, which would silently break the usual "add a magic float" trick
// for target subnormals (and would make BF16 from float32 subnormals wrong).
//
// Every narrow encoder picks, per element and with selects rather than
// branches, the integer to round (rebiased float bits in the normal range,
// the significand in the subnormal range) and how many bits to drop, then
// rounds once; overflow and NaN are selects too. The loops have no
// data-dependent branches, so GCC/Clang vectorise them. The per-element
// shift needs variable vector shifts, which x86 only has from AVX2 on
// (vpsrlvd), so the array kernels are compiled three times with
// target_clones (x86-64-v4, i.e. AVX-512 with its byte and word ops, which
// narrow to FP8 bytes 2.6x as fast as AVX2 does; "avx2"; the baseline) and
// the loader picks one through an ifunc. The clones run the same C++ and
// give the same bits (integer steps and exact float steps; the tests run
// the machine's clone and the baseline library).
//
// quantizeFp8Store (the CPU backend's FP8 quantize) also has a form in AVX2
// intrinsics, picked at run time: below FP8's min normal it rounds with
// vroundps, whose rounding mode is its immediate (MXCSR's is not read), on
// values whose FTZ/DAZ flushing cannot change the result; tests compare it
// with the generic loops and run it under every rounding mode.
//
// FP8 decoding uses 256-entry tables computed at compile time; F16 decoding
// is arithmetic (a 256 KiB table would not stay in L1). roundArray fuses
// encode and decode per element with arithmetic decoders, which vectorise
// better than table gathers.
//
//===----------------------------------------------------------------------===//

#include "common/numerics/Rounding.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__GNUC__)
#define MIXPREC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MIXPREC_ALWAYS_INLINE inline
#endif

// Function multiversioning needs GNU ifunc (ELF + glibc) and x86-64.
#if defined(__x86_64__) && defined(__GNUC__) && defined(__ELF__) &&            \
    !defined(MIXPREC_NUMERICS_NO_MULTIVERSION)
#define MIXPREC_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
// quantizeFp8Store's AVX2 form (intrinsics, picked at run time).
#define MIXPREC_QUANTIZE_AVX2 1
#include <immintrin.h>
#else
#define MIXPREC_MULTIVERSION
#endif

namespace mixprec {
namespace numerics {
namespace {

MIXPREC_ALWAYS_INLINE uint32_t bitsOf(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
MIXPREC_ALWAYS_INLINE float floatOf(uint32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}

constexpr uint32_t kF32Inf = 0x7f800000u;
constexpr uint32_t kF32MinNormal = 0x00800000u;

// ---- Format descriptions ---------------------------------------------------
// E/M: exponent and mantissa widths; Bias: exponent bias; HasInf: IEEE-style
// top exponent (inf + NaNs) vs. E4M3FN's "only S.1111.111 is NaN".
template <unsigned E_, unsigned M_, unsigned Bias_, bool HasInf_, uint32_t SatNaN_,
          typename Storage_>
struct NarrowSpec {
  static constexpr unsigned E = E_, M = M_, Bias = Bias_;
  static constexpr bool HasInf = HasInf_;
  using Storage = Storage_;
  static constexpr unsigned Shift = 23 - M; // float32 mantissa bits dropped
  static constexpr uint32_t MantMask = (1u << M) - 1u;
  static constexpr uint32_t SignShift = E + M; // sign bit position
  static constexpr uint32_t InfEnc = ((1u << E) - 1u) << M;
  // Largest finite encoding: top exponent with all-ones mantissa is NaN in
  // E4M3FN, so its max has mantissa 110; IEEE formats lose the top exponent.
  static constexpr uint32_t MaxEnc = HasInf ? InfEnc - 1u : InfEnc | (MantMask - 1u);
  static constexpr uint32_t MaxExp = MaxEnc >> M, MaxMant = MaxEnc & MantMask;
  // Target min normal as float32 bits: inputs below use the subnormal path.
  static constexpr uint32_t MinNormalBits = (127u - Bias + 1u) << 23;
  // First float32 (magnitude bits) that rounds beyond MaxEnc: max + half an
  // ulp is a tie, which goes up only if max's mantissa is odd.
  static constexpr uint32_t MaxBits32 = ((MaxExp + 127u - Bias) << 23) | (MaxMant << Shift);
  static constexpr uint32_t OvfBits = MaxBits32 + (1u << (Shift - 1)) + ((MaxMant & 1u) ? 0u : 1u);
  // What overflow (and +-inf) gives without saturation (APFloat): inf, or
  // NaN where the format has no inf.
  static constexpr uint32_t OvfEnc = HasInf ? InfEnc : InfEnc | MantMask;
  static constexpr uint32_t QuietBit = 1u << (M - 1);
  static constexpr uint32_t SatNaN = SatNaN_; // CUDA's canonical NaN
};

using F16 = NarrowSpec<5, 10, 15, true, 0x7fffu, uint16_t>;
using E5M2 = NarrowSpec<5, 2, 15, true, 0x7fu, uint8_t>;
using E4M3FN = NarrowSpec<4, 3, 7, false, 0x7fu, uint8_t>;

// The constants every test keys on, spelled out once.
static_assert(F16::MaxEnc == 0x7bffu && F16::OvfBits == 0x477ff000u, "65504, 65520");
static_assert(E5M2::MaxEnc == 0x7bu && E5M2::OvfBits == 0x47700000u, "57344, 61440");
static_assert(E4M3FN::MaxEnc == 0x7eu && E4M3FN::OvfBits == 0x43e80001u, "448, >464");
static_assert(E4M3FN::OvfEnc == 0x7fu && E4M3FN::MinNormalBits == 0x3c800000u, "");

// ---- Encoders ----------------------------------------------------------------

/// float32 bits -> F16/FP8 bits, round to nearest even.
template <class F, bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE uint32_t encodeNarrow(uint32_t bits) {
  constexpr unsigned S = F::Shift;
  const uint32_t sign = bits >> 31;
  uint32_t a = bits & 0x7fffffffu;
  if (Ftz) // DAZ: float32 subnormal inputs count as zero.
    a = a < kF32MinNormal ? 0u : a;

  // Normal range: rebias the exponent in place and drop S bits of the
  // combined exponent|mantissa integer. A mantissa carry bumps the exponent,
  // which is exactly the next value (and max + carry is the inf encoding).
  // Subnormal range: shift the significand with its implicit bit right by S
  // plus the exponent deficit. The deficit is clamped to [1, 31 - S]; lanes
  // beyond are tiny (float32 subnormals included) and shift out to 0.
  const bool sub = a < F::MinNormalBits;
  int32_t d = int32_t(128u - F::Bias) - int32_t(a >> 23);
  d = d < 1 ? 1 : d;
  int32_t shSub = int32_t(S) + d;
  shSub = shSub < 31 ? shSub : 31;
  const uint32_t v = sub ? ((a & 0x007fffffu) | 0x00800000u) : a - ((127u - F::Bias) << 23);
  const uint32_t sh = sub ? uint32_t(shSub) : S;
  // Round to nearest even on the sh dropped bits: adding half - 1 plus the
  // kept lsb carries exactly when the rest is above half, or equal to half
  // with an odd lsb. (Written without comparisons: GCC does not if-convert
  // "rem > half || (rem == half && odd)" and would not vectorise the loop.)
  uint32_t mag = (v + ((1u << (sh - 1)) - 1u) + ((v >> sh) & 1u)) >> sh;
  if (Ftz) // FTZ after rounding: only results that stay subnormal flush.
    mag = mag < (1u << F::M) ? 0u : mag;
  // Overflow, including +-inf (0x7f800000 >= OvfBits).
  mag = a >= F::OvfBits ? (Sat ? F::MaxEnc : F::OvfEnc) : mag;
  const bool nan = a > kF32Inf;
  // APFloat: keep the top payload bits and set the quiet bit; E4M3FN has a
  // single NaN. CUDA satfinite: one positive canonical NaN.
  const uint32_t nanEnc =
      Sat ? F::SatNaN
          : (F::HasInf ? (F::InfEnc | F::QuietBit | ((a >> S) & F::MantMask))
                       : (F::InfEnc | F::MantMask));
  mag = nan ? nanEnc : mag;
  const uint32_t sgn = (Sat && nan) ? 0u : (sign << F::SignShift);
  return mag | sgn;
}

/// float32 bits -> BF16 bits. BF16 shares float32's exponent, so rounding
/// the top 16 bits covers normals, subnormals and overflow to inf at once.
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE uint32_t encodeBF16(uint32_t bits) {
  const uint32_t sign = bits & 0x80000000u;
  uint32_t a = bits & 0x7fffffffu;
  if (Ftz)
    a = a < kF32MinNormal ? 0u : a;
  uint32_t mag = (a + 0x7fffu + ((a >> 16) & 1u)) >> 16;
  if (Ftz)
    mag = mag < 0x80u ? 0u : mag;
  if (Sat) // 0x7f7f8000 is the tie max/inf; 0x7f7f is odd so it goes up.
    mag = a >= 0x7f7f8000u ? 0x7f7fu : mag;
  const bool nan = a > kF32Inf;
  mag = nan ? (Sat ? 0x7fffu : ((a >> 16) | 0x0040u)) : mag;
  const uint32_t sgn = (Sat && nan) ? 0u : (sign >> 16);
  return mag | sgn;
}

MIXPREC_ALWAYS_INLINE uint32_t flushF32(uint32_t bits) {
  return (bits & 0x7fffffffu) < kF32MinNormal ? (bits & 0x80000000u) : bits;
}

// ---- Decoders ----------------------------------------------------------------

// Decoded NaNs are made quiet (payload kept, quiet bit set) because that is
// what APFloat (and x86's vcvtph2ps) do when widening a signalling NaN; the
// compiler folds constants with APFloat and must agree with the runtime.
constexpr uint32_t kF32QuietBit = 0x00400000u;

/// F16 bits -> float32 bits. Normal/inf/NaN by rebiasing; subnormals through
/// an exact int -> float conversion and power-of-two scaling (inputs and
/// results are normal float32 values, so FTZ/DAZ cannot touch them; the
/// library is built with -fno-trapping-math so that GCC may evaluate these
/// exact FP operations for every lane and vectorise the loop).
MIXPREC_ALWAYS_INLINE uint32_t decodeF16Bits(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t a = h & 0x7fffu;
  const uint32_t e = a >> 10;
  uint32_t nrm = (a << 13) + (e == 31u ? (224u << 23) : (112u << 23));
  nrm |= a > 0x7c00u ? kF32QuietBit : 0u;
  const uint32_t sub = bitsOf(float(int32_t(a)) * 0x1p-24f);
  return (e == 0u ? sub : nrm) | sign;
}

/// BF16 bits -> float32 bits: the top half of a float32, NaNs quietened.
MIXPREC_ALWAYS_INLINE uint32_t decodeBF16Bits(uint32_t b) {
  return (b << 16) | ((b & 0x7fffu) > 0x7f80u ? kF32QuietBit : 0u);
}

/// Generic exact decode for the small formats, usable in constant
/// expressions (C++17 has no constexpr bit_cast): builds the float32 bits
/// directly, normalising subnormals by hand.
constexpr uint32_t decodeSmallBits(uint32_t b, unsigned E, unsigned M, unsigned Bias,
                                   bool hasInf) {
  const uint32_t sign = (b >> (E + M)) & 1u;
  const uint32_t e = (b >> M) & ((1u << E) - 1u);
  const uint32_t m = b & ((1u << M) - 1u);
  const uint32_t topE = (1u << E) - 1u;
  uint32_t out = 0;
  if (e == topE && (hasInf || m == (1u << M) - 1u)) {
    out = 0x7f800000u | (m << (23 - M)); // inf or NaN, payload widened
    out |= m != 0 ? kF32QuietBit : 0u;
  } else if (e != 0) {
    out = ((e + 127u - Bias) << 23) | (m << (23 - M));
  } else if (m != 0) {
    unsigned p = 0; // position of the leading one
    while ((m >> (p + 1)) != 0)
      ++p;
    // value = m * 2^(1 - Bias - M) = 1.f * 2^(p + 1 - Bias - M)
    out = ((p + 1u - Bias - M + 127u) << 23) | ((m - (1u << p)) << (23 - p));
  }
  return out | (sign << 31);
}

struct Fp8Table {
  uint32_t bits[256];
};
constexpr Fp8Table makeFp8Table(unsigned E, unsigned M, unsigned Bias, bool hasInf) {
  Fp8Table t{};
  for (uint32_t b = 0; b < 256; ++b)
    t.bits[b] = decodeSmallBits(b, E, M, Bias, hasInf);
  return t;
}
constexpr Fp8Table kE4M3FNTable = makeFp8Table(4, 3, 7, false);
constexpr Fp8Table kE5M2Table = makeFp8Table(5, 2, 15, true);
static_assert(kE4M3FNTable.bits[0x7e] == 0x43e00000u, "448");
static_assert(kE4M3FNTable.bits[0x01] == 0x3b000000u, "2^-9");
static_assert(kE5M2Table.bits[0x7b] == 0x47600000u, "57344");
static_assert(kE5M2Table.bits[0x83] == 0xb8400000u, "-3 * 2^-16");

// ---- Array kernels ---------------------------------------------------------
// One loop per (format, saturate, flushToZero) so the options are constants
// inside the loop. The out pointers have a different type than float, but we
// still say __restrict: encode/decode buffers must not overlap.

template <class F, bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void encodeNarrowLoop(const float *__restrict in,
                                            typename F::Storage *__restrict out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = typename F::Storage(encodeNarrow<F, Sat, Ftz>(bitsOf(in[i])));
}
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void encodeBF16Loop(const float *__restrict in, uint16_t *__restrict out,
                                          size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = uint16_t(encodeBF16<Sat, Ftz>(bitsOf(in[i])));
}

// roundArray allows in == out, so no __restrict: element i is read before
// it is written and no other element is involved, which the vectoriser's
// runtime alias check accepts (distance 0).
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void roundF16Loop(const float *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatOf(decodeF16Bits(encodeNarrow<F16, Sat, Ftz>(bitsOf(in[i]))));
}
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void roundBF16Loop(const float *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatOf(decodeBF16Bits(encodeBF16<Sat, Ftz>(bitsOf(in[i]))));
}
/// encodeNarrow<F>'s value for an FP8 format F (its decoded code in
/// `table`), computed as a float32 without the byte: normal results keep
/// F::M of float32's mantissa bits (the encoder's rounding, on the float32
/// bits in place; a carry is the next binade's value); subnormal ones are
/// q units of 2^(1 - Bias - M), q in [0, 2^M] the significand shifted right
/// to nearest even (exact integer and power-of-two arithmetic, so no
/// rounding mode or FTZ/DAZ setting reaches it); overflow, inf and NaN as
/// the encoder maps them (a NaN as its code decodes: the top payload bits
/// kept and quiet with an inf, E4M3FN's one NaN without; one positive NaN
/// saturating). Twice as fast as encoding, then decoding.
template <class F, bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE uint32_t roundFp8Bits(const Fp8Table &table, uint32_t bits) {
  constexpr uint32_t S = F::Shift;
  constexpr uint32_t kHalfBelow = (1u << (S - 1)) - 1u, kKept = ~((1u << S) - 1u);
  // Below F's min normal (exponent field <= 127 - Bias) the significand's
  // unit is 2^(1 - Bias - M) after a right shift of 151 - Bias - M minus
  // the exponent field, clamped to [1, 31] (normal lanes compute it too,
  // unused; tiny ones shift out to 0).
  constexpr int32_t kShiftBase = int32_t(151u - F::Bias - F::M);
  const float unit = floatOf((128u - F::Bias - F::M) << 23);
  const uint32_t overflow = Sat ? table.bits[F::MaxEnc] : table.bits[F::OvfEnc];
  uint32_t a = bits & 0x7fffffffu;
  if (Ftz) // DAZ: float32 subnormal inputs count as zero.
    a = a < kF32MinNormal ? 0u : a;
  const uint32_t nrm = (a + kHalfBelow + ((a >> S) & 1u)) & kKept;
  int32_t k = kShiftBase - int32_t(a >> 23);
  k = k < 1 ? 1 : k > 31 ? 31 : k;
  const uint32_t sig = (a & 0x007fffffu) | 0x00800000u;
  uint32_t q = (sig + ((1u << (k - 1)) - 1u) + ((sig >> k) & 1u)) >> k;
  if (Ftz) // FTZ after rounding: only results that stay subnormal flush.
    q = q < (1u << F::M) ? 0u : q;
  const uint32_t sub = bitsOf(float(int32_t(q)) * unit);
  uint32_t v = a < F::MinNormalBits ? sub : nrm;
  v = a >= F::OvfBits ? overflow : v;
  const bool nan = a > kF32Inf;
  const uint32_t nanValue = Sat ? table.bits[F::SatNaN]
                                : (F::HasInf ? (kF32Inf | kF32QuietBit | (a & (F::MantMask << S)))
                                             : table.bits[F::OvfEnc]);
  v = nan ? nanValue : v;
  const uint32_t sign = (Sat && nan) ? 0u : (bits & 0x80000000u);
  return v | sign;
}
template <class F, bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void roundFp8Loop(const Fp8Table &table, const float *in, float *out,
                                        size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatOf(roundFp8Bits<F, Sat, Ftz>(table, bitsOf(in[i])));
}
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void roundE4M3FNLoop(const float *in, float *out, size_t n) {
  roundFp8Loop<E4M3FN, Sat, Ftz>(kE4M3FNTable, in, out, n);
}
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void roundE5M2Loop(const float *in, float *out, size_t n) {
  roundFp8Loop<E5M2, Sat, Ftz>(kE5M2Table, in, out, n);
}

#define MIXPREC_DISPATCH_OPTS(LOOP, ...)                                        \
  do {                                                                         \
    if (sat) {                                                                 \
      if (ftz)                                                                 \
        LOOP<true, true>(__VA_ARGS__);                                         \
      else                                                                     \
        LOOP<true, false>(__VA_ARGS__);                                        \
    } else {                                                                   \
      if (ftz)                                                                 \
        LOOP<false, true>(__VA_ARGS__);                                        \
      else                                                                     \
        LOOP<false, false>(__VA_ARGS__);                                       \
    }                                                                          \
  } while (0)

template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void encodeF16Loop(const float *in, uint16_t *out, size_t n) {
  encodeNarrowLoop<F16, Sat, Ftz>(in, out, n);
}
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void encodeE4M3FNLoop(const float *in, uint8_t *out, size_t n) {
  encodeNarrowLoop<E4M3FN, Sat, Ftz>(in, out, n);
}
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void encodeE5M2Loop(const float *in, uint8_t *out, size_t n) {
  encodeNarrowLoop<E5M2, Sat, Ftz>(in, out, n);
}
template <bool Sat, bool Ftz>
MIXPREC_ALWAYS_INLINE void flushF32Loop(const float *in, float *out, size_t n) {
  (void)Sat;
  for (size_t i = 0; i < n; ++i)
    out[i] = floatOf(Ftz ? flushF32(bitsOf(in[i])) : bitsOf(in[i]));
}

MIXPREC_MULTIVERSION void encodeF16Array(const float *in, uint16_t *out, size_t n, bool sat,
                                         bool ftz) {
  MIXPREC_DISPATCH_OPTS(encodeF16Loop, in, out, n);
}
MIXPREC_MULTIVERSION void encodeBF16Array(const float *in, uint16_t *out, size_t n, bool sat,
                                          bool ftz) {
  MIXPREC_DISPATCH_OPTS(encodeBF16Loop, in, out, n);
}
MIXPREC_MULTIVERSION void encodeE4M3FNArray(const float *in, uint8_t *out, size_t n, bool sat,
                                            bool ftz) {
  MIXPREC_DISPATCH_OPTS(encodeE4M3FNLoop, in, out, n);
}
MIXPREC_MULTIVERSION void encodeE5M2Array(const float *in, uint8_t *out, size_t n, bool sat,
                                          bool ftz) {
  MIXPREC_DISPATCH_OPTS(encodeE5M2Loop, in, out, n);
}

MIXPREC_MULTIVERSION void roundF16Array(const float *in, float *out, size_t n, bool sat,
                                        bool ftz) {
  MIXPREC_DISPATCH_OPTS(roundF16Loop, in, out, n);
}
MIXPREC_MULTIVERSION void roundBF16Array(const float *in, float *out, size_t n, bool sat,
                                         bool ftz) {
  MIXPREC_DISPATCH_OPTS(roundBF16Loop, in, out, n);
}
MIXPREC_MULTIVERSION void roundE4M3FNArray(const float *in, float *out, size_t n, bool sat,
                                           bool ftz) {
  MIXPREC_DISPATCH_OPTS(roundE4M3FNLoop, in, out, n);
}
MIXPREC_MULTIVERSION void roundE5M2Array(const float *in, float *out, size_t n, bool sat,
                                         bool ftz) {
  MIXPREC_DISPATCH_OPTS(roundE5M2Loop, in, out, n);
}
MIXPREC_MULTIVERSION void roundF32Array(const float *in, float *out, size_t n, bool sat,
                                        bool ftz) {
  MIXPREC_DISPATCH_OPTS(flushF32Loop, in, out, n);
}

MIXPREC_MULTIVERSION void decodeF16Array(const uint16_t *__restrict in, float *__restrict out,
                                         size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatOf(decodeF16Bits(in[i]));
}
MIXPREC_MULTIVERSION void decodeBF16Array(const uint16_t *__restrict in, float *__restrict out,
                                          size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatOf(decodeBF16Bits(in[i]));
}
void decodeFp8Array(const Fp8Table &table, const uint8_t *__restrict in, float *__restrict out,
                    size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = floatOf(table.bits[in[i]]);
}

#undef MIXPREC_DISPATCH_OPTS

template <bool Sat, bool Ftz> uint32_t encodeScalar(Format f, uint32_t bits) {
  switch (f) {
  case Format::F16:
    return encodeNarrow<F16, Sat, Ftz>(bits);
  case Format::BF16:
    return encodeBF16<Sat, Ftz>(bits);
  case Format::F8E4M3FN:
    return encodeNarrow<E4M3FN, Sat, Ftz>(bits);
  case Format::F8E5M2:
    return encodeNarrow<E5M2, Sat, Ftz>(bits);
  case Format::F32:
    break;
  }
  return Ftz ? flushF32(bits) : bits;
}

} // namespace

// ---- Public scalar API -------------------------------------------------------

uint32_t encode(Format f, float x, RoundOptions o) {
  const uint32_t b = bitsOf(x);
  if (o.saturate)
    return o.flushToZero ? encodeScalar<true, true>(f, b) : encodeScalar<true, false>(f, b);
  return o.flushToZero ? encodeScalar<false, true>(f, b) : encodeScalar<false, false>(f, b);
}

float decode(Format f, uint32_t bits) {
  switch (f) {
  case Format::F16:
    return floatOf(decodeF16Bits(bits & 0xffffu));
  case Format::BF16:
    return floatOf(decodeBF16Bits(bits & 0xffffu));
  case Format::F8E4M3FN:
    return floatOf(kE4M3FNTable.bits[bits & 0xffu]);
  case Format::F8E5M2:
    return floatOf(kE5M2Table.bits[bits & 0xffu]);
  case Format::F32:
    break;
  }
  return floatOf(bits);
}

float roundTo(Format f, float x, RoundOptions o) { return decode(f, encode(f, x, o)); }

uint16_t floatToF16(float x, RoundOptions o) { return uint16_t(encode(Format::F16, x, o)); }
uint16_t floatToBF16(float x, RoundOptions o) { return uint16_t(encode(Format::BF16, x, o)); }
uint8_t floatToE4M3FN(float x, RoundOptions o) { return uint8_t(encode(Format::F8E4M3FN, x, o)); }
uint8_t floatToE5M2(float x, RoundOptions o) { return uint8_t(encode(Format::F8E5M2, x, o)); }
float f16ToFloat(uint16_t b) { return floatOf(decodeF16Bits(b)); }
float bf16ToFloat(uint16_t b) { return floatOf(decodeBF16Bits(b)); }
float e4m3fnToFloat(uint8_t b) { return floatOf(kE4M3FNTable.bits[b]); }
float e5m2ToFloat(uint8_t b) { return floatOf(kE5M2Table.bits[b]); }

// ---- Public array API --------------------------------------------------------

void roundArray(Format f, const float *in, float *out, size_t n, RoundOptions o) {
  const bool sat = o.saturate, ftz = o.flushToZero;
  switch (f) {
  case Format::F16:
    return roundF16Array(in, out, n, sat, ftz);
  case Format::BF16:
    return roundBF16Array(in, out, n, sat, ftz);
  case Format::F8E4M3FN:
    return roundE4M3FNArray(in, out, n, sat, ftz);
  case Format::F8E5M2:
    return roundE5M2Array(in, out, n, sat, ftz);
  case Format::F32:
    break;
  }
  if (!ftz) {
    if (in != out)
      std::memmove(out, in, n * sizeof(float));
    return;
  }
  roundF32Array(in, out, n, sat, ftz);
}

void encodeArray(Format f, const float *in, void *out, size_t n, RoundOptions o) {
  const bool sat = o.saturate, ftz = o.flushToZero;
  switch (f) {
  case Format::F16:
    return encodeF16Array(in, static_cast<uint16_t *>(out), n, sat, ftz);
  case Format::BF16:
    return encodeBF16Array(in, static_cast<uint16_t *>(out), n, sat, ftz);
  case Format::F8E4M3FN:
    return encodeE4M3FNArray(in, static_cast<uint8_t *>(out), n, sat, ftz);
  case Format::F8E5M2:
    return encodeE5M2Array(in, static_cast<uint8_t *>(out), n, sat, ftz);
  case Format::F32:
    break;
  }
  if (!ftz) {
    if (n > 0) // an empty array's pointers may be null
      std::memcpy(out, in, n * sizeof(float));
    return;
  }
  roundF32Array(in, static_cast<float *>(out), n, sat, ftz);
}

void decodeArray(Format f, const void *in, float *out, size_t n) {
  switch (f) {
  case Format::F16:
    return decodeF16Array(static_cast<const uint16_t *>(in), out, n);
  case Format::BF16:
    return decodeBF16Array(static_cast<const uint16_t *>(in), out, n);
  case Format::F8E4M3FN:
    return decodeFp8Array(kE4M3FNTable, static_cast<const uint8_t *>(in), out, n);
  case Format::F8E5M2:
    return decodeFp8Array(kE5M2Table, static_cast<const uint8_t *>(in), out, n);
  case Format::F32:
    break;
  }
  if (n > 0) // an empty array's pointers may be null
    std::memcpy(out, in, n * sizeof(float));
}

// ---- Format facts ------------------------------------------------------------

size_t formatBytes(Format f) {
  switch (f) {
  case Format::F32:
    return 4;
  case Format::F16:
  case Format::BF16:
    return 2;
  case Format::F8E4M3FN:
  case Format::F8E5M2:
    return 1;
  }
  return 0;
}

double formatMaxFinite(Format f) {
  switch (f) {
  case Format::F32:
    return 0x1.fffffep127;
  case Format::F16:
    return 65504.0;
  case Format::BF16:
    return 0x1.fep127;
  case Format::F8E4M3FN:
    return 448.0;
  case Format::F8E5M2:
    return 57344.0;
  }
  return 0.0;
}

double formatMinNormal(Format f) {
  switch (f) {
  case Format::F32:
  case Format::BF16:
    return 0x1p-126;
  case Format::F16:
  case Format::F8E5M2:
    return 0x1p-14;
  case Format::F8E4M3FN:
    return 0x1p-6;
  }
  return 0.0;
}

double formatMinSubnormal(Format f) {
  switch (f) {
  case Format::F32:
    return 0x1p-149;
  case Format::BF16:
    return 0x1p-133;
  case Format::F16:
    return 0x1p-24;
  case Format::F8E5M2:
    return 0x1p-16;
  case Format::F8E4M3FN:
    return 0x1p-9;
  }
  return 0.0;
}

bool formatHasInf(Format f) { return f != Format::F8E4M3FN; }

const char *formatName(Format f) {
  switch (f) {
  case Format::F32:
    return "f32";
  case Format::F16:
    return "f16";
  case Format::BF16:
    return "bf16";
  case Format::F8E4M3FN:
    return "f8E4M3FN";
  case Format::F8E5M2:
    return "f8E5M2";
  }
  return "?";
}

bool parseFormat(std::string_view name, Format &out) {
  for (Format f : {Format::F32, Format::F16, Format::BF16, Format::F8E4M3FN, Format::F8E5M2}) {
    if (name == formatName(f)) {
      out = f;
      return true;
    }
  }
  return false;
}

float roundToTf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  if ((bits & 0x7f800000u) != 0x7f800000u) {
    // Adding half of the dropped 13 bits rounds the magnitude half-up, i.e.
    // ties away from zero; a carry into the exponent is the correct result.
    bits = (bits + 0x1000u) & ~0x1fffu;
  }
  float r;
  std::memcpy(&r, &bits, sizeof(r));
  return r;
}

double fp8ScaleExact(Format f, double amax, int64_t margin) {
  if (!std::isfinite(amax))
    return std::numeric_limits<double>::quiet_NaN();
  if (!(amax > 0))
    return 1.0;
  return formatMaxFinite(f) / amax / std::ldexp(1.0, static_cast<int>(margin));
}

float fp8Scale(Format f, double amax, int64_t margin) {
  // A subnormal amax would give a scale beyond float range: an inf scale
  // would make every quantized value NaN. (std::min keeps a NaN.)
  return static_cast<float>(
      std::min(fp8ScaleExact(f, amax, margin), static_cast<double>(FLT_MAX)));
}

float quantizeFp8(Format f, float x, float scale) {
  if (!std::isfinite(x) || !std::isfinite(scale))
    return std::numeric_limits<float>::quiet_NaN();
  RoundOptions saturate;
  saturate.saturate = true;
  return roundTo(f, x * scale, saturate);
}

void quantizeFp8Array(Format f, const float *in, float scale, float *out, size_t n) {
  RoundOptions saturate;
  saturate.saturate = true;
  if (!std::isfinite(scale)) {
    std::fill(out, out + n, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  // Blocks: find the non-finite inputs before the in-place rounding hides
  // them (an inf and a 448 both round to 448).
  constexpr size_t kBlock = 256;
  float scaled[kBlock];
  for (size_t start = 0; start < n; start += kBlock) {
    const size_t count = std::min(kBlock, n - start);
    for (size_t i = 0; i < count; ++i)
      scaled[i] = in[start + i] * scale;
    roundArray(f, scaled, scaled, count, saturate);
    for (size_t i = 0; i < count; ++i)
      out[start + i] = std::isfinite(in[start + i]) ? scaled[i]
                                                    : std::numeric_limits<float>::quiet_NaN();
  }
}

MIXPREC_MULTIVERSION void widenE4M3FNToBF16(const uint8_t *__restrict in, uint16_t *__restrict out,
                                            size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t c = in[i], a = c & 0x7fu;
    // Normals: the exponent rebiased (7 -> 127), the 3 mantissa bits on top
    // of BF16's 7. Subnormals a * 2^-9 (a in 1..7): 2^-9, 2^-8 or 2^-7
    // times 1.m, built by hand; 0 stays 0.
    const uint16_t normal = static_cast<uint16_t>((a << 4) + 0x3c00u);
    const uint16_t sub = a >= 4u   ? static_cast<uint16_t>(0x3c00u | ((a - 4u) << 5))
                         : a >= 2u ? static_cast<uint16_t>(0x3b80u | ((a - 2u) << 6))
                         : a == 1u ? uint16_t(0x3b00u)
                                   : uint16_t(0);
    uint16_t v = a >= 8u ? normal : sub;
    v = a == 0x7fu ? uint16_t(0x7ff0u) : v; // floatToBF16(NaN), sign below
    out[i] = static_cast<uint16_t>(v | ((c & 0x80u) << 8));
  }
}

namespace {
/// x * s, NaN where either is not finite (a NaN fails both tests).
inline float scaledForQuantize(float x, float s) {
  constexpr float kMax = std::numeric_limits<float>::max();
  return std::fabs(x) <= kMax && std::fabs(s) <= kMax ? x * s
                                                      : std::numeric_limits<float>::quiet_NaN();
}
} // namespace

MIXPREC_MULTIVERSION void scaleForQuantize(const float *in, const float *scale, float *out,
                                           size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = scaledForQuantize(in[i], scale[i]);
}

MIXPREC_MULTIVERSION void scaleForQuantize(const float *in, float scale, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out[i] = scaledForQuantize(in[i], scale);
}

namespace {
/// quantizeFp8Store's loop for format F, source Src and storage To: each
/// value decoded, scaled (scaledForQuantize), then encoded saturating
/// (encodeNarrow), or rounded to that code's value (roundFp8Bits: its
/// float32 bits; BF16: their top half, exact, a NaN included), in one pass.
template <class F, Format Src, Fp8Storage To>
MIXPREC_ALWAYS_INLINE void quantizeStoreLoop(const Fp8Table &table, const void *in, float scale,
                                             void *out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float x;
    if constexpr (Src == Format::F32)
      x = static_cast<const float *>(in)[i];
    else if constexpr (Src == Format::BF16)
      x = floatOf(decodeBF16Bits(static_cast<const uint16_t *>(in)[i]));
    else
      x = floatOf(decodeF16Bits(static_cast<const uint16_t *>(in)[i]));
    const uint32_t bits = bitsOf(scaledForQuantize(x, scale));
    if constexpr (To == Fp8Storage::Codes)
      static_cast<uint8_t *>(out)[i] = uint8_t(encodeNarrow<F, true, false>(bits));
    else if constexpr (To == Fp8Storage::WideF32)
      static_cast<uint32_t *>(out)[i] = roundFp8Bits<F, true, false>(table, bits);
    else
      static_cast<uint16_t *>(out)[i] = uint16_t(roundFp8Bits<F, true, false>(table, bits) >> 16);
  }
}

template <class F, Format Src>
MIXPREC_ALWAYS_INLINE void quantizeStoreTo(const Fp8Table &table, const void *in, float scale,
                                           Fp8Storage to, void *out, size_t n) {
  switch (to) {
  case Fp8Storage::Codes:
    return quantizeStoreLoop<F, Src, Fp8Storage::Codes>(table, in, scale, out, n);
  case Fp8Storage::WideF32:
    return quantizeStoreLoop<F, Src, Fp8Storage::WideF32>(table, in, scale, out, n);
  case Fp8Storage::WideBF16:
    return quantizeStoreLoop<F, Src, Fp8Storage::WideBF16>(table, in, scale, out, n);
  }
}

template <class F>
MIXPREC_ALWAYS_INLINE void quantizeStoreFrom(const Fp8Table &table, Format src, const void *in,
                                             float scale, Fp8Storage to, void *out, size_t n) {
  switch (src) {
  case Format::BF16:
    return quantizeStoreTo<F, Format::BF16>(table, in, scale, to, out, n);
  case Format::F16:
    return quantizeStoreTo<F, Format::F16>(table, in, scale, to, out, n);
  default:
    return quantizeStoreTo<F, Format::F32>(table, in, scale, to, out, n);
  }
}
} // namespace

namespace {
/// quantizeFp8Store with the generic loops.
MIXPREC_MULTIVERSION void quantizeFp8StoreLoops(Format f, Format src, const void *in, float scale,
                                                Fp8Storage to, void *out, size_t n) {
  if (f == Format::F8E5M2)
    quantizeStoreFrom<E5M2>(kE5M2Table, src, in, scale, to, out, n);
  else
    quantizeStoreFrom<E4M3FN>(kE4M3FNTable, src, in, scale, to, out, n);
}

#if defined(MIXPREC_QUANTIZE_AVX2)
/// quantizeStoreLoop's steps for 8 values at a time, written with AVX2
/// intrinsics: GCC's vectorisation of the generic loop (variable shifts for
/// the subnormal range, selects for every case) took 0.96 ns a value on a
/// Zen 3 core (8192 values from L1/L2), this 0.27. The same bits by
/// construction, step by step:
/// - the scale: the same float multiply (a non-finite scale never gets
///   here; a non-finite value is the NaN case);
/// - normal range: the same integer rounding of the float32 bits in place;
/// - below F's min normal: q = the magnitude times 2^(Bias + M - 1), exact
///   (a power of two; products below FLT_MIN, which FTZ may flush, round
///   to q = 0 either way), rounded to the nearest integer, ties to even, by
///   vroundps with the rounding mode in its immediate (MXCSR's mode is not
///   read), then times the unit back, exact: the integer shift's q;
/// - overflow saturates to the max, a NaN is the one positive NaN.
/// The tests compare every path with the generic loops (the portable
/// library) and run it under every rounding mode.
template <class F, Format Src, Fp8Storage To>
__attribute__((target("avx2"))) void quantizeStoreAvx2(const Fp8Table &table, const void *in,
                                                       float scale, void *out, size_t n) {
  constexpr uint32_t S = F::Shift;
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff);
  const __m256i signMask = _mm256_set1_epi32(int(0x80000000u));
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i halfBelow = _mm256_set1_epi32(int((1u << (S - 1)) - 1u));
  const __m256i kept = _mm256_set1_epi32(int(~((1u << S) - 1u)));
  const __m256i finiteMax = _mm256_set1_epi32(0x7f7fffff);
  const __m256i belowNormal = _mm256_set1_epi32(int(F::MinNormalBits - 1u));
  const __m256i belowOverflow = _mm256_set1_epi32(int(F::OvfBits - 1u));
  const __m256 toUnits =
      _mm256_castsi256_ps(_mm256_set1_epi32(int((127u + F::Bias + F::M - 1u) << 23)));
  const __m256 unit = _mm256_castsi256_ps(_mm256_set1_epi32(int((128u - F::Bias - F::M) << 23)));
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i maxValue = _mm256_set1_epi32(int(table.bits[F::MaxEnc]));
  const __m256i nanValue = _mm256_set1_epi32(int(table.bits[F::SatNaN]));
  const __m256i rebias = _mm256_set1_epi32(int((127u - F::Bias) << 23));
  const __m256i maxCode = _mm256_set1_epi32(int(F::MaxEnc));
  const __m256i nanCode = _mm256_set1_epi32(int(F::SatNaN));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i xBits;
    if constexpr (Src == Format::F32)
      xBits =
          _mm256_loadu_si256(reinterpret_cast<const __m256i *>(static_cast<const float *>(in) + i));
    else // BF16: the top half of a float32 (a NaN's quiet bit does not matter: NaN below)
      xBits =
          _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(
                                static_cast<const uint16_t *>(in) + i))),
                            16);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(xBits, absMask), finiteMax);
    const __m256i y = _mm256_castps_si256(_mm256_mul_ps(_mm256_castsi256_ps(xBits), s));
    const __m256i a = _mm256_and_si256(y, absMask);
    const __m256i sign = _mm256_and_si256(y, signMask);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(a, S), one);
    const __m256i nrm =
        _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(a, halfBelow), lsb), kept);
    const __m256 q = _mm256_round_ps(_mm256_mul_ps(_mm256_castsi256_ps(a), toUnits),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i normal = _mm256_cmpgt_epi32(a, belowNormal);
    const __m256i over = _mm256_cmpgt_epi32(a, belowOverflow);
    if constexpr (To == Fp8Storage::Codes) {
      __m256i c = _mm256_blendv_epi8(_mm256_cvttps_epi32(q),
                                     _mm256_srli_epi32(_mm256_sub_epi32(nrm, rebias), S), normal);
      c = _mm256_blendv_epi8(c, maxCode, over);
      c = _mm256_or_si256(c, _mm256_srli_epi32(sign, 24));
      c = _mm256_blendv_epi8(c, nanCode, nan);
      const __m128i w = _mm_packus_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i *>(static_cast<uint8_t *>(out) + i),
                       _mm_packus_epi16(w, w));
    } else {
      __m256i v = _mm256_blendv_epi8(_mm256_castps_si256(_mm256_mul_ps(q, unit)), nrm, normal);
      v = _mm256_blendv_epi8(v, maxValue, over);
      v = _mm256_or_si256(v, sign);
      v = _mm256_blendv_epi8(v, nanValue, nan);
      if constexpr (To == Fp8Storage::WideF32) {
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(static_cast<uint32_t *>(out) + i), v);
      } else {
        const __m256i h = _mm256_srli_epi32(v, 16);
        _mm_storeu_si128(
            reinterpret_cast<__m128i *>(static_cast<uint16_t *>(out) + i),
            _mm_packus_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
      }
    }
  }
  if (i < n) { // the last n % 8 values: the generic loop
    const size_t inBytes = Src == Format::F32 ? 4 : 2;
    const size_t outBytes = To == Fp8Storage::Codes ? 1 : To == Fp8Storage::WideF32 ? 4 : 2;
    quantizeStoreLoop<F, Src, To>(table, static_cast<const uint8_t *>(in) + i * inBytes, scale,
                                  static_cast<uint8_t *>(out) + i * outBytes, n - i);
  }
}

template <class F, Format Src>
void quantizeStoreAvx2To(const Fp8Table &table, const void *in, float scale, Fp8Storage to,
                         void *out, size_t n) {
  switch (to) {
  case Fp8Storage::Codes:
    return quantizeStoreAvx2<F, Src, Fp8Storage::Codes>(table, in, scale, out, n);
  case Fp8Storage::WideF32:
    return quantizeStoreAvx2<F, Src, Fp8Storage::WideF32>(table, in, scale, out, n);
  case Fp8Storage::WideBF16:
    return quantizeStoreAvx2<F, Src, Fp8Storage::WideBF16>(table, in, scale, out, n);
  }
}

template <class F>
void quantizeStoreAvx2From(const Fp8Table &table, Format src, const void *in, float scale,
                           Fp8Storage to, void *out, size_t n) {
  if (src == Format::BF16)
    quantizeStoreAvx2To<F, Format::BF16>(table, in, scale, to, out, n);
  else
    quantizeStoreAvx2To<F, Format::F32>(table, in, scale, to, out, n);
}
#endif
} // namespace

void quantizeFp8Store(Format f, Format src, const void *in, float scale, Fp8Storage to, void *out,
                      size_t n) {
#if defined(MIXPREC_QUANTIZE_AVX2)
  // F16 sources (whose decode the AVX2 form does not have) and a
  // non-finite scale (every value NaN) take the generic loops.
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && (src == Format::F32 || src == Format::BF16) && std::isfinite(scale)) {
    if (f == Format::F8E5M2)
      quantizeStoreAvx2From<E5M2>(kE5M2Table, src, in, scale, to, out, n);
    else
      quantizeStoreAvx2From<E4M3FN>(kE4M3FNTable, src, in, scale, to, out, n);
    return;
  }
#endif
  quantizeFp8StoreLoops(f, src, in, scale, to, out, n);
}

} // namespace numerics
} // namespace mixprec
