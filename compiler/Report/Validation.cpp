//===- Validation.cpp - the mixed plan against the FP32 reference ---------===//
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
#include "compiler/Report/Report.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Precision/PrecisionUtils.h"

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

namespace mixprec::compiler {
namespace {

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

/// The number of inf and NaN values in a tensor (none in integer tensors).
int64_t countNonFinite(const HostTensor &t) {
  if (t.kind != HostTensor::Kind::Float)
    return 0;
  int64_t n = 0;
  for (float v : t.floats)
    n += !std::isfinite(v);
  return n;
}

/// A number printed with a printf format.
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

/// A compared output (or op, `isOp`) as JSON.
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

/// A compared output (or op, `isOp`) as a table row.
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

/// The dtype an op computes in: its assigned precision, else its result type.
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

//===----------------------------------------------------------------------===//
// The FP32 reference run
//===----------------------------------------------------------------------===//

/// An op is matched across the two graphs by (label, op type).
using Key = std::pair<std::string, std::string>;

/// What the FP32 reference computed: every op result that the mixed run
/// can be matched with, and the number of non-finite values of every op
/// (constants included). Labels seen twice are ambiguous and dropped.
struct ReferenceRun {
  std::map<Key, std::vector<HostTensor>> results;
  std::map<Key, int64_t> nonFinite;
  std::map<Key, int> seen;
  std::vector<HostTensor> outputs;
};

/// Records one op of the reference run.
void recordReference(ReferenceRun &ref, Operation *op, ArrayRef<const HostTensor *> results) {
  std::string label = nodeLabel(op);
  if (label.empty())
    return;
  Key key{label, matchType(op)};
  if (++ref.seen[key] > 1) {
    ref.results.erase(key);
    ref.nonFinite.erase(key);
    return;
  }
  int64_t &n = ref.nonFinite[key];
  for (const HostTensor *t : results)
    n += countNonFinite(*t);
  if (addedByPasses(op))
    return;
  std::vector<HostTensor> &stored = ref.results[key];
  for (const HostTensor *t : results)
    stored.push_back(*t);
}

//===----------------------------------------------------------------------===//
// The mixed run, compared op by op as it goes
//===----------------------------------------------------------------------===//

/// What the mixed run compared, and the first op that went non-finite.
struct MixedRun {
  std::vector<Comparison> opRows;
  int unmatched = 0;
  std::optional<Comparison> firstNonFinite;
  llvm::DenseMap<Value, int64_t> nonFiniteOf;
  unsigned index = 0; ///< of the next non-constant op, for unlabelled ops
  std::vector<HostTensor> outputs;
};

/// Records `op` as the first non-finite op if it made non-finite values:
/// more than its FP32 counterpart holds (or, for what the passes added,
/// than its operands), so it did not just pass on an input's or an FP32
/// mask's infinities.
void noteNonFinite(MixedRun &run, const ReferenceRun &ref, Operation *op, const Key &key,
                   ArrayRef<const HostTensor *> results) {
  int64_t made = 0;
  for (auto [result, t] : llvm::zip(op->getResults(), results)) {
    run.nonFiniteOf[result] = countNonFinite(*t);
    made += run.nonFiniteOf[result];
  }
  if (run.firstNonFinite || !made)
    return;
  int64_t before = 0;
  auto it = key.first.empty() ? ref.nonFinite.end() : ref.nonFinite.find(key);
  if (it != ref.nonFinite.end())
    before = it->second;
  else
    for (Value operand : op->getOperands())
      before += run.nonFiniteOf.lookup(operand);
  if (made <= before)
    return;
  Comparison c{key.first.empty() ? "<constant>" : key.first, passes::opTypeName(op).str(),
               dtypeOf(op), {}};
  c.metrics.nonFinite = made;
  c.metrics.refNonFinite = before;
  for (const HostTensor *t : results)
    c.metrics.elements += t->numElements();
  run.firstNonFinite = std::move(c);
}

/// Compares the float results of `op` with its FP32 counterpart; an op
/// without one (or of another shape) is counted as unmatched.
void compareOp(MixedRun &run, const ReferenceRun &ref, Operation *op, const Key &key,
               ArrayRef<const HostTensor *> results) {
  auto it = ref.results.find(key);
  if (it == ref.results.end() || it->second.size() != results.size()) {
    ++run.unmatched;
    return;
  }
  Comparison row{key.first, passes::opTypeName(op).str(), dtypeOf(op), {}};
  for (size_t i = 0; i < results.size(); ++i) {
    const HostTensor &a = *results[i], &b = it->second[i];
    if (a.kind != HostTensor::Kind::Float || b.kind != HostTensor::Kind::Float)
      continue;
    if (a.shape != b.shape) {
      ++run.unmatched;
      return;
    }
    row.metrics.add(a.floats, b.floats);
  }
  run.opRows.push_back(std::move(row));
}

/// Observes one op of the mixed run.
void observeMixed(MixedRun &run, const ReferenceRun &ref, Operation *op,
                  ArrayRef<const HostTensor *> results) {
  bool isConstant = isa<mp::ConstantOp>(op);
  std::string label = nodeLabel(op);
  if (label.empty() && !isConstant)
    label = "#" + std::to_string(run.index);
  run.index += !isConstant;
  Key key{label, matchType(op)};
  noteNonFinite(run, ref, op, key, results);
  bool floatResult = llvm::any_of(
      results, [](const HostTensor *t) { return t->kind == HostTensor::Kind::Float; });
  if (!addedByPasses(op) && floatResult)
    compareOp(run, ref, op, key, results);
}

/// Runs `func` on `inputs` with `observer` watching every op; false with
/// `error` naming the model and `which` run.
bool runObserved(func::FuncOp func, const std::vector<HostTensor> &inputs,
                 Interpreter::Observer observer, std::vector<HostTensor> &outputs,
                 const PlanInfo &info, llvm::StringRef which, std::string &error) {
  Interpreter interpreter(func);
  interpreter.setObserver(std::move(observer));
  if (interpreter.prepare(error) && interpreter.run(inputs, outputs, error))
    return true;
  error = info.model + " (" + which.str() + "): " + error;
  return false;
}

//===----------------------------------------------------------------------===//
// Outputs, status, text and JSON
//===----------------------------------------------------------------------===//

/// Compares every graph output; false with `error`.
bool compareOutputs(func::FuncOp refFunc, func::FuncOp func, const ReferenceRun &ref,
                    const MixedRun &run, std::vector<Comparison> &rows, const PlanInfo &info,
                    std::string &error) {
  GraphSignature sig = compiler::getSignature(refFunc);
  GraphSignature mixedSig = compiler::getSignature(func);
  for (size_t i = 0; i < run.outputs.size() && i < ref.outputs.size(); ++i) {
    if (run.outputs[i].shape != ref.outputs[i].shape) {
      error = info.model + ": output '" + sig.outputs[i].name +
              "' has different shapes in the FP32 and the mixed graph";
      return false;
    }
    Comparison row{sig.outputs[i].name, "", passes::dtypeName(mixedSig.outputs[i].elementType),
                   {}};
    row.metrics.add(floatsOf(run.outputs[i]), floatsOf(ref.outputs[i]));
    rows.push_back(std::move(row));
  }
  return true;
}

/// What an output must meet: max_rel <= maxRel and, for the default
/// bounds, cosine >= minCosine (negative: not checked).
struct Bounds {
  double maxRel = -1;
  double minCosine = -1;
  std::string source; ///< "--tolerance" or "bf16's default"
};

/// The precision whose bounds a plan is held to: the one asked for, or a
/// looser one some op of the plan runs in (an FP16 plan whose ops fell back
/// to BF16 is as accurate as BF16).
passes::Precision boundsPrecision(func::FuncOp plan, passes::Precision asked) {
  auto looseness = [](passes::Precision p) {
    switch (p) {
    case passes::Precision::FP32:
      return 0;
    case passes::Precision::TF32:
    case passes::Precision::FP16:
      return 1;
    case passes::Precision::BF16:
      return 2;
    case passes::Precision::FP8:
      return 3;
    }
    return 0;
  };
  passes::Precision result = asked;
  plan.walk([&](Operation *op) {
    for (Type t : op->getResultTypes()) {
      auto shaped = dyn_cast<ShapedType>(t);
      if (!shaped)
        continue;
      Type e = shaped.getElementType();
      std::optional<passes::Precision> p;
      if (e.isBF16())
        p = passes::Precision::BF16;
      else if (isa<Float8E4M3FNType, Float8E5M2Type>(e))
        p = passes::Precision::FP8;
      else if (e.isF16())
        p = passes::Precision::FP16;
      if (p && looseness(*p) > looseness(result))
        result = *p;
    }
  });
  return result;
}

/// The bounds validate checks: --tolerance X (max_rel only), else the
/// default of the plan's precision (boundsPrecision): the README's "Error
/// bounds" table, which tests/e2e/precision_bounds.json holds for the e2e
/// models. FP32 runs the reference itself; TF32 rounds GEMM operands to
/// FP16's 10-bit mantissa and takes FP16's bounds.
Bounds validationBounds(func::FuncOp plan, passes::Precision asked,
                        const ValidateOptions &options) {
  if (options.tolerance >= 0)
    return {options.tolerance, -1, "--tolerance"};
  passes::Precision p = boundsPrecision(plan, asked);
  std::string source = std::string(passes::precisionName(p)) + "'s default";
  if (p != asked)
    source += ": some ops run in " + std::string(passes::precisionName(p));
  switch (p) {
  case passes::Precision::FP32:
    return {1e-5, 0.99999, source};
  case passes::Precision::TF32:
  case passes::Precision::FP16:
    return {0.005, 0.999998, source};
  case passes::Precision::BF16:
    return {0.03, 0.9999, source};
  case passes::Precision::FP8:
    return {0.35, 0.99, source};
  }
  return {};
}

/// The exit status and its reason: non-finite outputs first (in the mixed
/// plan, or only in the FP32 reference: an infinite max_rel is never ok),
/// then the bounds.
std::pair<int, std::string> validationStatus(const std::vector<Comparison> &outputs,
                                             const Bounds &bounds) {
  for (const Comparison &c : outputs)
    if (c.metrics.nonFinite || !std::isfinite(c.metrics.maxRel())) {
      std::string why = "output '" + c.name + "' has " + std::to_string(c.metrics.nonFinite) +
                        " non-finite values";
      if (!c.metrics.nonFinite)
        why += " where the FP32 reference has " + std::to_string(c.metrics.refNonFinite) +
               " (max_rel inf)";
      return {kValidateNonFinite, why};
    }
  std::string which = bounds.source == "--tolerance" ? "" : " (" + bounds.source + ")";
  for (const Comparison &c : outputs) {
    if (!(c.metrics.maxRel() <= bounds.maxRel))
      return {kValidateTolerance, "output '" + c.name + "' max_rel " +
                                  number(c.metrics.maxRel(), "%.3e") + " exceeds the tolerance " +
                                  number(bounds.maxRel, "%g") + which};
    if (bounds.minCosine >= 0 && !(c.metrics.cosine() >= bounds.minCosine))
      return {kValidateTolerance, "output '" + c.name + "' cosine " +
                                  number(c.metrics.cosine(), "%.8f") + " is below " +
                                  number(bounds.minCosine, "%g") + which};
  }
  return {0, "ok"};
}

/// The ops that lost the most against FP32 (largest max_rel first, at most
/// `count`), for a failed validation.
std::vector<const Comparison *> worstOps(const std::vector<Comparison> &ops, size_t count) {
  std::vector<const Comparison *> worst;
  for (const Comparison &c : ops)
    if (c.metrics.elements > 0)
      worst.push_back(&c);
  auto loss = [](const Comparison *c) {
    double r = c->metrics.maxRel();
    return std::isnan(r) ? INFINITY : r;
  };
  std::stable_sort(worst.begin(), worst.end(),
                   [&](const Comparison *a, const Comparison *b) { return loss(a) > loss(b); });
  if (worst.size() > count)
    worst.resize(count);
  return worst;
}

/// Whether FP16's range is the likely cause of a failed FP16 plan: some op
/// went non-finite (overflow), or an op lost (nearly) everything, its
/// values flushed to zero (underflow: max_rel near 1 or cosine near 0).
bool fp16RangeSuspected(const MixedRun &run, passes::Precision precision, bool calibrated) {
  if (precision != passes::Precision::FP16 || calibrated)
    return false;
  if (run.firstNonFinite)
    return true;
  return llvm::any_of(run.opRows, [](const Comparison &c) {
    return c.metrics.elements > 0 && (c.metrics.maxRel() >= 0.5 || c.metrics.cosine() < 0.5);
  });
}

/// What validate found, as printed.
struct Validation {
  PlanInfo info;
  bool calibrated = false;
  std::vector<Comparison> outputs;
  MixedRun run;
  int status = 0;
  std::string statusText;
};

/// Prints the "first non-finite op:" line.
void printFirstNonFinite(llvm::raw_ostream &os, const std::optional<Comparison> &first) {
  os << "first non-finite op: ";
  if (!first) {
    os << "none\n";
    return;
  }
  os << first->name << " (" << first->type << ", " << first->dtype
     << "): " << first->metrics.nonFinite << " of " << first->metrics.elements << " values\n";
}

/// The result as text: header, outputs table, ops table, status.
std::string validationText(const Validation &v) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "mixprec validate: " << v.info.description() << " against the FP32 reference\n";
  os << "outputs:\n";
  std::vector<std::vector<std::string>> table{
      {"name", "dtype", "max_abs", "max_rel", "cosine", "nonfinite"}};
  for (const Comparison &c : v.outputs)
    table.push_back(tableRow(c, false));
  printTable(os, table, 2);
  os << "ops: " << v.run.opRows.size() << " compared, " << v.run.unmatched
     << " without an FP32 counterpart\n";
  table = {{"node", "type", "dtype", "max_abs", "max_rel", "cosine", "nonfinite"}};
  for (const Comparison &c : v.run.opRows)
    table.push_back(tableRow(c, true));
  printTable(os, table, 2);
  printFirstNonFinite(os, v.run.firstNonFinite);
  if (v.status != 0) {
    os << "worst ops:\n";
    table = {{"node", "type", "dtype", "max_rel", "cosine"}};
    for (const Comparison *c : worstOps(v.run.opRows, 5))
      table.push_back({c->name, c->type, c->dtype, number(c->metrics.maxRel(), "%.3e"),
                       number(c->metrics.cosine(), "%.8f")});
    printTable(os, table, 2);
    if (fp16RangeSuspected(v.run, v.info.precision, v.calibrated))
      os << "hint: FP16's range is the likely cause (values overflowed or flushed to zero): "
            "compile with --calibrate NAME=FILE.npy (ops whose values FP16 cannot hold move "
            "to BF16 or FP32), or use --precision bf16\n";
  }
  os << "status: " << v.statusText << " (exit " << v.status << ")\n";
  return text;
}

/// The first non-finite op as JSON, or null.
llvm::json::Value firstNonFiniteJson(const std::optional<Comparison> &first) {
  if (!first)
    return nullptr;
  return llvm::json::Object{{"node", first->name},
                            {"type", first->type},
                            {"dtype", first->dtype},
                            {"nonfinite", first->metrics.nonFinite},
                            {"nonfinite_before", first->metrics.refNonFinite},
                            {"elements", first->metrics.elements}};
}

/// The result as a JSON document.
llvm::json::Value validationJson(const Validation &v, const Bounds &bounds) {
  llvm::json::Array outputs, ops;
  for (const Comparison &c : v.outputs)
    outputs.push_back(toJson(c, false));
  for (const Comparison &c : v.run.opRows)
    ops.push_back(toJson(c, true));
  return llvm::json::Object{
      {"model", v.info.model},
      {"precision", passes::precisionName(v.info.precision)},
      {"outputs", std::move(outputs)},
      {"ops", std::move(ops)},
      {"unmatched_ops", v.run.unmatched},
      {"first_nonfinite", firstNonFiniteJson(v.run.firstNonFinite)},
      {"tolerance", bounds.maxRel},
      {"min_cosine", bounds.minCosine >= 0 ? llvm::json::Value(bounds.minCosine)
                                           : llvm::json::Value(nullptr)},
      {"bounds", bounds.source},
      {"fp16_range_suspected",
       v.status != 0 && fp16RangeSuspected(v.run, v.info.precision, v.calibrated)},
      {"status", v.statusText},
      {"exit_status", v.status}};
}

/// Runs the reference and the plan on the same inputs and compares them;
/// false with `error`.
bool compareRuns(func::FuncOp refFunc, func::FuncOp func, const std::vector<HostTensor> &inputs,
                 Validation &v, std::string &error) {
  ReferenceRun ref;
  auto recordRef = [&](Operation *op, ArrayRef<const HostTensor *> results) {
    recordReference(ref, op, results);
  };
  if (!runObserved(refFunc, inputs, recordRef, ref.outputs, v.info, "FP32 reference", error))
    return false;
  auto observe = [&](Operation *op, ArrayRef<const HostTensor *> results) {
    observeMixed(v.run, ref, op, results);
  };
  return runObserved(func, inputs, observe, v.run.outputs, v.info, "mixed plan", error) &&
         compareOutputs(refFunc, func, ref, v.run, v.outputs, v.info, error);
}

} // namespace

bool validatePlan(func::FuncOp reference, func::FuncOp plan, const std::vector<HostTensor> &inputs,
                  const PlanInfo &info, const ValidateOptions &options, PlanDocument &out,
                  std::string &error) {
  Validation v;
  v.info = info;
  v.calibrated = options.calibrated;
  if (!compareRuns(reference, plan, inputs, v, error))
    return false;
  Bounds bounds = validationBounds(plan, info.precision, options);
  std::tie(v.status, v.statusText) = validationStatus(v.outputs, bounds);
  out.text = validationText(v);
  out.json = validationJson(v, bounds);
  out.status = v.status;
  return true;
}

} // namespace mixprec::compiler
