//===- Compile.h - load, calibrate, compile and write a model ---*- C++ -*-===//
//
// The compile API: what `mixprec` calls (and a Python binding would) to
// turn a model into a precision plan, kernel IR or a module. Entry points
// report failure as MLIR diagnostics on the model's context and return
// LogicalResult, FailureOr or a null module; they print nothing and never
// exit. A caller collects the diagnostics with a ScopedDiagnosticHandler:
// one error per failure, with the notes the parser, a verifier or a pass
// attached to it; formatDiagnostic gives the one-line form mixprec prints.
//
// Errors about a file (it cannot be read, parsed or written) are emitted at
// an unknown location and name the file in their message; errors about the
// graph are emitted at the op or graph at fault.
//
//===----------------------------------------------------------------------===//
#ifndef MIXPREC_COMPILER_COMPILE_COMPILE_H
#define MIXPREC_COMPILER_COMPILE_COMPILE_H

#include "codegen/ModuleWriter.h"
#include "compiler/Interpreter/Interpreter.h"
#include "passes/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace mixprec::compiler {

/// Loads the dialects models and modules use, and keeps diagnostics one
/// line each: an op's error does not carry the whole op printed as a note.
void prepareContext(mlir::MLIRContext &context);

/// What loadModel reports besides errors.
struct LoadOptions {
  /// Called with every other file the model reads (ONNX external data).
  std::function<void(const std::string &)> onExternalFile;
  /// Sizes for an ONNX model's dynamic dims (OnnxImportOptions): input
  /// shapes and symbolic dims by name (`--shape`), and the shapes of the
  /// inputs at hand. An `.mlir` model, statically shaped, takes none.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  std::map<std::string, std::vector<int64_t>> dataShapes;
  /// Every name of dataShapes must be a graph input (OnnxImportOptions).
  bool dataMustBeInputs = false;
  /// Values of small integer inputs at hand, for an input the model needs
  /// at compile time (OnnxImportOptions::dataValues); `onValueUsed` is told
  /// each one the model was specialised to.
  std::map<std::string, std::vector<int64_t>> dataValues;
  std::map<std::string, std::vector<float>> dataFloatValues;
  std::function<void(const std::string &)> onValueUsed;
};

/// Imports an `.onnx` file, or parses and verifies `mp` IR in `.mlir`. On
/// failure emits one error naming the file (a parser's or verifier's error
/// keeps its notes) and returns null.
mlir::OwningOpRef<mlir::ModuleOp> loadModel(mlir::MLIRContext &context, llvm::StringRef path,
                                            const LoadOptions &options = {});

/// The graph of a model: its @main function, or its only function.
mlir::FailureOr<mlir::func::FuncOp> entryFunction(mlir::ModuleOp module);

/// Runs the FP32 graph on each input set and records, for every mp op with
/// a float result, the amax and the share of non-zero values below FP16's
/// normal range (`mp.calib_amax`, `mp.calib_underflow`), which the
/// precision pipeline's range rules read.
mlir::LogicalResult calibrate(mlir::func::FuncOp func,
                              llvm::ArrayRef<std::vector<HostTensor>> inputSets);

/// Whether a graph carries a precision plan (mp.precision annotations, as
/// `mixprec compile --emit mp-mlir` writes it).
bool hasPrecisionPlan(mlir::ModuleOp module);

/// What compilePrecision does with a graph that already carries a plan.
enum class ExistingPlan {
  Keep,  ///< run it with that plan
  Refuse ///< an error: a precision was asked for that the graph cannot take
};

/// Runs the precision pipeline (--mp-precision-pipeline) on a graph
/// without a plan; a graph with one is kept or refused.
mlir::LogicalResult compilePrecision(mlir::ModuleOp module,
                                     const passes::PrecisionPipelineOptions &options,
                                     ExistingPlan existing);

/// Runs the kernel pipeline (--mp-kernel-pipeline): the annotated graph
/// becomes a fused, planned mpk function.
mlir::LogicalResult compileKernels(mlir::ModuleOp module);

/// Lowers an annotated graph to kernels and serializes it as a module whose
/// side file is called `sideFileName`; fills `stats`. With `cuda` (`--arch`)
/// the module also holds the kernels' CUDA code, compiled by NVRTC through
/// the kernel cache (what that did goes to `cudaStats`).
mlir::FailureOr<codegen::ModuleImage>
buildModule(mlir::ModuleOp module, const std::string &sideFileName,
            const codegen::ModuleWriteOptions &options, codegen::ModuleStats &stats,
            const codegen::CudaCompileOptions *cuda = nullptr,
            codegen::CudaCompileStats *cudaStats = nullptr);

/// The CUDA code of a module's kernels (after compileKernels): emitted
/// only (`code.source`, `code.kernels`) when `cuda` is null, else also
/// compiled, as buildModule does. NVRTC's rejection is an error at the
/// kernel's op, naming the kernel and the failing source line.
mlir::FailureOr<codegen::CudaModuleCode> compileCuda(mlir::ModuleOp module,
                                                     const codegen::CudaCompileOptions *cuda,
                                                     codegen::CudaCompileStats &stats);

/// Writes a module to `path` and its side file beside it, atomically.
mlir::LogicalResult writeModule(mlir::MLIRContext &context, const std::string &path,
                                const codegen::ModuleImage &image);

/// A diagnostic as one line: "NODE: message" for a node's location,
/// "FILE:LINE:COL: message" for a file's, the message alone otherwise.
std::string formatDiagnostic(const mlir::Diagnostic &diag);

/// The CUDA architecture of the device ("sm_90", its N in `smVersion`)
/// when there is one and NVRTC knows its architecture; else "" (no device,
/// or `note` says why its architecture gets no code). What the CLI's
/// just-in-time runs, training and the Python package compile for.
std::string deviceCudaArch(int &smVersion, std::string &note);
/// deviceCudaArch's N of sm_N, or 0 (no device, or no code for it).
int deviceSmVersion();

} // namespace mixprec::compiler

#endif // MIXPREC_COMPILER_COMPILE_COMPILE_H
