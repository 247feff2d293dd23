//===- InterpreterF64Test.cpp - the interpreter's FP64 mode ----------------===//
//
// interpretF64 computes every float op in double and never rounds to a
// storage dtype. Each test compares with a double reference computed here
// (an independent formula or loop), on inputs that float cannot hold (a
// float computation anywhere would be off by ~1e-8 relative, far beyond
// the tolerances used).
//
//===----------------------------------------------------------------------===//
#include "common/numerics/Rounding.h"
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

using namespace mlir;
using mixprec::compiler::HostTensor;
using mixprec::compiler::HostTensorF64;
using mixprec::compiler::Interpreter;

namespace {

/// Relative tolerance for results computed by a differently written double
/// formula (a few ulps); float arithmetic anywhere would miss it by 1e7x.
constexpr double kRel = 1e-14;

/// Expects |got - want| <= rel * max(|want|, 1e-300), element by element.
void expectClose(const std::vector<double> &got, const std::vector<double> &want,
                 double rel = kRel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
      continue;
    }
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "element " << i;
      continue;
    }
    double tol = rel * std::max(std::fabs(want[i]), 1e-300);
    EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
  }
}

/// `n` values no float holds: 0.37 k - 1.1 + 1e-9 k for k = 0..n-1, shifted
/// by `offset` and scaled by `scale`.
std::vector<double> oddValues(size_t n, double scale = 1.0, double offset = 0.0) {
  std::vector<double> v(n);
  for (size_t k = 0; k < n; ++k)
    v[k] = scale * (0.37 * k - 1.1 + 1e-9 * k) + offset;
  return v;
}

/// f applied to every element.
std::vector<double> map(const std::vector<double> &x, const std::function<double(double)> &f) {
  std::vector<double> y(x.size());
  std::transform(x.begin(), x.end(), y.begin(), f);
  return y;
}

class InterpreterF64Test : public ::testing::Test {
protected:
  InterpreterF64Test() {
    context.loadDialect<mixprec::graph::GraphDialect, func::FuncDialect>();
    mixprec::compiler::registerReferenceExternalModels(context);
  }

  /// Parses `ir` and returns @main.
  func::FuncOp parse(const std::string &ir) {
    module = parseSourceString<ModuleOp>(ir, &context);
    EXPECT_TRUE(module) << "IR does not parse";
    if (!module)
      return nullptr;
    std::string error;
    func::FuncOp func = mixprec::compiler::findEntryFunction(*module, error);
    EXPECT_TRUE(func) << error;
    return func;
  }

  /// Runs @main of `ir` in the FP64 mode; expects success.
  std::vector<HostTensorF64> run(const std::string &ir, std::vector<HostTensorF64> inputs) {
    func::FuncOp func = parse(ir);
    if (!func)
      return {};
    std::string error;
    auto out = mixprec::compiler::interpretF64(func, inputs, error);
    EXPECT_TRUE(succeeded(out)) << error;
    return succeeded(out) ? *out : std::vector<HostTensorF64>{};
  }

  /// Runs @main of `ir` in the FP64 mode; expects failure and returns why.
  std::string fail(const std::string &ir, std::vector<HostTensorF64> inputs) {
    func::FuncOp func = parse(ir);
    if (!func)
      return {};
    std::string error;
    auto out = mixprec::compiler::interpretF64(func, inputs, error);
    EXPECT_TRUE(failed(out)) << "expected an error";
    return error;
  }

  /// The single output of a one-input unary op `op` (with `attrs`) on `x`.
  std::vector<double> unary(const std::string &op, const std::vector<double> &x,
                            const std::string &attrs = "") {
    std::string t = "tensor<" + std::to_string(x.size()) + "xf32>";
    auto out = run("func.func @main(%x: " + t + ") -> " + t + " {\n  %y = mp." + op + " %x " +
                       attrs + " : " + t + "\n  return %y : " + t + "\n}",
                   {{{static_cast<int64_t>(x.size())}, x}});
    return out.size() == 1 ? out[0].values : std::vector<double>{};
  }

  /// The output of a binary op `op` on `a` and `b` (same length, float).
  std::vector<double> binary(const std::string &op, const std::vector<double> &a,
                             const std::vector<double> &b, const std::string &resultType = "f32") {
    std::string n = std::to_string(a.size());
    std::string t = "tensor<" + n + "xf32>", r = "tensor<" + n + "x" + resultType + ">";
    auto out = run("func.func @main(%a: " + t + ", %b: " + t + ") -> " + r + " {\n  %y = mp." +
                       op + " %a, %b : " + t + ", " + t + " -> " + r + "\n  return %y : " + r +
                       "\n}",
                   {{{static_cast<int64_t>(a.size())}, a}, {{static_cast<int64_t>(b.size())}, b}});
    return out.size() == 1 ? out[0].values : std::vector<double>{};
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

//===----------------------------------------------------------------------===//
// Double-only arithmetic, and the FP32 mode beside it
//===----------------------------------------------------------------------===//

TEST_F(InterpreterF64Test, OnePlusTinyMinusOneKeepsTheTiny) {
  // f16 storage everywhere: the FP64 mode ignores it.
  const char *ir = R"mlir(
    func.func @main(%a: tensor<1xf16>, %b: tensor<1xf16>) -> tensor<1xf16> {
      %s = mp.add %a, %b : tensor<1xf16>, tensor<1xf16> -> tensor<1xf16>
      %d = mp.sub %s, %a : tensor<1xf16>, tensor<1xf16> -> tensor<1xf16>
      return %d : tensor<1xf16>
    })mlir";
  auto out = run(ir, {{{1}, {1.0}}, {{1}, {1e-12}}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].values[0], 0.0);
  EXPECT_EQ(out[0].values[0], (1.0 + 1e-12) - 1.0);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{1}));

  // The FP32 mode on the same graph rounds to f16 and loses it.
  Interpreter fp32(parse(ir));
  std::vector<HostTensor> outs;
  std::string error;
  ASSERT_TRUE(fp32.run({HostTensor::makeFloat({1}, {1.0f}), HostTensor::makeFloat({1}, {1e-12f})},
                       outs, error))
      << error;
  EXPECT_EQ(outs[0].floats[0], 0.0f);
  EXPECT_TRUE(outs[0].doubles.empty());
}

TEST_F(InterpreterF64Test, ConstantsWidenExactlyFromTheirDtype) {
  auto out = run(R"mlir(
    func.func @main() -> (tensor<2xf32>, tensor<2xbf16>, tensor<2xf16>) {
      %a = mp.constant dense<[0.1, -3.3]> : tensor<2xf32>
      %b = mp.constant dense<[0.1, 1.0e30]> : tensor<2xbf16>
      %c = mp.constant dense<[0.1, 65504.0]> : tensor<2xf16>
      return %a, %b, %c : tensor<2xf32>, tensor<2xbf16>, tensor<2xf16>
    })mlir",
                 {});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].values, (std::vector<double>{double(0.1f), double(-3.3f)}));
  // bf16(0.1) = 0x3DCD = 0.10009765625; f16(0.1) = 0x2E66 = 0.0999755859375.
  EXPECT_EQ(out[1].values[0], 0.10009765625);
  EXPECT_EQ(out[1].values[1],
            double(mixprec::numerics::roundTo(mixprec::numerics::Format::BF16, 1.0e30f)));
  EXPECT_EQ(out[2].values, (std::vector<double>{0.0999755859375, 65504.0}));
}

//===----------------------------------------------------------------------===//
// Element-wise: every ScalarFn
//===----------------------------------------------------------------------===//

TEST_F(InterpreterF64Test, UnaryScalarFunctionsComputeInDouble) {
  const std::vector<double> x = oddValues(9);         // [-1.1, 1.86]
  const std::vector<double> pos = oddValues(9, 1, 1.5); // positive
  expectClose(unary("neg", x), map(x, [](double v) { return -v; }), 0);
  expectClose(unary("relu", x), map(x, [](double v) { return v < 0 ? 0.0 : v; }), 0);
  expectClose(unary("abs", x), map(x, [](double v) { return std::fabs(v); }), 0);
  expectClose(unary("tanh", x), map(x, [](double v) { return std::tanh(v); }));
  expectClose(unary("sigmoid", x), map(x, [](double v) { return 1 / (1 + std::exp(-v)); }));
  expectClose(unary("silu", x), map(x, [](double v) { return v / (1 + std::exp(-v)); }));
  expectClose(unary("exp", x), map(x, [](double v) { return std::exp(v); }));
  expectClose(unary("log", pos), map(pos, [](double v) { return std::log(v); }));
  expectClose(unary("sqrt", pos), map(pos, [](double v) { return std::sqrt(v); }));
  expectClose(unary("rsqrt", pos), map(pos, [](double v) { return 1 / std::sqrt(v); }));
  expectClose(unary("erf", x), map(x, [](double v) { return std::erf(v); }));
  expectClose(unary("reciprocal", x), map(x, [](double v) { return 1 / v; }));
  expectClose(unary("gelu", x),
              map(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  expectClose(unary("gelu", x, "approximate tanh"), map(x, [](double v) {
                double u = std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v);
                return 0.5 * v * (1 + std::tanh(u));
              }));
  expectClose(unary("sin", x), map(x, [](double v) { return std::sin(v); }));
  expectClose(unary("cos", x), map(x, [](double v) { return std::cos(v); }));
  expectClose(unary("sign", x), map(x, [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; }),
              0);
  // floor/ceil/round of values just off an integer or a half: float would
  // round 2.0000000001 to 2 first.
  const std::vector<double> near = {2.0000000001, -2.0000000001, 2.5000000001, 3.5, -0.4999999999};
  expectClose(unary("floor", near), {2, -3, 2, 3, -1}, 0);
  expectClose(unary("ceil", near), {3, -2, 3, 4, -0.0}, 0);
  expectClose(unary("round", near), {2, -2, 3, 4, -0.0}, 0);
  expectClose(unary("softplus", x), map(x, [](double v) { return std::log(1 + std::exp(v)); }));
  expectClose(unary("mish", x),
              map(x, [](double v) { return v * std::tanh(std::log(1 + std::exp(v))); }));
  expectClose(unary("hard_swish", x), map(x, [](double v) {
                return v * std::min(std::max(v / 6 + 0.5, 0.0), 1.0);
              }));
}

TEST_F(InterpreterF64Test, ParameterizedActivationsUseTheAttributesExactly) {
  const std::vector<double> x = oddValues(9);
  // The attributes are f32: 0.2f and 1.7f as the IR holds them.
  const double a = double(0.2f), g = double(1.7f);
  expectClose(unary("leaky_relu", x, "{alpha = 0.2 : f32}"),
              map(x, [a](double v) { return v < 0 ? a * v : v; }));
  expectClose(unary("elu", x, "{alpha = 0.2 : f32}"),
              map(x, [a](double v) { return v < 0 ? a * (std::exp(v) - 1) : v; }));
  expectClose(unary("selu", x, "{alpha = 0.2 : f32, gamma = 1.7 : f32}"),
              map(x, [a, g](double v) { return g * (v <= 0 ? a * (std::exp(v) - 1) : v); }));
  expectClose(unary("hard_sigmoid", x, "{alpha = 0.2 : f32, beta = 0.5 : f32}"),
              map(x, [a](double v) { return std::min(std::max(a * v + 0.5, 0.0), 1.0); }));
}

TEST_F(InterpreterF64Test, BinaryScalarFunctionsComputeInDouble) {
  const std::vector<double> a = oddValues(9, 3.0), b = oddValues(9, -1.3, 0.05);
  const std::vector<double> pa = oddValues(9, 1.0, 1.5);
  auto zip = [&](const std::vector<double> &x, const std::vector<double> &y,
                 const std::function<double(double, double)> &f) {
    std::vector<double> r(x.size());
    for (size_t i = 0; i < x.size(); ++i)
      r[i] = f(x[i], y[i]);
    return r;
  };
  expectClose(binary("add", a, b), zip(a, b, [](double x, double y) { return x + y; }), 0);
  expectClose(binary("sub", a, b), zip(a, b, [](double x, double y) { return x - y; }), 0);
  expectClose(binary("mul", a, b), zip(a, b, [](double x, double y) { return x * y; }), 0);
  expectClose(binary("div", a, b), zip(a, b, [](double x, double y) { return x / y; }), 0);
  expectClose(binary("pow", pa, b), zip(pa, b, [](double x, double y) { return std::pow(x, y); }));
  expectClose(binary("max", a, b), zip(a, b, [](double x, double y) { return std::max(x, y); }), 0);
  expectClose(binary("min", a, b), zip(a, b, [](double x, double y) { return std::min(x, y); }), 0);
  expectClose(binary("fmod", a, b),
              zip(a, b, [](double x, double y) { return std::fmod(x, y); }), 0);
  expectClose(binary("mod", a, b), zip(a, b, [](double x, double y) {
                double m = x - y * std::floor(x / y);
                return m;
              }),
              1e-13);
  expectClose(binary("prelu", a, b),
              zip(a, b, [](double x, double y) { return x < 0 ? y * x : x; }), 0);
}

TEST_F(InterpreterF64Test, PredicatesCompareDoubles) {
  // 1 and 1 + 1e-12 are one float apart from nothing: equal in FP32.
  const std::vector<double> a = {1.0, 1.0 + 1e-12, 2.0, -0.5};
  const std::vector<double> b = {1.0 + 1e-12, 1.0, 2.0, -0.5 - 1e-13};
  EXPECT_EQ(binary("equal", a, b, "i1"), (std::vector<double>{0, 0, 1, 0}));
  EXPECT_EQ(binary("less", a, b, "i1"), (std::vector<double>{1, 0, 0, 0}));
  EXPECT_EQ(binary("less_or_equal", a, b, "i1"), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(binary("greater", a, b, "i1"), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(binary("greater_or_equal", a, b, "i1"), (std::vector<double>{0, 1, 1, 1}));

  auto out = run(R"mlir(
    func.func @main(%x: tensor<4xf32>, %p: tensor<4xi1>, %q: tensor<4xi1>)
        -> (tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>,
            tensor<4xi1>, tensor<4xi1>) {
      %0 = mp.is_nan %x : tensor<4xf32> -> tensor<4xi1>
      %1 = mp.is_inf %x : tensor<4xf32> -> tensor<4xi1>
      %2 = mp.is_inf %x {detect_negative = false} : tensor<4xf32> -> tensor<4xi1>
      %3 = mp.is_inf %x {detect_positive = false} : tensor<4xf32> -> tensor<4xi1>
      %4 = mp.and %p, %q : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
      %5 = mp.or %p, %q : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
      %6 = mp.xor %p, %q : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
      %7 = mp.not %p : tensor<4xi1>
      return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xi1>, tensor<4xi1>, tensor<4xi1>,
          tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>, tensor<4xi1>
    })mlir",
                 {{{4}, {std::nan(""), INFINITY, -INFINITY, 1e300}},
                  {{4}, {0, 0, 1, 1}},
                  {{4}, {0, 1, 0, 1}}});
  ASSERT_EQ(out.size(), 8u);
  EXPECT_EQ(out[0].values, (std::vector<double>{1, 0, 0, 0}));
  // 1e300 is finite in double (a float would hold inf).
  EXPECT_EQ(out[1].values, (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(out[2].values, (std::vector<double>{0, 1, 0, 0}));
  EXPECT_EQ(out[3].values, (std::vector<double>{0, 0, 1, 0}));
  EXPECT_EQ(out[4].values, (std::vector<double>{0, 0, 0, 1}));
  EXPECT_EQ(out[5].values, (std::vector<double>{0, 1, 1, 1}));
  EXPECT_EQ(out[6].values, (std::vector<double>{0, 1, 1, 0}));
  EXPECT_EQ(out[7].values, (std::vector<double>{1, 1, 0, 0}));
}

TEST_F(InterpreterF64Test, WhereSelectsDoublesAndBroadcasts) {
  auto out = run(R"mlir(
    func.func @main(%c: tensor<2x1xi1>, %a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xf32> {
      %0 = mp.where %c, %a, %b : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
      return %0 : tensor<2x3xf32>
    })mlir",
                 {{{2, 1}, {1, 0}}, {{2, 3}, oddValues(6)}, {{}, {0.1 + 1e-12}}});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> a = oddValues(6);
  EXPECT_EQ(out[0].values,
            (std::vector<double>{a[0], a[1], a[2], 0.1 + 1e-12, 0.1 + 1e-12, 0.1 + 1e-12}));
}

TEST_F(InterpreterF64Test, CastsBetweenFloatsAreIdentitiesAndToIntegersTruncate) {
  auto out = run(R"mlir(
    func.func @main(%x: tensor<3xf32>, %i: tensor<3xi64>)
        -> (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>, tensor<3xi1>) {
      %h = mp.cast %x : tensor<3xf32> -> tensor<3xf16>
      %b = mp.cast %h : tensor<3xf16> -> tensor<3xbf16>
      %f = mp.cast %b : tensor<3xbf16> -> tensor<3xf32>
      %n = mp.cast %x : tensor<3xf32> -> tensor<3xi64>
      %g = mp.cast %i : tensor<3xi64> -> tensor<3xf32>
      %t = mp.cast %x : tensor<3xf32> -> tensor<3xi1>
      return %f, %n, %g, %t : tensor<3xf32>, tensor<3xi64>, tensor<3xf32>, tensor<3xi1>
    })mlir",
                 {{{3}, {0.1 + 1e-12, -2.9999999999, 1e10 + 0.5}},
                  {{3}, {-7, 123456789012345, 0}}});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].values, (std::vector<double>{0.1 + 1e-12, -2.9999999999, 1e10 + 0.5}));
  EXPECT_EQ(out[1].values, (std::vector<double>{0, -2, 1e10}));
  EXPECT_EQ(out[2].values, (std::vector<double>{-7, 123456789012345, 0}));
  EXPECT_EQ(out[3].values, (std::vector<double>{1, 1, 1}));
}

TEST_F(InterpreterF64Test, FusionBodiesRunInDouble) {
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> tensor<2xf32> {
      %f = mp.fusion elementwise(%x, %y) {ops = ["a", "b"]} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32> {
      ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
        %0 = mp.add %a, %b : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
        %1 = mp.exp %0 : tensor<2xf32>
        mp.yield %1 : tensor<2xf32>
      }
      return %f : tensor<2xf32>
    })mlir",
                 {{{2}, {0.1, -0.7}}, {{2}, {1e-12, 0.3 + 1e-11}}});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0].values, {std::exp(0.1 + 1e-12), std::exp(-0.7 + (0.3 + 1e-11))});
}

//===----------------------------------------------------------------------===//
// GEMMs and convolutions
//===----------------------------------------------------------------------===//

/// Row-major C[M,N] = A[M,K] B[K,N] in double, in order.
std::vector<double> naiveMatmul(const std::vector<double> &a, const std::vector<double> &b,
                                int m, int k, int n) {
  std::vector<double> c(m * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p)
        c[i * n + j] += a[i * k + p] * b[p * n + j];
  return c;
}

TEST_F(InterpreterF64Test, MatmulAndLinearMultiplyInDouble) {
  const int m = 3, k = 5, n = 4;
  std::vector<double> a = oddValues(m * k), b = oddValues(k * n, 0.7, 0.01);
  std::vector<double> bias = oddValues(n, 0.3);
  // W^T for the transposed linear: [N, K].
  std::vector<double> wt(n * k);
  for (int p = 0; p < k; ++p)
    for (int j = 0; j < n; ++j)
      wt[j * k + p] = b[p * n + j];
  auto out = run(R"mlir(
    func.func @main(%a: tensor<3x5xf32>, %b: tensor<5x4xf32>, %wt: tensor<4x5xf32>, %bias: tensor<4xf32>)
        -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) {
      %0 = mp.matmul %a, %b {acc_type = f32} : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
      %1 = mp.linear %a, %b, %bias : (tensor<3x5xf32>, tensor<5x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
      %2 = mp.linear %a, %wt {transpose_weight = true, acc_type = f32} : (tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<3x4xf32>
      return %0, %1, %2 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>
    })mlir",
                 {{{m, k}, a}, {{k, n}, b}, {{n, k}, wt}, {{n}, bias}});
  ASSERT_EQ(out.size(), 3u);
  std::vector<double> want = naiveMatmul(a, b, m, k, n);
  expectClose(out[0].values, want);
  expectClose(out[2].values, want);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      want[i * n + j] += bias[j];
  expectClose(out[1].values, want);
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{3, 4}));
}

TEST_F(InterpreterF64Test, BatchedMatmulBroadcastsInDouble) {
  std::vector<double> a = oddValues(2 * 2 * 3), b = oddValues(3 * 2, -0.9, 0.2);
  auto out = run(R"mlir(
    func.func @main(%a: tensor<2x2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2x2xf32> {
      %0 = mp.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x2xf32>) -> tensor<2x2x2xf32>
      return %0 : tensor<2x2x2xf32>
    })mlir",
                 {{{2, 2, 3}, a}, {{3, 2}, b}});
  ASSERT_EQ(out.size(), 1u);
  expectClose(out[0].values, naiveMatmul(a, b, 4, 3, 2));
}

/// A direct 2-D convolution, N=1, in double: in [C,H,W], w [M,C,kh,kw],
/// stride s, padding p on every side.
std::vector<double> naiveConv(const std::vector<double> &in, int c, int h, int w,
                              const std::vector<double> &wt, int m, int kh, int kw, int s, int p,
                              const std::vector<double> &bias, int oh, int ow) {
  std::vector<double> out(m * oh * ow);
  for (int o = 0; o < m; ++o)
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x) {
        double acc = bias.empty() ? 0.0 : bias[o];
        for (int ci = 0; ci < c; ++ci)
          for (int i = 0; i < kh; ++i)
            for (int j = 0; j < kw; ++j) {
              int iy = y * s - p + i, ix = x * s - p + j;
              if (iy >= 0 && iy < h && ix >= 0 && ix < w)
                acc += in[(ci * h + iy) * w + ix] * wt[((o * c + ci) * kh + i) * kw + j];
            }
        out[(o * oh + y) * ow + x] = acc;
      }
  return out;
}

TEST_F(InterpreterF64Test, ConvolutionsComputeInDouble) {
  std::vector<double> x = oddValues(2 * 4 * 4), w = oddValues(3 * 2 * 3 * 3, 0.4, 0.02);
  std::vector<double> bias = {0.1 + 1e-10, -0.2, 0.3};
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1x2x4x4xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>)
        -> (tensor<1x3x4x4xf32>, tensor<1x3x2x2xf32>) {
      %0 = mp.conv2d %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x4x4xf32>
      %1 = mp.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x2x2xf32>
      return %0, %1 : tensor<1x3x4x4xf32>, tensor<1x3x2x2xf32>
    })mlir",
                 {{{1, 2, 4, 4}, x}, {{3, 2, 3, 3}, w}, {{3}, bias}});
  ASSERT_EQ(out.size(), 2u);
  expectClose(out[0].values, naiveConv(x, 2, 4, 4, w, 3, 3, 3, 1, 1, bias, 4, 4), 1e-13);
  expectClose(out[1].values, naiveConv(x, 2, 4, 4, w, 3, 3, 3, 2, 1, {}, 2, 2), 1e-13);
}

TEST_F(InterpreterF64Test, ConvTransposeScattersInDouble) {
  // in [1,1,2,2], w [1,1,2,2], stride 2, no padding: each input value
  // scales the kernel into its own 2x2 block of the 4x4 output.
  std::vector<double> x = {0.1 + 1e-12, -0.3, 0.7, 1.1}, w = {0.5, -0.25 + 1e-11, 2.0, 0.3};
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1x1x2x2xf32>, %w: tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32> {
      %0 = mp.conv_transpose %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>} : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x4x4xf32>
      return %0 : tensor<1x1x4x4xf32>
    })mlir",
                 {{{1, 1, 2, 2}, x}, {{1, 1, 2, 2}, w}});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> want(16);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
          want[(2 * i + a) * 4 + 2 * j + b] = x[i * 2 + j] * w[a * 2 + b];
  expectClose(out[0].values, want, 0);
}

//===----------------------------------------------------------------------===//
// Softmax and normalizations
//===----------------------------------------------------------------------===//

TEST_F(InterpreterF64Test, SoftmaxAndLogSoftmaxMatchTheDoubleFormula) {
  std::vector<double> x = oddValues(2 * 5, 2.0);
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2x5xbf16>, tensor<2x5xf32>) {
      %0 = mp.softmax %x {axis = 1 : i64} : tensor<2x5xf32> -> tensor<2x5xf32>
      %1 = mp.log_softmax %x {axis = 1 : i64} : tensor<2x5xf32> -> tensor<2x5xbf16>
      %2 = mp.softmax %x {axis = 0 : i64} : tensor<2x5xf32> -> tensor<2x5xf32>
      return %0, %1, %2 : tensor<2x5xf32>, tensor<2x5xbf16>, tensor<2x5xf32>
    })mlir",
                 {{{2, 5}, x}});
  ASSERT_EQ(out.size(), 3u);
  std::vector<double> soft(10), logSoft(10), soft0(10);
  for (int r = 0; r < 2; ++r) {
    double sum = 0;
    for (int i = 0; i < 5; ++i)
      sum += std::exp(x[r * 5 + i]);
    for (int i = 0; i < 5; ++i) {
      soft[r * 5 + i] = std::exp(x[r * 5 + i]) / sum;
      logSoft[r * 5 + i] = x[r * 5 + i] - std::log(sum);
    }
  }
  for (int i = 0; i < 5; ++i) {
    double sum = std::exp(x[i]) + std::exp(x[5 + i]);
    soft0[i] = std::exp(x[i]) / sum;
    soft0[5 + i] = std::exp(x[5 + i]) / sum;
  }
  expectClose(out[0].values, soft);
  expectClose(out[1].values, logSoft);
  expectClose(out[2].values, soft0);
}

TEST_F(InterpreterF64Test, NormalizationsMatchTheDoubleFormula) {
  std::vector<double> x = oddValues(2 * 4, 1.5, 0.2), g = oddValues(4, 0.5, 1.0);
  std::vector<double> b = oddValues(4, -0.2);
  const double eps = double(1e-5f);
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>)
        -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf16>, tensor<2x4xf32>) {
      %0 = mp.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
      %1 = mp.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      %2 = mp.rms_norm %x, %g {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf16>
      %3 = mp.rms_norm %x {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x4xf32>) -> tensor<2x4xf32>
      return %0, %1, %2, %3 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf16>, tensor<2x4xf32>
    })mlir",
                 {{{2, 4}, x}, {{4}, g}, {{4}, b}});
  ASSERT_EQ(out.size(), 4u);
  std::vector<double> ln(8), lnPlain(8), rms(8), rmsPlain(8);
  for (int r = 0; r < 2; ++r) {
    double mean = 0, sq = 0, ms = 0;
    for (int i = 0; i < 4; ++i)
      mean += x[r * 4 + i] / 4;
    for (int i = 0; i < 4; ++i) {
      sq += (x[r * 4 + i] - mean) * (x[r * 4 + i] - mean) / 4;
      ms += x[r * 4 + i] * x[r * 4 + i] / 4;
    }
    for (int i = 0; i < 4; ++i) {
      double v = x[r * 4 + i];
      lnPlain[r * 4 + i] = (v - mean) / std::sqrt(sq + eps);
      ln[r * 4 + i] = lnPlain[r * 4 + i] * g[i] + b[i];
      rmsPlain[r * 4 + i] = v / std::sqrt(ms + eps);
      rms[r * 4 + i] = rmsPlain[r * 4 + i] * g[i];
    }
  }
  expectClose(out[0].values, ln);
  expectClose(out[1].values, lnPlain);
  expectClose(out[2].values, rms);
  expectClose(out[3].values, rmsPlain);
}

TEST_F(InterpreterF64Test, BatchNormMatchesTheDoubleFormula) {
  std::vector<double> x = oddValues(1 * 2 * 3), scale = {0.9 + 1e-10, 1.3};
  std::vector<double> bias = {0.01, -0.2}, mean = {0.05, -0.3}, var = {0.7, 1.9 + 1e-9};
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1x2x3xf32>, %s: tensor<2xf32>, %b: tensor<2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>) -> tensor<1x2x3xf32> {
      %0 = mp.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<1x2x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3xf32>
      return %0 : tensor<1x2x3xf32>
    })mlir",
                 {{{1, 2, 3}, x}, {{2}, scale}, {{2}, bias}, {{2}, mean}, {{2}, var}});
  ASSERT_EQ(out.size(), 1u);
  std::vector<double> want(6);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 3; ++i)
      want[c * 3 + i] =
          (x[c * 3 + i] - mean[c]) / std::sqrt(var[c] + double(1e-5f)) * scale[c] + bias[c];
  expectClose(out[0].values, want);
}

//===----------------------------------------------------------------------===//
// Reductions, cumsum, pooling
//===----------------------------------------------------------------------===//

TEST_F(InterpreterF64Test, ReductionsAccumulateDoubles) {
  std::vector<double> x = oddValues(2 * 3, 1.0, 2.0);
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<1x3xf32>, tensor<2xf32>, tensor<f32>, tensor<3xf32>) {
      %0 = mp.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
      %1 = mp.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : tensor<2x3xf32> -> tensor<1x3xf32>
      %2 = mp.reduce_max %x {axes = array<i64: 1>, keepdims = false} : tensor<2x3xf32> -> tensor<2xf32>
      %3 = mp.reduce_prod %x {axes = array<i64: 0, 1>, keepdims = false} : tensor<2x3xf32> -> tensor<f32>
      %4 = mp.cumsum %x {axis = 0 : i64} : tensor<2x3xf32> -> tensor<2x3xf32>
      %5 = mp.reduce_sum %4 {axes = array<i64: 0>, keepdims = false} : tensor<2x3xf32> -> tensor<3xf32>
      return %0, %1, %2, %3, %5 : tensor<2xf32>, tensor<1x3xf32>, tensor<2xf32>, tensor<f32>, tensor<3xf32>
    })mlir",
                 {{{2, 3}, x}});
  ASSERT_EQ(out.size(), 5u);
  expectClose(out[0].values, {x[0] + x[1] + x[2], x[3] + x[4] + x[5]});
  expectClose(out[1].values, {(x[0] + x[3]) / 2, (x[1] + x[4]) / 2, (x[2] + x[5]) / 2});
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{1, 3}));
  expectClose(out[2].values, {std::max({x[0], x[1], x[2]}), std::max({x[3], x[4], x[5]})}, 0);
  expectClose(out[3].values, {x[0] * x[1] * x[2] * x[3] * x[4] * x[5]});
  // cumsum over axis 0 then summed: x[0] + (x[0] + x[3]) per column.
  expectClose(out[4].values, {2 * x[0] + x[3], 2 * x[1] + x[4], 2 * x[2] + x[5]});
}

TEST_F(InterpreterF64Test, PoolingComputesInDouble) {
  std::vector<double> x = oddValues(1 * 1 * 4 * 4);
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1x1x4x4xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
      %0 = mp.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
      %1 = mp.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
      %2 = mp.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
      %3 = mp.avg_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>} : tensor<1x1x4x4xf32> -> tensor<1x1x2x2xf32>
      return %0, %1, %2, %3 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
    })mlir",
                 {{{1, 1, 4, 4}, x}});
  ASSERT_EQ(out.size(), 4u);
  std::vector<double> mx(4), avg(4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double a = x[(2 * i) * 4 + 2 * j], b = x[(2 * i) * 4 + 2 * j + 1];
      double c = x[(2 * i + 1) * 4 + 2 * j], d = x[(2 * i + 1) * 4 + 2 * j + 1];
      mx[i * 2 + j] = std::max({a, b, c, d});
      avg[i * 2 + j] = (a + b + c + d) / 4;
    }
  expectClose(out[0].values, mx, 0);
  expectClose(out[1].values, avg);
  expectClose(out[2].values, mx, 0);
  expectClose(out[3].values, avg);
}

//===----------------------------------------------------------------------===//
// Data movement and indexing: doubles move exactly, integer indices as ever
//===----------------------------------------------------------------------===//

TEST_F(InterpreterF64Test, DataMovementMovesDoublesExactly) {
  std::vector<double> x = oddValues(2 * 3);
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2x3xf32>, %i: tensor<2xi64>)
        -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<2x3xf32>) {
      %0 = mp.reshape %x : tensor<2x3xf32> -> tensor<3x2xf32>
      %1 = mp.transpose %x {perm = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
      %2 = mp.slice %x {starts = array<i64: 0, 2>, steps = array<i64: 1, -2>} : tensor<2x3xf32> -> tensor<2x2xf32>
      %3 = mp.concat %x, %x {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
      %4 = mp.gather %x, %i {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
      return %0, %1, %2, %3, %4 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<2x2xf32>, tensor<4x3xf32>, tensor<2x3xf32>
    })mlir",
                 {{{2, 3}, x}, {{2}, {1, -2}}});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].values, x);
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(out[1].values, (std::vector<double>{x[0], x[3], x[1], x[4], x[2], x[5]}));
  EXPECT_EQ(out[2].values, (std::vector<double>{x[2], x[0], x[5], x[3]}));
  std::vector<double> twice = x;
  twice.insert(twice.end(), x.begin(), x.end());
  EXPECT_EQ(out[3].values, twice);
  // Index 1 is row 1; -2 is row 0.
  EXPECT_EQ(out[4].values, (std::vector<double>{x[3], x[4], x[5], x[0], x[1], x[2]}));
}

TEST_F(InterpreterF64Test, IndexingOpsWorkOnDoubles) {
  // Values 1e-12 apart: float would tie them.
  std::vector<double> x = {1.0, 1.0 + 1e-12, 0.5, 1.0 + 2e-12, -3.0, 0.25};
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2x3xf32>, %ie: tensor<2x1xi64>, %ind: tensor<1x2xi64>, %u: tensor<1xf32>)
        -> (tensor<2x1xf32>, tensor<1xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2x1xf32>, tensor<2x1xi64>, tensor<2x3xf32>) {
      %0 = mp.gather_elements %x, %ie {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<2x1xf32>
      %1 = mp.gather_nd %x, %ind {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<1x2xi64>) -> tensor<1xf32>
      %2 = mp.arg_max %x {axis = 1 : i64, keepdims = false} : tensor<2x3xf32> -> tensor<2xi64>
      %3 = mp.arg_min %x {axis = 1 : i64, keepdims = false} : tensor<2x3xf32> -> tensor<2xi64>
      %4:2 = mp.topk %x {axis = 1 : i64, k = 1 : i64} : tensor<2x3xf32> -> (tensor<2x1xf32>, tensor<2x1xi64>)
      %5 = mp.scatter_nd %x, %ind, %u {reduction = "add"} : (tensor<2x3xf32>, tensor<1x2xi64>, tensor<1xf32>) -> tensor<2x3xf32>
      return %0, %1, %2, %3, %4#0, %4#1, %5 : tensor<2x1xf32>, tensor<1xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2x1xf32>, tensor<2x1xi64>, tensor<2x3xf32>
    })mlir",
                 {{{2, 3}, x}, {{2, 1}, {1, 0}}, {{1, 2}, {1, 0}}, {{1}, {1e-13}}});
  ASSERT_EQ(out.size(), 7u);
  EXPECT_EQ(out[0].values, (std::vector<double>{x[1], x[3]}));
  EXPECT_EQ(out[1].values, (std::vector<double>{x[3]}));
  EXPECT_EQ(out[2].values, (std::vector<double>{1, 0}));
  EXPECT_EQ(out[3].values, (std::vector<double>{2, 1}));
  EXPECT_EQ(out[4].values, (std::vector<double>{x[1], x[3]}));
  EXPECT_EQ(out[5].values, (std::vector<double>{1, 0}));
  std::vector<double> scattered = x;
  scattered[3] += 1e-13;
  EXPECT_EQ(out[6].values, scattered);
}

TEST_F(InterpreterF64Test, IntegerOpsBehaveAsInTheFp32Mode) {
  auto out = run(R"mlir(
    func.func @main(%a: tensor<3xi64>, %b: tensor<3xi32>) -> (tensor<3xi64>, tensor<3xi64>, tensor<3xi32>) {
      %0 = mp.add %a, %a : tensor<3xi64>, tensor<3xi64> -> tensor<3xi64>
      %1 = mp.cumsum %a {axis = 0 : i64} : tensor<3xi64> -> tensor<3xi64>
      %2 = mp.mul %b, %b : tensor<3xi32>, tensor<3xi32> -> tensor<3xi32>
      return %0, %1, %2 : tensor<3xi64>, tensor<3xi64>, tensor<3xi32>
    })mlir",
                 {{{3}, {-4, 4503599627370495, 7}}, {{3}, {65536, -3, 2147483647}}});
  ASSERT_EQ(out.size(), 3u);
  // 2^53 - 1 doubled is 2^54 - 2: an int64 result no double holds exactly
  // would be an error; this one it does hold.
  EXPECT_EQ(out[0].values, (std::vector<double>{-8, 9007199254740990, 14}));
  EXPECT_EQ(out[1].values, (std::vector<double>{-4, 4503599627370491, 4503599627370498}));
  // i32 wraps: 65536^2 = 2^32 -> 0; (2^31 - 1)^2 -> 1.
  EXPECT_EQ(out[2].values, (std::vector<double>{0, 9, 1}));
}

//===----------------------------------------------------------------------===//
// FP8 scaling ops: their math in double, no FP8 grid
//===----------------------------------------------------------------------===//

TEST_F(InterpreterF64Test, ScalingOpsComputeTheirMathInDouble) {
  std::vector<double> x = {0.1 + 1e-12, -3.3, 1000.7};
  auto out = run(R"mlir(
    func.func @main(%x: tensor<3xf32>, %s: tensor<f32>)
        -> (tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<3x1xf32>) {
      %q = mp.quantize %x, %s : (tensor<3xf32>, tensor<f32>) -> tensor<3xf8E4M3FN>
      %d = mp.dequantize %q, %s : (tensor<3xf8E4M3FN>, tensor<f32>) -> tensor<3xf32>
      %a = mp.amax %x : tensor<3xf32> -> tensor<f32>
      %sc = mp.fp8_scale %a {format = f8E4M3FN, margin = 1 : i64} : tensor<f32> -> tensor<f32>
      %qc = mp.reshape %q : tensor<3xf8E4M3FN> -> tensor<3x1xf8E4M3FN>
      %one = mp.constant dense<[[1.0]]> : tensor<1x1xf32>
      %qo = mp.cast %one : tensor<1x1xf32> -> tensor<1x1xf8E4M3FN>
      %m = mp.scaled_matmul %qc, %qo, %s, %s {acc_type = f32} : (tensor<3x1xf8E4M3FN>, tensor<1x1xf8E4M3FN>, tensor<f32>, tensor<f32>) -> tensor<3x1xf32>
      return %d, %a, %sc, %m : tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<3x1xf32>
    })mlir",
                 {{{3}, x}, {{}, {0.37}}});
  ASSERT_EQ(out.size(), 4u);
  // quantize then dequantize: (x * s) / s, with no FP8 rounding between
  // (1000.7 * 0.37 = 370.3 would not even be on the E4M3 grid).
  std::vector<double> roundTrip = map(x, [](double v) { return v * 0.37 / 0.37; });
  EXPECT_EQ(out[0].values, roundTrip);
  EXPECT_EQ(out[1].values, (std::vector<double>{1000.7}));
  EXPECT_EQ(out[2].values, (std::vector<double>{448.0 / 1000.7 / 2.0}));
  // scaled_matmul of (x * s) by 1, then * (1/s)(1/s).
  std::vector<double> scaled =
      map(x, [](double v) { return (v * 0.37) * 1.0 * ((1.0 / 0.37) * (1.0 / 0.37)); });
  EXPECT_EQ(out[3].values, scaled);
}

//===----------------------------------------------------------------------===//
// Bad input
//===----------------------------------------------------------------------===//

TEST_F(InterpreterF64Test, WrongInputCountOrShapeIsAnError) {
  const char *ir = R"mlir(
    func.func @main(%x: tensor<2xf32> {mp.name = "x"}) -> tensor<2xf32> {
      %0 = mp.exp %x : tensor<2xf32>
      return %0 : tensor<2xf32>
    })mlir";
  EXPECT_EQ(fail(ir, {}), "expected 1 inputs, got 0");
  EXPECT_EQ(fail(ir, {{{2}, {1, 2}}, {{2}, {1, 2}}}), "expected 1 inputs, got 2");
  EXPECT_EQ(fail(ir, {{{3}, {1, 2, 3}}}), "input 'x' has shape [3], the graph expects [2]");
  EXPECT_EQ(fail(ir, {{{2}, {1, 2, 3}}}), "input 'x' holds 3 values for shape [2]");
}

TEST_F(InterpreterF64Test, IntegerInputsMustBeIntegralAndInRange) {
  const char *ir = R"mlir(
    func.func @main(%x: tensor<2xf32>, %i: tensor<1xi64> {mp.name = "idx"}, %j: tensor<1xi32> {mp.name = "j"}, %b: tensor<1xi1> {mp.name = "mask"}) -> tensor<1xf32> {
      %0 = mp.gather %x, %i {axis = 0 : i64} : (tensor<2xf32>, tensor<1xi64>) -> tensor<1xf32>
      return %0 : tensor<1xf32>
    })mlir";
  EXPECT_EQ(fail(ir, {{{2}, {1, 2}}, {{1}, {0.5}}, {{1}, {0}}, {{1}, {0}}}),
            "input 'idx' element 0 (0.500000) is not a i64 value");
  EXPECT_EQ(fail(ir, {{{2}, {1, 2}}, {{1}, {0x1p53}}, {{1}, {0}}, {{1}, {0}}}),
            "input 'idx' element 0 (9007199254740992.000000) is not a i64 value");
  EXPECT_EQ(fail(ir, {{{2}, {1, 2}}, {{1}, {1}}, {{1}, {2147483648.0}}, {{1}, {0}}}),
            "input 'j' element 0 (2147483648.000000) is not a i32 value");
  EXPECT_EQ(fail(ir, {{{2}, {1, 2}}, {{1}, {1}}, {{1}, {0}}, {{1}, {2}}}),
            "input 'mask' element 0 (2.000000) is not a i1 value");
  EXPECT_EQ(fail(ir, {{{2}, {1, 2}}, {{1}, {std::nan("")}}, {{1}, {0}}, {{1}, {0}}}),
            "input 'idx' element 0 (nan) is not a i64 value");
  // And an index out of range is the op's run-time error, named.
  EXPECT_EQ(fail(ir, {{{2}, {1, 2}}, {{1}, {2}}, {{1}, {0}}, {{1}, {0}}}).rfind("mp.gather", 0),
            0u);
  auto out = run(ir, {{{2}, {0.1, 0.2 + 1e-12}}, {{1}, {-1}}, {{1}, {-2147483648.0}}, {{1}, {1}}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].values, (std::vector<double>{0.2 + 1e-12}));
}

TEST_F(InterpreterF64Test, IntegerOutputBeyondDoublePrecisionIsAnError) {
  std::string error = fail(R"mlir(
    func.func @main() -> (tensor<2xi64> {mp.name = "big"}) {
      %0 = mp.constant dense<[1, 9007199254740993]> : tensor<2xi64>
      return %0 : tensor<2xi64>
    })mlir",
                           {});
  EXPECT_EQ(error, "output 'big' element 1 (9007199254740993) is not exactly representable as a "
                   "double");
}

TEST_F(InterpreterF64Test, IntegerPowWithAFloatExponentIsRefusedNamingTheOp) {
  std::string error = fail(R"mlir(
    func.func @main(%a: tensor<2xi64>, %e: tensor<2xf32>) -> tensor<2xi64> {
      %0 = mp.pow %a, %e : tensor<2xi64>, tensor<2xf32> -> tensor<2xi64> loc("p")
      return %0 : tensor<2xi64>
    })mlir",
                           {{{2}, {2, 3}}, {{2}, {2, 0.5}}});
  EXPECT_EQ(error, "mp.pow 'p': an integer op with a float operand is not supported in the FP64 "
                   "mode");
}

TEST_F(InterpreterF64Test, OpsOutsideTheMpDialectAreRefusedNamingThem) {
  func::FuncOp func = parse(R"mlir(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = func.call @main(%x) : (tensor<2xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    })mlir");
  ASSERT_TRUE(func);
  std::string error;
  std::vector<HostTensorF64> inputs = {{{2}, {1, 2}}};
  EXPECT_TRUE(failed(mixprec::compiler::interpretF64(func, inputs, error)));
  EXPECT_EQ(error.rfind("func.call", 0), 0u) << error;
}

} // namespace
