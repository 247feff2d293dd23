//===- Validate.cpp - mixprec validate -------------------------------------===//
//
// Runs the FP32 reference and the mixed plan on the same inputs (--input
// files, or random ones from --seed) and prints their comparison
// (compiler/Report: per graph output, per op, the first non-finite op);
// `--json FILE` writes the same as JSON.
//
//===----------------------------------------------------------------------===//
#include "tools/mixprec/Commands.h"

#include "compiler/Report/Report.h"
#include "tools/mixprec/CliCommon.h"

#include "llvm/Support/raw_ostream.h"

namespace mixprec::tools {

int runValidate() {
  CommandContext command;
  ReferenceAndPlan loaded;
  if (int rc = loadReferenceAndPlan(command, loaded))
    return rc;
  std::vector<compiler::HostTensor> inputs;
  std::string error;
  if (!loadInputs(loaded.referenceFunc, compiler::getSignature(loaded.referenceFunc),
                  opts::inputs(), opts::seed(), inputs, error))
    return fail(error);
  compiler::ValidateOptions options;
  options.tolerance = opts::tolerance();
  options.calibrated = !opts::calibration().empty();
  compiler::PlanDocument validation;
  if (!compiler::validatePlan(loaded.referenceFunc, loaded.planFunc, inputs, planInfo(), options,
                              validation, error))
    return fail(error);
  const std::string &json = opts::json();
  if (!json.empty() && !writeJson(json, std::move(validation.json)))
    return 1;
  if (json != "-")
    llvm::outs() << validation.text;
  return validation.status;
}

} // namespace mixprec::tools
