//===- ImportFoldTest.cpp - the importer's compile-time evaluator ---------===//
//
// evaluateNode (compiler/Import/OnnxFold.cpp) called directly on constants:
// ONNX semantics of every op it folds, including the ops whose import rows
// other families own (Equal, Where on integers, Tile, Trilu, CumSum,
// ArgMax...), its limits and its errors. Expected values follow the ONNX
// specification and onnxruntime (integer Div truncates toward zero).
//
//===----------------------------------------------------------------------===//
#include "ImportTestUtil.h"

#include "compiler/Import/OnnxImporterImpl.h"

#include <limits>

using namespace mixprec;
using namespace mixprec::test;
using namespace mixprec::compiler::onnx_import;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

class FoldTest : public ImportTest {
protected:
  mlir::Type i64() { return mlir::IntegerType::get(&ctx, 64); }
  mlir::Type i32() { return mlir::IntegerType::get(&ctx, 32); }
  mlir::Type i1() { return mlir::IntegerType::get(&ctx, 1); }

  mlir::DenseElementsAttr I(const Dims &shape, const std::vector<int64_t> &v) {
    return makeIntAttr(shape, i64(), v);
  }
  mlir::DenseElementsAttr I32(const Dims &shape, const std::vector<int64_t> &v) {
    return makeIntAttr(shape, i32(), v);
  }
  mlir::DenseElementsAttr B(const Dims &shape, const std::vector<int64_t> &v) {
    return makeIntAttr(shape, i1(), v);
  }
  mlir::DenseElementsAttr F(const Dims &shape, const std::vector<float> &v) {
    return makeF32Attr(ctx, shape, v);
  }

  /// A node of `op` with attributes set by `attrs`.
  onnx::NodeProto node(const std::string &op,
                       const std::function<void(onnx::NodeProto &)> &attrs = nullptr) {
    onnx::NodeProto n;
    n.set_op_type(op);
    n.add_output("y");
    if (attrs)
      attrs(n);
    return n;
  }

  FoldResult eval(const onnx::NodeProto &n, std::vector<mlir::DenseElementsAttr> inputs,
                  int64_t opset = 18, const FoldLimits &limits = {}) {
    return evaluateNode(ctx, n, opset, inputs, limits);
  }

  /// The one output of a fold that must succeed.
  mlir::DenseElementsAttr folded(const onnx::NodeProto &n,
                                 std::vector<mlir::DenseElementsAttr> inputs,
                                 int64_t opset = 18) {
    FoldResult r = eval(n, inputs, opset);
    EXPECT_EQ(r.status, FoldResult::Folded) << n.op_type() << ": " << r.error;
    if (r.status != FoldResult::Folded || r.outputs.size() != 1)
      return {};
    return r.outputs[0];
  }

  std::vector<int64_t> ints(const onnx::NodeProto &n, std::vector<mlir::DenseElementsAttr> in,
                            int64_t opset = 18) {
    mlir::DenseElementsAttr a = folded(n, in, opset);
    if (!a)
      return {};
    auto v = intValues(a);
    return std::vector<int64_t>(v.begin(), v.end());
  }
  std::vector<float> floats(const onnx::NodeProto &n, std::vector<mlir::DenseElementsAttr> in,
                            int64_t opset = 18) {
    mlir::DenseElementsAttr a = folded(n, in, opset);
    if (!a)
      return {};
    auto v = floatValues(a);
    return std::vector<float>(v.begin(), v.end());
  }
  std::vector<int64_t> shape(const onnx::NodeProto &n, std::vector<mlir::DenseElementsAttr> in,
                             int64_t opset = 18) {
    mlir::DenseElementsAttr a = folded(n, in, opset);
    if (!a)
      return {};
    auto s = a.getType().getShape();
    return std::vector<int64_t>(s.begin(), s.end());
  }
  std::string error(const onnx::NodeProto &n, std::vector<mlir::DenseElementsAttr> in,
                    int64_t opset = 18) {
    FoldResult r = eval(n, in, opset);
    EXPECT_EQ(r.status, FoldResult::Failed) << n.op_type();
    return r.error;
  }
};

} // namespace

TEST_F(FoldTest, IntegerDivTruncatesTowardZeroAsOnnxruntime) {
  EXPECT_THAT(ints(node("Div"), {I({4}, {-7, 7, -7, kMin64}), I({4}, {2, -2, -2, -1})}),
              ElementsAre(-3, -3, 3, kMin64));
  EXPECT_THAT(error(node("Div"), {I({2}, {1, 2}), I({}, {0})}),
              HasSubstr("integer division by zero"));
  EXPECT_THAT(floats(node("Div"), {F({2}, {1, -1}), F({}, {0})}),
              ElementsAre(std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()));
}

TEST_F(FoldTest, ModFollowsTheFmodAttribute) {
  auto a = I({4}, {-7, 7, -7, 7}), b = I({4}, {3, -3, -3, 3});
  EXPECT_THAT(ints(node("Mod"), {a, b}), ElementsAre(2, -2, -1, 1));
  EXPECT_THAT(ints(node("Mod", [](auto &n) { attrI(n, "fmod", 1); }), {a, b}),
              ElementsAre(-1, 1, -1, 1));
  EXPECT_THAT(floats(node("Mod", [](auto &n) { attrI(n, "fmod", 1); }),
                     {F({2}, {-7.5f, 7.5f}), F({}, {2})}),
              ElementsAre(-1.5f, 1.5f));
  // fmod=0 on floats: numpy.mod, the divisor's sign (as the run time).
  EXPECT_THAT(floats(node("Mod"), {F({2}, {-7.5f, 7.5f}), F({}, {-2})}),
              ElementsAre(-1.5f, -0.5f));
  EXPECT_THAT(error(node("Mod"), {a, I({}, {0})}), HasSubstr("modulo by zero"));
}

TEST_F(FoldTest, ArithmeticBroadcastsAndWrapsLikeTheRunTime) {
  mlir::DenseElementsAttr r =
      folded(node("Add"), {I32({1}, {2147483647}), I32({2, 1}, {1, 2})});
  ASSERT_TRUE(r);
  EXPECT_EQ(r.getElementType(), i32());
  EXPECT_THAT(intValues(r), ElementsAre(-2147483648LL, -2147483647LL));
  EXPECT_THAT(ints(node("Mul"), {I({2, 1}, {2, 3}), I({3}, {1, 10, 100})}),
              ElementsAre(2, 20, 200, 3, 30, 300));
  EXPECT_THAT(ints(node("Sub"), {I({}, {kMin64}), I({}, {1})}), ElementsAre(kMax64));
  EXPECT_THAT(floats(node("Add"), {F({2}, {0.5f, 1.5f}), F({}, {1})}), ElementsAre(1.5f, 2.5f));
  EXPECT_THAT(error(node("Add"), {I({2}, {1, 2}), I({3}, {1, 2, 3})}),
              HasSubstr("do not broadcast"));
  EXPECT_THAT(error(node("Add"), {I({1}, {1}), I32({1}, {1})}),
              HasSubstr("operand element types differ: INT64 and INT32"));
  EXPECT_THAT(ints(node("Pow"), {I({3}, {2, -3, 5}), I({}, {3})}), ElementsAre(8, -27, 125));
  EXPECT_THAT(floats(node("Pow"), {F({2}, {4, 9}), I({}, {2})}), ElementsAre(16, 81));
}

TEST_F(FoldTest, UnaryOps) {
  EXPECT_THAT(ints(node("Neg"), {I({2}, {5, kMin64})}), ElementsAre(-5, kMin64));
  EXPECT_THAT(ints(node("Abs"), {I({2}, {-5, 4})}), ElementsAre(5, 4));
  EXPECT_THAT(ints(node("Sign"), {I({3}, {-5, 0, 9})}), ElementsAre(-1, 0, 1));
  EXPECT_THAT(floats(node("Sqrt"), {F({2}, {4, 2.25f})}), ElementsAre(2, 1.5f));
  EXPECT_THAT(floats(node("Reciprocal"), {F({1}, {4})}), ElementsAre(0.25f));
  EXPECT_THAT(floats(node("Floor"), {F({2}, {-1.5f, 1.5f})}), ElementsAre(-2, 1));
  EXPECT_THAT(floats(node("Ceil"), {F({2}, {-1.5f, 1.5f})}), ElementsAre(-1, 2));
  EXPECT_THAT(ints(node("IsNaN"), {F({2}, {std::nanf(""), 1})}), ElementsAre(1, 0));
  EXPECT_THAT(error(node("Sqrt"), {I({1}, {4})}), HasSubstr("does not take"));
}

TEST_F(FoldTest, ComparisonsAndLogic) {
  auto a = I({3}, {1, 2, 3}), b = I({2, 1}, {2, 3});
  EXPECT_THAT(ints(node("Equal"), {a, b}), ElementsAre(0, 1, 0, 0, 0, 1));
  EXPECT_THAT(ints(node("Less"), {a, b}), ElementsAre(1, 0, 0, 1, 1, 0));
  EXPECT_THAT(ints(node("LessOrEqual"), {a, b}), ElementsAre(1, 1, 0, 1, 1, 1));
  EXPECT_THAT(ints(node("Greater"), {a, b}), ElementsAre(0, 0, 1, 0, 0, 0));
  EXPECT_THAT(ints(node("GreaterOrEqual"), {a, b}), ElementsAre(0, 1, 1, 0, 0, 1));
  float nan = std::nanf("");
  EXPECT_THAT(ints(node("Equal"), {F({2}, {nan, 1}), F({2}, {nan, 1})}), ElementsAre(0, 1));
  auto p = B({4}, {0, 0, 1, 1}), q = B({4}, {0, 1, 0, 1});
  EXPECT_THAT(ints(node("And"), {p, q}), ElementsAre(0, 0, 0, 1));
  EXPECT_THAT(ints(node("Or"), {p, q}), ElementsAre(0, 1, 1, 1));
  EXPECT_THAT(ints(node("Xor"), {p, q}), ElementsAre(0, 1, 1, 0));
  EXPECT_THAT(ints(node("Not"), {p}), ElementsAre(1, 1, 0, 0));
  EXPECT_THAT(error(node("And"), {a, a}), HasSubstr("must be BOOL, got INT64"));
}

TEST_F(FoldTest, WhereMinMaxSumMean) {
  EXPECT_THAT(ints(node("Where"), {B({2, 1}, {1, 0}), I({2}, {1, 2}), I({}, {-1})}),
              ElementsAre(1, 2, -1, -1));
  float nan = std::nanf("");
  std::vector<float> mx = floats(node("Max"), {F({3}, {1, nan, 5}), F({3}, {2, 0, nan})});
  ASSERT_EQ(mx.size(), 3u);
  EXPECT_EQ(mx[0], 2);
  EXPECT_TRUE(std::isnan(mx[1]) && std::isnan(mx[2]));
  EXPECT_THAT(ints(node("Min"), {I({2}, {3, -4}), I({}, {0}), I({2, 1}, {1, -9})}),
              ElementsAre(0, -4, -9, -9));
  EXPECT_THAT(ints(node("Sum"), {I({2}, {1, 2}), I({2}, {10, 20}), I({}, {100})}),
              ElementsAre(111, 122));
  EXPECT_THAT(floats(node("Mean"), {F({2}, {1, 2}), F({2}, {3, 6})}), ElementsAre(2, 4));
  EXPECT_THAT(error(node("Mean"), {I({1}, {1}), I({1}, {2})}), HasSubstr("FLOAT"));
}

TEST_F(FoldTest, CastTruncatesSaturatesAndTestsNonZero) {
  float nan = std::nanf("");
  EXPECT_THAT(ints(node("Cast", [](auto &n) { attrI(n, "to", TP::INT64); }),
                   {F({4}, {-2.7f, 2.7f, nan, 1e30f})}),
              ElementsAre(-2, 2, 0, kMax64));
  EXPECT_THAT(ints(node("Cast", [](auto &n) { attrI(n, "to", TP::BOOL); }),
                   {I({3}, {0, -3, 2})}),
              ElementsAre(0, 1, 1));
  EXPECT_THAT(floats(node("Cast", [](auto &n) { attrI(n, "to", TP::FLOAT); }), {I({1}, {7})}),
              ElementsAre(7));
  // A target the importer does not hold is the converter's to refuse.
  EXPECT_EQ(eval(node("Cast", [](auto &n) { attrI(n, "to", TP::FLOAT16); }), {F({1}, {1})})
                .status,
            FoldResult::NotFolded);
}

TEST_F(FoldTest, ShapeSizeAndReshapes) {
  auto x = I({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(ints(node("Shape"), {x}), ElementsAre(2, 3));
  EXPECT_THAT(ints(node("Shape", [](auto &n) { attrI(n, "start", -1); }), {x}), ElementsAre(3));
  EXPECT_THAT(ints(node("Size"), {x}), ElementsAre(6));
  EXPECT_THAT(shape(node("Reshape"), {x, I({2}, {0, -1})}), ElementsAre(2, 3));
  EXPECT_THAT(shape(node("Reshape"), {x, I({3}, {3, 1, -1})}), ElementsAre(3, 1, 2));
  EXPECT_THAT(error(node("Reshape"), {x, I({1}, {4})}), HasSubstr("cannot reshape"));
  EXPECT_THAT(shape(node("Flatten", [](auto &n) { attrI(n, "axis", 0); }), {x}),
              ElementsAre(1, 6));
  EXPECT_THAT(shape(node("Unsqueeze"), {x, I({2}, {0, -1})}), ElementsAre(1, 2, 3, 1));
  EXPECT_THAT(shape(node("Unsqueeze", [](auto &n) { attrIs(n, "axes", {1}); }), {x}, 11),
              ElementsAre(2, 1, 3));
  EXPECT_THAT(shape(node("Squeeze"), {I({1, 3, 1}, {1, 2, 3})}), ElementsAre(3));
  EXPECT_THAT(shape(node("Squeeze"), {I({1, 3, 1}, {1, 2, 3}), I({1}, {-1})}),
              ElementsAre(1, 3));
  EXPECT_THAT(error(node("Squeeze"), {x, I({1}, {0})}), HasSubstr("cannot squeeze axis 0"));
  EXPECT_THAT(ints(node("Transpose"), {x}), ElementsAre(1, 4, 2, 5, 3, 6));
  EXPECT_THAT(ints(node("Identity"), {x}), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST_F(FoldTest, ConcatSliceGather) {
  EXPECT_THAT(ints(node("Concat", [](auto &n) { attrI(n, "axis", 0); }),
                   {I({1}, {2}), I({2}, {5, 7}), I({0}, {})}),
              ElementsAre(2, 5, 7));
  EXPECT_THAT(ints(node("Concat", [](auto &n) { attrI(n, "axis", -1); }),
                   {I({2, 1}, {1, 2}), I({2, 2}, {3, 4, 5, 6})}),
              ElementsAre(1, 3, 4, 2, 5, 6));
  EXPECT_THAT(error(node("Concat"), {I({1}, {2}), I({1}, {3})}),
              HasSubstr("attribute 'axis' is required"));
  EXPECT_THAT(ints(node("Concat"), {I({1, 1}, {2}), I({1, 1}, {3})}, 3), ElementsAre(2, 3));
  auto r = I({6}, {0, 1, 2, 3, 4, 5});
  EXPECT_THAT(ints(node("Slice"), {r, I({1}, {-1}), I({1}, {kMin64}), I({1}, {0}), I({1}, {-2})}),
              ElementsAre(5, 3, 1));
  EXPECT_THAT(ints(node("Slice"), {r, I({1}, {1}), I({1}, {kMax64})}), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_THAT(error(node("Slice"), {r, I({1}, {0}), I({1}, {2}), I({1}, {0}), I({1}, {0})}),
              HasSubstr("step of axis 0 is zero"));
  EXPECT_THAT(ints(node("Gather", [](auto &n) { attrI(n, "axis", 1); }),
                   {I({2, 3}, {1, 2, 3, 4, 5, 6}), I({2}, {-1, 0})}),
              ElementsAre(3, 1, 6, 4));
  EXPECT_THAT(ints(node("Gather"), {I({3}, {7, 8, 9}), I32({}, {1})}), ElementsAre(8));
  EXPECT_THAT(error(node("Gather"), {I({3}, {7, 8, 9}), I({1}, {3})}),
              HasSubstr("index 3 is out of range for axis 0 of size 3"));
}

TEST_F(FoldTest, ExpandTileConstantOfShapeRange) {
  EXPECT_THAT(shape(node("Expand"), {I({3, 1}, {1, 2, 3}), I({3}, {2, 1, 4})}),
              ElementsAre(2, 3, 4));
  EXPECT_THAT(ints(node("Expand"), {I({2, 1}, {1, 2}), I({1}, {3})}),
              ElementsAre(1, 1, 1, 2, 2, 2));
  EXPECT_THAT(error(node("Expand"), {I({2}, {1, 2}), I({1}, {3})}), HasSubstr("cannot expand"));
  EXPECT_THAT(error(node("Expand"), {I({1}, {1}), I({1}, {-2})}),
              HasSubstr("negative dimension"));
  EXPECT_THAT(ints(node("Tile"), {I({2, 1}, {1, 2}), I({2}, {2, 3})}),
              ElementsAre(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2));
  EXPECT_THAT(error(node("Tile"), {I({1}, {1}), I({1}, {-1})}), HasSubstr("negative"));

  EXPECT_THAT(floats(node("ConstantOfShape"), {I({2}, {1, 2})}), ElementsAre(0, 0));
  auto seven = [](onnx::NodeProto &n) {
    TP *t = attrT(n, "value");
    t->set_data_type(TP::INT64);
    t->add_dims(1);
    t->add_int64_data(7);
  };
  mlir::DenseElementsAttr c = folded(node("ConstantOfShape", seven), {I({0}, {})});
  ASSERT_TRUE(c);
  EXPECT_EQ(c.getType().getRank(), 0);
  EXPECT_THAT(intValues(c), ElementsAre(7));
  auto two = [](onnx::NodeProto &n) {
    TP *t = attrT(n, "value");
    t->set_data_type(TP::FLOAT);
    t->add_dims(2);
    t->add_float_data(1);
    t->add_float_data(2);
  };
  EXPECT_THAT(error(node("ConstantOfShape", two), {I({1}, {3})}),
              HasSubstr("attribute 'value' must hold one element, got shape [2]"));
  EXPECT_THAT(error(node("ConstantOfShape"), {I({2}, {2, -1})}),
              HasSubstr("negative dimension"));
  // Past the limit, nothing is allocated: the fold is declined.
  EXPECT_EQ(eval(node("ConstantOfShape"), {I({3}, {1 << 20, 1 << 20, 1 << 20})}).status,
            FoldResult::NotFolded);

  EXPECT_THAT(ints(node("Range"), {I({}, {10}), I({}, {0}), I({}, {-3})}),
              ElementsAre(10, 7, 4, 1));
  EXPECT_THAT(ints(node("Range"), {I({}, {0}), I({}, {-5}), I({}, {1})}), ElementsAre());
  EXPECT_THAT(floats(node("Range"), {F({}, {1}), F({}, {2}), F({}, {0.25f})}),
              ElementsAre(1, 1.25f, 1.5f, 1.75f));
  // As onnxruntime: the count in double from each bound (999, where FP32's
  // 100 - 0.1 would give 1000), the values accumulated in FP32 (start + i *
  // delta would differ). And a count where FP32 arithmetic gives 82.
  std::vector<float> tenths = floats(node("Range"), {F({}, {0.1f}), F({}, {100}), F({}, {0.1f})});
  ASSERT_EQ(tenths.size(), 999u);
  EXPECT_EQ(floats(node("Range"), {F({}, {-162.24919f}), F({}, {-0.15641023f}),
                                   F({}, {1.9767412f})})
                .size(),
            83u);
  float acc = 0.1f;
  for (size_t k = 0; k < tenths.size(); ++k, acc += 0.1f)
    ASSERT_EQ(tenths[k], acc) << k;
  EXPECT_THAT(error(node("Range"), {I({}, {0}), I({}, {5}), I({}, {0})}),
              HasSubstr("delta is zero"));
  EXPECT_EQ(eval(node("Range"), {I({}, {kMin64}), I({}, {kMax64}), I({}, {1})}).status,
            FoldResult::NotFolded);
}

TEST_F(FoldTest, Reductions) {
  auto x = I({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THAT(ints(node("ReduceSum", [](auto &n) { attrI(n, "keepdims", 0); }), {x, I({1}, {1})}),
              ElementsAre(6, 15));
  EXPECT_THAT(ints(node("ReduceProd"), {x, I({1}, {0})}), ElementsAre(4, 10, 18));
  EXPECT_THAT(shape(node("ReduceProd"), {x, I({1}, {0})}), ElementsAre(1, 3));
  EXPECT_THAT(ints(node("ReduceMax"), {x}), ElementsAre(6));
  EXPECT_THAT(ints(node("ReduceMin", [](auto &n) { attrIs(n, "axes", {-1}); }), {x}, 13),
              ElementsAre(1, 4));
  EXPECT_THAT(shape(node("ReduceSum", [](auto &n) { attrI(n, "noop_with_empty_axes", 1); }),
                    {x}),
              ElementsAre(2, 3));
  EXPECT_THAT(ints(node("ReduceProd"), {I({0}, {})}), ElementsAre(1));
  EXPECT_THAT(error(node("ReduceMax"), {I({0}, {})}), HasSubstr("empty axis"));
}

TEST_F(FoldTest, TriluCumSumArgMax) {
  auto m = I({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_THAT(ints(node("Trilu"), {m}), ElementsAre(1, 2, 3, 0, 5, 6, 0, 0, 9));
  EXPECT_THAT(ints(node("Trilu", [](auto &n) { attrI(n, "upper", 0); }), {m, I({}, {-1})}),
              ElementsAre(0, 0, 0, 4, 0, 0, 7, 8, 0));
  // Any k is valid: the triangle is then empty or everything.
  EXPECT_THAT(ints(node("Trilu"), {m, I({}, {kMax64})}), ElementsAre(0, 0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_THAT(ints(node("Trilu"), {m, I({}, {kMin64})}), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9));
  EXPECT_THAT(error(node("Trilu"), {I({3}, {1, 2, 3})}), HasSubstr("rank >= 2"));

  auto v = I({4}, {1, 2, 3, 4});
  EXPECT_THAT(ints(node("CumSum"), {v, I({}, {0})}), ElementsAre(1, 3, 6, 10));
  EXPECT_THAT(ints(node("CumSum", [](auto &n) { attrI(n, "exclusive", 1); }), {v, I({}, {0})}),
              ElementsAre(0, 1, 3, 6));
  EXPECT_THAT(ints(node("CumSum", [](auto &n) { attrI(n, "reverse", 1); }), {v, I({}, {-1})}),
              ElementsAre(10, 9, 7, 4));
  EXPECT_THAT(floats(node("CumSum"), {F({2, 2}, {1, 2, 3, 4}), I32({1}, {0})}),
              ElementsAre(1, 2, 4, 6));

  auto a = I({2, 3}, {1, 9, 9, 7, 2, 7});
  EXPECT_THAT(ints(node("ArgMax", [](auto &n) { attrI(n, "axis", 1); }), {a}), ElementsAre(1, 0));
  EXPECT_THAT(ints(node("ArgMax",
                        [](auto &n) {
                          attrI(n, "axis", 1);
                          attrI(n, "select_last_index", 1);
                          attrI(n, "keepdims", 0);
                        }),
                   {a}),
              ElementsAre(2, 2));
  EXPECT_THAT(shape(node("ArgMax"), {a}), ElementsAre(1, 3));
}

TEST_F(FoldTest, LimitsLeaveLargeResultsAndWeightLayoutsToRunTime) {
  // Moves of float constants are never folded (weights keep one tensor and
  // the compiler folds their layout into the GEMM); integer ones are.
  EXPECT_EQ(eval(node("Transpose"), {F({2, 2}, {1, 2, 3, 4})}).status, FoldResult::NotFolded);
  EXPECT_EQ(eval(node("Reshape"), {F({2, 2}, {1, 2, 3, 4}), I({1}, {4})}).status,
            FoldResult::NotFolded);
  EXPECT_EQ(eval(node("Gather"), {F({2, 2}, {1, 2, 3, 4}), I({1}, {1})}).status,
            FoldResult::NotFolded);
  EXPECT_EQ(eval(node("Transpose"), {I({2, 2}, {1, 2, 3, 4})}).status, FoldResult::Folded);
  FoldLimits small;
  small.runTime = small.compileTime = 4;
  EXPECT_EQ(eval(node("Add"), {F({5}, {1, 2, 3, 4, 5}), F({}, {1})}, 18, small).status,
            FoldResult::NotFolded);
  EXPECT_EQ(eval(node("Add"), {F({4}, {1, 2, 3, 4}), F({}, {1})}, 18, small).status,
            FoldResult::Folded);
  EXPECT_EQ(eval(node("Tile"), {I({1}, {1}), I({1}, {kMax64})}).status, FoldResult::NotFolded);
  EXPECT_EQ(eval(node("MatMul"), {F({1, 1}, {1}), F({1, 1}, {1})}).status,
            FoldResult::NotFolded);
  EXPECT_TRUE(canEvaluate("ConstantOfShape"));
  EXPECT_FALSE(canEvaluate("MatMul"));
}
