//===- Pipelines.cpp - the registered mixprec pass pipelines ---------------===//
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace mixprec::passes {

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

void buildPrecisionPipeline(OpPassManager &pm, const PrecisionPipelineOptions &options) {
  OpPassManager &funcPm = pm.nest<func::FuncOp>();
  // Canonical forms first (x * sigmoid(x) is mp.silu), so that policy
  // decisions and reports see the ops a reader expects.
  funcPm.addPass(createCanonicalizerPass());
  // Attention as one op before precisions are assigned: it takes the
  // policy's low precision as its two GEMMs would.
  funcPm.addPass(createFuseAttentionPass());
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
