//===- Pipelines.cpp - the registered mixprec pass pipelines ---------------===//
#include "passes/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>

using namespace mlir;

namespace mixprec::passes {

namespace {
/// The parser of the declared --precision, which holds its cl::values.
const PrecisionParser &declaredPrecisions() {
  static PrecisionPipelineOptions declared;
  return declared.precision.getParser();
}
} // namespace

llvm::StringRef precisionName(Precision precision) {
  return declaredPrecisions().nameOf(precision);
}

std::string precisionNames(llvm::StringRef last) { return declaredPrecisions().nameList(last); }

//===----------------------------------------------------------------------===//
// Option values
//===----------------------------------------------------------------------===//

namespace {
/// The handler of the innermost ScopedOptionErrorHandler, or null.
ScopedOptionErrorHandler::Handler *&currentOptionErrorHandler() {
  static ScopedOptionErrorHandler::Handler *handler = nullptr;
  return handler;
}
} // namespace

bool reportOptionError(const llvm::cl::Option &option, llvm::StringRef argName,
                       const llvm::Twine &message) {
  if (ScopedOptionErrorHandler::Handler *handler = currentOptionErrorHandler()) {
    (*handler)(option, argName, message.str());
    return true;
  }
  return const_cast<llvm::cl::Option &>(option).error(message, argName);
}

ScopedOptionErrorHandler::ScopedOptionErrorHandler(Handler handler)
    : handler(std::move(handler)), previous(currentOptionErrorHandler()) {
  currentOptionErrorHandler() = &this->handler;
}

ScopedOptionErrorHandler::~ScopedOptionErrorHandler() { currentOptionErrorHandler() = previous; }

PrecisionParser::PrecisionParser(llvm::cl::Option &option) : EnumParser(option) {
  aliases = {{"f32", Precision::FP32},
             {"f16", Precision::FP16},
             {"e4m3", Precision::FP8},
             {"f8E4M3FN", Precision::FP8}};
}

bool PrecisionParser::parse(llvm::cl::Option &option, llvm::StringRef argName,
                            llvm::StringRef arg, Precision &value) {
  if (std::optional<Precision> named = lookup(arg)) {
    value = *named;
    return false;
  }
  return reportOptionError(option, argName,
                           "unknown precision '" + arg + "' (use " + nameList() + ")");
}

std::optional<double> parseNumber(llvm::StringRef text) {
  std::string copy = text.str(); // strtod needs the terminating NUL
  char *end = nullptr;
  double number = std::strtod(copy.c_str(), &end);
  if (copy.empty() || *end != '\0')
    return std::nullopt;
  return number;
}

bool FlagParser::parse(llvm::cl::Option &option, llvm::StringRef argName, llvm::StringRef arg,
                       bool &value) {
  if (arg.empty() || arg == "true" || arg == "1") {
    value = true;
    return false;
  }
  if (arg == "false" || arg == "0") {
    value = false;
    return false;
  }
  return reportOptionError(option, argName, "takes true or false, got '" + arg + "'");
}

void PrecisionPipelineOptions::addToSubCommand(llvm::cl::SubCommand &sub,
                                               llvm::ArrayRef<llvm::StringRef> only) {
  // Registering an option again re-registers it everywhere it lives, so
  // the options are collected before the map they sit in changes.
  llvm::SmallVector<llvm::cl::Option *> selected;
  for (auto &[name, option] : OptionsMap)
    if (only.empty() || llvm::is_contained(only, name))
      selected.push_back(option);
  for (llvm::cl::Option *option : selected) {
    option->removeArgument();
    option->addSubCommand(sub);
    option->addArgument();
  }
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

void buildPrecisionPipeline(OpPassManager &pm, const PrecisionPipelineOptions &options) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  // Canonical forms first (x * sigmoid(x) is mp.silu), so that policy
  // decisions and reports see the ops a reader expects.
  funcPm.addPass(createCanonicalizerPass());
  // A weight exported twice, once transposed for a GEMM, is read once.
  funcPm.addPass(createTieTransposedWeightsPass());
  // The passes take their options from this one declaration; the list
  // options are views of its vectors, which outlive the pass creation.
  AssignPrecisionPassOptions assign;
  assign.precision = precisionName(options.precision).str();
  assign.keepIoTypes = options.keepIoTypes;
  assign.keepFp32 = llvm::ArrayRef<std::string>(options.keepFp32);
  assign.force = llvm::ArrayRef<std::string>(options.force);
  assign.policyFile = options.policyFile;
  assign.fp16Margin = options.fp16Margin;
  assign.underflowThreshold = options.underflowThreshold;
  assign.overflowFallback = options.overflowFallback;
  funcPm.addPass(createAssignPrecisionPass(assign));
  funcPm.addPass(createInsertCastsPass());
  funcPm.addPass(createShareWeightsPass());
  InsertScalingPassOptions scaling;
  scaling.scaling = options.fp8Scaling;
  scaling.margin = options.fp8Margin;
  scaling.format = options.fp8Format;
  scaling.historyLength = options.amaxHistory;
  scaling.amaxAlgo = options.amaxAlgo;
  funcPm.addPass(createInsertScalingPass(scaling));
  funcPm.addPass(createFoldCastsPass());
}

void buildKernelPipeline(OpPassManager &pm) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  funcPm.addPass(createFusePass());
  funcPm.addPass(createLowerToKernelsPass());
  funcPm.addPass(createPlanMemoryPass());
}

void registerMixprecPipelines() {
  PassPipelineRegistration<PrecisionPipelineOptions>(
      "mp-precision-pipeline",
      "What `mixprec compile` runs: canonicalize, assign precisions, insert casts "
      "and FP8 scaling, fold casts",
      buildPrecisionPipeline);
  PassPipelineRegistration<>(
      "mp-kernel-pipeline",
      "What `mixprec compile --emit mpk-mlir` runs after the precision pipeline: fuse, "
      "lower to mpk kernels, plan memory",
      buildKernelPipeline);
}

} // namespace mixprec::passes
