//===- Pipelines.h - the registered mixprec pass pipelines ------*- C++ -*-===//
//
// The pass sequences `mixprec compile` runs, registered with MLIR so that
// `mixprec-opt --mp-precision-pipeline=...` and `--mp-kernel-pipeline`
// reproduce the tool exactly (tests/lit/cli/pipeline.test compares them).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_PIPELINES_H
#define MIXPREC_PASSES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mixprec::passes {

/// What the precision pipeline takes: the options of --mp-assign-precision
/// and --mp-insert-scaling, under the names `mixprec compile` gives them.
struct PrecisionPipelineOptions : public mlir::PassPipelineOptions<PrecisionPipelineOptions> {
  Option<std::string> precision{*this, "precision",
                                llvm::cl::desc("fp32, tf32, bf16, fp16 or fp8"),
                                llvm::cl::init("bf16")};
  Option<bool> keepIoTypes{*this, "keep-io-types",
                           llvm::cl::desc("Graph inputs and outputs keep their dtypes"),
                           llvm::cl::init(true)};
  ListOption<std::string> keepFp32{*this, "keep-fp32",
                                   llvm::cl::desc("Op types or name globs kept in FP32")};
  ListOption<std::string> force{*this, "force", llvm::cl::desc("NAME_GLOB:DTYPE overrides")};
  Option<std::string> policyFile{*this, "policy", llvm::cl::desc("A JSON policy file")};
  Option<double> fp16Margin{*this, "fp16-margin",
                            llvm::cl::desc("Headroom factor below FP16's largest value"),
                            llvm::cl::init(2.0)};
  Option<double> underflowThreshold{
      *this, "underflow-threshold",
      llvm::cl::desc("Share of values below FP16's normal range that moves an op"),
      llvm::cl::init(0.5)};
  Option<std::string> overflowFallback{*this, "overflow-fallback",
                                       llvm::cl::desc("bf16 or fp32 for ops FP16 cannot hold"),
                                       llvm::cl::init("bf16")};
  Option<std::string> fp8Scaling{*this, "fp8-scaling",
                                 llvm::cl::desc("auto, current or static"),
                                 llvm::cl::init("auto")};
  Option<int64_t> fp8Margin{*this, "fp8-margin", llvm::cl::desc("FP8 scale margin (2^-N)"),
                            llvm::cl::init(0)};
};

/// canonicalize, --mp-assign-precision, --mp-insert-casts,
/// --mp-insert-scaling, --mp-fold-casts on every function.
void buildPrecisionPipeline(mlir::OpPassManager &pm, const PrecisionPipelineOptions &options);

/// --mp-fuse, --mp-lower-to-kernels, --mp-plan-memory on every function.
void buildKernelPipeline(mlir::OpPassManager &pm);

/// Registers --mp-precision-pipeline and --mp-kernel-pipeline.
void registerMixprecPipelines();

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_PIPELINES_H
