//===- Pipelines.cpp - the registered mixprec pass pipelines ---------------===//
#include "passes/Pipelines.h"


#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <cstdlib>

using namespace mlir;

namespace mixprec::passes {

#define GEN_PIPELINE_OPTIONS_DEF
#include "passes/Pipelines.h.inc"

namespace {
/// The options as declared, whose parsers hold the values' names.
PrecisionPipelineOptions &declared() {
  static PrecisionPipelineOptions options;
  return options;
}
} // namespace

llvm::StringRef optionValueName(Precision value) {
  return declared().precision.getParser().nameOf(value);
}
llvm::StringRef optionValueName(Fp8Scaling value) {
  return declared().fp8Scaling.getParser().nameOf(value);
}
llvm::StringRef optionValueName(Fp8Format value) {
  return declared().fp8Format.getParser().nameOf(value);
}
llvm::StringRef optionValueName(AmaxAlgo value) {
  return declared().fp8AmaxAlgo.getParser().nameOf(value);
}

llvm::StringRef precisionName(Precision precision) { return optionValueName(precision); }

std::string precisionNames(llvm::StringRef last) {
  return declared().precision.getParser().nameList(last);
}

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
  // Each pass takes its options as the pipeline's generated getters give
  // them; list options are views of the pipeline's vectors, which outlive
  // the pass creation.
  funcPm.addPass(createAssignPrecisionPass(options.getAssignPrecisionPassOptions()));
  funcPm.addPass(createInsertCastsPass());
  funcPm.addPass(createShareWeightsPass());
  funcPm.addPass(createInsertScalingPass(options.getInsertScalingPassOptions()));
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
