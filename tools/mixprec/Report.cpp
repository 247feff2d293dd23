//===- Report.cpp - mixprec report -----------------------------------------===//
//
// Prints the precision plan of a compiled model: one row per op of the
// annotated graph in program order (constants left out, casts and FP8
// scaling ops shown as rows of their own), then a summary of FLOPs per
// dtype, weight, GEMM-weight and activation bytes against the imported FP32
// graph, and the number of casts. `--json FILE` writes the same as JSON.
//
//===----------------------------------------------------------------------===//
#include "tools/mixprec/Commands.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/PrecisionUtils.h"
#include "tools/mixprec/CliCommon.h"
#include "tools/mixprec/ModelLoader.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <map>

#include <algorithm>
#include <cstdlib>

using namespace mlir;
using mixprec::graph::GraphDialect;
namespace mp = mixprec::graph;
namespace passes = mixprec::passes;

namespace mixprec::tools {

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

int splitExtraArgs(llvm::StringRef command, llvm::ArrayRef<std::string> args,
                   std::vector<std::string> &rest, std::string &json, double *tolerance) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &a = args[i];
    bool hasValue = i + 1 < args.size();
    if (a == "--json" && hasValue) {
      json = args[++i];
    } else if (a == "--tolerance" && tolerance && hasValue) {
      const std::string &v = args[++i];
      char *end = nullptr;
      double d = strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(d >= 0))
        return usageError(command.str() + ": --tolerance takes a number >= 0, got '" + v + "'");
      *tolerance = d;
    } else {
      rest.push_back(a);
    }
  }
  return 0;
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

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

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

/// The operands of a GEMM that hold weights: the weight of linear/conv2d,
/// either operand of a matmul.
SmallVector<Value, 2> weightOperands(Operation *op) {
  if (auto linear = dyn_cast<mp::LinearOp>(op))
    return {linear.getWeight()};
  if (auto linear = dyn_cast<mp::ScaledLinearOp>(op))
    return {linear.getWeight()};
  if (auto matmul = dyn_cast<mp::ScaledMatmulOp>(op))
    return {matmul.getLhs(), matmul.getRhs()};
  if (auto conv = dyn_cast<mp::Conv2dOp>(op))
    return {conv.getWeight()};
  if (auto matmul = dyn_cast<mp::MatmulOp>(op))
    return {matmul.getLhs(), matmul.getRhs()};
  return {};
}

/// Byte totals of one graph.
struct ByteTotals {
  int64_t weights = 0;     ///< every mp.constant
  int64_t gemmWeights = 0; ///< constant-derived GEMM weight operands, as read
  int64_t activations = 0; ///< every non-constant op result
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

ByteTotals countBytes(func::FuncOp func) {
  ByteTotals totals;
  llvm::DenseMap<Value, bool> memo;
  llvm::DenseSet<Value> counted;
  func.walk([&](Operation *op) {
    if (op->getDialect() == nullptr || !isa<GraphDialect>(op->getDialect()))
      return;
    for (Value r : op->getResults())
      (isa<mp::ConstantOp>(op) ? totals.weights : totals.activations) += bytesOf(r);
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

struct Row {
  std::string node, type, opClass, precision, inputs, output, acc, reason;
  std::vector<std::string> inputList, outputList;
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

std::string ratio(int64_t n, int64_t of) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (of == 0)
    os << "-";
  else
    os << llvm::format("%.1f%%", 100.0 * n / of);
  return s;
}

llvm::json::Object dtypeObject(const std::map<std::string, int64_t> &byDType) {
  llvm::json::Object o;
  for (const auto &[dtype, n] : byDType)
    o[dtype] = n;
  return o;
}

} // namespace

int runReport(llvm::ArrayRef<std::string> rawArgs) {
  std::vector<std::string> rest;
  std::string jsonPath;
  if (int rc = splitExtraArgs("report", rawArgs, rest, jsonPath, nullptr))
    return rc;
  CompileArgs args;
  if (int rc = parseCompileArgs("report", rest, args))
    return rc;
  if (!args.output.empty())
    return usageError("report: -o is not an option of report (use --json FILE)");
  if (!args.inputs.empty())
    return usageError("report: --input is an option of validate, not report");

  MLIRContext context;
  ReferenceAndPlan loaded;
  if (int rc = loadReferenceAndPlan(context, args, loaded))
    return rc;
  func::FuncOp refFunc = loaded.referenceFunc, func = loaded.planFunc;
  std::string error;

  std::vector<Row> rows;
  std::map<std::string, int64_t> flops, gemmFlops, opsByPrecision, opsByClass;
  int64_t totalFlops = 0, totalGemmFlops = 0, casts = 0, quantizes = 0, dequantizes = 0;
  unsigned index = 0;
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op) || isa<mp::ConstantOp>(op))
      continue;
    Row row = makeRow(&op, index++);
    casts += isa<mp::CastOp>(op);
    quantizes += isa<mp::QuantizeOp>(op);
    dequantizes += isa<mp::DequantizeOp>(op);
    if (row.opClass != "cast" && row.opClass != "scaling") {
      ++opsByClass[row.opClass];
      ++opsByPrecision[row.precision];
    }
    if (Type dtype = computeDType(&op)) {
      int64_t n = flopsOf(&op);
      std::string name = passes::dtypeName(dtype);
      if (n) {
        flops[name] += n;
        totalFlops += n;
        if (isGemm(&op)) {
          gemmFlops[name] += n;
          totalGemmFlops += n;
        }
      }
    }
    rows.push_back(std::move(row));
  }
  ByteTotals mixed = countBytes(func), fp32 = countBytes(refFunc);

  std::string text;
  llvm::raw_string_ostream os(text);
  os << "mixprec report: " << args.model << " --precision " << args.precision.precision;
  if (!args.precision.policyFile.empty())
    os << " --policy " << args.precision.policyFile;
  os << "\n";
  std::vector<std::vector<std::string>> table{
      {"node", "type", "class", "precision", "inputs", "output", "acc", "reason"}};
  for (const Row &r : rows)
    table.push_back({r.node, r.type, r.opClass, r.precision, r.inputs, r.output, r.acc, r.reason});
  printTable(os, table, 0);

  auto tally = [](const std::map<std::string, int64_t> &m) {
    std::string s;
    for (const auto &[k, n] : m)
      s += (s.empty() ? "" : ", ") + k + " " + std::to_string(n);
    return s.empty() ? std::string("-") : s;
  };
  int64_t opCount = 0;
  for (const auto &[k, n] : opsByClass)
    opCount += n;
  os << "summary:\n";
  os << "  ops: " << opCount << " (" << tally(opsByClass) << "; " << tally(opsByPrecision) << ")\n";
  os << "  flops: " << totalFlops << " (" << shares(flops, totalFlops) << ")\n";
  os << "  gemm flops: " << totalGemmFlops << " (" << shares(gemmFlops, totalGemmFlops) << ")\n";
  os << "  weight bytes: " << mixed.weights << " (fp32 " << fp32.weights << ", "
     << ratio(mixed.weights, fp32.weights) << ")\n";
  os << "  gemm weight bytes: " << mixed.gemmWeights << " (fp32 " << fp32.gemmWeights << ", "
     << ratio(mixed.gemmWeights, fp32.gemmWeights) << ")\n";
  os << "  activation bytes: " << mixed.activations << " (fp32 " << fp32.activations << ", "
     << ratio(mixed.activations, fp32.activations) << ")\n";
  os << "  casts: " << casts;
  if (quantizes || dequantizes)
    os << " (plus " << quantizes << " quantize, " << dequantizes << " dequantize)";
  os << "\n";

  if (!jsonPath.empty()) {
    llvm::json::Array jsonRows;
    for (const Row &r : rows) {
      llvm::json::Array inputs, outputs;
      for (const std::string &d : r.inputList)
        inputs.push_back(d);
      for (const std::string &d : r.outputList)
        outputs.push_back(d);
      jsonRows.push_back(llvm::json::Object{{"node", r.node},
                                            {"type", r.type},
                                            {"class", r.opClass},
                                            {"precision", r.precision},
                                            {"inputs", std::move(inputs)},
                                            {"outputs", std::move(outputs)},
                                            {"acc", r.acc},
                                            {"reason", r.reason}});
    }
    llvm::json::Array gemmWeights;
    for (const ByteTotals::Weight &w : mixed.gemmWeightList)
      gemmWeights.push_back(llvm::json::Object{{"node", w.node},
                                               {"type", w.type},
                                               {"dtype", w.dtype},
                                               {"bytes", w.bytes},
                                               {"bytes_fp32", 4 * w.elements}});
    llvm::json::Object summary{{"ops", opCount},
                               {"ops_by_class", dtypeObject(opsByClass)},
                               {"ops_by_precision", dtypeObject(opsByPrecision)},
                               {"flops", totalFlops},
                               {"flops_by_dtype", dtypeObject(flops)},
                               {"gemm_flops", totalGemmFlops},
                               {"gemm_flops_by_dtype", dtypeObject(gemmFlops)},
                               {"weight_bytes", mixed.weights},
                               {"weight_bytes_fp32", fp32.weights},
                               {"gemm_weight_bytes", mixed.gemmWeights},
                               {"gemm_weight_bytes_fp32", fp32.gemmWeights},
                               {"gemm_weights", std::move(gemmWeights)},
                               {"activation_bytes", mixed.activations},
                               {"activation_bytes_fp32", fp32.activations},
                               {"casts", casts},
                               {"quantize", quantizes},
                               {"dequantize", dequantizes}};
    llvm::json::Object doc{{"model", args.model},
                           {"precision", args.precision.precision},
                           {"ops", std::move(jsonRows)},
                           {"summary", std::move(summary)}};
    std::string json;
    llvm::raw_string_ostream js(json);
    js << llvm::formatv("{0:2}", llvm::json::Value(std::move(doc))) << "\n";
    if (!writeTextFile(jsonPath, json))
      return 1;
    if (jsonPath == "-")
      return 0;
  }
  llvm::outs() << text;
  return 0;
}

} // namespace mixprec::tools
