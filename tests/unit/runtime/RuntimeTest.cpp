//===- RuntimeTest.cpp - load, query, bind, run: results vs the reference ===//
//
// Every plan here is also computed with the reference kernels
// (runtime/kernels/Kernels.h) and numerics::roundTo, the way the reference
// interpreter computes the same op sequence: values that pass through the
// same rounding points must match bit for bit. Only the softmax built from
// RowMax/RowSum differs in summation (FP32 in the kernel, double in
// cpu::softmax) and is compared with a tolerance.
//
//===----------------------------------------------------------------------===//
#include "common/numerics/Rounding.h"
#include "runtime/kernels/Kernels.h"
#include "tests/unit/runtime/RowSumOrder.h"
#include "tests/unit/runtime/TestModules.h"
#include "tests/unit/runtime/TestUtil.h"

#include <cmath>
#include <limits>
#include <thread>

namespace mixprec::testing {
namespace {

namespace cpu = mixprec::runtime::cpu;
namespace num = mixprec::numerics;
using num::Format;

std::vector<float> rounded(Format f, std::vector<float> v, bool saturate = false) {
  num::RoundOptions o;
  o.saturate = saturate;
  num::roundArray(f, v.data(), v.data(), v.size(), o);
  return v;
}

std::vector<float> copyOut(Session &session, size_t index) {
  std::vector<float> out;
  Status s = session.copyOutput(index, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

//===----------------------------------------------------------------------===//
// Versions and queries
//===----------------------------------------------------------------------===//

TEST(RuntimeApi, Versions) {
  EXPECT_STREQ(mixprec_runtime_version(), "0.1.0");
  EXPECT_EQ(mixprec_schema_version(), 4u);
  EXPECT_STREQ(mixprec_status_code_name(MIXPREC_SIDE_FILE_ERROR), "SIDE_FILE_ERROR");
  EXPECT_STREQ(mixprec_dtype_name(MIXPREC_DTYPE_F8E4M3FN), "f8E4M3FN");
  EXPECT_EQ(mixprec_dtype_size(MIXPREC_DTYPE_I64), 8u);
  EXPECT_EQ(mixprec_dtype_size(static_cast<mixprec_dtype_t>(99)), 0u);
  EXPECT_EQ(mixprec_status_code(nullptr), MIXPREC_OK);
  EXPECT_STREQ(mixprec_status_message(nullptr), "OK");
}

TEST(RuntimeApi, QueriesInputsAndOutputs) {
  Module module;
  ASSERT_OK(loadBuilt(mlpBuilder(false).build(), module));
  EXPECT_EQ(module.schemaVersion(), 2u);
  EXPECT_STREQ(module.producer(), "mixprec tests");
  ASSERT_EQ(module.inputCount(), 1u);
  ASSERT_EQ(module.outputCount(), 5u);
  mixprec_tensor_info_t info;
  ASSERT_OK(module.inputInfo(0, info));
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, MIXPREC_DTYPE_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.dims[0], 5);
  EXPECT_EQ(info.dims[1], 24);
  EXPECT_EQ(info.element_count, 120u);
  EXPECT_EQ(info.byte_size, 480u);
  ASSERT_OK(module.outputInfo(2, info));
  EXPECT_STREQ(info.name, "hidden");
  EXPECT_EQ(info.dtype, MIXPREC_DTYPE_BF16);
  EXPECT_EQ(info.byte_size, 5u * 32 * 2);
  ASSERT_OK(module.outputInfo(4, info));
  EXPECT_EQ(info.rank, 1u);
  size_t index = 0;
  ASSERT_OK(module.findOutput("logits", index));
  EXPECT_EQ(index, 1u);
  Status s = module.findInput("y", index);
  EXPECT_EQ(s.code(), MIXPREC_NOT_FOUND);
  EXPECT_NE(std::string(s.message()).find("'y'"), std::string::npos) << s.message();
  EXPECT_NE(std::string(s.message()).find("x"), std::string::npos) << s.message();
  EXPECT_EQ(module.outputInfo(5, info).code(), MIXPREC_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// The MLP plan against the reference kernels
//===----------------------------------------------------------------------===//

TEST(CpuBackend, MlpMatchesReference) {
  using MM = MlpModel;
  const MlpModel model = mlpModel();
  Module module;
  Session session;
  openCpu(mlpBuilder(false).build(), module, session);
  ASSERT_EQ(session.backend(), MIXPREC_BACKEND_CPU);

  const std::vector<float> x = seededFloats(MM::kBatch * MM::kIn, 99, -3, 3);
  ASSERT_OK(session.bindInput("x", {MM::kBatch, MM::kIn}, x.data()));
  ASSERT_OK(session.run());

  // Reference, op by op, rounding where the plan stores.
  std::vector<float> xs(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    float v = x[i] * 0.5f;
    xs[i] = v + 0.25f;
  }
  xs = rounded(Format::BF16, xs);
  std::vector<float> h(MM::kBatch * MM::kHidden);
  cpu::linear(xs.data(), {MM::kBatch, MM::kIn}, model.w1.data(), {MM::kIn, MM::kHidden}, false,
              model.b1.data(), {MM::kHidden}, h.data(), {MM::kBatch, MM::kHidden});
  cpu::unary(cpu::UnaryOp::Relu, h.data(), h.data(), static_cast<int64_t>(h.size()));
  h = rounded(Format::BF16, h);
  std::vector<float> logits(MM::kBatch * MM::kOut);
  cpu::linear(h.data(), {MM::kBatch, MM::kHidden}, model.w2.data(), {MM::kOut, MM::kHidden}, true,
              model.b2.data(), {MM::kOut}, logits.data(), {MM::kBatch, MM::kOut});
  std::vector<float> probs(logits.size());
  cpu::softmax(logits.data(), {MM::kBatch, MM::kOut}, 1, probs.data());
  std::vector<float> rowMax(MM::kBatch, -std::numeric_limits<float>::infinity());
  for (int64_t r = 0; r < MM::kBatch; ++r)
    for (int64_t c = 0; c < MM::kOut; ++c)
      rowMax[r] = std::max(rowMax[r], logits[r * MM::kOut + c]);

  EXPECT_TRUE(bitEqual(copyOut(session, 3), xs));
  EXPECT_TRUE(bitEqual(copyOut(session, 2), h));
  EXPECT_TRUE(bitEqual(copyOut(session, 1), logits));
  EXPECT_TRUE(bitEqual(copyOut(session, 4), rowMax));
  const std::vector<float> got = copyOut(session, 0);
  ASSERT_EQ(got.size(), probs.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], probs[i], 2e-7f) << "probs[" << i << "]";

  // The raw output is the bf16 bit pattern of the same values.
  const void *data = nullptr;
  size_t bytes = 0;
  ASSERT_OK(session.outputData(2, data, bytes));
  ASSERT_EQ(bytes, h.size() * 2);
  const uint16_t *raw = static_cast<const uint16_t *>(data);
  for (size_t i = 0; i < h.size(); ++i)
    ASSERT_EQ(raw[i], num::floatToBF16(h[i])) << i;

  // Runs again on new inputs, and from the side-file variant identically.
  const std::vector<float> x2 = seededFloats(x.size(), 7, -1, 1);
  ASSERT_OK(session.bindInput("x", {MM::kBatch, MM::kIn}, x2.data()));
  ASSERT_OK(session.run());
  const std::vector<float> first = copyOut(session, 0);
  Module external;
  Session externalSession;
  openCpu(mlpBuilder(true).build(), external, externalSession);
  ASSERT_OK(externalSession.bindInput("x", {MM::kBatch, MM::kIn}, x2.data()));
  ASSERT_OK(externalSession.run());
  EXPECT_TRUE(bitEqual(copyOut(externalSession, 0), first));
}

//===----------------------------------------------------------------------===//
// Storage rounding
//===----------------------------------------------------------------------===//

/// Values around every rounding hazard: ties, subnormals of each format,
/// overflow, infinities, NaN, signed zeros.
std::vector<float> hazardValues() {
  std::vector<float> v = {0.0f,       -0.0f,     1.0f,        -1.5f,    1.00390625f, 1.01171875f,
                          65504.0f,   65520.0f,  65536.0f,    448.0f,   464.0f,      500.0f,
                          57344.0f,   61440.0f,  1e-8f,       -6e-8f,   3e-5f,       1e-40f,
                          3.4e38f,    -3.4e38f,  std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(), 0.1f, 1.0f / 3.0f};
  std::vector<float> more = seededFloats(103, 5, -70000, 70000);
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

TEST(CpuBackend, StoresRoundExactlyToEveryFloatDtype) {
  const std::vector<float> values = hazardValues();
  const int64_t n = static_cast<int64_t>(values.size());
  ModuleBuilder b;
  const int in = b.input("in", fb::DType::F32, {n});
  const fb::DType dtypes[] = {fb::DType::BF16, fb::DType::F16, fb::DType::F8E4M3FN,
                              fb::DType::F8E5M2};
  std::vector<int> outs;
  KernelSpec &k = b.kernel("round", {n}, 0);
  // One multiply in FP32 registers, then one rounding per store.
  int v = k.binary(fb::OpCode::Mul, k.load(in, {1}), k.constant(1.0f));
  for (fb::DType d : dtypes) {
    outs.push_back(b.activation(fb::EnumNameDType(d), d, {n}));
    b.kernels.back().store(outs.back(), v, {1}, d);
  }
  for (int o : outs)
    b.output(o);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("in", {n}, values.data()));
  ASSERT_OK(session.run());
  for (size_t o = 0; o < outs.size(); ++o) {
    const fb::DType d = dtypes[o];
    const Format f = static_cast<Format>(d);
    num::RoundOptions opts;
    opts.saturate = d == fb::DType::F8E4M3FN || d == fb::DType::F8E5M2; // FP8 stores saturate
    const void *data = nullptr;
    size_t bytes = 0;
    ASSERT_OK(session.outputData(o, data, bytes));
    for (int64_t i = 0; i < n; ++i) {
      uint32_t got = 0;
      std::memcpy(&got, static_cast<const uint8_t *>(data) + i * num::formatBytes(f),
                  num::formatBytes(f));
      EXPECT_EQ(got, num::encode(f, values[i], opts))
          << num::formatName(f) << " of " << values[i];
    }
  }
  // FP8 saturates: 500 -> 448 (E4M3FN), inf -> 57344 (E5M2).
  std::vector<float> e4m3 = copyOut(session, 2), e5m2 = copyOut(session, 3);
  EXPECT_EQ(e4m3[11], 448.0f);
  EXPECT_EQ(e5m2[20], 57344.0f);
}

TEST(CpuBackend, BindingF32RoundsToTheInputDtype) {
  ModuleBuilder b;
  const int in = b.input("in", fb::DType::BF16, {4});
  const int out = b.activation("out", fb::DType::F32, {4});
  KernelSpec &k = b.kernel("copy", {4}, 0);
  k.store(out, k.load(in, {1}), {1}, fb::DType::F32);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  const std::vector<float> x = {1.00390625f, 1.01171875f, 3e38f, -1e-40f};
  ASSERT_OK(session.bindInput("in", {4}, x.data()));
  ASSERT_OK(session.run());
  EXPECT_TRUE(bitEqual(copyOut(session, 0), rounded(Format::BF16, x)));
  // The bf16 bits themselves bind as they are.
  std::vector<uint16_t> bits = {0x3f80, 0xc000, 0x7f80, 0x0001};
  ASSERT_OK(session.bindInputAt(0, MIXPREC_DTYPE_BF16, {4}, bits.data(), 8));
  ASSERT_OK(session.run());
  std::vector<float> want;
  for (uint16_t u : bits)
    want.push_back(num::bf16ToFloat(u));
  EXPECT_TRUE(bitEqual(copyOut(session, 0), want));
}

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

TEST(CpuBackend, Fp8ScaledGemmMatchesCublasLtEpilogue) {
  const int64_t m = 6, n = 16, k = 32;
  const float scaleA = 8.0f, scaleB = 0.25f;
  // Quantized operands as the graph holds them: x * scale rounded to E4M3.
  std::vector<float> a = seededFloats(m * k, 31, -60, 60);
  std::vector<float> w = rounded(Format::F8E4M3FN, seededFloats(n * k, 32, -400, 400), true);
  std::vector<float> bias = rounded(Format::BF16, seededFloats(n, 33, -2, 2));
  ModuleBuilder b;
  const int ta = b.input("a", fb::DType::F8E4M3FN, {m, k});
  const int tw = b.constantFloats("w", fb::DType::F8E4M3FN, {n, k}, w);
  const int tb = b.constantFloats("bias", fb::DType::BF16, {n}, bias);
  const int sa = b.constantFloats("a_scale", fb::DType::F32, {}, {scaleA});
  const int sb = b.constantFloats("b_scale", fb::DType::F32, {1}, {scaleB});
  const int out = b.activation("out", fb::DType::BF16, {m, n});
  GemmSpec g;
  g.name = "fp8";
  g.a = ta;
  g.b = tw;
  g.bias = tb;
  g.out = out;
  g.m = m;
  g.n = n;
  g.k = k;
  g.transB = true;
  g.epilogue = fb::Epilogue::BiasGelu;
  g.aScale = sa;
  g.bScale = sb;
  b.gemm(g);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("a", {m, k}, a.data())); // rounded (saturating) at bind
  ASSERT_OK(session.run());

  const std::vector<float> aq = rounded(Format::F8E4M3FN, a, true);
  std::vector<float> acc(m * n);
  cpu::linear(aq.data(), {m, k}, w.data(), {n, k}, true, nullptr, {}, acc.data(), {m, n});
  const float factor = (1.0f / scaleA) * (1.0f / scaleB);
  for (float &v : acc)
    v *= factor;
  cpu::binary(cpu::BinaryOp::Add, acc.data(), {m, n}, bias.data(), {n}, acc.data(), {m, n});
  cpu::unary(cpu::UnaryOp::GeluTanh, acc.data(), acc.data(), m * n); // cuBLASLt's GELU
  EXPECT_TRUE(bitEqual(copyOut(session, 0), rounded(Format::BF16, acc)));
}

TEST(CpuBackend, Tf32GemmRoundsOperands) {
  const int64_t m = 7, n = 9, k = 33;
  std::vector<float> a = seededFloats(m * k, 41, -1, 1), w = seededFloats(k * n, 42, -1, 1);
  ModuleBuilder b;
  const int ta = b.input("a", fb::DType::F32, {m, k});
  const int tw = b.constantFloats("w", fb::DType::F32, {k, n}, w);
  const int out = b.activation("out", fb::DType::F32, {m, n});
  GemmSpec g;
  g.a = ta;
  g.b = tw;
  g.out = out;
  g.m = m;
  g.n = n;
  g.k = k;
  g.tf32 = true;
  b.gemm(g);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("a", {m, k}, a.data()));
  ASSERT_OK(session.run());
  for (float &v : a)
    v = num::roundToTf32(v);
  for (float &v : w)
    v = num::roundToTf32(v);
  std::vector<float> want(m * n);
  cpu::matmul(a.data(), {m, k}, w.data(), {k, n}, want.data(), {m, n});
  EXPECT_TRUE(bitEqual(copyOut(session, 0), want));
}

TEST(CpuBackend, BatchedGemmWithBroadcastOperand) {
  // out[b] = a @ w[b]: a shared (stride 0), w batched: one GEMM per batch,
  // as cpu::matmul does for [M,K] @ [B,K,N].
  const int64_t batch = 3, m = 4, n = 5, k = 6;
  std::vector<float> a = seededFloats(m * k, 51, -1, 1), w = seededFloats(batch * k * n, 52, -1, 1);
  ModuleBuilder b;
  const int ta = b.input("a", fb::DType::F32, {m, k});
  const int tw = b.input("w", fb::DType::F32, {batch, k, n});
  const int out = b.activation("out", fb::DType::F16, {batch, m, n});
  GemmSpec g;
  g.a = ta;
  g.b = tw;
  g.out = out;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.strideA = 0;
  g.strideB = k * n;
  g.strideOut = m * n;
  g.epilogue = fb::Epilogue::Relu;
  b.gemm(g);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("a", {m, k}, a.data()));
  ASSERT_OK(session.bindInput("w", {batch, k, n}, w.data()));
  ASSERT_OK(session.run());
  std::vector<float> want(batch * m * n);
  cpu::matmul(a.data(), {m, k}, w.data(), {batch, k, n}, want.data(), {batch, m, n});
  cpu::unary(cpu::UnaryOp::Relu, want.data(), want.data(), batch * m * n);
  EXPECT_TRUE(bitEqual(copyOut(session, 0), rounded(Format::F16, want)));
}

//===----------------------------------------------------------------------===//
// Kernels: iteration spaces, rows, reductions
//===----------------------------------------------------------------------===//

/// v[begin], v[begin + stride], ... summed in the kernels' RowSum order.
float rowSum(const std::vector<float> &v, size_t begin, size_t count, size_t stride) {
  return rowSumInLanes(static_cast<int64_t>(count),
                       [&](int64_t p) { return v[begin + static_cast<size_t>(p) * stride]; });
}

TEST(CpuBackend, ALoadAStoreOverwritesIsCopiedNotReadInPlace) {
  // x + 1 stored over x itself (an in-place kernel, as the arena planner
  // lays out a dead input), then 2x stored to z: the second use of the
  // Load must see x as loaded, not the Store's x + 1 (FP32 Loads are read
  // in place only where no Store of the kernel shares their bytes). Rows
  // of 5000: several pieces.
  const int64_t n = 5000;
  const std::vector<float> x = seededFloats(n, 41, -10, 10);
  ModuleBuilder b;
  const int in = b.input("x", fb::DType::F32, {n});
  const int y = b.activation("y", fb::DType::F32, {n});
  const int z = b.activation("z", fb::DType::F32, {n});
  KernelSpec &k = b.kernel("in_place", {n}, 0);
  const int v = k.load(in, {1});
  k.store(y, k.binary(fb::OpCode::Add, v, k.constant(1.0f)), {1}, fb::DType::F32);
  k.store(z, k.binary(fb::OpCode::Mul, v, k.constant(2.0f)), {1}, fb::DType::F32);
  b.output(y);
  b.output(z);
  b.build(); // offsets assigned; then y laid over x
  b.tensors[size_t(y)].offset = b.tensors[size_t(in)].offset;
  Module module;
  Session session;
  openCpu(b.build(/*keepOffsets=*/true), module, session);
  ASSERT_OK(session.bindInput("x", {n}, x.data()));
  ASSERT_OK(session.run());
  std::vector<float> wantY(n), wantZ(n);
  for (int64_t i = 0; i < n; ++i)
    wantY[i] = x[i] + 1.0f, wantZ[i] = x[i] * 2.0f;
  EXPECT_TRUE(bitEqual(copyOut(session, 0), wantY));
  EXPECT_TRUE(bitEqual(copyOut(session, 1), wantZ));
}

TEST(CpuBackend, PermutedIterationSpaceReducesALeadingAxis) {
  // sum over axis 0 of x[6,7]: space [7,6], rows walk x's columns.
  const int64_t r = 6, c = 7;
  const std::vector<float> x = seededFloats(r * c, 61, -5, 5);
  ModuleBuilder b;
  const int in = b.input("x", fb::DType::F32, {r, c});
  const int out = b.activation("sum", fb::DType::F32, {c});
  KernelSpec &k = b.kernel("colsum", {c, r}, 1);
  k.store(out, k.unary(fb::OpCode::RowSum, k.load(in, {1, c})), {1, 0}, fb::DType::F32);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("x", {r, c}, x.data()));
  ASSERT_OK(session.run());
  std::vector<float> want(c);
  for (int64_t j = 0; j < c; ++j)
    want[j] = rowSum(x, j, r, c);
  EXPECT_TRUE(bitEqual(copyOut(session, 0), want));
}

TEST(CpuBackend, RowReductionsKeepTheirLanesAcrossPieces) {
  // Rows of 3 runs of 4099 points, each run one point short of its
  // tensor's (stride 4100: the row dims do not merge): longer than a
  // piece, so a row is cut into slices of whole-run parts whose pieces
  // start at row positions that are not multiples of the 16 lanes. The
  // sums' bits are the lane order's; the max is the max, and a NaN in a
  // row gives NaN.
  const int64_t rows = 2, runs = 3, len = 4099, pitch = len + 1, points = runs * len;
  std::vector<float> x = seededFloats(rows * runs * pitch, 83, -3, 3);
  x[runs * pitch + 5000] = std::numeric_limits<float>::quiet_NaN(); // row 1
  x[1234] = 9.0f;                                                   // row 0's max
  ModuleBuilder b;
  const int in = b.input("x", fb::DType::F32, {rows, runs, pitch});
  const int sums = b.activation("sums", fb::DType::F32, {rows});
  const int maxes = b.activation("maxes", fb::DType::F32, {rows});
  KernelSpec &k = b.kernel("reduce", {rows, runs, len}, 2);
  const int v = k.load(in, {runs * pitch, pitch, 1});
  k.store(sums, k.unary(fb::OpCode::RowSum, v), {1, 0, 0}, fb::DType::F32);
  k.store(maxes, k.unary(fb::OpCode::RowMax, v), {1, 0, 0}, fb::DType::F32);
  b.output(sums);
  b.output(maxes);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("x", {rows, runs, pitch}, x.data()));
  ASSERT_OK(session.run());
  std::vector<float> want(rows);
  for (int64_t r = 0; r < rows; ++r)
    want[r] =
        rowSumInLanes(points, [&](int64_t p) { return x[(r * runs + p / len) * pitch + p % len]; });
  EXPECT_TRUE(bitEqual(copyOut(session, 0), want));
  const std::vector<float> got = copyOut(session, 1);
  EXPECT_EQ(got[0], 9.0f);
  EXPECT_TRUE(std::isnan(got[1]));
}

TEST(CpuBackend, LongRowsSpanSeveralPieces) {
  // Rows longer than the register arrays: RowMax/RowSum accumulate across
  // pieces, and the final pass recomputes exp per piece.
  const int64_t rows = 3, len = 2000;
  const std::vector<float> x = seededFloats(rows * len, 71, -20, 20);
  ModuleBuilder b;
  const int in = b.input("x", fb::DType::F32, {rows, len});
  const int out = b.activation("y", fb::DType::F32, {rows, len});
  const int sums = b.activation("sums", fb::DType::F32, {rows});
  KernelSpec &k = b.kernel("softmax", {rows, len}, 1);
  const Shape dense = denseStrides({rows, len});
  int l = k.load(in, dense);
  int e = k.unary(fb::OpCode::Exp, k.binary(fb::OpCode::Sub, l, k.unary(fb::OpCode::RowMax, l)));
  int s = k.unary(fb::OpCode::RowSum, e);
  k.store(out, k.binary(fb::OpCode::Div, e, s), dense, fb::DType::F32);
  k.store(sums, s, {1, 0}, fb::DType::F32);
  b.output(out);
  b.output(sums);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("x", {rows, len}, x.data()));
  ASSERT_OK(session.run());
  std::vector<float> want(x.size());
  cpu::softmax(x.data(), {rows, len}, 1, want.data());
  const std::vector<float> got = copyOut(session, 0);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-6f * std::max(1.0f, want[i] * 1e3f)) << i;
  // The row sums, exactly: exp of (x - max) summed in the RowSum order,
  // its lanes carried from piece to piece.
  std::vector<float> sumWant(rows);
  for (int64_t r = 0; r < rows; ++r) {
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < len; ++i)
      mx = std::max(mx, x[r * len + i]);
    sumWant[r] = rowSumInLanes(len, [&](int64_t i) { return std::exp(x[r * len + i] - mx); });
  }
  EXPECT_TRUE(bitEqual(copyOut(session, 1), sumWant));
}

TEST(CpuBackend, ManyShortRunsWithTransposedAccess) {
  // y[a,b,c] = x[a,c,b] + bias[c]: the transposed load keeps the dims apart,
  // so pieces hold many short runs.
  const int64_t A = 3, B = 4, C = 5;
  const std::vector<float> x = seededFloats(A * C * B, 81, -1, 1);
  const std::vector<float> bias = seededFloats(C, 82, -1, 1);
  ModuleBuilder b;
  const int in = b.input("x", fb::DType::F32, {A, C, B});
  const int tb = b.constantFloats("bias", fb::DType::F32, {C}, bias);
  const int out = b.activation("y", fb::DType::BF16, {A, B, C});
  KernelSpec &k = b.kernel("transpose_add", {A, B, C}, 0);
  int v = k.binary(fb::OpCode::Add, k.load(in, {C * B, 1, B}), k.load(tb, {0, 0, 1}));
  k.store(out, v, denseStrides({A, B, C}), fb::DType::BF16);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("x", {A, C, B}, x.data()));
  ASSERT_OK(session.run());
  std::vector<float> want(A * B * C);
  for (int64_t a = 0; a < A; ++a)
    for (int64_t i = 0; i < B; ++i)
      for (int64_t c = 0; c < C; ++c)
        want[(a * B + i) * C + c] = x[(a * C + c) * B + i] + bias[c];
  EXPECT_TRUE(bitEqual(copyOut(session, 0), rounded(Format::BF16, want)));
}

TEST(CpuBackend, EmptyRowsStoreTheReductionIdentity) {
  // x[2,3,4] sliced to e[2,3,0], then reduced over the empty axis: every
  // output element is the identity (issue 7: the kernel ran no point and
  // left what the arena held, here 7s a filler kernel wrote first).
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {2, 3});
  const int e = b.activation("e", fb::DType::F32, {2, 3, 0});
  const int sum = b.activation("sum", fb::DType::F32, {2, 3});
  const int max = b.activation("max", fb::DType::BF16, {2, 3});
  const int shifted = b.activation("shifted", fb::DType::F32, {2, 3});
  const int amax = b.activation("amax", fb::DType::F32, {});
  const int amaxAll = b.activation("amax_all", fb::DType::F32, {});
  KernelSpec &fill = b.kernel("fill", {2, 3}, 0);
  for (int t : {sum, max, shifted})
    fill.store(t, fill.constant(7.0f), {3, 1}, b.tensors[t].dtype);
  fill.store(amax, fill.constant(7.0f), {0, 0}, fb::DType::F32);
  fill.store(amaxAll, fill.constant(7.0f), {0, 0}, fb::DType::F32);
  KernelSpec &k = b.kernel("reduce_empty", {2, 3, 0}, 1);
  const int v = k.load(e, {0, 0, 1});
  k.store(sum, k.unary(fb::OpCode::RowSum, v), {3, 1, 0}, fb::DType::F32);
  k.store(max, k.unary(fb::OpCode::RowMax, v), {3, 1, 0}, fb::DType::BF16);
  // A row value combined with an outer load, and a Store that walks the
  // (empty) row, which must not run.
  const int s = k.binary(fb::OpCode::Add, k.unary(fb::OpCode::RowSum, v), k.load(x, {3, 1, 0}));
  k.store(shifted, s, {3, 1, 0}, fb::DType::F32);
  k.store(e, k.binary(fb::OpCode::Sub, v, s), {0, 0, 1}, fb::DType::F32);
  k.store(amax, k.unary(fb::OpCode::Amax, v), {0, 0, 0}, fb::DType::F32);
  // A space with no outer point either: only the Amax is written.
  KernelSpec &all = b.kernel("amax_empty", {0, 3}, 0);
  all.store(amaxAll, all.unary(fb::OpCode::Amax, all.load(e, {0, 0})), {0, 0}, fb::DType::F32);
  for (int t : {sum, max, shifted, amax, amaxAll})
    b.output(t);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  const std::vector<float> xs = {1, 2, 3, 4, 5, 6};
  ASSERT_OK(session.bindInput("x", {2, 3}, xs.data()));
  ASSERT_OK(session.run());
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(bitEqual(copyOut(session, 0), std::vector<float>(6, 0.0f)));
  EXPECT_TRUE(bitEqual(copyOut(session, 1), std::vector<float>(6, -inf)));
  EXPECT_TRUE(bitEqual(copyOut(session, 2), xs));
  EXPECT_TRUE(bitEqual(copyOut(session, 3), {0.0f}));
  EXPECT_TRUE(bitEqual(copyOut(session, 4), {0.0f}));
}

TEST(CpuBackend, BroadcastReductionLargerThanEveryTensor) {
  // sum(a[N,1] + b[1,M]): N*M points, no N*M tensor (a fused broadcast and
  // reduction, which the loader refused before issue 7).
  const int64_t n = 64, m = 48;
  const std::vector<float> a = seededFloats(n, 31, -1, 1), bv = seededFloats(m, 32, -1, 1);
  ModuleBuilder b;
  const int ta = b.input("a", fb::DType::F32, {n, 1});
  const int tb = b.input("b", fb::DType::F32, {1, m});
  const int out = b.activation("y", fb::DType::F32, {});
  KernelSpec &k = b.kernel("add_sum", {n, m}, 2);
  const int v = k.binary(fb::OpCode::Add, k.load(ta, {1, 0}), k.load(tb, {0, 1}));
  k.store(out, k.unary(fb::OpCode::RowSum, v), {0, 0}, fb::DType::F32);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("a", {n, 1}, a.data()));
  ASSERT_OK(session.bindInput("b", {1, m}, bv.data()));
  ASSERT_OK(session.run());
  // FP32, in the RowSum order over the row's n * m points.
  const float want = rowSumInLanes(n * m, [&](int64_t p) { return a[p / m] + bv[p % m]; });
  EXPECT_TRUE(bitEqual(copyOut(session, 0), {want}));
}

TEST(CpuBackend, AmaxQuantizeSelectAndIntegerTensors) {
  const int64_t n = 50;
  std::vector<float> x = seededFloats(n, 91, -700, 700);
  x[7] = -900.0f; // the amax
  ModuleBuilder b;
  const int in = b.input("x", fb::DType::F32, {n});
  const int scale = b.constantFloats("scale", fb::DType::F32, {}, {0.5f});
  std::vector<uint8_t> idBytes(n * 8);
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i)
    ids[i] = i % 3 - 1;
  std::memcpy(idBytes.data(), ids.data(), idBytes.size());
  const int tid = b.constantBytes("ids", fb::DType::I64, {n}, idBytes);
  const int amax = b.activation("amax", fb::DType::F32, {});
  const int q = b.activation("q", fb::DType::F8E4M3FN, {n});
  const int sel = b.activation("sel", fb::DType::F32, {n});
  const int positive = b.activation("positive", fb::DType::Bool, {n});
  const int counts = b.activation("counts", fb::DType::I32, {n});
  KernelSpec &k = b.kernel("fp8", {n}, 0);
  int v = k.load(in, {1});
  k.store(amax, k.unary(fb::OpCode::Amax, v), {0}, fb::DType::F32);
  k.store(q, k.quantize(v, k.load(scale, {0}), fb::DType::F8E4M3FN), {1}, fb::DType::F8E4M3FN);
  int id = k.load(tid, {1});
  int isPositive = k.cast(v, fb::DType::Bool); // nonzero -> 1
  isPositive = k.binary(fb::OpCode::Max, k.constant(0.0f),
                        k.binary(fb::OpCode::Mul, isPositive, k.unary(fb::OpCode::Relu, v)));
  k.store(positive, isPositive, {1}, fb::DType::Bool);
  k.store(sel, k.select(id, v, k.constant(-1.0f)), {1}, fb::DType::F32);
  k.store(counts, k.binary(fb::OpCode::Add, id, k.constant(10.0f)), {1}, fb::DType::I32);
  for (int t : {amax, q, sel, positive, counts})
    b.output(t);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  ASSERT_OK(session.bindInput("x", {n}, x.data()));
  ASSERT_OK(session.run());
  EXPECT_EQ(copyOut(session, 0), std::vector<float>{900.0f});
  std::vector<float> qWant(n), selWant(n);
  std::vector<uint8_t> posWant(n), posGot(n);
  std::vector<int32_t> countWant(n), countGot(n);
  num::RoundOptions sat;
  sat.saturate = true;
  for (int64_t i = 0; i < n; ++i) {
    qWant[i] = num::roundTo(Format::F8E4M3FN, x[i] * 0.5f, sat);
    selWant[i] = ids[i] != 0 ? x[i] : -1.0f;
    posWant[i] = x[i] > 0 ? 1 : 0;
    countWant[i] = static_cast<int32_t>(ids[i] + 10);
  }
  EXPECT_TRUE(bitEqual(copyOut(session, 1), qWant));
  EXPECT_TRUE(bitEqual(copyOut(session, 2), selWant));
  ASSERT_OK(session.copyOutput(3, MIXPREC_DTYPE_BOOL, posGot.data(), n));
  EXPECT_EQ(posGot, posWant);
  ASSERT_OK(session.copyOutput(4, MIXPREC_DTYPE_I32, countGot.data(), n * 4));
  EXPECT_EQ(countGot, countWant);
  // Integer outputs cannot be copied as f32.
  std::vector<float> asFloat(n);
  EXPECT_EQ(session.copyOutput(4, MIXPREC_DTYPE_F32, asFloat.data(), n * 4).code(),
            MIXPREC_DTYPE_MISMATCH);
}

TEST(CpuBackend, StoringNaNToAnIntegerTensorIsAnExecutionError) {
  ModuleBuilder b;
  const int in = b.input("x", fb::DType::F32, {3});
  const int out = b.activation("i", fb::DType::I64, {3});
  KernelSpec &k = b.kernel("to_int", {3}, 0);
  k.store(out, k.load(in, {1}), {1}, fb::DType::I64);
  b.output(out);
  Module module;
  Session session;
  openCpu(b.build(), module, session);
  const std::vector<float> x = {1.5f, std::nanf(""), 2.0f};
  ASSERT_OK(session.bindInput("x", {3}, x.data()));
  Status s = session.run();
  EXPECT_EQ(s.code(), MIXPREC_EXECUTION_ERROR);
  EXPECT_NE(std::string(s.message()).find("'to_int'"), std::string::npos) << s.message();
  // Outputs of a failed run are not readable.
  std::vector<int64_t> got(3);
  EXPECT_EQ(session.copyOutput(0, MIXPREC_DTYPE_I64, got.data(), 24).code(),
            MIXPREC_FAILED_PRECONDITION);
}

//===----------------------------------------------------------------------===//
// routine routines
//===----------------------------------------------------------------------===//

TEST(CpuBackend, RoutinesMatchReferenceKernels) {
  ModuleBuilder builder = convBuilder();
  const BuiltModule built = builder.build();
  Module module;
  Session session;
  openCpu(built, module, session);
  const std::vector<float> image = rounded(Format::BF16, seededFloats(2 * 3 * 8 * 8, 101, -2, 2));
  const std::vector<int64_t> ids = {5, 0, -1, 2};
  ASSERT_OK(session.bindInput("image", {2, 3, 8, 8}, image.data()));
  ASSERT_OK(session.bindInputAt(1, MIXPREC_DTYPE_I64, {4}, ids.data(), 32));
  ASSERT_OK(session.run());

  auto constant = [&](const char *name) {
    for (const TensorSpec &t : builder.tensors)
      if (t.name == name) {
        const ConstantSpec &c = builder.constants[t.constant];
        std::vector<float> v(c.data.size() / num::formatBytes(static_cast<Format>(t.dtype)));
        num::decodeArray(static_cast<Format>(t.dtype), c.data.data(), v.data(), v.size());
        return v;
      }
    ADD_FAILURE() << name;
    return std::vector<float>();
  };
  std::vector<float> conv(2 * 4 * 8 * 8);
  cpu::conv2d(image.data(), {2, 3, 8, 8}, constant("conv_w").data(), {4, 3, 3, 3},
              constant("conv_b").data(), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, conv.data(),
              {2, 4, 8, 8});
  conv = rounded(Format::BF16, conv);
  std::vector<float> pooled(2 * 4 * 4 * 4);
  cpu::maxPool2d(conv.data(), {2, 4, 8, 8}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, pooled.data(),
                 {2, 4, 4, 4});
  pooled = rounded(Format::BF16, pooled);
  EXPECT_TRUE(bitEqual(copyOut(session, 0), pooled));
  std::vector<float> nhwc(pooled.size());
  cpu::transpose(pooled.data(), {2, 4, 4, 4}, {0, 2, 3, 1}, nhwc.data());
  EXPECT_TRUE(bitEqual(copyOut(session, 1), nhwc));
  std::vector<float> embedded(4 * 5);
  ASSERT_TRUE(cpu::gather(constant("table").data(), {6, 5}, ids.data(), {4}, 0, embedded.data()));
  EXPECT_TRUE(bitEqual(copyOut(session, 2), embedded));
  std::vector<float> joined(4 * 8);
  const std::vector<float> extra = constant("extra");
  cpu::concat<float>({embedded.data(), extra.data()}, {{4, 5}, {4, 3}}, -1, joined.data());
  EXPECT_TRUE(bitEqual(copyOut(session, 3), joined));
  std::vector<float> sliced(2 * 3);
  cpu::slice(joined.data(), {4, 8}, {1, 0}, {2, 3}, {2, 3}, sliced.data());
  EXPECT_TRUE(bitEqual(copyOut(session, 4), sliced));
  std::vector<float> colSum(8);
  cpu::reduce(cpu::ReduceOp::Sum, joined.data(), {4, 8}, {0}, false, colSum.data());
  EXPECT_TRUE(bitEqual(copyOut(session, 5), colSum));
  std::vector<float> normed(4 * 8), ones(8, 1.0f);
  cpu::layerNorm(joined.data(), {4, 8}, 1, ones.data(), constant("ln_b").data(), 1e-5f,
                 normed.data());
  EXPECT_TRUE(bitEqual(copyOut(session, 6), rounded(Format::BF16, normed)));
  float amax = 0.0f;
  for (float v : conv)
    amax = std::max(amax, std::fabs(v));
  const float scale = static_cast<float>(448.0 / static_cast<double>(amax) / 1.0);
  EXPECT_TRUE(bitEqual(copyOut(session, 7), {scale}));
}

TEST(CpuBackend, GatherIndexOutOfRangeIsAnExecutionError) {
  Module module;
  Session session;
  openCpu(convBuilder().build(), module, session);
  const std::vector<float> image(2 * 3 * 8 * 8, 0.5f);
  const std::vector<int64_t> ids = {0, 1, 6, 2};
  ASSERT_OK(session.bindInput("image", {2, 3, 8, 8}, image.data()));
  ASSERT_OK(session.bindInputAt(1, MIXPREC_DTYPE_I64, {4}, ids.data(), 32));
  Status s = session.run();
  EXPECT_EQ(s.code(), MIXPREC_EXECUTION_ERROR);
  EXPECT_NE(std::string(s.message()).find("'embed' (gather): index 6 is out of range"),
            std::string::npos)
      << s.message();
}

//===----------------------------------------------------------------------===//
// Backends, bindings, options
//===----------------------------------------------------------------------===//

TEST(RuntimeApi, BackendSelection) {
  Module module;
  ASSERT_OK(loadBuilt(mlpBuilder(false).build(), module));
  Session session;
  Status s = Session::create(module, session, MIXPREC_BACKEND_CUDA);
  // No GPU: NO_DEVICE with the probe's reason; with one: the module has no
  // CUDA code.
  EXPECT_TRUE(s.code() == MIXPREC_NO_DEVICE || s.code() == MIXPREC_FAILED_PRECONDITION)
      << s.codeName() << ": " << s.message();
  EXPECT_NE(std::string(s.message()).find("CUDA backend"), std::string::npos);
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_AUTO));
  EXPECT_EQ(session.backend(), MIXPREC_BACKEND_CPU);
  // Auto says what it chose and why.
  EXPECT_EQ(std::string(session.backendReason()),
            std::string("auto chose the CPU backend: ") + s.message());
  ASSERT_OK(Session::create(module, session, MIXPREC_BACKEND_CPU));
  EXPECT_STREQ(session.backendReason(), "");
  EXPECT_STREQ(mixprec_session_backend_reason(nullptr), "");
  EXPECT_EQ(Session::create(module, session, static_cast<mixprec_backend_t>(7)).code(),
            MIXPREC_INVALID_ARGUMENT);
  mixprec_session_options_t options = MIXPREC_SESSION_OPTIONS_INIT;
  options.max_memory_bytes = 64;
  s = Session::create(module, session, options);
  EXPECT_EQ(s.code(), MIXPREC_OUT_OF_MEMORY);
  EXPECT_NE(std::string(s.message()).find("max_memory_bytes"), std::string::npos);
  options.struct_size = 0;
  EXPECT_EQ(Session::create(module, session, options).code(), MIXPREC_INVALID_ARGUMENT);
}

TEST(RuntimeApi, ArenaBeyondUsableMemoryIsRefused) {
  // A 16 TiB activation: refused when the session is created, by the
  // interpreter's rule for its live tensors (cpu::fitsInMemory), naming
  // the limit.
  ModuleBuilder b;
  const int x = b.input("x", fb::DType::F32, {4});
  const int big = b.activation("big", fb::DType::F32, {int64_t(1) << 42});
  KernelSpec &k = b.kernel("fill", {int64_t(1) << 42}, 0);
  k.store(big, k.binary(fb::OpCode::Add, k.load(x, {0}), k.constant(1.0f)), {1}, fb::DType::F32);
  b.output(big);
  Module module;
  ASSERT_OK(loadBuilt(b.build(), module));
  Session session;
  Status s = Session::create(module, session, MIXPREC_BACKEND_CPU);
  EXPECT_EQ(s.code(), MIXPREC_OUT_OF_MEMORY);
  EXPECT_NE(std::string(s.message()).find("bytes of memory this process may use"),
            std::string::npos)
      << s.message();
}

TEST(RuntimeApi, RejectsBadBindings) {
  Module module;
  Session session;
  openCpu(mlpBuilder(false).build(), module, session);
  std::vector<float> x(5 * 24, 1.0f);
  Status s = session.bindInput("x", {5, 23}, x.data());
  EXPECT_EQ(s.code(), MIXPREC_SHAPE_MISMATCH);
  EXPECT_NE(std::string(s.message()).find("[5,24]"), std::string::npos) << s.message();
  EXPECT_NE(std::string(s.message()).find("[5,23]"), std::string::npos) << s.message();
  EXPECT_EQ(session.bindInput("x", {120}, x.data()).code(), MIXPREC_SHAPE_MISMATCH);
  s = session.bindInput("x", MIXPREC_DTYPE_I32, {5, 24}, x.data(), x.size() * 4);
  EXPECT_EQ(s.code(), MIXPREC_DTYPE_MISMATCH);
  EXPECT_NE(std::string(s.message()).find("'x' is f32"), std::string::npos) << s.message();
  EXPECT_EQ(session.bindInput("x", MIXPREC_DTYPE_F32, {5, 24}, x.data(), 100).code(),
            MIXPREC_SHAPE_MISMATCH);
  s = session.bindInput("nope", {5, 24}, x.data());
  EXPECT_EQ(s.code(), MIXPREC_NOT_FOUND);
  EXPECT_NE(std::string(s.message()).find("'nope'"), std::string::npos) << s.message();
  EXPECT_EQ(session.bindInputAt(3, MIXPREC_DTYPE_F32, {5, 24}, x.data(), 480).code(),
            MIXPREC_INVALID_ARGUMENT);
  EXPECT_EQ(session.bindInput("x", static_cast<mixprec_dtype_t>(42), {5, 24}, x.data(), 480)
                .code(),
            MIXPREC_INVALID_ARGUMENT);
  // Nothing bound yet: run names the input; outputs before a run fail too.
  s = session.run();
  EXPECT_EQ(s.code(), MIXPREC_FAILED_PRECONDITION);
  EXPECT_NE(std::string(s.message()).find("'x' is not bound"), std::string::npos);
  const void *data = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(session.outputData(0, data, bytes).code(), MIXPREC_FAILED_PRECONDITION);
  // F16 data for a float input that is f32: only f32 converts.
  std::vector<uint16_t> half(120);
  EXPECT_EQ(session.bindInput("x", MIXPREC_DTYPE_F16, {5, 24}, half.data(), 240).code(),
            MIXPREC_DTYPE_MISMATCH);
  // NULL handles and pointers are statuses, not crashes.
  mixprec_status_t st = mixprec_session_run(nullptr);
  EXPECT_EQ(mixprec_status_code(st), MIXPREC_INVALID_ARGUMENT);
  mixprec_status_free(st);
  st = mixprec_session_bind_input(session.handle(), 0, MIXPREC_DTYPE_F32, 2,
                                                   nullptr, x.data(), 480);
  EXPECT_EQ(mixprec_status_code(st), MIXPREC_INVALID_ARGUMENT);
  mixprec_status_free(st);
  st = mixprec_module_load_file(nullptr, nullptr, nullptr);
  EXPECT_EQ(mixprec_status_code(st), MIXPREC_INVALID_ARGUMENT);
  mixprec_status_free(st);
}

TEST(RuntimeApi, SessionsOfOneModuleRunConcurrently) {
  // The module is shared; each thread has its own session (the documented
  // contract), and every thread's results equal a sequential run's.
  Module module;
  ASSERT_OK(loadBuilt(convBuilder().build(), module));
  const std::vector<int64_t> ids = {5, 0, -1, 2};
  auto runOnce = [&](uint64_t seed, std::vector<float> &features) {
    Session session;
    const std::vector<float> image = seededFloats(2 * 3 * 8 * 8, seed, -2, 2);
    return Session::create(module, session, MIXPREC_BACKEND_CPU).ok() &&
           session.bindInput("image", {2, 3, 8, 8}, image.data()).ok() &&
           session.bindInputAt(1, MIXPREC_DTYPE_I64, {4}, ids.data(), 32).ok() &&
           session.run().ok() && session.copyOutput(6, features).ok();
  };
  constexpr int kThreads = 4, kRuns = 10;
  std::vector<std::vector<float>> expected(kThreads * kRuns);
  for (int i = 0; i < kThreads * kRuns; ++i)
    ASSERT_TRUE(runOnce(1000 + i, expected[i]));
  std::vector<std::vector<float>> got(kThreads * kRuns);
  std::vector<int> ok(kThreads * kRuns, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRuns; ++r) {
        const int i = t * kRuns + r;
        ok[i] = runOnce(1000 + i, got[i]);
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int i = 0; i < kThreads * kRuns; ++i) {
    ASSERT_TRUE(ok[i]) << i;
    EXPECT_TRUE(bitEqual(got[i], expected[i])) << i;
  }
}

TEST(RuntimeApi, ModuleOutlivesItsHandleInSessions) {
  mixprec_module_t module = nullptr;
  const BuiltModule built = mlpBuilder(false).build();
  ASSERT_EQ(mixprec_module_load_memory(built.module.data(), built.module.size(), nullptr, &module),
            nullptr);
  mixprec_session_t session = nullptr;
  ASSERT_EQ(mixprec_session_create(module, nullptr, &session), nullptr);
  mixprec_module_release(module);
  std::vector<float> x(120, 0.25f);
  const int64_t dims[] = {5, 24};
  ASSERT_EQ(mixprec_session_bind_input_by_name(session, "x", MIXPREC_DTYPE_F32, 2, dims, x.data(),
                                               480),
            nullptr);
  ASSERT_EQ(mixprec_session_run(session), nullptr);
  std::vector<float> probs(50);
  ASSERT_EQ(mixprec_session_copy_output(session, 0, MIXPREC_DTYPE_F32, probs.data(), 200), nullptr);
  float total = 0.0f;
  for (int i = 0; i < 10; ++i)
    total += probs[i];
  EXPECT_NEAR(total, 1.0f, 1e-5f);
  mixprec_session_release(session);
}

} // namespace
} // namespace mixprec::testing
