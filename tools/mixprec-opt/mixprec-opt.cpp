//===- mixprec-opt.cpp - the pass driver for lit tests ---------------------===//
//
// Registers only the dialects mixprec uses (never InitAll*.h: it costs a
// minute and 2.5 GB to compile) and the generic passes its tests need.
//
//===----------------------------------------------------------------------===//
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"
#include "passes/Passes.h"
#include "passes/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mixprec::graph::GraphDialect, mixprec::kernel::KernelDialect,
                  mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mixprec::passes::registerMixprecPasses();
  mixprec::passes::registerMixprecPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "mixprec pass driver\n", registry));
}
