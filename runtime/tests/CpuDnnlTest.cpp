//===- CpuDnnlTest.cpp - the CPU backend's GEMM steps on oneDNN -----------===//
//
// Issue 27: GEMM steps run on oneDNN's matmul with the operands as stored
// and a constant weight packed once, when the session is created. Checked
// here: which steps oneDNN takes (and why not the others); FP32, BF16 and
// batched results against an FP64 reference of the stored operands within
// the GEMM bound (oneDNN sums in its own order); the bias and ReLU
// epilogue; every element written; the same bits on every run; one pack
// per constant weight at load and no decode in runs (the OpenBLAS path,
// MIXPREC_CPU_GEMM=openblas, decodes the BF16 weight to FP32 in every run:
// what the pack saves).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/PackedGemm.h"
#include "runtime/src/backends/cpu/CpuBackend.h"
#include "tests/unit/runtime/ModuleBuilder.h"

#include "common/numerics/Rounding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace mixprec::testing {
namespace {

namespace rt = mixprec::runtime;
namespace num = mixprec::numerics;

std::vector<float> randomValues(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = u(rng);
  return v;
}

/// The values as `dtype` stores them (rounded to nearest even).
std::vector<float> stored(fb::DType dtype, std::vector<float> v) {
  for (float &x : v)
    x = num::roundTo(rt::formatOf(dtype), x);
  return v;
}

/// Encodes floats as `dtype` little-endian bytes.
std::vector<uint8_t> bytesOf(fb::DType dtype, const std::vector<float> &v) {
  std::vector<uint8_t> out;
  const num::Format f = rt::formatOf(dtype);
  const size_t width = num::formatBytes(f);
  for (float x : v) {
    const uint32_t bits = num::encode(f, x);
    for (size_t i = 0; i < width; ++i)
      out.push_back(uint8_t(bits >> (8 * i)));
  }
  return out;
}

/// y = relu?(x . W^T / (sx sw) + bias) of one GEMM step, x [m, k] an
/// input, W [n, k] a constant (transB) or an input; operands of `dtype`
/// (FP8: with the scales sx, sw), output F32.
struct LinearCase {
  fb::DType dtype = fb::DType::BF16;
  int64_t m = 37, n = 50, k = 96;
  bool constantWeight = true, bias = true, relu = true;
  float scaleX = 1.0f, scaleW = 1.0f; ///< FP8 only
  bool fp8() const { return dtype == fb::DType::F8E4M3FN || dtype == fb::DType::F8E5M2; }
};

struct Built {
  std::shared_ptr<const rt::LoadedModule> module;
  std::vector<float> x, w, b; // as stored
};

Built buildLinear(const LinearCase &c) {
  Built out;
  out.x = stored(c.dtype, randomValues(size_t(c.m * c.k), 1));
  out.w = stored(c.dtype, randomValues(size_t(c.n * c.k), 2));
  out.b = randomValues(size_t(c.n), 3);
  ModuleBuilder mb;
  GemmSpec g;
  g.name = "fc";
  g.m = c.m;
  g.n = c.n;
  g.k = c.k;
  g.transB = true;
  g.strideA = c.m * c.k;
  g.strideB = c.n * c.k;
  g.strideOut = c.m * c.n;
  g.a = mb.input("x", c.dtype, {c.m, c.k});
  g.b = c.constantWeight ? mb.constantFloats("w", c.dtype, {c.n, c.k}, out.w)
                         : mb.input("w", c.dtype, {c.n, c.k});
  g.out = mb.activation("y", fb::DType::F32, {c.m, c.n});
  if (c.fp8()) {
    g.aScale = mb.constantFloats("sx", fb::DType::F32, {}, {c.scaleX});
    g.bScale = mb.constantFloats("sw", fb::DType::F32, {}, {c.scaleW});
  }
  if (c.bias) {
    g.bias = mb.constantFloats("b", fb::DType::F32, {c.n}, out.b);
    g.epilogue = c.relu ? fb::Epilogue::BiasRelu : fb::Epilogue::Bias;
  } else if (c.relu) {
    g.epilogue = fb::Epilogue::Relu;
  }
  mb.output(g.out);
  mb.gemm(g);
  BuiltModule built = mb.build();
  rt::Status s = rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                              rt::LoadOptions{}, out.module);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

/// The FP64 reference and the bound of each element: k * 2^-23 * sum |x w|
/// (FP32 accumulation in any order) plus the bias's rounding.
void reference(const LinearCase &c, const Built &b, std::vector<double> &ref,
               std::vector<double> &bound) {
  ref.assign(size_t(c.m * c.n), 0.0);
  bound.assign(ref.size(), 0.0);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double t = double(b.x[i * c.k + p]) * double(b.w[j * c.k + p]);
        sum += t;
        mag += std::fabs(t);
      }
      const double factor = 1.0 / (double(c.scaleX) * double(c.scaleW));
      sum *= factor;
      mag *= factor;
      if (c.bias)
        sum += b.b[j];
      if (c.relu)
        sum = std::max(sum, 0.0);
      ref[i * c.n + j] = sum;
      bound[i * c.n + j] = double(c.k + 4) * std::ldexp(mag + std::fabs(sum), -23);
    }
}

/// Runs `b`'s module on a CPU backend `runs` times; the output each time.
std::vector<std::vector<float>> runCpu(const LinearCase &c, const Built &b, int runs,
                                       std::unique_ptr<rt::Backend> &backend) {
  rt::Status s = rt::createCpuBackend(b.module, {}, backend);
  EXPECT_TRUE(s.ok()) << s.message();
  std::vector<std::vector<float>> outs;
  if (!s.ok())
    return outs;
  const std::vector<uint8_t> x = bytesOf(c.dtype, b.x), w = bytesOf(c.dtype, b.w);
  const auto &tensors = b.module->tensors();
  for (int r = 0; r < runs; ++r) {
    for (uint32_t t : b.module->inputs())
      EXPECT_TRUE(
          backend->setInput(t, tensors[t].name == "x" ? x.data() : w.data(), tensors[t].bytes)
              .ok());
    s = backend->launch({});
    if (s.ok())
      s = backend->wait();
    EXPECT_TRUE(s.ok()) << s.message();
    const void *data = nullptr;
    uint32_t y = 0;
    for (uint32_t t = 0; t < tensors.size(); ++t)
      if (tensors[t].name == "y")
        y = t;
    EXPECT_TRUE(backend->readTensor(y, &data).ok());
    const auto *f = static_cast<const float *>(data);
    outs.emplace_back(f, f + c.m * c.n);
  }
  return outs;
}

void expectWithinBound(const LinearCase &c, const Built &b, const std::vector<float> &got) {
  std::vector<double> ref, bound;
  reference(c, b, ref, bound);
  ASSERT_EQ(got.size(), ref.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - ref[i]) <= bound[i]))
      if (++bad <= 3)
        ADD_FAILURE() << "element " << i << ": " << got[i] << " vs " << ref[i] << " (bound "
                      << bound[i] << ")";
  EXPECT_EQ(bad, 0u);
}

rt::CpuBackend &cpuOf(std::unique_ptr<rt::Backend> &b) {
  return *static_cast<rt::CpuBackend *>(b.get());
}

/// Every output's bytes, in order, after a run of `module` on a new CPU
/// backend with `threads` threads and `inputs` (tensor, values) bound; the
/// module runs twice and the second run must give the first's bytes.
/// `inspect` (if any) sees the backend before the runs.
std::vector<uint8_t> outputBytes(const std::shared_ptr<const rt::LoadedModule> &module, int threads,
                                 const std::vector<std::pair<int, std::vector<float>>> &inputs,
                                 const std::function<void(rt::CpuBackend &)> &inspect = {}) {
  std::unique_ptr<rt::Backend> backend;
  rt::BackendOptions options;
  options.numThreads = threads;
  rt::Status st = rt::createCpuBackend(module, options, backend);
  EXPECT_TRUE(st.ok()) << st.message();
  std::vector<uint8_t> got;
  if (!st.ok())
    return got;
  if (inspect)
    inspect(cpuOf(backend));
  for (int repeat = 0; repeat < 2; ++repeat) {
    for (const auto &[tensor, values] : inputs)
      EXPECT_TRUE(backend->setInput(uint32_t(tensor), values.data(), values.size() * 4).ok());
    st = backend->launch({});
    EXPECT_TRUE(st.ok()) << st.message();
    std::vector<uint8_t> now;
    for (uint32_t o : module->outputs()) {
      const void *data = nullptr;
      EXPECT_TRUE(backend->readTensor(o, &data).ok());
      const auto *b = static_cast<const uint8_t *>(data);
      now.insert(now.end(), b, b + module->tensors()[o].bytes);
    }
    if (repeat) {
      EXPECT_EQ(now, got) << "a second run differs";
    }
    got = now;
  }
  return got;
}

/// The outputs' bytes with the CPU backend's switch `off` set to 0 (one
/// thread, `offCheck` inspecting that backend), after checking that 1 and
/// 2 threads with it on (every kernel split, `onCheck` inspecting each
/// backend) give the same bytes.
std::vector<uint8_t>
expectSameBytesAsWithout(const char *off, const std::shared_ptr<const rt::LoadedModule> &module,
                         const std::vector<std::pair<int, std::vector<float>>> &inputs,
                         const std::function<void(rt::CpuBackend &)> &offCheck,
                         const std::function<void(rt::CpuBackend &)> &onCheck) {
  setenv(off, "0", 1);
  const std::vector<uint8_t> want = outputBytes(module, 1, inputs, offCheck);
  unsetenv(off);
  setenv("MIXPREC_CPU_PARALLEL_POINTS", "1", 1);
  for (int threads : {1, 2}) {
    const std::vector<uint8_t> got = outputBytes(module, threads, inputs, onCheck);
    EXPECT_TRUE(got == want) << threads << " thread(s): not the bytes without " << off;
  }
  unsetenv("MIXPREC_CPU_PARALLEL_POINTS");
  return want;
}

/// A linear layer's GEMM: out [m, n] = a [m, k] . b^T, b stored [n, k].
GemmSpec linearGemm(const std::string &name, int a, int b, int out, int64_t m, int64_t n,
                    int64_t k) {
  GemmSpec g;
  g.name = name;
  g.m = m, g.n = n, g.k = k, g.transB = true;
  g.strideA = m * k, g.strideB = n * k, g.strideOut = m * n;
  g.a = a, g.b = b, g.out = out;
  return g;
}

/// Loads a built module; fails the test on error.
std::shared_ptr<const rt::LoadedModule> load(const BuiltModule &built) {
  std::shared_ptr<const rt::LoadedModule> module;
  rt::Status s = rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                              rt::LoadOptions{}, module);
  EXPECT_TRUE(s.ok()) << s.message();
  return module;
}

/// Runs case `c` `runs` times on a CPU backend and checks: oneDNN takes
/// the step (or, `onDnnl` false, leaves it with `reason`), `packs` weights
/// packed at load, `decodes` weight decodes in the runs, the first result
/// within the GEMM bound, every run's bits the first's.
void checkLinear(const LinearCase &c, int runs, bool onDnnl, int64_t packs, int64_t decodes,
                 const std::string &reason = "") {
  Built b = buildLinear(c);
  std::unique_ptr<rt::Backend> backend;
  auto outs = runCpu(c, b, runs, backend);
  ASSERT_EQ(outs.size(), size_t(runs));
  rt::CpuBackend &cpu = cpuOf(backend);
  EXPECT_EQ(cpu.dnnlGemms().handles(0), onDnnl) << cpu.dnnlGemms().reason(0);
  if (!onDnnl) {
    EXPECT_EQ(cpu.dnnlGemms().reason(0), reason);
  }
  EXPECT_EQ(cpu.dnnlGemms().packsAtLoad(), packs);
  EXPECT_EQ(cpu.weightDecodesInRuns(), decodes);
  expectWithinBound(c, b, outs[0]);
  for (int r = 1; r < runs; ++r)
    EXPECT_EQ(std::memcmp(outs[0].data(), outs[r].data(), outs[0].size() * 4), 0) << "run " << r;
}

class CpuDnnl : public ::testing::Test {
protected:
  void SetUp() override {
    if (!rt::DnnlGemms::available())
      GTEST_SKIP() << "this runtime was built without oneDNN (apt-get install libdnnl-dev)";
    unsetenv("MIXPREC_CPU_GEMM");
  }
  void TearDown() override {
    unsetenv("MIXPREC_CPU_GEMM");
    unsetenv("MIXPREC_CPU_OWN_GEMM");
  }
};

TEST_F(CpuDnnl, Bf16LinearWithAPackedWeightWithinTheGemmBound) {
  checkLinear(LinearCase(), 3, true, /*packs=*/1, /*decodes=*/0);
}

TEST_F(CpuDnnl, TheOpenBlasPathDecodesTheWeightInEveryRun) {
  setenv("MIXPREC_CPU_GEMM", "openblas", 1);
  checkLinear(LinearCase(), 3, false, /*packs=*/0, /*decodes=*/3, "MIXPREC_CPU_GEMM=openblas");
}

TEST_F(CpuDnnl, Fp32AndAnInputWeightWithoutEpilogue) {
  LinearCase c;
  c.dtype = fb::DType::F32;
  c.constantWeight = false;
  c.bias = c.relu = false;
  c.m = 64, c.n = 33, c.k = 129;
  checkLinear(c, 1, true, /*packs=*/0, /*decodes=*/0); // an input: nothing to pack
}

TEST_F(CpuDnnl, Fp8WeightsWidenedToBf16OnceAtLoad) {
  // FP8 operands with per-tensor scales: the weight widened (exactly) to
  // BF16 and packed at load; the activation widened per run.
  for (fb::DType dtype : {fb::DType::F8E4M3FN, fb::DType::F8E5M2}) {
    LinearCase c;
    c.dtype = dtype;
    c.scaleX = 4.0f;
    c.scaleW = 0.5f;
    checkLinear(c, 2, true, /*packs=*/1, /*decodes=*/0);
  }
}

TEST_F(CpuDnnl, Fp16NativeOrWidenedToFp32) {
  // FP16 runs on oneDNN's FP16 matmul where the CPU has AVX512-FP16, else
  // widened to FP32 (exact): oneDNN either way, no decode in runs.
  LinearCase c;
  c.dtype = fb::DType::F16;
  checkLinear(c, 2, true, /*packs=*/1, /*decodes=*/0);
}

TEST_F(CpuDnnl, StepsItDoesNotTakeSayWhy) {
  // TF32-rounded operands stay on OpenBLAS (oneDNN does not round to TF32).
  ModuleBuilder mb;
  GemmSpec g;
  g.name = "tf32";
  g.m = 4, g.n = 4, g.k = 4;
  g.strideA = 16, g.strideB = 16, g.strideOut = 16;
  g.tf32 = true;
  g.a = mb.input("a", fb::DType::F32, {4, 4});
  g.b = mb.input("b", fb::DType::F32, {4, 4});
  g.out = mb.activation("o", fb::DType::F32, {4, 4});
  mb.output(g.out);
  mb.gemm(g);
  // Operands of two dtypes.
  GemmSpec h = g;
  h.name = "mixed";
  h.tf32 = false;
  h.a = mb.input("a16", fb::DType::BF16, {4, 4});
  h.out = mb.activation("o2", fb::DType::F32, {4, 4});
  mb.output(h.out);
  mb.gemm(h);
  BuiltModule built = mb.build();
  std::shared_ptr<const rt::LoadedModule> module;
  ASSERT_TRUE(rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                           rt::LoadOptions{}, module)
                  .ok());
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createCpuBackend(module, {}, backend).ok());
  rt::CpuBackend &cpu = cpuOf(backend);
  EXPECT_FALSE(cpu.dnnlGemms().handles(0));
  EXPECT_EQ(cpu.dnnlGemms().reason(0), "TF32-rounded operands");
  EXPECT_FALSE(cpu.dnnlGemms().handles(1));
  EXPECT_EQ(cpu.dnnlGemms().reason(1), "operands of two dtypes");
}

TEST_F(CpuDnnl, BatchedBf16WithinTheGemmBound) {
  // Two [m, k] x [k, n] products of their own (strides dense): a 3-D matmul.
  const int64_t batch = 3, m = 9, n = 17, k = 40;
  std::vector<float> a = stored(fb::DType::BF16, randomValues(size_t(batch * m * k), 4));
  std::vector<float> w = stored(fb::DType::BF16, randomValues(size_t(batch * k * n), 5));
  ModuleBuilder mb;
  GemmSpec g;
  g.name = "bmm";
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.strideA = m * k, g.strideB = k * n, g.strideOut = m * n;
  g.a = mb.input("a", fb::DType::BF16, {batch, m, k});
  g.b = mb.input("b", fb::DType::BF16, {batch, k, n});
  g.out = mb.activation("o", fb::DType::F32, {batch, m, n});
  mb.output(g.out);
  mb.gemm(g);
  BuiltModule built = mb.build();
  std::shared_ptr<const rt::LoadedModule> module;
  ASSERT_TRUE(rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                           rt::LoadOptions{}, module)
                  .ok());
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createCpuBackend(module, {}, backend).ok());
  EXPECT_TRUE(cpuOf(backend).dnnlGemms().handles(0)) << cpuOf(backend).dnnlGemms().reason(0);
  const std::vector<uint8_t> ab = bytesOf(fb::DType::BF16, a), wb = bytesOf(fb::DType::BF16, w);
  ASSERT_TRUE(backend->setInput(uint32_t(g.a), ab.data(), ab.size()).ok());
  ASSERT_TRUE(backend->setInput(uint32_t(g.b), wb.data(), wb.size()).ok());
  ASSERT_TRUE(backend->launch({}).ok());
  const void *data = nullptr;
  ASSERT_TRUE(backend->readTensor(uint32_t(g.out), &data).ok());
  const auto *got = static_cast<const float *>(data);
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          const double x = double(a[(t * m + i) * k + p]) * double(w[(t * k + p) * n + j]);
          sum += x;
          mag += std::fabs(x);
        }
        const double bound = double(k + 1) * std::ldexp(mag, -23);
        EXPECT_LE(std::fabs(got[(t * m + i) * n + j] - sum), bound)
            << "batch " << t << " (" << i << ", " << j << ")";
      }
}

TEST_F(CpuDnnl, Fp32GemmsGiveTheSameBitsForAnyThreadCount) {
  // Shapes where oneDNN's GEMM-based matmul (AVX2: gemm:jit) splits k over
  // its threads when m and n are small (other bits at 2 or 3 threads than
  // at 1, before the tiles): each runs in one-thread tiles fixed by its
  // shape (DnnlGemms::tiles), so 1, 2 and 3 threads give the same bytes.
  // A constant (packed) weight, an input weight, and a batched product;
  // within the GEMM bound too. Packed weights: tiles of 64 rows and 384
  // columns with partial ones (300 x 600), and 512 columns, whose packed
  // rows are a cache line longer (DnnlGemms::Impl::planTiles). On AVX2 a
  // packed FP32 weight runs on the own packed GEMM (PackedGemm.h;
  // MIXPREC_CPU_OWN_GEMM=0: oneDNN's tiles, checked too): partial panels of
  // 16 columns (40, 600, 50), partial blocks of 6 rows (33, 7), one and
  // three rows (one row: four panels at once), k past its depth of 4096
  // (4100: a second pass continuing the sums), a transposed weight, k 1.
  struct Shape3 {
    int64_t batch, m, n, k;
    bool constantWeight, transB = false;
  };
  for (const Shape3 &sh :
       {Shape3{1, 8, 64, 4096, true}, Shape3{1, 33, 40, 96, false}, Shape3{1, 300, 600, 64, true},
        Shape3{1, 70, 512, 48, true}, Shape3{2, 8, 64, 4096, false}, Shape3{4, 16, 16, 2048, false},
        Shape3{1, 33, 40, 96, true}, Shape3{1, 7, 50, 4100, true, true}, Shape3{1, 6, 16, 1, true},
        Shape3{1, 1, 200, 4100, true}, Shape3{1, 3, 70, 48, true, true}})
    for (const char *own : {"", "0"}) {
      SCOPED_TRACE(std::to_string(sh.batch) + " x " + std::to_string(sh.m) + "x" +
                   std::to_string(sh.n) + "x" + std::to_string(sh.k) + (sh.transB ? " (B^T)" : "") +
                   (*own ? ", MIXPREC_CPU_OWN_GEMM=0" : ""));
      if (!sh.constantWeight && *own)
        continue;
      if (*own)
        setenv("MIXPREC_CPU_OWN_GEMM", own, 1);
      const int64_t batch = sh.batch, m = sh.m, n = sh.n, k = sh.k;
      const std::vector<float> a = randomValues(size_t(batch * m * k), 4);
      const std::vector<float> w = randomValues(size_t(batch * k * n), 5);
      ModuleBuilder mb;
      GemmSpec g;
      g.name = "mm";
      g.m = m, g.n = n, g.k = k, g.batch = batch, g.transB = sh.transB;
      g.strideA = m * k, g.strideB = batch > 1 ? k * n : 0, g.strideOut = m * n;
      g.a = mb.input("a", fb::DType::F32, {batch, m, k});
      // (B^T: w's values read as [n, k].)
      g.b = sh.constantWeight
                ? mb.constantFloats("w", fb::DType::F32, sh.transB ? Shape{n, k} : Shape{k, n}, w)
                : mb.input("w", fb::DType::F32, {batch, k, n});
      g.out = mb.activation("o", fb::DType::F32, {batch, m, n});
      mb.output(g.out);
      mb.gemm(g);
      const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
      ASSERT_TRUE(module);
      std::vector<std::pair<int, std::vector<float>>> inputs = {{g.a, a}};
      if (!sh.constantWeight)
        inputs.push_back({g.b, w});
      std::vector<uint8_t> first;
      for (int threads : {1, 2, 3}) {
        const std::vector<uint8_t> got =
            outputBytes(module, threads, inputs, [&](rt::CpuBackend &cpu) {
              EXPECT_TRUE(cpu.dnnlGemms().handles(0)) << cpu.dnnlGemms().reason(0);
              const bool ownKernel = cpu.dnnlGemms().ownKernel(0);
              if (*own || !sh.constantWeight) {
                EXPECT_FALSE(ownKernel);
              } else if (cpu.dnnlGemms().tiles(0) > 0 && rt::cpu::packedGemmAvailable()) {
                // oneDNN's matmul is its GEMM-based one (tiles: AVX2).
                EXPECT_TRUE(ownKernel) << "gemm:jit: a packed FP32 weight on the own GEMM";
              }
              if (threads == 1)
                std::printf("  %lld tile(s)%s\n", static_cast<long long>(cpu.dnnlGemms().tiles(0)),
                            ownKernel ? " of the own packed GEMM" : "");
            });
        if (threads == 1)
          first = got;
        else
          EXPECT_TRUE(got == first) << threads << " threads: not the bytes of 1";
      }
      ASSERT_EQ(first.size(), size_t(batch * m * n * 4));
      const auto *got = reinterpret_cast<const float *>(first.data());
      size_t bad = 0;
      for (int64_t t = 0; t < batch; ++t)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double sum = 0, mag = 0;
            for (int64_t p = 0; p < k; ++p) {
              const int64_t wAt =
                  (sh.constantWeight ? 0 : t * k * n) + (sh.transB ? j * k + p : p * n + j);
              const double x = double(a[(t * m + i) * k + p]) * double(w[wAt]);
              sum += x;
              mag += std::fabs(x);
            }
            if (!(std::fabs(got[(t * m + i) * n + j] - sum) <=
                  double(k + 1) * std::ldexp(mag, -23)))
              ++bad;
          }
      EXPECT_EQ(bad, 0u);
      unsetenv("MIXPREC_CPU_OWN_GEMM");
    }
}

/// `n` random bias values with -0, NaN, +-inf and 3e38 among them.
std::vector<float> biasWithSpecials(int64_t n, uint32_t seed) {
  std::vector<float> bias = randomValues(size_t(n), seed);
  bias[0] = -0.0f;
  bias[size_t(n) - 1] = NAN;
  bias[size_t(n) / 2] = INFINITY;
  bias[size_t(n) / 3] = -INFINITY;
  bias[size_t(n) / 5] = 3e38f;
  return bias;
}

/// outputs[1][t] ([m, n] FP32, 1 and 2 threads) against want(the same
/// element of outputs[0][t], its column) bit for bit, and the two thread
/// counts' bytes alike; `what` names want in messages.
void expectEachFrom(const std::vector<uint8_t> (&outputs)[2][2], int64_t m, int64_t n,
                    const std::function<float(float, int64_t)> &want, const char *what) {
  for (int t = 0; t < 2; ++t) {
    ASSERT_EQ(outputs[1][t].size(), size_t(m * n * 4));
    ASSERT_EQ(outputs[0][t].size(), size_t(m * n * 4));
    const auto *with = reinterpret_cast<const float *>(outputs[1][t].data());
    const auto *without = reinterpret_cast<const float *>(outputs[0][t].data());
    size_t bad = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const float w = want(without[i * n + j], j);
        if (std::memcmp(&w, &with[i * n + j], sizeof w) != 0 && bad++ < 5) {
          ADD_FAILURE() << t + 1 << " thread(s), (" << i << ", " << j << "): " << with[i * n + j]
                        << ", " << what << " " << w;
        }
      }
    EXPECT_EQ(bad, 0u);
  }
  EXPECT_TRUE(outputs[1][0] == outputs[1][1]) << "2 threads: not the bytes of 1";
}

TEST_F(CpuDnnl, OwnGemmAddsARowBiasWithTheBitsOfAPassAfter) {
  // The own packed GEMM (PackedGemm.h) adds an FP32 row bias to each sum as
  // it stores it (runGemm's epilogue then skips it): each output is the
  // bias-free step's output plus bias[j] rounded once, for 1 and 2 threads,
  // with partial panels and row blocks, one row (four panels at once), k
  // past one pass (4100: the bias in the last only), B^T, k 1, and biases
  // -0, NaN, +-inf and large.
  struct Shape3 {
    int64_t m, n, k;
    bool transB = false;
  };
  for (const Shape3 &sh : {Shape3{33, 40, 96}, Shape3{70, 512, 48}, Shape3{7, 50, 4100, true},
                           Shape3{6, 16, 1}, Shape3{64, 768, 64}, Shape3{1, 200, 4100}}) {
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k) +
                 (sh.transB ? " (B^T)" : ""));
    const int64_t m = sh.m, n = sh.n, k = sh.k;
    const std::vector<float> a = randomValues(size_t(m * k), 6);
    const std::vector<float> w = randomValues(size_t(k * n), 7);
    const std::vector<float> bias = biasWithSpecials(n, 8);
    std::vector<uint8_t> outputs[2][2]; // [with bias][threads - 1]
    for (bool withBias : {false, true}) {
      ModuleBuilder mb;
      GemmSpec g;
      g.name = "mm";
      g.m = m, g.n = n, g.k = k, g.batch = 1, g.transB = sh.transB;
      g.strideA = m * k, g.strideB = 0, g.strideOut = m * n;
      g.a = mb.input("a", fb::DType::F32, {m, k});
      g.b = mb.constantFloats("w", fb::DType::F32, sh.transB ? Shape{n, k} : Shape{k, n}, w);
      g.out = mb.activation("o", fb::DType::F32, {m, n});
      if (withBias) {
        g.bias = mb.constantFloats("b", fb::DType::F32, {n}, bias);
        g.epilogue = fb::Epilogue::Bias;
      }
      mb.output(g.out);
      mb.gemm(g);
      const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
      ASSERT_TRUE(module);
      for (int threads : {1, 2})
        outputs[withBias][threads - 1] =
            outputBytes(module, threads, {{g.a, a}}, [&](rt::CpuBackend &cpu) {
              if (cpu.dnnlGemms().tiles(0) > 0 && rt::cpu::packedGemmAvailable()) {
                EXPECT_TRUE(cpu.dnnlGemms().ownKernel(0));
              }
            });
    }
    expectEachFrom(
        outputs, m, n, [&](float sum, int64_t j) { return sum + bias[size_t(j)]; },
        "the sum plus the bias");
  }
}

TEST_F(CpuDnnl, OwnGemmAppliesAnFp8FactorThenABiasWithTheBitsOfPassesAfter) {
  // An FP8 step's factor (1 / a's scale) * (1 / b's scale), then its row
  // bias, applied by the own packed GEMM as it stores each finished sum
  // (runGemm's epilogue skips both): each output is the unscaled,
  // bias-free step's sum times the factor, then plus bias[j], each rounded
  // once; for 1 and 2 threads, k past one pass (4100: both in the last
  // only), k 1, one row (four panels at once: multiplyRowPanels), a factor
  // that rounds, and biases -0, NaN, +-inf and large.
  // (Where oneDNN's kernels run the step, the passes do it: the same.)
  struct Shape3 {
    int64_t m, n, k;
  };
  const float scaleA = 3.0f, scaleB = 0.7f;
  const float factor = (1.0f / scaleA) * (1.0f / scaleB);
  for (const Shape3 &sh :
       {Shape3{33, 40, 96}, Shape3{7, 50, 4100}, Shape3{6, 16, 1}, Shape3{1, 200, 4100}}) {
    SCOPED_TRACE(std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k));
    const int64_t m = sh.m, n = sh.n, k = sh.k;
    const std::vector<float> a = randomValues(size_t(m * k), 16);
    const std::vector<float> w = randomValues(size_t(k * n), 17);
    const std::vector<float> bias = biasWithSpecials(n, 18);
    std::vector<uint8_t> outputs[2][2]; // [scaled with a bias][threads - 1]
    for (bool scaled : {false, true}) {
      ModuleBuilder mb;
      GemmSpec g = linearGemm("mm", mb.constantFloats("a", fb::DType::F8E4M3FN, {m, k}, a),
                              mb.constantFloats("w", fb::DType::F8E4M3FN, {n, k}, w),
                              mb.activation("o", fb::DType::F32, {m, n}), m, n, k);
      if (scaled) {
        g.aScale = mb.constantFloats("sa", fb::DType::F32, {}, {scaleA});
        g.bScale = mb.constantFloats("sb", fb::DType::F32, {}, {scaleB});
        g.bias = mb.constantFloats("b", fb::DType::F32, {n}, bias);
        g.epilogue = fb::Epilogue::Bias;
      }
      mb.output(g.out);
      mb.gemm(g);
      const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
      ASSERT_TRUE(module);
      for (int threads : {1, 2})
        outputs[scaled][threads - 1] = outputBytes(module, threads, {}, [&](rt::CpuBackend &cpu) {
          if (rt::cpu::packedGemmAvailable() && !__builtin_cpu_supports("avx512bf16")) {
            EXPECT_TRUE(cpu.dnnlGemms().ownKernel(0)) << "FP8 widened to FP32: the own GEMM";
          }
        });
    }
    expectEachFrom(
        outputs, m, n,
        [&](float sum, int64_t j) {
          const float scaled = sum * factor; // then the bias: two roundings
          return scaled + bias[size_t(j)];
        },
        "the sum times the factor plus the bias");
  }
}

TEST_F(CpuDnnl, NarrowWeightsOnTheOwnGemmInHalfTheBytesWithTheBitsOfFmasInKOrder) {
  // A BF16, FP8 (E4M3, E5M2) or FP16 constant weight whose GEMM runs on
  // FP32 kernels (AVX2: oneDNN's gemm:jit) is packed for the own GEMM in
  // BF16 (FP8's values are BF16 values) or FP16 panels, 2 bytes a value
  // (MIXPREC_CPU_NARROW_PANELS=0: FP32 panels): either way each output is
  // exactly the FP32 fused multiply-adds of the stored values in k order
  // from 0, for 1 and 2 threads; one row walks four panels at once
  // (multiplyRowPanels: 1 x 200 x 4100 also past the depth of 4096, 1 x 272
  // four groups and a panel), partial panels and row blocks. Elsewhere
  // (oneDNN's own order) the GEMM bound.
  struct Shape3 {
    int64_t m, n, k;
  };
  for (fb::DType dtype : {fb::DType::BF16, fb::DType::F8E4M3FN, fb::DType::F8E5M2, fb::DType::F16})
    for (const Shape3 &sh : {Shape3{1, 40, 96}, Shape3{1, 200, 4100}, Shape3{1, 272, 300},
                             Shape3{3, 70, 48}, Shape3{33, 600, 64}, Shape3{5, 16, 1}})
      for (const char *narrow : {"", "0"}) {
        const int64_t m = sh.m, n = sh.n, k = sh.k;
        SCOPED_TRACE(std::string(rt::dtypeName(dtype)) + " " + std::to_string(m) + "x" +
                     std::to_string(n) + "x" + std::to_string(k) +
                     (*narrow ? ", MIXPREC_CPU_NARROW_PANELS=0" : ""));
        const std::vector<float> a = stored(dtype, randomValues(size_t(m * k), 21));
        const std::vector<float> w = stored(dtype, randomValues(size_t(n * k), 22));
        ModuleBuilder mb;
        GemmSpec g = linearGemm("mm", mb.constantFloats("a", dtype, {m, k}, a),
                                mb.constantFloats("w", dtype, {n, k}, w),
                                mb.activation("o", fb::DType::F32, {m, n}), m, n, k);
        mb.output(g.out);
        mb.gemm(g);
        const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
        ASSERT_TRUE(module);
        if (*narrow)
          setenv("MIXPREC_CPU_NARROW_PANELS", narrow, 1);
        bool own[2] = {false, false};
        std::vector<uint8_t> outputs[2];
        for (int threads : {1, 2})
          outputs[threads - 1] = outputBytes(module, threads, {}, [&](rt::CpuBackend &cpu) {
            const rt::DnnlGemms &gemms = cpu.dnnlGemms();
            EXPECT_TRUE(gemms.handles(0)) << gemms.reason(0);
            own[threads - 1] = gemms.ownKernel(0);
            if (gemms.computeType(0) != fb::DType::F32 || gemms.tiles(0) == 0 ||
                !rt::cpu::packedGemmAvailable())
              return; // oneDNN's kernels in the stored dtype, or not gemm:jit
            EXPECT_TRUE(gemms.ownKernel(0));
            const fb::DType panels = *narrow                   ? fb::DType::F32
                                     : dtype == fb::DType::F16 ? fb::DType::F16
                                                               : fb::DType::BF16;
            EXPECT_EQ(gemms.packedWeightType(0), panels);
            EXPECT_EQ(gemms.packedBytes(),
                      size_t(k * ((n + 15) / 16 * 16)) * (panels == fb::DType::F32 ? 4 : 2));
          });
        unsetenv("MIXPREC_CPU_NARROW_PANELS");
        EXPECT_TRUE(outputs[1] == outputs[0]) << "2 threads: not the bytes of 1";
        ASSERT_EQ(outputs[0].size(), size_t(m * n * 4));
        const auto *got = reinterpret_cast<const float *>(outputs[0].data());
        size_t bad = 0;
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < n; ++j) {
            float fmas = 0.0f;
            double sum = 0, mag = 0;
            for (int64_t i = 0; i < k; ++i) {
              const float av = a[size_t(r * k + i)], wv = w[size_t(j * k + i)];
              fmas = std::fma(av, wv, fmas);
              sum += double(av) * double(wv); // exact
              mag += std::fabs(double(av) * double(wv));
            }
            const float y = got[r * n + j];
            const bool ok = own[0] ? std::memcmp(&y, &fmas, sizeof y) == 0
                                   : std::fabs(y - sum) <= double(k + 1) * std::ldexp(mag, -23);
            if (!ok && bad++ < 5)
              ADD_FAILURE() << "(" << r << ", " << j << "): " << y << ", FMAs in k order " << fmas
                            << (own[0] ? "" : " (oneDNN: beyond the GEMM bound)");
          }
        EXPECT_EQ(bad, 0u);
      }
}

TEST_F(CpuDnnl, NarrowActivationsOnlyGemmsReadAreStoredWideWithTheSameBits) {
  // findWideStorage: x quantized (FP8) or rounded (BF16, FP16) by a kernel
  // to xq, which two GEMMs read, one through xv (a view: xq's bytes and
  // dtype), and to xt, transposed (strided stores), which a GEMM reads; z
  // the same, but a kernel reads it back: kept narrow. Where the
  // GEMMs widen their A, the wide path (the kernels store xq widened, no
  // widening pass before the GEMMs) gives the bits of the narrow one
  // (MIXPREC_CPU_WIDE_STORE=0) for 1 and 2 threads, every kernel split,
  // with NaN, infinities, signed zeros, values that saturate or overflow
  // and subnormals in x. On BF16 kernels (MIXPREC_CPU_BF16=native, where
  // the CPU has them: FP8 stored as BF16, BF16 not widened) and on FP32
  // ones (fp32: all stored as FP32).
  for (const char *bf16 : {"native", "fp32"})
    for (fb::DType dtype :
         {fb::DType::F8E4M3FN, fb::DType::F8E5M2, fb::DType::BF16, fb::DType::F16}) {
      if (!std::strcmp(bf16, "native") && !__builtin_cpu_supports("avx512bf16"))
        continue;
      setenv("MIXPREC_CPU_BF16", bf16, 1);
      SCOPED_TRACE(std::string(bf16) + " " + rt::dtypeName(dtype));
      const bool fp8 = dtype == fb::DType::F8E4M3FN || dtype == fb::DType::F8E5M2;
      const int64_t m = 33, n = 40, k = 96;
      std::vector<float> x = randomValues(size_t(m * k), 7, -40.0f, 40.0f);
      x[3] = NAN, x[5] = INFINITY, x[6] = -INFINITY, x[9] = 0.0f, x[10] = -0.0f;
      x[11] = 1e6f, x[12] = -1e6f, x[13] = 1e-4f, x[14] = -3e-5f, x[15] = 1e-41f;
      const std::vector<float> w = stored(dtype, randomValues(size_t(n * k), 8));
      ModuleBuilder mb;
      const int xin = mb.input("x", fb::DType::F32, {m, k});
      const int scale = mb.constantFloats("sx", fb::DType::F32, {}, {0.25f});
      const int sw = mb.constantFloats("sw", fb::DType::F32, {}, {2.0f});
      const int wt = mb.constantFloats("w", dtype, {n, k}, w);
      const int xq = mb.activation("xq", dtype, {m, k});
      const int z = mb.activation("z", dtype, {m, k});
      const int zr = mb.activation("zr", fb::DType::F32, {m, k});
      const int xt = mb.activation("xt", dtype, {k, m}); // x transposed: strided stores
      const std::vector<float> w2 = stored(dtype, randomValues(size_t(n * m), 9));
      const int wt2 = mb.constantFloats("w2", dtype, {n, m}, w2);
      {
        KernelSpec &q = mb.kernel("quantize", {m, k}, 0);
        const int v = fp8 ? q.quantize(q.load(xin, {k, 1}), q.load(scale, {0, 0}), dtype)
                          : q.load(xin, {k, 1}); // rounded by the stores
        q.store(xq, v, {k, 1}, dtype);
        q.store(z, v, {k, 1}, dtype);
        q.store(xt, v, {1, m}, dtype);
      }
      const int xv = mb.activation("xv", dtype, {m, k});
      const int y = mb.activation("y", fb::DType::F32, {m, n});
      const int y2 = mb.activation("y2", fb::DType::F32, {m, n});
      const int y3 = mb.activation("y3", fb::DType::F32, {m, n});
      auto gemm = [&](const std::string &name, int a, int out, int b, int64_t rows, int64_t inner) {
        GemmSpec g;
        g.name = name;
        g.m = rows, g.n = n, g.k = inner;
        g.transB = true;
        g.strideA = rows * inner, g.strideB = n * inner, g.strideOut = rows * n;
        g.a = a, g.b = b, g.out = out;
        if (fp8)
          g.aScale = scale, g.bScale = sw;
        mb.gemm(g);
        mb.output(out);
      };
      const int yt = mb.activation("yt", fb::DType::F32, {k, n});
      gemm("fc", xq, y, wt, m, k);
      gemm("fc_view", xv, y2, wt, m, k);
      gemm("fc_z", z, y3, wt, m, k);
      gemm("fc_t", xt, yt, wt2, k, m);
      {
        KernelSpec &r = mb.kernel("read_z", {m, k}, 0);
        r.store(zr, r.load(z, {k, 1}), {k, 1}, fb::DType::F32);
      }
      mb.output(zr);
      mb.build(); // offsets assigned; then xv laid over xq
      mb.tensors[size_t(xv)].offset = mb.tensors[size_t(xq)].offset;
      const std::shared_ptr<const rt::LoadedModule> module = load(mb.build(/*keepOffsets=*/true));
      ASSERT_TRUE(module);
      bool widened = false;
      auto checkGemm = [&](rt::CpuBackend &cpu) {
        EXPECT_TRUE(cpu.dnnlGemms().handles(0));
        widened = cpu.dnnlGemms().computeType(0) != dtype;
        if (dtype != fb::DType::F16) { // FP16: the CPU decides
          EXPECT_EQ(cpu.dnnlGemms().computeType(0),
                    std::strcmp(bf16, "native") ? fb::DType::F32 : fb::DType::BF16);
        }
      };
      const std::vector<uint8_t> want = expectSameBytesAsWithout(
          "MIXPREC_CPU_WIDE_STORE", module, {{xin, x}},
          [&](rt::CpuBackend &cpu) {
            checkGemm(cpu);
            EXPECT_EQ(cpu.wideTensors(), 0);
          },
          [&](rt::CpuBackend &cpu) {
            checkGemm(cpu);
            EXPECT_EQ(cpu.wideTensors(), widened ? 3 : 0) << "xq, its view xv and xt; not z";
          });
      // The outputs hold something: y is no copy of zeros.
      const float *y0 = reinterpret_cast<const float *>(want.data());
      EXPECT_TRUE(std::any_of(y0, y0 + m * n, [](float v) { return v != 0.0f; }));
      unsetenv("MIXPREC_CPU_BF16");
    }
}

TEST_F(CpuDnnl, Bf16AndFp8OnBf16OrFp32KernelsWithinTheGemmBound) {
  // dnnl::bf16Native: BF16 and FP8 operands on oneDNN's BF16 kernels, or
  // widened to FP32 for its FP32 ones where those are faster: either way
  // oneDNN, the weight packed once, nothing decoded in runs, the GEMM
  // bound.
  for (const char *bf16 : {"native", "fp32"})
    for (fb::DType dtype : {fb::DType::BF16, fb::DType::F8E4M3FN, fb::DType::F8E5M2}) {
      if (!std::strcmp(bf16, "native") && !__builtin_cpu_supports("avx512bf16"))
        continue;
      setenv("MIXPREC_CPU_BF16", bf16, 1);
      SCOPED_TRACE(std::string(bf16) + " " + rt::dtypeName(dtype));
      LinearCase c;
      c.dtype = dtype;
      if (c.fp8()) {
        c.scaleX = 4.0f;
        c.scaleW = 0.5f;
      }
      checkLinear(c, 2, true, /*packs=*/1, /*decodes=*/0);
    }
  unsetenv("MIXPREC_CPU_BF16");
}

TEST_F(CpuDnnl, Fp8QuantizeAfterAGemmInItsEpilogueWithTheSameBits) {
  // findGemmQuantizes: h = gelu(x . W1^T + b1) (BF16, F16 or F32), then a
  // kernel quantizing h to FP8 (scale a constant, or a scalar tensor as
  // dynamic scaling computes), read by a second GEMM as A (stored wide
  // where that GEMM widens it) and, in one variant, an output too (then
  // narrow). Computed in the
  // first GEMM's epilogue, the bits of the two steps
  // (MIXPREC_CPU_GEMM_QUANTIZE=0), with NaN, infinities and values that
  // saturate in h, on 1 and 2 threads.
  for (fb::DType hType : {fb::DType::BF16, fb::DType::F16, fb::DType::F32})
    for (fb::DType q : {fb::DType::F8E4M3FN, fb::DType::F8E5M2})
      for (bool tensorScale : {false, true})
        for (bool hqOut : {true, false}) {
          SCOPED_TRACE(std::string(rt::dtypeName(hType)) + " -> " + rt::dtypeName(q) +
                       (tensorScale ? ", scale tensor" : ", constant scale") +
                       (hqOut ? ", hq an output" : ", hq read by fc2 only"));
          const int64_t m = 37, k = 64, n = 80, n2 = 24;
          std::vector<float> x = randomValues(size_t(m * k), 11, -3.0f, 3.0f);
          x[5] = NAN, x[2 * k + 1] = INFINITY, x[4 * k] = -INFINITY; // rows 0, 2, 4
          for (int64_t j = 0; j < k; ++j) {
            x[6 * k + j] = 3e2f; // row 6: beyond E4M3's largest (scaled)
            x[8 * k + j] = 3e4f; // row 8: beyond E5M2's (FP16's: inf)
          }
          ModuleBuilder mb;
          const int xin = mb.input("x", fb::DType::F32, {m, k});
          const int w1 =
              mb.constantFloats("w1", fb::DType::F32, {n, k}, randomValues(size_t(n * k), 12));
          const int b1 = mb.constantFloats("b1", fb::DType::F32, {n}, randomValues(size_t(n), 13));
          const int w2 =
              mb.constantFloats("w2", q, {n2, n}, stored(q, randomValues(size_t(n2 * n), 14)));
          const int sw = mb.constantFloats("sw", fb::DType::F32, {}, {2.0f});
          const int sIn = mb.input("s", fb::DType::F32, {});
          const int h = mb.activation("h", hType, {m, n});
          const int hq = mb.activation("hq", q, {m, n});
          const int y = mb.activation("y", fb::DType::F32, {m, n2});
          GemmSpec g1 = linearGemm("fc1", xin, w1, h, m, n, k);
          g1.bias = b1, g1.epilogue = fb::Epilogue::BiasGelu;
          mb.gemm(g1);
          {
            KernelSpec &kq = mb.kernel("quantize_h", {m, n}, 0);
            const int scale = tensorScale ? kq.load(sIn, {0, 0}) : kq.constant(0.75f);
            kq.store(hq, kq.quantize(kq.load(h, {n, 1}), scale, q), {n, 1}, q);
          }
          GemmSpec g2 = linearGemm("fc2", hq, w2, y, m, n2, n);
          g2.aScale = sIn, g2.bScale = sw;
          mb.gemm(g2);
          mb.output(y);
          if (hqOut)
            mb.output(hq);
          const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
          ASSERT_TRUE(module);
          const std::vector<std::pair<int, std::vector<float>>> inputs = {{xin, x}, {sIn, {0.75f}}};
          const std::vector<uint8_t> want = expectSameBytesAsWithout(
              "MIXPREC_CPU_GEMM_QUANTIZE", module, inputs,
              [](rt::CpuBackend &cpu) { EXPECT_EQ(cpu.fusedGemmQuantizes(), 0); },
              [&](rt::CpuBackend &cpu) {
                EXPECT_EQ(cpu.fusedGemmQuantizes(), 1);
                EXPECT_TRUE(cpu.dnnlGemms().handles(1));
                // Stored wide where fc2 widens it, unless an output.
                const bool widens = cpu.dnnlGemms().computeType(1) != q;
                EXPECT_EQ(cpu.wideTensors(), !hqOut && widens ? 1 : 0);
              });
          if (!hqOut)
            continue;
          // hq holds NaN (row 0), the largest finite FP8 (saturated: row 6
          // for E4M3, row 8 for E5M2 but from an FP16 h, which is inf there)
          // and other values.
          const uint8_t *hqBytes = want.data() + m * n2 * 4;
          const num::Format format =
              q == fb::DType::F8E4M3FN ? num::Format::F8E4M3FN : num::Format::F8E5M2;
          std::vector<float> values(size_t(m * n));
          for (size_t i = 0; i < values.size(); ++i)
            values[i] = num::decode(format, hqBytes[i]);
          EXPECT_TRUE(
              std::any_of(values.begin(), values.begin() + n, [](float v) { return v != v; }));
          const float largest = q == fb::DType::F8E4M3FN ? 448.0f : 57344.0f;
          const int64_t row = q == fb::DType::F8E4M3FN ? 6 : 8;
          if (q == fb::DType::F8E4M3FN || hType != fb::DType::F16) {
            EXPECT_TRUE(std::any_of(values.begin() + row * n, values.begin() + (row + 1) * n,
                                    [&](float v) { return std::fabs(v) == largest; }));
          }
          EXPECT_GT(std::count_if(values.begin(), values.end(),
                                  [](float v) { return v != 0.0f && std::isfinite(v); }),
                    m * n / 2);
        }
}

TEST_F(CpuDnnl, AmaxAfterAGemmInItsEpilogueWithTheSameBits) {
  // findGemmAmaxes: h = x . W1^T (+ b1, GELU) in BF16, F16 or F32, then a
  // kernel taking amax(h) into a scalar (current scaling's amax), both
  // outputs, h also read by a second GEMM. Computed in the GEMM's
  // epilogue: the bits of the two steps (MIXPREC_CPU_GEMM_AMAX=0), with
  // finite values only, with values beyond FP16's range (inf in an FP16 h,
  // the largest BF16 value there otherwise) and with a NaN, on 1 and 2
  // threads; the FP32 GEMM without epilogue writes h in place.
  enum class Data { Finite, Large, NaN };
  for (fb::DType hType : {fb::DType::BF16, fb::DType::F16, fb::DType::F32})
    for (bool epilogue : {true, false})
      for (Data data : {Data::Finite, Data::Large, Data::NaN}) {
        SCOPED_TRACE(std::string(rt::dtypeName(hType)) + (epilogue ? ", bias + GELU" : "") +
                     ", data " + std::to_string(static_cast<int>(data)));
        const int64_t m = 37, k = 64, n = 80, n2 = 24;
        std::vector<float> x = randomValues(size_t(m * k), 21, -3.0f, 3.0f);
        if (data == Data::Large)
          for (int64_t j = 0; j < k; ++j)
            x[9 * k + j] = 3e4f; // row 9
        if (data == Data::NaN)
          x[20 * k + 3] = NAN; // row 20
        ModuleBuilder mb;
        const int xin = mb.input("x", fb::DType::F32, {m, k});
        const int w1 =
            mb.constantFloats("w1", fb::DType::F32, {n, k}, randomValues(size_t(n * k), 22));
        const int b1 = mb.constantFloats("b1", fb::DType::F32, {n}, randomValues(size_t(n), 23));
        const int w2 =
            mb.constantFloats("w2", fb::DType::F32, {n2, n}, randomValues(size_t(n2 * n), 24));
        const int h = mb.activation("h", hType, {m, n});
        const int a = mb.activation("amax_h", fb::DType::F32, {});
        const int y = mb.activation("y", fb::DType::F32, {m, n2});
        GemmSpec g1 = linearGemm("fc1", xin, w1, h, m, n, k);
        if (epilogue)
          g1.bias = b1, g1.epilogue = fb::Epilogue::BiasGelu;
        mb.gemm(g1);
        {
          KernelSpec &ka = mb.kernel("amax_h", {m, n}, 0);
          ka.store(a, ka.unary(fb::OpCode::Amax, ka.load(h, {n, 1})), {0, 0}, fb::DType::F32);
        }
        mb.gemm(linearGemm("fc2", h, w2, y, m, n2, n));
        mb.output(a);
        mb.output(h);
        mb.output(y);
        const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
        ASSERT_TRUE(module);
        const std::vector<std::pair<int, std::vector<float>>> inputs = {{xin, x}};
        const std::vector<uint8_t> want = expectSameBytesAsWithout(
            "MIXPREC_CPU_GEMM_AMAX", module, inputs,
            [](rt::CpuBackend &cpu) { EXPECT_EQ(cpu.fusedGemmAmaxes(), 0); },
            [](rt::CpuBackend &cpu) {
              EXPECT_EQ(cpu.fusedGemmAmaxes(), 1);
              EXPECT_TRUE(cpu.dnnlGemms().handles(0));
            });
        // The amax the kernel took: NaN, inf (FP16) or large, else finite.
        float amax = 0.0f;
        std::memcpy(&amax, want.data(), 4);
        if (data == Data::NaN)
          EXPECT_TRUE(std::isnan(amax)) << amax;
        else if (data == Data::Large && hType == fb::DType::F16)
          EXPECT_TRUE(std::isinf(amax)) << amax;
        else if (data == Data::Large)
          EXPECT_GT(amax, 65504.0f);
        else
          EXPECT_TRUE(std::isfinite(amax) && amax > 1.0f) << amax;
      }
}

TEST_F(CpuDnnl, AQuantizeOnlyStoredIsStoredInOnePassWithTheSameBits) {
  // KernelPlan::Inst::fusedQuantize: a quantize by a scalar scale tensor
  // (current scaling's), only stored, written by numerics::quantizeFp8Store
  // in one pass: straight from h, the tensor it loads (F32, BF16 or F16),
  // into hq, an output (FP8 codes); from a computed value, 2h + 1, into hw,
  // read by a GEMM only (stored wide, as BF16 or FP32 as oneDNN takes
  // it); not where the store is strided (ht, transposed). The bits of the
  // separate steps (MIXPREC_CPU_QUANTIZE_STORE=0), for scales that round,
  // saturate and are NaN, with NaN, infinities, signed zeros and
  // subnormals in h, on 1 and 2 threads, rows that span pieces.
  for (const char *bf16 : {"native", "fp32"})
    for (fb::DType hType : {fb::DType::F32, fb::DType::BF16, fb::DType::F16})
      for (fb::DType q : {fb::DType::F8E4M3FN, fb::DType::F8E5M2}) {
        if (!std::strcmp(bf16, "native") && !__builtin_cpu_supports("avx512bf16"))
          continue;
        setenv("MIXPREC_CPU_BF16", bf16, 1);
        const int64_t m = 29, k = 700, n = 16;
        std::vector<float> x = randomValues(size_t(m * k), 31, -30.0f, 30.0f);
        x[1] = NAN, x[k + 2] = INFINITY, x[2 * k + 3] = -INFINITY, x[3 * k] = -0.0f;
        x[4 * k + 5] = 1e-3f, x[5 * k + 6] = -2e-4f, x[6 * k + 7] = 1e-41f, x[7 * k + 8] = 7e4f;
        ModuleBuilder mb;
        const int xin = mb.input("x", fb::DType::F32, {m, k});
        const int sIn = mb.input("s", fb::DType::F32, {});
        int h = xin;
        if (hType != fb::DType::F32) {
          h = mb.activation("h", hType, {m, k});
          KernelSpec &kr = mb.kernel("round_h", {m, k}, 0);
          kr.store(h, kr.load(xin, {k, 1}), {k, 1}, hType);
        }
        const int hq = mb.activation("hq", q, {m, k});
        const int hw = mb.activation("hw", q, {m, k});
        const int ht = mb.activation("ht", q, {k, m});
        {
          KernelSpec &kq = mb.kernel("quantize_h", {m, k}, 0);
          kq.store(hq, kq.quantize(kq.load(h, {k, 1}), kq.load(sIn, {0, 0}), q), {k, 1}, q);
        }
        {
          KernelSpec &kw = mb.kernel("quantize_2h_plus_1", {m, k}, 0);
          const int v = kw.binary(fb::OpCode::Add,
                                  kw.binary(fb::OpCode::Mul, kw.load(h, {k, 1}), kw.constant(2.0f)),
                                  kw.constant(1.0f));
          kw.store(hw, kw.quantize(v, kw.load(sIn, {0, 0}), q), {k, 1}, q);
        }
        {
          KernelSpec &kt = mb.kernel("quantize_h_transposed", {m, k}, 0);
          kt.store(ht, kt.quantize(kt.load(h, {k, 1}), kt.load(sIn, {0, 0}), q), {1, m}, q);
        }
        const int w = mb.constantFloats("w", q, {n, k}, stored(q, randomValues(size_t(n * k), 32)));
        const int sw = mb.constantFloats("sw", fb::DType::F32, {}, {0.5f});
        const int y = mb.activation("y", fb::DType::F32, {m, n});
        GemmSpec g = linearGemm("fc", hw, w, y, m, n, k);
        g.aScale = sIn, g.bScale = sw;
        mb.gemm(g);
        mb.output(hq);
        mb.output(ht);
        mb.output(y);
        const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
        ASSERT_TRUE(module);
        for (float scale : {0.75f, 40.0f, NAN}) {
          SCOPED_TRACE(std::string(bf16) + " " + rt::dtypeName(hType) + " -> " + rt::dtypeName(q) +
                       ", scale " + std::to_string(scale));
          const std::vector<uint8_t> want = expectSameBytesAsWithout(
              "MIXPREC_CPU_QUANTIZE_STORE", module, {{xin, x}, {sIn, {scale}}},
              [](rt::CpuBackend &cpu) { EXPECT_EQ(cpu.quantizeStores(), 0); },
              [&](rt::CpuBackend &cpu) {
                EXPECT_EQ(cpu.quantizeStores(), 2) << "hq and hw, not ht";
                EXPECT_TRUE(cpu.dnnlGemms().handles(0));
                EXPECT_EQ(cpu.wideTensors(), cpu.dnnlGemms().computeType(0) != q ? 1 : 0);
              });
          // hq holds NaN (all of it for a NaN scale), +-max finite where the
          // scale saturates, and other values.
          const num::Format format =
              q == fb::DType::F8E4M3FN ? num::Format::F8E4M3FN : num::Format::F8E5M2;
          const float largest = q == fb::DType::F8E4M3FN ? 448.0f : 57344.0f;
          int64_t nans = 0, saturated = 0, finite = 0;
          for (int64_t i = 0; i < m * k; ++i) {
            const float v = num::decode(format, want[size_t(i)]);
            nans += v != v;
            saturated += std::fabs(v) == largest;
            finite += std::isfinite(v) && v != 0.0f;
          }
          if (scale != scale) {
            EXPECT_EQ(nans, m * k);
          } else {
            // NaN, +-inf, and 7e4 where FP16 makes it inf.
            EXPECT_EQ(nans, hType == fb::DType::F16 ? 4 : 3);
            EXPECT_GT(finite, m * k / 2);
            if (scale == 40.0f && q == fb::DType::F8E4M3FN) {
              EXPECT_GT(saturated, 0);
            }
          }
        }
        unsetenv("MIXPREC_CPU_BF16");
      }
}

TEST(CpuKernelAmax, AnAmaxKernelAfterTheKernelStoringItsTensorRunsThereWithTheSameBits) {
  // findKernelAmaxes: amax(h) into a scalar (current scaling's amax), the
  // step right after the kernel that stores h, taken by that kernel from
  // the values it stores: h a LayerNorm-like kernel's output (rows, row
  // sums; cast to h's dtype), h2 an element-wise one stored transposed;
  // h3 stores an FP32 value into h's dtype (rounded by the store): not
  // taken but where h3 is FP32. The bits of the separate steps
  // (MIXPREC_CPU_KERNEL_AMAX=0), finite, with a NaN, with infinities, on
  // 1 and 2 threads.
  using Op = fb::OpCode;
  for (fb::DType hType : {fb::DType::F32, fb::DType::BF16, fb::DType::F16})
    for (int data = 0; data < 3; ++data) {
      SCOPED_TRACE(std::string(rt::dtypeName(hType)) + ", data " + std::to_string(data));
      const int64_t m = 23, k = 300;
      std::vector<float> x = randomValues(size_t(m * k), 41, -5.0f, 5.0f);
      if (data == 1)
        x[7 * k + 11] = NAN;
      if (data == 2)
        x[3 * k + 1] = INFINITY, x[9 * k] = -INFINITY;
      ModuleBuilder mb;
      const int xin = mb.input("x", fb::DType::F32, {m, k});
      const int h = mb.activation("h", hType, {m, k});
      const int h2 = mb.activation("h2", hType, {k, m});
      const int h3 = mb.activation("h3", hType, {m, k});
      const int a = mb.activation("a", fb::DType::F32, {});
      const int a2 = mb.activation("a2", fb::DType::F32, {});
      const int a3 = mb.activation("a3", fb::DType::F32, {});
      auto amaxKernel = [&](const std::string &name, int t, int out, int64_t rows, int64_t cols) {
        KernelSpec &ka = mb.kernel(name, {rows, cols}, 0);
        ka.store(out, ka.unary(Op::Amax, ka.load(t, {cols, 1})), {0, 0}, fb::DType::F32);
      };
      {
        KernelSpec &kn = mb.kernel("norm", {m, k}, 1);
        const int v = kn.load(xin, {k, 1});
        const int mean = kn.binary(Op::Mul, kn.unary(Op::RowSum, v), kn.constant(1.0f / k));
        const int d = kn.binary(Op::Mul, kn.binary(Op::Sub, v, mean), kn.constant(3.0f));
        kn.store(h, kn.cast(d, hType), {k, 1}, hType);
      }
      amaxKernel("amax_h", h, a, m, k);
      {
        KernelSpec &kt = mb.kernel("scale_t", {m, k}, 0);
        const int v = kt.binary(Op::Mul, kt.load(xin, {k, 1}), kt.constant(-7.0f));
        kt.store(h2, kt.cast(v, hType), {1, m}, hType);
      }
      amaxKernel("amax_h2", h2, a2, k, m);
      {
        KernelSpec &kf = mb.kernel("f32_into_h3", {m, k}, 0);
        kf.store(h3, kf.binary(Op::Add, kf.load(xin, {k, 1}), kf.constant(0.1f)), {k, 1}, hType);
      }
      amaxKernel("amax_h3", h3, a3, m, k);
      for (int out : {a, a2, a3, h, h2, h3})
        mb.output(out);
      const std::shared_ptr<const rt::LoadedModule> module = load(mb.build());
      ASSERT_TRUE(module);
      const int64_t taken = hType == fb::DType::F32 ? 3 : 2;
      const std::vector<uint8_t> want = expectSameBytesAsWithout(
          "MIXPREC_CPU_KERNEL_AMAX", module, {{xin, x}},
          [](rt::CpuBackend &cpu) { EXPECT_EQ(cpu.fusedKernelAmaxes(), 0); },
          [&](rt::CpuBackend &cpu) { EXPECT_EQ(cpu.fusedKernelAmaxes(), taken); });
      // The amaxes: NaN, inf or finite and large.
      for (int i = 0; i < 3; ++i) {
        float amax = 0.0f;
        std::memcpy(&amax, want.data() + 4 * i, 4);
        if (data == 1 || (data == 2 && i == 0)) // norm's row with an inf: inf - inf
          EXPECT_TRUE(std::isnan(amax)) << i;
        else if (data == 2)
          EXPECT_TRUE(std::isinf(amax)) << i;
        else
          EXPECT_TRUE(std::isfinite(amax) && amax > 4.0f) << i << ": " << amax;
      }
    }
}

} // namespace
} // namespace mixprec::testing
