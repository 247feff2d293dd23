//===- Rounding.h - Exact float32 <-> F16/BF16/FP8 conversion -----*- C++ -*-===//
//
// The one place where mixprec turns float32 values into the narrow storage
// formats and back. The compiler (constant folding, range checks), the CPU
// runtime and the tests all use these functions, so every part of the product
// rounds the same way. No LLVM/MLIR dependency: the standalone runtime
// links it.
//
// Numerics rules (the product's contract; tests/unit/numerics checks them
// bit for bit against LLVM APFloat, CUDA's host conversion code and
// ml_dtypes):
//
//  * Rounding is always round-to-nearest, ties-to-even. Subnormals of the
//    target format are produced and decoded exactly. The result never
//    depends on the host FP environment (rounding mode, FTZ/DAZ in MXCSR):
//    encoding is pure integer arithmetic.
//
//  * Default (saturate = false) is bit-identical to
//    llvm::APFloat::convert(..., rmNearestTiesToEven) from IEEEsingle, NaNs
//    included:
//      - overflow and +-inf: F16/BF16/E5M2 -> +-inf; E4M3FN (no inf) -> NaN
//        with the input's sign (0x7f / 0xff);
//      - NaN keeps its sign and the top bits of its payload, and is made
//        quiet (F16: 0x7e00 | payload>>13, BF16: 0x7fc0 | payload>>16,
//        E5M2: 0x7e | payload>>21, E4M3FN: 0x7f). CUDA's __float2half_rn /
//        __float2bfloat16_rn / __NV_NOSAT give a positive canonical NaN
//        instead (0x7fff / 0x7f): both are NaN, only the bits differ.
//
//  * saturate = true reproduces CUDA's satfinite conversion
//    (__nv_cvt_float_to_fp8(x, __NV_SATFINITE, ...)) bit for bit:
//      - finite values beyond the overflow threshold AND +-inf become +-max
//        finite (448 E4M3FN, 57344 E5M2, 65504 F16, 0x7f7f BF16);
//      - every NaN becomes CUDA's canonical NaN, which is POSITIVE whatever
//        the input sign: 0x7f for both FP8 formats, 0x7fff for F16/BF16
//        (what __float2half_rn/__float2bfloat16_rn return for NaN).
//    For F32 (no narrowing) saturate has no effect.
//
//  * flushToZero = true: a float32 subnormal input is treated as zero
//    (DAZ), and a result that is subnormal in the target format after
//    rounding becomes a zero of the same sign (FTZ). A value just below the
//    target's min normal that rounds up to it stays min normal.
//
//  * Decoding is exact (every F16/BF16/FP8 value is a float32). NaN decodes
//    as APFloat widens it: sign kept, payload shifted into the top bits, and
//    made quiet (F16 0x7c01 -> 0x7fc02000, E4M3FN 0x7f -> 0x7ff00000).
//
// Array forms process hundreds of millions of values per second per core
// (see bench/README.md); they give exactly the scalar results.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMMON_NUMERICS_ROUNDING_H
#define MIXPREC_COMMON_NUMERICS_ROUNDING_H

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mixprec {
namespace numerics {

/// Storage formats. Values are stable (serialized in artifacts).
enum class Format : uint8_t { F32 = 0, F16 = 1, BF16 = 2, F8E4M3FN = 3, F8E5M2 = 4 };

struct RoundOptions {
  /// Clamp overflow and +-inf to +-max finite, CUDA satfinite semantics.
  bool saturate = false;
  /// Float32 subnormal inputs and target-subnormal results become +-0.
  bool flushToZero = false;
};

// ---- Scalar conversions ----------------------------------------------------
uint16_t floatToF16(float x, RoundOptions o = {});
float f16ToFloat(uint16_t bits);
uint16_t floatToBF16(float x, RoundOptions o = {});
float bf16ToFloat(uint16_t bits);
uint8_t floatToE4M3FN(float x, RoundOptions o = {});
float e4m3fnToFloat(uint8_t bits);
uint8_t floatToE5M2(float x, RoundOptions o = {});
float e5m2ToFloat(uint8_t bits);

/// Encodes x in format f; the bits are in the low formatBytes(f)*8 bits.
/// For F32 the result is the (possibly flushed) float32 bit pattern.
uint32_t encode(Format f, float x, RoundOptions o = {});
/// Decodes the low formatBytes(f)*8 bits of `bits`. Exact.
float decode(Format f, uint32_t bits);

/// The value as stored in f: decode(f, encode(f, x, o)).
float roundTo(Format f, float x, RoundOptions o = {});

// ---- Array conversions ------------------------------------------------------
// Same results as the scalar forms, element by element.

/// out[i] = roundTo(f, in[i], o). in == out is allowed (other overlaps are not).
void roundArray(Format f, const float *in, float *out, size_t n,
                RoundOptions o = {});
/// Writes n elements of formatBytes(f) bytes each (little-endian host order,
/// i.e. uint16_t / uint8_t arrays). `in` and `out` must not overlap.
void encodeArray(Format f, const float *in, void *out, size_t n,
                 RoundOptions o = {});
/// Reads n elements of formatBytes(f) bytes. `in` and `out` must not overlap.
void decodeArray(Format f, const void *in, float *out, size_t n);
/// E4M3FN bit patterns widened to BF16 bit patterns (exact: every E4M3FN
/// value is a BF16 value; NaN as floatToBF16 of the decoded NaN), n of
/// them, in 16-bit lanes without a table (the CPU backend widens FP8 GEMM
/// operands per run).
void widenE4M3FNToBF16(const uint8_t *in, uint16_t *out, size_t n);

// ---- TF32 (a GEMM compute mode, not a storage format) ----------------------
/// Rounds to TF32 (10 mantissa bits, float32 range) to nearest with ties
/// away from zero, as PTX `cvt.rna.tf32.f32` does when FP32 operands feed
/// TF32 tensor cores. Inf and NaN pass through.
float roundToTf32(float x);

// ---- FP8 scaling ----------------------------------------------------------
/// The Transformer Engine scaling rule: (max finite of `f` / amax) / 2^margin,
/// computed in double and rounded once to float, at most FLT_MAX; 1 for a
/// zero amax. A non-finite amax (an inf or NaN in the tensor) gives NaN: the
/// whole tensor's scale is poisoned, so every value quantized with it is NaN
/// and the non-finite value stays visible downstream (a scale of 1 would
/// let saturation turn an inf into +-max finite). Compiler, interpreter and
/// runtime all call this one function.
float fp8Scale(Format f, double amax, int64_t margin);
/// The same rule in double, neither rounded nor clamped to float range
/// (NaN for a non-finite amax, 1 for a zero one): the interpreter's FP64
/// mode.
double fp8ScaleExact(Format f, double amax, int64_t margin);

/// FP8 quantization, x * scale stored in `f`: finite values saturate
/// (CUDA satfinite, beyond max finite becomes +-max finite); a non-finite x
/// or scale gives NaN. Saturation applies to finite values only, so an inf
/// never becomes +-448 (E4M3FN has no inf). The result is the stored value
/// (roundTo). Interpreter, CPU backend and compile-time weight quantization
/// all call this one function.
float quantizeFp8(Format f, float x, float scale);
/// out[i] = quantizeFp8(f, in[i], scale). in == out is allowed.
void quantizeFp8Array(Format f, const float *in, float scale, float *out, size_t n);
/// quantizeFp8's value before its rounding: out[i] = in[i] * scale[i], NaN
/// where either is not finite. Encoding it saturating (encodeArray with
/// saturate) gives the bytes of quantizeFp8's result: where a quantized
/// value is only stored, the CPU backend rounds it once, in the encode.
/// in == out and scale == out are allowed.
void scaleForQuantize(const float *in, const float *scale, float *out, size_t n);
/// scaleForQuantize with one scale for all n values; in == out allowed.
void scaleForQuantize(const float *in, float scale, float *out, size_t n);
/// How quantizeFp8Store writes each value: its FP8 code (one byte), or
/// that code's value widened exactly to FP32 or BF16 (the CPU backend's
/// FP8 activations stored wide for its GEMMs).
enum class Fp8Storage { Codes, WideF32, WideBF16 };
/// A quantize with one scale for all n values, stored, in one pass: the
/// values at `in` (F32, BF16 or F16 elements as `src` says), scaled as
/// scaleForQuantize does, then encoded to F8E4M3FN or F8E5M2 `f`
/// saturating; the bytes encodeArray (saturate) writes, or the bits of the
/// decoded code as FP32 (roundArray saturating) or as BF16 (floatToBF16 of
/// it, exact). `in` and `out` must not overlap.
void quantizeFp8Store(Format f, Format src, const void *in, float scale, Fp8Storage to, void *out,
                      size_t n);

// ---- Format facts ----------------------------------------------------------
size_t formatBytes(Format f);
/// Largest finite value: 3.40282347e38, 65504, 3.38953139e38, 448, 57344.
double formatMaxFinite(Format f);
/// Smallest positive normal value (2^-126, 2^-14, 2^-126, 2^-6, 2^-14).
double formatMinNormal(Format f);
/// Smallest positive subnormal value (2^-149, 2^-24, 2^-133, 2^-9, 2^-16).
double formatMinSubnormal(Format f);
/// Whether the format encodes infinities (all but F8E4M3FN).
bool formatHasInf(Format f);
/// MLIR type spelling: "f32", "f16", "bf16", "f8E4M3FN", "f8E5M2".
const char *formatName(Format f);
/// Inverse of formatName. Returns false (and leaves out alone) if unknown.
bool parseFormat(std::string_view name, Format &out);

} // namespace numerics
} // namespace mixprec

#endif // MIXPREC_COMMON_NUMERICS_ROUNDING_H
