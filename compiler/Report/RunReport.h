//===- RunReport.h - the visual report of a training run --------*- C++ -*-===//
//
// One self-contained HTML page (inline SVG and CSS; no script, no network,
// no other file) drawn from the CSVs `mixprec train --csv` writes and,
// optionally, the run's metrics JSON: the loss curves, the loss scale with
// the skipped steps, the gradient norm, the per-layer gradient error against
// FP32, the memory breakdown, the table of the run's metrics and the op
// graph coloured by dtype. `mixprec report-run` renders it from files and
// `mixprec train --report` from what it holds in memory. Nothing here
// prints or exits; failures are error strings naming the file at fault.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_REPORT_RUNREPORT_H
#define MIXPREC_COMPILER_REPORT_RUNREPORT_H

#include <string>
#include <vector>

namespace mixprec::compiler {

/// One training CSV: a header row
/// `[seed,]step,epoch,loss,loss_scale,skipped,grad_norm,test_loss,test_accuracy
/// [,fp32_loss,fp32_skipped,fp32_test_loss,fp32_test_accuracy]
/// [,grad_rel_l2_max,grad_cosine_min]` (columns found by name, in any order;
/// unknown columns ignored; only step and loss required), then one row per
/// step (the rows of all seeds, seed by seed, when there is a seed column).
/// Each CSV is one group of curves (one precision).
struct RunCsv {
  /// Names the CSV in labels and errors only; nothing reads it.
  std::string path;
  /// The file's contents.
  std::string text;
};

/// Renders the report of the `csvs` (at least one) and `metricsJson` (the
/// run's metrics document, "" for none; `metricsName` names it in errors)
/// as one HTML page into `html`. False with `error` naming the file at
/// fault (and the line and column of a CSV cell that is not a number, or
/// llvm::json's message for malformed JSON). Parts the metrics leave out
/// are shown as "not measured".
bool renderRunReport(const std::vector<RunCsv> &csvs, const std::string &metricsJson,
                     std::string &html, std::string &error,
                     const std::string &metricsName = "the metrics JSON");

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_REPORT_RUNREPORT_H
