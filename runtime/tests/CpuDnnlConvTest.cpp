//===- CpuDnnlConvTest.cpp - the CPU backend's convolutions on oneDNN -----===//
//
// Issue 27: conv2d and conv routines run on oneDNN's direct convolution
// (FP32 3x3 stride-1 ones on Winograd F(2x2, 3x3), within its own bound,
// winogradBound) with the operands as stored and a constant weight packed
// once, when the
// session is created. Checked here: which routines oneDNN takes (and why
// not the others); FP32, BF16, FP16 and FP8 convolutions in 1 to 3
// spatial dims with groups (depthwise too), strides, asymmetric pads,
// dilations and a bias, against an FP64 reference of the stored operands
// within the bound of FP32 accumulation in any order,
//   |got - ref| <= (K + 4) * 2^-23 * (sum |x w| + |b| + |ref|)
// (K products per output, the bias one more term), plus half an ulp of the
// output's dtype for the one rounding to it (2^-8 relative for BF16); the
// same bits on every run; one pack per constant weight at load and no
// weight decoded in runs (the reference path, MIXPREC_CPU_GEMM=openblas,
// decodes a BF16 weight and bias in every run: what the pack saves);
// the ReLU and residual kernels after a convolution computed in its step
// with the bits they give as kernels, and the activations between
// convolutions kept in oneDNN's channels-last layout with the bits of the
// plain one (CpuConvFusion.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/kernels/Winograd.h"
#include "runtime/src/backends/cpu/CpuBackend.h"
#include "tests/unit/runtime/ModuleBuilder.h"

#include "common/numerics/Rounding.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#if MIXPREC_HAVE_DNNL
#include <dnnl.h>
#endif

namespace mixprec::testing {
namespace {

namespace rt = mixprec::runtime;
namespace num = mixprec::numerics;

/// `n` values uniform in [-2, 2] as `dtype` stores them (nearest even).
std::vector<float> storedRandom(fb::DType dtype, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = num::roundTo(rt::formatOf(dtype), u(rng));
  return v;
}

/// Floats as `dtype`'s little-endian bytes.
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

/// One convolution routine: y = conv(x, w) + b over `spatial` dims, x an
/// input [n, c, in...], w [m, c/groups, kernel...] a constant (or an
/// input), b [m] a constant (or an input, or none).
struct ConvCase {
  std::string opType = "conv2d"; ///< conv2d (2-D) or conv (1 to 3-D)
  fb::DType x = fb::DType::F32, w = fb::DType::F32, b = fb::DType::F32, y = fb::DType::F32;
  int64_t n = 2, c = 6, m = 8, groups = 2;
  Shape in = {11, 9}, kernel = {3, 3}, strides = {2, 1}, dilations = {1, 2};
  Shape pads = {1, 0, 2, 1}; ///< begins, then ends
  bool bias = true, constantWeight = true, constantBias = true, tf32 = false;

  size_t dims() const { return in.size(); }
  Shape outSpatial() const {
    Shape o;
    for (size_t s = 0; s < dims(); ++s)
      o.push_back((in[s] + pads[s] + pads[dims() + s] - ((kernel[s] - 1) * dilations[s] + 1)) /
                      strides[s] +
                  1);
    return o;
  }
  Shape xShape() const { return concat({n, c}, in); }
  Shape wShape() const { return concat({m, c / groups}, kernel); }
  Shape yShape() const { return concat({n, m}, outSpatial()); }
  static Shape concat(Shape a, const Shape &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
};

int64_t elements(const Shape &s) {
  int64_t e = 1;
  for (int64_t d : s)
    e *= d;
  return e;
}

struct Built {
  std::shared_ptr<const rt::LoadedModule> module;
  std::vector<float> x, w, b; // as stored
  int32_t xt = -1, wt = -1, bt = -1, yt = -1;
};

/// Appends case `c`'s routine (and its tensors, named after `tag`) to `mb`.
void addConv(ModuleBuilder &mb, const ConvCase &c, Built &out, const std::string &tag = "") {
  out.x = storedRandom(c.x, size_t(elements(c.xShape())), 1);
  out.w = storedRandom(c.w, size_t(elements(c.wShape())), 2);
  out.b = storedRandom(c.b, size_t(c.m), 3);
  out.xt = mb.input("x" + tag, c.x, c.xShape());
  out.wt = c.constantWeight ? mb.constantFloats("w" + tag, c.w, c.wShape(), out.w)
                            : mb.input("w" + tag, c.w, c.wShape());
  std::vector<int32_t> inputs = {out.xt, out.wt};
  if (c.bias) {
    out.bt = c.constantBias ? mb.constantFloats("b" + tag, c.b, {c.m}, out.b)
                            : mb.input("b" + tag, c.b, {c.m});
    inputs.push_back(out.bt);
  }
  out.yt = mb.activation("y" + tag, c.y, c.yShape());
  mb.output(out.yt);
  if (c.opType == "conv2d") {
    fb::RoutineOptionsUnion o = conv2dOptions(c.strides, c.pads, c.dilations, c.groups);
    o.AsConv2dOptions()->tf32 = c.tf32;
    mb.routine({"conv" + tag, "conv2d", inputs, {out.yt}, std::move(o)});
    return;
  }
  fb::ConvOptionsT o;
  o.strides = c.strides;
  o.pads = c.pads;
  o.dilations = c.dilations;
  o.groups = c.groups;
  o.tf32 = c.tf32;
  mb.routine({"conv" + tag, c.opType, inputs, {out.yt}, fb::RoutineOptionsUnion()});
  mb.routines.back().options.Set(o);
}

std::shared_ptr<const rt::LoadedModule> load(ModuleBuilder &mb) {
  BuiltModule built = mb.build();
  std::shared_ptr<const rt::LoadedModule> module;
  rt::Status s = rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                              rt::LoadOptions{}, module);
  EXPECT_TRUE(s.ok()) << s.message();
  return module;
}

Built buildConv(const ConvCase &c) {
  ModuleBuilder mb;
  Built out;
  addConv(mb, c, out);
  out.module = load(mb);
  return out;
}

/// What the one rounding of a result within `bound` of `exact` to an
/// output of `dtype` adds to the bound: half an ulp (2^-8 relative for
/// BF16, 2^-11 for F16, 2^-3 for any other: FP8); 0 for FP32.
double outputRounding(fb::DType dtype, double exact, double bound) {
  if (dtype == fb::DType::F32)
    return 0.0;
  return std::ldexp(std::fabs(exact) + bound, dtype == fb::DType::BF16  ? -8
                                              : dtype == fb::DType::F16 ? -11
                                                                        : -3);
}

/// The FP64 reference of `c` on the stored operands and each element's
/// bound (the file comment's).
void reference(const ConvCase &c, const Built &b, std::vector<double> &ref,
               std::vector<double> &bound) {
  const Shape os = c.outSpatial();
  const size_t dims = c.dims();
  const int64_t plane = elements(os), taps = elements(c.kernel), inPlane = elements(c.in);
  const int64_t cg = c.c / c.groups, mg = c.m / c.groups;
  const int64_t products = cg * taps;
  ref.assign(size_t(c.n * c.m * plane), 0.0);
  bound.assign(ref.size(), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t o = 0; o < plane; ++o) {
        // Output position o's coordinates, row-major.
        Shape at(dims);
        for (size_t s = dims, rest = size_t(o); s-- > 0; rest /= size_t(os[s]))
          at[s] = int64_t(rest % size_t(os[s]));
        double sum = c.bias ? b.b[m] : 0.0, mag = std::fabs(sum);
        const int64_t group = m / mg;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < taps; ++t) {
            int64_t inIndex = 0, rest = t;
            bool inside = true;
            Shape tap(dims);
            for (size_t s = dims; s-- > 0; rest /= c.kernel[s])
              tap[s] = rest % c.kernel[s];
            for (size_t s = 0; s < dims; ++s) {
              const int64_t i = at[s] * c.strides[s] - c.pads[s] + tap[s] * c.dilations[s];
              inside = inside && i >= 0 && i < c.in[s];
              inIndex = inIndex * c.in[s] + i;
            }
            if (!inside)
              continue;
            const double xv = b.x[size_t((n * c.c + group * cg + ci) * inPlane + inIndex)];
            const double wv = b.w[size_t((m * cg + ci) * taps + t)];
            sum += xv * wv;
            mag += std::fabs(xv * wv);
          }
        const size_t i = size_t((n * c.m + m) * plane + o);
        ref[i] = sum;
        bound[i] = double(products + 4) * std::ldexp(mag + std::fabs(sum), -23);
        bound[i] += outputRounding(c.y, sum, bound[i]);
      }
}

rt::CpuBackend &cpuOf(std::unique_ptr<rt::Backend> &b) {
  return *static_cast<rt::CpuBackend *>(b.get());
}

/// Runs `b`'s module `runs` times on `backend` (made here); the output of
/// routine tensors `y` each time, as floats.
std::vector<std::vector<float>> runCpu(const ConvCase &c, const Built &b, int runs,
                                       std::unique_ptr<rt::Backend> &backend,
                                       const rt::BackendOptions &options = {}) {
  std::vector<std::vector<float>> outs;
  rt::Status s = rt::createCpuBackend(b.module, options, backend);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok())
    return outs;
  const auto &tensors = b.module->tensors();
  const std::vector<uint8_t> x = bytesOf(c.x, b.x), w = bytesOf(c.w, b.w), bias = bytesOf(c.b, b.b);
  for (int r = 0; r < runs; ++r) {
    EXPECT_TRUE(backend->setInput(uint32_t(b.xt), x.data(), x.size()).ok());
    if (!c.constantWeight) {
      EXPECT_TRUE(backend->setInput(uint32_t(b.wt), w.data(), w.size()).ok());
    }
    if (c.bias && !c.constantBias) {
      EXPECT_TRUE(backend->setInput(uint32_t(b.bt), bias.data(), bias.size()).ok());
    }
    s = backend->launch({});
    EXPECT_TRUE(s.ok()) << s.message();
    const void *data = nullptr;
    EXPECT_TRUE(backend->readTensor(uint32_t(b.yt), &data).ok());
    const rt::TensorDesc &y = tensors[b.yt];
    std::vector<float> got(size_t(y.elements));
    num::decodeArray(rt::formatOf(y.dtype), data, got.data(), got.size());
    outs.push_back(std::move(got));
  }
  return outs;
}

/// Every element of `got` within bound[i] of ref[i].
void expectWithin(const std::vector<float> &got, const std::vector<double> &ref,
                  const std::vector<double> &bound) {
  ASSERT_EQ(got.size(), ref.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - ref[i]) <= bound[i]) && ++bad <= 3)
      ADD_FAILURE() << "element " << i << ": " << got[i] << " vs " << ref[i] << " (bound "
                    << bound[i] << ")";
  EXPECT_EQ(bad, 0u);
}

void expectWithinBound(const ConvCase &c, const Built &b, const std::vector<float> &got) {
  std::vector<double> ref, bound;
  reference(c, b, ref, bound);
  expectWithin(got, ref, bound);
}

/// Runs case `c` three times and checks: oneDNN takes the routine (or,
/// `onDnnl` false, leaves it with `reason`), `packs` weights packed at
/// load, `decodes` constant decodes in the runs, the first result within
/// the bound, every run's bits the first's.
void checkConv(const ConvCase &c, bool onDnnl, int64_t packs, int64_t decodes,
               const std::string &reason = "") {
  const int runs = 3;
  Built b = buildConv(c);
  ASSERT_TRUE(b.module);
  std::unique_ptr<rt::Backend> backend;
  auto outs = runCpu(c, b, runs, backend);
  ASSERT_EQ(outs.size(), size_t(runs));
  rt::CpuBackend &cpu = cpuOf(backend);
  const rt::DnnlConvs &convs = cpu.dnnlConvolutions();
  EXPECT_EQ(convs.handles(0), onDnnl) << convs.reason(0);
  EXPECT_EQ(convs.reason(0), reason);
  if (onDnnl) {
    EXPECT_NE(convs.implementation(0), "");
    std::printf("  oneDNN's %s\n", convs.implementation(0).c_str());
  }
  EXPECT_EQ(convs.packsAtLoad(), packs);
  EXPECT_EQ(cpu.weightDecodesInRuns(), decodes);
  expectWithinBound(c, b, outs[0]);
  for (int r = 1; r < runs; ++r)
    EXPECT_EQ(std::memcmp(outs[0].data(), outs[r].data(), outs[0].size() * 4), 0) << "run " << r;
}

/// The implementation oneDNN itself gives an FP32 Winograd forward
/// convolution of `c`'s shape on this CPU, asked directly (not through the
/// backend), or "" where it has none: its Winograd kernels need AVX-512
/// (jit_avx512_core_fp32_wino_conv_2x3 and friends), so an AVX2 machine
/// has none and the backend must plan the direct algorithm there.
std::string oneDnnWinograd(const ConvCase &c) {
#if MIXPREC_HAVE_DNNL
  dnnl_engine_t engine = nullptr;
  if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
    return "";
  const Shape out = c.outSpatial();
  dnnl_dims_t src = {c.n, c.c, c.in[0], c.in[1]}, wei = {c.m, c.c, 3, 3};
  dnnl_dims_t dst = {c.n, c.m, out[0], out[1]}, bias = {c.m};
  dnnl_memory_desc_t srcD, weiD, dstD, biasD;
  dnnl_memory_desc_init_by_tag(&srcD, 4, src, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&weiD, 4, wei, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&dstD, 4, dst, dnnl_f32, dnnl_format_tag_any);
  dnnl_memory_desc_init_by_tag(&biasD, 1, bias, dnnl_f32, dnnl_a);
  dnnl_dims_t strides = {1, 1}, dilates = {0, 0};
  dnnl_dims_t padL = {c.pads[0], c.pads[1]}, padR = {c.pads[2], c.pads[3]};
  dnnl_convolution_desc_t desc;
  dnnl_primitive_desc_t pd = nullptr;
  std::string impl;
  if (dnnl_dilated_convolution_forward_desc_init(
          &desc, dnnl_forward_inference, dnnl_convolution_winograd, &srcD, &weiD,
          c.bias ? &biasD : nullptr, &dstD, strides, dilates, padL, padR) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr) == dnnl_success) {
    const char *info = nullptr;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) == dnnl_success && info)
      impl = info;
    dnnl_primitive_desc_destroy(pd);
  }
  dnnl_engine_destroy(engine);
  return impl;
#else
  (void)c;
  return "";
#endif
}

class CpuDnnlConv : public ::testing::Test {
protected:
  void SetUp() override {
    if (!rt::DnnlGemms::available())
      GTEST_SKIP() << "this runtime was built without oneDNN (apt-get install libdnnl-dev)";
    unsetenv("MIXPREC_CPU_GEMM");
  }
  void TearDown() override {
    unsetenv("MIXPREC_CPU_GEMM");
    unsetenv("MIXPREC_CPU_WINOGRAD");
    unsetenv("MIXPREC_CPU_BF16");
  }
};

TEST_F(CpuDnnlConv, Fp32GroupsStrideAsymmetricPadsDilationBias) {
  checkConv(ConvCase(), true, /*packs=*/1, /*decodes=*/0);
}

/// Winograd F(2x2, 3x3)'s bound (CpuDnnl.h) for a 3x3 stride-1 FP32 case:
/// each output element of tile position (i%2, j%2),
///   |got - ref| <= (C + 10) * 2^-23 * (W + |b| + |ref|),
///   W = sum over channels of |A^T| ((|G| |g| |G^T|) * (|B^T| |d| |B|)) |A|,
/// g the channel's 3x3 filter, d the 4x4 input tile (zeros outside x) the
/// element's 2x2 output tile reads: first-order error of the transforms
/// (two levels of additions each, G's halves exact), the elementwise
/// products summed over C channels and the output transform, with room
/// for oneDNN's own association of those sums. `ref`: reference()'s.
void winogradBound(const ConvCase &c, const Built &b, const std::vector<double> &ref,
                   std::vector<double> &bound) {
  static const double kG[4][3] = {{1, 0, 0}, {.5, .5, .5}, {.5, .5, .5}, {0, 0, 1}};
  static const double kBT[4][4] = {{1, 0, 1, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}, {0, 1, 0, 1}};
  static const double kAT[2][4] = {{1, 1, 1, 0}, {0, 1, 1, 1}}; // |entries|
  const Shape os = c.outSpatial();
  const int64_t oh = os[0], ow = os[1], ih = c.in[0], iw = c.in[1];
  bound.assign(ref.size(), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t m = 0; m < c.m; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double mt[4][4] = {};
          for (int64_t ci = 0; ci < c.c; ++ci) {
            double u[4][4] = {}, v[4][4] = {}, gu[4][3] = {}, dv[4][4] = {};
            const float *g = &b.w[size_t((m * c.c + ci) * 9)];
            for (int a = 0; a < 4; ++a)
              for (int l = 0; l < 3; ++l)
                for (int k = 0; k < 3; ++k)
                  gu[a][l] += kG[a][k] * std::fabs(double(g[k * 3 + l]));
            for (int a = 0; a < 4; ++a)
              for (int e = 0; e < 4; ++e)
                for (int l = 0; l < 3; ++l)
                  u[a][e] += gu[a][l] * kG[e][l];
            const int64_t r0 = i - i % 2 - c.pads[0], s0 = j - j % 2 - c.pads[1];
            double d[4][4] = {};
            for (int r = 0; r < 4; ++r)
              for (int q = 0; q < 4; ++q) {
                const int64_t y = r0 + r, x = s0 + q;
                if (y >= 0 && y < ih && x >= 0 && x < iw)
                  d[r][q] = std::fabs(double(b.x[size_t(((n * c.c + ci) * ih + y) * iw + x)]));
              }
            for (int a = 0; a < 4; ++a)
              for (int q = 0; q < 4; ++q)
                for (int r = 0; r < 4; ++r)
                  dv[a][q] += kBT[a][r] * d[r][q];
            for (int a = 0; a < 4; ++a)
              for (int e = 0; e < 4; ++e)
                for (int q = 0; q < 4; ++q)
                  v[a][e] += dv[a][q] * kBT[e][q];
            for (int a = 0; a < 4; ++a)
              for (int e = 0; e < 4; ++e)
                mt[a][e] += u[a][e] * v[a][e];
          }
          double w = 0;
          for (int a = 0; a < 4; ++a)
            for (int e = 0; e < 4; ++e)
              w += kAT[i % 2][a] * mt[a][e] * kAT[j % 2][e];
          const size_t at = size_t(((n * c.m + m) * oh + i) * ow + j);
          bound[at] =
              double(c.c + 10) *
              std::ldexp(w + (c.bias ? std::fabs(double(b.b[m])) : 0.0) + std::fabs(ref[at]), -23);
        }
}

TEST_F(CpuDnnlConv, Fp32ThreeByThreeStrideOneRunsOnWinogradWithinItsBound) {
  // FP32 3x3 stride-1 convolutions (ResNet's) on Winograd F(2x2, 3x3):
  // oneDNN's where it offers it (AVX-512), else mixprec's own (Winograd.h,
  // AVX2; MIXPREC_CPU_WINOGRAD=own takes it even where oneDNN has one):
  // within winogradBound (odd output sizes: partial tiles; symmetric and
  // asymmetric pads 0 to 2; two images; 8 output channels, less than the
  // own kernel's block of 16), the same bits in every run and for 1 and 2
  // threads; MIXPREC_CPU_WINOGRAD=0 plans the direct algorithm.
  struct Shape3x3 {
    int64_t n, c, m;
    Shape in, pads;
  };
  const Shape3x3 shapes[] = {{1, 32, 16, {9, 11}, {1, 1, 1, 1}},
                             {1, 32, 16, {9, 11}, {0, 0, 0, 0}},
                             {2, 8, 24, {7, 6}, {2, 0, 1, 2}},
                             {1, 16, 8, {5, 5}, {0, 2, 2, 0}}};
  for (const Shape3x3 &shape : shapes)
    for (const char *mode : {"", "own"}) {
      ConvCase c;
      c.n = shape.n, c.c = shape.c, c.m = shape.m, c.groups = 1;
      c.in = shape.in, c.strides = {1, 1}, c.dilations = {1, 1}, c.pads = shape.pads;
      SCOPED_TRACE("n " + std::to_string(c.n) + ", c " + std::to_string(c.c) + ", m " +
                   std::to_string(c.m) + ", pads " + std::to_string(c.pads[0]) +
                   std::to_string(c.pads[1]) + std::to_string(c.pads[2]) +
                   std::to_string(c.pads[3]) + (*mode ? ", MIXPREC_CPU_WINOGRAD=own" : ""));
      Built b = buildConv(c);
      ASSERT_TRUE(b.module);
      std::vector<double> ref, bound, directBound;
      reference(c, b, ref, directBound);
      winogradBound(c, b, ref, bound);
      // oneDNN's F(2x2, 3x3) exactly where it offers it for this shape
      // (AVX-512 CPUs) unless the own kernel is asked first; else the own
      // kernel where this CPU runs it (AVX2); else the direct algorithm.
      const std::string native = oneDnnWinograd(c);
      const bool offered = native.find("wino_2x3") != std::string::npos && !*mode;
      const bool own = !offered && rt::cpu::winogradAvailable();
      if (!offered && !own)
        std::printf("  no Winograd F(2x2, 3x3) on this CPU (oneDNN: %s; no AVX2): the direct "
                    "algorithm, checked within its bound\n",
                    native.empty() ? "no Winograd implementation" : native.c_str());
      if (*mode)
        setenv("MIXPREC_CPU_WINOGRAD", mode, 1);
      std::vector<float> first;
      for (int threads : {1, 2}) {
        std::unique_ptr<rt::Backend> backend;
        rt::BackendOptions options;
        options.numThreads = threads;
        auto outs = runCpu(c, b, 2, backend, options);
        ASSERT_EQ(outs.size(), 2u);
        const rt::DnnlConvs &convs = cpuOf(backend).dnnlConvolutions();
        ASSERT_TRUE(convs.handles(0)) << convs.reason(0);
        if (offered) {
          EXPECT_NE(convs.implementation(0).find("wino_2x3"), std::string::npos)
              << convs.implementation(0);
          EXPECT_TRUE(convs.winograd(0));
        } else if (own) {
          EXPECT_EQ(convs.implementation(0), "mixprec:winograd_2x3:avx2");
          EXPECT_TRUE(convs.winograd(0));
          EXPECT_EQ(convs.packsAtLoad(), 1); // U = G g G^T, once
        } else { // no F(2x2, 3x3) here: the direct algorithm, within its bound
          EXPECT_EQ(convs.implementation(0).find("wino"), std::string::npos)
              << convs.implementation(0);
          EXPECT_FALSE(convs.winograd(0));
          if (threads == 1)
            expectWithinBound(c, b, outs[0]);
        }
        EXPECT_EQ(outs[0], outs[1]) << "a second run differs";
        if (threads == 1) {
          first = outs[0];
          size_t bad = 0;
          double worst = 0, worstDirect = 0;
          for (size_t i = 0; i < ref.size(); ++i) {
            const double err = std::fabs(double(first[i]) - ref[i]);
            worst = std::max(worst, err / bound[i]);
            worstDirect = std::max(worstDirect, err / directBound[i]);
            if (!(err <= bound[i]) && ++bad <= 3)
              ADD_FAILURE() << "element " << i << ": " << first[i] << " vs " << ref[i] << " (bound "
                            << bound[i] << ")";
          }
          EXPECT_EQ(bad, 0u);
          std::printf("  %s: worst error %.3f of the Winograd bound, %.3f of the direct one\n",
                      convs.implementation(0).c_str(), worst, worstDirect);
        } else {
          EXPECT_EQ(outs[0], first) << "2 threads: not the bits of 1";
        }
      }
      if (own) {
        // The own kernel one row of tiles at a time (each tile computed
        // alone: the bits of one band), on 2 threads.
        setenv("MIXPREC_CPU_WINOGRAD_BAND_BYTES", "1", 1);
        std::unique_ptr<rt::Backend> banded;
        rt::BackendOptions options;
        options.numThreads = 2;
        auto outs = runCpu(c, b, 1, banded, options);
        unsetenv("MIXPREC_CPU_WINOGRAD_BAND_BYTES");
        ASSERT_EQ(outs.size(), 1u);
        EXPECT_EQ(outs[0], first) << "one-row bands: not the bits of one band";
      }
      setenv("MIXPREC_CPU_WINOGRAD", "0", 1);
      std::unique_ptr<rt::Backend> direct;
      auto outs = runCpu(c, b, 1, direct);
      unsetenv("MIXPREC_CPU_WINOGRAD");
      ASSERT_EQ(outs.size(), 1u);
      const rt::DnnlConvs &convs = cpuOf(direct).dnnlConvolutions();
      EXPECT_EQ(convs.implementation(0).find("wino"), std::string::npos) << convs.implementation(0);
      EXPECT_FALSE(convs.winograd(0));
      expectWithinBound(c, b, outs[0]);
    }
}

TEST_F(CpuDnnlConv, Bf16AsTheCompilerEmitsIt) {
  // BF16 x, w and bias, a BF16 output (the one rounding after FP32 sums):
  // a 3x3 stride-2 conv, then a depthwise one (groups = channels).
  ConvCase c;
  c.x = c.w = c.b = c.y = fb::DType::BF16;
  c.n = 1, c.c = 16, c.m = 32, c.groups = 1;
  c.in = {14, 15}, c.strides = {2, 2}, c.pads = {1, 1, 1, 1}, c.dilations = {1, 1};
  checkConv(c, true, 1, 0);
  c.m = c.groups = 16;
  c.strides = {1, 1}, c.dilations = {2, 2}, c.pads = {2, 1, 0, 2};
  checkConv(c, true, 1, 0);
}

TEST_F(CpuDnnlConv, Bf16WidenedToFp32RunsOnWinogradWithinItsBound) {
  // Where BF16 operands are widened to FP32 (MIXPREC_CPU_BF16=fp32, the
  // default without AMX), a 3x3 stride-1 convolution runs on the FP32
  // Winograd F(2x2, 3x3) as an FP32 one does (the own kernel on AVX2,
  // oneDNN's on AVX-512): within winogradBound of the stored operands'
  // exact result, plus half a BF16 ulp for the one rounding of a BF16
  // output; the same bits in every run and for 1 and 2 threads.
  // MIXPREC_CPU_WINOGRAD=0: the direct algorithm, within its bound.
  setenv("MIXPREC_CPU_BF16", "fp32", 1);
  for (fb::DType y : {fb::DType::BF16, fb::DType::F32}) {
    ConvCase c;
    c.x = c.w = c.b = fb::DType::BF16;
    c.y = y;
    c.n = 2, c.c = 16, c.m = 24, c.groups = 1;
    c.in = {9, 7}, c.strides = {1, 1}, c.dilations = {1, 1}, c.pads = {1, 0, 2, 1};
    SCOPED_TRACE(y == fb::DType::BF16 ? "BF16 output" : "FP32 output");
    Built b = buildConv(c);
    ASSERT_TRUE(b.module);
    std::vector<double> ref, bound, direct;
    reference(c, b, ref, direct);
    winogradBound(c, b, ref, bound);
    for (size_t i = 0; i < bound.size(); ++i)
      bound[i] += outputRounding(y, ref[i], bound[i]);
    const bool offered = oneDnnWinograd(c).find("wino_2x3") != std::string::npos;
    const bool own = !offered && rt::cpu::winogradAvailable();
    std::vector<float> first;
    for (int threads : {1, 2}) {
      std::unique_ptr<rt::Backend> backend;
      rt::BackendOptions options;
      options.numThreads = threads;
      auto outs = runCpu(c, b, 2, backend, options);
      ASSERT_EQ(outs.size(), 2u);
      const rt::DnnlConvs &convs = cpuOf(backend).dnnlConvolutions();
      ASSERT_TRUE(convs.handles(0)) << convs.reason(0);
      EXPECT_EQ(convs.winograd(0), offered || own) << convs.implementation(0);
      if (own) {
        EXPECT_EQ(convs.implementation(0), "mixprec:winograd_2x3:avx2");
      }
      EXPECT_EQ(cpuOf(backend).weightDecodesInRuns(), 0);
      EXPECT_EQ(outs[0], outs[1]) << "a second run differs";
      if (threads == 1) {
        first = outs[0];
        expectWithin(first, ref, bound);
        std::printf("  %s\n", convs.implementation(0).c_str());
      } else {
        EXPECT_EQ(outs[0], first) << "2 threads: not the bits of 1";
      }
    }
    setenv("MIXPREC_CPU_WINOGRAD", "0", 1);
    std::unique_ptr<rt::Backend> backend;
    auto outs = runCpu(c, b, 1, backend);
    unsetenv("MIXPREC_CPU_WINOGRAD");
    ASSERT_EQ(outs.size(), 1u);
    EXPECT_FALSE(cpuOf(backend).dnnlConvolutions().winograd(0));
    expectWithinBound(c, b, outs[0]);
  }
  unsetenv("MIXPREC_CPU_BF16");
}

TEST_F(CpuDnnlConv, Bf16ToAnFp32OutputWithAnInputBias) {
  // The bias an activation in BF16: decoded to FP32 per run (not a weight).
  ConvCase c;
  c.x = c.w = c.b = fb::DType::BF16;
  c.constantBias = false;
  c.kernel = {1, 1}, c.pads = {0, 0, 0, 0}, c.dilations = {1, 1}, c.strides = {1, 1};
  checkConv(c, true, 1, 0);
}

TEST_F(CpuDnnlConv, OneAndThreeSpatialDims) {
  ConvCase c;
  c.opType = "conv";
  c.in = {23}, c.kernel = {4}, c.strides = {2}, c.dilations = {3}, c.pads = {2, 1};
  checkConv(c, true, 1, 0);
  c.x = c.w = c.b = fb::DType::BF16;
  c.n = 1, c.c = 4, c.m = 6, c.groups = 2;
  c.in = {5, 6, 7}, c.kernel = {3, 2, 3}, c.strides = {1, 2, 1}, c.dilations = {1, 1, 2};
  c.pads = {1, 0, 2, 1, 1, 0};
  checkConv(c, true, 1, 0);
}

TEST_F(CpuDnnlConv, ConvolutionsOfOneLayoutShareItsBuffers) {
  // Two 8-channel convolutions of one shape (channels padded to oneDNN's
  // block of 16), a third of another: the first two share their blocked
  // src and dst buffers, whose padding must stay zero run after run.
  ModuleBuilder mb;
  ConvCase c;
  c.n = 1, c.c = c.m = 8, c.groups = 1;
  c.in = {12, 12}, c.strides = {1, 1}, c.dilations = {1, 1}, c.pads = {1, 1, 1, 1};
  ConvCase other = c;
  other.c = 24, other.m = 40, other.in = {9, 10};
  const ConvCase cases[] = {c, c, other};
  Built built[3];
  for (int i = 0; i < 3; ++i)
    addConv(mb, cases[i], built[i], std::to_string(i));
  std::shared_ptr<const rt::LoadedModule> module = load(mb);
  ASSERT_TRUE(module);
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createCpuBackend(module, {}, backend).ok());
  const rt::DnnlConvs &convs = cpuOf(backend).dnnlConvolutions();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(convs.handles(i)) << convs.reason(i);
    std::printf("  oneDNN's %s\n", convs.implementation(i).c_str());
  }
  EXPECT_EQ(convs.packsAtLoad(), 3);
  std::vector<float> first[3];
  for (int run = 0; run < 3; ++run) {
    for (int i = 0; i < 3; ++i) {
      // A different x per conv and per run: stale values would show.
      std::vector<float> x = storedRandom(cases[i].x, built[i].x.size(), 10 * run + i);
      built[i].x = x;
      const std::vector<uint8_t> bytes = bytesOf(cases[i].x, x);
      ASSERT_TRUE(backend->setInput(uint32_t(built[i].xt), bytes.data(), bytes.size()).ok());
    }
    ASSERT_TRUE(backend->launch({}).ok());
    for (int i = 0; i < 3; ++i) {
      const void *data = nullptr;
      ASSERT_TRUE(backend->readTensor(uint32_t(built[i].yt), &data).ok());
      const auto *y = static_cast<const float *>(data);
      expectWithinBound(cases[i], built[i], std::vector<float>(y, y + elements(cases[i].yShape())));
    }
  }
  EXPECT_EQ(cpuOf(backend).weightDecodesInRuns(), 0);
}

/// Where buildBlock puts the residual kernel's output `out`.
enum class OutBytes {
  Own,                ///< bytes of its own
  Addend,             ///< r1's (in place: the addend already where the sum reads it)
  ConvSrc,            ///< h's, conv_c's src (the arena reuses a dead input's), out no
                      ///< graph output: oneDNN cannot write it while reading h, so
                      ///< the sum goes into r1's bytes (r1 dies there) and the ReLU
                      ///< copies it to out
  ConvSrcAddendLives, ///< as ConvSrc, r1 read by conv_e after out's kernel:
                      ///< through a buffer of the backend's
};

/// A ResNet block's steps: r1 = relu(conv_a(x)), h = relu(conv_b(r1)),
/// out = relu(conv_c(h) + r1), then y4 = conv_d(out) and r4 = relu(y4),
/// y4 also a graph output (its ReLU kernel stays a kernel); `place` says
/// where out lives.
struct Block {
  std::shared_ptr<const rt::LoadedModule> module;
  int32_t x = -1;
};

Block buildBlock(OutBytes place, fb::DType dtype = fb::DType::F32, bool narrowInsts = false) {
  ModuleBuilder mb;
  Block b;
  // 64 channels: oneDNN picks nhwc on AVX-512 (the activations kept so,
  // oneDNN writing dst while it reads src), blocked layouts elsewhere.
  const int64_t c = 64, h = 10;
  const Shape shape = {1, c, h, h};
  b.x = mb.input("x", dtype, shape);
  auto conv = [&](const std::string &name, int32_t in, uint32_t seed) {
    const int32_t w = mb.constantFloats(name + ".w", dtype, {c, c, 3, 3},
                                        storedRandom(dtype, size_t(c * c * 9), seed));
    const int32_t bias =
        mb.constantFloats(name + ".b", dtype, {c}, storedRandom(dtype, size_t(c), seed + 1));
    const int32_t y = mb.activation(name + ".y", dtype, shape);
    mb.routine(
        {name, "conv2d", {in, w, bias}, {y}, conv2dOptions({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
    return y;
  };
  const Shape unit = {c * h * h, h * h, h, 1};
  auto relu = [&](const std::string &name, int32_t in, int32_t addend) {
    const int32_t y = mb.activation(name, dtype, shape);
    KernelSpec &k = mb.kernel(name, shape, 0);
    int v = k.load(in, unit);
    if (addend >= 0)
      v = k.binary(fb::OpCode::Add, k.load(addend, unit), v);
    v = k.unary(fb::OpCode::Relu, v);
    if (narrowInsts) // the Add and Relu in the dtype (each result rounded), as the compiler emits
      for (InstructionSpec &inst : k.program)
        inst.dtype = dtype;
    k.store(y, v, unit, dtype);
    return y;
  };
  const int32_t r1 = relu("r1", conv("a", b.x, 1), -1);
  const int32_t hidden = relu("h", conv("b", r1, 3), -1);
  const int32_t out = relu("out", conv("c", hidden, 5), r1);
  const int32_t y4 = conv("d", out, 7);
  const int32_t r4 = relu("r4", y4, -1);
  // out a graph output (plain), or read by conv_d alone (kept
  // channels-last where oneDNN picks it, with r1, the addend); r1 read
  // after out's kernel by one more convolution.
  if (place == OutBytes::Own || place == OutBytes::Addend)
    mb.output(out);
  mb.output(y4);
  mb.output(r4);
  if (place == OutBytes::ConvSrcAddendLives)
    mb.output(conv("e", r1, 9));
  if (place != OutBytes::Own) {
    mb.build(); // the offsets, then out onto r1's or h's bytes
    mb.tensors[out].offset = mb.tensors[place == OutBytes::Addend ? r1 : hidden].offset;
    BuiltModule built = mb.build(/*keepOffsets=*/true);
    rt::Status s = rt::LoadedModule::loadMemory(built.module.data(), built.module.size(),
                                                rt::LoadOptions{}, b.module);
    EXPECT_TRUE(s.ok()) << s.message();
    return b;
  }
  b.module = load(mb);
  return b;
}

/// The index of `module`'s routine called `name` (RoutineOp::name is
/// "routine #I 'NAME' (OP)"); fails the test where there is none.
size_t routineNamed(const rt::LoadedModule &module, const std::string &name) {
  for (size_t r = 0; r < module.routines().size(); ++r)
    if (module.routines()[r].name.find("'" + name + "'") != std::string::npos)
      return r;
  ADD_FAILURE() << "no routine '" << name << "'";
  return module.routines().size();
}

/// Runs `b` with x = `x` (stored as the module's x is) on `threads`
/// threads; the outputs' bytes (by tensor) and the fused epilogues' count.
std::map<int32_t, std::vector<uint8_t>> runBlock(const Block &b, const std::vector<float> &x,
                                                 int64_t &fused, bool *residualSum = nullptr,
                                                 int threads = 0) {
  std::map<int32_t, std::vector<uint8_t>> out;
  std::unique_ptr<rt::Backend> backend;
  rt::BackendOptions options;
  if (threads)
    options.numThreads = threads;
  rt::Status s = rt::createCpuBackend(b.module, options, backend);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok())
    return out;
  fused = cpuOf(backend).fusedConvEpilogues();
  if (residualSum) // conv_c's sum post-op (the residual r1 added in it)
    *residualSum = cpuOf(backend).dnnlConvolutions().addsAddend(routineNamed(*b.module, "c"));
  const std::vector<uint8_t> bytes = bytesOf(b.module->tensors()[b.x].dtype, x);
  EXPECT_TRUE(backend->setInput(uint32_t(b.x), bytes.data(), bytes.size()).ok());
  s = backend->launch({});
  EXPECT_TRUE(s.ok()) << s.message();
  for (uint32_t t : b.module->outputs()) {
    const void *data = nullptr;
    EXPECT_TRUE(backend->readTensor(t, &data).ok());
    const auto *d = static_cast<const uint8_t *>(data);
    out[int32_t(t)].assign(d, d + b.module->tensors()[t].bytes);
  }
  return out;
}

TEST_F(CpuDnnlConv, ReluAndResidualKernelsRunInTheConvolutionWithTheSameBits) {
  // CpuConvFusion.cpp: the kernels relu(conv) and relu(conv + r1) right
  // after a oneDNN convolution run in its step (oneDNN's sum post-op, then
  // the kernel's own ReLU), giving the bits the kernels give; not where
  // the convolution's output is read elsewhere (y4, a graph output). A NaN
  // and an infinity in x (NaNs reach the ReLU: it keeps them).
  for (OutBytes place :
       {OutBytes::Own, OutBytes::Addend, OutBytes::ConvSrc, OutBytes::ConvSrcAddendLives}) {
    SCOPED_TRACE("out's bytes: " + std::to_string(static_cast<int>(place)));
    Block b = buildBlock(place);
    ASSERT_TRUE(b.module);
    std::vector<float> x = storedRandom(fb::DType::F32, size_t(64 * 10 * 10), 7);
    x[17] = NAN;
    x[250] = INFINITY;
    int64_t fused = -1, unfusedCount = -1;
    bool residualSum = false;
    auto got = runBlock(b, x, fused, &residualSum);
    setenv("MIXPREC_CPU_CONV_FUSION", "0", 1);
    auto want = runBlock(b, x, unfusedCount);
    unsetenv("MIXPREC_CPU_CONV_FUSION");
    // relu(conv_c + r1) in conv_c's step where its implementation adds the
    // addend to the finished result (oneDNN's Winograd or brgconv on
    // AVX-512, the own Winograd kernel on AVX2, which applies the ReLU too);
    // oneDNN's AVX2 direct kernel starts from the addend (other bits), so
    // where it runs the kernel adds it: the two ReLU-only epilogues then.
    if (__builtin_cpu_supports("avx512f") || rt::cpu::winogradAvailable()) {
      EXPECT_TRUE(residualSum) << "conv_c without its sum post-op";
    }
    EXPECT_EQ(fused, residualSum ? 3 : 2);
    EXPECT_EQ(unfusedCount, 0);
    ASSERT_EQ(got.size(), want.size());
    size_t nans = 0;
    for (auto &[t, bytes] : want) {
      EXPECT_TRUE(got[t] == bytes) << b.module->tensors()[t].name;
      for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
        float v;
        std::memcpy(&v, bytes.data() + i, 4);
        nans += std::isnan(v);
      }
    }
    EXPECT_GT(nans, 0u); // the NaN went through the ReLUs
  }
}

TEST_F(CpuDnnlConv, NarrowReluAndResidualKernelsRunInTheConvolutionWithTheSameBits) {
  // The same block in BF16 and F16 (CpuConvFusion.cpp's narrow
  // epilogues): relu(conv) and relu(conv + r1) computed in the
  // convolution's step after it rounds its result (oneDNN adds nothing:
  // the kernel adds the rounded values and rounds the sum), all three
  // kernels, wherever out lives, with the bits of the kernels
  // (MIXPREC_CPU_CONV_FUSION=0) on 1 and 2 threads, with the direct
  // algorithm and Winograd, the kernels' Add and Relu in FP32 (the sum
  // rounded once, by the Store, after the ReLU) or in the dtype (the sum
  // rounded, then the ReLU): x with a NaN, an infinity, signed zeros and
  // F16 subnormals.
  for (fb::DType dtype : {fb::DType::BF16, fb::DType::F16})
    for (bool narrowInsts : {false, true})
      for (OutBytes place :
           {OutBytes::Own, OutBytes::Addend, OutBytes::ConvSrc, OutBytes::ConvSrcAddendLives})
        for (const char *winograd : {"0", ""}) {
          SCOPED_TRACE(std::string(rt::dtypeName(dtype)) + ", out's bytes: " +
                       std::to_string(static_cast<int>(place)) + (*winograd ? ", direct" : "") +
                       (narrowInsts ? ", instructions in the dtype" : ", FP32 instructions"));
          Block b = buildBlock(place, dtype, narrowInsts);
          ASSERT_TRUE(b.module);
          std::vector<float> x = storedRandom(dtype, size_t(64 * 10 * 10), 9);
          x[17] = NAN;
          x[250] = INFINITY;
          for (size_t i = 400; i < 440; ++i)
            x[i] = i % 2 ? -0.0f : 0.0f;
          for (size_t i = 500; i < 520; ++i) // an F16 subnormal, negative
            x[i] = -std::ldexp(1.0f, -20);
          if (*winograd)
            setenv("MIXPREC_CPU_WINOGRAD", winograd, 1);
          setenv("MIXPREC_CPU_CONV_FUSION", "0", 1);
          int64_t unfusedCount = -1;
          auto want = runBlock(b, x, unfusedCount);
          unsetenv("MIXPREC_CPU_CONV_FUSION");
          EXPECT_EQ(unfusedCount, 0);
          for (int threads : {1, 2}) {
            int64_t fused = -1;
            auto got = runBlock(b, x, fused, nullptr, threads);
            EXPECT_EQ(fused, 3) << "r1, h and out in their convolutions";
            ASSERT_EQ(got.size(), want.size());
            for (auto &[t, bytes] : want)
              EXPECT_TRUE(got[t] == bytes)
                  << b.module->tensors()[t].name << ", " << threads << " thread(s)";
          }
          unsetenv("MIXPREC_CPU_WINOGRAD");
          size_t nans = 0;
          const num::Format f = rt::formatOf(dtype);
          for (auto &[t, bytes] : want)
            for (size_t i = 0; i + 2 <= bytes.size(); i += 2) {
              uint16_t bits;
              std::memcpy(&bits, bytes.data() + i, 2);
              nans += std::isnan(num::decode(f, bits));
            }
          EXPECT_GT(nans, 0u); // the NaN went through the ReLUs
        }
}

/// A small ResNet stem and block in `dtype`, 64 channels (oneDNN picks
/// nhwc on AVX-512): r1 = relu(conv_a(x)), p = max_pool(r1), h =
/// relu(conv_b(p)), out = relu(conv_c(h) + p), y = conv_d(out), e = y + out
/// (an element-wise kernel the convolution does not compute), z =
/// conv_e(e), the output. The ReLU and residual kernels run in the
/// convolutions (at BF16 as narrow epilogues).
std::shared_ptr<const rt::LoadedModule> buildStem(fb::DType dtype, int32_t &x) {
  ModuleBuilder mb;
  const int64_t c = 64, h = 12;
  const Shape big = {1, c, h, h}, small = {1, c, h / 2, h / 2};
  x = mb.input("x", dtype, big);
  uint32_t seed = 11;
  auto conv = [&](const std::string &name, int32_t in, const Shape &shape) {
    const int32_t w = mb.constantFloats(name + ".w", dtype, {c, c, 3, 3},
                                        storedRandom(dtype, size_t(c * c * 9), seed++));
    const int32_t bias =
        mb.constantFloats(name + ".b", dtype, {c}, storedRandom(dtype, size_t(c), seed++));
    const int32_t y = mb.activation(name + ".y", dtype, shape);
    mb.routine(
        {name, "conv2d", {in, w, bias}, {y}, conv2dOptions({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
    return y;
  };
  auto kernel = [&](const std::string &name, int32_t a, int32_t b, bool relu, const Shape &shape) {
    const int32_t y = mb.activation(name, dtype, shape);
    const Shape unit = {shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3], 1};
    KernelSpec &k = mb.kernel(name, shape, 0);
    int v = k.load(a, unit);
    if (b >= 0)
      v = k.binary(fb::OpCode::Add, k.load(b, unit), v);
    if (relu)
      v = k.unary(fb::OpCode::Relu, v);
    k.store(y, v, unit, dtype);
    return y;
  };
  const int32_t r1 = kernel("r1", conv("a", x, big), -1, true, big);
  const int32_t p = mb.activation("p", dtype, small);
  mb.routine({"pool", "max_pool2d", {r1}, {p}, pool2dOptions({3, 3}, {2, 2}, {1, 1, 1, 1})});
  const int32_t hidden = kernel("h", conv("b", p, small), -1, true, small);
  const int32_t out = kernel("out", conv("c", hidden, small), p, true, small);
  const int32_t e = kernel("e", conv("d", out, small), out, false, small);
  mb.output(conv("e", e, small));
  return load(mb);
}

TEST_F(CpuDnnlConv, ActivationsBetweenConvolutionsStayChannelsLastWithTheSameBits) {
  // CpuConvFusion.cpp: every activation between the convolutions (r1, p,
  // h, out, y, e) kept in nhwc, none reordered; the output z and the input x plain. The
  // bits of the plain layout (MIXPREC_CPU_CHANNELS_LAST=0) for 1 and 2
  // threads, every kernel split (MIXPREC_CPU_PARALLEL_POINTS=1), for finite
  // x with signed zeros, and for x with a NaN and an infinity (which five
  // 3x3 convolutions spread over nearly all of z).
  for (fb::DType dtype : {fb::DType::F32, fb::DType::BF16}) {
    SCOPED_TRACE(dtype == fb::DType::F32 ? "f32" : "bf16");
    int32_t x = -1;
    std::shared_ptr<const rt::LoadedModule> module = buildStem(dtype, x);
    ASSERT_TRUE(module);
    const num::Format f = rt::formatOf(dtype);
    const size_t width = num::formatBytes(f);
    for (bool special : {false, true}) {
      SCOPED_TRACE(special ? "NaN and inf in x" : "finite x");
      std::vector<float> values = storedRandom(dtype, size_t(64 * 12 * 12), 5);
      for (size_t i = 400; i < 700; ++i)
        values[i] = i % 2 ? -0.0f : 0.0f;
      if (special) {
        values[17] = NAN;
        values[300] = INFINITY;
      }
      const std::vector<uint8_t> bytes = bytesOf(dtype, values);
      uint8_t layout = 0; // conv_a's dst: nhwc on AVX-512, nChw8c on AVX2
      bool residualKernel = false;
      auto run = [&](int threads, int64_t &kept) {
        std::unique_ptr<rt::Backend> backend;
        rt::BackendOptions options;
        options.numThreads = threads;
        rt::Status s = rt::createCpuBackend(module, options, backend);
        EXPECT_TRUE(s.ok()) << s.message();
        if (!s.ok())
          return std::vector<uint8_t>();
        kept = cpuOf(backend).keptLayoutTensors();
        layout = cpuOf(backend).dnnlConvolutions().dstLayout(0); // conv_a
        residualKernel = // conv_c's residual added by the kernel after it
            !cpuOf(backend).dnnlConvolutions().addsAddend(routineNamed(*module, "c"));
        std::vector<uint8_t> got;
        for (int repeat = 0; repeat < 2; ++repeat) {
          EXPECT_TRUE(backend->setInput(uint32_t(x), bytes.data(), bytes.size()).ok());
          s = backend->launch({});
          EXPECT_TRUE(s.ok()) << s.message();
          const uint32_t z = module->outputs()[0];
          const void *data = nullptr;
          EXPECT_TRUE(backend->readTensor(z, &data).ok());
          const auto *b = static_cast<const uint8_t *>(data);
          std::vector<uint8_t> now(b, b + module->tensors()[z].bytes);
          if (repeat) {
            EXPECT_EQ(now, got) << "a second run differs";
          }
          got = now;
        }
        return got;
      };
      int64_t kept = -1, plainKept = -1;
      // The direct algorithm (nhwc on AVX-512, where Winograd would take
      // nChw16c; nChw8c on AVX2).
      setenv("MIXPREC_CPU_WINOGRAD", "0", 1);
      setenv("MIXPREC_CPU_CHANNELS_LAST", "0", 1);
      const std::vector<uint8_t> want = run(1, plainKept);
      unsetenv("MIXPREC_CPU_CHANNELS_LAST");
      EXPECT_EQ(plainKept, 0);
      setenv("MIXPREC_CPU_PARALLEL_POINTS", "1", 1);
      for (int threads : {1, 2}) {
        const std::vector<uint8_t> got = run(threads, kept);
        // Kept in oneDNN's channels-last layout on AVX-512, in channel
        // blocks of 8 on AVX2 (nChw8c: the max pool reads it as C/8 images
        // of 8 channels); the same bits as the plain layout either way.
        if (__builtin_cpu_supports("avx512f")) {
          EXPECT_EQ(layout, rt::kChannelsLast) << "AVX-512: oneDNN's convolutions take nhwc";
        } else if (__builtin_cpu_supports("avx2")) {
          EXPECT_EQ(layout, 8) << "AVX2: oneDNN's convolutions take nChw8c";
        }
        // (At FP32 conv_c's own output too where the kernel after it adds
        // the residual: AVX2, CpuDnnlConv.cpp's sumAfterAccumulation; at
        // BF16 the convolution's step adds it, a narrow epilogue.)
        EXPECT_EQ(kept, layout == 0                ? 0
                        : dtype == fb::DType::BF16 ? 6
                                                   : 6 + int(residualKernel))
            << "r1, p, h, out, y and e";
        ASSERT_EQ(got.size(), want.size());
        EXPECT_TRUE(got == want) << threads << " thread(s): not the plain layout's bits";
      }
      unsetenv("MIXPREC_CPU_PARALLEL_POINTS");
      unsetenv("MIXPREC_CPU_WINOGRAD");
      size_t nans = 0;
      for (size_t i = 0; i + width <= want.size(); i += width) {
        uint32_t bits = 0;
        std::memcpy(&bits, want.data() + i, width);
        nans += std::isnan(num::decode(f, bits));
      }
      if (special)
        EXPECT_GT(nans, 0u); // the NaN went through every step
      else
        EXPECT_EQ(nans, 0u);
    }
  }
}

/// x -> conv (64 channels, 3x3; half of the biases -1e4: channels whose
/// every value is negative) -> r = relu -> p = max_pool2d 3x3 stride 2
/// pad 1, p an output; r too where `reluIsOutput`.
std::shared_ptr<const rt::LoadedModule> buildReluPool(bool reluIsOutput, int32_t &x) {
  ModuleBuilder mb;
  const int64_t c = 64, h = 12;
  const Shape big = {1, c, h, h}, small = {1, c, h / 2, h / 2};
  x = mb.input("x", fb::DType::F32, big);
  std::vector<float> bias = storedRandom(fb::DType::F32, size_t(c), 2);
  for (size_t i = 0; i < bias.size(); i += 2)
    bias[i] = -1e4f;
  const int32_t w = mb.constantFloats("a.w", fb::DType::F32, {c, c, 3, 3},
                                      storedRandom(fb::DType::F32, size_t(c * c * 9), 1));
  const int32_t b = mb.constantFloats("a.b", fb::DType::F32, {c}, bias);
  const int32_t y = mb.activation("a.y", fb::DType::F32, big);
  mb.routine({"a", "conv2d", {x, w, b}, {y}, conv2dOptions({1, 1}, {1, 1, 1, 1}, {1, 1}, 1)});
  const int32_t r = mb.activation("r", fb::DType::F32, big);
  KernelSpec &k = mb.kernel("r", big, 0);
  k.store(r, k.unary(fb::OpCode::Relu, k.load(y, {c * h * h, h * h, h, 1})),
          {c * h * h, h * h, h, 1}, fb::DType::F32);
  const int32_t p = mb.activation("p", fb::DType::F32, small);
  mb.routine({"pool", "max_pool2d", {r}, {p}, pool2dOptions({3, 3}, {2, 2}, {1, 1, 1, 1})});
  mb.output(p);
  if (reluIsOutput)
    mb.output(r);
  return load(mb);
}

TEST_F(CpuDnnlConv, AReluBeforeAMaxPoolRunsInThePoolWithTheSameBits) {
  // CpuConvFusion.cpp: relu(conv) read only by a max pool: the pool applies
  // the ReLU to its output, the convolution none. The bits of the ReLU
  // before the pool (MIXPREC_CPU_POOL_RELU=0): the pool's output a module
  // output (plain, the convolution's nhwc: the ReLU after the whole pool),
  // or read by the next convolutions (buildStem: nhwc, the ReLU per chunk
  // of rows), or nothing kept channels-last (the planes' path); 1 and 2
  // threads; x with a NaN, +-inf and signed zeros, channels all negative
  // (every window's largest value < 0). Not where the ReLU's output is also
  // a module output. buildStem in BF16 too (conv_a's narrow epilogue, the
  // ReLU in the pool: BF16 values in and out, moved exactly).
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE(which == 0   ? "pool output a module output"
                 : which == 1 ? "r also an output"
                 : which == 2 ? "buildStem"
                              : "buildStem, BF16");
    int32_t x = -1;
    const fb::DType dtype = which == 3 ? fb::DType::BF16 : fb::DType::F32;
    std::shared_ptr<const rt::LoadedModule> module =
        which >= 2 ? buildStem(dtype, x) : buildReluPool(which == 1, x);
    ASSERT_TRUE(module);
    std::vector<float> values = storedRandom(dtype, size_t(64 * 12 * 12), 9);
    for (size_t i = 400; i < 500; ++i)
      values[i] = i % 2 ? -0.0f : 0.0f;
    values[17] = NAN;
    values[300] = INFINITY;
    values[1000] = -INFINITY;
    auto run = [&](int threads, int64_t &inPools) {
      std::unique_ptr<rt::Backend> backend;
      rt::BackendOptions options;
      options.numThreads = threads;
      rt::Status s = rt::createCpuBackend(module, options, backend);
      EXPECT_TRUE(s.ok()) << s.message();
      std::vector<uint8_t> got;
      if (!s.ok())
        return got;
      inPools = cpuOf(backend).reluInPools();
      const std::vector<uint8_t> bytes = bytesOf(dtype, values);
      EXPECT_TRUE(backend->setInput(uint32_t(x), bytes.data(), bytes.size()).ok());
      s = backend->launch({});
      EXPECT_TRUE(s.ok()) << s.message();
      for (uint32_t t : module->outputs()) {
        const void *data = nullptr;
        EXPECT_TRUE(backend->readTensor(t, &data).ok());
        const auto *b = static_cast<const uint8_t *>(data);
        got.insert(got.end(), b, b + module->tensors()[t].bytes);
      }
      return got;
    };
    for (bool plain : {false, true}) {
      SCOPED_TRACE(plain ? "MIXPREC_CPU_CHANNELS_LAST=0" : "channels-last");
      if (plain)
        setenv("MIXPREC_CPU_CHANNELS_LAST", "0", 1);
      int64_t off = -1;
      setenv("MIXPREC_CPU_POOL_RELU", "0", 1);
      const std::vector<uint8_t> want = run(1, off);
      unsetenv("MIXPREC_CPU_POOL_RELU");
      EXPECT_EQ(off, 0);
      for (int threads : {1, 2}) {
        int64_t inPools = -1;
        const std::vector<uint8_t> got = run(threads, inPools);
        EXPECT_EQ(inPools, which == 1 ? 0 : 1);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_TRUE(got == want) << threads << " thread(s): not the bits of the ReLU first";
      }
      unsetenv("MIXPREC_CPU_CHANNELS_LAST");
      if (which >= 2)
        continue;
      // p: NaNs (the NaN went through), +0s (most windows of the negative
      // channels: all but those the NaN and infinities reach), no negative
      // value and no -0.
      std::vector<float> p(want.size() / 4 > 64 * 36 ? 64 * 36 : want.size() / 4);
      std::memcpy(p.data(), want.data(), p.size() * 4);
      size_t nans = 0, zeros = 0;
      for (float v : p) {
        nans += std::isnan(v);
        zeros += v == 0.0f && !std::signbit(v);
        EXPECT_FALSE(std::signbit(v) && !std::isnan(v)) << v;
      }
      EXPECT_GT(nans, 0u);
      EXPECT_GE(zeros, 32u * 36u / 2);
    }
  }
}

TEST_F(CpuDnnlConv, Fp16Fp8AndTwoDtypesWidenedExactly) {
  // FP16 on oneDNN's FP16 convolution where the CPU has one, else widened
  // to FP32; FP8 (no scales: a conv routine has none, its values are the
  // codes' values) widened to BF16; an FP32 x with a BF16 weight to FP32.
  // The weight once at load, x per run: no weight decoded in runs.
  ConvCase c;
  c.x = c.w = c.b = fb::DType::F16;
  checkConv(c, true, 1, 0);
  for (fb::DType d : {fb::DType::F8E4M3FN, fb::DType::F8E5M2}) {
    c.x = c.w = d;
    c.b = fb::DType::F32;
    checkConv(c, true, 1, 0);
  }
  c.x = fb::DType::F32, c.w = fb::DType::BF16;
  checkConv(c, true, 1, 0);
}

TEST_F(CpuDnnlConv, TheReferencePathDecodesTheWeightOnceAtLoad) {
  // MIXPREC_CPU_GEMM=openblas: the reference kernel, the BF16 weight and
  // bias decoded to FP32 once, when the session is created (a routine's
  // constant operands: CpuBackend::decodedConstants), none in the 3 runs.
  setenv("MIXPREC_CPU_GEMM", "openblas", 1);
  ConvCase c;
  c.x = c.w = c.b = fb::DType::BF16;
  checkConv(c, false, /*packs=*/0, /*decodes=*/0, "MIXPREC_CPU_GEMM=openblas");
}

TEST_F(CpuDnnlConv, RoutinesItDoesNotTakeSayWhy) {
  // A TF32-rounded conv, one whose weight is an input, a conv_transpose
  // and a routine that is no convolution, beside one it takes; all run.
  ModuleBuilder mb;
  ConvCase c;
  c.x = c.w = c.b = fb::DType::BF16;
  Built taken, tf32, inputWeight;
  addConv(mb, c, taken, "0");
  ConvCase t = c;
  t.x = t.w = t.b = fb::DType::F32;
  t.tf32 = true;
  addConv(mb, t, tf32, "1");
  ConvCase i = c;
  i.constantWeight = false;
  addConv(mb, i, inputWeight, "2");
  const int s = mb.input("s", fb::DType::F32, {1, 2, 5});
  const int wt = mb.constantFloats("wt", fb::DType::F32, {2, 3, 3}, std::vector<float>(18, 1));
  const int up = mb.activation("up", fb::DType::F32, {1, 3, 12});
  fb::ConvOptionsT ct; // 2 * (5 - 1) + 1 + 3 = 12
  ct.strides = {2};
  ct.pads = {0, 0};
  ct.dilations = {1};
  ct.output_padding = {1};
  mb.routine({"up", "conv_transpose", {s, wt}, {up}, fb::RoutineOptionsUnion()});
  mb.routines.back().options.Set(ct);
  const int soft = mb.activation("soft", fb::DType::F32, {1, 3, 12});
  mb.routine({"soft", "softmax", {up}, {soft}, axisOptions(2)});
  mb.output(soft);
  std::shared_ptr<const rt::LoadedModule> module = load(mb);
  ASSERT_TRUE(module);
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createCpuBackend(module, {}, backend).ok());
  const rt::DnnlConvs &convs = cpuOf(backend).dnnlConvolutions();
  EXPECT_TRUE(convs.handles(0)) << convs.reason(0);
  EXPECT_EQ(convs.reason(0), "");
  const std::pair<size_t, const char *> refused[] = {
      {1, "TF32-rounded operands"},
      {2, "a weight that is not a module constant"},
      {3, "conv_transpose runs on the reference kernel"},
      {4, "not a convolution"}};
  for (const auto &[index, why] : refused) {
    EXPECT_FALSE(convs.handles(index)) << index;
    EXPECT_EQ(convs.reason(index), why) << index;
  }
  EXPECT_EQ(convs.packsAtLoad(), 1);
  // Routine 2's weight, an input: the reference path, and still right.
  std::vector<uint8_t> zeros(1 << 16, 0);
  for (uint32_t in : module->inputs())
    ASSERT_TRUE(backend->setInput(in, zeros.data(), module->tensors()[in].bytes).ok());
  const std::vector<uint8_t> x = bytesOf(i.x, inputWeight.x), w = bytesOf(i.w, inputWeight.w);
  ASSERT_TRUE(backend->setInput(uint32_t(inputWeight.xt), x.data(), x.size()).ok());
  ASSERT_TRUE(backend->setInput(uint32_t(inputWeight.wt), w.data(), w.size()).ok());
  ASSERT_TRUE(backend->launch({}).ok());
  const void *data = nullptr;
  ASSERT_TRUE(backend->readTensor(uint32_t(inputWeight.yt), &data).ok());
  const auto *y = static_cast<const float *>(data);
  expectWithinBound(i, inputWeight, std::vector<float>(y, y + elements(i.yShape())));
}

TEST_F(CpuDnnlConv, TheCudaBackendsHostHalfPlansNothing) {
  // BackendOptions::cpuGemms off: no oneDNN, no pack, the reference path.
  ConvCase c;
  Built b = buildConv(c);
  ASSERT_TRUE(b.module);
  rt::BackendOptions options;
  options.cpuGemms = false;
  std::unique_ptr<rt::Backend> backend;
  auto outs = runCpu(c, b, 1, backend, options);
  ASSERT_EQ(outs.size(), 1u);
  EXPECT_FALSE(cpuOf(backend).dnnlConvolutions().handles(0));
  EXPECT_EQ(cpuOf(backend).dnnlConvolutions().packsAtLoad(), 0);
  expectWithinBound(c, b, outs[0]);
}

TEST_F(CpuDnnlConv, ItsBuffersCountAgainstTheMemoryLimit) {
  // A limit that fits the arena but not oneDNN's buffers (src and dst in
  // its blocked layout): refused at load, as im2col would be.
  ConvCase c;
  c.c = 32, c.m = 32, c.groups = 1, c.in = {20, 20};
  Built b = buildConv(c);
  ASSERT_TRUE(b.module);
  std::unique_ptr<rt::Backend> backend;
  ASSERT_TRUE(rt::createCpuBackend(b.module, {}, backend).ok());
  const uint64_t workspace = cpuOf(backend).dnnlConvolutions().workspaceBytes();
  ASSERT_TRUE(cpuOf(backend).dnnlConvolutions().handles(0));
  EXPECT_GT(workspace, 0u);
  rt::BackendOptions options;
  options.maxMemoryBytes = b.module->arenaBytesNeeded() + workspace - 1;
  std::unique_ptr<rt::Backend> refused;
  rt::Status s = rt::createCpuBackend(b.module, options, refused);
  EXPECT_EQ(s.code(), MIXPREC_OUT_OF_MEMORY) << s.message();
  options.maxMemoryBytes += 1;
  EXPECT_TRUE(rt::createCpuBackend(b.module, options, refused).ok());
}

} // namespace
} // namespace mixprec::testing
