//===- mixprec-opt.cpp - the pass driver for lit tests ---------------------===//
//
// Registers only the dialects mixprec uses (never InitAll*.h: it costs a
// minute and 2.5 GB to compile) and the generic passes its tests need.
// MLIR bytecode input is read first in a guarded child process (MLIR 19's
// reader can crash on a damaged file; BytecodeGuard.h), as every mixprec
// command does, so a damaged file is a one-line error rather than a crash.
//
//===----------------------------------------------------------------------===//
#include "compiler/Compile/BytecodeGuard.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  mlir::DialectRegistry registry;
  registry.insert<mixprec::graph::GraphDialect, mixprec::kernel::KernelDialect,
                  mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mixprec::passes::registerMixprecPasses();
  mixprec::passes::registerMixprecPipelines();
  auto [inputFilename, outputFilename] =
      mlir::registerAndParseCLIOptions(argc, argv, "mixprec pass driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  // What MlirOptMain(argc, argv, ...) does, with the guard between reading
  // the input and parsing it (stdin can be read only once).
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file = mlir::openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  if (mlir::isBytecode(*file)) {
    std::string why = mixprec::compiler::bytecodeReaderFailure(
        inputFilename, file->getBuffer(),
        [&](mlir::MLIRContext &context) { context.appendDialectRegistry(registry); });
    if (!why.empty()) {
      llvm::errs() << inputFilename << ": error: " << why << "\n";
      return 1;
    }
  }
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}
