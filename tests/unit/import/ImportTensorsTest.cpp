//===- ImportTensorsTest.cpp - initializer / Constant tensor decoding -------===//
//
// Every storage form of a TensorProto (typed fields, raw_data, external
// data) and every element type the importer converts, plus the size checks
// that keep bad files from reading out of bounds.
//
//===----------------------------------------------------------------------===//
#include "ImportTestUtil.h"

#include <limits>

using namespace mixprec;
using namespace mixprec::test;
using mlir::Operation;
using ::testing::HasSubstr;

namespace {

/// A model whose only output is initializer `t` (which the test fills).
struct ConstModel {
  Model m{13};
  TP *t;
  explicit ConstModel(int32_t dtype, const Dims &shape, const std::string &name = "t") {
    t = m.g->add_initializer();
    t->set_name(name);
    t->set_data_type(dtype);
    Model::setDims(t, shape);
    auto *o = m.g->add_output();
    o->set_name(name); // no declared type: whatever the importer makes of it
  }
};

mlir::Value returned(mlir::ModuleOp m, unsigned i = 0) {
  return mlir::cast<mlir::func::ReturnOp>(mainOf(m).getBody().front().getTerminator())
      .getOperand(i);
}

TEST_F(ImportTest, TensorRawFloat) {
  ConstModel c(TP::FLOAT, {3});
  std::string raw;
  for (float v : {1.5f, -2.0f, 3.25f})
    appendLE(raw, v);
  c.t->set_raw_data(raw);
  auto mod = import(c.m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(typeOf(returned(*mod)), "tensor<3xf32>");
  EXPECT_EQ(constValues(returned(*mod)), (std::vector<double>{1.5, -2.0, 3.25}));
}

TEST_F(ImportTest, TensorFloat16FieldsAndRaw) {
  ConstModel a(TP::FLOAT16, {3});
  for (int bits : {0x3C00, 0xC000, 0x7BFF})
    a.t->add_int32_data(bits);
  auto mod = import(a.m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(typeOf(returned(*mod)), "tensor<3xf32>");
  EXPECT_EQ(constValues(returned(*mod)), (std::vector<double>{1.0, -2.0, 65504.0}));

  ConstModel b(TP::FLOAT16, {2});
  std::string raw;
  appendLE<uint16_t>(raw, 0x3800); // 0.5
  appendLE<uint16_t>(raw, 0x0001); // smallest subnormal, 2^-24
  b.t->set_raw_data(raw);
  auto mod2 = import(b.m);
  ASSERT_TRUE(mod2);
  EXPECT_EQ(constValues(returned(*mod2)), (std::vector<double>{0.5, std::ldexp(1.0, -24)}));
}

TEST_F(ImportTest, TensorBFloat16) {
  ConstModel c(TP::BFLOAT16, {2});
  std::string raw;
  appendLE<uint16_t>(raw, 0x3F80); // 1.0
  appendLE<uint16_t>(raw, 0xC040); // -3.0
  c.t->set_raw_data(raw);
  auto mod = import(c.m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(constValues(returned(*mod)), (std::vector<double>{1.0, -3.0}));
}

TEST_F(ImportTest, TensorDoubleIsConvertedToF32) {
  ConstModel a(TP::DOUBLE, {2});
  a.t->add_double_data(0.1);
  a.t->add_double_data(-1e300); // overflows f32: -inf
  auto mod = import(a.m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(typeOf(returned(*mod)), "tensor<2xf32>");
  auto v = constValues(returned(*mod));
  EXPECT_EQ(v[0], static_cast<double>(0.1f));
  EXPECT_TRUE(std::isinf(v[1]) && v[1] < 0);

  ConstModel b(TP::DOUBLE, {1});
  std::string raw;
  appendLE(raw, 2.5);
  b.t->set_raw_data(raw);
  auto mod2 = import(b.m);
  ASSERT_TRUE(mod2);
  EXPECT_EQ(constValues(returned(*mod2)), std::vector<double>{2.5});
}

TEST_F(ImportTest, TensorSmallIntegersBecomeI32) {
  ConstModel a(TP::INT8, {2});
  a.t->set_raw_data(std::string("\xff\x7f", 2));
  auto mod = import(a.m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(typeOf(returned(*mod)), "tensor<2xi32>");
  EXPECT_EQ(constValues(returned(*mod)), (std::vector<double>{-1, 127}));

  ConstModel b(TP::UINT8, {2});
  b.t->add_int32_data(255);
  b.t->add_int32_data(0);
  auto mod2 = import(b.m);
  ASSERT_TRUE(mod2);
  EXPECT_EQ(constValues(returned(*mod2)), (std::vector<double>{255, 0}));

  ConstModel c(TP::INT16, {1});
  std::string raw;
  appendLE<int16_t>(raw, -300);
  c.t->set_raw_data(raw);
  auto mod3 = import(c.m);
  ASSERT_TRUE(mod3);
  EXPECT_EQ(constValues(returned(*mod3)), std::vector<double>{-300});
}

TEST_F(ImportTest, TensorInt32Int64BoolUint32) {
  ConstModel a(TP::INT32, {2});
  a.t->add_int32_data(-5);
  a.t->add_int32_data(7);
  auto mod = import(a.m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(typeOf(returned(*mod)), "tensor<2xi32>");

  ConstModel b(TP::INT64, {2});
  std::string raw;
  appendLE<int64_t>(raw, std::numeric_limits<int64_t>::min());
  appendLE<int64_t>(raw, 42);
  b.t->set_raw_data(raw);
  auto mod2 = import(b.m);
  ASSERT_TRUE(mod2);
  auto attr = mlir::cast<mlir::DenseElementsAttr>(
      returned(*mod2).getDefiningOp<graph::ConstantOp>().getValue());
  EXPECT_EQ(attr.getValues<int64_t>()[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(attr.getValues<int64_t>()[1], 42);

  ConstModel c(TP::BOOL, {3});
  c.t->set_raw_data(std::string("\x01\x00\x02", 3));
  auto mod3 = import(c.m);
  ASSERT_TRUE(mod3);
  EXPECT_EQ(typeOf(returned(*mod3)), "tensor<3xi1>");
  EXPECT_EQ(constValues(returned(*mod3)), (std::vector<double>{1, 0, 1}));

  ConstModel d(TP::UINT32, {1});
  d.t->add_uint64_data(4000000000u);
  auto mod4 = import(d.m);
  ASSERT_TRUE(mod4);
  EXPECT_EQ(typeOf(returned(*mod4)), "tensor<1xi64>");
  EXPECT_EQ(constValues(returned(*mod4)), std::vector<double>{4000000000.0});
}

TEST_F(ImportTest, TensorEmpty) {
  ConstModel c(TP::FLOAT, {0, 3});
  auto mod = import(c.m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(typeOf(returned(*mod)), "tensor<0x3xf32>");
}

TEST_F(ImportTest, TensorConstantNodeRawValue) {
  Model m(13);
  auto &n = m.node("Constant", {}, {"k"}, "kn");
  TP *t = attrT(n, "value");
  t->set_data_type(TP::INT64);
  t->add_dims(2);
  std::string raw;
  appendLE<int64_t>(raw, 3);
  appendLE<int64_t>(raw, -4);
  t->set_raw_data(raw);
  m.output("k", Dims{2}, TP::INT64);
  auto mod = import(m);
  ASSERT_TRUE(mod);
  EXPECT_EQ(constValues(returned(*mod)), (std::vector<double>{3, -4}));
}

//===----------------------------------------------------------------------===//
// External data
//===----------------------------------------------------------------------===//

void setExternal(TP *t, const std::string &location, std::optional<int64_t> offset,
                 std::optional<int64_t> length) {
  t->set_data_location(TP::EXTERNAL);
  auto add = [&](const std::string &k, const std::string &v) {
    auto *e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (offset)
    add("offset", std::to_string(*offset));
  if (length)
    add("length", std::to_string(*length));
}

TEST_F(ImportTest, TensorExternalDataWithOffset) {
  std::string bytes(8, '\0'); // another tensor's bytes first
  for (float v : {1.0f, 2.0f, -3.5f})
    appendLE(bytes, v);
  llvm::sys::fs::create_directory(pathOf("sub"));
  writeBytes("sub/weights.bin", bytes);
  Model m(13);
  m.input("x", {1, 3});
  TP *w = m.g->add_initializer();
  w->set_name("w");
  w->set_data_type(TP::FLOAT);
  w->add_dims(3);
  w->add_dims(1);
  setExternal(w, "sub/weights.bin", 8, 12);
  m.node("MatMul", {"x", "w"}, {"y"});
  m.output("y", Dims{1, 1});
  auto mod = import(m);
  ASSERT_TRUE(mod);
  Operation *mm = only(*mod, "mp.matmul");
  EXPECT_EQ(constValues(mm->getOperand(1)), (std::vector<double>{1.0, 2.0, -3.5}));
}

TEST_F(ImportTest, ErrorExternalDataMissingFile) {
  ConstModel c(TP::FLOAT, {4}, "fc.weight");
  setExternal(c.t, "weights.bin", std::nullopt, std::nullopt);
  std::string e = importError(c.m);
  EXPECT_THAT(e, HasSubstr(pathOf("model.onnx") +
                           ": initializer 'fc.weight': cannot read "
                           "external data file '" +
                           pathOf("weights.bin") + "'"));
}

TEST_F(ImportTest, ErrorExternalDataShortFile) {
  writeBytes("weights.bin", std::string(10, '\0'));
  ConstModel c(TP::FLOAT, {4}, "fc.weight");
  setExternal(c.t, "weights.bin", 2, std::nullopt);
  std::string e = importError(c.m);
  EXPECT_THAT(e, HasSubstr("initializer 'fc.weight': external data file '" + pathOf("weights.bin") +
                           "' is too short: need 16 bytes at offset 2, the file has 10"));
}

TEST_F(ImportTest, ErrorExternalDataBadLengthOffsetAndPath) {
  writeBytes("weights.bin", std::string(64, '\0'));
  {
    ConstModel c(TP::FLOAT, {4}, "w");
    setExternal(c.t, "weights.bin", 0, 12);
    EXPECT_THAT(importError(c.m), HasSubstr("initializer 'w': external data length 12"));
  }
  {
    ConstModel c(TP::FLOAT, {4}, "w");
    setExternal(c.t, "weights.bin", -4, std::nullopt);
    EXPECT_THAT(importError(c.m),
                HasSubstr("initializer 'w': external data 'offset' is not a non-negative "
                          "integer: '-4'"));
  }
  {
    ConstModel c(TP::FLOAT, {4}, "w");
    setExternal(c.t, pathOf("weights.bin"), std::nullopt, std::nullopt);
    EXPECT_THAT(importError(c.m), HasSubstr("must be relative to the model's directory"));
  }
  {
    ConstModel c(TP::FLOAT, {4}, "w");
    c.t->set_data_location(TP::EXTERNAL);
    EXPECT_THAT(importError(c.m), HasSubstr("initializer 'w': external data has no 'location'"));
  }
}

//===----------------------------------------------------------------------===//
// Size and type checks
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, ErrorRawDataSizeMismatch) {
  ConstModel c(TP::FLOAT, {3}, "w");
  c.t->set_raw_data(std::string(8, '\0'));
  EXPECT_EQ(importError(c.m), pathOf("model.onnx") +
                                  ": initializer 'w': raw_data has 8 bytes, expected 12 for "
                                  "FLOAT [3]");
}

TEST_F(ImportTest, ErrorTypedFieldCountMismatch) {
  ConstModel c(TP::FLOAT, {2, 2}, "w");
  c.t->add_float_data(1.0f);
  EXPECT_THAT(importError(c.m), HasSubstr("initializer 'w': float_data has 1 values, expected 4"));
  ConstModel s(TP::INT64, {}, "scalar"); // a scalar with no data at all
  EXPECT_THAT(importError(s.m),
              HasSubstr("initializer 'scalar': int64_data has 0 values, expected 1"));
}

TEST_F(ImportTest, ErrorBadDims) {
  ConstModel neg(TP::FLOAT, {2, -1}, "w");
  EXPECT_THAT(importError(neg.m),
              HasSubstr("initializer 'w': negative dimension in shape [2, -1]"));
  ConstModel huge(TP::FLOAT, {int64_t(1) << 40, int64_t(1) << 40}, "w");
  EXPECT_THAT(importError(huge.m), HasSubstr("initializer 'w': shape [1099511627776, "
                                             "1099511627776] has too many elements"));
}

TEST_F(ImportTest, ErrorUnsupportedTensorTypes) {
  ConstModel s(TP::STRING, {1}, "names");
  s.t->add_string_data("a");
  EXPECT_THAT(importError(s.m), HasSubstr("initializer 'names': unsupported data type STRING"));
  ConstModel f8(17, {1}, "f8");
  f8.t->set_raw_data(std::string(1, '\0'));
  EXPECT_THAT(importError(f8.m), HasSubstr("initializer 'f8': unsupported data type FLOAT8E4M3FN"));
}

TEST_F(ImportTest, ErrorUint64OutOfRange) {
  ConstModel c(TP::UINT64, {1}, "u");
  c.t->add_uint64_data(std::numeric_limits<uint64_t>::max());
  EXPECT_THAT(importError(c.m), HasSubstr("initializer 'u': element 0 (18446744073709551615) "
                                          "does not fit INT64"));
}

TEST_F(ImportTest, ErrorDuplicateInitializer) {
  ConstModel c(TP::FLOAT, {1}, "w");
  c.t->add_float_data(1.0f);
  c.m.initF32("w", {1}, {2.0f});
  EXPECT_THAT(importError(c.m), HasSubstr("initializer 'w' is defined twice"));
}

TEST_F(ImportTest, ErrorConstantNodeTensorNamesNode) {
  Model m(13);
  auto &n = m.node("Constant", {}, {"k"}, "kn");
  TP *t = attrT(n, "value");
  t->set_data_type(TP::FLOAT);
  t->add_dims(2);
  t->set_raw_data(std::string(3, '\0'));
  m.output("k");
  EXPECT_THAT(importError(m), HasSubstr(pathOf("model.onnx") +
                                        ": node 'kn' (Constant): attribute 'value': raw_data "
                                        "has 3 bytes, expected 8"));
}

} // namespace
