//===- mixprec-translate.cpp - mpk IR to other languages -------------------===//
//
// MLIR's translate driver with one translation, --mpk-to-cuda: the CUDA C++
// of every mpk.kernel (lit pipes mixprec-opt's output through it). Registers
// only the dialects mpk IR holds (never InitAll*.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/Cuda/CudaEmitter.h"
#include "dialects/Graph/IR/GraphOps.h"
#include "dialects/Kernel/IR/KernelOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"

int main(int argc, char **argv) {
  mlir::TranslateFromMLIRRegistration toCuda(
      "mpk-to-cuda", "the CUDA C++ of every mpk.kernel",
      [](mlir::Operation *op, llvm::raw_ostream &os) {
        auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
        if (!module)
          return mlir::LogicalResult(op->emitError("expected a builtin.module"));
        return mixprec::codegen::translateModuleToCuda(module, os);
      },
      [](mlir::DialectRegistry &registry) {
        registry.insert<mixprec::graph::GraphDialect, mixprec::kernel::KernelDialect,
                        mlir::func::FuncDialect>();
      });
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "mixprec translation driver"));
}
