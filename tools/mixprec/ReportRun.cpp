//===- ReportRun.cpp - mixprec report-run ----------------------------------===//
//
// Draws a training run, the CSVs `mixprec train --csv` writes and
// optionally its --metrics JSON, as one self-contained HTML page
// (compiler/Report/RunReport.h, which `train --report` calls too) and
// writes it to -o by the file rules: atomically, never over an input.
//
//===----------------------------------------------------------------------===//
#include "tools/mixprec/Commands.h"

#include "common/FileIO.h"
#include "compiler/Report/RunReport.h"
#include "tools/mixprec/CliCommon.h"

#include <utility>

namespace mixprec::tools {

namespace {
/// The largest CSV or metrics file report-run reads (a run of millions of
/// steps is a few hundred MB of CSV).
constexpr uint64_t kMaxInputBytes = uint64_t(1) << 30;

/// Reads a whole input file (noted as an input, so -o cannot replace it).
bool readInput(const std::string &path, const std::string &what, std::string &text,
               std::string &error) {
  noteInput(path, what);
  return common::readRegularFile(path, text, error, kMaxInputBytes);
}
} // namespace

int runReportRun() {
  const std::string &output = opts::output();
  if (output.empty())
    return usageError("report-run: -o FILE.html is required (the page is written there)");
  std::string error;
  std::vector<compiler::RunCsv> csvs;
  for (const std::string &path : opts::files()) {
    compiler::RunCsv csv;
    csv.path = path;
    if (!readInput(path, "the training CSV " + path, csv.text, error))
      return fail(error);
    csvs.push_back(std::move(csv));
  }
  std::string metrics;
  const std::string &metricsPath = opts::reportRunMetrics();
  if (!metricsPath.empty()) {
    if (!readInput(metricsPath, "--metrics " + metricsPath, metrics, error))
      return fail(error);
    if (metrics.empty())
      return fail(metricsPath + ": malformed JSON: the file is empty");
  }
  // Before the work: an output that would replace an input is refused.
  if (output != "-" && !checkNotAnInput(output, error))
    return fail(error);
  std::string html;
  if (!compiler::renderRunReport(csvs, metrics, html, error, metricsPath))
    return fail(error);
  return writeTextFile(output, html) ? 0 : 1;
}

} // namespace mixprec::tools
