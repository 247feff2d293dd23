//===- ImportErrorsTest.cpp - error paths of the ONNX importer --------------===//
//
// Every error is one line that names the file and the node, tensor or
// attribute at fault. Each test checks the pieces a user needs to find the
// problem.
//
//===----------------------------------------------------------------------===//
#include "ImportTestUtil.h"

using namespace mixprec;
using namespace mixprec::test;
using ::testing::HasSubstr;

namespace {

/// A valid model: x[4,8] -> Relu -> y.
Model reluModel(int64_t opset = 13) {
  Model m(opset);
  m.input("x", {4, 8});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", Dims{4, 8});
  return m;
}

//===----------------------------------------------------------------------===//
// Bad files
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, ErrorMissingFile) {
  std::string p = pathOf("does_not_exist.onnx");
  std::string e = importPathError(p);
  EXPECT_THAT(e, HasSubstr(p + ": cannot read: no such file"));
}

TEST_F(ImportTest, ErrorDirectoryInsteadOfFile) {
  std::string e = importPathError(dir);
  EXPECT_THAT(e, HasSubstr(dir + ":"));
}

TEST_F(ImportTest, ErrorNotAProtobuf) {
  writeBytes("text.onnx", "This is not an ONNX model.\nIt is plain text.\n");
  std::string e = importPathError(pathOf("text.onnx"));
  EXPECT_THAT(e, HasSubstr(pathOf("text.onnx") + ": not a valid ONNX model"));
}

TEST_F(ImportTest, ErrorTruncatedModel) {
  Model m = reluModel();
  m.initIota("big", {64, 64}); // make the cut land inside a field
  std::string bytes = m.proto.SerializeAsString();
  writeBytes("cut.onnx", bytes.substr(0, bytes.size() / 2));
  std::string e = importPathError(pathOf("cut.onnx"));
  EXPECT_THAT(e, HasSubstr(pathOf("cut.onnx") + ": not a valid ONNX model"));
}

TEST_F(ImportTest, ErrorEmptyFileHasNoGraph) {
  writeBytes("empty.onnx", "");
  std::string e = importPathError(pathOf("empty.onnx"));
  EXPECT_EQ(e, pathOf("empty.onnx") + ": model has no graph");
}

TEST_F(ImportTest, ErrorNoDefaultOpset) {
  Model m = reluModel();
  m.proto.clear_opset_import();
  std::string e = importError(m);
  EXPECT_THAT(e, HasSubstr("no opset_import for the default ONNX domain"));
}

//===----------------------------------------------------------------------===//
// Graph inputs and outputs
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, ErrorSymbolicInputDim) {
  Model m(13);
  auto *vi = m.input("tokens", {});
  auto *shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_value(1);
  shape->add_dim()->set_dim_param("seq");
  m.node("Relu", {"tokens"}, {"y"});
  m.output("y");
  std::string e = importError(m);
  EXPECT_THAT(e, HasSubstr(pathOf("model.onnx") + ": graph input 'tokens' has symbolic "
                                                  "dimension 'seq' at dim 1"));
  EXPECT_THAT(e, HasSubstr("with no size: give it with --shape seq=N or --shape tokens=DIMS"));
}

TEST_F(ImportTest, SymbolicDimsBindFromSizesAndShapes) {
  Model m(13);
  for (const char *name : {"a", "b"}) {
    auto *shape = m.input(name, {})->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->add_dim()->set_dim_param("batch");
    shape->add_dim()->set_dim_value(4);
  }
  m.node("Add", {"a", "b"}, {"y"});
  m.output("y");
  compiler::OnnxImportOptions bySize;
  bySize.dimParams["batch"] = 3;
  auto mod = import(m, bySize);
  ASSERT_TRUE(mod);
  EXPECT_EQ(str(mainOf(*mod).getFunctionType()),
            "(tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>");
  // One input's data binds the dim for the other.
  compiler::OnnxImportOptions byData;
  byData.dataShapes["b"] = {5, 4};
  mod = import(m, byData);
  ASSERT_TRUE(mod);
  EXPECT_EQ(str(mainOf(*mod).getFunctionType()),
            "(tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>");
  compiler::OnnxImportOptions clash;
  clash.dataShapes["a"] = {5, 4};
  clash.dataShapes["b"] = {6, 4};
  EXPECT_THAT(importError(m, clash),
              HasSubstr("symbolic dimension 'batch' is 6 in graph input 'b' (dim 0) but 5 in "
                        "graph input 'a' (dim 0)"));
}

TEST_F(ImportTest, ErrorUnknownInputDimAndMissingShape) {
  Model m(13);
  auto *vi = m.input("x", {});
  vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim(); // neither value nor param
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("graph input 'x' has unknown dimension at dim 0"));

  Model n(13);
  auto *v2 = n.g->add_input();
  v2->set_name("x");
  v2->mutable_type()->mutable_tensor_type()->set_elem_type(TP::FLOAT);
  n.node("Relu", {"x"}, {"y"});
  n.output("y");
  EXPECT_THAT(importError(n), HasSubstr("graph input 'x' has no shape"));
}

TEST_F(ImportTest, ErrorUnsupportedInputType) {
  Model m(13);
  m.input("h", {2}, TP::FLOAT16);
  m.node("Relu", {"h"}, {"y"});
  m.output("y");
  std::string e = importError(m);
  EXPECT_THAT(e, HasSubstr("graph input 'h' has unsupported element type FLOAT16"));
}

TEST_F(ImportTest, ErrorShapeOverrideForUnknownInput) {
  compiler::OnnxImportOptions opts;
  opts.inputShapes["nope"] = {1};
  std::string e = importError(reluModel(), opts);
  EXPECT_THAT(e, HasSubstr("a shape is given for 'nope', which is not a graph input"));
}

TEST_F(ImportTest, ErrorGraphOutputNotProduced) {
  Model m = reluModel();
  m.output("ghost");
  EXPECT_THAT(importError(m),
              HasSubstr("graph output 'ghost' is not produced by any node, input or initializer"));
}

TEST_F(ImportTest, ErrorDeclaredOutputShapeDisagrees) {
  Model m(13);
  m.input("x", {4, 8});
  m.initIota("w", {8, 3});
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.output("y", Dims{4, 4});
  std::string e = importError(m);
  EXPECT_THAT(e, HasSubstr("graph output 'y' is declared with shape [4, 4] but the importer "
                           "infers FLOAT [4, 3]"));
}

TEST_F(ImportTest, ErrorDeclaredOutputTypeDisagrees) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y"});
  m.output("y", Dims{4}, TP::INT64);
  EXPECT_THAT(importError(m), HasSubstr("graph output 'y' is declared INT64 but is FLOAT [4]"));
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, ErrorUnsupportedOp) {
  Model m(13);
  m.input("x", {4, 8});
  m.node("Relu", {"x"}, {"r"}, "relu0");
  auto &n = m.node("Hardmax", {"r"}, {"y"}, "hm1");
  attrI(n, "axis", -1);
  m.output("y");
  EXPECT_EQ(importError(m),
            "unsupported op 'Hardmax' (node 'hm1', opset 13) in " + pathOf("model.onnx"));
}

TEST_F(ImportTest, ErrorOpNotYetInOpset) {
  Model m(17);
  m.input("x", {4});
  m.node("Gelu", {"x"}, {"y"}, "g");
  m.output("y");
  std::string e = importError(m);
  EXPECT_THAT(e,
              HasSubstr("unsupported op 'Gelu' (node 'g', opset 17) in " + pathOf("model.onnx")));
  EXPECT_THAT(e, HasSubstr("exists from opset 20"));
}

TEST_F(ImportTest, ErrorStaysOneLineWithControlCharactersInNames) {
  Model m(13);
  m.input("x", {4});
  m.node("Hardmax", {"x"}, {"y"}, "bad\nname");
  m.output("y");
  // importError checks there is no newline.
  EXPECT_THAT(importError(m), HasSubstr("node 'bad\\nname'"));
}

TEST_F(ImportTest, ErrorOtherDomain) {
  Model m(13);
  m.input("x", {4});
  auto &n = m.node("FastGelu", {"x"}, {"y"}, "fg");
  n.set_domain("com.microsoft");
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'fg' (FastGelu): domain 'com.microsoft' is not supported"));
}

TEST_F(ImportTest, ErrorMissingNodeInput) {
  Model m(13);
  m.input("x", {4, 8});
  m.node("MatMul", {"x", "W_missing"}, {"y"}, "mm");
  m.output("y");
  EXPECT_EQ(importError(m), pathOf("model.onnx") +
                                ": node 'mm' (MatMul): input 'W_missing' is not a graph "
                                "input, initializer or earlier output");
}

TEST_F(ImportTest, ErrorInputDefinedLaterIsNotEarlier) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"t"}, {"y"}, "first");
  m.node("Relu", {"x"}, {"t"}, "second");
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'first' (Relu): input 't' is not a graph input, initializer "
                        "or earlier output"));
}

TEST_F(ImportTest, ErrorShapeFunctionFailureNamesNode) {
  Model m(13);
  m.input("x", {4, 8});
  m.initIota("W", {5, 3});
  m.node("MatMul", {"x", "W"}, {"y"}, "mm");
  m.output("y");
  EXPECT_EQ(importError(m), pathOf("model.onnx") +
                                ": node 'mm' (MatMul): contracting dimensions differ: [4, 8] "
                                "x [5, 3]");
}

// The importer builds these ops with the result types the ops infer
// (InferShapedTypeOpInterface); a shape rule the operands break is still the
// node's error, in the rule's words.
TEST_F(ImportTest, ErrorInferredShapeRulesNameNode) {
  {
    Model m(13);
    m.input("c", {5}, TP::BOOL);
    m.input("x", {2, 3});
    m.input("y", {2, 3});
    m.node("Where", {"c", "x", "y"}, {"o"}, "w");
    m.output("o");
    EXPECT_THAT(importError(m), HasSubstr("node 'w' (Where): shapes [5] and [2, 3] do not broadcast"));
  }
  {
    Model m(13);
    m.input("a", {4, 8});
    m.initIota("b", {7, 5});
    m.node("Gemm", {"a", "b"}, {"o"}, "g");
    m.output("o");
    EXPECT_THAT(importError(m),
                HasSubstr("node 'g' (Gemm): input features 8 do not match weight [7, 5]"));
  }
  {
    Model m(13);
    m.input("x", {1, 3, 8, 8});
    m.initIota("w", {4, 2, 3, 3});
    m.node("Conv", {"x", "w"}, {"o"}, "conv");
    m.output("o");
    EXPECT_THAT(importError(m), HasSubstr("node 'conv' (Conv): weight [4, 2, 3, 3] expects 2 input "
                                      "channels, got 3"));
  }
  {
    Model m(13);
    m.input("x", {1, 3, 3, 3});
    attrIs(m.node("MaxPool", {"x"}, {"o"}, "pool"), "kernel_shape", {5, 5});
    m.output("o");
    EXPECT_THAT(importError(m), HasSubstr("node 'pool' (MaxPool): window [5, 5] does not fit the "
                                      "padded input [1, 3, 3, 3]"));
  }
}

TEST_F(ImportTest, ErrorOutputDefinedTwice) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y"}, "a");
  m.node("Tanh", {"x"}, {"y"}, "b");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'b' (Tanh): output 'y' is already defined"));
}

TEST_F(ImportTest, ErrorNonConstantReshapeShape) {
  Model m(13);
  m.input("x", {2, 6});
  m.input("s", {2}, TP::INT64);
  m.node("Reshape", {"x", "s"}, {"y"}, "rs");
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'rs' (Reshape): input 'shape' ('s') must be a compile-time "
                        "constant"));
}

TEST_F(ImportTest, ErrorReshapeBadShapes) {
  auto run = [&](std::vector<int64_t> shape) {
    Model m(13);
    m.input("x", {2, 6});
    m.ints("s", shape);
    m.node("Reshape", {"x", "s"}, {"y"}, "rs");
    m.output("y");
    return importError(m);
  };
  EXPECT_THAT(run({-1, -1}), HasSubstr("node 'rs' (Reshape): shape [-1, -1] has more than one -1"));
  EXPECT_THAT(run({5, 3}),
              HasSubstr("cannot reshape [2, 6] (12 elements) to [5, 3] (15 elements)"));
  EXPECT_THAT(run({5, -1}), HasSubstr("the -1 dimension cannot be inferred"));
  EXPECT_THAT(run({0, 0, 0}), HasSubstr("copies dim 2 (0)"));
  EXPECT_THAT(run({-2, 6}), HasSubstr("invalid dimension -2"));
}

TEST_F(ImportTest, ErrorAttributeOfWrongType) {
  Model m(13);
  m.input("x", {2, 3});
  auto &n = m.node("Softmax", {"x"}, {"y"}, "sm");
  attrF(n, "axis", 1.0f);
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'sm' (Softmax): attribute 'axis' must be of type INT, got FLOAT"));
}

TEST_F(ImportTest, ErrorAxisOutOfRange) {
  Model m(13);
  m.input("x", {2, 3});
  auto &n = m.node("Concat", {"x", "x"}, {"y"}, "cat");
  attrI(n, "axis", 2);
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'cat' (Concat): attribute 'axis' 2 is out of range [-2, 1] "
                        "for rank 2"));
}

TEST_F(ImportTest, ErrorBooleanAttributeOutOfRange) {
  Model m(13);
  m.input("a", {4, 8});
  m.initIota("b", {8, 5});
  auto &n = m.node("Gemm", {"a", "b"}, {"y"}, "g");
  attrI(n, "transB", 2);
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'g' (Gemm): attribute 'transB' must be 0 or 1, got 2"));
}

TEST_F(ImportTest, ErrorGemmCDoesNotBroadcast) {
  Model m(13);
  m.input("a", {4, 8});
  m.initIota("b", {8, 5});
  m.initIota("c", {4});
  m.node("Gemm", {"a", "b", "c"}, {"y"}, "g");
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'g' (Gemm): C shape [4] does not broadcast to the output shape "
                        "[4, 5]"));
}

TEST_F(ImportTest, ErrorReduceAxesAttributeAtOpset13) {
  Model m(13);
  m.input("x", {2, 3});
  auto &n = m.node("ReduceSum", {"x"}, {"y"}, "rsum");
  attrIs(n, "axes", {1});
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'rsum' (ReduceSum): attribute 'axes' is not "
                                        "allowed from opset 13"));
}

TEST_F(ImportTest, ErrorReduceDuplicateAxes) {
  Model m(18);
  m.input("x", {2, 3});
  m.ints("axes", {1, -1});
  m.node("ReduceMean", {"x", "axes"}, {"y"}, "rm");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'rm' (ReduceMean): input 'axes' names axis 1 twice"));
}

TEST_F(ImportTest, ErrorSqueezeNonUnitAxis) {
  Model m(13);
  m.input("x", {1, 3});
  m.ints("axes", {1});
  m.node("Squeeze", {"x", "axes"}, {"y"}, "sq");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'sq' (Squeeze): cannot squeeze axis 1 of size 3"));
}

TEST_F(ImportTest, ErrorSliceZeroStepAndRepeatedAxis) {
  Model m(13);
  m.input("x", {4, 10});
  m.ints("s", {0});
  m.ints("e", {3});
  m.ints("a", {1});
  m.ints("zero", {0});
  m.node("Slice", {"x", "s", "e", "a", "zero"}, {"y"}, "sl");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'sl' (Slice): step of axis 1 is zero"));

  Model n(13);
  n.input("x", {4, 10});
  n.ints("s", {0, 1});
  n.ints("e", {3, 4});
  n.ints("a", {1, -1});
  n.node("Slice", {"x", "s", "e", "a"}, {"y"}, "sl");
  n.output("y");
  EXPECT_THAT(importError(n), HasSubstr("node 'sl' (Slice): axis 1 is sliced twice"));
}

TEST_F(ImportTest, ErrorSliceNonConstantStarts) {
  Model m(13);
  m.input("x", {4, 10});
  m.input("s", {1}, TP::INT64);
  m.ints("e", {3});
  m.node("Slice", {"x", "s", "e"}, {"y"}, "sl");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'sl' (Slice): input 'starts' ('s') must be a "
                                        "compile-time constant"));
}

TEST_F(ImportTest, ErrorGatherConstantIndexOutOfRange) {
  Model m(13);
  m.input("x", {5, 4});
  m.ints("idx", {1, 5});
  m.node("Gather", {"x", "idx"}, {"y"}, "ga");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'ga' (Gather): index 5 is out of range for axis "
                                        "0 of size 5"));
}

TEST_F(ImportTest, ErrorGatherFloatIndices) {
  Model m(13);
  m.input("x", {5, 4});
  m.initIota("idx", {2});
  m.node("Gather", {"x", "idx"}, {"y"}, "ga");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'ga' (Gather): indices ('idx') must be INT64 or "
                                        "INT32, got FLOAT"));
}

// Integer arithmetic at run time imports (the int_elementwise routine);
// bools have no arithmetic.
TEST_F(ImportTest, ErrorBoolArithmeticAtRunTime) {
  Model ints(13);
  ints.input("ids", {3}, TP::INT64);
  ints.ints("one", {1});
  ints.node("Add", {"ids", "one"}, {"y"}, "add");
  ints.output("y", Dims{3}, TP::INT64);
  EXPECT_TRUE(import(ints));
  Model m(13);
  m.input("flags", {3}, TP::BOOL);
  m.input("more", {3}, TP::BOOL);
  m.node("Add", {"flags", "more"}, {"y"}, "add");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'add' (Add): input #0 ('flags') must be FLOAT, "
                                        "INT32 or INT64, got BOOL"));
}

TEST_F(ImportTest, ErrorMixedOperandTypes) {
  Model m(13);
  m.input("x", {3});
  m.ints("one", {1});
  m.node("Mul", {"x", "one"}, {"y"}, "mul");
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'mul' (Mul): operand element types differ: FLOAT and INT64"));
}

TEST_F(ImportTest, ErrorConcatElementTypesDiffer) {
  Model m(13);
  m.input("x", {3});
  m.input("i", {3}, TP::INT64);
  auto &n = m.node("Concat", {"x", "i"}, {"y"}, "cat");
  attrI(n, "axis", 0);
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'cat' (Concat): input #1 is INT64, input #0 is FLOAT"));
}

TEST_F(ImportTest, ErrorWhereConditionNotBool) {
  Model m(13);
  m.input("c", {3});
  m.input("x", {3});
  m.node("Where", {"c", "x", "x"}, {"y"}, "w");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'w' (Where): condition ('c') must be BOOL"));
}

TEST_F(ImportTest, ErrorCastUnsupportedTarget) {
  Model m(13);
  m.input("x", {3});
  auto &n = m.node("Cast", {"x"}, {"y"}, "cast");
  attrI(n, "to", TP::FLOAT16);
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'cast' (Cast): attribute 'to' = FLOAT16 is not supported"));
}

TEST_F(ImportTest, ErrorConstantWithStringValue) {
  Model m(13);
  auto &n = m.node("Constant", {}, {"y"}, "k");
  attrS(n, "value_string", "hello");
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'k' (Constant): attribute 'value_string' is not supported"));
}

TEST_F(ImportTest, ErrorGeluBadApproximate) {
  Model m(20);
  m.input("x", {3});
  auto &n = m.node("Gelu", {"x"}, {"y"}, "g");
  attrS(n, "approximate", "fast");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'g' (Gelu): attribute 'approximate' must be "
                                        "\"none\" or \"tanh\", got \"fast\""));
}

TEST_F(ImportTest, ErrorLayerNormStatsStashType) {
  // The Mean and InvStdDev outputs are computed in FP32 (stash_type 1),
  // the only stash type there is.
  Model m(17);
  m.input("x", {2, 8});
  m.initIota("g", {8});
  auto &n = m.node("LayerNormalization", {"x", "g"}, {"y", "mean"}, "ln");
  attrI(n, "stash_type", 10);
  m.node("Relu", {"mean"}, {"z"});
  m.output("y");
  m.output("z");
  EXPECT_THAT(importError(m), HasSubstr("node 'ln' (LayerNormalization): attribute 'stash_type' "
                                        "must be 1 (FLOAT), got 10"));
}

TEST_F(ImportTest, ErrorLayerNormBadScaleAndEpsilon) {
  Model m(17);
  m.input("x", {2, 8});
  m.initIota("g", {4});
  m.node("LayerNormalization", {"x", "g"}, {"y"}, "ln");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'ln' (LayerNormalization): Scale shape [4] does "
                                        "not match the normalized shape [8]"));
  Model n(17);
  n.input("x", {2, 8});
  n.initIota("g", {8});
  auto &node = n.node("LayerNormalization", {"x", "g"}, {"y"}, "ln");
  attrF(node, "epsilon", 0.0f);
  n.output("y");
  EXPECT_THAT(importError(n), HasSubstr("node 'ln' (LayerNormalization): attribute 'epsilon' "
                                        "must be positive"));
}

TEST_F(ImportTest, ErrorBatchNormTrainingAndUsedOutputs) {
  // training_mode 1 imports (tests/e2e/run_composite.py checks it); other
  // values are refused, and the running statistics are outputs of training.
  auto model = [](int64_t training, bool useMean) {
    Model m(15);
    m.input("x", {2, 3, 4, 4});
    for (const char *p : {"s", "b", "mean", "var"})
      m.initIota(p, {3});
    auto &n = m.node("BatchNormalization", {"x", "s", "b", "mean", "var"},
                     {"y", "running_mean", "running_var"}, "bn");
    if (training)
      attrI(n, "training_mode", training);
    m.output("y");
    if (useMean)
      m.output("running_mean");
    return m;
  };
  EXPECT_THAT(importError(model(2, false)),
              HasSubstr("node 'bn' (BatchNormalization): attribute 'training_mode' must be 0 or 1, "
                        "got 2"));
  EXPECT_THAT(importError(model(0, true)),
              HasSubstr("node 'bn' (BatchNormalization): output #1 ('running_mean') is used"));
}

TEST_F(ImportTest, ErrorConvRankIsUnsupported) {
  // 1-D (a 3-D input) runs as a 2-D convolution, 3-D as mp.conv; 4-D does not.
  Model m(13);
  m.input("x", {1, 3, 4, 4, 4, 4});
  m.initIota("w", {8, 3, 3, 3, 3, 3});
  m.node("Conv", {"x", "w"}, {"y"}, "conv4d");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'conv4d' (Conv): only 1-D to 3-D convolution (an "
                                        "input of rank 3 to 5) is supported, got an input of "
                                        "shape [1, 3, 4, 4, 4, 4]"));
  Model n(13);
  n.input("x", {1, 3, 16});
  n.initIota("w", {8, 3, 3, 3});
  n.node("Conv", {"x", "w"}, {"y"}, "conv1d");
  n.output("y");
  EXPECT_THAT(importError(n), HasSubstr("node 'conv1d' (Conv): weight must be 3-D (M, C/group, "
                                        "K) for a 1-D convolution, got [8, 3, 3, 3]"));
  Model o(13);
  o.input("x", {1, 3, 4, 4, 4});
  o.initIota("w", {8, 3, 3, 3});
  o.node("Conv", {"x", "w"}, {"y"}, "conv3d");
  o.output("y");
  EXPECT_THAT(importError(o), HasSubstr("node 'conv3d' (Conv): weight must be 5-D (M, C/group, "
                                        "kD, kH, kW), got [8, 3, 3, 3]"));
}

TEST_F(ImportTest, ErrorConvAttributes) {
  auto run = [&](auto configure) {
    Model m(13);
    m.input("x", {1, 3, 8, 8});
    m.initIota("w", {4, 3, 3, 3});
    auto &n = m.node("Conv", {"x", "w"}, {"y"}, "c");
    configure(n);
    m.output("y");
    return importError(m);
  };
  EXPECT_THAT(run([](onnx::NodeProto &n) {
                attrIs(n, "kernel_shape", {5, 5});
              }),
              HasSubstr("node 'c' (Conv): attribute 'kernel_shape' [5, 5] does not match the "
                        "weight's spatial dims [3, 3]"));
  EXPECT_THAT(run([](onnx::NodeProto &n) { attrS(n, "auto_pad", "SAME"); }),
              HasSubstr("attribute 'auto_pad' must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, "
                        "got 'SAME'"));
  EXPECT_THAT(run([](onnx::NodeProto &n) {
                attrIs(n, "strides", {0, 1});
              }),
              HasSubstr("attribute 'strides' must hold positive values"));
  EXPECT_THAT(run([](onnx::NodeProto &n) {
                attrIs(n, "pads", {1, 1});
              }),
              HasSubstr("attribute 'pads' must have 4 values"));
  EXPECT_THAT(run([](onnx::NodeProto &n) { attrI(n, "group", 2); }),
              HasSubstr("node 'c' (Conv): input channels 3 and output channels 4 must both "
                        "divide by groups 2"));
}

TEST_F(ImportTest, ErrorMaxPoolStorageOrder) {
  Model o(13);
  o.input("x", {1, 2, 4, 4});
  auto &p = o.node("MaxPool", {"x"}, {"y"}, "mp");
  attrIs(p, "kernel_shape", {2, 2});
  attrI(p, "storage_order", 2);
  o.output("y");
  EXPECT_THAT(importError(o),
              HasSubstr("node 'mp' (MaxPool): attribute 'storage_order' must be 0 (row-major) "
                        "or 1 (column-major), got 2"));

  Model q(13);
  q.input("x", {1, 2, 4, 4});
  q.node("MaxPool", {"x"}, {"y"}, "mp");
  q.output("y");
  EXPECT_THAT(importError(q),
              HasSubstr("node 'mp' (MaxPool): attribute 'kernel_shape' is required"));

  Model r(13);
  r.input("x", {1, 2, 4, 4, 4});
  auto &t = r.node("MaxPool", {"x"}, {"y", "idx"}, "mp");
  attrIs(t, "kernel_shape", {2, 2});
  r.output("y");
  r.output("idx", std::nullopt, TP::INT64);
  EXPECT_THAT(importError(r),
              HasSubstr("node 'mp' (MaxPool): attribute 'kernel_shape' must have 3 values, "
                        "got 2"));
}

TEST_F(ImportTest, ErrorAveragePoolDilations) {
  // Dilations are supported (mp.avg_pool); they must be positive.
  Model m(19);
  m.input("x", {1, 2, 8, 8});
  auto &n = m.node("AveragePool", {"x"}, {"y"}, "ap");
  attrIs(n, "kernel_shape", {2, 2});
  attrIs(n, "dilations", {2, 0});
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'ap' (AveragePool): attribute 'dilations' must "
                                        "hold positive values, got [2, 0]"));
}

TEST_F(ImportTest, ErrorDropoutTrainingMode) {
  Model m(13);
  m.input("x", {4});
  TP *mode = m.g->add_initializer();
  mode->set_name("training");
  mode->set_data_type(TP::BOOL);
  mode->add_int32_data(1);
  m.node("Dropout", {"x", "", "training"}, {"y"}, "drop");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'drop' (Dropout): training_mode must be false"));
}

} // namespace
