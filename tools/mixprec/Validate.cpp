//===- Validate.cpp - mixprec validate -------------------------------------===//
//
// Runs the FP32 reference (the imported graph, no passes) and the mixed
// plan (the compiled graph) on the same inputs with the CPU interpreter and
// compares them: per graph output, and per op by a shadow comparison that
// matches the ops of the two graphs by node label and op type (casts,
// constants and FP8 scaling ops have no FP32 counterpart and are skipped).
// Names the first op of the mixed run whose result went non-finite (holds
// more non-finite values than in the FP32 run; constants included).
//
//===----------------------------------------------------------------------===//
#include "tools/mixprec/Commands.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/PrecisionUtils.h"
#include "tools/mixprec/CliCommon.h"
#include "tools/mixprec/ModelLoader.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cfloat>
#include <cmath>
#include <map>
#include <optional>

using namespace mlir;
using mixprec::compiler::GraphSignature;
using mixprec::compiler::HostTensor;
using mixprec::compiler::Interpreter;
using mixprec::graph::GraphDialect;
namespace mp = mixprec::graph;
namespace passes = mixprec::passes;

namespace mixprec::tools {
namespace {

/// Exit codes of validate (also in the usage text).
constexpr int kExitNonFinite = 3;
constexpr int kExitTolerance = 4;

/// Error metrics of a mixed tensor `a` against its FP32 reference `b`,
/// accumulated in double over one or more tensors.
struct Metrics {
  double maxAbs = 0; ///< max |a-b|; inf where a and b differ in a non-finite value
  double maxRef = 0; ///< max |b| over finite b
  double dot = 0, normA = 0, normB = 0; ///< over elements where both are finite
  int64_t nonFinite = 0, refNonFinite = 0, elements = 0;

  void add(const std::vector<float> &a, const std::vector<float> &b) {
    for (size_t i = 0; i < a.size(); ++i) {
      double x = a[i], y = b[i];
      bool fx = std::isfinite(x), fy = std::isfinite(y);
      nonFinite += !fx;
      refNonFinite += !fy;
      if (fx && fy) {
        maxAbs = std::max(maxAbs, std::fabs(x - y));
        maxRef = std::max(maxRef, std::fabs(y));
        dot += x * y;
        normA += x * x;
        normB += y * y;
      } else if (!(x == y || (std::isnan(x) && std::isnan(y)))) {
        maxAbs = INFINITY; // one side non-finite, or infinities of opposite sign
      }
    }
    elements += static_cast<int64_t>(a.size());
  }

  /// max|a-b| / max|b| (max|b| floored at FLT_MIN, as run_e2e.py does).
  double maxRel() const {
    return maxAbs == 0 ? 0.0 : maxAbs / std::max(maxRef, static_cast<double>(FLT_MIN));
  }

  /// Cosine similarity over the elements where both are finite (1 if both
  /// are all zeros, 0 if only one is); NaN where a and b differ in a
  /// non-finite value, as the similarity is then undefined.
  double cosine() const {
    if (std::isinf(maxAbs))
      return NAN;
    if (normA == 0 && normB == 0)
      return 1.0;
    if (normA == 0 || normB == 0)
      return 0.0;
    return dot / std::sqrt(normA * normB);
  }
};

/// A tensor's values as float32 (integers and bools converted).
std::vector<float> floatsOf(const HostTensor &t) {
  switch (t.kind) {
  case HostTensor::Kind::Float:
    return t.floats;
  case HostTensor::Kind::Int:
    return std::vector<float>(t.ints.begin(), t.ints.end());
  case HostTensor::Kind::Bool:
    return std::vector<float>(t.bools.begin(), t.bools.end());
  }
  return {};
}

int64_t countNonFinite(const HostTensor &t) {
  if (t.kind != HostTensor::Kind::Float)
    return 0;
  int64_t n = 0;
  for (float v : t.floats)
    n += !std::isfinite(v);
  return n;
}

std::string number(double v, const char *fmt) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << llvm::format(fmt, v);
  return s;
}

/// A finite number, or null (JSON has no inf/nan).
llvm::json::Value jsonNumber(double v) {
  if (std::isfinite(v))
    return v;
  return nullptr;
}

/// One compared tensor or op, as printed.
struct Comparison {
  std::string name, type, dtype;
  Metrics metrics;
};

llvm::json::Object toJson(const Comparison &c, bool isOp) {
  llvm::json::Object o{
      {isOp ? "node" : "name", c.name},           {"dtype", c.dtype},
      {"max_abs", jsonNumber(c.metrics.maxAbs)},  {"max_rel", jsonNumber(c.metrics.maxRel())},
      {"cosine", jsonNumber(c.metrics.cosine())}, {"nonfinite", c.metrics.nonFinite},
      {"ref_nonfinite", c.metrics.refNonFinite},  {"elements", c.metrics.elements}};
  if (isOp)
    o["type"] = c.type;
  return o;
}

std::vector<std::string> tableRow(const Comparison &c, bool isOp) {
  std::vector<std::string> row{c.name};
  if (isOp)
    row.push_back(c.type);
  row.push_back(c.dtype);
  row.push_back(number(c.metrics.maxAbs, "%.3e"));
  row.push_back(number(c.metrics.maxRel(), "%.3e"));
  row.push_back(number(c.metrics.cosine(), "%.8f"));
  row.push_back(std::to_string(c.metrics.nonFinite));
  return row;
}

std::string dtypeOf(Operation *op) {
  if (auto p = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr))
    return passes::dtypeName(p.getValue());
  if (op->getNumResults() == 0)
    return "-";
  return passes::dtypeName(cast<RankedTensorType>(op->getResult(0).getType()).getElementType());
}

/// Ops without an FP32 counterpart: what the precision passes add.
bool addedByPasses(Operation *op) {
  graph::PrecisionClass c = graph::precisionClassOf(op);
  return c == graph::PrecisionClass::Constant || c == graph::PrecisionClass::Cast ||
         c == graph::PrecisionClass::Scaling;
}

/// The op type an op is matched by: FP8 GEMMs stand for the matmul or
/// linear they replaced.
std::string matchType(Operation *op) {
  if (isa<mp::ScaledMatmulOp>(op))
    return "matmul";
  if (isa<mp::ScaledLinearOp>(op))
    return "linear";
  return passes::opTypeName(op).str();
}

} // namespace

int runValidate(llvm::ArrayRef<std::string> rawArgs) {
  std::vector<std::string> rest;
  std::string jsonPath;
  double tolerance = -1;
  if (int rc = splitExtraArgs("validate", rawArgs, rest, jsonPath, &tolerance))
    return rc;
  CompileArgs args;
  if (int rc = parseCompileArgs("validate", rest, args))
    return rc;
  if (!args.output.empty())
    return usageError("validate: -o is not an option of validate (use --json FILE)");

  MLIRContext context;
  ReferenceAndPlan loaded;
  if (int rc = loadReferenceAndPlan(context, args, loaded))
    return rc;
  func::FuncOp refFunc = loaded.referenceFunc, func = loaded.planFunc;
  std::string error;

  GraphSignature sig = compiler::getSignature(refFunc);
  std::vector<HostTensor> inputs;
  if (!loadInputs(refFunc, sig, args.inputs, args.seed, inputs, error))
    return fail(error);

  // The FP32 reference: every op result that the mixed run can be matched
  // with, by (label, op type), and the number of non-finite values of every
  // op, constants included. Labels seen twice are ambiguous and skipped.
  using Key = std::pair<std::string, std::string>;
  std::map<Key, std::vector<HostTensor>> refResults;
  std::map<Key, int64_t> refNonFinite;
  std::map<Key, int> refSeen;
  Interpreter refInterpreter(refFunc);
  refInterpreter.setObserver([&](Operation *op, ArrayRef<const HostTensor *> results) {
    std::string label = nodeLabel(op);
    if (label.empty())
      return;
    Key key{label, matchType(op)};
    if (++refSeen[key] > 1) {
      refResults.erase(key);
      refNonFinite.erase(key);
      return;
    }
    int64_t &n = refNonFinite[key];
    for (const HostTensor *t : results)
      n += countNonFinite(*t);
    if (addedByPasses(op))
      return;
    std::vector<HostTensor> &stored = refResults[key];
    for (const HostTensor *t : results)
      stored.push_back(*t);
  });
  std::vector<HostTensor> refOutputs;
  if (!refInterpreter.prepare(error) || !refInterpreter.run(inputs, refOutputs, error))
    return fail(args.model + " (FP32 reference): " + error);

  // The mixed run, compared op by op as it goes. An op "went non-finite"
  // when its results hold more non-finite values than its FP32 counterpart
  // (or, for what the passes added, than its operands): it made them, and
  // did not just pass on an input's or an FP32 mask's infinities.
  std::vector<Comparison> opRows;
  int unmatched = 0;
  std::optional<Comparison> firstNonFinite;
  llvm::DenseMap<Value, int64_t> nonFiniteOf;
  unsigned index = 0;
  Interpreter interpreter(func);
  interpreter.setObserver([&](Operation *op, ArrayRef<const HostTensor *> results) {
    bool isConstant = isa<mp::ConstantOp>(op);
    std::string label = nodeLabel(op);
    if (label.empty() && !isConstant)
      label = "#" + std::to_string(index);
    index += !isConstant;
    Key key{label, matchType(op)};
    int64_t made = 0;
    for (auto [result, t] : llvm::zip(op->getResults(), results)) {
      nonFiniteOf[result] = countNonFinite(*t);
      made += nonFiniteOf[result];
    }
    if (!firstNonFinite && made) {
      int64_t before = 0;
      auto ref = label.empty() ? refNonFinite.end() : refNonFinite.find(key);
      if (ref != refNonFinite.end())
        before = ref->second;
      else
        for (Value operand : op->getOperands())
          before += nonFiniteOf.lookup(operand);
      if (made > before) {
        firstNonFinite = Comparison{
            label.empty() ? "<constant>" : label, passes::opTypeName(op).str(), dtypeOf(op), {}};
        firstNonFinite->metrics.nonFinite = made;
        firstNonFinite->metrics.refNonFinite = before;
        for (const HostTensor *t : results)
          firstNonFinite->metrics.elements += t->numElements();
      }
    }
    if (addedByPasses(op))
      return;
    bool floatResult = llvm::any_of(
        results, [](const HostTensor *t) { return t->kind == HostTensor::Kind::Float; });
    if (!floatResult)
      return;
    auto it = refResults.find(key);
    if (it == refResults.end() || it->second.size() != results.size()) {
      ++unmatched;
      return;
    }
    Comparison row{label, passes::opTypeName(op).str(), dtypeOf(op), {}};
    for (size_t i = 0; i < results.size(); ++i) {
      const HostTensor &a = *results[i], &b = it->second[i];
      if (a.kind != HostTensor::Kind::Float || b.kind != HostTensor::Kind::Float)
        continue;
      if (a.shape != b.shape) {
        ++unmatched;
        return;
      }
      row.metrics.add(a.floats, b.floats);
    }
    opRows.push_back(std::move(row));
  });
  std::vector<HostTensor> outputs;
  if (!interpreter.prepare(error) || !interpreter.run(inputs, outputs, error))
    return fail(args.model + " (mixed plan): " + error);

  std::vector<Comparison> outputRows;
  GraphSignature mixedSig = compiler::getSignature(func);
  for (size_t i = 0; i < outputs.size() && i < refOutputs.size(); ++i) {
    if (outputs[i].shape != refOutputs[i].shape)
      return fail(args.model + ": output '" + sig.outputs[i].name +
                  "' has different shapes in the FP32 and the mixed graph");
    Comparison row{sig.outputs[i].name, "", passes::dtypeName(mixedSig.outputs[i].elementType), {}};
    row.metrics.add(floatsOf(outputs[i]), floatsOf(refOutputs[i]));
    outputRows.push_back(std::move(row));
  }

  // Status: non-finite outputs first (in the mixed plan, or only in the
  // FP32 reference: an infinite max_rel is never ok), then the tolerance.
  int status = 0;
  std::string statusText = "ok";
  for (const Comparison &c : outputRows)
    if (c.metrics.nonFinite || !std::isfinite(c.metrics.maxRel())) {
      status = kExitNonFinite;
      statusText = "output '" + c.name + "' has " + std::to_string(c.metrics.nonFinite) +
                   " non-finite values";
      if (!c.metrics.nonFinite)
        statusText += " where the FP32 reference has " +
                      std::to_string(c.metrics.refNonFinite) + " (max_rel inf)";
      break;
    }
  if (status == 0 && tolerance >= 0)
    for (const Comparison &c : outputRows)
      if (!(c.metrics.maxRel() <= tolerance)) {
        status = kExitTolerance;
        statusText = "output '" + c.name + "' max_rel " + number(c.metrics.maxRel(), "%.3e") +
                     " exceeds the tolerance " + number(tolerance, "%g");
        break;
      }

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "mixprec validate: " << args.model << " --precision " << args.precision.precision;
  if (!args.precision.policyFile.empty())
    os << " --policy " << args.precision.policyFile;
  os << " against the FP32 reference\n";
  os << "outputs:\n";
  std::vector<std::vector<std::string>> table{
      {"name", "dtype", "max_abs", "max_rel", "cosine", "nonfinite"}};
  for (const Comparison &c : outputRows)
    table.push_back(tableRow(c, false));
  printTable(os, table, 2);
  os << "ops: " << opRows.size() << " compared, " << unmatched << " without an FP32 counterpart\n";
  table = {{"node", "type", "dtype", "max_abs", "max_rel", "cosine", "nonfinite"}};
  for (const Comparison &c : opRows)
    table.push_back(tableRow(c, true));
  printTable(os, table, 2);
  os << "first non-finite op: ";
  if (firstNonFinite)
    os << firstNonFinite->name << " (" << firstNonFinite->type << ", " << firstNonFinite->dtype
       << "): " << firstNonFinite->metrics.nonFinite << " of " << firstNonFinite->metrics.elements
       << " values\n";
  else
    os << "none\n";
  os << "status: " << statusText << " (exit " << status << ")\n";

  if (!jsonPath.empty()) {
    llvm::json::Array jsonOutputs, jsonOps;
    for (const Comparison &c : outputRows)
      jsonOutputs.push_back(toJson(c, false));
    for (const Comparison &c : opRows)
      jsonOps.push_back(toJson(c, true));
    llvm::json::Value first = nullptr;
    if (firstNonFinite)
      first = llvm::json::Object{{"node", firstNonFinite->name},
                                 {"type", firstNonFinite->type},
                                 {"dtype", firstNonFinite->dtype},
                                 {"nonfinite", firstNonFinite->metrics.nonFinite},
                                 {"nonfinite_before", firstNonFinite->metrics.refNonFinite},
                                 {"elements", firstNonFinite->metrics.elements}};
    llvm::json::Object doc{
        {"model", args.model},
        {"precision", args.precision.precision},
        {"outputs", std::move(jsonOutputs)},
        {"ops", std::move(jsonOps)},
        {"unmatched_ops", unmatched},
        {"first_nonfinite", std::move(first)},
        {"tolerance", tolerance >= 0 ? llvm::json::Value(tolerance) : llvm::json::Value(nullptr)},
        {"status", statusText},
        {"exit_status", status}};
    std::string json;
    llvm::raw_string_ostream js(json);
    js << llvm::formatv("{0:2}", llvm::json::Value(std::move(doc))) << "\n";
    if (!writeTextFile(jsonPath, json))
      return 1;
    if (jsonPath == "-")
      return status;
  }
  llvm::outs() << text;
  return status;
}

} // namespace mixprec::tools
