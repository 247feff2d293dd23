//===- ImportOpsTest.cpp - op mappings of the ONNX importer -----------------===//
//
// One or more tests per ONNX op: the mp ops produced, their result types and
// attributes, and the opset-dependent forms (Softmax 11 vs 13, ReduceSum 11
// vs 13, ReduceMean 13 vs 18, Unsqueeze 11 vs 13, Slice 9 vs 13).
//
//===----------------------------------------------------------------------===//
#include "ImportTestUtil.h"

#include <limits>

using namespace mixprec;
using namespace mixprec::test;
using mlir::Operation;
using Names = std::vector<std::string>;
using ::testing::HasSubstr;

namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();

//===----------------------------------------------------------------------===//
// Function signature, names, locations
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, MatMulSignatureNamesAndLocations) {
  Model m(13);
  m.input("x", {4, 8});
  m.initIota("w", {8, 3});
  m.node("MatMul", {"x", "w"}, {"y"}, "mm");
  m.output("y", Dims{4, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  std::string ir = printed(*mod);
  EXPECT_NE(ir.find("func.func @main(%arg0: tensor<4x8xf32> {mp.name = \"x\"}) -> "
                    "(tensor<4x3xf32> {mp.name = \"y\"})"),
            std::string::npos)
      << ir;
  Operation *mm = only(*mod, "mp.matmul");
  ASSERT_TRUE(mm);
  EXPECT_EQ(resultType(mm), "tensor<4x3xf32>");
  EXPECT_EQ(locName(mm), "mm");
  // NameLoc(node name, FileLineColLoc(path, 0, 0)).
  auto loc = mlir::cast<mlir::NameLoc>(mm->getLoc());
  auto file = mlir::dyn_cast<mlir::FileLineColLoc>(loc.getChildLoc());
  ASSERT_TRUE(file);
  EXPECT_EQ(file.getFilename().str(), pathOf("model.onnx"));
  // The weight is an mp.constant located at its initializer's name.
  Operation *w = mm->getOperand(1).getDefiningOp();
  ASSERT_TRUE(w && mlir::isa<graph::ConstantOp>(w));
  EXPECT_EQ(locName(w), "w");
  EXPECT_EQ(constValues(mm->getOperand(1)).size(), 24u);
  EXPECT_EQ(constValues(mm->getOperand(1))[23], 23.0);
  EXPECT_EQ(mm->getAttr("acc_type"), nullptr);
}

TEST_F(ImportTest, UnnamedNodesAreNamedByOpTypeAndIndex) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"a"});
  m.node("Tanh", {"a"}, {"y"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(locName(only(*mod, "mp.relu")), "Relu_0");
  EXPECT_EQ(locName(only(*mod, "mp.tanh")), "Tanh_1");
}

TEST_F(ImportTest, ConstantsAreGroupedAtTheTopInOrderOfUse) {
  Model m(13);
  m.input("x", {4});
  m.initF32("c1", {4}, {1, 2, 3, 4});
  m.initF32("c2", {}, {2});
  m.node("Relu", {"x"}, {"r"});
  m.node("Add", {"r", "c1"}, {"a"});
  m.node("Tanh", {"a"}, {"t"});
  m.node("Mul", {"t", "c2"}, {"y"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  std::vector<std::string> order;
  for (Operation *op : bodyOps(*mod))
    order.push_back(op->getName().getStringRef().str() + ":" + locName(op));
  EXPECT_EQ(order, (Names{"mp.constant:c1", "mp.constant:c2", "mp.relu:Relu_0", "mp.add:Add_1",
                          "mp.tanh:Tanh_2", "mp.mul:Mul_3"}));
}

TEST_F(ImportTest, MatMulBatchedAndVector) {
  Model m(13);
  m.input("a", {2, 1, 4, 8});
  m.input("b", {3, 8, 5});
  m.initIota("v", {8});
  m.node("MatMul", {"a", "b"}, {"y"});
  m.node("MatMul", {"a", "v"}, {"z"});
  m.output("y", Dims{2, 3, 4, 5});
  m.output("z", Dims{2, 1, 4});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ops = bodyOps(*mod);
  std::vector<std::string> types;
  for (Operation *op : ops)
    if (mlir::isa<graph::MatmulOp>(op))
      types.push_back(resultType(op));
  EXPECT_EQ(types, (Names{"tensor<2x3x4x5xf32>", "tensor<2x1x4xf32>"}));
}

TEST_F(ImportTest, MatMulByTransposedWeightIsALinearLayer) {
  // A tied LM head: the table feeds a Gather and, transposed, a MatMul.
  Model m(13);
  m.input("x", {2, 4, 8});
  m.initIota("wte", {10, 8});
  m.input("ids", {3}, onnx::TensorProto::INT64);
  m.node("Gather", {"wte", "ids"}, {"emb"});
  m.node("Transpose", {"wte"}, {"wte_t"}, "t");
  m.node("MatMul", {"x", "wte_t"}, {"logits"}, "head");
  m.output("logits", Dims{2, 4, 10});
  m.output("emb", Dims{3, 8});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  int linears = 0, transposes = 0, matmuls = 0;
  for (Operation *op : bodyOps(*mod)) {
    if (auto linear = mlir::dyn_cast<graph::LinearOp>(op)) {
      ++linears;
      EXPECT_TRUE(linear.getTransposeWeight());
      EXPECT_TRUE(linear.getWeight().getDefiningOp<graph::ConstantOp>());
      EXPECT_EQ(locName(op), "head");
    }
    transposes += mlir::isa<graph::TransposeOp>(op);
    matmuls += mlir::isa<graph::MatmulOp>(op);
  }
  EXPECT_EQ(linears, 1);
  EXPECT_EQ(transposes, 0);
  EXPECT_EQ(matmuls, 0);
}

TEST_F(ImportTest, OutputsMayBeInputsOrConstantsAndIdentityAliases) {
  Model m(13);
  m.input("x", {2});
  m.initF32("c", {2}, {1.5f, -2.5f});
  m.node("Identity", {"x"}, {"x_alias"}, "id");
  m.output("x_alias", Dims{2});
  m.output("x");
  m.output("c", Dims{2});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ret = mlir::cast<mlir::func::ReturnOp>(mainOf(*mod).getBody().front().getTerminator());
  ASSERT_EQ(ret.getNumOperands(), 3u);
  EXPECT_TRUE(mlir::isa<mlir::BlockArgument>(ret.getOperand(0)));
  EXPECT_EQ(ret.getOperand(0), ret.getOperand(1));
  EXPECT_EQ(constValues(ret.getOperand(2)), (std::vector<double>{1.5, -2.5}));
  EXPECT_EQ(opNames(*mod), Names{});
  EXPECT_EQ(str(mainOf(*mod).getResultAttr(2, "mp.name")), "\"c\"");
}

TEST_F(ImportTest, AliasedConstantIsMaterializedOnce) {
  Model m(13);
  m.initF32("c", {2}, {1.0f, 2.0f});
  m.node("Identity", {"c"}, {"c_alias"});
  auto &cast = m.node("Cast", {"c"}, {"c_cast"}); // same type: another alias
  attrI(cast, "to", TP::FLOAT);
  m.output("c_alias");
  m.output("c");
  m.output("c_cast");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(countOps(*mod, "mp.constant"), 1);
}

TEST_F(ImportTest, InitializerListedAsInputIsAConstant) {
  Model m(9);
  m.input("x", {2, 2});
  m.input("w", {2, 2}); // old exporters list weights as inputs too
  m.initIota("w", {2, 2});
  m.node("MatMul", {"x", "w"}, {"y"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(mainOf(*mod).getNumArguments(), 1u);
  EXPECT_TRUE(only(*mod, "mp.matmul")->getOperand(1).getDefiningOp<graph::ConstantOp>());
}

TEST_F(ImportTest, InputShapeOverrideReplacesSymbolicDims) {
  Model m(13);
  auto *vi = m.input("x", {});
  auto *shape = vi->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_value(8);
  m.node("Relu", {"x"}, {"y"});
  m.output("y");
  compiler::OnnxImportOptions opts;
  opts.inputShapes["x"] = {3, 8};
  auto mod = import(m, opts);
  ASSERT_TRUE(mod);
  EXPECT_EQ(str(mainOf(*mod).getFunctionType()), "(tensor<3x8xf32>) -> tensor<3x8xf32>");
}

TEST_F(ImportTest, IntegerAndBoolGraphInputs) {
  Model m(13);
  m.input("ids", {2, 3}, TP::INT64);
  m.input("ids32", {2}, TP::INT32);
  m.input("mask", {2}, TP::BOOL);
  m.output("ids", std::nullopt, TP::INT64);
  m.output("ids32", Dims{2}, TP::INT32);
  m.output("mask", Dims{2}, TP::BOOL);
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(str(mainOf(*mod).getFunctionType()),
            "(tensor<2x3xi64>, tensor<2xi32>, tensor<2xi1>) -> (tensor<2x3xi64>, "
            "tensor<2xi32>, tensor<2xi1>)");
}

TEST_F(ImportTest, DeclaredSymbolicOutputDimsAreAccepted) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y"});
  auto *vi = m.output("y");
  vi->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_param("n");
  ASSERT_TRUE(import(m));
}

//===----------------------------------------------------------------------===//
// Gemm
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, GemmDefaultIsOneLinearWithBias) {
  Model m(13);
  m.input("a", {4, 8});
  m.initIota("b", {8, 5});
  m.initIota("c", {5});
  m.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
  m.output("y", Dims{4, 5});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{"mp.linear"});
  Operation *lin = only(*mod, "mp.linear");
  EXPECT_EQ(lin->getNumOperands(), 3u);
  EXPECT_FALSE(mlir::cast<graph::LinearOp>(lin).getTransposeWeight());
  EXPECT_EQ(resultType(lin), "tensor<4x5xf32>");
}

TEST_F(ImportTest, GemmTransBUsesTransposedWeight) {
  Model m(13);
  m.input("a", {4, 8});
  m.initIota("b", {5, 8});
  auto &n = m.node("Gemm", {"a", "b"}, {"y"});
  attrI(n, "transB", 1);
  m.output("y", Dims{4, 5});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  Operation *lin = only(*mod, "mp.linear");
  EXPECT_TRUE(mlir::cast<graph::LinearOp>(lin).getTransposeWeight());
  EXPECT_EQ(lin->getNumOperands(), 2u);
  EXPECT_EQ(opNames(*mod), Names{"mp.linear"});
}

TEST_F(ImportTest, GemmTransAAlphaBetaScaleProductAndCSeparately) {
  Model m(13);
  m.input("a", {8, 16}); // transA: A' is [16, 8]
  m.initIota("b", {8, 5});
  m.initIota("c", {1, 5});
  auto &n = m.node("Gemm", {"a", "b", "c"}, {"y"}, "g");
  attrI(n, "transA", 1);
  attrF(n, "alpha", 0.5f);
  attrF(n, "beta", 2.0f);
  m.output("y", Dims{16, 5});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  // Y = (A'B) * alpha + C * beta
  EXPECT_EQ(opNames(*mod), (Names{"mp.transpose", "mp.mul", "mp.linear", "mp.mul", "mp.add"}));
  auto ops = bodyOps(*mod);
  Operation *tr = nullptr, *lin = nullptr, *add = nullptr;
  for (Operation *op : ops) {
    if (mlir::isa<graph::TransposeOp>(op))
      tr = op;
    if (mlir::isa<graph::LinearOp>(op))
      lin = op;
    if (mlir::isa<graph::AddOp>(op))
      add = op;
  }
  ASSERT_TRUE(tr && lin && add);
  EXPECT_EQ(attrOf(tr, "perm"), "array<i64: 1, 0>");
  EXPECT_EQ(resultType(tr), "tensor<16x8xf32>");
  EXPECT_EQ(lin->getNumOperands(), 2u) << "C must not ride in the bias when alpha != 1";
  Operation *scaledProduct = add->getOperand(0).getDefiningOp();
  Operation *scaledC = add->getOperand(1).getDefiningOp();
  ASSERT_TRUE(mlir::isa<graph::MulOp>(scaledProduct));
  ASSERT_TRUE(mlir::isa<graph::MulOp>(scaledC));
  EXPECT_EQ(scaledProduct->getOperand(0).getDefiningOp(), lin);
  EXPECT_EQ(constValues(scaledProduct->getOperand(1)), std::vector<double>{0.5});
  EXPECT_EQ(locName(scaledC->getOperand(0).getDefiningOp()), "c");
  EXPECT_EQ(constValues(scaledC->getOperand(1)), std::vector<double>{2.0});
  EXPECT_EQ(typeOf(scaledC->getOperand(1)), "tensor<f32>");
  EXPECT_EQ(resultType(add), "tensor<16x5xf32>");
}

TEST_F(ImportTest, GemmBetaOnlyScalesTheBias) {
  Model m(13);
  m.input("a", {4, 8});
  m.initIota("b", {8, 5});
  m.initF32("c", {}, {1.0f}); // rank-0 C broadcasts
  auto &n = m.node("Gemm", {"a", "b", "c"}, {"y"});
  attrF(n, "beta", 3.0f);
  m.output("y", Dims{4, 5});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), (Names{"mp.mul", "mp.linear"}));
  Operation *lin = only(*mod, "mp.linear");
  ASSERT_EQ(lin->getNumOperands(), 3u);
  Operation *mul = lin->getOperand(2).getDefiningOp();
  ASSERT_TRUE(mlir::isa<graph::MulOp>(mul));
  EXPECT_EQ(constValues(mul->getOperand(1)), std::vector<double>{3.0});
  EXPECT_EQ(typeOf(lin->getOperand(2)), "tensor<f32>");
}

TEST_F(ImportTest, GemmBetaZeroDropsC) {
  Model m(13);
  m.input("a", {4, 8});
  m.initIota("b", {8, 5});
  m.initIota("c", {4, 5});
  auto &n = m.node("Gemm", {"a", "b", "c"}, {"y"});
  attrF(n, "beta", 0.0f);
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{"mp.linear"});
  EXPECT_EQ(only(*mod, "mp.linear")->getNumOperands(), 2u);
}

//===----------------------------------------------------------------------===//
// Element-wise
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, BinaryOpsBroadcast) {
  Model m(13);
  m.input("a", {2, 3});
  m.initIota("b", {3});
  m.initF32("s", {}, {2.0f});
  m.node("Add", {"a", "b"}, {"t0"});
  m.node("Sub", {"b", "t0"}, {"t1"});
  m.node("Mul", {"t1", "s"}, {"t2"});
  m.node("Div", {"t2", "a"}, {"t3"});
  m.node("Pow", {"t3", "s"}, {"y"});
  m.output("y", Dims{2, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), (Names{"mp.add", "mp.sub", "mp.mul", "mp.div", "mp.pow"}));
  for (Operation *op : bodyOps(*mod)) {
    if (!mlir::isa<graph::ConstantOp>(op)) {
      EXPECT_EQ(resultType(op), "tensor<2x3xf32>");
    }
  }
}

TEST_F(ImportTest, PowWithIntegerExponentConstantIsConvertedToFloat) {
  Model m(13);
  m.input("x", {2, 3});
  m.initI64("e", {}, {2});
  m.node("Pow", {"x", "e"}, {"y"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  Operation *pow = only(*mod, "mp.pow");
  EXPECT_EQ(typeOf(pow->getOperand(1)), "tensor<f32>");
  EXPECT_EQ(constValues(pow->getOperand(1)), std::vector<double>{2.0});
}

TEST_F(ImportTest, PowWithIntegerExponentInputIsCast) {
  Model m(13);
  m.input("x", {2, 3});
  m.input("e", {3}, TP::INT64);
  m.node("Pow", {"x", "e"}, {"y"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), (Names{"mp.cast", "mp.pow"}));
  EXPECT_EQ(resultType(only(*mod, "mp.cast")), "tensor<3xf32>");
}

TEST_F(ImportTest, UnaryOps) {
  Model m(13);
  m.input("x", {2, 3});
  const char *ops[] = {"Relu", "Tanh", "Sigmoid", "Exp", "Log", "Sqrt", "Erf", "Reciprocal", "Neg"};
  std::string prev = "x";
  for (int i = 0; i < 9; ++i) {
    std::string out = i == 8 ? "y" : "t" + std::to_string(i);
    m.node(ops[i], {prev}, {out});
    prev = out;
  }
  m.output("y", Dims{2, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), (Names{"mp.relu", "mp.tanh", "mp.sigmoid", "mp.exp", "mp.log", "mp.sqrt",
                                  "mp.erf", "mp.reciprocal", "mp.neg"}));
}

TEST_F(ImportTest, GeluOpset20) {
  Model m(20);
  m.input("x", {2, 3});
  auto &n = m.node("Gelu", {"x"}, {"a"});
  attrS(n, "approximate", "tanh");
  m.node("Gelu", {"a"}, {"y"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  std::vector<std::string> approx;
  for (Operation *op : bodyOps(*mod))
    approx.push_back(graph::stringifyGeluApproximation(mlir::cast<graph::GeluOp>(op).getApproximate()).str());
  EXPECT_EQ(approx, (Names{"tanh", "none"}));
}

TEST_F(ImportTest, Where) {
  Model m(13);
  m.input("cond", {4, 4}, TP::BOOL);
  m.input("x", {2, 4, 4});
  m.initF32("fill", {}, {-1e4f});
  m.node("Where", {"cond", "x", "fill"}, {"y"});
  m.output("y", Dims{2, 4, 4});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(resultType(only(*mod, "mp.where")), "tensor<2x4x4xf32>");
}

//===----------------------------------------------------------------------===//
// Softmax: opset 11 vs 13
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, SoftmaxOpset11FlattensAtAxis) {
  // Every opset before 13 has the 2-D coercion semantics.
  for (int64_t opset : {1, 11, 12}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {2, 3, 4});
    auto &n = m.node("Softmax", {"x"}, {"y"});
    attrI(n, "axis", 1);
    m.output("y", Dims{2, 3, 4});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    EXPECT_EQ(opNames(*mod), (Names{"mp.reshape", "mp.softmax", "mp.reshape"}));
    Operation *sm = only(*mod, "mp.softmax");
    EXPECT_EQ(resultType(sm), "tensor<2x12xf32>");
    EXPECT_EQ(mlir::cast<graph::SoftmaxOp>(sm).getAxis(), 1);
  }
}

TEST_F(ImportTest, SoftmaxOpset11DefaultAxisIsOne) {
  Model m(11);
  m.input("x", {2, 3, 4});
  m.node("Softmax", {"x"}, {"y"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(resultType(only(*mod, "mp.softmax")), "tensor<2x12xf32>");
}

TEST_F(ImportTest, SoftmaxOpset11AtLastAxisNeedsNoReshape) {
  Model m(11);
  m.input("x", {2, 3, 4});
  auto &n = m.node("Softmax", {"x"}, {"y"});
  attrI(n, "axis", -1);
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{"mp.softmax"});
  EXPECT_EQ(mlir::cast<graph::SoftmaxOp>(only(*mod, "mp.softmax")).getAxis(), 2);
}

TEST_F(ImportTest, SoftmaxOpset13IsOneAxisDefaultLast) {
  Model m(13);
  m.input("x", {2, 3, 4});
  m.node("Softmax", {"x"}, {"a"});
  auto &n = m.node("Softmax", {"a"}, {"y"});
  attrI(n, "axis", 1);
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), (Names{"mp.softmax", "mp.softmax"}));
  auto ops = bodyOps(*mod);
  EXPECT_EQ(mlir::cast<graph::SoftmaxOp>(ops[0]).getAxis(), 2);
  EXPECT_EQ(mlir::cast<graph::SoftmaxOp>(ops[1]).getAxis(), 1);
  EXPECT_EQ(resultType(ops[1]), "tensor<2x3x4xf32>");
}

TEST_F(ImportTest, LogSoftmaxOpset11AxisZero) {
  Model m(11);
  m.input("x", {2, 3});
  auto &n = m.node("LogSoftmax", {"x"}, {"y"});
  attrI(n, "axis", 0);
  m.output("y", Dims{2, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), (Names{"mp.reshape", "mp.log_softmax", "mp.reshape"}));
  EXPECT_EQ(resultType(only(*mod, "mp.log_softmax")), "tensor<1x6xf32>");
}

//===----------------------------------------------------------------------===//
// Normalizations
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, LayerNormalization) {
  Model m(17);
  m.input("x", {2, 4, 8});
  m.initIota("g", {8});
  m.initIota("b", {8});
  auto &n = m.node("LayerNormalization", {"x", "g", "b"}, {"y"}, "ln");
  attrI(n, "axis", -1);
  attrF(n, "epsilon", 1e-6f);
  m.output("y", Dims{2, 4, 8});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ln = mlir::cast<graph::LayerNormOp>(only(*mod, "mp.layer_norm"));
  EXPECT_EQ(ln.getAxis(), 2);
  EXPECT_FLOAT_EQ(ln.getEpsilon().convertToFloat(), 1e-6f);
  EXPECT_TRUE(ln.getBias());
}

TEST_F(ImportTest, LayerNormalizationDefaultsAndReshapedScale) {
  Model m(17);
  m.input("x", {2, 4, 8});
  m.initIota("g", {1, 8}); // same element count as the normalized [8]
  m.node("LayerNormalization", {"x", "g"}, {"y", "", ""});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ln = mlir::cast<graph::LayerNormOp>(only(*mod, "mp.layer_norm"));
  EXPECT_EQ(ln.getAxis(), 2);
  EXPECT_FLOAT_EQ(ln.getEpsilon().convertToFloat(), 1e-5f);
  EXPECT_FALSE(ln.getBias());
  EXPECT_EQ(typeOf(ln.getScale()), "tensor<8xf32>");
  EXPECT_TRUE(ln.getScale().getDefiningOp<graph::ConstantOp>()) << "re-typed at compile time";
}

TEST_F(ImportTest, LayerNormalizationUnusedStatsOutputsAreFine) {
  Model m(17);
  m.input("x", {2, 8});
  m.initIota("g", {8});
  m.node("LayerNormalization", {"x", "g"}, {"y", "mean", "inv_std"});
  m.output("y");
  ASSERT_TRUE(import(m));
}

TEST_F(ImportTest, BatchNormalization) {
  Model m(15);
  m.input("x", {2, 3, 4, 4});
  for (const char *p : {"s", "b", "mean", "var"})
    m.initIota(p, {3});
  auto &n = m.node("BatchNormalization", {"x", "s", "b", "mean", "var"}, {"y"});
  attrF(n, "epsilon", 1e-3f);
  attrF(n, "momentum", 0.9f);
  m.output("y", Dims{2, 3, 4, 4});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto bn = mlir::cast<graph::BatchNormOp>(only(*mod, "mp.batch_norm"));
  EXPECT_FLOAT_EQ(bn.getEpsilon().convertToFloat(), 1e-3f);
  EXPECT_EQ(resultType(bn), "tensor<2x3x4x4xf32>");
}

//===----------------------------------------------------------------------===//
// Reductions: ReduceSum 11 vs 13, ReduceMean 13 vs 18
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, ReduceSumOpset11AxesAttribute) {
  for (int64_t opset : {11, 12}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {2, 3, 4});
    auto &n = m.node("ReduceSum", {"x"}, {"y"});
    attrIs(n, "axes", {-1});
    attrI(n, "keepdims", 0);
    m.output("y", Dims{2, 3});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    Operation *r = only(*mod, "mp.reduce_sum");
    EXPECT_EQ(attrOf(r, "axes"), "array<i64: 2>");
    EXPECT_FALSE(mlir::cast<graph::ReduceSumOp>(r).getKeepdims());
    EXPECT_EQ(resultType(r), "tensor<2x3xf32>");
  }
}

TEST_F(ImportTest, ReduceSumOpset13AxesInput) {
  Model m(13);
  m.input("x", {2, 3, 4});
  m.ints("axes", {-1, 0});
  m.node("ReduceSum", {"x", "axes"}, {"y"});
  m.node("ReduceSum", {"x"}, {"all"}); // no axes: every axis
  m.output("y", Dims{1, 3, 1});
  m.output("all", Dims{1, 1, 1});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ops = bodyOps(*mod);
  ASSERT_EQ(ops.size(), 2u) << "the axes initializer must not become an mp.constant";
  EXPECT_EQ(attrOf(ops[0], "axes"), "array<i64: 0, 2>");
  EXPECT_EQ(attrOf(ops[1], "axes"), "array<i64: 0, 1, 2>");
  EXPECT_EQ(resultType(ops[0]), "tensor<1x3x1xf32>");
}

TEST_F(ImportTest, ReduceSumNoopWithEmptyAxes) {
  Model m(13);
  m.input("x", {2, 3});
  m.ints("none", {});
  auto &n = m.node("ReduceSum", {"x", "none"}, {"y"});
  attrI(n, "noop_with_empty_axes", 1);
  m.output("y", Dims{2, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{});
}

TEST_F(ImportTest, ReduceMeanOpset13AttributeVsOpset18Input) {
  for (int64_t opset : {13, 17}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {2, 3, 4});
    auto &n = m.node("ReduceMean", {"x"}, {"y"});
    attrIs(n, "axes", {1});
    m.output("y", Dims{2, 1, 4});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    EXPECT_EQ(attrOf(only(*mod, "mp.reduce_mean"), "axes"), "array<i64: 1>");
  }
  {
    Model m(18);
    m.input("x", {2, 3, 4});
    m.ints("axes", {1});
    auto &n = m.node("ReduceMean", {"x", "axes"}, {"y"});
    attrI(n, "keepdims", 0);
    m.node("ReduceMax", {"x", "axes"}, {"z"});
    m.output("y", Dims{2, 4});
    m.output("z", Dims{2, 1, 4});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    EXPECT_EQ(attrOf(only(*mod, "mp.reduce_mean"), "axes"), "array<i64: 1>");
    EXPECT_EQ(resultType(only(*mod, "mp.reduce_max")), "tensor<2x1x4xf32>");
  }
}

TEST_F(ImportTest, ReduceMaxOpset13Attribute) {
  Model m(13);
  m.input("x", {2, 3});
  auto &n = m.node("ReduceMax", {"x"}, {"y"});
  attrIs(n, "axes", {0});
  attrI(n, "keepdims", 0);
  m.output("y", Dims{3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(resultType(only(*mod, "mp.reduce_max")), "tensor<3xf32>");
}

TEST_F(ImportTest, GlobalAveragePool) {
  Model m(13);
  m.input("x", {2, 8, 4, 4});
  m.node("GlobalAveragePool", {"x"}, {"y"});
  m.output("y", Dims{2, 8, 1, 1});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  Operation *r = only(*mod, "mp.reduce_mean");
  EXPECT_EQ(attrOf(r, "axes"), "array<i64: 2, 3>");
  EXPECT_TRUE(mlir::cast<graph::ReduceMeanOp>(r).getKeepdims());
}

//===----------------------------------------------------------------------===//
// Reshape family
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, ReshapeCopiesZeroAndInfersMinusOne) {
  Model m(13);
  m.input("x", {2, 3, 4});
  m.ints("shape", {0, -1});
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y", Dims{2, 12});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(bodyOps(*mod).size(), 1u);
  EXPECT_EQ(resultType(only(*mod, "mp.reshape")), "tensor<2x12xf32>");
}

TEST_F(ImportTest, ReshapeAllowZeroKeepsZeroDims) {
  Model m(14);
  m.input("x", {0, 3});
  m.ints("shape", {3, 0});
  auto &n = m.node("Reshape", {"x", "shape"}, {"y"});
  attrI(n, "allowzero", 1);
  m.output("y", Dims{3, 0});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(resultType(only(*mod, "mp.reshape")), "tensor<3x0xf32>");
}

TEST_F(ImportTest, ReshapeShapeFromConstantNodeEmitsNoConstant) {
  Model m(13);
  m.input("x", {2, 3, 4});
  auto &c = m.node("Constant", {}, {"shape"}, "shape_const");
  attrIs(c, "value_ints", {-1, 4});
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y", Dims{6, 4});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(countOps(*mod, "mp.constant"), 0);
  EXPECT_EQ(opNames(*mod), Names{"mp.reshape"});
}

TEST_F(ImportTest, Flatten) {
  Model m(13);
  m.input("x", {2, 3, 4, 5});
  auto &a = m.node("Flatten", {"x"}, {"y0"});
  attrI(a, "axis", 0);
  m.node("Flatten", {"x"}, {"y1"});
  auto &c = m.node("Flatten", {"x"}, {"y2"});
  attrI(c, "axis", -1);
  m.output("y0", Dims{1, 120});
  m.output("y1", Dims{2, 60});
  m.output("y2", Dims{24, 5});
  ASSERT_TRUE(import(m));
}

TEST_F(ImportTest, UnsqueezeOpset11AttributeVsOpset13Input) {
  for (int64_t opset : {11, 12}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {3, 4});
    auto &n = m.node("Unsqueeze", {"x"}, {"y"});
    attrIs(n, "axes", {0, -1});
    m.output("y", Dims{1, 3, 4, 1});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    EXPECT_EQ(resultType(only(*mod, "mp.reshape")), "tensor<1x3x4x1xf32>");
  }
  {
    Model m(13);
    m.input("x", {3, 4});
    m.ints("axes", {1});
    m.node("Unsqueeze", {"x", "axes"}, {"y"});
    m.output("y", Dims{3, 1, 4});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    EXPECT_EQ(resultType(only(*mod, "mp.reshape")), "tensor<3x1x4xf32>");
  }
}

TEST_F(ImportTest, SqueezeAllOnesAndGivenAxes) {
  Model m(13);
  m.input("x", {1, 3, 1, 4});
  m.node("Squeeze", {"x"}, {"a"});
  m.ints("axes", {-2});
  m.node("Squeeze", {"x", "axes"}, {"b"});
  m.output("a", Dims{3, 4});
  m.output("b", Dims{1, 3, 4});
  ASSERT_TRUE(import(m));
}

TEST_F(ImportTest, SqueezeOpset11Attribute) {
  Model m(11);
  m.input("x", {1, 3, 1});
  auto &n = m.node("Squeeze", {"x"}, {"y"});
  attrIs(n, "axes", {0});
  m.output("y", Dims{3, 1});
  ASSERT_TRUE(import(m));
}

TEST_F(ImportTest, TransposeDefaultReversesDims) {
  Model m(13);
  m.input("x", {2, 3, 4});
  m.node("Transpose", {"x"}, {"y"});
  auto &n = m.node("Transpose", {"x"}, {"z"});
  attrIs(n, "perm", {0, 2, 1});
  m.output("y", Dims{4, 3, 2});
  m.output("z", Dims{2, 4, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(attrOf(bodyOps(*mod)[0], "perm"), "array<i64: 2, 1, 0>");
}

TEST_F(ImportTest, ConcatNegativeAxis) {
  Model m(13);
  m.input("a", {2, 3});
  m.input("b", {2, 5});
  auto &n = m.node("Concat", {"a", "b"}, {"y"});
  attrI(n, "axis", -1);
  m.output("y", Dims{2, 8});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(mlir::cast<graph::ConcatOp>(only(*mod, "mp.concat")).getAxis(), 1);
}

TEST_F(ImportTest, ShapeArithmeticOnConstantsFolds) {
  // Reshape(x, Concat(Unsqueeze(Shape(x)[0]), Unsqueeze(Shape(x)[1] *
  // Shape(x)[2]))): the exporter's way of writing [2, 12].
  Model m(13);
  m.input("x", {2, 3, 4});
  m.node("Shape", {"x"}, {"s"});
  m.initI64("i0", {}, {0});
  m.initI64("i1", {}, {1});
  m.initI64("i2", {}, {-1});
  m.ints("ax0", {0});
  m.node("Gather", {"s", "i0"}, {"d0"});
  m.node("Gather", {"s", "i1"}, {"d1"});
  m.node("Gather", {"s", "i2"}, {"d2"});
  m.node("Mul", {"d1", "d2"}, {"d12"});
  m.node("Unsqueeze", {"d0", "ax0"}, {"u0"});
  m.node("Unsqueeze", {"d12", "ax0"}, {"u1"});
  auto &cat = m.node("Concat", {"u0", "u1"}, {"shape"});
  attrI(cat, "axis", 0);
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y", Dims{2, 12});
  m.output("shape", Dims{2}, TP::INT64);
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{"mp.reshape"});
  auto ret = mlir::cast<mlir::func::ReturnOp>(mainOf(*mod).getBody().front().getTerminator());
  EXPECT_EQ(constValues(ret.getOperand(1)), (std::vector<double>{2, 12}));
}

//===----------------------------------------------------------------------===//
// Split: every opset form (a fused QKV projection is split this way)
//===----------------------------------------------------------------------===//

/// The `starts` attribute of each mp.slice, in order.
static std::vector<std::string> sliceStarts(mlir::ModuleOp m) {
  std::vector<std::string> starts;
  for (Operation *op : bodyOps(m))
    if (op->getName().getStringRef() == "mp.slice")
      starts.push_back(attrOf(op, "starts") + " " + resultType(op));
  return starts;
}

TEST_F(ImportTest, SplitAttributeSizesBeforeOpset13) {
  for (int64_t opset : {2, 11}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {2, 6});
    auto &n = m.node("Split", {"x"}, {"q", "k", "v"});
    attrI(n, "axis", -1);
    attrIs(n, "split", {1, 2, 3});
    m.output("q", Dims{2, 1});
    m.output("k", Dims{2, 2});
    m.output("v", Dims{2, 3});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    EXPECT_EQ(sliceStarts(*mod),
              (std::vector<std::string>{"array<i64: 0, 0> tensor<2x1xf32>",
                                        "array<i64: 0, 1> tensor<2x2xf32>",
                                        "array<i64: 0, 3> tensor<2x3xf32>"}));
  }
}

TEST_F(ImportTest, SplitSizesInputAndEqualParts) {
  for (int64_t opset : {1, 13}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {6, 4});
    m.ints("sizes", {4, 2});
    m.node("Split", {"x", "sizes"}, {"a", "b"});
    m.output("a", Dims{4, 4});
    m.output("b", Dims{2, 4});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    EXPECT_EQ(sliceStarts(*mod), (std::vector<std::string>{"array<i64: 0, 0> tensor<4x4xf32>",
                                                           "array<i64: 4, 0> tensor<2x4xf32>"}));
  }
  Model m(13);
  m.input("x", {2, 12});
  auto &n = m.node("Split", {"x"}, {"q", "k", "v"});
  attrI(n, "axis", 1);
  for (const char *o : {"q", "k", "v"})
    m.output(o, Dims{2, 4});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(countOps(*mod, "mp.slice"), 3);
}

TEST_F(ImportTest, SplitNumOutputsOpset18LastPartSmaller) {
  Model m(18);
  m.input("x", {2, 7});
  auto &n = m.node("Split", {"x"}, {"a", "b", "c"});
  attrI(n, "axis", 1);
  attrI(n, "num_outputs", 3);
  for (const char *o : {"a", "b", "c"})
    m.output(o);
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(sliceStarts(*mod), (std::vector<std::string>{"array<i64: 0, 0> tensor<2x3xf32>",
                                                         "array<i64: 0, 3> tensor<2x3xf32>",
                                                         "array<i64: 0, 6> tensor<2x1xf32>"}));
}

TEST_F(ImportTest, SplitOfOneOutputIsTheInput) {
  Model m(13);
  m.input("x", {2, 4});
  m.node("Split", {"x"}, {"y"});
  m.output("y", Dims{2, 4});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(countOps(*mod, "mp.slice"), 0);
}

// Shape arithmetic on constants stays compile-time known.
TEST_F(ImportTest, SplitOfIntegerConstantFolds) {
  Model m(13);
  m.input("x", {2, 3});
  m.ints("shape", {2, 3, 5});
  m.ints("two", {2, 1});
  m.node("Split", {"shape", "two"}, {"batch", "rest"});
  m.node("Reshape", {"x", "batch"}, {"y"});
  m.output("y", Dims{2, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(countOps(*mod, "mp.slice"), 0);
}

TEST_F(ImportTest, SplitErrors) {
  struct Case {
    int64_t opset;
    int64_t dim;
    std::vector<int64_t> sizes; // input #1 when not empty
    int64_t numOutputs;         // attribute when > 0
    const char *error;
  };
  const Case cases[] = {
      {13, 7, {}, 0, "cannot split dim 7 into 3 equal parts"},
      {13, 6, {1, 2, 4}, 0, "split sizes add up to 7, the axis has 6"},
      {13, 6, {1, 5}, 0, "'split' has 2 sizes, the node has 3 outputs"},
      {13, 6, {-1, 4, 3}, 0, "split size -1 is outside [0, 6]"},
      {18, 6, {}, 0, "needs the 'split' input or the 'num_outputs' attribute from opset 18"},
      {18, 6, {2, 2, 2}, 3, "takes the 'split' input or the 'num_outputs' attribute, not both"},
      {18, 6, {}, 2, "attribute 'num_outputs' is 2, the node has 3 outputs"},
      {18, 2, {}, 3, ""}, // [1, 1, 0]: valid
  };
  for (const Case &k : cases) {
    SCOPED_TRACE(k.error);
    Model m(k.opset);
    m.input("x", {2, k.dim});
    std::vector<std::string> inputs = {"x"};
    if (!k.sizes.empty()) {
      m.ints("sizes", k.sizes);
      inputs.push_back("sizes");
    }
    auto &n = m.node("Split", inputs, {"a", "b", "c"});
    attrI(n, "axis", 1);
    if (k.numOutputs > 0)
      attrI(n, "num_outputs", k.numOutputs);
    for (const char *o : {"a", "b", "c"})
      m.output(o);
    if (*k.error)
      EXPECT_THAT(importError(m), HasSubstr(k.error));
    else
      EXPECT_TRUE(import(m));
  }
}

//===----------------------------------------------------------------------===//
// Slice: opset 9 vs 13
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, SliceOpset9Attributes) {
  for (int64_t opset : {1, 9}) {
    SCOPED_TRACE("opset " + std::to_string(opset));
    Model m(opset);
    m.input("x", {4, 6});
    auto &n = m.node("Slice", {"x"}, {"y"});
    attrIs(n, "starts", {1});
    attrIs(n, "ends", {1000}); // clamped to the dim
    attrIs(n, "axes", {1});
    m.output("y", Dims{4, 5});
    auto mod = import(m);
    ASSERT_TRUE(mod);
    Operation *s = only(*mod, "mp.slice");
    EXPECT_EQ(attrOf(s, "starts"), "array<i64: 0, 1>");
    EXPECT_EQ(attrOf(s, "steps"), "array<i64: 1, 1>");
  }
}

TEST_F(ImportTest, SliceOpset10TakesInputs) {
  Model m(10);
  m.input("x", {4, 6});
  m.ints("s", {-3});
  m.ints("e", {-1});
  m.ints("a", {1});
  m.node("Slice", {"x", "s", "e", "a"}, {"y"});
  m.output("y", Dims{4, 2});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(attrOf(only(*mod, "mp.slice"), "starts"), "array<i64: 0, 3>");
}

TEST_F(ImportTest, SliceOpset13NegativeStepFlipsWithInt64MinEnd) {
  Model m(13);
  m.input("x", {4, 10});
  m.ints("starts", {-1});
  m.ints("ends", {kI64Min});
  m.ints("axes", {-1});
  m.ints("steps", {-1});
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  m.output("y", Dims{4, 10});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  Operation *s = only(*mod, "mp.slice");
  EXPECT_EQ(attrOf(s, "starts"), "array<i64: 0, 9>");
  EXPECT_EQ(attrOf(s, "steps"), "array<i64: 1, -1>");
}

TEST_F(ImportTest, SliceOpset13StepsAndClamping) {
  Model m(13);
  m.input("x", {4, 10});
  // [1, INT64_MAX) step 3 -> 1, 4, 7
  m.ints("s0", {1});
  m.ints("e0", {kI64Max});
  m.ints("a1", {1});
  m.ints("st3", {3});
  m.node("Slice", {"x", "s0", "e0", "a1", "st3"}, {"y0"});
  // [8, 1) step -2 -> 8, 6, 4, 2
  m.ints("s1", {8});
  m.ints("e1", {1});
  m.ints("stm2", {-2});
  m.node("Slice", {"x", "s1", "e1", "a1", "stm2"}, {"y1"});
  // start INT64_MAX with step -1 clamps to 9; end -100 clamps to -1 -> all
  m.ints("s2", {kI64Max});
  m.ints("e2", {-100});
  m.ints("stm1", {-1});
  m.node("Slice", {"x", "s2", "e2", "a1", "stm1"}, {"y2"});
  // start past the end: empty
  m.ints("s3", {20});
  m.ints("e3", {30});
  m.node("Slice", {"x", "s3", "e3", "a1"}, {"y3"});
  // no axes: the leading axes, steps default 1
  m.ints("s4", {1, 2});
  m.ints("e4", {3, -3});
  m.node("Slice", {"x", "s4", "e4"}, {"y4"});
  m.output("y0", Dims{4, 3});
  m.output("y1", Dims{4, 4});
  m.output("y2", Dims{4, 10});
  m.output("y3", Dims{4, 0});
  m.output("y4", Dims{2, 5});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ops = bodyOps(*mod);
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(attrOf(ops[0], "starts"), "array<i64: 0, 1>");
  EXPECT_EQ(attrOf(ops[0], "steps"), "array<i64: 1, 3>");
  EXPECT_EQ(attrOf(ops[1], "starts"), "array<i64: 0, 8>");
  EXPECT_EQ(attrOf(ops[1], "steps"), "array<i64: 1, -2>");
  EXPECT_EQ(attrOf(ops[2], "starts"), "array<i64: 0, 9>");
  EXPECT_EQ(attrOf(ops[4], "starts"), "array<i64: 1, 2>");
}

TEST_F(ImportTest, SliceInt32InputsAndIdentitySlice) {
  Model m(13);
  m.input("x", {4, 10});
  TP *s = m.g->add_initializer();
  s->set_name("starts32");
  s->set_data_type(TP::INT32);
  s->add_dims(1);
  s->add_int32_data(0);
  m.ints("ends", {kI64Max});
  m.node("Slice", {"x", "starts32", "ends"}, {"y"});
  m.output("y", Dims{4, 10});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{}) << "a slice that keeps everything is the input itself";
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, GatherEmbeddingAndAxis) {
  Model m(13);
  m.initIota("table", {5, 4});
  m.input("ids", {2, 3}, TP::INT64);
  m.node("Gather", {"table", "ids"}, {"emb"});
  m.input("x", {2, 5});
  TP *idx = m.g->add_initializer();
  idx->set_name("idx32");
  idx->set_data_type(TP::INT32);
  idx->add_dims(3);
  for (int v : {4, 0, -1})
    idx->add_int32_data(v);
  auto &n = m.node("Gather", {"x", "idx32"}, {"cols"});
  attrI(n, "axis", -1);
  m.output("emb", Dims{2, 3, 4});
  m.output("cols", Dims{2, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ops = bodyOps(*mod);
  std::vector<std::string> types;
  for (Operation *op : ops)
    if (auto g = mlir::dyn_cast<graph::GatherOp>(op)) {
      types.push_back(resultType(op) + " axis " + std::to_string(g.getAxis()));
    }
  EXPECT_EQ(types, (Names{"tensor<2x3x4xf32> axis 0", "tensor<2x3xf32> axis 1"}));
}

//===----------------------------------------------------------------------===//
// Conv and pooling
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, ConvWithBiasAndPads) {
  Model m(13);
  m.input("x", {1, 3, 16, 16});
  m.initIota("w", {8, 3, 3, 3});
  m.initIota("b", {8});
  auto &n = m.node("Conv", {"x", "w", "b"}, {"y"}, "conv");
  attrIs(n, "kernel_shape", {3, 3});
  attrIs(n, "pads", {1, 1, 1, 1});
  m.output("y", Dims{1, 8, 16, 16});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto conv = mlir::cast<graph::Conv2dOp>(only(*mod, "mp.conv2d"));
  EXPECT_TRUE(conv.getBias());
  EXPECT_EQ(attrOf(conv, "pads"), "array<i64: 1, 1, 1, 1>");
  EXPECT_EQ(attrOf(conv, "strides"), "array<i64: 1, 1>");
  EXPECT_EQ(attrOf(conv, "dilations"), "array<i64: 1, 1>");
  EXPECT_EQ(conv.getGroups(), 1);
}

TEST_F(ImportTest, ConvAutoPadSameUpperAndLower) {
  Model m(13);
  m.input("x", {1, 3, 16, 16});
  m.initIota("w", {8, 3, 3, 3});
  auto &u = m.node("Conv", {"x", "w"}, {"up"});
  attrS(u, "auto_pad", "SAME_UPPER");
  attrIs(u, "strides", {2, 2});
  auto &l = m.node("Conv", {"x", "w"}, {"low"});
  attrS(l, "auto_pad", "SAME_LOWER");
  attrIs(l, "strides", {2, 2});
  m.input("x15", {1, 3, 15, 15});
  m.initIota("w4", {8, 3, 4, 4});
  auto &u4 = m.node("Conv", {"x15", "w4"}, {"up4"});
  attrS(u4, "auto_pad", "SAME_UPPER");
  auto &v = m.node("Conv", {"x15", "w4"}, {"valid"});
  attrS(v, "auto_pad", "VALID");
  m.output("up", Dims{1, 8, 8, 8});
  m.output("low", Dims{1, 8, 8, 8});
  m.output("up4", Dims{1, 8, 15, 15});
  m.output("valid", Dims{1, 8, 12, 12});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  std::vector<std::string> pads;
  for (Operation *op : bodyOps(*mod))
    if (mlir::isa<graph::Conv2dOp>(op))
      pads.push_back(attrOf(op, "pads"));
  // Total padding 1 (16 -> 8 with stride 2, kernel 3): the odd element goes
  // last for SAME_UPPER and first for SAME_LOWER; 3 for kernel 4 on 15.
  EXPECT_EQ(pads, (Names{"array<i64: 0, 0, 1, 1>", "array<i64: 1, 1, 0, 0>",
                         "array<i64: 1, 1, 2, 2>", "array<i64: 0, 0, 0, 0>"}));
}

TEST_F(ImportTest, ConvGroupedDilated) {
  Model m(13);
  m.input("x", {1, 4, 9, 9});
  m.initIota("w", {6, 2, 3, 3});
  auto &n = m.node("Conv", {"x", "w"}, {"y"});
  attrI(n, "group", 2);
  attrIs(n, "dilations", {2, 2});
  m.output("y", Dims{1, 6, 5, 5});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto conv = mlir::cast<graph::Conv2dOp>(only(*mod, "mp.conv2d"));
  EXPECT_EQ(conv.getGroups(), 2);
  EXPECT_EQ(attrOf(conv, "dilations"), "array<i64: 2, 2>");
}

TEST_F(ImportTest, MaxPoolCeilModeAndDilations) {
  Model m(13);
  m.input("x", {1, 2, 5, 5});
  auto &c = m.node("MaxPool", {"x"}, {"ceil"});
  attrIs(c, "kernel_shape", {2, 2});
  attrIs(c, "strides", {2, 2});
  attrI(c, "ceil_mode", 1);
  auto &f = m.node("MaxPool", {"x"}, {"floor"});
  attrIs(f, "kernel_shape", {2, 2});
  attrIs(f, "strides", {2, 2});
  auto &d = m.node("MaxPool", {"x"}, {"dil", ""});
  attrIs(d, "kernel_shape", {2, 2});
  attrIs(d, "dilations", {2, 2});
  m.output("ceil", Dims{1, 2, 3, 3});
  m.output("floor", Dims{1, 2, 2, 2});
  m.output("dil", Dims{1, 2, 3, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ops = bodyOps(*mod);
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_TRUE(mlir::cast<graph::MaxPool2dOp>(ops[0]).getCeilMode());
  EXPECT_FALSE(mlir::cast<graph::MaxPool2dOp>(ops[1]).getCeilMode());
  EXPECT_EQ(attrOf(ops[1], "dilations"), "<none>");
  EXPECT_EQ(attrOf(ops[2], "dilations"), "array<i64: 2, 2>");
}

TEST_F(ImportTest, AveragePoolCountIncludePadCeilAndSamePadding) {
  Model m(13);
  m.input("x", {1, 2, 6, 6});
  auto &a = m.node("AveragePool", {"x"}, {"ceil"});
  attrIs(a, "kernel_shape", {3, 3});
  attrIs(a, "strides", {2, 2});
  attrIs(a, "pads", {1, 1, 1, 1});
  attrI(a, "count_include_pad", 1);
  attrI(a, "ceil_mode", 1);
  auto &b = m.node("AveragePool", {"x"}, {"floor"});
  attrIs(b, "kernel_shape", {3, 3});
  attrIs(b, "strides", {2, 2});
  attrIs(b, "pads", {1, 1, 1, 1});
  auto &s = m.node("AveragePool", {"x"}, {"same"});
  attrIs(s, "kernel_shape", {3, 3});
  attrIs(s, "strides", {2, 2});
  attrS(s, "auto_pad", "SAME_UPPER");
  m.output("ceil", Dims{1, 2, 4, 4});
  m.output("floor", Dims{1, 2, 3, 3});
  m.output("same", Dims{1, 2, 3, 3});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ops = bodyOps(*mod);
  ASSERT_EQ(ops.size(), 3u);
  auto ceil = mlir::cast<graph::AvgPool2dOp>(ops[0]);
  EXPECT_TRUE(ceil.getCeilMode());
  EXPECT_TRUE(ceil.getCountIncludePad());
  EXPECT_FALSE(mlir::cast<graph::AvgPool2dOp>(ops[1]).getCountIncludePad());
  EXPECT_EQ(attrOf(ops[2], "pads"), "array<i64: 0, 0, 1, 1>");
}

//===----------------------------------------------------------------------===//
// Cast, Constant, Dropout
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, CastRuntimeAndNoOp) {
  Model m(13);
  m.input("ids", {3}, TP::INT64);
  m.input("x", {3});
  auto &a = m.node("Cast", {"ids"}, {"f"});
  attrI(a, "to", TP::FLOAT);
  auto &b = m.node("Cast", {"x"}, {"same"});
  attrI(b, "to", TP::FLOAT);
  auto &c = m.node("Cast", {"x"}, {"mask"});
  attrI(c, "to", TP::BOOL);
  m.output("f", Dims{3});
  m.output("same", Dims{3});
  m.output("mask", Dims{3}, TP::BOOL);
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), (Names{"mp.cast", "mp.cast"}));
  auto ops = bodyOps(*mod);
  EXPECT_EQ(resultType(ops[0]), "tensor<3xf32>");
  EXPECT_EQ(resultType(ops[1]), "tensor<3xi1>");
}

TEST_F(ImportTest, CastOfConstantsFolds) {
  Model m(13);
  m.input("x", {12});
  auto &k = m.node("Constant", {}, {"fshape"});
  attrFs(k, "value_floats", {3.9f, -1.7f});
  auto &c = m.node("Cast", {"fshape"}, {"shape"});
  attrI(c, "to", TP::INT64); // truncates toward zero: [3, -1]
  m.node("Reshape", {"x", "shape"}, {"y"});
  auto &ki = m.node("Constant", {}, {"ints"});
  attrIs(ki, "value_ints", {0, 5});
  auto &cb = m.node("Cast", {"ints"}, {"bools"});
  attrI(cb, "to", TP::BOOL);
  m.output("y", Dims{3, 4});
  m.output("bools", Dims{2}, TP::BOOL);
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{"mp.reshape"});
  auto ret = mlir::cast<mlir::func::ReturnOp>(mainOf(*mod).getBody().front().getTerminator());
  EXPECT_EQ(typeOf(ret.getOperand(1)), "tensor<2xi1>");
  EXPECT_EQ(constValues(ret.getOperand(1)), (std::vector<double>{0, 1}));
}

TEST_F(ImportTest, ConstantForms) {
  Model m(13);
  auto &a = m.node("Constant", {}, {"f"}, "cf");
  attrF(a, "value_float", 0.25f);
  auto &b = m.node("Constant", {}, {"i"});
  attrI(b, "value_int", -7);
  auto &c = m.node("Constant", {}, {"t"});
  TP *t = attrT(c, "value");
  t->set_data_type(TP::FLOAT);
  t->add_dims(2);
  t->add_float_data(1.0f);
  t->add_float_data(2.0f);
  m.output("f", Dims{});
  m.output("i", Dims{}, TP::INT64);
  m.output("t", Dims{2});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  auto ret = mlir::cast<mlir::func::ReturnOp>(mainOf(*mod).getBody().front().getTerminator());
  EXPECT_EQ(typeOf(ret.getOperand(0)), "tensor<f32>");
  EXPECT_EQ(constValues(ret.getOperand(0)), std::vector<double>{0.25});
  EXPECT_EQ(locName(ret.getOperand(0).getDefiningOp()), "cf");
  EXPECT_EQ(constValues(ret.getOperand(1)), std::vector<double>{-7});
  EXPECT_EQ(constValues(ret.getOperand(2)), (std::vector<double>{1, 2}));
}

TEST_F(ImportTest, DropoutIsIdentityInInference) {
  Model m(13);
  m.input("x", {4});
  m.initF32("ratio", {}, {0.1f});
  TP *mode = m.g->add_initializer();
  mode->set_name("training");
  mode->set_data_type(TP::BOOL);
  mode->add_int32_data(0);
  m.node("Dropout", {"x", "ratio", "training"}, {"y", "mask"});
  m.output("y");
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(opNames(*mod), Names{});
}

} // namespace
