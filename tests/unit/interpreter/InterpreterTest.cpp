//===- InterpreterTest.cpp - the CPU reference interpreter -----------------===//
#include "common/numerics/Rounding.h"
#include "compiler/Interpreter/Interpreter.h"
#include "compiler/Interpreter/ReferenceOpInterface.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using mixprec::compiler::HostTensor;
using mixprec::compiler::Interpreter;

namespace {

class InterpreterTest : public ::testing::Test {
protected:
  InterpreterTest() {
    context.loadDialect<mixprec::graph::GraphDialect, func::FuncDialect>();
    mixprec::compiler::registerReferenceExternalModels(context);
  }

  /// Parses `ir`, runs @main on `inputs`, and returns the outputs.
  std::vector<HostTensor> run(const char *ir, const std::vector<HostTensor> &inputs,
                              std::string *errorOut = nullptr) {
    module = parseSourceString<ModuleOp>(ir, &context);
    EXPECT_TRUE(module) << "IR does not parse";
    std::string error;
    func::FuncOp func = mixprec::compiler::findEntryFunction(*module, error);
    EXPECT_TRUE(func) << error;
    Interpreter interpreter(func);
    std::vector<HostTensor> outputs;
    bool ok = interpreter.run(inputs, outputs, error);
    if (errorOut)
      *errorOut = error;
    else
      EXPECT_TRUE(ok) << error;
    return outputs;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(InterpreterTest, SignatureReadsNames) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @main(%x: tensor<2x3xf32> {mp.name = "x"}, %i: tensor<4xi64>) -> (tensor<2x3xf32> {mp.name = "y"}) {
      return %x : tensor<2x3xf32>
    })mlir",
                                       &context);
  ASSERT_TRUE(module);
  std::string error;
  auto sig = mixprec::compiler::getSignature(mixprec::compiler::findEntryFunction(*module, error));
  ASSERT_EQ(sig.inputs.size(), 2u);
  EXPECT_EQ(sig.inputs[0].name, "x");
  EXPECT_EQ(sig.inputs[1].name, "input_1");
  EXPECT_EQ(sig.inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(sig.inputs[1].elementType.isInteger(64));
  EXPECT_EQ(sig.outputs[0].name, "y");
}

TEST_F(InterpreterTest, LinearReluMatchesHandComputation) {
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1x2xf32>) -> tensor<1x2xf32> {
      %w = mp.constant dense<[[1.0, -1.0], [2.0, 0.5]]> : tensor<2x2xf32>
      %b = mp.constant dense<[0.5, -4.0]> : tensor<2xf32>
      %0 = mp.linear %x, %w, %b : (tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
      %1 = mp.relu %0 : tensor<1x2xf32>
      return %1 : tensor<1x2xf32>
    })mlir",
                 {HostTensor::makeFloat({1, 2}, {3.0f, 1.0f})});
  ASSERT_EQ(out.size(), 1u);
  // [3, 1] x [[1, -1], [2, 0.5]] = [5, -2.5]; + bias = [5.5, -6.5]; relu.
  EXPECT_EQ(out[0].floats, (std::vector<float>{5.5f, 0.0f}));
}

TEST_F(InterpreterTest, Bf16StorageRoundsEveryStore) {
  // 1 + 2^-9 is not a bf16 value: the cast rounds it to 1 (ties to even),
  // and the bf16 add then stores 1 + 1 = 2 exactly.
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = mp.cast %x : tensor<2xf32> -> tensor<2xbf16>
      %1 = mp.add %0, %0 : tensor<2xbf16>, tensor<2xbf16> -> tensor<2xbf16>
      %2 = mp.cast %1 : tensor<2xbf16> -> tensor<2xf32>
      return %2 : tensor<2xf32>
    })mlir",
                 {HostTensor::makeFloat({2}, {1.0f + std::ldexp(1.0f, -9), 3.0f})});
  EXPECT_EQ(out[0].floats, (std::vector<float>{2.0f, 6.0f}));
}

TEST_F(InterpreterTest, Fp8CastSaturatesAndQuantizeUsesScale) {
  auto out = run(R"mlir(
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<f32>) {
      %0 = mp.cast %x : tensor<3xf32> -> tensor<3xf8E4M3FN>
      %1 = mp.cast %0 : tensor<3xf8E4M3FN> -> tensor<3xf32>
      %s = mp.constant dense<0.5> : tensor<f32>
      %q = mp.quantize %x, %s : (tensor<3xf32>, tensor<f32>) -> tensor<3xf8E4M3FN>
      %d = mp.dequantize %q, %s : (tensor<3xf8E4M3FN>, tensor<f32>) -> tensor<3xf32>
      %a = mp.amax %x : tensor<3xf32> -> tensor<f32>
      return %1, %d, %a : tensor<3xf32>, tensor<3xf32>, tensor<f32>
    })mlir",
                 {HostTensor::makeFloat({3}, {1000.0f, -0.3f, 17.0f})});
  // 1000 saturates to 448; -0.3 rounds to -0.3125 (E4M3: 3 mantissa bits);
  // 17 rounds to 16 (ties to even between 16 and 18).
  EXPECT_EQ(out[0].floats, (std::vector<float>{448.0f, -0.3125f, 16.0f}));
  // Quantized values are x * 0.5 = [500 -> 448, -0.15 -> -0.15625, 8.5 -> 8];
  // dequantize divides by the scale again.
  EXPECT_EQ(out[1].floats, (std::vector<float>{896.0f, -0.3125f, 16.0f}));
  EXPECT_EQ(out[2].floats, (std::vector<float>{1000.0f}));
}

TEST_F(InterpreterTest, GatherOutOfRangeNamesTheOp) {
  HostTensor ids;
  ids.kind = HostTensor::Kind::Int;
  ids.shape = {2};
  ids.ints = {1, 7};
  std::string error;
  run(R"mlir(
    func.func @main(%i: tensor<2xi64>) -> tensor<2x2xf32> {
      %t = mp.constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
      %0 = mp.gather %t, %i {axis = 0 : i64} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x2xf32> loc("embed")
      return %0 : tensor<2x2xf32>
    })mlir",
      {ids}, &error);
  EXPECT_NE(error.find("mp.gather 'embed'"), std::string::npos) << error;
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;
}

TEST_F(InterpreterTest, WrongInputShapeIsAnError) {
  std::string error;
  run(R"mlir(
    func.func @main(%x: tensor<2xf32> {mp.name = "x"}) -> tensor<2xf32> {
      return %x : tensor<2xf32>
    })mlir",
      {HostTensor::makeFloat({3}, {1, 2, 3})}, &error);
  EXPECT_EQ(error, "input 'x' has shape [3], the graph expects [2]");
}

TEST_F(InterpreterTest, ValuesFreedAfterLastUseStillFeedLaterOps) {
  // %0 dies after %1; %x is used again by the last op.
  auto out = run(R"mlir(
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = mp.neg %x : tensor<2xf32>
      %1 = mp.exp %0 : tensor<2xf32>
      %2 = mp.mul %1, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
      return %2 : tensor<2xf32>
    })mlir",
                 {HostTensor::makeFloat({2}, {0.0f, 1.0f})});
  EXPECT_FLOAT_EQ(out[0].floats[0], 0.0f);
  EXPECT_FLOAT_EQ(out[0].floats[1], std::exp(-1.0f));
}

TEST_F(InterpreterTest, LowPrecisionGemmAccumulatesInF32AndRoundsOnce) {
  // bf16 operands [1, 2^-8, 2^-8] . [1, 1, 1]: the FP32 accumulator holds
  // 1 + 2^-7 exactly, a bf16 value. Rounding after every partial sum would
  // give 1 (1 + 2^-8 ties to even, twice).
  auto out = run(R"mlir(
    func.func @main(%a: tensor<1x3xbf16>, %b: tensor<3x1xbf16>) -> tensor<1x1xbf16> {
      %0 = mp.matmul %a, %b {acc_type = f32} : (tensor<1x3xbf16>, tensor<3x1xbf16>) -> tensor<1x1xbf16>
      return %0 : tensor<1x1xbf16>
    })mlir",
                 {HostTensor::makeFloat({1, 3}, {1.0f, std::ldexp(1.0f, -8), std::ldexp(1.0f, -8)}),
                  HostTensor::makeFloat({3, 1}, {1.0f, 1.0f, 1.0f})});
  EXPECT_EQ(out[0].floats, (std::vector<float>{1.0f + std::ldexp(1.0f, -7)}));
}

TEST_F(InterpreterTest, Tf32GemmRoundsOperandsTiesAway) {
  // 1 + 2^-11 is a TF32 tie: it rounds away to 1 + 2^-10 before the product.
  const char *ir = R"mlir(
    func.func @main(%a: tensor<1x1xf32>, %b: tensor<1x1xf32>) -> tensor<1x1xf32> {
      %0 = mp.matmul %a, %b {mp.precision = tf32} : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
      return %0 : tensor<1x1xf32>
    })mlir";
  auto out = run(ir, {HostTensor::makeFloat({1, 1}, {1.0f + std::ldexp(1.0f, -11)}),
                      HostTensor::makeFloat({1, 1}, {1.0f})});
  EXPECT_EQ(out[0].floats, (std::vector<float>{1.0f + std::ldexp(1.0f, -10)}));
}

TEST_F(InterpreterTest, ScaledLinearDequantizesInTheEpilogue) {
  // q_x = 2 * 8 = 16 (scale 8), q_w = 3 * 4 = 12 (scale 4): 16 * 12 / 32 = 6,
  // plus bias 0.5, rounded once to bf16.
  auto out = run(R"mlir(
    func.func @main(%x: tensor<1x1xf32>) -> tensor<1x1xbf16> {
      %sx = mp.constant dense<8.0> : tensor<f32>
      %qx = mp.quantize %x, %sx : (tensor<1x1xf32>, tensor<f32>) -> tensor<1x1xf8E4M3FN>
      %qw = mp.constant dense<12.0> : tensor<1x1xf8E4M3FN>
      %sw = mp.constant dense<4.0> : tensor<f32>
      %b = mp.constant dense<0.5> : tensor<1xbf16>
      %0 = mp.scaled_linear %qx, %qw, %sx, %sw, %b : (tensor<1x1xf8E4M3FN>, tensor<1x1xf8E4M3FN>, tensor<f32>, tensor<f32>, tensor<1xbf16>) -> tensor<1x1xbf16>
      return %0 : tensor<1x1xbf16>
    })mlir",
                 {HostTensor::makeFloat({1, 1}, {2.0f})});
  EXPECT_EQ(out[0].floats, (std::vector<float>{6.5f}));
}

TEST_F(InterpreterTest, FusionsPassValuesWhileTheEnvironmentGrows) {
  // Many live values make the value map rehash while a fusion's inputs and
  // outputs are copied in and out; every output must still be the right one.
  std::string ir = "func.func @main(%x: tensor<4xf32>) -> (";
  const int n = 80;
  for (int i = 0; i < n; ++i)
    ir += std::string(i ? ", " : "") + "tensor<4xf32>";
  ir += ") {\n  %v0 = mp.neg %x : tensor<4xf32>\n";
  for (int i = 1; i < n; ++i)
    ir += "  %v" + std::to_string(i) + " = mp.add %v" + std::to_string(i - 1) +
          ", %x : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>\n";
  ir += "  %f:2 = mp.fusion elementwise(%v0, %v1) {ops = [\"a\", \"b\"]} : "
        "(tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {\n"
        "  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):\n"
        "    %0 = mp.mul %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>\n"
        "    %1 = mp.relu %b : tensor<4xf32>\n"
        "    mp.yield %0, %1 : tensor<4xf32>, tensor<4xf32>\n  }\n  return %f#0, %f#1";
  for (int i = 2; i < n; ++i)
    ir += ", %v" + std::to_string(i);
  ir += " : ";
  for (int i = 0; i < n; ++i)
    ir += std::string(i ? ", " : "") + "tensor<4xf32>";
  ir += "\n}\n";
  auto out = run(ir.c_str(), {HostTensor::makeFloat({4}, {1.0f, 2.0f, 3.0f, 4.0f})});
  ASSERT_EQ(out.size(), static_cast<size_t>(n));
  // v0 = -x, v1 = 0: the product is -0 * ... = 0 and relu(v1) = 0.
  for (int k = 0; k < 2; ++k)
    for (float v : out[k].floats)
      EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(out[n - 1].floats, (std::vector<float>{78.0f, 156.0f, 234.0f, 312.0f}));
}

TEST_F(InterpreterTest, ScratchBytesComeFromTheReferenceModels) {
  module = parseSourceString<ModuleOp>(R"mlir(
    func.func @main(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> (tensor<2x4x6x6xf32>, tensor<2x3x8x1xf32>, tensor<2x3x8x8xf32>) {
      %c = mp.conv2d %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, groups = 1 : i64}
          : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
      %s = mp.reduce_sum %x {axes = array<i64: 3>, keepdims = true} : tensor<2x3x8x8xf32> -> tensor<2x3x8x1xf32>
      %r = mp.relu %x : tensor<2x3x8x8xf32>
      return %c, %s, %r : tensor<2x4x6x6xf32>, tensor<2x3x8x1xf32>, tensor<2x3x8x8xf32>
    })mlir",
                                       &context);
  ASSERT_TRUE(module);
  std::vector<Operation *> ops;
  module->walk([&](Operation *op) {
    if (op->getDialect() && op->getDialect()->getNamespace() == "mp")
      ops.push_back(op);
  });
  ASSERT_EQ(ops.size(), 3u);
  using mixprec::compiler::ReferenceOpInterface;
  // im2col of one image: (3 * 3 * 3) x (6 * 6) floats.
  EXPECT_EQ(cast<ReferenceOpInterface>(ops[0]).getScratchBytes(), 4u * 27 * 36);
  // One double accumulator per output element.
  EXPECT_EQ(cast<ReferenceOpInterface>(ops[1]).getScratchBytes(), 8u * 2 * 3 * 8);
  // Element-wise ops run from their scalar function, with no scratch.
  EXPECT_FALSE(isa<ReferenceOpInterface>(ops[2]));
}

TEST(InterpreterRegistrationTest, AnOpWithoutReferenceSemanticsIsNamed) {
  // A context without the interpreter's external models: element-wise ops
  // still run (from their scalar function), a softmax has no semantics.
  MLIRContext context;
  context.loadDialect<mixprec::graph::GraphDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(R"mlir(
    func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
      %0 = mp.relu %x : tensor<2x3xf32>
      %1 = mp.softmax %0 {axis = 1 : i64} : tensor<2x3xf32> -> tensor<2x3xf32> loc("probs")
      return %1 : tensor<2x3xf32>
    })mlir",
                                                             &context);
  ASSERT_TRUE(module);
  std::string error;
  func::FuncOp func = mixprec::compiler::findEntryFunction(*module, error);
  Interpreter interpreter(func);
  EXPECT_FALSE(interpreter.prepare(error));
  EXPECT_EQ(error, "mp.softmax 'probs': the interpreter has no reference semantics for this op "
                   "(registerReferenceExternalModels attaches them)");
  // Registering twice (a tool and a library both do) is harmless.
  mixprec::compiler::registerReferenceExternalModels(context);
  mixprec::compiler::registerReferenceExternalModels(context);
  error.clear();
  EXPECT_TRUE(interpreter.prepare(error)) << error;
}

} // namespace
