//===- OnnxImporter.cpp - ONNX protobuf to the mp dialect ------------------===//
//
// Reads the model file, checks the graph's inputs, initializers and outputs,
// converts the nodes in order (the converters: one file per op family,
// dispatched by OnnxOpRegistry.cpp) and verifies the result.
//
// Shapes: every tensor is statically shaped: symbolic input dims take the
// sizes the options bind (specialisation, OnnxImporterOptions.h). The
// importer infers each op's result type with the shape functions the mp
// verifiers use (common/Shapes.h); it does not run ONNX's checker or shape
// inference (ONNX 1.12 rejects newer models).
//
//===----------------------------------------------------------------------===//
#include "compiler/Import/OnnxImporter.h"
#include "common/FileIO.h"
#include "compiler/Import/OnnxImporterImpl.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <new>
#include <unistd.h>

using namespace mlir;

namespace mixprec::compiler {
namespace onnx_import {

//===----------------------------------------------------------------------===//
// Messages and files
//===----------------------------------------------------------------------===//

RegularFile::~RegularFile() {
  if (fd >= 0)
    ::close(fd);
}

bool RegularFile::open(const std::string &fileName, std::string &error) {
  name = fileName;
  fd = common::openRegularFile(fileName, fileSize, error);
  return fd >= 0;
}

std::unique_ptr<llvm::MemoryBuffer> RegularFile::read(uint64_t offset, uint64_t length,
                                                      std::error_code &ec) const {
  if (length == 0)
    return llvm::MemoryBuffer::getMemBuffer("", name, /*RequiresNullTerminator=*/false);
  auto buffer =
      llvm::MemoryBuffer::getOpenFileSlice(fd, name, length, static_cast<int64_t>(offset));
  if (!buffer) {
    ec = buffer.getError();
    return nullptr;
  }
  return std::move(*buffer);
}

//===----------------------------------------------------------------------===//
// The importer
//===----------------------------------------------------------------------===//

Importer::Importer(MLIRContext &ctx, std::string path, const OnnxImportOptions &options)
    : ctx(ctx), path(std::move(path)), options(options), builder(&ctx), constBuilder(&ctx),
      fileLoc(FileLineColLoc::get(&ctx, this->path, 0, 0)) {
  llvm::StringRef parent = llvm::sys::path::parent_path(this->path);
  modelDir = parent.empty() ? "." : parent.str();
}

LogicalResult Importer::fileError(const llvm::Twine &message) const {
  return emitError(fileLoc) << escapeControls(path) << ": " << message;
}

LogicalResult Importer::nodeError(const NodeCtx &c, const llvm::Twine &message) const {
  return emitError(c.loc) << escapeControls(path) << ": node " << quotedName(c.name) << " ("
                          << escapeControls(c.node.op_type()) << "): " << message;
}

Location Importer::nameLoc(llvm::StringRef name) const {
  return NameLoc::get(StringAttr::get(&ctx, name), fileLoc);
}

//===----------------------------------------------------------------------===//
// Model and graph
//===----------------------------------------------------------------------===//

LogicalResult Importer::readOpset(const onnx::ModelProto &model) {
  bool found = false;
  // Where the default domain is listed twice the last entry holds, as in
  // onnxruntime; each must be one the importer knows. Other domains matter
  // only to their nodes, which convertNode refuses.
  for (const auto &imp : model.opset_import()) {
    if (imp.domain().empty() || imp.domain() == "ai.onnx") {
      if (imp.version() > kMaxOpset)
        return fileError("the model imports opset " + llvm::Twine(imp.version()) +
             " of the default ONNX domain; the newest this importer knows is " +
             llvm::Twine(kMaxOpset));
      opset = imp.version();
      found = true;
    }
  }
  if (!found) {
    // IR versions before 3 had no opset_import and meant opset 1.
    if (model.ir_version() >= 3)
      return fileError("model has no opset_import for the default ONNX domain");
    opset = 1;
  }
  if (opset < 1)
    return fileError("invalid default-domain opset version " + llvm::Twine(opset));
  return success();
}

LogicalResult Importer::addInitializers(const onnx::GraphProto &graph) {
  if (graph.sparse_initializer_size() > 0)
    return fileError("sparse initializer " + quotedName(graph.sparse_initializer(0).values().name()) +
         " is not supported");
  for (const onnx::TensorProto &t : graph.initializer()) {
    if (t.name().empty())
      return fileError("an initializer has no name");
    if (values.count(t.name()))
      return fileError("initializer " + quotedName(t.name()) + " is defined twice");
    Entry e;
    e.constantLoc = nameLoc(t.name());
    FailureOr<DenseElementsAttr> decoded = decodeTensor(
        ctx, t, modelDir, escapeControls(path) + ": initializer " + quotedName(t.name()),
        [&](const std::string &message) { (void)(emitError(Location(e.constantLoc)) << message); },
        options.onExternalFile);
    if (failed(decoded))
      return failure();
    e.constant = *decoded;
    values[t.name()] = e;
  }
  return success();
}

namespace {
/// One dim of a graph input as the model declares it: a size, a symbolic
/// name (dim_param), or unknown.
struct DeclaredDim {
  int64_t size = -1;  // >= 0: fixed
  std::string param;  // non-empty: symbolic
};

/// "[batch, 128, ?]".
std::string formatDeclared(llvm::ArrayRef<DeclaredDim> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += i ? ", " : "";
    s += dims[i].size >= 0          ? std::to_string(dims[i].size)
         : !dims[i].param.empty() ? escapeControls(dims[i].param)
                                    : "?";
  }
  return s + "]";
}

/// Where a symbolic dim got its size: "--shape batch=8" or "graph input
/// 'x' (dim 0)".
struct Binding {
  int64_t size;
  std::string source;
};

/// A graph input as the model declares it and the shape given for it.
struct GraphInput {
  std::string name;
  Type elem;
  std::optional<SmallVector<DeclaredDim>> declared; // none: no shape
  const std::vector<int64_t> *given = nullptr;      // --shape or the data's
  bool fromData = false;
};

/// Binds symbolic dim `param` to `size` from `source`; fails when it has
/// another size already.
LogicalResult bindDim(const Importer &imp, llvm::StringMap<Binding> &bindings, const std::string &param,
             int64_t size, const std::string &source) {
  auto [it, inserted] = bindings.try_emplace(param, Binding{size, source});
  if (!inserted && it->second.size != size)
    return imp.fileError("symbolic dimension " + quotedName(param) + " is " + std::to_string(size) + " in " +
             source + " but " + std::to_string(it->second.size) + " in " + it->second.source);
  return success();
}

/// Checks the shape given for `in` (--shape or the data's) against the
/// model's declared one and binds its symbolic dims.
LogicalResult bindGivenShape(const Importer &imp, const GraphInput &in,
                    llvm::StringMap<Binding> &bindings) {
  if (!in.given)
    return success();
  std::string what = in.fromData ? "the input given for graph input " + quotedName(in.name)
                                 : "the shape given for graph input " + quotedName(in.name);
  const std::vector<int64_t> &given = *in.given;
  for (int64_t d : given)
    if (d < 0)
      return imp.fileError(what + " has a negative dimension");
  if (!in.declared)
    return success();
  if (given.size() != in.declared->size())
    return imp.fileError(what + " has rank " + std::to_string(given.size()) + " (" +
                         shapes::formatShape(given) + "); the model declares rank " +
                         std::to_string(in.declared->size()) + " " + formatDeclared(*in.declared));
  for (size_t i = 0; i < given.size(); ++i) {
    const DeclaredDim &d = (*in.declared)[i];
    if (d.size >= 0 && d.size != given[i])
      return imp.fileError(what + " is " + shapes::formatShape(given) +
                           ", but the model declares " + formatDeclared(*in.declared) + ": dim " +
                           std::to_string(i) + " is " + std::to_string(d.size));
    if (!d.param.empty())
      if (failed(bindDim(imp, bindings, d.param, given[i],
              "graph input " + quotedName(in.name) + " (dim " + std::to_string(i) + ")")))
        return failure();
  }
  return success();
}

/// The shape of graph input `in`: as given, else as declared with its
/// symbolic dims bound; fails for a dim of no known size.
FailureOr<Shape> graphInputShape(const Importer &imp, const GraphInput &in,
                      const llvm::StringMap<Binding> &bindings) {
  Shape shape;
  if (in.given) {
    shape.assign(in.given->begin(), in.given->end());
  } else {
    if (!in.declared)
      return imp.fileError("graph input " + quotedName(in.name) +
               " has no shape; give it with --shape " + escapeControls(in.name) + "=DIMS");
    for (auto [i, d] : llvm::enumerate(*in.declared)) {
      if (d.size >= 0) {
        shape.push_back(d.size);
        continue;
      }
      if (!d.param.empty()) {
        if (auto it = bindings.find(d.param); it != bindings.end()) {
          shape.push_back(it->second.size);
          continue;
        }
        return imp.fileError("graph input " + quotedName(in.name) + " has symbolic dimension " +
                 quotedName(d.param) + " at dim " + llvm::Twine(i) +
                 " with no size: give it with --shape " + escapeControls(d.param) +
                 "=N or --shape " + escapeControls(in.name) +
                 "=DIMS (mixprec run takes it from the input given)");
      }
      return imp.fileError("graph input " + quotedName(in.name) + " has unknown dimension at dim " +
               llvm::Twine(i) + " " + formatDeclared(*in.declared) + ": give its shape with --shape " +
               escapeControls(in.name) + "=DIMS (mixprec run takes it from the input given)");
    }
  }
  return shape;
}
} // namespace

FailureOr<SmallVector<Type>> Importer::graphInputTypes(const onnx::GraphProto &graph,
                                            SmallVector<std::string> &names) {
  SmallVector<GraphInput> inputs;
  llvm::StringSet<> seen;
  for (const onnx::ValueInfoProto &vi : graph.input()) {
    const std::string &name = vi.name();
    if (name.empty())
      return fileError("a graph input has no name");
    // Older exporters list initializers as inputs too: those are constants.
    if (values.count(name)) {
      if (options.inputShapes.count(name))
        return fileError("cannot set the shape of " + quotedName(name) +
             ": it is an initializer, not an input");
      continue;
    }
    if (!seen.insert(name).second)
      return fileError("graph input " + quotedName(name) + " is listed twice");
    if (!vi.has_type() || !vi.type().has_tensor_type())
      return fileError("graph input " + quotedName(name) + " is not a tensor");
    const onnx::TypeProto::Tensor &tt = vi.type().tensor_type();
    GraphInput in;
    in.name = name;
    in.elem = valueElementType(ctx, tt.elem_type());
    if (!in.elem)
      return fileError("graph input " + quotedName(name) + " has unsupported element type " +
           dataTypeName(tt.elem_type()) + " (supported: FLOAT, INT64, INT32, BOOL)");
    if (tt.has_shape()) {
      in.declared.emplace();
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto &dim = tt.shape().dim(i);
        DeclaredDim d;
        if (dim.has_dim_value() && dim.dim_value() < 0)
          return fileError("graph input " + quotedName(name) + " has negative dimension " +
               std::to_string(dim.dim_value()) + " at dim " + llvm::Twine(i));
        if (dim.has_dim_value())
          d.size = dim.dim_value();
        else if (dim.has_dim_param())
          d.param = dim.dim_param();
        in.declared->push_back(d);
      }
    }
    bool isStatic = in.declared && llvm::all_of(*in.declared, [](const DeclaredDim &d) {
                      return d.size >= 0;
                    });
    if (auto it = options.inputShapes.find(name); it != options.inputShapes.end()) {
      in.given = &it->second;
    } else if (auto it = options.dataShapes.find(name);
               it != options.dataShapes.end() && !isStatic) {
      in.given = &it->second;
      in.fromData = true;
    }
    inputs.push_back(std::move(in));
  }
  if (options.dataMustBeInputs)
    for (const auto &[name, dims] : options.dataShapes)
      if (!seen.count(name)) {
        std::string names;
        for (const GraphInput &in : inputs)
          names += (names.empty() ? "" : ", ") + quotedName(in.name);
        return fileError("data is given for " + quotedName(name) +
             ", which is not a graph input of the model (its inputs: " +
             (names.empty() ? std::string("none") : names) + ")");
      }
  // Symbolic dims take their sizes from --shape NAME=N first, then from the
  // shapes given for inputs; every binding of one name must agree.
  llvm::StringMap<Binding> bindings;
  llvm::StringSet<> usedParams;
  for (const GraphInput &in : inputs)
    if (in.declared)
      for (const DeclaredDim &d : *in.declared)
        if (!d.param.empty())
          usedParams.insert(d.param);
  std::map<std::string, int64_t> dimParams = options.dimParams;
  for (const auto &[name, dims] : options.inputShapes) {
    if (seen.count(name) || values.count(name))
      continue;
    // `--shape batch=8` names a symbolic dim (a graph input of that name
    // would win).
    if (usedParams.count(name) && dims.size() == 1 && !options.dimParams.count(name)) {
      dimParams[name] = dims.front();
      continue;
    }
    if (usedParams.count(name))
      return fileError("symbolic dimension " + quotedName(name) + " takes one size (--shape " +
           escapeControls(name) + "=N), got " +
           (dims.empty() ? std::string("none") : std::to_string(dims.size()) + " dims"));
    return fileError("a shape is given for " + quotedName(name) +
         ", which is not a graph input or a symbolic dimension of one");
  }
  for (const auto &[param, size] : dimParams) {
    if (!usedParams.count(param))
      return fileError("a size is given for symbolic dimension " + quotedName(param) +
           ", which no graph input has");
    if (size < 0)
      return fileError("the size given for symbolic dimension " + quotedName(param) + " is negative");
    bindings[param] = {size, "--shape " + escapeControls(param) + "=" + std::to_string(size)};
  }
  for (const GraphInput &in : inputs)
    if (failed(bindGivenShape(*this, in, bindings)))
      return failure();
  SmallVector<Type> types;
  for (const GraphInput &in : inputs) {
    FailureOr<Shape> inShape = graphInputShape(*this, in, bindings);
    if (failed(inShape))
      return failure();
    Shape &shape = *inShape;
    if (shapes::numElements(shape) < 0)
      return fileError("graph input " + quotedName(in.name) + " shape " +
                       shapes::formatShape(shape) + " has too many elements");
    names.push_back(in.name);
    types.push_back(RankedTensorType::get(shape, in.elem));
  }
  return types;
}

OwningOpRef<ModuleOp> Importer::importModel(const onnx::ModelProto &model) {
  OwningOpRef<ModuleOp> module;
  if (failed(buildModule(model, module)))
    return nullptr;
  return module;
}

LogicalResult Importer::buildModule(const onnx::ModelProto &model,
                                    OwningOpRef<ModuleOp> &module) {
  if (!model.has_graph())
    return fileError("model has no graph");
  if (model.ir_version() > kMaxIrVersion)
    return fileError("the model has IR version " + llvm::Twine(model.ir_version()) +
                     "; the newest this importer knows is " + llvm::Twine(kMaxIrVersion));
  if (failed(readOpset(model)))
    return failure();
  const onnx::GraphProto &graph = model.graph();
  // A graph that computes nothing is a broken export (onnxruntime refuses
  // the empty one).
  if (graph.output_size() == 0)
    return fileError("the graph has no outputs");

  // Names that something reads: converters refuse to drop outputs that are
  // used (e.g. LayerNormalization's Mean).
  for (const onnx::NodeProto &n : graph.node())
    for (const std::string &in : n.input())
      if (!in.empty())
        usedNames.insert(in);
  for (const onnx::ValueInfoProto &o : graph.output())
    usedNames.insert(o.name());

  if (failed(addInitializers(graph)))
    return failure();
  SmallVector<std::string> inputNames;
  FailureOr<SmallVector<Type>> inputTypes = graphInputTypes(graph, inputNames);
  if (failed(inputTypes))
    return failure();

  module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(nameLoc(graph.name().empty() ? "main" : graph.name()),
                                           "main", builder.getFunctionType(*inputTypes, {}));
  Block *body = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(inputNames)) {
    func.setArgAttr(i, graph::GraphDialect::kNameAttr, builder.getStringAttr(name));
    Entry e;
    e.value = body->getArgument(i);
    values[name] = e;
    // A pinned input is its given value everywhere (the argument stays,
    // unread); the module is specialised to it (onValueUsed).
    if (options.pinnedInputs.count(name))
      if (DenseElementsAttr given = givenInputValue(name)) {
        Entry pinned;
        pinned.constant = given;
        pinned.constantLoc = nameLoc(name);
        values[name] = pinned;
      }
  }
  builder.setInsertionPointToEnd(body);

  graphProto = &graph;
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(convertNode(graph.node(i), i)))
      return failure();
  if (failed(addReturn(graph, func)))
    return failure();
  return verifyModule(*module);
}

LogicalResult Importer::convertNode(const onnx::NodeProto &node, int index) {
  std::string name =
      node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
  NodeCtx c{node, name, nameLoc(name)};
  nodeOpTypes[name] = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nodeError(c, "domain " + quotedName(node.domain()) +
                    " is not supported (only the default ONNX domain is)");
  const OpInfo *info = findOp(node.op_type());
  // This one message puts the file last: "unsupported op 'Hardmax' (node
  // 'hm1', opset 13) in model.onnx".
  auto unsupported = [&] {
    return "unsupported op " + quotedName(node.op_type()) + " (node " + quotedName(name) +
           ", opset " + std::to_string(opset) + ") in " + escapeControls(path);
  };
  if (!info)
    return emitError(c.loc) << unsupported();
  int64_t minOpset = info->forms.front().since;
  if (opset < minOpset)
    return emitError(c.loc) << unsupported() << ": " << quotedName(node.op_type())
                            << " exists from opset " << minOpset;
  if (failed(checkSchema(c, info->forms)))
    return failure();
  // Every input must exist before the converter looks at it, so that its
  // error names the missing tensor rather than some later symptom.
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &in = node.input(i);
    if (!in.empty() && !values.count(in))
      return nodeError(c,
               "input " + quotedName(in) + " is not a graph input, initializer or earlier output");
  }
  for (const std::string &out : node.output())
    if (!out.empty() && values.count(out))
      return nodeError(c, "output " + quotedName(out) + " is already defined");
  for (const std::string &out : node.output())
    if (!out.empty())
      producers[out] = index;
  // Nodes whose inputs are all known fold to constants (OnnxFold.cpp).
  FailureOr<bool> folded = tryFold(c);
  if (failed(folded))
    return failure();
  if (*folded)
    return success();
  return info->run(*this, c);
}

namespace {
/// The words of a form's attribute list: names, and "*" for any other name.
llvm::SmallVector<llvm::StringRef> attributeWords(const OpForm &form) {
  llvm::SmallVector<llvm::StringRef> words;
  llvm::StringRef(form.attributes).split(words, ' ', -1, /*KeepEmpty=*/false);
  return words;
}

/// The attribute names a form lists.
llvm::SmallVector<llvm::StringRef> formAttributes(const OpForm &form) {
  llvm::SmallVector<llvm::StringRef> names = attributeWords(form);
  llvm::erase(names, "*");
  return names;
}

/// Whether a node of this form may carry attribute `attr`.
bool formHas(const OpForm &form, llvm::StringRef attr) {
  llvm::SmallVector<llvm::StringRef> words = attributeWords(form);
  return llvm::is_contained(words, attr) || llvm::is_contained(words, "*");
}

/// "1 input", "2 to 3 inputs", "at least 1 input", "no inputs".
std::string arityText(int min, int max, llvm::StringRef noun) {
  if (max == 0)
    return "no " + noun.str() + "s";
  std::string count = max == kVariadic ? "at least " + std::to_string(min)
                      : min == max     ? std::to_string(min)
                                       : std::to_string(min) + " to " + std::to_string(max);
  return count + " " + noun.str() + (max == 1 || (max == kVariadic && min == 1) ? "" : "s");
}
} // namespace

LogicalResult Importer::checkSchema(const NodeCtx &c, llvm::ArrayRef<OpForm> forms) const {
  // The form in force is the last one introduced at or before the opset.
  size_t current = 0;
  for (size_t i = 0; i < forms.size(); ++i)
    if (forms[i].since <= opset)
      current = i;
  const OpForm &form = forms[current];
  std::string where = escapeControls(c.node.op_type()) + " at opset " + std::to_string(opset);

  llvm::StringSet<> seen;
  for (int i = 0; i < c.node.attribute_size(); ++i) {
    const std::string &attr = c.node.attribute(i).name();
    if (attr.empty())
      return nodeError(c, "attribute #" + llvm::Twine(i) + " has no name");
    if (!seen.insert(attr).second)
      return nodeError(c, "attribute " + quotedName(attr) + " is given twice");
    if (formHas(form, attr))
      continue;
    // Name the opset that dropped or introduced it, where one did.
    for (size_t f = current; f-- > 0;)
      if (formHas(forms[f], attr))
        return nodeError(c, "attribute " + quotedName(attr) + " is not allowed from opset " +
                        llvm::Twine(forms[f + 1].since));
    for (size_t f = current + 1; f < forms.size(); ++f)
      if (formHas(forms[f], attr))
        return nodeError(c, "attribute " + quotedName(attr) + " exists from opset " +
                        llvm::Twine(forms[f].since) + " (the model has opset " +
                        llvm::Twine(opset) + ")");
    std::string takes = llvm::join(formAttributes(form), ", ");
    return nodeError(c, "unknown attribute " + quotedName(attr) + " (" + where +
                    (takes.empty() ? " takes none)" : " takes: " + takes + ")"));
  }

  // "input #1 ('h') is one too many: Relu at opset 13 takes 1 input".
  auto checkArity = [&](int count, int min, int max, llvm::StringRef noun, llvm::StringRef verb,
                        auto nameOf) -> LogicalResult {
    std::string rule = where + " " + verb.str() + " " + arityText(min, max, noun);
    if (max != kVariadic && count > max) {
      std::string first = "#" + std::to_string(max) + " (" + quotedName(nameOf(max)) + ")";
      if (count == max + 1)
        return nodeError(c, noun + " " + first + " is one too many: " + rule);
      return nodeError(c,
               noun + "s " + first + " to #" + llvm::Twine(count - 1) + " are too many: " + rule);
    }
    if (count < min)
      return nodeError(c, "has " + (count == 0 ? "no " + noun.str() : arityText(count, count, noun)) +
                      ", but " + rule);
    return success();
  };
  if (failed(checkArity(c.node.input_size(), form.minInputs, form.maxInputs, "input", "takes",
                        [&](int i) { return c.node.input(i); })))
    return failure();
  return checkArity(c.node.output_size(), form.minOutputs, form.maxOutputs, "output", "has",
                    [&](int i) { return c.node.output(i); });
}

LogicalResult Importer::checkGraphOutputType(const onnx::ValueInfoProto &o, RankedTensorType type) const {
  if (!o.has_type() || o.type().value_case() == onnx::TypeProto::VALUE_NOT_SET)
    return success(); // no declared type: the inferred one stands
  const onnx::TypeProto &t = o.type();
  if (!t.has_tensor_type()) {
    const char *kind = t.has_sequence_type()        ? "a sequence"
                       : t.has_map_type()           ? "a map"
                       : t.has_optional_type()      ? "an optional"
                       : t.has_sparse_tensor_type() ? "a sparse tensor"
                                                    : "an opaque type";
    return fileError("graph output " + quotedName(o.name()) + " is declared as " + kind + ", not a tensor");
  }
  // A declared type must agree with the inferred type: a mismatch means the
  // importer (or the file) got something wrong.
  const auto &tt = t.tensor_type();
  std::string inferred =
      elementTypeName(type.getElementType()) + " " + shapes::formatShape(type.getShape());
  if (tt.elem_type() == onnx::TensorProto::UNDEFINED)
    return fileError("graph output " + quotedName(o.name()) + " has element type UNDEFINED (it is " + inferred +
         ")");
  if (valueElementType(ctx, tt.elem_type()) != type.getElementType())
    return fileError("graph output " + quotedName(o.name()) + " is declared " + dataTypeName(tt.elem_type()) +
         " but is " + inferred);
  if (!tt.has_shape())
    return success();
  bool agree = tt.shape().dim_size() == static_cast<int>(type.getRank());
  std::string declared = "[";
  for (int d = 0; d < tt.shape().dim_size(); ++d) {
    const auto &dim = tt.shape().dim(d);
    declared += (d ? ", " : "");
    if (dim.has_dim_value()) {
      declared += std::to_string(dim.dim_value());
      if (agree && dim.dim_value() != type.getDimSize(d))
        agree = false;
    } else {
      declared += dim.dim_param().empty() ? "?" : escapeControls(dim.dim_param());
    }
  }
  if (!agree)
    return fileError("graph output " + quotedName(o.name()) + " is declared with shape " + declared +
         "] but the importer infers " + inferred);
  return success();
}

LogicalResult Importer::addReturn(const onnx::GraphProto &graph, func::FuncOp func) {
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &o : graph.output()) {
    auto it = values.find(o.name());
    if (o.name().empty() || it == values.end())
      return fileError("graph output " + quotedName(o.name()) +
           " is not produced by any node, input or initializer");
    // DOUBLE values exist only while folding (OnnxFold.cpp).
    if (it->second.constant && it->second.constant.getElementType().isF64())
      return fileError("graph output " + quotedName(o.name()) +
           " is DOUBLE: mixprec has no DOUBLE tensors (it computes DOUBLE only at compile time, "
           "until a Cast to another type)");
    Value v = materialize(it->second);
    auto type = cast<RankedTensorType>(v.getType());
    if (failed(checkGraphOutputType(o, type)))
      return failure();
    results.push_back(v);
    resultTypes.push_back(type);
  }
  builder.create<func::ReturnOp>(fileLoc, results);
  // Ops whose results nothing reads (a transpose folded into a linear
  // layer's weight layout) are dropped; every mp op is side-effect free.
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isa<graph::GraphDialect>(op->getDialect()))
      op->erase();
  func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(), resultTypes));
  for (int i = 0; i < graph.output_size(); ++i)
    func.setResultAttr(i, graph::GraphDialect::kNameAttr,
                       builder.getStringAttr(graph.output(i).name()));
  return success();
}

LogicalResult Importer::verifyModule(ModuleOp module) {
  // The converters compute every type with the verifiers' shape functions,
  // so a failure here is an importer bug; still report it as an error
  // naming the node rather than crash or return bad IR.
  std::string message;
  std::string nodeName;
  {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      if (diag.getSeverity() == DiagnosticSeverity::Error && message.empty()) {
        message = diag.str();
        if (auto loc = dyn_cast<NameLoc>(diag.getLocation()))
          nodeName = loc.getName().str();
      }
      return success();
    });
    if (succeeded(mlir::verify(module)))
      return success();
  }
  auto it = nodeOpTypes.find(nodeName);
  if (it != nodeOpTypes.end())
    return fileError("node " + quotedName(nodeName) + " (" + escapeControls(it->second) +
         "): the imported op fails verification: " + escapeControls(message));
  return fileError("the imported module fails verification" +
       (nodeName.empty() ? std::string() : " at " + quotedName(nodeName)) + ": " +
       escapeControls(message));
  return success();
}

//===----------------------------------------------------------------------===//
// Value table
//===----------------------------------------------------------------------===//

bool Importer::hasInput(const NodeCtx &c, int i) const {
  return i >= 0 && i < c.node.input_size() && !c.node.input(i).empty();
}

LogicalResult Importer::entryOf(const NodeCtx &c, int i, Entry *&entry) {
  if (!hasInput(c, i))
    return nodeError(c, "missing required input #" + llvm::Twine(i));
  auto it = values.find(c.node.input(i));
  if (it == values.end()) // convertNode checked this; keep the guard local
    return nodeError(c, "input " + quotedName(c.node.input(i)) +
                            " is not a graph input, initializer or earlier output");
  entry = &it->second;
  return success();
}

Value Importer::materialize(Entry &e) {
  if (!e.value) {
    // Aliases (Identity, no-op Cast...) copy the entry before it is
    // materialized: share one mp.constant per tensor and location.
    Value &shared = materializedConstants[{e.constant, e.constantLoc}];
    if (!shared)
      shared = constant(Location(e.constantLoc), e.constant);
    e.value = shared;
  }
  return e.value;
}

LogicalResult Importer::input(const NodeCtx &c, int i, Value &value) {
  return withEntry(c, i, [&](Entry &e) { value = materialize(e); });
}

LogicalResult Importer::optInput(const NodeCtx &c, int i, Value &value) {
  value = Value();
  return hasInput(c, i) ? input(c, i, value) : success();
}

RankedTensorType Importer::entryType(const Entry &e) const {
  return e.value ? cast<RankedTensorType>(e.value.getType())
                 : cast<RankedTensorType>(e.constant.getType());
}

LogicalResult Importer::inputType(const NodeCtx &c, int i, RankedTensorType &type) {
  return withEntry(c, i, [&](Entry &e) { type = entryType(e); });
}

LogicalResult Importer::constInput(const NodeCtx &c, int i, DenseElementsAttr &attr) {
  return withEntry(c, i, [&](Entry &e) { attr = e.constant; });
}

DenseElementsAttr Importer::givenInputValue(const std::string &name) {
  auto it = values.find(name);
  if (it == values.end() || !it->second.value || !isa<BlockArgument>(it->second.value))
    return nullptr;
  auto type = cast<RankedTensorType>(it->second.value.getType());
  int64_t n = shapes::numElements(type.getShape());
  DenseElementsAttr attr;
  if (type.getElementType().isInteger(64) || type.getElementType().isInteger(32)) {
    auto given = options.dataValues.find(name);
    if (given != options.dataValues.end() && n == static_cast<int64_t>(given->second.size()))
      attr = makeIntAttr(type.getShape(), type.getElementType(), given->second);
  } else if (type.getElementType().isF32()) {
    auto given = options.dataFloatValues.find(name);
    if (given != options.dataFloatValues.end() && n == static_cast<int64_t>(given->second.size()))
      attr = makeF32Attr(ctx, type.getShape(), given->second);
  }
  // (A count that differs from the input's is the run's to report.)
  if (attr && options.onValueUsed)
    options.onValueUsed(name);
  return attr;
}

LogicalResult Importer::requireConst(const NodeCtx &c, int i, llvm::StringRef role,
                                     DenseElementsAttr &attr) {
  if (failed(constInput(c, i, attr)))
    return failure();
  // A graph input the run gave a value for: the module is specialised to
  // it (`mixprec run` then keys its cached module by that value too).
  if (!attr)
    attr = givenInputValue(c.node.input(i));
  if (!attr) {
    // Computed at run time from graph inputs the run gave values for: ask
    // for another import with those inputs pinned to their values (the
    // error stands if there is nothing new to pin).
    SmallVector<std::string> from = runTimeInputs(c.node.input(i));
    auto given = [&](const std::string &name) {
      return options.dataValues.count(name) || options.dataFloatValues.count(name);
    };
    if (!from.empty() && llvm::all_of(from, given) &&
        llvm::any_of(from, [&](const std::string &n) { return !options.pinnedInputs.count(n); }))
      pinRequest.insert(from.begin(), from.end());
  }
  if (!attr)
    return nodeError(c, "input '" + role + "' (" + quotedName(c.node.input(i)) +
                            ") must be a compile-time constant (an initializer, a Constant output "
                            "or a value that folds): " +
                            runTimeOrigin(c.node.input(i)));
  return success();
}

LogicalResult Importer::requireConstInts(const NodeCtx &c, int i, llvm::StringRef role,
                                         SmallVector<int64_t> &values) {
  DenseElementsAttr attr;
  if (failed(requireConst(c, i, role, attr)))
    return failure();
  if (!attr.getElementType().isInteger(64) && !attr.getElementType().isInteger(32))
    return nodeError(c, "input '" + role + "' (" + quotedName(c.node.input(i)) +
                            ") must be INT64 or INT32, got " +
                            elementTypeName(attr.getElementType()));
  if (attr.getType().getRank() > 1)
    return nodeError(c, "input '" + role + "' (" + quotedName(c.node.input(i)) +
                            ") must be 1-D, got shape " +
                            shapes::formatShape(attr.getType().getShape()));
  values = intValues(attr);
  return success();
}

void Importer::defineEntry(const NodeCtx &c, int i, const Entry &e) {
  if (i >= c.node.output_size() || c.node.output(i).empty())
    return; // an output nobody named
  values[c.node.output(i)] = e;
}

void Importer::defineValue(const NodeCtx &c, int i, Value v) {
  Entry e;
  e.value = v;
  defineEntry(c, i, e);
}

LogicalResult Importer::defineResult(const NodeCtx &c, int i, FailureOr<Value> v) {
  if (failed(v))
    return failure();
  defineValue(c, i, *v);
  return success();
}

void Importer::defineConst(const NodeCtx &c, int i, DenseElementsAttr attr) {
  Entry e;
  e.constant = attr;
  e.constantLoc = c.loc;
  defineEntry(c, i, e);
}

LogicalResult Importer::aliasOutput(const NodeCtx &c, int i, int inputIndex) {
  return withEntry(c, inputIndex, [&](Entry &e) { defineEntry(c, i, e); });
}

LogicalResult Importer::requireUnusedOutputs(const NodeCtx &c, int firstUnsupported, llvm::StringRef why) {
  for (int i = firstUnsupported; i < c.node.output_size(); ++i) {
    const std::string &out = c.node.output(i);
    if (!out.empty() && usedNames.count(out))
      return nodeError(c, "output #" + llvm::Twine(i) + " (" + quotedName(out) + ") is used, but " + why);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

namespace {
const char *attrTypeName(int type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return "FLOAT";
  case onnx::AttributeProto::INT:
    return "INT";
  case onnx::AttributeProto::STRING:
    return "STRING";
  case onnx::AttributeProto::TENSOR:
    return "TENSOR";
  case onnx::AttributeProto::GRAPH:
    return "GRAPH";
  case onnx::AttributeProto::FLOATS:
    return "FLOATS";
  case onnx::AttributeProto::INTS:
    return "INTS";
  case onnx::AttributeProto::STRINGS:
    return "STRINGS";
  case onnx::AttributeProto::TENSORS:
    return "TENSORS";
  case onnx::AttributeProto::GRAPHS:
    return "GRAPHS";
  case onnx::AttributeProto::SPARSE_TENSOR:
    return "SPARSE_TENSOR";
  case onnx::AttributeProto::SPARSE_TENSORS:
    return "SPARSE_TENSORS";
  case onnx::AttributeProto::TYPE_PROTO:
    return "TYPE_PROTO";
  case onnx::AttributeProto::TYPE_PROTOS:
    return "TYPE_PROTOS";
  default:
    return "UNDEFINED";
  }
}

/// Whether an attribute without a `type` (IR < 2 files) holds `type`.
bool untypedHolds(const onnx::AttributeProto &a, onnx::AttributeProto::AttributeType type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return a.has_f();
  case onnx::AttributeProto::INT:
    return a.has_i();
  case onnx::AttributeProto::STRING:
    return a.has_s();
  case onnx::AttributeProto::TENSOR:
    return a.has_t();
  case onnx::AttributeProto::FLOATS:
    return a.floats_size() > 0;
  case onnx::AttributeProto::INTS:
    return a.ints_size() > 0;
  default:
    return false;
  }
}
} // namespace

LogicalResult Importer::findAttr(const NodeCtx &c, llvm::StringRef name,
                                 onnx::AttributeProto::AttributeType type,
                                 const onnx::AttributeProto *&attr) const {
  attr = nullptr;
  for (const onnx::AttributeProto &a : c.node.attribute()) {
    if (a.name() != name)
      continue;
    if (a.type() == type ||
        (a.type() == onnx::AttributeProto::UNDEFINED && untypedHolds(a, type))) {
      attr = &a;
      return success();
    }
    return nodeError(c, "attribute '" + name + "' must be of type " + attrTypeName(type) +
                            ", got " + attrTypeName(a.type()));
  }
  return success();
}

LogicalResult Importer::attrIntOpt(const NodeCtx &c, llvm::StringRef name,
                                   std::optional<int64_t> &value) const {
  const onnx::AttributeProto *a;
  if (failed(findAttr(c, name, onnx::AttributeProto::INT, a)))
    return failure();
  value = a ? std::optional<int64_t>(a->i()) : std::nullopt;
  return success();
}

LogicalResult Importer::attrInt(const NodeCtx &c, llvm::StringRef name, int64_t dflt,
                                int64_t &value) const {
  std::optional<int64_t> v;
  if (failed(attrIntOpt(c, name, v)))
    return failure();
  value = v.value_or(dflt);
  return success();
}

LogicalResult Importer::attrBool(const NodeCtx &c, llvm::StringRef name, bool dflt,
                                 bool &value) const {
  int64_t v;
  if (failed(attrInt(c, name, dflt ? 1 : 0, v)))
    return failure();
  if (v != 0 && v != 1)
    return nodeError(c, "attribute '" + name + "' must be 0 or 1, got " + llvm::Twine(v));
  value = v == 1;
  return success();
}

LogicalResult Importer::attrFloat(const NodeCtx &c, llvm::StringRef name, float dflt,
                                  float &value) const {
  const onnx::AttributeProto *a;
  if (failed(findAttr(c, name, onnx::AttributeProto::FLOAT, a)))
    return failure();
  value = a ? a->f() : dflt;
  return success();
}

LogicalResult Importer::attrString(const NodeCtx &c, llvm::StringRef name, llvm::StringRef dflt,
                                   std::string &value) const {
  const onnx::AttributeProto *a;
  if (failed(findAttr(c, name, onnx::AttributeProto::STRING, a)))
    return failure();
  value = a ? a->s() : dflt.str();
  return success();
}

LogicalResult Importer::attrInts(const NodeCtx &c, llvm::StringRef name,
                                 std::optional<SmallVector<int64_t>> &values) const {
  const onnx::AttributeProto *a;
  if (failed(findAttr(c, name, onnx::AttributeProto::INTS, a)))
    return failure();
  values = std::nullopt;
  if (a)
    values = SmallVector<int64_t>(a->ints().begin(), a->ints().end());
  return success();
}

} // namespace onnx_import

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

namespace {
/// Parses the protobuf in `bytes` and imports it; `path` names the model in
/// errors and locations, and its folder holds the external data.
OwningOpRef<ModuleOp> importBytes(MLIRContext &context, llvm::StringRef bytes,
                                  const std::string &path, const OnnxImportOptions &options,
                                  std::string &error) {
  std::string shownPath = onnx_import::escapeControls(path);
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    error = shownPath + ": the file is larger than 2 GB (protobuf's limit); store the "
                        "weights as external data";
    return nullptr;
  }
  onnx::ModelProto model;
  {
    google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
    google::protobuf::io::CodedInputStream coded(&stream);
    // The default limit (64 MB in older protobufs) is far below real
    // models; 2 GB is protobuf's hard limit.
    coded.SetTotalBytesLimit(INT_MAX);
    if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
      error = shownPath + ": not a valid ONNX model (protobuf parsing failed: truncated or "
                          "not an ONNX file)";
      return nullptr;
    }
  }
  // Imports again, with more graph inputs pinned to their given values,
  // while an import fails only for want of them (Importer::pinRequest);
  // each round pins at least one more input, so this ends.
  OnnxImportOptions pinning = options;
  while (true) {
    // The importer emits its errors as diagnostics; the first is the
    // message (the rest, if any, follow from it).
    std::string firstError;
    ScopedDiagnosticHandler collect(&context, [&](Diagnostic &diag) {
      if (diag.getSeverity() != DiagnosticSeverity::Error)
        return failure(); // not ours to swallow
      if (firstError.empty())
        firstError = diag.str();
      return success();
    });
    onnx_import::Importer importer(context, path, pinning);
    if (OwningOpRef<ModuleOp> module = importer.importModel(model))
      return module;
    size_t before = pinning.pinnedInputs.size();
    pinning.pinnedInputs.insert(importer.inputsToPin().begin(), importer.inputsToPin().end());
    if (pinning.pinnedInputs.size() == before) {
      error = firstError;
      return nullptr;
    }
  }
}

OwningOpRef<ModuleOp> importFile(MLIRContext &context, const std::string &path,
                                 const OnnxImportOptions &options, std::string &error) {
  std::string shownPath = onnx_import::escapeControls(path);
  onnx_import::RegularFile input;
  if (!input.open(path, error))
    return nullptr; // escaped with the rest below
  if (input.size() > static_cast<uint64_t>(INT_MAX)) {
    error = shownPath + ": the file is larger than 2 GB (protobuf's limit); store the "
                        "weights as external data";
    return nullptr;
  }
  // Exactly the size the open file had: a file that grows is not followed.
  std::error_code ec;
  std::unique_ptr<llvm::MemoryBuffer> buffer = input.read(0, input.size(), ec);
  if (!buffer) {
    error = shownPath + ": cannot read the file: " + ec.message();
    return nullptr;
  }
  return importBytes(context, buffer->getBuffer(), path, options, error);
}

/// Loads the dialects the importer builds and keeps the error contract: one
/// line, set on every failure.
OwningOpRef<ModuleOp> importWithContract(MLIRContext &context, const std::string &path,
                                         std::string &error,
                                         llvm::function_ref<OwningOpRef<ModuleOp>()> import) {
  error.clear();
  context.getOrLoadDialect<graph::GraphDialect>();
  context.getOrLoadDialect<func::FuncDialect>();
  OwningOpRef<ModuleOp> module;
  // The importer reports through diagnostics and throws nothing; what can
  // throw is below it: protobuf's parser (std::exception) and the
  // allocations of a model's tensors (std::bad_alloc).
  try {
    module = import();
  } catch (const std::bad_alloc &) {
    error = onnx_import::escapeControls(path) + ": out of memory while importing";
  } catch (const std::exception &e) {
    error = onnx_import::escapeControls(path) + ": " + onnx_import::escapeControls(e.what());
  }
  if (!module && error.empty()) // every failure sets a message; keep the contract
    error = onnx_import::escapeControls(path) + ": import failed";
  // Every name and path went in escaped; this only guards the one-line
  // contract against a message that missed it (it changes nothing else).
  error = onnx_import::escapeControls(error);
  return module;
}
} // namespace

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context, const std::string &path,
                                     const OnnxImportOptions &options, std::string &error) {
  return importWithContract(context, path, error, [&] {
    return importFile(context, path, options, error);
  });
}

OwningOpRef<ModuleOp> importOnnxBuffer(MLIRContext &context, llvm::StringRef bytes,
                                       const std::string &name, std::string &error) {
  return importWithContract(context, name, error, [&] {
    return importBytes(context, bytes, name, OnnxImportOptions{}, error);
  });
}

OwningOpRef<ModuleOp> importOnnxFile(MLIRContext &context, const std::string &path,
                                     std::string &error) {
  return importOnnxFile(context, path, OnnxImportOptions{}, error);
}

} // namespace mixprec::compiler
