//===- ImportTestUtil.h - building ONNX models for importer tests -*- C++ -*-===//
#ifndef MIXPREC_TESTS_UNIT_IMPORT_IMPORTTESTUTIL_H
#define MIXPREC_TESTS_UNIT_IMPORT_IMPORTTESTUTIL_H

#include "compiler/Import/OnnxImporter.h"
#include "compiler/Import/OnnxImporterOptions.h"
#include "dialects/Graph/IR/GraphOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace mixprec::test {

using Dims = std::vector<int64_t>;
using TP = onnx::TensorProto;

/// A ModelProto under construction.
struct Model {
  onnx::ModelProto proto;
  onnx::GraphProto *g;

  explicit Model(int64_t opset = 13) {
    proto.set_ir_version(8);
    auto *imp = proto.add_opset_import();
    imp->set_domain("");
    imp->set_version(opset);
    g = proto.mutable_graph();
    g->set_name("test_graph");
  }

  static void setShape(onnx::TypeProto::Tensor *tt, const Dims &shape) {
    auto *s = tt->mutable_shape();
    for (int64_t d : shape)
      s->add_dim()->set_dim_value(d);
  }

  onnx::ValueInfoProto *input(const std::string &name, const Dims &shape,
                              int32_t dtype = TP::FLOAT) {
    auto *vi = g->add_input();
    vi->set_name(name);
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(dtype);
    setShape(tt, shape);
    return vi;
  }

  /// A graph output; with no shape the importer's inferred one is used.
  onnx::ValueInfoProto *output(const std::string &name, std::optional<Dims> shape = std::nullopt,
                               int32_t dtype = TP::FLOAT) {
    auto *vi = g->add_output();
    vi->set_name(name);
    auto *tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(dtype);
    if (shape)
      setShape(tt, *shape);
    return vi;
  }

  static void setDims(TP *t, const Dims &shape) {
    for (int64_t d : shape)
      t->add_dims(d);
  }

  TP *initF32(const std::string &name, const Dims &shape, const std::vector<float> &values) {
    TP *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(TP::FLOAT);
    setDims(t, shape);
    for (float v : values)
      t->add_float_data(v);
    return t;
  }

  /// An f32 initializer filled with 0, 1, 2, ...
  TP *initIota(const std::string &name, const Dims &shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<float> v(n);
    for (int64_t i = 0; i < n; ++i)
      v[i] = static_cast<float>(i);
    return initF32(name, shape, v);
  }

  TP *initI64(const std::string &name, const Dims &shape, const std::vector<int64_t> &values) {
    TP *t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(TP::INT64);
    setDims(t, shape);
    for (int64_t v : values)
      t->add_int64_data(v);
    return t;
  }

  /// A 1-D INT64 initializer (shapes, axes, starts...).
  TP *ints(const std::string &name, const std::vector<int64_t> &values) {
    return initI64(name, {static_cast<int64_t>(values.size())}, values);
  }

  onnx::NodeProto &node(const std::string &op, const std::vector<std::string> &inputs,
                        const std::vector<std::string> &outputs, const std::string &name = "") {
    auto *n = g->add_node();
    n->set_op_type(op);
    if (!name.empty())
      n->set_name(name);
    for (const auto &i : inputs)
      n->add_input(i);
    for (const auto &o : outputs)
      n->add_output(o);
    return *n;
  }
};

inline onnx::AttributeProto *addAttr(onnx::NodeProto &n, const std::string &name,
                                     onnx::AttributeProto::AttributeType type) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
inline void attrI(onnx::NodeProto &n, const std::string &name, int64_t v) {
  addAttr(n, name, onnx::AttributeProto::INT)->set_i(v);
}
inline void attrF(onnx::NodeProto &n, const std::string &name, float v) {
  addAttr(n, name, onnx::AttributeProto::FLOAT)->set_f(v);
}
inline void attrS(onnx::NodeProto &n, const std::string &name, const std::string &v) {
  addAttr(n, name, onnx::AttributeProto::STRING)->set_s(v);
}
inline void attrIs(onnx::NodeProto &n, const std::string &name, const std::vector<int64_t> &v) {
  auto *a = addAttr(n, name, onnx::AttributeProto::INTS);
  for (int64_t x : v)
    a->add_ints(x);
}
inline void attrFs(onnx::NodeProto &n, const std::string &name, const std::vector<float> &v) {
  auto *a = addAttr(n, name, onnx::AttributeProto::FLOATS);
  for (float x : v)
    a->add_floats(x);
}
inline TP *attrT(onnx::NodeProto &n, const std::string &name) {
  return addAttr(n, name, onnx::AttributeProto::TENSOR)->mutable_t();
}

/// Appends `v` little-endian to `bytes`.
template <typename T> void appendLE(std::string &bytes, T v) {
  unsigned char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  // The test hosts are little-endian (x86-64, aarch64); spell it out anyway.
  uint16_t probe = 1;
  bool little = *reinterpret_cast<unsigned char *>(&probe) == 1;
  for (size_t i = 0; i < sizeof(T); ++i)
    bytes.push_back(static_cast<char>(buf[little ? i : sizeof(T) - 1 - i]));
}

/// Fixture: a context with the dialects loaded and a scratch directory.
class ImportTest : public ::testing::Test {
protected:
  void SetUp() override {
    ctx.loadDialect<graph::GraphDialect, mlir::func::FuncDialect>();
    llvm::SmallString<128> d;
    ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("mixprec-import-test", d));
    dir = std::string(d.str());
  }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }

  std::string pathOf(const std::string &name) const { return dir + "/" + name; }

  std::string write(const Model &m, const std::string &name = "model.onnx") {
    std::string p = pathOf(name);
    std::ofstream f(p, std::ios::binary);
    EXPECT_TRUE(m.proto.SerializeToOstream(&f));
    return p;
  }

  void writeBytes(const std::string &name, const std::string &bytes) {
    std::ofstream f(pathOf(name), std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  /// Imports and expects success.
  mlir::OwningOpRef<mlir::ModuleOp> import(const Model &m,
                                           const compiler::OnnxImportOptions &opts = {}) {
    std::string error;
    auto module = compiler::importOnnxFile(ctx, write(m), opts, error);
    EXPECT_TRUE(module) << "import failed: " << error;
    EXPECT_TRUE(error.empty()) << error;
    return module;
  }

  /// Imports and expects failure; returns the message.
  std::string importError(const Model &m, const compiler::OnnxImportOptions &opts = {}) {
    return importPathError(write(m), opts);
  }

  std::string importPathError(const std::string &path,
                              const compiler::OnnxImportOptions &opts = {}) {
    std::string error;
    auto module = compiler::importOnnxFile(ctx, path, opts, error);
    EXPECT_FALSE(module) << "import unexpectedly succeeded";
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
    return error;
  }

  mlir::MLIRContext ctx;
  std::string dir;
};

inline mlir::func::FuncOp mainOf(mlir::ModuleOp m) {
  return m.lookupSymbol<mlir::func::FuncOp>("main");
}

/// The ops of @main in order, without the terminator.
inline std::vector<mlir::Operation *> bodyOps(mlir::ModuleOp m) {
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : mainOf(m).getBody().front().without_terminator())
    ops.push_back(&op);
  return ops;
}

/// Names of the non-constant ops in order ("mp.matmul", ...).
inline std::vector<std::string> opNames(mlir::ModuleOp m) {
  std::vector<std::string> names;
  for (mlir::Operation *op : bodyOps(m))
    if (!mlir::isa<graph::ConstantOp>(op))
      names.push_back(op->getName().getStringRef().str());
  return names;
}

inline int countOps(mlir::ModuleOp m, llvm::StringRef name) {
  int n = 0;
  for (mlir::Operation *op : bodyOps(m))
    n += op->getName().getStringRef() == name;
  return n;
}

/// The only op called `name`; fails the test when there is not exactly one.
inline mlir::Operation *only(mlir::ModuleOp m, llvm::StringRef name) {
  mlir::Operation *found = nullptr;
  int n = 0;
  for (mlir::Operation *op : bodyOps(m))
    if (op->getName().getStringRef() == name) {
      found = op;
      ++n;
    }
  EXPECT_EQ(n, 1) << "expected exactly one " << name.str();
  return found;
}

template <typename T> std::string str(T thing) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << thing;
  return os.str();
}

inline std::string typeOf(mlir::Value v) { return str(v.getType()); }
inline std::string resultType(mlir::Operation *op) { return typeOf(op->getResult(0)); }

inline std::string attrOf(mlir::Operation *op, llvm::StringRef name) {
  mlir::Attribute a = op->getAttr(name);
  return a ? str(a) : std::string("<none>");
}

/// The NameLoc name an op carries.
inline std::string locName(mlir::Operation *op) {
  if (auto loc = mlir::dyn_cast<mlir::NameLoc>(op->getLoc()))
    return loc.getName().str();
  return "<no NameLoc>";
}

/// The values of the mp.constant defining `v` (empty if not a constant).
inline std::vector<double> constValues(mlir::Value v) {
  std::vector<double> out;
  auto c = v.getDefiningOp<graph::ConstantOp>();
  if (!c)
    return out;
  auto attr = mlir::cast<mlir::DenseElementsAttr>(c.getValue());
  if (mlir::isa<mlir::FloatType>(attr.getElementType())) {
    for (float f : attr.getValues<float>())
      out.push_back(f);
  } else if (attr.getElementType().isInteger(1)) {
    for (bool b : attr.getValues<bool>())
      out.push_back(b);
  } else {
    for (const llvm::APInt &i : attr.getValues<llvm::APInt>())
      out.push_back(static_cast<double>(i.getSExtValue()));
  }
  return out;
}

inline std::string printed(mlir::ModuleOp m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m->print(os);
  return os.str();
}

} // namespace mixprec::test

#endif // MIXPREC_TESTS_UNIT_IMPORT_IMPORTTESTUTIL_H
