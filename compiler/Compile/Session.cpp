//===- Session.cpp - one compilation of one model, for every front end ----===//
#include "compiler/Compile/Session.h"

using namespace mlir;

namespace mixprec::compiler {

CompileSession::CompileSession(MLIRContext &context, SessionOptions options)
    : context(context), options(std::move(options)) {}

OwningOpRef<ModuleOp> CompileSession::load() {
  OwningOpRef<ModuleOp> module = loadModel(context, options.model, options.load);
  if (!module)
    (void)fail(SessionStep::Load);
  return module;
}

func::FuncOp CompileSession::entry(ModuleOp module) {
  FailureOr<func::FuncOp> func = entryFunction(module);
  if (mlir::failed(func)) {
    (void)fail(SessionStep::Entry);
    return nullptr;
  }
  return *func;
}

LogicalResult CompileSession::calibrate(ModuleOp module) {
  if (!options.calibrationInputs)
    return success();
  func::FuncOp func = entry(module);
  if (!func)
    return failure();
  FailureOr<std::vector<HostTensor>> inputs = options.calibrationInputs(func);
  if (mlir::failed(inputs))
    return fail(SessionStep::CalibrationInputs);
  if (mlir::failed(compiler::calibrate(func, {std::move(*inputs)})))
    return fail(SessionStep::Calibrate);
  return success();
}

LogicalResult CompileSession::applyPrecision(ModuleOp module) {
  assert(options.precision && "a session that plans needs precision options");
  if (!options.precisionError.empty() && !hasPrecisionPlan(module)) {
    // Where the precision pipeline reports its errors: at the graph.
    if (func::FuncOp func = entry(module))
      emitError(func.getLoc()) << options.precisionError;
    return fail(SessionStep::Precision);
  }
  if (mlir::failed(compilePrecision(module, *options.precision, options.existing)))
    return fail(SessionStep::Precision);
  return success();
}

OwningOpRef<ModuleOp> CompileSession::plan() {
  OwningOpRef<ModuleOp> module = load();
  if (!module || mlir::failed(calibrate(*module)) || mlir::failed(applyPrecision(*module)))
    return nullptr;
  return module;
}

LogicalResult CompileSession::referenceAndPlan(ReferenceAndPlan &out) {
  out.reference = load();
  if (!out.reference || !(out.referenceFunc = entry(*out.reference)))
    return failure();
  out.plan = plan();
  if (!out.plan || !(out.planFunc = entry(*out.plan)))
    return failure();
  return success();
}

FailureOr<codegen::ModuleImage> CompileSession::image(ModuleOp planned, const std::string &sideFileName,
                                               const codegen::ModuleWriteOptions &writeOptions,
                                               codegen::ModuleStats &stats,
                                               const codegen::CudaCompileOptions *cuda,
                                               codegen::CudaCompileStats *cudaStats) {
  FailureOr<codegen::ModuleImage> built =
      buildModule(planned, sideFileName, writeOptions, stats, cuda, cudaStats);
  if (mlir::failed(built))
    return fail(SessionStep::Kernels);
  return built;
}

LogicalResult CompileSession::write(const std::string &path, const codegen::ModuleImage &image) {
  if (mlir::failed(writeModule(context, path, image)))
    return fail(SessionStep::Write);
  return success();
}

} // namespace mixprec::compiler
