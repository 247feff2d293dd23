//===- Pipelines.h - the registered mixprec pass pipelines ------*- C++ -*-===//
//
// The pass sequences `mixprec compile` runs, registered with MLIR so that
// `mixprec-opt --mp-precision-pipeline=...` and `--mp-kernel-pipeline`
// reproduce the tool exactly (tests/lit/cli/pipeline.test compares them).
//
// PrecisionPipelineOptions is generated from Passes.td (mixprec-tblgen
// -gen-pipeline-options): its options are those of the passes the pipeline
// configures, declared once on the pass with their types, defaults and
// values (--mp-insert-scaling's under an `fp8-` prefix). The same option
// objects are the flags of `mixprec compile`, `report`, `validate` (and
// `run`'s --precision): the tool registers them in its subcommands, so its
// command line parses straight into this struct, and buildPrecisionPipeline
// hands each pass the options struct the generated getters fill. A policy
// file's keys are their names with '_' for '-' (PolicyFile.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_PASSES_PIPELINES_H
#define MIXPREC_PASSES_PIPELINES_H

#include "passes/OptionTypes.h"
#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mixprec::passes {

#define GEN_PIPELINE_OPTIONS_DECL
#include "passes/Pipelines.h.inc"

/// canonicalize, --mp-assign-precision, --mp-insert-casts,
/// --mp-insert-scaling, --mp-fold-casts on every function.
void buildPrecisionPipeline(mlir::OpPassManager &pm, const PrecisionPipelineOptions &options);

/// --mp-fuse, --mp-lower-to-kernels, --mp-plan-memory on every function.
void buildKernelPipeline(mlir::OpPassManager &pm);

/// Registers --mp-precision-pipeline and --mp-kernel-pipeline.
void registerMixprecPipelines();

} // namespace mixprec::passes

#endif // MIXPREC_PASSES_PIPELINES_H
