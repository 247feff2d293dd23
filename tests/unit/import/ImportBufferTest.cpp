//===- ImportBufferTest.cpp - importOnnxBuffer, the in-memory entry --------===//
//
// The fuzzer (tests/fuzz/OnnxPipelineFuzzer.cpp) imports from memory; these
// tests pin that the in-memory entry gives what the file entry gives, and
// keeps its error contract.
//
//===----------------------------------------------------------------------===//
#include "ImportTestUtil.h"

using namespace mixprec;
using namespace mixprec::test;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

/// The printed form of `module`, locations included.
std::string printed(mlir::ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, mlir::OpPrintingFlags().enableDebugInfo());
  return text;
}

/// A model with an initializer: x[2,3] -> MatMul by w[3,4] -> Relu -> y.
Model matmulReluModel() {
  Model m;
  m.input("x", {2, 3});
  m.initIota("w", {3, 4});
  m.node("MatMul", {"x", "w"}, {"h"}, "mm");
  m.node("Relu", {"h"}, {"y"}, "relu");
  m.output("y", Dims{2, 4});
  return m;
}

TEST_F(ImportTest, BufferImportsWhatTheFileImports) {
  Model m = matmulReluModel();
  std::string path = write(m);
  auto fromFile = import(m);
  ASSERT_TRUE(fromFile);
  std::string bytes = m.proto.SerializeAsString();
  std::string error;
  auto fromBuffer = compiler::importOnnxBuffer(ctx, bytes, path, error);
  ASSERT_TRUE(fromBuffer) << error;
  EXPECT_TRUE(error.empty());
  EXPECT_EQ(printed(*fromBuffer), printed(*fromFile));
}

TEST_F(ImportTest, BufferErrorNamesTheGivenName) {
  std::string error;
  auto module = compiler::importOnnxBuffer(ctx, "not a model\n", "memory.onnx", error);
  EXPECT_FALSE(module);
  EXPECT_THAT(error, StartsWith("memory.onnx: not a valid ONNX model"));
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST_F(ImportTest, BufferExternalDataIsLookedUpBesideTheName) {
  Model m = matmulReluModel();
  TP *w = m.g->mutable_initializer(0);
  w->clear_float_data();
  w->set_data_location(TP::EXTERNAL);
  auto *location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  std::string error;
  auto module = compiler::importOnnxBuffer(ctx, m.proto.SerializeAsString(),
                                           "/nonexistent-folder/model.onnx", error);
  EXPECT_FALSE(module);
  EXPECT_THAT(error, HasSubstr("/nonexistent-folder/weights.bin"));
}

} // namespace
