//===- GradientCheckTest.cpp - gradient rules against finite differences ---===//
//
// For every op with a gradient rule: a tiny function computes
// loss = reduce_sum(op(inputs) * w) for a random w; buildGradientFunction
// differentiates it; its gradients must match central differences of the
// forward function, both computed in FP64 (the interpreter's FP64 mode);
// the FP32 interpreter's gradients must then be within FP32 rounding.
// Inputs are drawn away from kinks (relu at 0, max ties, ...); ops that are
// piecewise constant (floor, sign, ...) must give exactly zero instead.
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Training/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <set>
#include <random>
#include <sstream>

using namespace mlir;
using mixprec::compiler::HostTensor;
using mixprec::compiler::HostTensorF64;
using mixprec::compiler::Interpreter;

namespace {

using Shape = std::vector<int64_t>;

/// "tensor<2x3xf32>" for a shape and element type.
std::string tensorOf(const Shape &shape, const std::string &element = "f32") {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + element + ">";
}

int64_t count(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// One float input of a case: its name, shape and the range it is drawn from.
struct Input {
  std::string name;
  Shape shape;
  float lo = -1.0f, hi = 1.0f;
  /// Draw |x| >= 0.2 (kinks and poles at zero).
  bool awayFromZero = false;
  /// Draw distinct values at least 0.05 apart (max, sort: no near ties).
  bool distinct = false;
};

/// One op under test: its float inputs, the IR lines that compute %y from
/// them (integer operands are constants in the body), and %y's shape.
struct Case {
  std::string name;
  std::vector<Input> inputs;
  std::string body;
  Shape yShape;
  /// Piecewise constant: the gradient must be exactly zero.
  bool exactZero = false;
  /// The finite-difference step (a staircase, such as a rounding cast, needs a wide one).
  float step = 1e-2f;
  /// Fixes drawn inputs up (keeps fmod's quotient off integers, ...).
  std::function<void(std::vector<HostTensor> &)> adjust;
};

/// gtest prints a case by its name.
void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

/// Evaluates a function on inputs in the FP32 interpreter (the FP64 check
/// calls interpretF64 directly).
using Evaluate =
    std::function<std::vector<HostTensor>(func::FuncOp, const std::vector<HostTensor> &)>;

Evaluate interpreterFp32() {
  return [](func::FuncOp f, const std::vector<HostTensor> &inputs) {
    Interpreter interpreter(f);
    std::vector<HostTensor> outputs;
    std::string error;
    EXPECT_TRUE(interpreter.run(inputs, outputs, error)) << error;
    return outputs;
  };
}

class GradientCheck : public ::testing::TestWithParam<Case> {
protected:
  GradientCheck() {
    context.loadDialect<mixprec::graph::GraphDialect, func::FuncDialect>();
    mixprec::compiler::registerReferenceExternalModels(context);
  }

  /// The forward function's text: loss = reduce_sum(y * w).
  static std::string forwardIr(const Case &c) {
    std::ostringstream ir;
    ir << "func.func @main(";
    for (const Input &in : c.inputs)
      ir << "%" << in.name << ": " << tensorOf(in.shape) << " {mp.name = \"" << in.name
         << "\"}, ";
    std::string y = tensorOf(c.yShape);
    ir << "%loss_weight: " << y
       << " {mp.name = \"loss_weight\"}) -> (tensor<f32> {mp.name = \"loss\"}) {\n" << c.body
       << "\n  %yw = mp.mul %y, %loss_weight : " << y << ", " << y << " -> " << y << "\n";
    if (c.yShape.empty()) {
      ir << "  return %yw : tensor<f32>\n}\n";
      return ir.str();
    }
    ir << "  %loss = mp.reduce_sum %yw {axes = array<i64: ";
    for (size_t i = 0; i < c.yShape.size(); ++i)
      ir << (i ? ", " : "") << i;
    ir << ">, keepdims = false} : " << y << " -> tensor<f32>\n  return %loss : tensor<f32>\n}\n";
    return ir.str();
  }

  /// Random values for `in`.
  static HostTensor draw(const Input &in, std::mt19937 &rng) {
    std::uniform_real_distribution<float> u(in.lo, in.hi);
    std::vector<float> v(count(in.shape));
    for (float &x : v) {
      x = u(rng);
      if (in.awayFromZero)
        while (std::fabs(x) < 0.2f)
          x = u(rng);
    }
    if (in.distinct) {
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = in.lo + 0.05f * static_cast<float>(i) * (in.hi - in.lo);
      std::shuffle(v.begin(), v.end(), rng);
    }
    return HostTensor::makeFloat(in.shape, v);
  }

  MLIRContext context;
  Evaluate evaluate = interpreterFp32();
};

TEST_P(GradientCheck, MatchesFiniteDifferences) {
  const Case &c = GetParam();
  std::string ir = forwardIr(c);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(ir, &context);
  ASSERT_TRUE(module) << ir;
  auto forward = module->lookupSymbol<func::FuncOp>("main");
  mixprec::passes::GradientOptions options;
  for (const Input &in : c.inputs)
    options.wrt.push_back(in.name);
  FailureOr<func::FuncOp> grad = mixprec::passes::buildGradientFunction(forward, options);
  ASSERT_TRUE(succeeded(grad)) << ir;
  ASSERT_TRUE(succeeded(verify(*module)));

  std::mt19937 rng(std::hash<std::string>()(c.name) & 0xffffffff);
  std::vector<HostTensor> inputs;
  for (const Input &in : c.inputs)
    inputs.push_back(draw(in, rng));
  inputs.push_back(draw({"loss_weight", c.yShape, -1.0f, 1.0f}, rng));
  if (c.adjust)
    c.adjust(inputs);

  // The check runs in FP64 (the interpreter's FP64 mode: every float op in
  // double, casts identities), so that the finite differences are accurate
  // to ~1e-9 and a wrong rule cannot hide in FP32 noise: step 1e-5 relative,
  // central differences (truncation error ~h^2), tolerance 1e-5 relative.
  std::vector<HostTensorF64> inputs64;
  for (const HostTensor &t : inputs)
    inputs64.push_back({t.shape, std::vector<double>(t.floats.begin(), t.floats.end())});
  auto run64 = [&](func::FuncOp f, const std::vector<HostTensorF64> &in) {
    std::string error;
    FailureOr<std::vector<HostTensorF64>> out = mixprec::compiler::interpretF64(f, in, error);
    EXPECT_TRUE(succeeded(out)) << error;
    return succeeded(out) ? *out : std::vector<HostTensorF64>();
  };
  std::vector<HostTensorF64> outputs = run64(*grad, inputs64);
  ASSERT_EQ(outputs.size(), c.inputs.size() + 1);
  std::vector<HostTensorF64> forwardOut = run64(forward, inputs64);
  ASSERT_EQ(forwardOut.size(), 1u);
  EXPECT_EQ(outputs[0].values[0], forwardOut[0].values[0]) << "the gradient function's loss";
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::vector<double> &g = outputs[i + 1].values;
    ASSERT_EQ(g.size(), inputs64[i].values.size()) << c.inputs[i].name;
    for (size_t k = 0; k < g.size(); ++k) {
      if (c.exactZero) {
        EXPECT_EQ(g[k], 0.0) << c.inputs[i].name << "[" << k << "]";
        continue;
      }
      std::vector<HostTensorF64> moved = inputs64;
      double x = inputs64[i].values[k], h = 1e-5 * std::max(1.0, std::fabs(x));
      moved[i].values[k] = x + h;
      double up = run64(forward, moved)[0].values[0];
      moved[i].values[k] = x - h;
      double down = run64(forward, moved)[0].values[0];
      double fd = (up - down) / (2.0 * h);
      EXPECT_LE(std::fabs(g[k] - fd), 1e-5 * std::max(1.0, std::fabs(fd)))
          << c.inputs[i].name << "[" << k << "]: gradient " << g[k] << ", finite difference "
          << fd;
    }
  }
  // The FP32 interpreter runs the same gradient function (the precision
  // the step runs at): finite, and within FP32 rounding of the FP64 one.
  std::vector<HostTensor> outputs32 = evaluate(*grad, inputs);
  ASSERT_EQ(outputs32.size(), outputs.size());
  for (size_t i = 1; i < outputs.size(); ++i)
    for (size_t k = 0; k < outputs[i].values.size(); ++k)
      EXPECT_LE(std::fabs(outputs32[i].floats[k] - outputs[i].values[k]),
                1e-3 * std::max(1.0, std::fabs(outputs[i].values[k])))
          << c.inputs[i - 1].name << "[" << k << "] in FP32";
}

// loss= picks a result by name among several; the others are dropped.
TEST(Autodiff, LossChosenByName) {
  MLIRContext context;
  context.loadDialect<mixprec::graph::GraphDialect, func::FuncDialect>();
  mixprec::compiler::registerReferenceExternalModels(context);
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @f(%x: tensor<2xf32> {mp.name = "x"})
        -> (tensor<2xf32> {mp.name = "y"}, tensor<f32> {mp.name = "l"}) {
      %0 = mp.mul %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      %1 = mp.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : tensor<2xf32> -> tensor<f32>
      return %0, %1 : tensor<2xf32>, tensor<f32>
    })mlir",
                                                             &context);
  ASSERT_TRUE(module);
  mixprec::passes::GradientOptions options;
  options.wrt = {"x"};
  options.loss = "l";
  FailureOr<func::FuncOp> grad =
      mixprec::passes::buildGradientFunction(module->lookupSymbol<func::FuncOp>("f"), options);
  ASSERT_TRUE(succeeded(grad));
  EXPECT_EQ(grad->getName(), "f_grad");
  std::vector<HostTensor> outputs =
      interpreterFp32()(*grad, {HostTensor::makeFloat({2}, {3.0f, -0.5f})});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].floats, (std::vector<float>{9.25f}));
  EXPECT_EQ(outputs[1].floats, (std::vector<float>{6.0f, -1.0f})); // d(x^2)/dx = 2x, summed
}

//===----------------------------------------------------------------------===//
// The cases
//===----------------------------------------------------------------------===//

/// `%y = mp.<op> %x <attrs> : T` for a unary op keeping its type.
Case unary(const std::string &op, Input x, const std::string &attrs = "") {
  Case c{op, {x}, "", x.shape};
  c.inputs[0].name = "x";
  c.body = "  %y = mp." + op + " %x " + attrs + " : " + tensorOf(x.shape);
  return c;
}

/// `%y = mp.<op> %a, %b` with NumPy broadcasting.
Case binary(const std::string &op, const std::string &name, Input a, Input b, Shape y) {
  a.name = "a";
  b.name = "b";
  Case c{name, {a, b}, "", y};
  c.body = "  %y = mp." + op + " %a, %b : " + tensorOf(a.shape) + ", " + tensorOf(b.shape) +
           " -> " + tensorOf(y);
  return c;
}

Input in(Shape s, float lo = -1.0f, float hi = 1.0f) { return {"", s, lo, hi}; }
Input away(Shape s, float lo = -2.0f, float hi = 2.0f) { return {"", s, lo, hi, true}; }
Input distinct(Shape s) { return {"", s, -1.0f, 1.0f, false, true}; }

/// Keeps a / b at least 0.1 from an integer (fmod and mod jump there).
void quotientOffIntegers(std::vector<HostTensor> &v) {
  HostTensor &a = v[0];
  const HostTensor &b = v[1];
  for (size_t i = 0; i < a.floats.size(); ++i) {
    float d = b.floats[i % b.floats.size()];
    float q = a.floats[i] / d, frac = q - std::floor(q);
    if (frac < 0.1f || frac > 0.9f)
      a.floats[i] = (std::floor(q) + 0.5f) * d;
  }
}

/// Moves inputs off hard_swish's kinks at -3 and 3.
void offHardSwishKinks(std::vector<HostTensor> &v) {
  for (float &x : v[0].floats)
    if (std::fabs(std::fabs(x) - 3.0f) < 0.1f)
      x += 0.3f;
}

std::vector<Case> elementwiseCases() {
  std::vector<Case> cases{
      unary("neg", in({2, 3})),
      unary("relu", away({3, 4})),
      unary("tanh", in({2, 3, 2})),
      unary("sigmoid", in({4}, -3, 3)),
      unary("silu", in({2, 5}, -3, 3)),
      unary("exp", in({3, 2})),
      unary("log", in({2, 3}, 0.2f, 2.0f)),
      unary("sqrt", in({2, 3}, 0.2f, 2.0f)),
      unary("rsqrt", in({2, 3}, 0.3f, 2.0f)),
      unary("erf", in({5}, -2, 2)),
      unary("reciprocal", away({2, 3}, -2, 2)),
      unary("gelu", in({2, 4}, -3, 3)),
      unary("gelu", in({2, 4}, -3, 3), "approximate tanh"),
      unary("sin", in({6}, -3, 3)),
      unary("cos", in({6}, -3, 3)),
      unary("abs", away({2, 3})),
      unary("softplus", in({2, 3}, -3, 3)),
      unary("mish", in({2, 3}, -3, 3)),
      unary("hard_swish", in({3, 4}, -5, 5)),
      unary("leaky_relu", away({2, 3}), "{alpha = 0.1 : f32}"),
      unary("elu", away({2, 3}), "{alpha = 0.7 : f32}"),
      unary("selu", away({2, 3}), "{alpha = 1.6732632 : f32, gamma = 1.0507 : f32}"),
      unary("hard_sigmoid", in({3, 4}, -4, 4), "{alpha = 0.2 : f32, beta = 0.5 : f32}"),
      binary("add", "add", in({2, 3}), in({3}), {2, 3}),
      binary("add", "add$both_broadcast", in({2, 1, 3}), in({4, 1}), {2, 4, 3}),
      binary("sub", "sub", in({1, 3}), in({2, 1}), {2, 3}),
      binary("mul", "mul", in({2, 3, 4}), in({3, 1}), {2, 3, 4}),
      binary("div", "div", in({2, 3}), away({2, 3}, 0.5f, 2.0f), {2, 3}),
      binary("div", "div$broadcast", in({3}), away({2, 3}, 0.5f, 2.0f), {2, 3}),
      binary("pow", "pow", in({2, 3}, 0.5f, 2.0f), in({3}, -1.0f, 2.0f), {2, 3}),
      binary("max", "max", distinct({2, 3}), distinct({2, 3}), {2, 3}),
      binary("min", "min$broadcast", distinct({2, 3}), distinct({3}), {2, 3}),
      binary("fmod", "fmod", in({2, 3}, -3, 3), away({3}, 0.5f, 1.5f), {2, 3}),
      binary("mod", "mod", in({2, 3}, -3, 3), away({3}, 0.5f, 1.5f), {2, 3}),
      binary("prelu", "prelu", away({2, 3, 2}), in({3, 1}), {2, 3, 2}),
  };
  for (Case &c : cases) {
    if (c.name == "gelu" && c.body.find("tanh") != std::string::npos)
      c.name = "gelu$tanh";
    if (c.name == "hard_swish")
      c.adjust = offHardSwishKinks;
    if (c.name == "max" || c.name == "min$broadcast") // the two draw the same values
      c.adjust = [](std::vector<HostTensor> &v) {
        for (float &x : v[1].floats)
          x += 0.05f;
      };
    if (c.name == "fmod" || c.name == "mod")
      c.adjust = quotientOffIntegers;
    if (c.name == "hard_sigmoid") // z = 0.2x + 0.5 off 0 and 1: x off -2.5 and 2.5
      c.adjust = [](std::vector<HostTensor> &v) {
        for (float &x : v[0].floats)
          if (std::fabs(std::fabs(x) - 2.5f) < 0.1f)
            x += 0.3f;
      };
  }
  for (const char *op : {"sign", "floor", "ceil", "round"}) {
    Case c = unary(op, in({2, 3}, -3, 3));
    c.exactZero = true;
    cases.push_back(c);
  }
  // Every other simple unary op of runtime/format/ScalarFns.def, on
  // (-1, 1): a new op's derivative is checked with nothing added here
  // (README "Adding an op"); ops that need another domain are listed above.
  std::set<std::string> listed;
  for (const Case &c : cases)
    listed.insert(c.name);
#define MP_SCALAR_FN(...)
#define MP_UNARY_OP(Name, mnemonic, ...)                                                        \
  if (!listed.count(#mnemonic))                                                                 \
    cases.push_back(unary(#mnemonic, in({2, 3}, -1, 1)));
#include "runtime/format/ScalarFns.def"
  Case where{"where", {in({2, 3}), in({3})}, "", {2, 3}};
  where.inputs[0].name = "a";
  where.inputs[1].name = "b";
  where.body = "  %c = mp.constant dense<[[true, false, true], [false, false, true]]> : "
               "tensor<2x3xi1>\n"
               "  %y = mp.where %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) "
               "-> tensor<2x3xf32>";
  cases.push_back(where);
  Case castCase{"cast", {in({2, 3})}, "", {2, 3}};
  castCase.inputs[0].name = "x";
  castCase.body = "  %h = mp.cast %x : tensor<2x3xf32> -> tensor<2x3xf16>\n"
                  "  %y = mp.cast %h : tensor<2x3xf16> -> tensor<2x3xf32>";
  castCase.step = 0.1f; // f16 steps by 2^-11 near 1: a staircase for small steps
  cases.push_back(castCase);
  Case fanOut{"fan_out", {in({3})}, "", {3}};
  fanOut.inputs[0].name = "x";
  fanOut.body = "  %s = mp.mul %x, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>\n"
                "  %y = mp.add %s, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>";
  cases.push_back(fanOut);
  return cases;
}

/// A case whose body the test writes out: inputs named as given.
Case custom(const std::string &name, std::vector<Input> inputs, std::vector<std::string> names,
            Shape y, const std::string &body) {
  for (size_t i = 0; i < inputs.size(); ++i)
    inputs[i].name = names[i];
  return Case{name, inputs, body, y};
}

std::vector<Case> gemmCases() {
  return {
      custom("matmul", {in({2, 3, 4}), in({4, 5})}, {"a", "b"}, {2, 3, 5},
             "  %y = mp.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>"),
      custom("matmul$batch_broadcast", {in({2, 1, 3, 4}), in({3, 4, 2})}, {"a", "b"}, {2, 3, 3, 2},
             "  %y = mp.matmul %a, %b : (tensor<2x1x3x4xf32>, tensor<3x4x2xf32>) -> "
             "tensor<2x3x3x2xf32>"),
      custom("matmul$vector_lhs", {in({4}), in({2, 4, 3})}, {"a", "b"}, {2, 3},
             "  %y = mp.matmul %a, %b : (tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x3xf32>"),
      custom("matmul$vector_rhs", {in({2, 3, 4}), in({4})}, {"a", "b"}, {2, 3},
             "  %y = mp.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3xf32>"),
      // The backward recomputes the probabilities from the log-sum-exp
      // (mp.attention_grad); a bottom-right causal mask with Sq < Sk and a
      // constant bias (masks get no gradient).
      custom("attention$causal_bias", {in({1, 2, 3, 4}), in({1, 2, 5, 4}), in({1, 2, 5, 3})},
             {"q", "k", "v"}, {1, 2, 3, 3},
             "  %b = mp.constant dense<[[[[0.5, -1.0, 0.0, 0.25, -0.5]]]]> : "
             "tensor<1x1x1x5xf32>\n"
             "  %y, %lse = mp.attention %q, %k, %v, %b {scale = 0.5 : f64, causal = true} : "
             "(tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>, "
             "tensor<1x1x1x5xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3xf32>)"),
      custom("attention", {in({2, 1, 4, 3}), in({2, 1, 4, 3}), in({2, 1, 4, 2})}, {"q", "k", "v"},
             {2, 1, 4, 2},
             "  %y, %lse = mp.attention %q, %k, %v {scale = 0.7 : f64} : (tensor<2x1x4x3xf32>, "
             "tensor<2x1x4x3xf32>, tensor<2x1x4x2xf32>) -> (tensor<2x1x4x2xf32>, "
             "tensor<2x1x4xf32>)"),
      custom("linear", {in({2, 3, 4}), in({4, 5}), in({5})}, {"x", "w", "b"}, {2, 3, 5},
             "  %y = mp.linear %x, %w, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>, tensor<5xf32>) "
             "-> tensor<2x3x5xf32>"),
      custom("linear$transposed", {in({4}), in({5, 4})}, {"x", "w"}, {5},
             "  %y = mp.linear %x, %w {transpose_weight = true} : (tensor<4xf32>, "
             "tensor<5x4xf32>) -> tensor<5xf32>"),
      custom("conv2d$groups_strides_dilations", {in({2, 4, 5, 6}), in({6, 2, 2, 3}), in({6})},
             {"x", "w", "b"}, {2, 6, 3, 3},
             "  %y = mp.conv2d %x, %w, %b {strides = array<i64: 2, 1>, pads = array<i64: 1, 0, 0, "
             "1>, dilations = array<i64: 1, 2>, groups = 2 : i64} : (tensor<2x4x5x6xf32>, "
             "tensor<6x2x2x3xf32>, tensor<6xf32>) -> tensor<2x6x3x3xf32>"),
      custom("conv$1d", {in({2, 3, 7}), in({4, 3, 2})}, {"x", "w"}, {2, 4, 4},
             "  %y = mp.conv %x, %w {strides = array<i64: 2>, pads = array<i64: 1, 0>, "
             "dilations = array<i64: 1>, groups = 1 : i64} : (tensor<2x3x7xf32>, "
             "tensor<4x3x2xf32>) -> tensor<2x4x4xf32>"),
      custom("conv$3d", {in({1, 2, 4, 3, 3}), in({2, 1, 2, 2, 2})}, {"x", "w"}, {1, 2, 3, 2, 2},
             "  %y = mp.conv %x, %w {strides = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, "
             "0, 0, 0>, dilations = array<i64: 1, 1, 1>, groups = 2 : i64} : "
             "(tensor<1x2x4x3x3xf32>, tensor<2x1x2x2x2xf32>) -> tensor<1x2x3x2x2xf32>"),
      custom("conv_transpose", {in({1, 4, 3, 3}), in({4, 3, 3, 2}), in({6})}, {"x", "w", "b"},
             {1, 6, 7, 8},
             "  %y = mp.conv_transpose %x, %w, %b {strides = array<i64: 2, 3>, pads = array<i64: "
             "1, 0, 0, 0>, dilations = array<i64: 1, 1>, output_padding = array<i64: 1, 0>, "
             "groups = 2 : i64} : (tensor<1x4x3x3xf32>, tensor<4x3x3x2xf32>, tensor<6xf32>) -> "
             "tensor<1x6x7x8xf32>"),
  };
}

std::vector<Case> normalizationCases() {
  Case batchNorm = custom(
      "batch_norm", {in({2, 3, 4}), in({3}), in({3}), in({3}), in({3}, 0.5f, 2.0f)},
      {"x", "s", "b", "m", "v"}, {2, 3, 4},
      "  %y = mp.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<2x3x4xf32>, "
      "tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>");
  return {
      custom("softmax", {in({2, 5, 3}, -2, 2)}, {"x"}, {2, 5, 3},
             "  %y = mp.softmax %x {axis = 1 : i64} : tensor<2x5x3xf32> -> tensor<2x5x3xf32>"),
      custom("log_softmax", {in({2, 3, 4}, -2, 2)}, {"x"}, {2, 3, 4},
             "  %y = mp.log_softmax %x {axis = 2 : i64} : tensor<2x3x4xf32> -> "
             "tensor<2x3x4xf32>"),
      custom("layer_norm", {in({2, 3, 4}), in({3, 4}), in({3, 4})}, {"x", "s", "b"}, {2, 3, 4},
             "  %y = mp.layer_norm %x, %s, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32} : "
             "(tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>"),
      custom("layer_norm$no_params", {in({3, 5})}, {"x"}, {3, 5},
             "  %y = mp.layer_norm %x {axis = 1 : i64, epsilon = 1.0e-05 : f32} : "
             "(tensor<3x5xf32>) -> tensor<3x5xf32>"),
      custom("rms_norm", {in({2, 3, 4}), in({4})}, {"x", "s"}, {2, 3, 4},
             "  %y = mp.rms_norm %x, %s {axis = 2 : i64, epsilon = 1.0e-06 : f32} : "
             "(tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>"),
      batchNorm,
      custom("reduce_sum", {in({2, 3, 4})}, {"x"}, {3},
             "  %y = mp.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : "
             "tensor<2x3x4xf32> -> tensor<3xf32>"),
      custom("reduce_mean", {in({2, 3, 4})}, {"x"}, {2, 1, 4},
             "  %y = mp.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : "
             "tensor<2x3x4xf32> -> tensor<2x1x4xf32>"),
      custom("reduce_max", {distinct({2, 3, 4})}, {"x"}, {2, 4},
             "  %y = mp.reduce_max %x {axes = array<i64: 1>, keepdims = false} : "
             "tensor<2x3x4xf32> -> tensor<2x4xf32>"),
      custom("reduce_prod", {away({2, 3, 2}, -1.5f, 1.5f)}, {"x"}, {2, 2},
             "  %y = mp.reduce_prod %x {axes = array<i64: 1>, keepdims = false} : "
             "tensor<2x3x2xf32> -> tensor<2x2xf32>"),
      custom("cumsum", {in({2, 5})}, {"x"}, {2, 5},
             "  %y = mp.cumsum %x {axis = 1 : i64} : tensor<2x5xf32> -> tensor<2x5xf32>"),
      custom("cumsum$exclusive_reverse", {in({4, 2})}, {"x"}, {4, 2},
             "  %y = mp.cumsum %x {axis = 0 : i64, exclusive = true, reverse = true} : "
             "tensor<4x2xf32> -> tensor<4x2xf32>"),
  };
}

std::vector<Case> dataMovementCases() {
  return {
      custom("reshape", {in({2, 6})}, {"x"}, {3, 4},
             "  %y = mp.reshape %x : tensor<2x6xf32> -> tensor<3x4xf32>"),
      custom("transpose", {in({2, 3, 4})}, {"x"}, {4, 2, 3},
             "  %y = mp.transpose %x {perm = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> "
             "tensor<4x2x3xf32>"),
      custom("concat", {in({2, 1}), in({2, 3})}, {"a", "b"}, {2, 5},
             "  %y = mp.concat %a, %b, %a {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x3xf32>, "
             "tensor<2x1xf32>) -> tensor<2x5xf32>"),
      custom("slice", {in({4, 5})}, {"x"}, {2, 3},
             "  %y = mp.slice %x {starts = array<i64: 1, 2>, steps = array<i64: 1, 1>} : "
             "tensor<4x5xf32> -> tensor<2x3xf32>"),
      custom("slice$strided", {in({4, 5})}, {"x"}, {2, 3},
             "  %y = mp.slice %x {starts = array<i64: 0, 4>, steps = array<i64: 2, -2>} : "
             "tensor<4x5xf32> -> tensor<2x3xf32>"),
      custom("gather", {in({3, 4, 2})}, {"x"}, {3, 2, 2, 2},
             "  %i = mp.constant dense<[[0, -1], [3, 0]]> : tensor<2x2xi64>\n"
             "  %y = mp.gather %x, %i {axis = 1 : i64} : (tensor<3x4x2xf32>, tensor<2x2xi64>) -> "
             "tensor<3x2x2x2xf32>"),
      custom("gather$scalar_index", {in({4, 3})}, {"x"}, {3},
             "  %i = mp.constant dense<2> : tensor<i32>\n"
             "  %y = mp.gather %x, %i {axis = 0 : i64} : (tensor<4x3xf32>, tensor<i32>) -> "
             "tensor<3xf32>"),
      custom("gather_elements", {in({2, 4})}, {"x"}, {2, 3},
             "  %i = mp.constant dense<[[0, 3, 3], [-1, 1, 0]]> : tensor<2x3xi64>\n"
             "  %y = mp.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x4xf32>, "
             "tensor<2x3xi64>) -> tensor<2x3xf32>"),
      custom("gather_nd", {in({3, 4, 2})}, {"x"}, {3, 2},
             "  %i = mp.constant dense<[[0, 1], [2, 3], [0, 1]]> : tensor<3x2xi64>\n"
             "  %y = mp.gather_nd %x, %i : (tensor<3x4x2xf32>, tensor<3x2xi64>) -> "
             "tensor<3x2xf32>"),
      custom("gather_nd$batch_dims", {in({2, 4, 3})}, {"x"}, {2, 2, 3},
             "  %i = mp.constant dense<[[[1], [3]], [[0], [0]]]> : tensor<2x2x1xi64>\n"
             "  %y = mp.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x4x3xf32>, "
             "tensor<2x2x1xi64>) -> tensor<2x2x3xf32>"),
      custom("scatter_nd", {in({4, 3}), in({2, 3})}, {"x", "u"}, {4, 3},
             "  %i = mp.constant dense<[[2], [0]]> : tensor<2x1xi64>\n"
             "  %y = mp.scatter_nd %x, %i, %u : (tensor<4x3xf32>, tensor<2x1xi64>, "
             "tensor<2x3xf32>) -> tensor<4x3xf32>"),
      custom("scatter_nd$add", {in({4, 3}), in({3, 3})}, {"x", "u"}, {4, 3},
             "  %i = mp.constant dense<[[2], [0], [2]]> : tensor<3x1xi64>\n"
             "  %y = mp.scatter_nd %x, %i, %u {reduction = \"add\"} : (tensor<4x3xf32>, "
             "tensor<3x1xi64>, tensor<3x3xf32>) -> tensor<4x3xf32>"),
      custom("topk", {distinct({2, 5})}, {"x"}, {2, 2},
             "  %y, %k = mp.topk %x {axis = 1 : i64, k = 2 : i64} : tensor<2x5xf32> -> "
             "(tensor<2x2xf32>, tensor<2x2xi64>)"),
      custom("max_pool2d", {distinct({1, 2, 4, 5})}, {"x"}, {1, 2, 3, 3},
             "  %y = mp.max_pool2d %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, "
             "2>, pads = array<i64: 1, 1, 1, 0>} : tensor<1x2x4x5xf32> -> tensor<1x2x3x3xf32>"),
      custom("max_pool$ceil_dilated", {distinct({1, 2, 7})}, {"x"}, {1, 2, 3},
             "  %y = mp.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2>, "
             "pads = array<i64: 0, 0>, dilations = array<i64: 2>, ceil_mode = true} : "
             "tensor<1x2x7xf32> -> tensor<1x2x3xf32>"),
      custom("avg_pool2d", {in({1, 2, 4, 5})}, {"x"}, {1, 2, 3, 3},
             "  %y = mp.avg_pool2d %x {kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, "
             "2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x2x4x5xf32> -> tensor<1x2x3x3xf32>"),
      custom("avg_pool2d$count_include_pad", {in({1, 2, 4, 5})}, {"x"}, {1, 2, 3, 3},
             "  %y = mp.avg_pool2d %x {kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, "
             "2>, pads = array<i64: 1, 1, 1, 1>, count_include_pad = true} : tensor<1x2x4x5xf32> "
             "-> tensor<1x2x3x3xf32>"),
      custom("avg_pool$ceil", {in({2, 1, 7})}, {"x"}, {2, 1, 3},
             "  %y = mp.avg_pool %x {kernel_shape = array<i64: 3>, strides = array<i64: 3>, "
             "pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode = true} : "
             "tensor<2x1x7xf32> -> tensor<2x1x3xf32>"),
  };
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string name = info.param.name;
  for (char &ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Elementwise, GradientCheck, ::testing::ValuesIn(elementwiseCases()),
                         caseName);
INSTANTIATE_TEST_SUITE_P(Gemm, GradientCheck, ::testing::ValuesIn(gemmCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Normalization, GradientCheck,
                         ::testing::ValuesIn(normalizationCases()), caseName);
INSTANTIATE_TEST_SUITE_P(DataMovement, GradientCheck, ::testing::ValuesIn(dataMovementCases()),
                         caseName);

} // namespace
