//===- ImportRefusalsTest.cpp - models the importer must refuse -------------===//
//
// Models that onnxruntime refuses must be refused here too, with one line
// naming the node and the attribute, input or tensor at fault: attributes
// and arities outside the op's ONNX schema at the model's opset, versions
// newer than the importer knows, UNDEFINED and non-tensor outputs, graphs
// without outputs, external data outside the model's directory, and model or
// data paths that are not regular files. Controls check that what
// onnxruntime accepts stays accepted. Names with control characters or
// quotes appear escaped and quoted.
//
//===----------------------------------------------------------------------===//
#include "ImportTestUtil.h"
#include "compiler/Import/OnnxImporterImpl.h"

#include "llvm/Support/ConvertUTF.h"

#include <random>

#include <sys/stat.h>
#include <sys/types.h>

using namespace mixprec;
using namespace mixprec::test;
using ::testing::HasSubstr;

namespace {

/// x[4,8] -> Relu (node "relu") -> y, at `opset`.
Model reluModel(int64_t opset = 13) {
  Model m(opset);
  m.input("x", {4, 8});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", Dims{4, 8});
  return m;
}

onnx::NodeProto &firstNode(Model &m) { return *m.g->mutable_node(0); }

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, RefuseUnknownAttribute) {
  Model m = reluModel();
  attrI(firstNode(m), "foo", 1);
  EXPECT_EQ(importError(m), pathOf("model.onnx") +
                                ": node 'relu' (Relu): unknown attribute 'foo' (Relu at opset "
                                "13 takes none)");

  Model s(13);
  s.input("x", {2, 3});
  auto &n = s.node("Softmax", {"x"}, {"y"}, "sm");
  attrI(n, "axis", 1);
  attrF(n, "alpha", 1.0f);
  s.output("y");
  EXPECT_THAT(importError(s), HasSubstr("node 'sm' (Softmax): unknown attribute 'alpha' "
                                        "(Softmax at opset 13 takes: axis)"));
}

TEST_F(ImportTest, RefuseAttributeOfAnotherOpset) {
  // consumed_inputs existed until Relu-6.
  Model m = reluModel(13);
  attrIs(firstNode(m), "consumed_inputs", {0});
  EXPECT_THAT(importError(m), HasSubstr("node 'relu' (Relu): attribute 'consumed_inputs' is "
                                        "not allowed from opset 6"));
  // dilations exist from MaxPool-10.
  Model p(8);
  p.input("x", {1, 1, 4, 4});
  auto &n = p.node("MaxPool", {"x"}, {"y"}, "mp");
  attrIs(n, "kernel_shape", {2, 2});
  attrIs(n, "dilations", {1, 1});
  p.output("y");
  EXPECT_THAT(importError(p), HasSubstr("node 'mp' (MaxPool): attribute 'dilations' exists "
                                        "from opset 10 (the model has opset 8)"));
}

TEST_F(ImportTest, AcceptAttributesOfTheModelsOpset) {
  // Valid at their opsets (onnxruntime accepts them): the legacy hint
  // consumed_inputs, Cast's saturate, Dropout's ratio, LayerNorm's stash_type.
  Model r = reluModel(5);
  attrIs(firstNode(r), "consumed_inputs", {0});
  EXPECT_TRUE(import(r));

  Model c(19);
  c.input("x", {3});
  auto &cast = c.node("Cast", {"x"}, {"y"}, "c");
  attrI(cast, "to", TP::INT64);
  attrI(cast, "saturate", 1);
  c.output("y", std::nullopt, TP::INT64);
  EXPECT_TRUE(import(c));

  Model d(11);
  d.input("x", {3});
  attrF(d.node("Dropout", {"x"}, {"y"}, "d"), "ratio", 0.25f);
  d.output("y");
  EXPECT_TRUE(import(d));

  Model l(17);
  l.input("x", {2, 8});
  l.initIota("g", {8});
  auto &ln = l.node("LayerNormalization", {"x", "g"}, {"y"}, "ln");
  attrI(ln, "stash_type", 1);
  // LayerNormalization's schema takes attributes it does not name (the
  // checker and onnxruntime accept them); they are ignored.
  attrI(ln, "not_in_the_schema", 1);
  l.output("y");
  EXPECT_TRUE(import(l));
}

TEST_F(ImportTest, RefuseDuplicatedAttribute) {
  Model m(13);
  m.input("x", {2, 3});
  auto &n = m.node("Softmax", {"x"}, {"y"}, "sm");
  attrI(n, "axis", 1);
  attrI(n, "axis", 0);
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'sm' (Softmax): attribute 'axis' is given twice"));
}

TEST_F(ImportTest, RefuseAttributeWithoutName) {
  Model m = reluModel();
  attrI(firstNode(m), "", 1);
  EXPECT_THAT(importError(m), HasSubstr("node 'relu' (Relu): attribute #0 has no name"));
}

//===----------------------------------------------------------------------===//
// Inputs and outputs of a node
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, RefuseExtraInput) {
  Model m(13);
  m.input("h", {4});
  m.node("Relu", {"h", "h"}, {"y"}, "relu");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'relu' (Relu): input #1 ('h') is one too many: "
                                        "Relu at opset 13 takes 1 input"));
  // onnxruntime counts a trailing empty name as an input too.
  Model e(13);
  e.input("h", {4});
  e.node("Relu", {"h", ""}, {"y"}, "relu");
  e.output("y");
  EXPECT_THAT(importError(e), HasSubstr("node 'relu' (Relu): input #1 ('') is one too many"));
}

TEST_F(ImportTest, RefuseTooFewInputs) {
  Model m(13);
  m.input("x", {4, 8});
  m.node("MatMul", {"x"}, {"y"}, "mm");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'mm' (MatMul): has 1 input, but MatMul at opset "
                                        "13 takes 2 inputs"));
  // Gemm's C became optional at opset 11.
  Model g(9);
  g.input("a", {2, 3});
  g.initIota("b", {3, 4});
  g.node("Gemm", {"a", "b"}, {"y"}, "g");
  g.output("y");
  EXPECT_THAT(importError(g), HasSubstr("node 'g' (Gemm): has 2 inputs, but Gemm at opset 9 "
                                        "takes 3 inputs"));
}

TEST_F(ImportTest, RefuseExtraOutput) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y", "z"}, "relu");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("node 'relu' (Relu): output #1 ('z') is one too many: "
                                        "Relu at opset 13 has 1 output"));
  Model n(13);
  n.input("x", {4});
  n.node("Relu", {"x"}, {}, "relu");
  n.output("x");
  EXPECT_THAT(importError(n), HasSubstr("node 'relu' (Relu): has no output, but Relu at opset "
                                        "13 has 1 output"));
}

TEST_F(ImportTest, AcceptOptionalAndVariadicArities) {
  Model g(13); // Gemm without C
  g.input("a", {2, 3});
  g.initIota("b", {3, 4});
  g.node("Gemm", {"a", "b"}, {"y"}, "g");
  g.output("y");
  EXPECT_TRUE(import(g));

  Model s(13); // Slice with an empty (absent) axes input before steps
  s.input("x", {4, 10});
  s.ints("st", {1});
  s.ints("en", {3});
  s.ints("sp", {1});
  s.node("Slice", {"x", "st", "en", "", "sp"}, {"y"}, "sl");
  s.output("y");
  EXPECT_TRUE(import(s));

  Model c(13); // Concat of three
  c.input("x", {2});
  attrI(c.node("Concat", {"x", "x", "x"}, {"y"}, "cat"), "axis", 0);
  c.output("y");
  EXPECT_TRUE(import(c));

  Model b(15); // BatchNormalization with its unused statistics outputs named
  b.input("x", {1, 2, 2, 2});
  for (const char *p : {"s", "bias", "mean", "var"})
    b.initIota(p, {2});
  b.node("BatchNormalization", {"x", "s", "bias", "mean", "var"}, {"y", "rm", "rv"}, "bn");
  b.output("y");
  EXPECT_TRUE(import(b));
}

//===----------------------------------------------------------------------===//
// Versions
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, RefuseOpsetNewerThanKnown) {
  EXPECT_EQ(importError(reluModel(99)),
            pathOf("model.onnx") + ": the model imports opset 99 of the default ONNX domain; "
                                   "the newest this importer knows is 28");
  Model m = reluModel(13);
  auto *imp = m.proto.add_opset_import();
  imp->set_domain("ai.onnx");
  imp->set_version(29);
  EXPECT_THAT(importError(m), HasSubstr("imports opset 29 of the default ONNX domain"));
  EXPECT_TRUE(import(reluModel(28)));
}

TEST_F(ImportTest, AcceptUnusedOpsetImportsOfOtherDomains) {
  // onnxruntime accepts an import of a domain it does not know when no node
  // uses it; a node of such a domain is refused (ErrorOtherDomain).
  Model m = reluModel(13);
  auto *imp = m.proto.add_opset_import();
  imp->set_domain("com.example");
  imp->set_version(99);
  EXPECT_TRUE(import(m));
}

TEST_F(ImportTest, RefuseIrVersionNewerThanKnown) {
  Model m = reluModel();
  m.proto.set_ir_version(99);
  EXPECT_EQ(importError(m), pathOf("model.onnx") + ": the model has IR version 99; the newest "
                                                   "this importer knows is 14");
  m.proto.set_ir_version(14);
  EXPECT_TRUE(import(m));
}

//===----------------------------------------------------------------------===//
// Graph outputs
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, RefuseUndefinedOutputType) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y", Dims{4}, TP::UNDEFINED);
  EXPECT_THAT(importError(m), HasSubstr("graph output 'y' has element type UNDEFINED"));

  // An output without any type is fine: the importer's is used.
  Model n(13);
  n.input("x", {4});
  n.node("Relu", {"x"}, {"y"}, "relu");
  n.g->add_output()->set_name("y");
  EXPECT_TRUE(import(n));
}

TEST_F(ImportTest, RefuseUndefinedInputType) {
  Model m(13);
  m.input("x", {4}, TP::UNDEFINED);
  m.node("Relu", {"x"}, {"y"}, "relu");
  m.output("y");
  EXPECT_THAT(importError(m), HasSubstr("graph input 'x' has unsupported element type UNDEFINED"));
}

TEST_F(ImportTest, RefuseNonTensorOutputType) {
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  auto *o = m.g->add_output();
  o->set_name("y");
  o->mutable_type()
      ->mutable_sequence_type()
      ->mutable_elem_type()
      ->mutable_tensor_type()
      ->set_elem_type(TP::FLOAT);
  EXPECT_THAT(importError(m), HasSubstr("graph output 'y' is declared as a sequence, not a "
                                        "tensor"));
}

TEST_F(ImportTest, RefuseGraphWithoutOutputs) {
  Model empty(13);
  EXPECT_EQ(importError(empty), pathOf("model.onnx") + ": the graph has no outputs");
  Model m(13);
  m.input("x", {4});
  m.node("Relu", {"x"}, {"y"}, "relu");
  EXPECT_EQ(importError(m), pathOf("model.onnx") + ": the graph has no outputs");

  // No nodes but an output (the input itself) is a valid model.
  Model id(13);
  id.input("x", {4});
  id.output("x");
  EXPECT_TRUE(import(id));
}

//===----------------------------------------------------------------------===//
// External data locations
//===----------------------------------------------------------------------===//

/// A model in `dir`/m reading initializer 'W' (FLOAT [2]) from `location`.
struct ExternalModel {
  Model m{13};
  ExternalModel(const std::string &location) {
    m.input("x", {2});
    TP *w = m.g->add_initializer();
    w->set_name("W");
    w->set_data_type(TP::FLOAT);
    w->add_dims(2);
    w->set_data_location(TP::EXTERNAL);
    auto *e = w->add_external_data();
    e->set_key("location");
    e->set_value(location);
    m.node("Add", {"x", "W"}, {"y"}, "add");
    m.output("y");
  }
};

class ExternalDataTest : public ImportTest {
protected:
  void SetUp() override {
    ImportTest::SetUp();
    std::string w;
    appendLE(w, 1.5f);
    appendLE(w, -2.0f);
    ASSERT_FALSE(llvm::sys::fs::create_directories(pathOf("m/sub")));
    ASSERT_FALSE(llvm::sys::fs::create_directories(pathOf("outside")));
    writeBytes("m/w.bin", w);
    writeBytes("m/sub/w.bin", w);
    writeBytes("outside/w.bin", w);
  }

  /// Imports the model saved as `dir`/m/model.onnx; the error, or "" on success.
  std::string importAt(const std::string &location) {
    ExternalModel em(location);
    std::string error;
    auto module = compiler::importOnnxFile(ctx, write(em.m, "m/model.onnx"), error);
    EXPECT_EQ(static_cast<bool>(module), error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    return error;
  }
};

TEST_F(ExternalDataTest, RefuseLocationOutsideTheModelsDirectory) {
  std::string e = importAt("../outside/w.bin");
  EXPECT_EQ(e, pathOf("m/model.onnx") +
                   ": initializer 'W': external data location '../outside/w.bin' is outside "
                   "the model's directory '" +
                   pathOf("m") + "'");
  EXPECT_THAT(importAt("sub/../../outside/w.bin"), HasSubstr("is outside the model's directory"));
  EXPECT_THAT(importAt("../../../../../../../../../etc/passwd"),
              HasSubstr("initializer 'W': external data location "
                        "'../../../../../../../../../etc/passwd' is outside"));
}

TEST_F(ExternalDataTest, RefuseSymlinkOutOfTheModelsDirectory) {
  ASSERT_FALSE(llvm::sys::fs::create_link(pathOf("outside/w.bin"), pathOf("m/link.bin")));
  ASSERT_FALSE(llvm::sys::fs::create_link("../outside", pathOf("m/linkdir")));
  EXPECT_THAT(importAt("link.bin"), HasSubstr("initializer 'W': external data location "
                                              "'link.bin' is outside the model's directory"));
  EXPECT_THAT(importAt("linkdir/w.bin"), HasSubstr("location 'linkdir/w.bin' is outside"));
}

TEST_F(ExternalDataTest, AcceptLocationsThatStayInside) {
  // onnxruntime accepts these: they resolve to a file in the model's folder.
  ASSERT_FALSE(llvm::sys::fs::create_link("sub/w.bin", pathOf("m/inlink.bin")));
  for (const char *loc :
       {"w.bin", "./w.bin", "sub/w.bin", "sub/../w.bin", "../m/w.bin", "inlink.bin"})
    EXPECT_EQ(importAt(loc), "") << loc;
}

TEST_F(ExternalDataTest, RefuseAbsoluteAndMalformedLocations) {
  EXPECT_THAT(importAt(pathOf("m/w.bin")),
              HasSubstr("initializer 'W': external data location '" + pathOf("m/w.bin") +
                        "' must be relative to the model's directory"));
  EXPECT_THAT(importAt(std::string("w.bin\0.txt", 10)),
              HasSubstr("initializer 'W': external data location 'w.bin\\x00.txt' contains a "
                        "NUL byte"));
}

TEST_F(ExternalDataTest, RefuseLocationThatIsNotARegularFile) {
  EXPECT_THAT(importAt("sub"), HasSubstr("initializer 'W': cannot read external data file '" +
                                         pathOf("m/sub") + "': not a regular file (a folder)"));
  ASSERT_EQ(::mkfifo(pathOf("m/fifo.bin").c_str(), 0600), 0);
  EXPECT_THAT(importAt("fifo.bin"),
              HasSubstr("cannot read external data file '" + pathOf("m/fifo.bin") +
                        "': not a regular file (a FIFO)"));
}

//===----------------------------------------------------------------------===//
// Model paths that are not regular files
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, RefuseModelPathThatIsNotARegularFile) {
  EXPECT_EQ(importPathError("/dev/zero"),
            "/dev/zero: cannot read: not a regular file (a character device)");
  EXPECT_EQ(importPathError(dir), dir + ": cannot read: not a regular file (a folder)");
  // A FIFO with no writer would block the reader forever.
  ASSERT_EQ(::mkfifo(pathOf("fifo.onnx").c_str(), 0600), 0);
  EXPECT_EQ(importPathError(pathOf("fifo.onnx")),
            pathOf("fifo.onnx") + ": cannot read: not a regular file (a FIFO)");
}

//===----------------------------------------------------------------------===//
// Names in messages
//===----------------------------------------------------------------------===//

TEST_F(ImportTest, NamesAreQuotedWithCEscapes) {
  Model m(13);
  m.input("x", {4});
  m.node("Re\nlu", {"x"}, {"y"}, "n");
  m.output("y");
  EXPECT_EQ(importError(m),
            "unsupported op 'Re\\nlu' (node 'n', opset 13) in " + pathOf("model.onnx"));

  Model q(13);
  q.input("x", {4});
  q.node("MatMul", {"x", "it's\t\\"}, {"y"}, "a'b\r");
  q.output("y");
  EXPECT_THAT(importError(q), HasSubstr("node 'a\\'b\\r' (MatMul): input 'it\\'s\\t\\\\' is not "
                                        "a graph input"));

  Model t(13);
  t.input("x\x1b[31m", {4});
  t.node("Relu", {"x\x1b[31m"}, {"y"}, "relu");
  t.output("y\x7f");
  EXPECT_THAT(importError(t), HasSubstr("graph output 'y\\x7f' is not produced"));
}

TEST_F(ImportTest, NamesWithUnicodeLineBreaksAndBadUtf8AreEscaped) {
  // U+0085 (NEL) and U+2028 break lines for Unicode-aware readers; a byte
  // that is not UTF-8 cannot be printed as it is. Other UTF-8 stays.
  Model m(13);
  m.input("x", {4});
  m.node("MatMul",
         {"x", "a\xc2\x85"
               "b\xe2\x80\xa8"
               "c\xff"
               "d\xc3\xa9"},
         {"y"}, "mm");
  m.output("y");
  EXPECT_THAT(importError(m),
              HasSubstr("node 'mm' (MatMul): input 'a\\u0085b\\u2028c\\xffd\xc3\xa9' "
                        "is not a graph input"));
}

/// Whether `s` is valid UTF-8 without a control character or a Unicode line
/// separator: what a one-line message may hold.
bool printableOnOneLine(const std::string &s) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(s.data());
  if (!llvm::isLegalUTF8String(&begin, begin + s.size()))
    return false;
  std::wstring wide; // UTF-32 on the test hosts
  if (!llvm::ConvertUTF8toWide(s, wide))
    return false;
  for (wchar_t c : wide)
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029)
      return false;
  return true;
}

TEST(QuotedNames, AnyBytesGiveOneValidUtf8Line) {
  using compiler::onnx_import::escapeControls;
  using compiler::onnx_import::quotedName;
  std::mt19937 gen(7);
  for (int n = 0; n < 20000; ++n) {
    std::string s(gen() % 12, '\0');
    for (char &c : s)
      c = static_cast<char>(n < 256 ? n : gen()); // every single byte first
    ASSERT_TRUE(printableOnOneLine(quotedName(s))) << quotedName(s);
    ASSERT_TRUE(printableOnOneLine(escapeControls(s))) << escapeControls(s);
  }
  EXPECT_EQ(quotedName("plain name_1.2/3 \xc3\xa9"), "'plain name_1.2/3 \xc3\xa9'");
}

TEST_F(ImportTest, ModelPathIsEscaped) {
  std::string p = pathOf("bad\nname.onnx");
  EXPECT_EQ(importPathError(p), pathOf("bad\\nname.onnx") + ": cannot read: no such file");
}

} // namespace
