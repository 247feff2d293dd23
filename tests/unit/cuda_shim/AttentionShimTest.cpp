//===- AttentionShimTest.cpp - attention kernels on the CUDA shim ----------===//
//
// cuda_attention_on_shim: the forward and backward kernels of
// AttentionKernel.h run on the CUDA shim and are compared with the double
// reference (runtime/kernels/Attention.h) on the same inputs, every output
// element within the bound AttentionKernel.h derives (computed here from
// its formulas, element by element). The inputs have a few large keys late
// in each sequence, so the running max of the online softmax grows across
// key tiles and the rescaling matters; sizes are not tile multiples, seqQ
// differs from seqK, the bias is broadcast through zero strides, and some
// rows have every key masked.
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/AttentionKernel.h"
#include "common/numerics/Rounding.h"
#include "runtime/kernels/Attention.h"
#include "tests/unit/cuda_shim/ShimTestUtil.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace {

namespace num = mixprec::numerics;
namespace cpu = mixprec::runtime::cpu;
namespace shim = mixprec::cudashim;
using mixprec::codegen::AttentionKernelSpec;
using mixprec::codegen::CudaKernel;

constexpr double kU = 0x1p-24; // FP32 unit roundoff
constexpr double kInf = std::numeric_limits<double>::infinity();

/// g(n) of AttentionKernel.h: an FP32 sum of n terms at 2u per addition.
double g(double n) { return 2 * n * kU / (1 - 2 * n * kU); }

enum class DType { F32, BF16, F16, FP8 };

/// How the bias is broadcast to [B, H, Sq, Sk].
enum class Bias { None, PerHeadKey, PerQueryKey };

struct Case {
  const char *name;
  DType dtype;
  int64_t batch, heads, seqQ, seqK, headDim, valueDim;
  bool causal;
  Bias bias;
  /// Store out, dq, dk, dv as f32 (else as the operands' 16-bit type; FP8
  /// as BF16).
  bool f32Out = false;
};

num::Format storageFormat(DType d) {
  switch (d) {
  case DType::F32:
    return num::Format::F32;
  case DType::BF16:
    return num::Format::BF16;
  case DType::F16:
    return num::Format::F16;
  case DType::FP8:
    return num::Format::F8E4M3FN;
  }
  return num::Format::F32;
}

cpu::AttentionRounding rounding(DType d) {
  switch (d) {
  case DType::F32:
    return cpu::AttentionRounding::None;
  case DType::BF16:
    return cpu::AttentionRounding::BF16;
  case DType::F16:
    return cpu::AttentionRounding::FP16;
  case DType::FP8:
    return cpu::AttentionRounding::FP8E4M3;
  }
  return cpu::AttentionRounding::None;
}

/// round_P's (uP, etaP) and round_G's (uG, etaG), AttentionKernel.h's table.
struct RoundingErrors {
  double uP, etaP, uG, etaG;
};
RoundingErrors roundingErrors(DType d) {
  switch (d) {
  case DType::F32:
    return {0, 0, 0, 0};
  case DType::BF16:
    return {0x1p-8, 0x1p-134, 0x1p-8, 0x1p-134};
  case DType::F16:
    return {0x1p-11, 0x1p-25, 0x1p-11, 0x1p-25};
  case DType::FP8:
    return {0x1p-4, 0x1p-18, 0x1p-8, 0x1p-134};
  }
  return {0, 0, 0, 0};
}

/// A tensor in its storage format: raw bytes for the kernel, the decoded
/// values (times `scale`, an FP8 descale) for the reference.
struct Tensor {
  num::Format format;
  std::vector<double> values;
  std::unique_ptr<shim::test::Buffer<unsigned char>> bytes;

  Tensor(num::Format f, const std::vector<double> &x, double scale = 1.0) : format(f) {
    const size_t width = num::formatBytes(f);
    bytes =
        std::make_unique<shim::test::Buffer<unsigned char>>(std::max<size_t>(x.size(), 1) * width);
    values.resize(x.size());
    for (size_t n = 0; n < x.size(); ++n) {
      const uint32_t bits = num::encode(f, static_cast<float>(x[n]));
      std::memcpy(bytes->data() + n * width, &bits, width); // little endian
      values[n] = double(num::decode(f, bits)) * scale;
    }
  }
  /// An output buffer of n elements, filled with a NaN so that an element
  /// the kernel does not write shows.
  Tensor(num::Format f, size_t n) : Tensor(f, std::vector<double>(n, std::nan(""))) {}
  void *data() const { return bytes->data(); }
  /// Sets every element to x (encoded).
  void fill(double x) {
    const size_t width = num::formatBytes(format);
    const uint32_t bits = num::encode(format, static_cast<float>(x));
    for (size_t n = 0; n < values.size(); ++n)
      std::memcpy(bytes->data() + n * width, &bits, width);
  }
  /// The kernel's results, decoded.
  std::vector<double> read() const {
    const size_t width = num::formatBytes(format);
    std::vector<double> out(values.size());
    for (size_t n = 0; n < out.size(); ++n) {
      uint32_t bits = 0;
      std::memcpy(&bits, bytes->data() + n * width, width);
      out[n] = num::decode(format, bits);
    }
    return out;
  }
};

std::vector<double> uniform(size_t n, double lo, double hi, std::mt19937 &rng) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> x(n);
  for (double &v : x)
    v = dist(rng);
  return x;
}

/// (relative, absolute-below-normal) rounding of a stored result.
std::pair<double, double> storeError(num::Format f) {
  switch (f) {
  case num::Format::BF16:
    return {0x1p-8, 0x1p-134};
  case num::Format::F16:
    return {0x1p-11, 0x1p-25};
  default:
    return {kU, 0x1p-150};
  }
}

/// Whether two results are the same values, NaN meeting NaN.
bool sameBits(const std::vector<double> &a, const std::vector<double> &b) {
  for (size_t n = 0; n < a.size(); ++n)
    if (!(a[n] == b[n] || (std::isnan(a[n]) && std::isnan(b[n]))))
      return false;
  return a.size() == b.size();
}

class AttentionOnShim : public ::testing::Test {
protected:
  void run(const Case &c);
};

/// Everything one case needs: inputs, reference results, kernels.
struct Problem {
  Case c;
  cpu::AttentionParams p;
  std::array<int64_t, 4> biasStrides = {0, 0, 0, 0};
  std::unique_ptr<Tensor> q, k, v, bias, qd, kd, vd;
  num::Format outFormat = num::Format::F32;
  double scale = 1;
};

/// The row's scores in double, -inf where masked (the reference's s).
void scoreRow(const Problem &pr, int64_t b, int64_t h, int64_t i, std::vector<double> &s,
              double &delta) {
  const cpu::AttentionParams &p = pr.p;
  const int64_t bh = b * p.heads + h;
  s.assign(p.seqK, -kInf);
  double worst = 0;
  for (int64_t j = 0; j < p.seqK; ++j) {
    if (p.causal && j > i + p.seqK - p.seqQ)
      continue;
    double dot = 0, mag = 0;
    for (int64_t d = 0; d < p.headDim; ++d) {
      const double prod = pr.q->values[(bh * p.seqQ + i) * p.headDim + d] *
                          pr.k->values[(bh * p.seqK + j) * p.headDim + d];
      dot += prod;
      mag += std::fabs(prod);
    }
    double x = p.scale * dot, bias = 0;
    if (pr.bias)
      bias = pr.bias->values[b * pr.biasStrides[0] + h * pr.biasStrides[1] + i * pr.biasStrides[2] +
                             j * pr.biasStrides[3]];
    x += bias;
    s[j] = x;
    if (x != -kInf)
      worst = std::max(worst, std::fabs(p.scale) * mag + std::fabs(bias));
  }
  delta = g(p.headDim + 4) * worst;
}

} // namespace

void AttentionOnShim::run(const Case &c) {
  SCOPED_TRACE(c.name);
  mlir::MLIRContext context;
  mlir::Builder builder(&context);
  std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffffffu);

  Problem pr;
  pr.c = c;
  cpu::AttentionParams &p = pr.p;
  p.batch = c.batch;
  p.heads = c.heads;
  p.seqQ = c.seqQ;
  p.seqK = c.seqK;
  p.headDim = c.headDim;
  p.valueDim = c.valueDim;
  p.scale = 1.0 / std::sqrt(double(c.headDim));
  p.causal = c.causal;
  p.pRounding = rounding(c.dtype);
  const num::Format in = storageFormat(c.dtype);
  pr.outFormat = c.f32Out || c.dtype == DType::F32 ? num::Format::F32
                 : c.dtype == DType::F16           ? num::Format::F16
                                                   : num::Format::BF16;
  const bool fp8 = c.dtype == DType::FP8;
  const int64_t B = c.batch, H = c.heads, Sq = c.seqQ, Sk = c.seqK, D = c.headDim, Dv = c.valueDim;

  // Inputs: a few large keys late in each sequence, so a row's max grows
  // after its first key tiles (the FP8 raw values are larger: descales).
  const double range = fp8 ? 6 : 1.5;
  std::vector<double> q = uniform(B * H * Sq * D, -range, range, rng);
  std::vector<double> k = uniform(B * H * Sk * D, -range, range, rng);
  std::vector<double> v = uniform(B * H * Sk * Dv, -range, range, rng);
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t j = Sk * 2 / 3; j < Sk; j += 7)
      for (int64_t d = 0; d < D; ++d) {
        double &x = k[(bh * Sk + j) * D + d];
        x = std::copysign(range * 3, q[(bh * Sq + (j % Sq)) * D + d]) * (fp8 ? 1 : 2);
      }
  const double qScale = 0.3, kScale = 0.45, vScale = 0.7;
  pr.q = std::make_unique<Tensor>(in, q, fp8 ? double(float(qScale)) : 1.0);
  pr.k = std::make_unique<Tensor>(in, k, fp8 ? double(float(kScale)) : 1.0);
  pr.v = std::make_unique<Tensor>(in, v, fp8 ? double(float(vScale)) : 1.0);
  if (fp8) {
    pr.qd = std::make_unique<Tensor>(num::Format::F32, std::vector<double>{qScale});
    pr.kd = std::make_unique<Tensor>(num::Format::F32, std::vector<double>{kScale});
    pr.vd = std::make_unique<Tensor>(num::Format::F32, std::vector<double>{vScale});
  }
  if (c.bias == Bias::PerHeadKey) {
    pr.biasStrides = {0, Sk, 0, 1};
    pr.bias = std::make_unique<Tensor>(num::Format::F32, uniform(H * Sk, -2, 2, rng));
  } else if (c.bias == Bias::PerQueryKey) {
    // Row 0 masked whole, a few single keys elsewhere.
    std::vector<double> bias = uniform(Sq * Sk, -2, 2, rng);
    for (int64_t j = 0; j < Sk; ++j)
      bias[j] = -kInf;
    for (int64_t n = Sk + 3; n < Sq * Sk; n += 11)
      bias[n] = -kInf;
    pr.biasStrides = {0, 0, Sk, 1};
    pr.bias = std::make_unique<Tensor>(num::Format::BF16, bias);
  }

  AttentionKernelSpec spec;
  spec.batch = B;
  spec.heads = H;
  spec.seqQ = Sq;
  spec.seqK = Sk;
  spec.headDim = D;
  spec.valueDim = Dv;
  spec.scale = p.scale;
  spec.causal = c.causal;
  spec.operandType = c.dtype == DType::F32    ? builder.getF32Type()
                     : c.dtype == DType::BF16 ? builder.getBF16Type()
                     : c.dtype == DType::F16  ? mlir::Type(builder.getF16Type())
                                              : mlir::Float8E4M3FNType::get(&context);
  spec.outType = pr.outFormat == num::Format::F32   ? builder.getF32Type()
                 : pr.outFormat == num::Format::F16 ? builder.getF16Type()
                                                    : builder.getBF16Type();
  spec.hasBias = pr.bias != nullptr;
  if (pr.bias)
    spec.biasType =
        pr.bias->format == num::Format::F32 ? builder.getF32Type() : builder.getBF16Type();
  spec.biasStrides = pr.biasStrides;
  spec.fp8Descales = fp8;
  std::string why;
  std::optional<CudaKernel> fwd = mixprec::codegen::emitAttentionForward(spec, "attn_fwd", &why);
  ASSERT_TRUE(fwd) << why;
  std::optional<CudaKernel> bwd = mixprec::codegen::emitAttentionBackward(spec, "attn_bwd", &why);
  ASSERT_TRUE(bwd) << why;
  // The routine forms (CudaRoutines.cpp): one output per kernel. An
  // attention call writes out or lse, an attention_grad call one of dq, dk,
  // dv with the bias after out, lse and dout (the routine's operand order);
  // checked below to store exactly the full kernel's bits. One program
  // with the full kernels: one compile per case.
  std::vector<CudaKernel> kernels = {*fwd, *bwd};
  for (unsigned bit : {mixprec::codegen::kWriteOut, mixprec::codegen::kWriteLse}) {
    AttentionKernelSpec one = spec;
    one.writes = bit;
    kernels.push_back(*mixprec::codegen::emitAttentionForward(one, "fwd_" + std::to_string(bit)));
  }
  for (unsigned bit :
       {mixprec::codegen::kWriteDq, mixprec::codegen::kWriteDk, mixprec::codegen::kWriteDv}) {
    AttentionKernelSpec one = spec;
    one.writes = bit;
    one.biasAfterGradInputs = true;
    kernels.push_back(*mixprec::codegen::emitAttentionBackward(one, "bwd_" + std::to_string(bit)));
  }
  std::string error, log;
  shim::CompileOptions options;
  options.log = &log;
  std::unique_ptr<shim::Program> program = shim::Program::compileSource(
      std::string(c.name) + ".cu", mixprec::codegen::cudaProgramSource(kernels), options,
      error);
  ASSERT_TRUE(program) << error << "\n" << log;

  // ---- Forward ----
  std::vector<double> refOut(B * H * Sq * Dv), refLse(B * H * Sq);
  cpu::attention<double>(pr.q->values.data(), pr.k->values.data(), pr.v->values.data(),
                         pr.bias ? pr.bias->values.data() : nullptr, pr.biasStrides, p,
                         refOut.data(), refLse.data());
  Tensor out(pr.outFormat, refOut.size()), lse(num::Format::F32, refLse.size());
  shim::KernelArgs args;
  args.add(pr.q->data()).add(pr.k->data()).add(pr.v->data());
  if (pr.bias)
    args.add(pr.bias->data());
  if (fp8)
    args.add(pr.qd->data()).add(pr.kd->data()).add(pr.vd->data());
  shim::KernelArgs fwdArgs = args;
  fwdArgs.add(out.data()).add(lse.data());
  ASSERT_TRUE(program->launch(fwd->name, {unsigned(fwd->launch.gridSize)},
                              {unsigned(fwd->launch.blockSize)}, 0, fwdArgs, error))
      << error;
  // Run again with each block's threads in reverse order: a read of shared
  // memory the barriers do not order would change the result.
  const std::vector<double> firstOut = out.read(), firstLse = lse.read();
  ASSERT_TRUE(program->launch(fwd->name, {unsigned(fwd->launch.gridSize)},
                              {unsigned(fwd->launch.blockSize)}, 0, fwdArgs, error, {true}))
      << error;
  ASSERT_TRUE(sameBits(out.read(), firstOut) && sameBits(lse.read(), firstLse))
      << "the forward depends on the order of its threads";
  const RoundingErrors re = roundingErrors(c.dtype);
  const auto [uOut, etaOut] = storeError(pr.outFormat);
  const std::vector<double> gotOut = out.read(), gotLse = lse.read();
  int64_t checked = 0, masked = 0;
  double worstRatio = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const int64_t bh = b * H + h, row = bh * Sq + i;
        std::vector<double> s;
        double delta;
        scoreRow(pr, b, h, i, s, delta);
        int64_t n = 0;
        double m = -kInf;
        for (double x : s)
          if (x != -kInf) {
            ++n;
            m = std::max(m, x);
          }
        if (n == 0) {
          ++masked;
          ASSERT_EQ(gotLse[row], -kInf) << "masked row " << row;
          for (int64_t e = 0; e < Dv; ++e)
            ASSERT_EQ(gotOut[row * Dv + e], 0.0) << "masked row " << row << " column " << e;
          continue;
        }
        double l = 0;
        for (double x : s)
          l += x == -kInf ? 0 : std::exp(x - m);
        const double growth = std::exp(2 * delta);
        for (int64_t e = 0; e < Dv; ++e) {
          double vbar = 0, vmax = 0;
          for (int64_t j = 0; j < Sk; ++j)
            if (s[j] != -kInf) {
              const double vv = std::fabs(pr.v->values[(bh * Sk + j) * Dv + e]);
              vbar += std::exp(s[j] - m) / l * vv;
              vmax = std::max(vmax, vv);
            }
          double bound = (2 * re.uP * growth + (1 + re.uP) * (growth - 1)) * vbar +
                         2 * n * re.etaP * vmax + 24 * (n + 8) * kU * vmax;
          const double want = refOut[row * Dv + e];
          bound += uOut * (std::fabs(want) + bound) + etaOut;
          const double err = std::fabs(gotOut[row * Dv + e] - want);
          ASSERT_LE(err, bound) << "out[" << row << ", " << e << "]: kernel "
                                << gotOut[row * Dv + e] << ", reference " << want;
          worstRatio = std::max(worstRatio, err / bound);
          ++checked;
        }
        const double lseBound = delta + 24 * (n + 8) * kU + 4 * kU * std::fabs(refLse[row]);
        ASSERT_LE(std::fabs(gotLse[row] - refLse[row]), lseBound)
            << "lse[" << row << "]: kernel " << gotLse[row] << ", reference " << refLse[row];
      }
  EXPECT_GT(checked, 0);
  std::printf("%s forward: %lld elements within the bound (worst at %.3f of it), %lld masked "
              "rows\n",
              c.name, (long long)checked, worstRatio, (long long)masked);

  // ---- Backward, from the reference's out (as stored) and lse (as f32) ----
  Tensor outIn(pr.outFormat, refOut), lseIn(num::Format::F32, refLse);
  Tensor dout(pr.outFormat, uniform(refOut.size(), -1, 1, rng));
  Tensor dq(pr.outFormat, B * H * Sq * D), dk(pr.outFormat, B * H * Sk * D),
      dv(pr.outFormat, B * H * Sk * Dv);
  std::vector<double> refDq(dq.values.size()), refDk(dk.values.size()), refDv(dv.values.size());
  cpu::attentionBackward<double>(pr.q->values.data(), pr.k->values.data(), pr.v->values.data(),
                                 pr.bias ? pr.bias->values.data() : nullptr, pr.biasStrides, p,
                                 outIn.values.data(), lseIn.values.data(), dout.values.data(),
                                 refDq.data(), refDk.data(), refDv.data());
  shim::KernelArgs bwdArgs = args;
  bwdArgs.add(outIn.data()).add(lseIn.data()).add(dout.data());
  bwdArgs.add(dq.data()).add(dk.data()).add(dv.data());
  ASSERT_TRUE(program->launch(bwd->name, {unsigned(bwd->launch.gridSize)},
                              {unsigned(bwd->launch.blockSize)}, 0, bwdArgs, error))
      << error;
  const std::vector<double> firstDq = dq.read(), firstDk = dk.read(), firstDv = dv.read();
  ASSERT_TRUE(program->launch(bwd->name, {unsigned(bwd->launch.gridSize)},
                              {unsigned(bwd->launch.blockSize)}, 0, bwdArgs, error, {true}))
      << error;
  ASSERT_TRUE(sameBits(dq.read(), firstDq) && sameBits(dk.read(), firstDk) &&
              sameBits(dv.read(), firstDv))
      << "the backward depends on the order of its threads";
  // The bounds, summed over the unmasked (i, j) of each head.
  std::vector<double> bDq(refDq.size(), 0.0), bDk(refDk.size(), 0.0), bDv(refDv.size(), 0.0);
  const double absScale = std::fabs(p.scale);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        const int64_t bh = b * H + h, row = bh * Sq + i;
        std::vector<double> s;
        double delta;
        scoreRow(pr, b, h, i, s, delta);
        double dD = 0, dAbs = 0;
        std::vector<double> gOut(Dv);
        for (int64_t e = 0; e < Dv; ++e) {
          const double go = dout.values[row * Dv + e], o = outIn.values[row * Dv + e];
          dD += go * o;
          dAbs += std::fabs(go * o);
          gOut[e] = cpu::roundAttentionGradOperand(go, p.pRounding);
        }
        const double epsD = g(Dv) * dAbs, li = lseIn.values[row];
        for (int64_t j = 0; j < Sk; ++j) {
          if (s[j] == -kInf || li == -kInf)
            continue;
          const double x = s[j] - li, pij = std::exp(x);
          double dp = 0, dpAbs = 0;
          for (int64_t e = 0; e < Dv; ++e) {
            const double t = gOut[e] * pr.v->values[(bh * Sk + j) * Dv + e];
            dp += t;
            dpAbs += std::fabs(t);
          }
          const double epsP = std::exp(delta + kU * (std::fabs(x) + delta) + 4 * kU) - 1;
          const double epsDp = g(Dv + 1) * dpAbs;
          const double y = dp - dD;
          const double epsY =
              epsDp + epsD + 2 * kU * (std::fabs(dp) + std::fabs(dD) + epsDp + epsD);
          const double eDs =
              pij * epsP * std::fabs(y) + pij * (1 + epsP) * (epsY + kU * (std::fabs(y) + epsY));
          const double dsPre = pij * y;
          const double rDs = eDs + re.uG * (2 * std::fabs(dsPre) + eDs) + 2 * re.etaG;
          const double rP = pij * epsP + re.uG * (2 * pij + pij * epsP) + 2 * re.etaG;
          const double ds = std::fabs(cpu::roundAttentionGradOperand(dsPre, p.pRounding));
          const double rp = std::fabs(cpu::roundAttentionGradOperand(pij, p.pRounding));
          for (int64_t e = 0; e < Dv; ++e)
            bDv[(bh * Sk + j) * Dv + e] +=
                rP * std::fabs(gOut[e]) + g(Sq + 16) * (rp + rP) * std::fabs(gOut[e]);
          for (int64_t d = 0; d < D; ++d) {
            const double kk = std::fabs(pr.k->values[(bh * Sk + j) * D + d]);
            const double qq = std::fabs(pr.q->values[(bh * Sq + i) * D + d]);
            bDq[row * D + d] += absScale * (rDs * kk + g(Sk + 16) * (ds + rDs) * kk);
            bDk[(bh * Sk + j) * D + d] += absScale * (rDs * qq + g(Sq + 16) * (ds + rDs) * qq);
          }
        }
      }
  auto compare = [&](const char *what, const Tensor &got, const std::vector<double> &want,
                     const std::vector<double> &bound, bool scaled) {
    const std::vector<double> values = got.read();
    double worst = 0;
    for (size_t n = 0; n < want.size(); ++n) {
      double bnd = bound[n] + (scaled ? 4 * kU * std::fabs(want[n]) : 0.0);
      bnd += uOut * (std::fabs(want[n]) + bnd) + etaOut;
      const double err = std::fabs(values[n] - want[n]);
      EXPECT_LE(err, bnd) << what << "[" << n << "]: kernel " << values[n] << ", reference "
                          << want[n];
      if (err > bnd)
        return;
      worst = std::max(worst, err / bnd);
    }
    std::printf("%s %s: %zu elements within the bound (worst at %.3f of it)\n", c.name, what,
                want.size(), worst);
  };
  compare("dq", dq, refDq, bDq, true);
  compare("dk", dk, refDk, bDk, true);
  compare("dv", dv, refDv, bDv, false);

  // ---- The routine forms: the full kernel's bits, one result each ----
  const std::vector<CudaKernel> forms(kernels.begin() + 2, kernels.end());
  const std::vector<double> fullOut = out.read(), fullLse = lse.read();
  const std::vector<double> fullDq = dq.read(), fullDk = dk.read(), fullDv = dv.read();
  struct Form {
    Tensor *result;
    const std::vector<double> *full;
    bool backward;
  };
  const Form want[] = {{&out, &fullOut, false},
                       {&lse, &fullLse, false},
                       {&dq, &fullDq, true},
                       {&dk, &fullDk, true},
                       {&dv, &fullDv, true}};
  for (size_t f = 0; f < forms.size(); ++f) {
    // The output starts as NaN: an element the form does not write shows.
    Tensor &result = *want[f].result;
    result.fill(std::nan(""));
    shim::KernelArgs one;
    one.add(pr.q->data()).add(pr.k->data()).add(pr.v->data());
    auto addBias = [&] {
      if (pr.bias)
        one.add(pr.bias->data());
      if (fp8)
        one.add(pr.qd->data()).add(pr.kd->data()).add(pr.vd->data());
    };
    if (!want[f].backward)
      addBias();
    else {
      one.add(outIn.data()).add(lseIn.data()).add(dout.data());
      addBias();
    }
    one.add(result.data());
    ASSERT_TRUE(program->launch(forms[f].name, {unsigned(forms[f].launch.gridSize)},
                                 {unsigned(forms[f].launch.blockSize)}, 0, one, error))
        << error;
    ASSERT_TRUE(sameBits(result.read(), *want[f].full))
        << forms[f].name << " stores other bits than the full kernel";
  }
}

// Sizes that are no tile multiples (tiles are 64 queries by 64 keys, 16 by
// 16 for FP32), seqQ != seqK both ways, causal rows that see no key (seqQ >
// seqK), a BF16 bias per query and key with a row masked whole, an f32 bias
// per head and key.
TEST_F(AttentionOnShim, Bf16D64CausalLongerKeys) {
  run({"bf16_d64_causal_100x130", DType::BF16, 1, 2, 100, 130, 64, 64, true, Bias::None});
}
TEST_F(AttentionOnShim, Bf16D128HeadKeyBiasF32Out) {
  run({"bf16_d128_bias_17x100_f32out", DType::BF16, 1, 2, 17, 100, 128, 128, false,
       Bias::PerHeadKey, true});
}
// The GPT block's and the real GPT-2/BERT fixtures' head dim.
TEST_F(AttentionOnShim, Bf16D16Causal) {
  run({"bf16_d16_causal_12x12", DType::BF16, 3, 4, 12, 12, 16, 16, true, Bias::PerHeadKey});
}
TEST_F(AttentionOnShim, Bf16D32Dv64CausalBatched) {
  run({"bf16_d32_dv64_causal_65x65", DType::BF16, 2, 1, 65, 65, 32, 64, true, Bias::None});
}
TEST_F(AttentionOnShim, F16D64QueryKeyBias) {
  run({"f16_d64_bias_130x17", DType::F16, 1, 2, 130, 17, 64, 64, false, Bias::PerQueryKey});
}
TEST_F(AttentionOnShim, F16D128CausalMoreQueries) {
  run({"f16_d128_causal_100x70", DType::F16, 1, 1, 100, 70, 128, 128, true, Bias::None});
}
TEST_F(AttentionOnShim, Fp8D64CausalOneQuery) {
  run({"fp8_d64_causal_1x100", DType::FP8, 2, 1, 1, 100, 64, 64, true, Bias::PerHeadKey});
}
TEST_F(AttentionOnShim, Fp8D128) {
  run({"fp8_d128_100x130", DType::FP8, 1, 1, 100, 130, 128, 128, false, Bias::None});
}
TEST_F(AttentionOnShim, F32D64OneKey) {
  run({"f32_d64_100x1", DType::F32, 1, 2, 100, 1, 64, 64, false, Bias::None});
}
TEST_F(AttentionOnShim, F32D128CausalQueryKeyBias) {
  run({"f32_d128_causal_bias_17x130", DType::F32, 1, 1, 17, 130, 128, 128, true,
       Bias::PerQueryKey});
}
