//===- Pipeline.h - the precision pipeline and calibration ------*- C++ -*-===//
#ifndef MIXPREC_COMPILER_PIPELINE_PIPELINE_H
#define MIXPREC_COMPILER_PIPELINE_PIPELINE_H

#include "compiler/Interpreter/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mixprec::compiler {

/// What `mixprec compile` asks of the precision passes.
struct PrecisionOptions {
  std::string precision = "bf16"; ///< fp32, tf32, bf16, fp16, fp8
  bool keepIoTypes = true;
  std::vector<std::string> keepFp32; ///< op types or op-name globs
  std::vector<std::string> force;    ///< NAME_GLOB:DTYPE
  std::string policyFile;            ///< JSON, same settings
  double fp16Margin = 2.0;
  double underflowThreshold = 0.5;
  std::string overflowFallback = "bf16";
  std::string fp8Scaling = "auto"; ///< current, static (calibrated) or auto
  int64_t fp8Margin = 0;
};

/// Runs --mp-assign-precision, --mp-insert-casts, --mp-insert-scaling and
/// --mp-fold-casts on
/// every function of `module`. On failure sets `error` to the first
/// diagnostic (one line, naming the op or entry) and returns false.
bool runPrecisionPipeline(mlir::ModuleOp module, const PrecisionOptions &options,
                          std::string &error);

/// Runs --mp-fuse, --mp-lower-to-kernels and --mp-plan-memory: the
/// annotated graph becomes a planned mpk function, ready for the module
/// writer. Sets `error` (one line) on failure.
bool runKernelPipeline(mlir::ModuleOp module, std::string &error);

/// Per-op statistics of an FP32 run, for range-aware assignment.
struct RangeStats {
  double amax = 0;           ///< largest |x| (inf if any value is non-finite)
  int64_t nonZero = 0;       ///< non-zero values seen
  int64_t belowFp16Normal = 0; ///< of those, |x| < 6.1e-5
};

/// Runs the FP32 graph on each input set and records, for every mp op with
/// a float result, the amax and the share of non-zero values below FP16's
/// normal range as `mp.calib_amax` / `mp.calib_underflow` attributes.
bool calibrate(mlir::func::FuncOp func, const std::vector<std::vector<HostTensor>> &inputSets,
               std::string &error);

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_PIPELINE_PIPELINE_H
