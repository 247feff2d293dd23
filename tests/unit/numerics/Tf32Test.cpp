//===- Tf32Test.cpp - TF32 rounding against APFloat ------------------------===//
#include "runtime/src/numerics/Rounding.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace {

/// APFloat's TF32 rounding, ties away from zero, widened back to float.
float referenceTf32(float x) {
  llvm::APFloat v(x);
  bool losesInfo = false;
  v.convert(llvm::APFloat::FloatTF32(), llvm::APFloat::rmNearestTiesToAway, &losesInfo);
  v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return v.convertToFloat();
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof(b));
  return b;
}

float fromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof(f));
  return f;
}

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
  // Zero and non-finite amax never give a zero, infinite or NaN scale.
  EXPECT_EQ(fp8Scale(Format::F8E4M3FN, 0.0, 0), 1.0f);
  EXPECT_EQ(fp8Scale(Format::F8E4M3FN, INFINITY, 0), 1.0f);
  EXPECT_EQ(fp8Scale(Format::F8E4M3FN, NAN, 0), 1.0f);
}

} // namespace
