//===- Pipeline.cpp - the precision pipeline and calibration ---------------===//
#include "compiler/Pipeline/Pipeline.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using mixprec::graph::GraphDialect;

namespace mixprec::compiler {
namespace {

/// Formats a diagnostic as one line: "file:line:col: message" or "node: message".
std::string formatDiagnostic(Diagnostic &diag) {
  std::string s;
  llvm::raw_string_ostream os(s);
  Location loc = diag.getLocation();
  if (auto name = dyn_cast<NameLoc>(loc))
    os << name.getName().getValue() << ": ";
  else if (auto file = dyn_cast<FileLineColLoc>(loc))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn()
       << ": ";
  os << diag.str();
  return s.substr(0, s.find('\n'));
}

} // namespace

bool runPrecisionPipeline(ModuleOp module, const PrecisionOptions &options,
                          std::string &error) {
  MLIRContext *ctx = module.getContext();
  std::string firstError;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
    if (firstError.empty() && diag.getSeverity() == DiagnosticSeverity::Error)
      firstError = formatDiagnostic(diag);
    return success();
  });
  PassManager pm(ctx);
  passes::PrecisionPipelineOptions pipeline;
  pipeline.precision = options.precision;
  pipeline.keepIoTypes = options.keepIoTypes;
  pipeline.keepFp32 = options.keepFp32;
  pipeline.force = options.force;
  pipeline.policyFile = options.policyFile;
  pipeline.fp16Margin = options.fp16Margin;
  pipeline.underflowThreshold = options.underflowThreshold;
  pipeline.overflowFallback = options.overflowFallback;
  pipeline.fp8Scaling = options.fp8Scaling;
  pipeline.fp8Margin = options.fp8Margin;
  passes::buildPrecisionPipeline(pm, pipeline);
  if (failed(pm.run(module))) {
    error = firstError.empty() ? "the precision pipeline failed" : firstError;
    return false;
  }
  return true;
}

bool runKernelPipeline(ModuleOp module, std::string &error) {
  MLIRContext *ctx = module.getContext();
  std::string firstError;
  ScopedDiagnosticHandler handler(ctx, [&](Diagnostic &diag) {
    if (firstError.empty() && diag.getSeverity() == DiagnosticSeverity::Error)
      firstError = formatDiagnostic(diag);
    return success();
  });
  PassManager pm(ctx);
  passes::buildKernelPipeline(pm);
  if (failed(pm.run(module))) {
    error = firstError.empty() ? "the kernel pipeline failed" : firstError;
    return false;
  }
  return true;
}

bool calibrate(func::FuncOp func, const std::vector<std::vector<HostTensor>> &inputSets,
               std::string &error) {
  llvm::DenseMap<Operation *, RangeStats> stats;
  Interpreter interpreter(func);
  interpreter.setObserver([&](Operation *op, ArrayRef<const HostTensor *> results) {
    if (results.empty() || results[0]->kind != HostTensor::Kind::Float ||
        isa<graph::ConstantOp>(op))
      return;
    RangeStats &s = stats[op];
    for (float v : results[0]->floats) {
      double a = std::fabs(static_cast<double>(v));
      if (!std::isfinite(a))
        s.amax = INFINITY;
      else if (a > s.amax)
        s.amax = a;
      if (a != 0) {
        ++s.nonZero;
        if (a < 6.103515625e-05)
          ++s.belowFp16Normal;
      }
    }
  });
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < inputSets.size(); ++i)
    if (!interpreter.run(inputSets[i], outputs, error)) {
      error = "calibration input set " + std::to_string(i) + ": " + error;
      return false;
    }
  Builder b(func.getContext());
  for (auto &[op, s] : stats) {
    op->setAttr(GraphDialect::kCalibAmaxAttr, b.getF32FloatAttr(static_cast<float>(s.amax)));
    op->setAttr(GraphDialect::kCalibUnderflowAttr,
                b.getF32FloatAttr(s.nonZero ? static_cast<float>(s.belowFp16Normal) /
                                                  static_cast<float>(s.nonZero)
                                            : 0.0f));
  }
  return true;
}

} // namespace mixprec::compiler
