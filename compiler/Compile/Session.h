//===- Session.h - one compilation of one model, for every front end -*- C++ -*-===//
//
// The compile session: the one place the steps of a compilation run, in
// their one order (load -> calibrate -> precision pipeline -> kernel
// pipeline -> module image -> write), used by the CLI's commands, the
// Python package and training alike. A front end states what it has (the
// model's path, sizes for its dynamic dims, how to make the calibration
// inputs, the precision options, what to do with a graph that already
// carries a plan) and asks for what it needs: the imported FP32 graph, the
// precision plan, both side by side, a module image, a written module.
// IREE's embedding API (a session per compilation holding its options, an
// invocation per source) is the model; here a session holds one model.
//
// Failures are MLIR diagnostics on the session's context, as everywhere in
// the compile API (Compile.h): the caller keeps its own diagnostic handler
// and prints or returns the error in its own form. failedStep() says which
// step failed, so that a caller can tell a load failure (its error names
// the file) from one in the graph, and one it reported itself (its
// calibration inputs) from one the session's diagnostics hold.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_COMPILE_SESSION_H
#define MIXPREC_COMPILER_COMPILE_SESSION_H

#include "compiler/Compile/Compile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <functional>
#include <string>
#include <vector>

namespace mixprec::compiler {

/// The steps of a compilation, in order; CompileSession::failedStep() names the
/// one that failed.
enum class SessionStep {
  None,              ///< nothing failed
  Load,              ///< reading or importing the model (the error names the file)
  Entry,             ///< the model has no graph to compile (no @main, or several functions)
  CalibrationInputs, ///< the front end's calibration inputs (it reported the error itself)
  Calibrate,         ///< running the FP32 graph on them
  Precision,         ///< the precision pipeline, or a plan refused
  Kernels,           ///< the kernel pipeline, CUDA code, the module image
  Write              ///< writing the module and its side file
};

/// What a session compiles and how.
struct SessionOptions {
  /// The model: an `.onnx` file or `mp` IR in `.mlir`/bytecode.
  std::string model;
  /// Sizes for the model's dynamic dims, the values of small inputs it
  /// needs at compile time, and the callbacks loadModel makes.
  LoadOptions load;
  /// Makes the calibration inputs for the imported FP32 graph; calibration
  /// runs only when set. It reports its own error and returns failure.
  std::function<mlir::FailureOr<std::vector<HostTensor>>(mlir::func::FuncOp)>
      calibrationInputs;
  /// The precision pipeline's options; plan() and applyPrecision() need them.
  const passes::PrecisionPipelineOptions *precision = nullptr;
  /// What the precision step does with a graph that already carries a plan.
  ExistingPlan existing = ExistingPlan::Keep;
  /// When not empty: an error the precision step emits at the graph
  /// instead of running, where the graph has no plan (the front end could
  /// not read the precision it was given; a graph with a plan keeps it).
  std::string precisionError;
};

/// The imported FP32 graph and the compiled plan of one model, side by
/// side (report and validate compare them).
struct ReferenceAndPlan {
  mlir::OwningOpRef<mlir::ModuleOp> reference, plan;
  mlir::func::FuncOp referenceFunc, planFunc;
};

/// One compilation of one model on a context the caller prepared
/// (prepareContext) and whose diagnostics it handles.
class CompileSession {
public:
  CompileSession(mlir::MLIRContext &context, SessionOptions options);

  mlir::MLIRContext &getContext() const { return context; }
  const SessionOptions &getOptions() const { return options; }
  /// The step that failed last; None while nothing has.
  SessionStep failedStep() const { return failedAt; }

  /// The model as imported: the FP32 reference. A new module each call.
  mlir::OwningOpRef<mlir::ModuleOp> load();

  /// The graph of a loaded module (its @main, or its only function).
  mlir::func::FuncOp entry(mlir::ModuleOp module);

  /// Records the calibration (mp.calib_amax, mp.calib_underflow) on a
  /// loaded module, where the options give calibration inputs.
  mlir::LogicalResult calibrate(mlir::ModuleOp module);

  /// Runs the precision pipeline on `module` (a loaded graph, or one a
  /// front end built from it, such as a training step).
  mlir::LogicalResult applyPrecision(mlir::ModuleOp module);

  /// load, calibrate, applyPrecision: the precision plan.
  mlir::OwningOpRef<mlir::ModuleOp> plan();

  /// The reference and the plan, each with its graph.
  mlir::LogicalResult referenceAndPlan(ReferenceAndPlan &out);

  /// Lowers a planned module to kernels and serializes it (buildModule).
  mlir::FailureOr<codegen::ModuleImage>
  image(mlir::ModuleOp planned, const std::string &sideFileName,
        const codegen::ModuleWriteOptions &writeOptions, codegen::ModuleStats &stats,
        const codegen::CudaCompileOptions *cuda = nullptr,
        codegen::CudaCompileStats *cudaStats = nullptr);

  /// Writes a module image to `path` and its side file beside it, atomically.
  mlir::LogicalResult write(const std::string &path, const codegen::ModuleImage &image);

private:
  /// Records `step` as failed; returns failure.
  mlir::LogicalResult fail(SessionStep step) {
    failedAt = step;
    return mlir::failure();
  }

  mlir::MLIRContext &context;
  SessionOptions options;
  SessionStep failedAt = SessionStep::None;
};

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_COMPILE_SESSION_H
