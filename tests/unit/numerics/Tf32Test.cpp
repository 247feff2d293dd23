//===- Tf32Test.cpp - TF32 rounding against APFloat ------------------------===//
#include "common/numerics/Rounding.h"
#include "tests/unit/FloatBits.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

/// APFloat's TF32 rounding, ties away from zero, widened back to float.
float referenceTf32(float x) {
  llvm::APFloat v(x);
  bool losesInfo = false;
  v.convert(llvm::APFloat::FloatTF32(), llvm::APFloat::rmNearestTiesToAway, &losesInfo);
  v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return v.convertToFloat();
}

using mixprec::test::bitsOf;
float fromBits(uint32_t b) { return mixprec::test::floatOf(b); }

TEST(Tf32, MatchesApFloatTiesAwayOnRandomAndBoundaryInputs) {
  std::mt19937 rng(7);
  std::vector<uint32_t> inputs;
  for (int i = 0; i < 2000000; ++i)
    inputs.push_back(rng());
  // Every tie and its neighbours in a few binades, plus the top of the range.
  for (uint32_t exponent : {0x00u, 0x01u, 0x7fu, 0xfeu})
    for (uint32_t mantissa = 0; mantissa < (1u << 23); mantissa += 0x1000u - 1)
      for (uint32_t sign : {0u, 0x80000000u})
        for (int delta = -1; delta <= 1; ++delta)
          inputs.push_back(sign | (exponent << 23) | ((mantissa + delta) & 0x7fffffu));
  size_t checked = 0;
  for (uint32_t b : inputs) {
    float x = fromBits(b);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(mixprec::numerics::roundToTf32(x)));
      continue;
    }
    ASSERT_EQ(bitsOf(mixprec::numerics::roundToTf32(x)), bitsOf(referenceTf32(x)))
        << "input bits 0x" << std::hex << b;
    ++checked;
  }
  EXPECT_GT(checked, 2000000u);
}

TEST(Tf32, TiesGoAwayFromZero) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(mixprec::numerics::roundToTf32(1.0f + std::ldexp(1.0f, -11)),
            1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(mixprec::numerics::roundToTf32(-(1.0f + std::ldexp(1.0f, -11))),
            -(1.0f + std::ldexp(1.0f, -10)));
  EXPECT_EQ(mixprec::numerics::roundToTf32(INFINITY), INFINITY);
}

} // namespace

namespace {

TEST(Fp8Scale, TransformerEngineRule) {
  using mixprec::numerics::Format;
  using mixprec::numerics::fp8Scale;
  EXPECT_EQ(fp8Scale(Format::F8E4M3FN, 2.0, 0), 224.0f);
  EXPECT_EQ(fp8Scale(Format::F8E4M3FN, 2.0, 1), 112.0f);
  EXPECT_EQ(fp8Scale(Format::F8E5M2, 57344.0, 0), 1.0f);
  // A zero amax never gives a zero or infinite scale; a subnormal one is
  // clamped to FLT_MAX rather than inf.
  EXPECT_EQ(fp8Scale(Format::F8E4M3FN, 0.0, 0), 1.0f);
  EXPECT_EQ(fp8Scale(Format::F8E4M3FN, 1e-45, 0), FLT_MAX);
  // A non-finite amax poisons the scale (NaN), so the inf or NaN in the
  // tensor stays visible in every value quantized with it. These pinned 1
  // before issue 7: a scale of 1 let saturation turn an inf into 448, and
  // FP8 outputs came out finite where FP32 gave NaN.
  EXPECT_TRUE(std::isnan(fp8Scale(Format::F8E4M3FN, INFINITY, 0)));
  EXPECT_TRUE(std::isnan(fp8Scale(Format::F8E4M3FN, NAN, 0)));
  EXPECT_TRUE(std::isnan(fp8Scale(Format::F8E5M2, -INFINITY, 2)));
}

TEST(Fp8Quantize, SaturatesFiniteValuesOnly) {
  using mixprec::numerics::Format;
  using mixprec::numerics::quantizeFp8;
  using mixprec::numerics::quantizeFp8Array;
  // Finite values: x * scale with CUDA's satfinite.
  EXPECT_EQ(quantizeFp8(Format::F8E4M3FN, 3.0f, 2.0f), 6.0f);
  EXPECT_EQ(quantizeFp8(Format::F8E4M3FN, 1000.0f, 1.0f), 448.0f);
  EXPECT_EQ(quantizeFp8(Format::F8E5M2, -1e30f, 1.0f), -57344.0f);
  EXPECT_EQ(quantizeFp8(Format::F8E4M3FN, 1e30f, 1e10f), 448.0f); // product overflows float
  // Non-finite values and scales give NaN, never +-max finite.
  for (Format f : {Format::F8E4M3FN, Format::F8E5M2}) {
    EXPECT_TRUE(std::isnan(quantizeFp8(f, INFINITY, 1.0f)));
    EXPECT_TRUE(std::isnan(quantizeFp8(f, -INFINITY, 0.5f)));
    EXPECT_TRUE(std::isnan(quantizeFp8(f, NAN, 1.0f)));
    EXPECT_TRUE(std::isnan(quantizeFp8(f, 1.0f, NAN)));
    EXPECT_TRUE(std::isnan(quantizeFp8(f, 1.0f, INFINITY)));
  }
  // The array form gives the scalar results, in place too, across blocks;
  // a 448 and an inf stay apart.
  std::vector<float> in(1000);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i) - 500.0f;
  in[3] = INFINITY;
  in[300] = 448.0f;
  in[600] = -INFINITY;
  in[999] = NAN;
  std::vector<float> out(in.size()), inPlace = in;
  quantizeFp8Array(Format::F8E4M3FN, in.data(), 1.5f, out.data(), in.size());
  quantizeFp8Array(Format::F8E4M3FN, inPlace.data(), 1.5f, inPlace.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const float want = quantizeFp8(Format::F8E4M3FN, in[i], 1.5f);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(out[i]) && std::isnan(inPlace[i])) << i;
    } else {
      EXPECT_EQ(out[i], want) << i;
      EXPECT_EQ(inPlace[i], want) << i;
    }
  }
  EXPECT_EQ(out[300], 448.0f);
  EXPECT_TRUE(std::isnan(out[3]) && std::isnan(out[600]) && std::isnan(out[999]));
}

TEST(Fp8Quantize, ScaledThenEncodedSaturatingGivesTheQuantizedBytes) {
  // The CPU backend stores FP8 values with a saturating encode; where the
  // value is a quantize's, scaleForQuantize then that encode (one rounding)
  // gives the bytes of quantizeFp8Array then that encode, for every 997th
  // FP32 bit pattern (NaNs, infs and subnormals included) and scales from
  // tiny to non-finite, per value (in place) and one for all.
  using mixprec::numerics::encodeArray;
  using mixprec::numerics::Format;
  using mixprec::numerics::quantizeFp8Array;
  using mixprec::numerics::RoundOptions;
  using mixprec::numerics::scaleForQuantize;
  std::vector<float> in;
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += 997) {
    float x;
    const uint32_t bits = static_cast<uint32_t>(b);
    std::memcpy(&x, &bits, sizeof x);
    in.push_back(x);
  }
  RoundOptions saturating;
  saturating.saturate = true;
  for (Format f : {Format::F8E4M3FN, Format::F8E5M2})
    for (float scale : {1.0f, 1.5f, 448.0f / 3.0f, 1e-30f, 3e38f, 0.0f, INFINITY, NAN}) {
      std::vector<float> quantized(in.size()), scaled = in, scales(in.size(), scale);
      quantizeFp8Array(f, in.data(), scale, quantized.data(), in.size());
      std::vector<uint8_t> want(in.size()), got(in.size());
      encodeArray(f, quantized.data(), want.data(), in.size(), saturating);
      // Per-value scales, and one scale for all (out of place).
      std::vector<float> scaledOnce(in.size());
      scaleForQuantize(scaled.data(), scales.data(), scaled.data(), in.size());
      scaleForQuantize(in.data(), scale, scaledOnce.data(), in.size());
      for (const std::vector<float> *form : {&scaled, &scaledOnce}) {
        encodeArray(f, form->data(), got.data(), in.size(), saturating);
        size_t differ = 0;
        for (size_t i = 0; i < in.size(); ++i)
          if (got[i] != want[i] && differ++ < 5)
            ADD_FAILURE() << "format " << int(f) << ", scale " << scale << ", x = " << in[i] << ": "
                          << int(got[i]) << " instead of " << int(want[i]);
        EXPECT_EQ(differ, 0u) << "format " << int(f) << ", scale " << scale
                              << (form == &scaled ? ", per value" : ", one for all");
      }
    }
}

TEST(Fp8Widen, E4M3FNToBF16IsExactForEveryCode) {
  // All 256 codes, at every offset of a vector's lanes (lengths 1..300),
  // against floatToBF16 of the decoded value.
  using mixprec::numerics::decode;
  using mixprec::numerics::floatToBF16;
  using mixprec::numerics::Format;
  using mixprec::numerics::widenE4M3FNToBF16;
  std::vector<uint8_t> codes(300);
  for (size_t i = 0; i < codes.size(); ++i)
    codes[i] = static_cast<uint8_t>(i * 7 + 3);
  for (size_t n = 1; n <= codes.size(); ++n) {
    std::vector<uint16_t> wide(n);
    widenE4M3FNToBF16(codes.data(), wide.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(wide[i], floatToBF16(decode(Format::F8E4M3FN, codes[i])))
          << "code " << int(codes[i]) << " (length " << n << ")";
  }
  std::vector<uint8_t> all(256);
  for (int c = 0; c < 256; ++c)
    all[c] = static_cast<uint8_t>(c);
  std::vector<uint16_t> wide(256);
  widenE4M3FNToBF16(all.data(), wide.data(), 256);
  EXPECT_EQ(wide[0x7e], 0x43e0); // 448
  EXPECT_EQ(wide[0x01], 0x3b00); // 2^-9
  EXPECT_EQ(wide[0x80], 0x8000); // -0
  for (int c = 0; c < 256; ++c)
    EXPECT_EQ(wide[c], floatToBF16(decode(Format::F8E4M3FN, static_cast<uint32_t>(c)))) << c;
}

} // namespace
