//===- ShimReferenceTest.cpp - Kernels on the shim against the CPU kernels -===//
//
// Hand-written kernels in the emitter's CUDA subset (vector loads with a
// tail, a softmax with warp-shuffle and shared-memory reductions writing
// BF16, an FP8 quantization with an in-kernel amax, a GELU cast to FP16,
// every conversion and math function) run on the shim and are checked
// against the CPU reference kernels (runtime/kernels/Kernels.h) and the
// rounding library (common/numerics): bit for bit for conversions and
// arithmetic, within a few ULPs where a sum's order or a transcendental
// function differs. NaNs are compared as NaNs: CUDA's conversions give a
// canonical NaN where the rounding library keeps the payload (Rounding.h).
//
//===----------------------------------------------------------------------===//
#include "tests/unit/cuda_shim/ShimTestUtil.h"

#include "common/numerics/Rounding.h"
#include "runtime/kernels/Kernels.h"

#include <cmath>
#include <limits>
#include <random>

namespace mixprec::cudashim::test {
namespace {

namespace nx = mixprec::numerics;
namespace cpu = mixprec::runtime::cpu;
using nx::Format;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Whether the low bits of `bits` are a NaN of format `f`.
bool isNaNIn(Format f, uint32_t bits) { return std::isnan(nx::decode(f, bits)); }

/// Expects the kernel's `got` encoding of each value to equal the rounding
/// library's `want`, or both to be NaN; `what` names the check.
void expectSameEncoding(Format f, const std::vector<uint32_t> &got,
                        const std::vector<uint32_t> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool same = got[i] == want[i] || (isNaNIn(f, got[i]) && isNaNIn(f, want[i]));
    if (!same && ++mismatches <= 5)
      ADD_FAILURE() << what << " [" << i << "]: got 0x" << std::hex << got[i] << ", want 0x"
                    << want[i];
  }
  EXPECT_EQ(mismatches, 0u) << what;
}

/// The largest ULP distance between got[i] and want[i] in format `f`;
/// a NaN must meet a NaN (else it counts as a huge distance).
uint64_t maxUlps(Format f, const std::vector<uint32_t> &got, const std::vector<uint32_t> &want) {
  uint64_t worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool gotNaN = isNaNIn(f, got[i]), wantNaN = isNaNIn(f, want[i]);
    const uint64_t d = gotNaN || wantNaN ? (gotNaN && wantNaN ? 0 : UINT64_MAX)
                                         : ulpDistance(got[i], want[i], nx::formatBytes(f) * 8);
    worst = std::max(worst, d);
  }
  return worst;
}

/// Widens an array of narrow encodings to uint32_t for the comparisons.
template <typename T> std::vector<uint32_t> widen(const std::vector<T> &v) {
  return std::vector<uint32_t>(v.begin(), v.end());
}

/// The float bits of `v`.
std::vector<uint32_t> bitsOf(const std::vector<float> &v) {
  std::vector<uint32_t> bits;
  for (float x : v)
    bits.push_back(floatBits(x));
  return bits;
}

/// The encodings of `v` in `f` by the rounding library.
std::vector<uint32_t> encodeAll(Format f, const std::vector<float> &v, nx::RoundOptions o = {}) {
  std::vector<uint32_t> bits;
  for (float x : v)
    bits.push_back(nx::encode(f, x, o));
  return bits;
}

/// Values that reach every rounding case of the narrow formats: every BF16
/// value, every FP16 value and the midpoints between neighbours (ties),
/// specials, and random bit patterns.
std::vector<float> conversionInputs() {
  std::vector<float> v;
  for (uint32_t b = 0; b < 0x10000; ++b)
    v.push_back(bitsFloat(b << 16));
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double a = nx::f16ToFloat(static_cast<uint16_t>(h));
    const double next = nx::f16ToFloat(static_cast<uint16_t>(h + 1));
    v.push_back(static_cast<float>(a));
    v.push_back(static_cast<float>((a + next) / 2));
    v.push_back(-static_cast<float>((a + next) / 2));
  }
  for (float s : {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, 448.0f, 464.0f, 57344.0f, 61440.0f,
                  65504.0f, 65520.0f, 1e-45f, 3.0e38f})
    v.push_back(s);
  std::mt19937 random(7);
  for (int i = 0; i < 50000; ++i)
    v.push_back(bitsFloat(random()));
  return v;
}

TEST(ShimCasts, Float32ToNarrowFormatsBitForBit) {
  const Program *program = kernels("casts.cu");
  ASSERT_NE(program, nullptr);
  const std::vector<float> in = conversionInputs();
  const int n = static_cast<int>(in.size());
  Buffer<float> input(in);
  Buffer<uint16_t> f16(n), bf16(n);
  Buffer<uint8_t> e4m3(n), e5m2(n);
  std::string error;
  ASSERT_TRUE(program->launch("f32_to_narrow", {64}, {256}, 0,
                              KernelArgs()
                                  .add<const float *>(input.data())
                                  .add(reinterpret_cast<void *>(f16.data()))
                                  .add(reinterpret_cast<void *>(bf16.data()))
                                  .add(e4m3.data())
                                  .add(e5m2.data())
                                  .add(n),
                              error))
      << error;
  nx::RoundOptions satfinite;
  satfinite.saturate = true;
  expectSameEncoding(Format::F16, widen(f16.values()), encodeAll(Format::F16, in),
                     "__float2half_rn");
  expectSameEncoding(Format::BF16, widen(bf16.values()), encodeAll(Format::BF16, in),
                     "__float2bfloat16_rn");
  // Saturating FP8 equals CUDA's satfinite bit for bit, NaNs included.
  EXPECT_EQ(widen(e4m3.values()), encodeAll(Format::F8E4M3FN, in, satfinite));
  EXPECT_EQ(widen(e5m2.values()), encodeAll(Format::F8E5M2, in, satfinite));
}

TEST(ShimCasts, NarrowFormatsToFloat32BitForBit) {
  const Program *program = kernels("casts.cu");
  ASSERT_NE(program, nullptr);
  std::vector<uint16_t> patterns(0x10000);
  for (uint32_t b = 0; b < 0x10000; ++b)
    patterns[b] = static_cast<uint16_t>(b);
  Buffer<uint16_t> bits(patterns);
  Buffer<float> f16(0x10000), bf16(0x10000);
  std::string error;
  ASSERT_TRUE(program->launch("f16_bf16_to_f32", {32}, {256}, 0,
                              KernelArgs()
                                  .add<const unsigned short *>(bits.data())
                                  .add(f16.data())
                                  .add(bf16.data())
                                  .add(0x10000),
                              error))
      << error;
  std::vector<float> wantF16, wantBF16;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    wantF16.push_back(nx::f16ToFloat(static_cast<uint16_t>(b)));
    wantBF16.push_back(nx::bf16ToFloat(static_cast<uint16_t>(b)));
  }
  expectSameEncoding(Format::F32, bitsOf(f16.values()), bitsOf(wantF16), "__half2float");
  expectSameEncoding(Format::F32, bitsOf(bf16.values()), bitsOf(wantBF16), "__bfloat162float");

  std::vector<uint8_t> bytes(256);
  for (int b = 0; b < 256; ++b)
    bytes[b] = static_cast<uint8_t>(b);
  Buffer<uint8_t> fp8(bytes);
  Buffer<float> e4m3(256), e5m2(256), e4m3Class(256), e5m2Class(256);
  ASSERT_TRUE(program->launch("fp8_to_f32", {2}, {64}, 0,
                              KernelArgs()
                                  .add<const uint8_t *>(fp8.data())
                                  .add(e4m3.data())
                                  .add(e5m2.data())
                                  .add(e4m3Class.data())
                                  .add(e5m2Class.data())
                                  .add(256),
                              error))
      << error;
  std::vector<float> wantE4M3, wantE5M2;
  for (int b = 0; b < 256; ++b) {
    wantE4M3.push_back(nx::e4m3fnToFloat(static_cast<uint8_t>(b)));
    wantE5M2.push_back(nx::e5m2ToFloat(static_cast<uint8_t>(b)));
  }
  expectSameEncoding(Format::F32, bitsOf(e4m3.values()), bitsOf(wantE4M3), "E4M3 via FP16");
  expectSameEncoding(Format::F32, bitsOf(e5m2.values()), bitsOf(wantE5M2), "E5M2 via FP16");
  expectSameEncoding(Format::F32, bitsOf(e4m3Class.values()), bitsOf(wantE4M3), "__nv_fp8_e4m3");
  expectSameEncoding(Format::F32, bitsOf(e5m2Class.values()), bitsOf(wantE5M2), "__nv_fp8_e5m2");
}

TEST(ShimElementwise, VectorLoadsAndTailEqualTheCpuKernelsBitForBit) {
  const Program *program = kernels("elementwise.cu");
  ASSERT_NE(program, nullptr);
  std::mt19937 random(11);
  for (int n : {0, 7, 8, 1003, 4101}) {
    std::vector<uint16_t> x(n), y(n);
    for (int i = 0; i < n; ++i) {
      x[i] = static_cast<uint16_t>(random());
      y[i] = static_cast<uint16_t>(random());
    }
    Buffer<uint16_t> xs(x), ys(y), out(n);
    std::string error;
    ASSERT_TRUE(program->launch("mul_sub_bf16_to_f16", {4}, {128}, 0,
                                KernelArgs()
                                    .add<const void *>(xs.data())
                                    .add<const void *>(ys.data())
                                    .add<void *>(out.data())
                                    .add(n),
                                error))
        << error;
    // The CPU backend's way: decode, Mul, Sub, encode.
    std::vector<float> a(n), b(n), product(n), result(n);
    nx::decodeArray(Format::BF16, x.data(), a.data(), n);
    nx::decodeArray(Format::BF16, y.data(), b.data(), n);
    const cpu::Shape shape{n};
    cpu::binary(cpu::BinaryOp::Mul, a.data(), shape, b.data(), shape, product.data(), shape);
    cpu::binary(cpu::BinaryOp::Sub, product.data(), shape, a.data(), shape, result.data(), shape);
    expectSameEncoding(Format::F16, widen(out.values()), encodeAll(Format::F16, result),
                       "n = " + std::to_string(n));
  }
}

/// Rows of normally distributed logits.
std::vector<float> logits(int rows, int cols, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(rows) * cols);
  for (float &x : v)
    x = normal(random);
  return v;
}

TEST(ShimSoftmax, WarpAndSharedMemoryReductionsMatchTheCpuSoftmax) {
  const Program *program = kernels("softmax.cu");
  ASSERT_NE(program, nullptr);
  struct Case {
    int rows, cols;
    unsigned threads;
  };
  for (Case c : {Case{6, 1000, 256}, Case{3, 50, 64}, Case{2, 3000, 1024}, Case{4, 20, 32}}) {
    const std::vector<float> x = logits(c.rows, c.cols, c.cols);
    std::vector<float> want(x.size());
    cpu::softmax(x.data(), {c.rows, c.cols}, 1, want.data());
    Buffer<float> in(x), outF32(x.size());
    Buffer<uint16_t> outBF16(x.size());
    const size_t shared = c.cols * sizeof(float);
    const std::string name = std::to_string(c.rows) + "x" + std::to_string(c.cols);
    std::string error;
    ASSERT_TRUE(program->launch(
        "softmax_rows_f32", {unsigned(c.rows)}, {c.threads}, shared,
        KernelArgs().add<const float *>(in.data()).add(outF32.data()).add(c.cols), error))
        << error;
    ASSERT_TRUE(program->launch(
        "softmax_rows_bf16", {unsigned(c.rows)}, {c.threads}, shared,
        KernelArgs().add<const float *>(in.data()).add<void *>(outBF16.data()).add(c.cols), error))
        << error;
    // FP32 tree sums against the CPU's sequential double sum: a few ULPs.
    EXPECT_LE(maxUlps(Format::F32, bitsOf(outF32.values()), bitsOf(want)), 4u) << name;
    // Rounded to BF16 that is at most one BF16 step, at a rounding boundary.
    EXPECT_LE(maxUlps(Format::BF16, widen(outBF16.values()), encodeAll(Format::BF16, want)), 1u)
        << name;
  }
}

/// The CPU backend's amax: max |x|, NaN if any element is NaN.
float cpuAmax(const std::vector<float> &x) {
  float acc = 0.0f;
  for (float v : x)
    acc = std::isnan(v) || std::isnan(acc) ? kNaN : std::max(acc, std::fabs(v));
  return acc;
}

/// Quantizes `x` with the kernel for `f` and checks bytes and amax.
void checkQuantize(Format f, const std::vector<float> &x, float scale) {
  const Program *program = kernels("quantize.cu");
  ASSERT_NE(program, nullptr);
  const int n = static_cast<int>(x.size());
  Buffer<float> in(x), scaleBuffer(std::vector<float>{scale});
  Buffer<uint8_t> out(n);
  Buffer<unsigned> amax(1);
  std::string error;
  ASSERT_TRUE(program->launch(f == Format::F8E4M3FN ? "quantize_e4m3" : "quantize_e5m2", {8}, {128},
                              0,
                              KernelArgs()
                                  .add<const float *>(in.data())
                                  .add<const float *>(scaleBuffer.data())
                                  .add(out.data())
                                  .add(amax.data())
                                  .add(n),
                              error))
      << error;
  std::vector<float> quantized(n);
  nx::quantizeFp8Array(f, x.data(), scale, quantized.data(), n);
  expectSameEncoding(f, widen(out.values()), encodeAll(f, quantized),
                     std::string(nx::formatName(f)) + " scale " + std::to_string(scale));
  const float want = cpuAmax(x), got = bitsFloat(amax[0]);
  if (std::isnan(want))
    EXPECT_TRUE(std::isnan(got)) << got;
  else
    EXPECT_EQ(floatBits(got), floatBits(want));
}

TEST(ShimQuantize, SatfiniteFp8AndInKernelAmaxMatchTheCpuBackend) {
  std::vector<float> x = logits(1, 5003, 5);
  for (float &v : x)
    v *= 20.0f;
  x[17] = 1e30f;
  x[18] = -1e30f;
  x[19] = 1e-40f;
  x[20] = -0.0f;
  const float amax = cpuAmax(x);
  for (Format f : {Format::F8E4M3FN, Format::F8E5M2}) {
    checkQuantize(f, x, nx::fp8Scale(f, amax, 0));
    // A large scale saturates most values at the largest finite value.
    checkQuantize(f, x, 7.5f);
  }
}

TEST(ShimQuantize, NonFiniteValuesAndScalesGiveNaN) {
  std::vector<float> x = logits(1, 700, 6);
  x[3] = kInf;
  checkQuantize(Format::F8E4M3FN, x, 1.0f); // amax inf, the inf quantizes to NaN
  x[5] = -kNaN;
  checkQuantize(Format::F8E4M3FN, x, 1.0f); // amax NaN
  checkQuantize(Format::F8E5M2, x, 1.0f);
  x[3] = 1.0f;
  x[5] = 2.0f;
  checkQuantize(Format::F8E4M3FN, x, kInf);
  checkQuantize(Format::F8E5M2, x, kNaN);
}

TEST(ShimGelu, TanhGeluCastToFp16MatchesTheCpuKernel) {
  const Program *program = kernels("gelu.cu");
  ASSERT_NE(program, nullptr);
  std::mt19937 random(9);
  std::uniform_real_distribution<float> uniform(-12.0f, 12.0f);
  std::vector<float> x(4099);
  for (float &v : x)
    v = uniform(random);
  const std::vector<float> specials = {0.0f, -0.0f, kInf, -kInf, kNaN, 1e20f, -1e20f, 1e-30f};
  std::copy(specials.begin(), specials.end(), x.begin());
  const int n = static_cast<int>(x.size());
  Buffer<float> in(x);
  Buffer<uint16_t> out(n);
  std::string error;
  ASSERT_TRUE(program->launch(
      "gelu_tanh_f16", {16}, {128}, 0,
      KernelArgs().add<const float *>(in.data()).add<void *>(out.data()).add(n), error))
      << error;
  std::vector<float> want(n);
  cpu::unary(cpu::UnaryOp::GeluTanh, x.data(), want.data(), n);
  // expf is the transcendental: a few ULPs before the cast, at most one FP16
  // step after it.
  EXPECT_LE(maxUlps(Format::F16, widen(out.values()), encodeAll(Format::F16, want)), 1u);
}

TEST(ShimMath, MathFunctionsMatchTheCpuKernels) {
  const Program *program = kernels("math.cu");
  ASSERT_NE(program, nullptr);
  std::vector<float> x = {0.0f,   -0.0f, kInf,  -kInf, kNaN,  1e-45f,  -1e-45f,
                          1e-38f, 0.5f,  -0.5f, 88.0f, 89.0f, -104.0f, 3e38f};
  std::mt19937 random(3);
  std::uniform_real_distribution<float> wide(-30.0f, 30.0f);
  for (int i = 0; i < 3000; ++i)
    x.push_back(wide(random));
  for (int i = 0; i < 1000; ++i)
    x.push_back(bitsFloat(random()));
  const int n = static_cast<int>(x.size());
  Buffer<float> in(x), out(19 * static_cast<size_t>(n));
  std::string error;
  ASSERT_TRUE(program->launch("math_f32", {8}, {128}, 0,
                              KernelArgs().add<const float *>(in.data()).add(out.data()).add(n),
                              error))
      << error;
  const std::vector<uint32_t> all = bitsOf(out.values());
  auto plane = [&](int k) {
    return std::vector<uint32_t>(all.begin() + k * n, all.begin() + (k + 1) * n);
  };
  auto cpuUnary = [&](cpu::UnaryOp op) {
    std::vector<float> y(n);
    cpu::unary(op, x.data(), y.data(), n);
    return bitsOf(y);
  };
  const struct {
    int plane;
    cpu::UnaryOp op;
    const char *name;
  } transcendental[] = {{0, cpu::UnaryOp::Exp, "expf"},   {1, cpu::UnaryOp::Log, "logf"},
                        {2, cpu::UnaryOp::Tanh, "tanhf"}, {3, cpu::UnaryOp::Erf, "erff"},
                        {4, cpu::UnaryOp::Sqrt, "sqrtf"}, {5, cpu::UnaryOp::Rsqrt, "rsqrtf"}};
  for (const auto &t : transcendental)
    EXPECT_LE(maxUlps(Format::F32, plane(t.plane), cpuUnary(t.op)), 2u) << t.name;
  std::vector<float> fmax, fmin, fabs, isnan, isinf, negated, sum, difference, product, quotient,
      fma, unfused;
  for (float v : x) {
    sum.push_back(v + 0.1f);
    difference.push_back(v - 0.1f);
    product.push_back(v * 0.1f);
    quotient.push_back(v / 0.1f);
    fma.push_back(std::fma(v, v, 0.1f));
    const float square = v * v;
    unfused.push_back(square + 0.1f);
    fmax.push_back(std::fmax(v, 0.5f));
    fmin.push_back(std::fmin(v, 0.5f));
    fabs.push_back(std::fabs(v));
    isnan.push_back(std::isnan(v) ? 1.0f : 0.0f);
    isinf.push_back(std::isinf(v) ? 1.0f : 0.0f);
    negated.push_back(bitsFloat(floatBits(v) ^ 0x80000000u));
  }
  EXPECT_EQ(plane(6), bitsOf(fmax));
  EXPECT_EQ(plane(7), bitsOf(fmin));
  EXPECT_EQ(plane(8), bitsOf(fabs));
  EXPECT_EQ(plane(9), bitsOf(isnan));
  EXPECT_EQ(plane(10), bitsOf(isinf));
  EXPECT_EQ(plane(11), bitsOf(negated));
  EXPECT_EQ(plane(12), bitsOf(fabs));
  EXPECT_EQ(plane(13), bitsOf(sum));
  EXPECT_EQ(plane(14), bitsOf(difference));
  EXPECT_EQ(plane(15), bitsOf(product));
  EXPECT_EQ(plane(16), bitsOf(quotient));
  EXPECT_EQ(plane(17), bitsOf(fma));
  EXPECT_EQ(plane(18), bitsOf(unfused));
}

// ---- Races --------------------------------------------------------------------------

/// Row sums of `rows` x `threads` integer-valued floats (exact in any
/// order) by `kernel`, one block per row.
std::vector<float> blockSums(const std::string &kernel, const std::vector<float> &x, unsigned rows,
                             unsigned threads, bool reverse) {
  const Program *program = kernels("reduce.cu");
  if (program == nullptr)
    return {};
  Buffer<float> in(x), out(rows);
  LaunchOptions options;
  options.reverseThreadOrder = reverse;
  std::string error;
  EXPECT_TRUE(program->launch(kernel, {rows}, {threads}, 0,
                              KernelArgs().add<const float *>(in.data()).add(out.data()), error,
                              options))
      << error;
  return out.values();
}

/// Integer values in [-50, 50].
std::vector<float> smallIntegers(size_t count) {
  std::mt19937 random(13);
  std::vector<float> v(count);
  for (float &x : v)
    x = static_cast<float>(static_cast<int>(random() % 101) - 50);
  return v;
}

TEST(ShimRaces, ABlockReductionWithItsBarriersIsExactInBothThreadOrders) {
  for (unsigned threads : {256u, 1024u}) {
    const unsigned rows = 7;
    const std::vector<float> x = smallIntegers(rows * threads);
    std::vector<float> want(rows);
    cpu::reduce(cpu::ReduceOp::Sum, x.data(), {rows, threads}, {1}, false, want.data());
    EXPECT_EQ(blockSums("block_sum", x, rows, threads, false), want) << threads;
    EXPECT_EQ(blockSums("block_sum", x, rows, threads, true), want) << threads;
  }
}

TEST(ShimRaces, AMissingSyncthreadsMakesTheReductionWrong) {
  const unsigned rows = 7, threads = 256;
  const std::vector<float> x = smallIntegers(rows * threads);
  std::vector<float> want(rows);
  cpu::reduce(cpu::ReduceOp::Sum, x.data(), {rows, threads}, {1}, false, want.data());
  // Thread 0 adds partial[128] before thread 128 has written it.
  const std::vector<float> forward = blockSums("block_sum_missing_sync", x, rows, threads, false);
  const std::vector<float> reverse = blockSums("block_sum_missing_sync", x, rows, threads, true);
  for (unsigned r = 0; r < rows; ++r)
    EXPECT_NE(forward[r], want[r]) << "row " << r;
  // The two orders disagree: how a test finds such a race without knowing
  // the right answer.
  EXPECT_NE(forward, reverse);
}

} // namespace
} // namespace mixprec::cudashim::test
