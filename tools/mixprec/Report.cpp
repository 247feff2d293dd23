//===- Report.cpp - mixprec report -----------------------------------------===//
//
// Prints the precision plan of a compiled model (compiler/Report: one row
// per op, then FLOP, byte and cast totals against the imported FP32 graph);
// `--json FILE` writes the same as JSON.
//
//===----------------------------------------------------------------------===//
#include "tools/mixprec/Commands.h"

#include "compiler/Report/Report.h"
#include "tools/mixprec/CliCommon.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace mixprec::tools {

bool writeJson(const std::string &path, llvm::json::Value document) {
  std::string json;
  llvm::raw_string_ostream os(json);
  os << llvm::formatv("{0:2}", document) << "\n";
  return writeTextFile(path, json);
}

int runReport() {
  CommandContext command;
  ReferenceAndPlan loaded;
  if (int rc = loadReferenceAndPlan(command, loaded))
    return rc;
  compiler::PlanDocument report =
      compiler::reportPlan(loaded.planFunc, loaded.referenceFunc, planInfo(), opts::graph());
  const std::string &json = opts::json();
  if (!json.empty() && !writeJson(json, std::move(report.json)))
    return 1;
  if (json != "-")
    llvm::outs() << report.text;
  return 0;
}

} // namespace mixprec::tools
