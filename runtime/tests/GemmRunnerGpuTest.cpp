//===- GemmRunnerGpuTest.cpp - the GEMM runner on a GPU (label gpu) -------===//
//
// Exits 77 (skip) with the reason where the driver finds no device. Else,
// per case: a one-Gemm module (GemmTestModules.h) loaded and verified, its
// tensors in one device arena at the module's offsets, inputs drawn from a
// seeded generator and stored in their dtypes, the output filled with 0xff
// bytes first; createGemmRunner, prepare, run on a stream, read back, and
// compare with a CPU reference computed as CpuGemmStep.cpp does (decoded
// operands, TF32-rounded when asked, FP8 dequantized by (1/sa)(1/sb), bias,
// tanh GELU or ReLU) in double. Bounds per element:
//   |got - ref| <= ulp(out dtype) |ref| + eps * sum_k |a b| (+ GELU's)
// with eps k*2^-23 for FP32 accumulation (tensor cores may truncate; strict
// FP32: a TF32 result misses it by ~2^3), 2^-9 for TF32 operands (either
// side may round or truncate to TF32), 2^-10 for FP8's tensor-core sums.
// Bytes of the output tensor that no batch covers must stay 0xff.
//
// With --cpu-backend it runs the same cases on the CPU backend instead (no
// GPU; ctest gemm_runner_reference_cpu): the reference and its bounds agree
// with the semantics the runner must match.
//
//===----------------------------------------------------------------------===//
#include "common/numerics/Rounding.h"
#include "runtime/src/Backend.h"
#include "runtime/src/backends/cuda/CublasLt.h"
#include "runtime/src/backends/cuda/CudaDriver.h"
#include "runtime/src/backends/cuda/CudaGemm.h"
#include "runtime/tests/GemmTestModules.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

namespace cuda = mixprec::runtime::cuda;
namespace numerics = mixprec::numerics;
using mixprec::runtime::GemmDesc;
using mixprec::runtime::LoadedModule;
using mixprec::runtime::Status;
using mixprec::runtime::TensorDesc;
using mixprec::schema::DType;
using mixprec::schema::Epilogue;
using mixprec::testing::GemmCase;
namespace gt = mixprec::testing;

numerics::Format formatOf(DType t) { return static_cast<numerics::Format>(t); }
bool isFp8(DType t) { return t == DType::F8E4M3FN || t == DType::F8E5M2; }

/// A deterministic uniform value in [-1, 1).
float draw(uint64_t &state) {
  state = state * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<float>(state >> 40) / static_cast<float>(1 << 23) - 1.0f;
}

/// A tensor's host copy: the stored bytes and the values they hold.
struct HostTensor {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};

/// Fills `t` with seeded values stored in its dtype; FP8 values are
/// quantized with `scale` (q = x * scale), as the compiler's scaling does.
HostTensor makeTensor(const TensorDesc &t, uint64_t seed, float scale) {
  HostTensor h;
  const numerics::Format f = formatOf(t.dtype);
  const size_t size = numerics::formatBytes(f);
  h.bytes.resize(t.elements * size);
  h.values.resize(t.elements);
  for (int64_t i = 0; i < t.elements; ++i) {
    float x = draw(seed);
    x = isFp8(t.dtype) ? numerics::quantizeFp8(f, x, scale) : numerics::roundTo(f, x);
    const uint32_t bits = numerics::encode(f, x);
    std::memcpy(&h.bytes[i * size], &bits, size); // little-endian: the low bytes
    h.values[i] = x;
  }
  return h;
}

double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

/// ulp(1) of a dtype, the output rounding's relative bound.
double unitUlp(DType t) {
  return t == DType::F32 ? std::ldexp(1.0, -23) : t == DType::F16 ? std::ldexp(1.0, -10)
                                                                  : std::ldexp(1.0, -7);
}

/// The bias value added at batch i, row r, column j.
float biasAt(const GemmCase &c, const GemmDesc &g, const std::vector<float> &bias, int64_t i,
             int64_t r, int64_t j) {
  if (c.scalarBias)
    return bias[0];
  if (static_cast<int64_t>(bias.size()) == g.n)
    return bias[j];
  return bias[(i * g.m + r) * g.n + j]; // one per output element
}

/// Compares the device output with the reference; prints the worst error.
bool compare(const GemmCase &c, const GemmDesc &g, const std::vector<HostTensor> &in,
             const std::vector<uint8_t> &outBytes, bool checkGaps) {
  const DType outType = c.out;
  const float factor = c.scales ? (1.0f / in[gt::kAScale].values[0]) *
                                      (1.0f / in[gt::kBScale].values[0])
                                : 1.0f;
  const numerics::Format of = formatOf(outType);
  const size_t outSize = numerics::formatBytes(of);
  const bool tf32 = c.tf32 && c.a == DType::F32;
  const double eps = tf32 ? std::ldexp(1.0, -9)
                     : isFp8(c.a) ? std::ldexp(1.0, -10)
                                  : static_cast<double>(std::max<int64_t>(g.k, 1)) *
                                        std::ldexp(1.0, -23);
  std::vector<bool> covered(outBytes.size() / outSize, false);
  double worst = 0.0;
  for (int64_t i = 0; i < g.batch; ++i)
    for (int64_t r = 0; r < g.m; ++r)
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0.0, sumAbs = 0.0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          float a = in[gt::kA].values[i * g.strideA + r * g.k + kk];
          float b = in[gt::kB].values[i * g.strideB + (g.transB ? j * g.k + kk : kk * g.n + j)];
          if (tf32) {
            a = numerics::roundToTf32(a);
            b = numerics::roundToTf32(b);
          }
          acc += static_cast<double>(a) * b;
          sumAbs += std::fabs(static_cast<double>(a) * b);
        }
        acc *= factor;
        sumAbs *= factor;
        if (g.bias != -1)
          acc += biasAt(c, g, in[gt::kBias].values, i, r, j);
        double extra = 0.0;
        if (g.relu)
          acc = std::max(acc, 0.0);
        if (g.gelu) {
          extra = 1e-3 * std::fabs(acc) + 1e-4; // cuBLASLt's tanh may be approximate
          acc = geluTanh(acc);
        }
        const int64_t at = i * g.strideOut + r * g.n + j;
        covered[at] = true;
        uint32_t bits = 0;
        std::memcpy(&bits, &outBytes[at * outSize], outSize);
        const double got = numerics::decode(of, bits);
        const double bound = unitUlp(outType) * std::fabs(acc) + eps * sumAbs + extra + 1e-30;
        const double error = std::fabs(got - acc);
        if (!(error <= bound)) {
          std::printf("FAIL %s: out[%lld][%lld][%lld] = %.9g, reference %.9g (bound %.3g)\n",
                      c.name.c_str(), static_cast<long long>(i), static_cast<long long>(r),
                      static_cast<long long>(j), got, acc, bound);
          return false;
        }
        worst = std::max(worst, error / bound);
      }
  for (size_t e = 0; checkGaps && e < covered.size(); ++e)
    for (size_t byte = 0; !covered[e] && byte < outSize; ++byte)
      if (outBytes[e * outSize + byte] != 0xff) {
        std::printf("FAIL %s: output element %zu, outside every batch, was written\n",
                    c.name.c_str(), e);
        return false;
      }
  std::printf("ok   %s: worst error %.3f of its bound\n", c.name.c_str(), worst);
  return true;
}

/// Reports a failed driver call; false.
bool failedCall(const cuda::Driver &driver, const char *what, CUresult r) {
  const char *name = "unknown";
  driver.api.cuGetErrorName(r, &name);
  std::printf("FAIL: %s: %s\n", what, name);
  return false;
}

/// The module of `c` and its tensors' host copies (the output's 0xff).
bool prepareCase(const GemmCase &c, std::shared_ptr<const LoadedModule> &module,
                 std::vector<HostTensor> &in) {
  if (std::string error = gt::loadGemmModule(c, module); !error.empty()) {
    std::printf("FAIL %s: module: %s\n", c.name.c_str(), error.c_str());
    return false;
  }
  const std::vector<TensorDesc> &tensors = module->tensors();
  const float aScale = 4.0f, bScale = 16.0f;
  for (size_t t = 0; t < tensors.size(); ++t)
    in.push_back(makeTensor(tensors[t], 1000 + t, t == gt::kA ? aScale : bScale));
  in[gt::kAScale].values = {aScale};
  in[gt::kBScale].values = {bScale};
  std::memcpy(in[gt::kAScale].bytes.data(), &aScale, 4);
  std::memcpy(in[gt::kBScale].bytes.data(), &bScale, 4);
  std::fill(in[gt::kOut].bytes.begin(), in[gt::kOut].bytes.end(), 0xff);
  return true;
}

/// Runs `c` on the CPU backend, whose semantics the runner matches: checks
/// the reference and its bounds here, without a GPU.
bool runCaseOnCpu(const GemmCase &c) {
  std::shared_ptr<const LoadedModule> module;
  std::vector<HostTensor> in;
  if (!prepareCase(c, module, in))
    return false;
  std::unique_ptr<mixprec::runtime::Backend> cpu;
  Status s = mixprec::runtime::createCpuBackend(module, {}, cpu);
  for (uint32_t t : module->inputs())
    if (s.ok())
      s = cpu->setInput(t, in[t].bytes.data(), in[t].bytes.size());
  if (s.ok())
    s = cpu->launch({});
  if (s.ok())
    s = cpu->wait();
  const void *data = nullptr;
  if (s.ok())
    s = cpu->readTensor(gt::kOut, &data);
  if (!s.ok()) {
    std::printf("FAIL %s: CPU backend: %s\n", c.name.c_str(), s.message().c_str());
    return false;
  }
  const auto *bytes = static_cast<const uint8_t *>(data);
  std::vector<uint8_t> out(bytes, bytes + in[gt::kOut].bytes.size());
  return compare(c, module->gemms()[0], in, out, /*checkGaps=*/false);
}

/// Runs `c` through the runner on `stream` and checks it.
bool runCase(const GemmCase &c, const cuda::Driver &driver, const cuda::CublasLt &lt,
             CUstream stream) {
  const cuda::DriverSymbols &api = driver.api;
  std::shared_ptr<const LoadedModule> module;
  std::vector<HostTensor> in;
  if (!prepareCase(c, module, in))
    return false;
  const GemmDesc &g = module->gemms()[0];
  const std::vector<TensorDesc> &tensors = module->tensors();
  CUdeviceptr arena = 0;
  if (CUresult r = api.cuMemAlloc(&arena, module->arenaBytesNeeded()); r != CUDA_SUCCESS)
    return failedCall(driver, "cuMemAlloc", r);
  bool ok = true;
  for (size_t t = 0; ok && t < tensors.size(); ++t)
    if (!in[t].bytes.empty())
      if (CUresult r = api.cuMemcpyHtoDAsync(arena + tensors[t].offset, in[t].bytes.data(),
                                             in[t].bytes.size(), stream);
          r != CUDA_SUCCESS)
        ok = failedCall(driver, "cuMemcpyHtoDAsync", r);
  std::unique_ptr<cuda::GemmRunner> runner;
  Status s = ok ? cuda::createGemmRunner(module, driver, lt, runner) : Status();
  if (ok && s.ok())
    s = runner->prepare();
  cuda::GemmPointers p;
  auto at = [&](int32_t t) { return t == -1 ? CUdeviceptr(0) : arena + tensors[t].offset; };
  p.a = at(g.a);
  p.b = at(g.b);
  p.out = at(g.out);
  p.bias = at(g.bias);
  p.aScale = at(g.aScale);
  p.bScale = at(g.bScale);
  // Twice: the second run reuses the prepared plan and must give the same.
  for (int repeat = 0; ok && s.ok() && repeat < 2; ++repeat)
    s = runner->run(0, p, stream);
  std::vector<uint8_t> out(in[gt::kOut].bytes.size());
  if (ok && s.ok())
    if (CUresult r = api.cuMemcpyDtoHAsync(out.data(), p.out, out.size(), stream);
        r != CUDA_SUCCESS || (r = api.cuStreamSynchronize(stream)) != CUDA_SUCCESS)
      ok = failedCall(driver, "reading the output back", r);
  if (!s.ok()) {
    std::printf("FAIL %s: %s\n", c.name.c_str(), s.message().c_str());
    ok = false;
  }
  runner.reset();
  api.cuMemFree(arena);
  return ok && compare(c, g, in, out, /*checkGaps=*/true);
}

/// The cases: every dtype, trans_b, batches and broadcasts, each epilogue
/// and bias form, tf32 on and off, k = 0.
std::vector<GemmCase> cases() {
  std::vector<GemmCase> all;
  auto add = [&](const char *name, DType type, int64_t m, int64_t n, int64_t k) -> GemmCase & {
    GemmCase c;
    c.name = name;
    c.a = c.b = c.out = c.bias = type;
    c.m = m, c.n = n, c.k = k;
    all.push_back(c);
    return all.back();
  };
  add("f32_strict", DType::F32, 64, 48, 64);
  GemmCase &tf32 = add("tf32_trans_b_bias_relu", DType::F32, 32, 40, 64);
  tf32.tf32 = tf32.transB = true;
  tf32.epilogue = Epilogue::BiasRelu;
  GemmCase &bf16 = add("bf16_trans_b_bias_gelu", DType::BF16, 24, 64, 96);
  bf16.transB = true;
  bf16.epilogue = Epilogue::BiasGelu;
  GemmCase &f16 = add("f16_batched_f32_out", DType::F16, 16, 24, 32);
  f16.batch = 3;
  f16.out = DType::F32;
  GemmCase &folded = add("bf16_folded_bias", DType::BF16, 8, 32, 16);
  folded.batch = 4;
  folded.strideB = 0;
  folded.epilogue = Epilogue::Bias;
  GemmCase &gap = add("bf16_broadcast_a_gap_relu", DType::BF16, 8, 16, 32);
  gap.batch = 2;
  gap.strideA = 0;
  gap.strideOut = 8 * 16 + 8;
  gap.epilogue = Epilogue::Relu;
  GemmCase &fp8 = add("fp8_e4m3_tn_scales_bias", DType::F8E4M3FN, 32, 64, 64);
  fp8.out = fp8.bias = DType::BF16;
  fp8.transB = fp8.scales = true;
  fp8.epilogue = Epilogue::Bias;
  GemmCase &mixed = add("fp8_e4m3_e5m2_gelu", DType::F8E4M3FN, 16, 32, 64);
  mixed.b = DType::F8E5M2;
  mixed.out = DType::BF16;
  mixed.transB = mixed.scales = true;
  mixed.epilogue = Epilogue::Gelu;
  GemmCase &wide = add("fp8_e5m2_e4m3_f32_out_bf16_bias", DType::F8E5M2, 16, 32, 64);
  wide.b = DType::F8E4M3FN;
  wide.out = DType::F32;
  wide.bias = DType::BF16;
  wide.transB = wide.scales = true;
  wide.epilogue = Epilogue::Bias;
  GemmCase &fp8Scalar = add("fp8_scales_and_scalar_bias_relu", DType::F8E4M3FN, 16, 32, 32);
  fp8Scalar.out = fp8Scalar.bias = DType::BF16;
  fp8Scalar.transB = fp8Scalar.scales = fp8Scalar.scalarBias = true;
  fp8Scalar.epilogue = Epilogue::BiasRelu;
  GemmCase &scalar32 = add("f32_scalar_bias", DType::F32, 16, 24, 8);
  scalar32.scalarBias = true;
  scalar32.epilogue = Epilogue::Bias;
  GemmCase &scalar16 = add("bf16_scalar_bias_relu", DType::BF16, 16, 24, 8);
  scalar16.scalarBias = true;
  scalar16.epilogue = Epilogue::BiasRelu;
  GemmCase &matrix = add("f32_matrix_bias", DType::F32, 8, 16, 32);
  matrix.batch = 2;
  matrix.biasShape = {2, 8, 16};
  matrix.epilogue = Epilogue::Bias;
  GemmCase &zero = add("bf16_zero_k_gelu_gap", DType::BF16, 8, 16, 0);
  zero.batch = 2;
  zero.strideOut = 8 * 16 + 8;
  zero.epilogue = Epilogue::Gelu;
  return all;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--cpu-backend") {
    int failures = 0;
    for (const GemmCase &c : cases())
      failures += !runCaseOnCpu(c);
    std::printf("%d failure(s)\n", failures);
    return failures ? 1 : 0;
  }
  const cuda::Driver *driver = nullptr;
  if (Status s = cuda::driver(&driver); !s.ok()) {
    std::printf("SKIP: %s\n", s.message().c_str());
    return 77;
  }
  std::printf("%s\n", driver->summary().c_str());
  const cuda::CublasLt *lt = nullptr;
  if (Status s = cuda::cublasLt(&lt); !s.ok()) {
    std::printf("FAIL: %s\n", s.message().c_str());
    return 1;
  }
  const cuda::DriverSymbols &api = driver->api;
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  if (CUresult r = api.cuDeviceGet(&device, 0); r != CUDA_SUCCESS)
    return !failedCall(*driver, "cuDeviceGet", r);
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&context, device); r != CUDA_SUCCESS)
    return !failedCall(*driver, "cuDevicePrimaryCtxRetain", r);
  int failures = 0;
  if (CUresult r = api.cuCtxSetCurrent(context); r != CUDA_SUCCESS)
    failures += !failedCall(*driver, "cuCtxSetCurrent", r);
  else if (CUresult r = api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING); r != CUDA_SUCCESS)
    failures += !failedCall(*driver, "cuStreamCreate", r);
  for (const GemmCase &c : failures ? std::vector<GemmCase>() : cases())
    failures += !runCase(c, *driver, *lt, stream);
  if (stream)
    api.cuStreamDestroy(stream);
  api.cuDevicePrimaryCtxRelease(device);
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
