//===- Pipelines.cpp - the registered mixprec pass pipelines ---------------===//
#include "passes/Pipelines.h"

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace mixprec::passes {

void buildPrecisionPipeline(OpPassManager &pm, const PrecisionPipelineOptions &options) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  // Canonical forms first (x * sigmoid(x) is mp.silu), so that policy
  // decisions and reports see the ops a reader expects.
  funcPm.addPass(createCanonicalizerPass());
  AssignPrecisionPassOptions assign;
  assign.precision = options.precision;
  assign.keepIoTypes = options.keepIoTypes;
  // The pass options hold views: these copies live until the pass has
  // taken its own (createAssignPrecisionPass copies them).
  std::vector<std::string> keepFp32(options.keepFp32.begin(), options.keepFp32.end());
  std::vector<std::string> force(options.force.begin(), options.force.end());
  assign.keepFp32 = keepFp32;
  assign.force = force;
  assign.policyFile = options.policyFile;
  assign.fp16Margin = options.fp16Margin;
  assign.underflowThreshold = options.underflowThreshold;
  assign.overflowFallback = options.overflowFallback;
  funcPm.addPass(createAssignPrecisionPass(assign));
  funcPm.addPass(createInsertCastsPass());
  InsertScalingPassOptions scaling;
  scaling.scaling = options.fp8Scaling;
  scaling.margin = options.fp8Margin;
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
