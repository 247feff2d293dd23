//===- Compile.cpp - the precision and kernel pipelines, module output -----===//
#include "compiler/Compile/Compile.h"
#include "compiler/Interpreter/Interpreter.h"

#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "codegen/Cuda/NvrtcCompiler.h"
#include "mixprec/runtime.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace mixprec::compiler {
namespace {

/// Runs the pipeline `build` adds on `module`. Its passes report their own
/// errors; a failure without one (never expected) still gets an error.
LogicalResult runPipeline(ModuleOp module, llvm::function_ref<void(OpPassManager &)> build,
                          llvm::StringRef what) {
  MLIRContext *context = module.getContext();
  bool reported = false;
  ScopedDiagnosticHandler watch(context, [&](Diagnostic &diag) {
    reported |= diag.getSeverity() == DiagnosticSeverity::Error;
    return failure(); // seen, and passed on to the caller's handler
  });
  PassManager pm(context);
  build(pm);
  if (succeeded(pm.run(module)))
    return success();
  if (!reported)
    emitError(UnknownLoc::get(context)) << "the " << what << " pipeline failed";
  return failure();
}

} // namespace

void prepareContext(MLIRContext &context) {
  context.loadDialect<graph::GraphDialect, kernel::KernelDialect, func::FuncDialect>();
  // calibrate() and the tools' reference runs interpret mp ops.
  compiler::registerReferenceExternalModels(context);
  context.printOpOnDiagnostic(false);
}

FailureOr<func::FuncOp> entryFunction(ModuleOp module) {
  std::string error;
  func::FuncOp func = findEntryFunction(module, error);
  if (!func)
    return emitError(UnknownLoc::get(module.getContext())) << error;
  return func;
}

bool hasPrecisionPlan(ModuleOp module) {
  bool annotated = false;
  module->walk([&](Operation *op) {
    annotated |= op->hasAttr(graph::GraphDialect::kPrecisionAttr);
  });
  return annotated;
}

LogicalResult compilePrecision(ModuleOp module, const passes::PrecisionPipelineOptions &options,
                               ExistingPlan existing) {
  if (!hasPrecisionPlan(module))
    return runPipeline(
        module, [&](OpPassManager &pm) { passes::buildPrecisionPipeline(pm, options); },
        "precision");
  if (existing == ExistingPlan::Keep)
    return success();
  return emitError(UnknownLoc::get(module.getContext()))
         << "--precision: the model already carries a precision plan (mp.precision "
            "annotations); give it without --precision";
}

LogicalResult compileKernels(ModuleOp module) {
  return runPipeline(module, passes::buildKernelPipeline, "kernel");
}

FailureOr<codegen::CudaModuleCode> compileCuda(ModuleOp module,
                                               const codegen::CudaCompileOptions *cuda,
                                               codegen::CudaCompileStats &stats) {
  FailureOr<func::FuncOp> func = entryFunction(module);
  if (failed(func))
    return failure();
  return cuda ? codegen::compileCudaProgram(*func, *cuda, stats) : codegen::emitCudaProgram(*func);
}

FailureOr<codegen::ModuleImage> buildModule(ModuleOp module, const std::string &sideFileName,
                                            const codegen::ModuleWriteOptions &options,
                                            codegen::ModuleStats &stats,
                                            const codegen::CudaCompileOptions *cuda,
                                            codegen::CudaCompileStats *cudaStats) {
  FailureOr<func::FuncOp> func = entryFunction(module);
  if (failed(func))
    return failure();
  // The plan is read from the annotated graph, before lowering replaces it.
  std::vector<codegen::PrecisionEntry> plan = codegen::collectPrecisionPlan(*func);
  if (failed(compileKernels(module)))
    return failure();
  codegen::ModuleWriteOptions writeOptions = options;
  FailureOr<codegen::CudaModuleCode> code;
  codegen::CudaCompileStats ignored;
  if (cuda) {
    code = compileCuda(module, cuda, cudaStats ? *cudaStats : ignored);
    if (failed(code))
      return failure();
    writeOptions.cuda = &*code;
  }
  return codegen::buildModule(*func, plan, sideFileName, writeOptions, stats);
}

LogicalResult writeModule(MLIRContext &context, const std::string &path,
                          const codegen::ModuleImage &image) {
  std::string error;
  if (!codegen::writeModuleFiles(path, image, error))
    return emitError(UnknownLoc::get(&context)) << error;
  return success();
}

std::string formatDiagnostic(const Diagnostic &diag) {
  std::string s;
  llvm::raw_string_ostream os(s);
  Location loc = diag.getLocation();
  if (auto name = dyn_cast<NameLoc>(loc))
    os << name.getName().getValue() << ": ";
  else if (auto file = dyn_cast<FileLineColLoc>(loc))
    os << file.getFilename().getValue() << ":" << file.getLine() << ":" << file.getColumn()
       << ": ";
  os << diag.str();
  return s;
}

std::string deviceCudaArch(int &smVersion, std::string &note) {
  int sm = 0;
  mixprec_status_t status = mixprec_cuda_device_sm_version(&sm);
  const bool device = status == nullptr;
  mixprec_status_free(status);
  if (!device)
    return "";
  std::string arch = "sm_" + std::to_string(sm), error;
  if (!codegen::parseCudaArch(arch, smVersion, error)) {
    note = "the device's architecture: " + error;
    return "";
  }
  return arch;
}

int deviceSmVersion() {
  int smVersion = 0;
  std::string note;
  return deviceCudaArch(smVersion, note).empty() ? 0 : smVersion;
}

} // namespace mixprec::compiler
