//===- TrainingStepTest.cpp - buildTrainingStep's numerics ------------------===//
//
// The step of a tiny linear model (y = x W, MSE or cross-entropy), run in
// the FP32 interpreter with its state fed back from run to run, against the
// formulas computed here in double: SGD (momentum, weight decay) and AdamW
// as PyTorch writes them, GradScaler's scale schedule, the overflow skip
// (every master weight and optimizer state bit-identical, the scale backed
// off), clipping that sees unscaled gradients, and the option errors.
//
//===----------------------------------------------------------------------===//
#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Training/TrainingStep.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace mlir;
using mixprec::compiler::HostTensor;
using mixprec::compiler::Interpreter;
using mixprec::passes::TrainingOptions;

namespace {

// x: [2, 3], W: [3, 2] (the trained constant "w"), y = x W: [2, 2].
const char *kLinearModel = R"mlir(
func.func @main(%x: tensor<2x3xf32> {mp.name = "x"}) -> (tensor<2x2xf32> {mp.name = "y"}) {
  %w = mp.constant dense<[[0.5, -0.25], [0.125, 1.0], [-0.75, 0.375]]> : tensor<3x2xf32> loc("w")
  %y = mp.matmul %x, %w : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32> loc("fc")
  return %y : tensor<2x2xf32>
}
)mlir";

const double kW0[3][2] = {{0.5, -0.25}, {0.125, 1.0}, {-0.75, 0.375}};
const float kX[6] = {1.0f, -2.0f, 0.5f, 0.25f, 1.5f, -1.0f};
const float kT[4] = {0.5f, -1.0f, 2.0f, 0.0f};

/// dL/dW of L = mean((x W - t)^2), in double.
void mseGradient(const double w[3][2], const float *x, const float *t, double g[3][2]) {
  double y[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      y[i][j] = 0;
      for (int k = 0; k < 3; ++k)
        y[i][j] += double(x[i * 3 + k]) * w[k][j];
    }
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j) {
      g[k][j] = 0;
      for (int i = 0; i < 2; ++i)
        g[k][j] += double(x[i * 3 + k]) * 2.0 * (y[i][j] - t[i * 2 + j]) / 4.0;
    }
}

class TrainingStep : public ::testing::Test {
protected:
  TrainingStep() {
    context.loadDialect<mixprec::graph::GraphDialect, func::FuncDialect>();
    mixprec::compiler::registerReferenceExternalModels(context);
  }

  /// Builds the step of `ir`'s @main with `options`; null on failure, with
  /// the error in `error`.
  func::FuncOp build(const char *ir, const TrainingOptions &options) {
    module = parseSourceString<ModuleOp>(ir, &context);
    EXPECT_TRUE(module);
    auto forward = module->lookupSymbol<func::FuncOp>("main");
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      error = d.str();
      return success();
    });
    FailureOr<func::FuncOp> step = mixprec::passes::buildTrainingStep(forward, options);
    if (failed(step))
      return {};
    EXPECT_TRUE(succeeded(verify(*module)));
    func::FuncOp f = *step;
    // The initial state, from mp.state_init, in argument order.
    state.clear();
    for (unsigned i = 0; i < f.getNumArguments(); ++i) {
      auto init = f.getArgAttrOfType<DenseElementsAttr>(i, "mp.state_init");
      if (!init)
        continue;
      auto type = cast<ShapedType>(init.getType());
      std::vector<float> v(init.getValues<float>().begin(), init.getValues<float>().end());
      state.push_back(HostTensor::makeFloat(std::vector<int64_t>(type.getShape()), v));
    }
    return f;
  }

  /// Runs one step on `data` (then the labels) and the current state;
  /// returns the four reports and moves the state to its updates.
  std::vector<HostTensor> run(func::FuncOp step, std::vector<HostTensor> data) {
    for (const HostTensor &s : state)
      data.push_back(s);
    Interpreter interpreter(step);
    std::vector<HostTensor> out;
    std::string why;
    EXPECT_TRUE(interpreter.run(data, out, why)) << why;
    EXPECT_EQ(out.size(), 4 + state.size());
    for (size_t i = 0; i < state.size(); ++i)
      state[i] = out[4 + i];
    out.resize(4);
    return out;
  }

  static std::vector<HostTensor> batch(float scaleX = 1.0f) {
    std::vector<float> x(kX, kX + 6);
    for (float &v : x)
      v *= scaleX;
    return {HostTensor::makeFloat({2, 3}, x),
            HostTensor::makeFloat({2, 2}, std::vector<float>(kT, kT + 4))};
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::vector<HostTensor> state;
  std::string error;
};

TrainingOptions mse(TrainingOptions::Optimizer optimizer, TrainingOptions::Scaling scaling) {
  TrainingOptions o;
  o.loss = TrainingOptions::Loss::Mse;
  o.optimizer = optimizer;
  o.scaling = scaling;
  o.lr = 0.1;
  return o;
}

// SGD with momentum and weight decay, three steps, against torch.optim.SGD's
// formulas (d = g + wd w; buf = momentum buf + d; w -= lr buf).
TEST_F(TrainingStep, SgdMomentumMatchesTheFormula) {
  TrainingOptions o = mse(TrainingOptions::Optimizer::Sgd, TrainingOptions::Scaling::Dynamic);
  o.momentum = 0.9;
  o.weightDecay = 0.01;
  func::FuncOp step = build(kLinearModel, o);
  ASSERT_TRUE(step) << error;
  // State: w, w.momentum_buffer, step, loss_scale, growth_tracker.
  ASSERT_EQ(state.size(), 5u);
  double w[3][2], buf[3][2] = {};
  std::memcpy(w, kW0, sizeof(w));
  for (int s = 0; s < 3; ++s) {
    std::vector<HostTensor> report = run(step, batch());
    double g[3][2];
    mseGradient(w, kX, kT, g);
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 2; ++j) {
        double d = g[k][j] + 0.01 * w[k][j];
        buf[k][j] = 0.9 * buf[k][j] + d;
        w[k][j] -= 0.1 * buf[k][j];
        EXPECT_NEAR(state[0].floats[k * 2 + j], w[k][j], 1e-5) << "step " << s;
        EXPECT_NEAR(state[1].floats[k * 2 + j], buf[k][j], 1e-5) << "step " << s;
      }
    EXPECT_EQ(report[1].floats[0], 0.0f) << "skipped";
    EXPECT_EQ(report[3].floats[0], 65536.0f) << "the scale this step used";
    EXPECT_EQ(state[2].floats[0], float(s + 1)) << "step count";
  }
}

// AdamW, two steps, against torch.optim.AdamW's formulas.
TEST_F(TrainingStep, AdamWMatchesTheFormula) {
  TrainingOptions o = mse(TrainingOptions::Optimizer::AdamW, TrainingOptions::Scaling::None);
  o.lr = 0.01;
  o.weightDecay = 0.1;
  func::FuncOp step = build(kLinearModel, o);
  ASSERT_TRUE(step) << error;
  ASSERT_EQ(state.size(), 4u); // w, w.exp_avg, w.exp_avg_sq, step
  double w[3][2], m[3][2] = {}, v[3][2] = {};
  std::memcpy(w, kW0, sizeof(w));
  for (int t = 1; t <= 2; ++t) {
    run(step, batch());
    double g[3][2];
    mseGradient(w, kX, kT, g);
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 2; ++j) {
        w[k][j] *= 1 - 0.01 * 0.1;
        m[k][j] = 0.9 * m[k][j] + 0.1 * g[k][j];
        v[k][j] = 0.999 * v[k][j] + 0.001 * g[k][j] * g[k][j];
        double c1 = 1 - std::pow(0.9, t), c2 = 1 - std::pow(0.999, t);
        w[k][j] -= 0.01 / c1 * m[k][j] / (std::sqrt(v[k][j]) / std::sqrt(c2) + 1e-8);
        EXPECT_NEAR(state[0].floats[k * 2 + j], w[k][j], 1e-5) << "step " << t;
        EXPECT_NEAR(state[1].floats[k * 2 + j], m[k][j], 1e-6) << "step " << t;
        EXPECT_NEAR(state[2].floats[k * 2 + j], v[k][j], 1e-7) << "step " << t;
      }
  }
}

// A batch that overflows (x * 1e30: the loss is inf, so is every scaled
// gradient) skips exactly that step: skipped = 1, the scale halves, the
// growth tracker resets, and every master weight, optimizer state and the
// step count stay bit-identical. The next clean step trains again.
TEST_F(TrainingStep, PlantedOverflowSkipsTheStepBitForBit) {
  TrainingOptions o = mse(TrainingOptions::Optimizer::AdamW, TrainingOptions::Scaling::Dynamic);
  func::FuncOp step = build(kLinearModel, o);
  ASSERT_TRUE(step) << error;
  // w, exp_avg, exp_avg_sq, step, loss_scale, growth_tracker.
  ASSERT_EQ(state.size(), 6u);
  run(step, batch());
  run(step, batch());
  std::vector<HostTensor> before = state;
  ASSERT_EQ(before[5].floats[0], 2.0f) << "growth tracker after two clean steps";
  std::vector<HostTensor> report = run(step, batch(1e30f));
  EXPECT_EQ(report[1].floats[0], 1.0f) << "skipped";
  EXPECT_FALSE(std::isfinite(report[0].floats[0])) << "the loss is reported as it was";
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_EQ(state[i].floats.size(), before[i].floats.size());
    EXPECT_EQ(std::memcmp(state[i].floats.data(), before[i].floats.data(),
                          4 * before[i].floats.size()),
              0)
        << "state " << i << " changed on a skipped step";
  }
  EXPECT_EQ(state[4].floats[0], 32768.0f) << "the scale backs off by 0.5";
  EXPECT_EQ(state[5].floats[0], 0.0f) << "the growth tracker resets";
  report = run(step, batch());
  EXPECT_EQ(report[1].floats[0], 0.0f);
  EXPECT_EQ(report[3].floats[0], 32768.0f);
  EXPECT_EQ(state[3].floats[0], 3.0f) << "three applied steps";
}

// GradScaler's growth: after growth_interval clean steps the scale grows by
// growth_factor and the tracker restarts; hysteresis 2 absorbs one overflow.
TEST_F(TrainingStep, ScaleGrowsAfterTheIntervalAndHysteresisAbsorbs) {
  TrainingOptions o = mse(TrainingOptions::Optimizer::Sgd, TrainingOptions::Scaling::Dynamic);
  o.growthInterval = 2;
  o.hysteresis = 2;
  o.initScale = 1024;
  func::FuncOp step = build(kLinearModel, o);
  ASSERT_TRUE(step) << error;
  // w, step, loss_scale, growth_tracker, hysteresis.
  ASSERT_EQ(state.size(), 5u);
  run(step, batch());
  EXPECT_EQ(state[2].floats[0], 1024.0f);
  run(step, batch());
  EXPECT_EQ(state[2].floats[0], 2048.0f) << "grown after 2 clean steps";
  EXPECT_EQ(state[3].floats[0], 0.0f);
  run(step, batch(1e30f));
  EXPECT_EQ(state[2].floats[0], 2048.0f) << "the first overflow is absorbed";
  EXPECT_EQ(state[4].floats[0], 1.0f);
  run(step, batch(1e30f));
  EXPECT_EQ(state[2].floats[0], 1024.0f) << "the second backs off";
  EXPECT_EQ(state[1].floats[0], 2.0f) << "two applied steps";
}

// Clipping reads the unscaled gradients: with scale 65536 and a clip norm
// above the true norm, the update equals the unclipped one bit for bit (had
// clipping seen the scaled gradients, 65536 times larger, it would shrink
// them). With a clip norm below the true norm, the gradient is scaled to it.
TEST_F(TrainingStep, ClippingSeesUnscaledGradients) {
  TrainingOptions o = mse(TrainingOptions::Optimizer::Sgd, TrainingOptions::Scaling::Dynamic);
  func::FuncOp plain = build(kLinearModel, o);
  ASSERT_TRUE(plain) << error;
  std::vector<HostTensor> report = run(plain, batch());
  std::vector<float> unclipped = state[0].floats;
  double norm = report[2].floats[0];
  ASSERT_GT(norm, 0.5);
  ASSERT_LT(norm * 65536, 1e7);

  o.clipNorm = 2 * norm;
  func::FuncOp loose = build(kLinearModel, o);
  ASSERT_TRUE(loose) << error;
  run(loose, batch());
  EXPECT_EQ(std::memcmp(state[0].floats.data(), unclipped.data(), 4 * unclipped.size()), 0);

  o.clipNorm = norm / 2;
  func::FuncOp tight = build(kLinearModel, o);
  ASSERT_TRUE(tight) << error;
  run(tight, batch());
  double g[3][2];
  mseGradient(kW0, kX, kT, g);
  double coefficient = (norm / 2) / (norm + 1e-6);
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(state[0].floats[k * 2 + j], kW0[k][j] - 0.1 * coefficient * g[k][j], 1e-6);
}

// Cross-entropy over integer labels: the loss of one step against
// -mean(log_softmax(x W)[label]) computed here.
TEST_F(TrainingStep, CrossEntropyLoss) {
  TrainingOptions o;
  o.scaling = TrainingOptions::Scaling::None;
  func::FuncOp step = build(kLinearModel, o);
  ASSERT_TRUE(step) << error;
  std::vector<HostTensor> data = batch();
  data[1] = HostTensor();
  data[1].kind = HostTensor::Kind::Int;
  data[1].shape = {2};
  data[1].ints = {1, 0};
  std::vector<HostTensor> report = run(step, data);
  double loss = 0;
  for (int i = 0; i < 2; ++i) {
    double y[2];
    for (int j = 0; j < 2; ++j) {
      y[j] = 0;
      for (int k = 0; k < 3; ++k)
        y[j] += double(kX[i * 3 + k]) * kW0[k][j];
    }
    double mx = std::max(y[0], y[1]);
    double lse = mx + std::log(std::exp(y[0] - mx) + std::exp(y[1] - mx));
    loss += lse - y[i == 0 ? 1 : 0];
  }
  EXPECT_NEAR(report[0].floats[0], loss / 2, 1e-6);
}

TEST_F(TrainingStep, Errors) {
  TrainingOptions o;
  o.lr = -1;
  EXPECT_FALSE(build(kLinearModel, o));
  EXPECT_NE(error.find("the learning rate must be > 0"), std::string::npos) << error;
  o = TrainingOptions();
  o.backoffFactor = 1.5;
  EXPECT_FALSE(build(kLinearModel, o));
  EXPECT_NE(error.find("backoff factor"), std::string::npos) << error;
  o = TrainingOptions();
  o.frozen = {"w*"};
  EXPECT_FALSE(build(kLinearModel, o));
  EXPECT_NE(error.find("nothing to train"), std::string::npos) << error;
  o = TrainingOptions();
  o.output = "z";
  EXPECT_FALSE(build(kLinearModel, o));
  EXPECT_NE(error.find("no result of @main is named 'z'"), std::string::npos) << error;
  o = TrainingOptions();
  o.loss = TrainingOptions::Loss::Model;
  EXPECT_FALSE(build(kLinearModel, o));
  EXPECT_NE(error.find("one float element"), std::string::npos) << error;
}

} // namespace
