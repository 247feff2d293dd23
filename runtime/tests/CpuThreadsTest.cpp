//===- CpuThreadsTest.cpp - the CPU backend's kernels on several threads --===//
//
// Issue 27 part 3: element-wise and reduction kernels split over the
// session's threads (rows of a kernel with row reductions, slices of the
// one row of a kernel without) give the same bits for any thread count,
// Amax included (merged as a max, which any order gives alike); kernels
// whose stores could collide stay on one thread.
//
//===----------------------------------------------------------------------===//
#include "runtime/src/backends/cpu/CpuBackend.h"
#include "tests/unit/runtime/ModuleBuilder.h"
#include "tests/unit/runtime/RowSumOrder.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace mixprec::testing {
namespace {

namespace rt = mixprec::runtime;
using Op = fb::OpCode;

std::vector<float> randomValues(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> u(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

constexpr int64_t kRows = 301, kCols = 517;   // a softmax over rows
constexpr int64_t kFlat0 = 997, kFlat1 = 333; // an element-wise kernel

/// Kernel "softmax" ([kRows, kCols], one row dim): y = exp(x - max) / sum
/// stored as BF16, the row sums as F32 [kRows] (a Store that does not walk
/// the row), amax(x) as F32; kernel "ew" ([kFlat0, kFlat1], no row dims):
/// z = tanh(a) * a + 1 stored as F16, amax(z) as F32.
std::shared_ptr<const rt::LoadedModule> buildModule() {
  ModuleBuilder mb;
  const int x = mb.input("x", fb::DType::F32, {kRows, kCols});
  const int a = mb.input("a", fb::DType::F32, {kFlat0, kFlat1});
  const int y = mb.activation("y", fb::DType::BF16, {kRows, kCols});
  const int sums = mb.activation("sums", fb::DType::F32, {kRows});
  const int xAmax = mb.activation("x_amax", fb::DType::F32, {});
  const int z = mb.activation("z", fb::DType::F16, {kFlat0, kFlat1});
  const int zAmax = mb.activation("z_amax", fb::DType::F32, {});
  {
    KernelSpec &k = mb.kernel("softmax", {kRows, kCols}, 1);
    const int v = k.load(x, {kCols, 1});
    const int m = k.unary(Op::RowMax, v);
    const int e = k.unary(Op::Exp, k.binary(Op::Sub, v, m));
    const int s = k.unary(Op::RowSum, e);
    k.store(y, k.cast(k.binary(Op::Div, e, s), fb::DType::BF16), {kCols, 1}, fb::DType::BF16);
    k.store(sums, s, {1, 0}, fb::DType::F32);
    k.store(xAmax, k.unary(Op::Amax, v), {0, 0}, fb::DType::F32);
  }
  {
    KernelSpec &k = mb.kernel("ew", {kFlat0, kFlat1}, 0);
    const int v = k.load(a, {kFlat1, 1});
    const int t = k.binary(Op::Add, k.binary(Op::Mul, k.unary(Op::Tanh, v), v), k.constant(1.0f));
    const int h = k.cast(t, fb::DType::F16);
    k.store(z, h, {kFlat1, 1}, fb::DType::F16);
    k.store(zAmax, k.unary(Op::Amax, h), {0, 0}, fb::DType::F32);
  }
  for (int t : {y, sums, xAmax, z, zAmax})
    mb.output(t);
  BuiltModule built = mb.build();
  std::shared_ptr<const rt::LoadedModule> module;
  rt::Status s = rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                              rt::LoadOptions{}, module);
  EXPECT_TRUE(s.ok()) << s.message();
  return module;
}

struct Outcome {
  std::vector<std::vector<uint8_t>> outputs;
  int threads = 0;
  int64_t parallelRuns = 0;
};

/// Runs the module twice on a session of `threads` threads; the outputs of
/// the second run (which must equal the first's).
Outcome runOn(const std::shared_ptr<const rt::LoadedModule> &module, int threads,
              const std::vector<float> &x, const std::vector<float> &a) {
  rt::BackendOptions options;
  options.numThreads = threads;
  std::unique_ptr<rt::Backend> backend;
  rt::Status s = rt::createCpuBackend(module, options, backend);
  EXPECT_TRUE(s.ok()) << s.message();
  Outcome out;
  if (!s.ok())
    return out;
  auto &cpu = *static_cast<rt::CpuBackend *>(backend.get());
  out.threads = cpu.threads();
  const auto &tensors = module->tensors();
  for (int repeat = 0; repeat < 2; ++repeat) {
    for (uint32_t t : module->inputs()) {
      const std::vector<float> &data = tensors[t].name == "x" ? x : a;
      EXPECT_TRUE(backend->setInput(t, data.data(), tensors[t].bytes).ok());
    }
    s = backend->launch({});
    EXPECT_TRUE(s.ok()) << s.message();
    std::vector<std::vector<uint8_t>> outputs;
    for (uint32_t t : module->outputs()) {
      const void *data = nullptr;
      EXPECT_TRUE(backend->readTensor(t, &data).ok());
      const auto *bytes = static_cast<const uint8_t *>(data);
      outputs.emplace_back(bytes, bytes + tensors[t].bytes);
    }
    if (repeat == 1) {
      EXPECT_EQ(outputs, out.outputs) << "a second run on " << threads << " threads differs";
    }
    out.outputs = std::move(outputs);
  }
  out.parallelRuns = cpu.parallelKernelRuns();
  return out;
}

class CpuThreads : public ::testing::Test {
protected:
  void SetUp() override {
    const char *old = std::getenv("MIXPREC_CPU_PARALLEL_POINTS");
    saved = old ? old : "";
    hadOld = old != nullptr;
  }
  void TearDown() override {
    if (hadOld)
      setenv("MIXPREC_CPU_PARALLEL_POINTS", saved.c_str(), 1);
    else
      unsetenv("MIXPREC_CPU_PARALLEL_POINTS");
  }
  std::string saved;
  bool hadOld = false;
};

TEST_F(CpuThreads, AnyThreadCountGivesTheSameBits) {
  auto module = buildModule();
  std::vector<float> x = randomValues(size_t(kRows * kCols), 1);
  std::vector<float> a = randomValues(size_t(kFlat0 * kFlat1), 2);
  unsetenv("MIXPREC_CPU_PARALLEL_POINTS");
  const Outcome one = runOn(module, 1, x, a);
  ASSERT_EQ(one.threads, 1);
  EXPECT_EQ(one.parallelRuns, 0);
  // The amax of x is where its largest magnitude sits; a real value.
  float xAmax = 0.0f;
  std::memcpy(&xAmax, one.outputs[2].data(), 4);
  float expected = 0.0f;
  for (float v : x)
    expected = std::max(expected, std::fabs(v));
  EXPECT_EQ(xAmax, expected);
  // Split at the default threshold and at every kernel (1 point).
  for (const char *points : {"16384", "1"}) {
    setenv("MIXPREC_CPU_PARALLEL_POINTS", points, 1);
    for (int threads : {2, 3, 4, 7}) {
      const Outcome many = runOn(module, threads, x, a);
      EXPECT_EQ(many.threads, threads);
      // Both kernels split, in both runs.
      EXPECT_EQ(many.parallelRuns, 4) << threads << " threads, threshold " << points;
      EXPECT_EQ(many.outputs, one.outputs) << threads << " threads, threshold " << points;
    }
  }
}

TEST_F(CpuThreads, AmaxMergesNaNAndTheLargestFromAnyThread) {
  auto module = buildModule();
  std::vector<float> x = randomValues(size_t(kRows * kCols), 3);
  std::vector<float> a = randomValues(size_t(kFlat0 * kFlat1), 4);
  // The largest |x| in the last rows (the last thread's), a NaN of a late
  // slice of `a`: each must reach the merged amax.
  x[x.size() - 5] = -1000.0f;
  a[a.size() - 7] = NAN;
  setenv("MIXPREC_CPU_PARALLEL_POINTS", "1", 1);
  const Outcome one = runOn(module, 1, x, a);
  const Outcome three = runOn(module, 3, x, a);
  EXPECT_EQ(three.outputs, one.outputs);
  float xAmax = 0.0f, zAmax = 0.0f;
  std::memcpy(&xAmax, three.outputs[2].data(), 4);
  std::memcpy(&zAmax, three.outputs[4].data(), 4);
  EXPECT_EQ(xAmax, 1000.0f);
  EXPECT_TRUE(std::isnan(zAmax));
}

TEST_F(CpuThreads, ABroadcastStoreStaysOnOneThread) {
  // Every point along dim 0 of a kernel without row reductions stores to
  // the same elements (a value that does not vary there, as the verifier
  // requires): the stores would write one element from several threads,
  // so the kernel runs on one.
  ModuleBuilder mb;
  const int b = mb.input("b", fb::DType::F32, {512});
  const int c = mb.input("c", fb::DType::F32, {64, 512});
  const int twice = mb.activation("twice", fb::DType::F32, {512});
  const int sum = mb.activation("sum", fb::DType::F32, {64, 512});
  {
    KernelSpec &k = mb.kernel("broadcast_store", {64, 512}, 0);
    const int v = k.load(b, {0, 1});
    k.store(twice, k.binary(Op::Mul, v, k.constant(2.0f)), {0, 1}, fb::DType::F32);
    k.store(sum, k.binary(Op::Add, v, k.load(c, {512, 1})), {512, 1}, fb::DType::F32);
  }
  mb.output(twice);
  BuiltModule built = mb.build();
  std::shared_ptr<const rt::LoadedModule> module;
  rt::Status loaded = rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                                   rt::LoadOptions{}, module);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  setenv("MIXPREC_CPU_PARALLEL_POINTS", "1", 1);
  rt::BackendOptions options;
  options.numThreads = 4;
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createCpuBackend(module, options, backend).ok());
  std::vector<float> values = randomValues(512, 5), other = randomValues(64 * 512, 6);
  ASSERT_TRUE(backend->setInput(module->inputs()[0], values.data(), values.size() * 4).ok());
  ASSERT_TRUE(backend->setInput(module->inputs()[1], other.data(), other.size() * 4).ok());
  ASSERT_TRUE(backend->launch({}).ok());
  const void *data = nullptr;
  ASSERT_TRUE(backend->readTensor(module->outputs()[0], &data).ok());
  const float *out = static_cast<const float *>(data);
  for (size_t i = 0; i < values.size(); ++i)
    ASSERT_EQ(out[i], 2.0f * values[i]) << i;
  EXPECT_EQ(static_cast<rt::CpuBackend *>(backend.get())->parallelKernelRuns(), 0);
}

TEST_F(CpuThreads, ShortRowsShareAPieceWithTheReferenceBits) {
  // A LayerNorm-like kernel over rows of 4 x 6 points (two row dims: four
  // runs a row), 37 rows: several rows a piece, each row's sums in the
  // RowSum order (tests/unit/runtime/RowSumOrder.h), the per-row values (mean, variance, 1/sqrt,
  // the row's own scale s[r], a scalar load varying by row) computed at each row's first point and
  // spread over it. The bits of the FP32 formula step by step, on 1 and 3 threads.
  constexpr int64_t kR = 37, kA = 4, kB = 6, kC = kA * kB;
  ModuleBuilder mb;
  const int x = mb.input("x", fb::DType::F32, {kR, kA, kB});
  const int scale = mb.input("s", fb::DType::F32, {kR});
  const int y = mb.activation("y", fb::DType::F32, {kR, kA, kB});
  {
    KernelSpec &k = mb.kernel("norm", {kR, kA, kB}, 2);
    const int v = k.load(x, {kC, kB, 1});
    const int inverse = k.constant(1.0f / kC);
    const int mean = k.binary(Op::Mul, k.unary(Op::RowSum, v), inverse);
    const int d = k.binary(Op::Sub, v, mean);
    const int var = k.binary(Op::Mul, k.unary(Op::RowSum, k.binary(Op::Mul, d, d)), inverse);
    const int rs = k.unary(Op::Rsqrt, k.binary(Op::Add, var, k.constant(1e-5f)));
    const int out = k.binary(Op::Mul, k.binary(Op::Mul, d, rs), k.load(scale, {1, 0, 0}));
    k.store(y, out, {kC, kB, 1}, fb::DType::F32);
  }
  mb.output(y);
  BuiltModule built = mb.build();
  std::shared_ptr<const rt::LoadedModule> module;
  ASSERT_TRUE(rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                           rt::LoadOptions{}, module)
                  .ok());
  std::vector<float> xs = randomValues(size_t(kR * kC), 7), ss = randomValues(size_t(kR), 8);
  std::vector<float> want(xs.size());
  for (int64_t r = 0; r < kR; ++r) {
    const float *row = xs.data() + r * kC;
    const float sum = rowSumInLanes(kC, [&](int64_t i) { return row[i]; });
    const float mean = sum * (1.0f / kC);
    const float squares = rowSumInLanes(kC, [&](int64_t i) {
      const float d = row[i] - mean;
      return d * d;
    });
    const float rs = 1.0f / std::sqrt(squares * (1.0f / kC) + 1e-5f);
    for (int64_t i = 0; i < kC; ++i)
      want[r * kC + i] = ((row[i] - mean) * rs) * ss[r];
  }
  setenv("MIXPREC_CPU_PARALLEL_POINTS", "1", 1);
  for (int threads : {1, 3}) {
    rt::BackendOptions options;
    options.numThreads = threads;
    std::unique_ptr<rt::Backend> backend;
    ASSERT_TRUE(rt::createCpuBackend(module, options, backend).ok());
    ASSERT_TRUE(backend->setInput(module->inputs()[0], xs.data(), xs.size() * 4).ok());
    ASSERT_TRUE(backend->setInput(module->inputs()[1], ss.data(), ss.size() * 4).ok());
    ASSERT_TRUE(backend->launch({}).ok());
    const void *data = nullptr;
    ASSERT_TRUE(backend->readTensor(module->outputs()[0], &data).ok());
    EXPECT_EQ(std::memcmp(data, want.data(), want.size() * 4), 0) << threads << " thread(s)";
  }
}

TEST(CpuThreadPool, RunsEveryChunkOnceOnValidWorkers) {
  for (int size : {1, 2, 5}) {
    rt::ThreadPool pool(size);
    ASSERT_EQ(pool.size(), size);
    for (int64_t chunks : {0, 1, 3, 100}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(chunks));
      std::atomic<int> badWorker{0};
      pool.run(chunks, [&](int64_t chunk, int worker) {
        seen[static_cast<size_t>(chunk)].fetch_add(1);
        if (worker < 0 || worker >= size)
          badWorker.fetch_add(1);
      });
      for (auto &n : seen)
        EXPECT_EQ(n.load(), 1);
      EXPECT_EQ(badWorker.load(), 0);
    }
  }
}

} // namespace
} // namespace mixprec::testing
