//===- PlanReport.cpp - the precision plan, op by op -----------------------===//
//
// What `mixprec report` prints: one row per op of the annotated graph in
// program order (constants left out, casts and FP8 scaling ops shown as rows
// of their own), then a summary of FLOPs per dtype, weight, GEMM-weight and
// activation bytes against the imported FP32 graph, and the number of casts;
// and the same as a JSON document (`--json`, Python's mixprec.report).
//
//===----------------------------------------------------------------------===//
#include "compiler/Report/Report.h"

#include "dialects/Graph/IR/GraphAsm.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Precision/PrecisionUtils.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <cstdlib>

using namespace mlir;
using mixprec::graph::GraphDialect;
namespace mp = mixprec::graph;
namespace passes = mixprec::passes;

namespace mixprec::compiler {

//===----------------------------------------------------------------------===//
// Shared with validate
//===----------------------------------------------------------------------===//

std::string nodeLabel(Operation *op) {
  std::string name = passes::opName(op);
  if (!name.empty())
    return name;
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (isa<FileLineColLoc>(inner)) {
        loc = inner;
        break;
      }
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return llvm::sys::path::filename(file.getFilename().getValue()).str() + ":" +
           std::to_string(file.getLine()) + ":" + std::to_string(file.getColumn());
  return "";
}

void printTable(llvm::raw_ostream &os, const std::vector<std::vector<std::string>> &rows,
                unsigned indent) {
  std::vector<size_t> width;
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (width.size() <= c)
        width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  for (const auto &row : rows) {
    os.indent(indent);
    for (size_t c = 0; c < row.size(); ++c) {
      os << row[c];
      if (c + 1 < row.size())
        os.indent(width[c] - row[c].size() + 2);
    }
    os << "\n";
  }
}

namespace {

//===----------------------------------------------------------------------===//
// Counting
//===----------------------------------------------------------------------===//

/// The ranked tensor type of a value (every mp value has one).
RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The bytes a tensor value takes at its element type.
int64_t bytesOf(Value v) {
  RankedTensorType t = tensorType(v);
  return t.getNumElements() * passes::dtypeBytes(t.getElementType());
}

/// GEMM-class ops (matmuls, linear layers, convolutions and their FP8
/// forms) are the lowp class of the policy.
bool isGemm(Operation *op) { return graph::precisionClassOf(op) == graph::PrecisionClass::Lowp; }

/// The dtype an op computes in: its assigned precision, else the element
/// type of its first result (casts, FP8 scaling ops, unannotated graphs).
Type computeDType(Operation *op) {
  if (auto p = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr))
    return p.getValue();
  if (op->getNumResults() == 0)
    return nullptr;
  return tensorType(op->getResult(0)).getElementType();
}

/// FLOPs of one op (PrecisionPolicyOpInterface::getFlopCount); ops of other
/// dialects count none.
int64_t flopsOf(Operation *op) {
  auto policy = dyn_cast<graph::PrecisionPolicyOpInterface>(op);
  return policy ? policy.getFlopCount() : 0;
}

/// Bytes one op reads and writes (PrecisionPolicyOpInterface::getByteCount);
/// ops of other dialects count none.
int64_t bytesMovedBy(Operation *op) {
  auto policy = dyn_cast<graph::PrecisionPolicyOpInterface>(op);
  return policy ? policy.getByteCount() : 0;
}

/// The operands of an op that hold weights
/// (PrecisionPolicyOpInterface::getWeightOperands); ops of other dialects
/// hold none.
SmallVector<Value, 2> weightOperands(Operation *op) {
  auto policy = dyn_cast<graph::PrecisionPolicyOpInterface>(op);
  return policy ? policy.getWeightOperands() : SmallVector<Value, 2>();
}

/// Byte totals of one graph.
struct ByteTotals {
  int64_t weights = 0;     ///< every mp.constant
  int64_t gemmWeights = 0; ///< constant-derived GEMM weight operands, as read
  int64_t activations = 0; ///< every non-constant op result
  int64_t traffic = 0;     ///< bytes the ops read and write, op by op (getByteCount)
  /// Each counted GEMM weight: the GEMM's label and type, the weight's
  /// dtype, bytes, and elements.
  struct Weight {
    std::string node, type, dtype;
    int64_t bytes, elements;
  };
  std::vector<Weight> gemmWeightList;
};

/// Whether `v` is computed from constants only (so it could be folded into
/// one: a weight transposed or cast at run time).
bool constantDerived(Value v, llvm::DenseMap<Value, bool> &memo) {
  auto it = memo.find(v);
  if (it != memo.end())
    return it->second;
  Operation *def = v.getDefiningOp();
  bool result = false;
  if (def && isa<mp::ConstantOp>(def)) {
    result = true;
  } else if (def && def->getNumOperands() > 0) {
    result = llvm::all_of(def->getOperands(),
                          [&](Value operand) { return constantDerived(operand, memo); });
  }
  memo[v] = result;
  return result;
}

/// The byte totals of one graph (each GEMM weight counted once).
ByteTotals countBytes(func::FuncOp func) {
  ByteTotals totals;
  llvm::DenseMap<Value, bool> memo;
  llvm::DenseSet<Value> counted;
  func.walk([&](Operation *op) {
    if (op->getDialect() == nullptr || !isa<GraphDialect>(op->getDialect()))
      return;
    for (Value r : op->getResults())
      (isa<mp::ConstantOp>(op) ? totals.weights : totals.activations) += bytesOf(r);
    totals.traffic += bytesMovedBy(op);
    if (isGemm(op))
      for (Value w : weightOperands(op))
        if (constantDerived(w, memo) && counted.insert(w).second) {
          totals.gemmWeights += bytesOf(w);
          totals.gemmWeightList.push_back({nodeLabel(op), passes::opTypeName(op).str(),
                                           passes::dtypeName(tensorType(w).getElementType()),
                                           bytesOf(w), tensorType(w).getNumElements()});
        }
  });
  return totals;
}

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

/// One op as the report shows it.
struct Row {
  std::string node, type, opClass, precision, inputs, output, acc, reason;
  /// --graph: the op's results and operands as the printed IR names them.
  std::string values, operands;
  std::vector<std::string> inputList, outputList;
  int64_t flops = 0, bytes = 0; ///< one run's cost (JSON only)
};

/// The element types of `types` ("f16"), and their comma-joined list.
std::string dtypeList(TypeRange types, std::vector<std::string> &list) {
  std::string s;
  for (Type t : types) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    list.push_back(passes::dtypeName(tensor ? tensor.getElementType() : t));
    s += (s.empty() ? "" : ",") + list.back();
  }
  return s.empty() ? "-" : s;
}

/// The row of one op (`index`: its place among the rows, for unlabelled ops).
Row makeRow(Operation *op, unsigned index) {
  Row row;
  row.node = nodeLabel(op);
  // A cast of a graph input carries the function's location: name the input.
  if (auto castOp = dyn_cast<mp::CastOp>(op))
    if (auto arg = dyn_cast<BlockArgument>(castOp.getInput()))
      if (auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()))
        if (auto name =
                func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), GraphDialect::kNameAttr))
          row.node = name.getValue().str();
  if (row.node.empty())
    row.node = "#" + std::to_string(index);
  row.type = passes::opTypeName(op).str();
  row.opClass = graph::stringifyPrecisionClass(graph::precisionClassOf(op)).str();
  auto precision = op->getAttrOfType<TypeAttr>(GraphDialect::kPrecisionAttr);
  row.precision = precision ? passes::dtypeName(precision.getValue()) : "-";
  row.inputs = dtypeList(op->getOperandTypes(), row.inputList);
  row.output = dtypeList(op->getResultTypes(), row.outputList);
  auto acc = op->getAttrOfType<TypeAttr>("acc_type");
  row.acc = acc ? passes::dtypeName(acc.getValue()) : "-";
  auto reason = op->getAttrOfType<StringAttr>(GraphDialect::kReasonAttr);
  row.reason = reason ? reason.getValue().str() : "-";
  row.flops = flopsOf(op);
  row.bytes = bytesMovedBy(op);
  return row;
}

/// Percentages of a per-dtype tally, largest first: "f16 80.0%, f32 20.0%".
std::string shares(const std::map<std::string, int64_t> &byDType, int64_t total) {
  std::vector<std::pair<std::string, int64_t>> items(byDType.begin(), byDType.end());
  std::stable_sort(items.begin(), items.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string s;
  llvm::raw_string_ostream os(s);
  for (const auto &[dtype, n] : items) {
    if (n == 0)
      continue;
    if (!s.empty())
      os << ", ";
    os << dtype << " " << llvm::format("%.1f%%", total ? 100.0 * n / total : 0.0);
  }
  return s.empty() ? "-" : s;
}

/// "P%" of `n` against `of`, or "-" when `of` is 0.
std::string ratio(int64_t n, int64_t of) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (of == 0)
    os << "-";
  else
    os << llvm::format("%.1f%%", 100.0 * n / of);
  return s;
}

/// A tally as a JSON object.
llvm::json::Object dtypeObject(const std::map<std::string, int64_t> &byDType) {
  llvm::json::Object o;
  for (const auto &[dtype, n] : byDType)
    o[dtype] = n;
  return o;
}

//===----------------------------------------------------------------------===//
// The plan, counted
//===----------------------------------------------------------------------===//

/// Per-dtype (or per-class) tallies.
using Tally = std::map<std::string, int64_t>;

/// What report prints: a row per op of the plan and the totals of the
/// summary, against the FP32 reference.
struct PlanSummary {
  std::vector<Row> rows;
  /// --graph: "NAME = %name" per graph input, "NAME = %value" per output.
  std::vector<std::string> inputs, outputs;
  Tally flops, gemmFlops, opsByPrecision, opsByClass;
  int64_t totalFlops = 0, totalGemmFlops = 0, opCount = 0;
  int64_t casts = 0, quantizes = 0, dequantizes = 0;
  ByteTotals mixed, fp32;
};

/// Adds one op of the plan (its row, class, precision, FLOPs and casts).
void addOp(PlanSummary &summary, Operation &op) {
  Row row = makeRow(&op, summary.rows.size());
  summary.casts += isa<mp::CastOp>(op);
  summary.quantizes += isa<mp::QuantizeOp>(op);
  summary.dequantizes += isa<mp::DequantizeOp>(op);
  if (row.opClass != "cast" && row.opClass != "scaling") {
    ++summary.opsByClass[row.opClass];
    ++summary.opsByPrecision[row.precision];
    ++summary.opCount;
  }
  Type dtype = computeDType(&op);
  if (int64_t n = dtype ? flopsOf(&op) : 0) {
    std::string name = passes::dtypeName(dtype);
    summary.flops[name] += n;
    summary.totalFlops += n;
    if (isGemm(&op)) {
      summary.gemmFlops[name] += n;
      summary.totalGemmFlops += n;
    }
  }
  summary.rows.push_back(std::move(row));
}

/// The printed IR's name of `v` ("%fc1"): `argNames` for a renamed graph
/// argument (printModuleNamed), the AsmState's otherwise.
std::string valueName(Value v, AsmState &state, ArrayRef<std::string> argNames) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (arg.getOwner()->isEntryBlock() && arg.getArgNumber() < argNames.size() &&
        !argNames[arg.getArgNumber()].empty())
      return "%" + argNames[arg.getArgNumber()];
  std::string s;
  llvm::raw_string_ostream os(s);
  v.printAsOperand(os, state);
  return s;
}

/// `values` as the printed IR names them ("%fc1,%fc1.weight"), or "-".
std::string valueNames(ValueRange values, AsmState &state, ArrayRef<std::string> argNames) {
  std::string s;
  for (Value v : values)
    s += (s.empty() ? "" : ",") + valueName(v, state, argNames);
  return s.empty() ? "-" : s;
}

/// Fills the --graph columns: every value named as `compile --emit mp-mlir`
/// prints it (the same AsmState numbering, the arguments renamed after
/// their inputs as printModuleNamed does), and the graph's inputs and
/// outputs by their model names.
void nameValues(PlanSummary &summary, func::FuncOp plan) {
  AsmState state(plan);
  Block &body = plan.getBody().front();
  // The names the function's values print with, the printer's %argN among
  // them: the arguments' new names stay clear of them.
  llvm::StringSet<> taken;
  auto take = [&](Value v) {
    std::string printed = valueName(v, state, {});
    taken.insert(llvm::StringRef(printed).drop_front().split('#').first);
  };
  for (BlockArgument arg : body.getArguments())
    take(arg);
  for (Operation &op : body)
    for (Value v : op.getResults())
      take(v);
  SmallVector<std::string> argNames = graph::argumentNames(plan, taken);
  size_t row = 0;
  for (Operation &op : body)
    if (!isa<func::ReturnOp>(op) && !isa<mp::ConstantOp>(op)) {
      summary.rows[row].values = valueNames(op.getResults(), state, argNames);
      summary.rows[row++].operands = valueNames(op.getOperands(), state, argNames);
    }
  auto modelName = [](DictionaryAttr attrs) {
    auto name = attrs ? attrs.getAs<StringAttr>(GraphDialect::kNameAttr) : StringAttr();
    return name ? name.getValue().str() : std::string("?");
  };
  for (BlockArgument arg : body.getArguments())
    summary.inputs.push_back(modelName(plan.getArgAttrDict(arg.getArgNumber())) + " = " +
                             valueName(arg, state, argNames));
  Operation *ret = body.getTerminator();
  for (OpOperand &result : ret->getOpOperands())
    summary.outputs.push_back(modelName(plan.getResultAttrDict(result.getOperandNumber())) +
                              " = " + valueName(result.get(), state, argNames));
}

/// Counts the plan op by op (constants left out) and the bytes of both graphs.
PlanSummary summarize(func::FuncOp plan, func::FuncOp reference, bool graph) {
  PlanSummary summary;
  for (Operation &op : plan.getBody().front())
    if (!isa<func::ReturnOp>(op) && !isa<mp::ConstantOp>(op))
      addOp(summary, op);
  if (graph)
    nameValues(summary, plan);
  summary.mixed = countBytes(plan);
  summary.fp32 = countBytes(reference);
  return summary;
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

/// "CLASS N, ..." of a tally, or "-".
std::string tallyText(const Tally &tally) {
  std::string s;
  for (const auto &[k, n] : tally)
    s += (s.empty() ? "" : ", ") + k + " " + std::to_string(n);
  return s.empty() ? std::string("-") : s;
}

/// "N (fp32 N, P%)": a byte count against the FP32 graph's.
std::string bytesText(int64_t bytes, int64_t fp32) {
  return std::to_string(bytes) + " (fp32 " + std::to_string(fp32) + ", " + ratio(bytes, fp32) + ")";
}

/// Prints the "summary:" lines.
void printSummary(llvm::raw_ostream &os, const PlanSummary &s) {
  os << "summary:\n";
  os << "  ops: " << s.opCount << " (" << tallyText(s.opsByClass) << "; "
     << tallyText(s.opsByPrecision) << ")\n";
  os << "  flops: " << s.totalFlops << " (" << shares(s.flops, s.totalFlops) << ")\n";
  os << "  gemm flops: " << s.totalGemmFlops << " (" << shares(s.gemmFlops, s.totalGemmFlops)
     << ")\n";
  os << "  weight bytes: " << bytesText(s.mixed.weights, s.fp32.weights) << "\n";
  os << "  gemm weight bytes: " << bytesText(s.mixed.gemmWeights, s.fp32.gemmWeights) << "\n";
  os << "  activation bytes: " << bytesText(s.mixed.activations, s.fp32.activations) << "\n";
  os << "  casts: " << s.casts;
  if (s.quantizes || s.dequantizes)
    os << " (plus " << s.quantizes << " quantize, " << s.dequantizes << " dequantize)";
  os << "\n";
  os << "  bytes moved, op by op: " << bytesText(s.mixed.traffic, s.fp32.traffic) << "\n";
}

/// The --graph table: the graph's inputs and outputs, then one line per op,
/// `VALUE = OP OPERANDS` with its dtypes in and out, accumulator and reason.
void printGraphTable(llvm::raw_ostream &os, const PlanSummary &summary) {
  os << "inputs: " << llvm::join(summary.inputs, ", ") << "\n";
  os << "outputs: " << llvm::join(summary.outputs, ", ") << "\n";
  std::vector<std::vector<std::string>> table{
      {"value", "", "op", "operands", "in", "out", "acc", "reason"}};
  for (const Row &r : summary.rows)
    table.push_back({r.values, "=", r.type, r.operands, r.inputs, r.output, r.acc, r.reason});
  printTable(os, table, 0);
}

/// The report as text: the header line, one row per op (or the --graph
/// table), the summary.
std::string reportText(const PlanSummary &summary, const PlanInfo &info, bool graph) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "mixprec report: " << info.description() << "\n";
  if (graph) {
    printGraphTable(os, summary);
    printSummary(os, summary);
    return text;
  }
  std::vector<std::vector<std::string>> table{
      {"node", "type", "class", "precision", "inputs", "output", "acc", "reason"}};
  for (const Row &r : summary.rows)
    table.push_back({r.node, r.type, r.opClass, r.precision, r.inputs, r.output, r.acc, r.reason});
  printTable(os, table, 0);
  printSummary(os, summary);
  return text;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

/// A list of strings as a JSON array.
llvm::json::Array stringArray(const std::vector<std::string> &list) {
  llvm::json::Array array;
  for (const std::string &s : list)
    array.push_back(s);
  return array;
}

/// One JSON object per row.
llvm::json::Array rowsJson(const std::vector<Row> &rows) {
  llvm::json::Array json;
  for (const Row &r : rows)
    json.push_back(llvm::json::Object{{"node", r.node},
                                      {"type", r.type},
                                      {"class", r.opClass},
                                      {"precision", r.precision},
                                      {"inputs", stringArray(r.inputList)},
                                      {"outputs", stringArray(r.outputList)},
                                      {"acc", r.acc},
                                      {"reason", r.reason},
                                      {"flops", r.flops},
                                      {"bytes", r.bytes}});
  return json;
}

/// One JSON object per counted GEMM weight.
llvm::json::Array gemmWeightsJson(const ByteTotals &totals) {
  llvm::json::Array json;
  for (const ByteTotals::Weight &w : totals.gemmWeightList)
    json.push_back(llvm::json::Object{{"node", w.node},
                                      {"type", w.type},
                                      {"dtype", w.dtype},
                                      {"bytes", w.bytes},
                                      {"bytes_fp32", 4 * w.elements}});
  return json;
}

/// The summary as a JSON object.
llvm::json::Object summaryJson(const PlanSummary &s) {
  return llvm::json::Object{{"ops", s.opCount},
                            {"ops_by_class", dtypeObject(s.opsByClass)},
                            {"ops_by_precision", dtypeObject(s.opsByPrecision)},
                            {"flops", s.totalFlops},
                            {"flops_by_dtype", dtypeObject(s.flops)},
                            {"gemm_flops", s.totalGemmFlops},
                            {"gemm_flops_by_dtype", dtypeObject(s.gemmFlops)},
                            {"weight_bytes", s.mixed.weights},
                            {"weight_bytes_fp32", s.fp32.weights},
                            {"gemm_weight_bytes", s.mixed.gemmWeights},
                            {"gemm_weight_bytes_fp32", s.fp32.gemmWeights},
                            {"gemm_weights", gemmWeightsJson(s.mixed)},
                            {"activation_bytes", s.mixed.activations},
                            {"activation_bytes_fp32", s.fp32.activations},
                            {"bytes_moved", s.mixed.traffic},
                            {"bytes_moved_fp32", s.fp32.traffic},
                            {"casts", s.casts},
                            {"quantize", s.quantizes},
                            {"dequantize", s.dequantizes}};
}

/// The report as a JSON document.
llvm::json::Value reportJson(const PlanSummary &summary, const PlanInfo &info) {
  return llvm::json::Object{
      {"model", info.model},
      {"precision", passes::precisionName(info.precision)},
      {"ops", rowsJson(summary.rows)},
      {"summary", summaryJson(summary)}};
}

} // namespace

PlanDocument reportPlan(func::FuncOp plan, func::FuncOp reference, const PlanInfo &info,
                        bool graph) {
  PlanSummary summary = summarize(plan, reference, graph);
  return {reportText(summary, info, graph), reportJson(summary, info), 0};
}

std::string PlanInfo::description() const {
  std::string text = model + " --precision " + passes::precisionName(precision).str();
  if (!policyFile.empty())
    text += " --policy " + policyFile;
  return text;
}

} // namespace mixprec::compiler
